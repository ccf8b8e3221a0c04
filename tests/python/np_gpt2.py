"""An independent numpy GPT-2 (f16 storage, f32 compute) with greedy generation and beam search,
written from the model's math and Hugging Face's conventions, not from examples/gpt2.grp.
Generation recomputes the whole sequence every step (no KV cache), so it also checks the cache."""
import numpy as np

from np_f16 import F32, add, attention, gelu_tanh, layer_norm, linear, log_softmax32, matmul, \
    merge_heads, split_heads

PREFIX = "transformer."


def random_weights(rng, L, E, V, P):
    """HF GPT2LMHeadModel names (prefix included), f16. Scales keep logits well separated."""
    def n(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float16)

    w = {"wte.weight": n((V, E), 0.5), "wpe.weight": n((P, E), 1.0),
         "ln_f.weight": (1.0 + n((E,), 0.1)).astype(np.float16), "ln_f.bias": n((E,), 0.1)}
    for l in range(L):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = (1.0 + n((E,), 0.1)).astype(np.float16)
        w[p + "ln_1.bias"] = n((E,), 0.1)
        w[p + "attn.c_attn.weight"] = n((E, 3 * E), 0.2)
        w[p + "attn.c_attn.bias"] = n((3 * E,), 0.05)
        w[p + "attn.c_proj.weight"] = n((E, E), 0.2)
        w[p + "attn.c_proj.bias"] = n((E,), 0.05)
        w[p + "ln_2.weight"] = (1.0 + n((E,), 0.1)).astype(np.float16)
        w[p + "ln_2.bias"] = n((E,), 0.1)
        w[p + "mlp.c_fc.weight"] = n((E, 4 * E), 0.2)
        w[p + "mlp.c_fc.bias"] = n((4 * E,), 0.05)
        w[p + "mlp.c_proj.weight"] = n((4 * E, E), 0.1)
        w[p + "mlp.c_proj.bias"] = n((E,), 0.05)
    return {PREFIX + k: v for k, v in w.items()}


class GPT2:
    def __init__(self, weights, L, NH):
        self.weights = weights
        self.w = {k[len(PREFIX):]: v for k, v in weights.items()}
        self.L, self.NH = L, NH

    def forward(self, ids):
        """ids [B, S] -> f16 logits [B, S, V]."""
        w, S = self.w, ids.shape[1]
        x = add(w["wte.weight"][ids], w["wpe.weight"][:S])
        causal = np.tril(np.ones((S, S), dtype=bool))
        for l in range(self.L):
            p = f"h.{l}."
            a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
            qkv = add(matmul(a, w[p + "attn.c_attn.weight"]), w[p + "attn.c_attn.bias"])
            q, k, v = (split_heads(t, self.NH) for t in np.split(qkv, 3, axis=-1))
            y = merge_heads(attention(q, k, v, causal))
            x = add(x, add(matmul(y, w[p + "attn.c_proj.weight"]), w[p + "attn.c_proj.bias"]))
            a = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
            f = gelu_tanh(add(matmul(a, w[p + "mlp.c_fc.weight"]), w[p + "mlp.c_fc.bias"]))
            x = add(x, add(matmul(f, w[p + "mlp.c_proj.weight"]), w[p + "mlp.c_proj.bias"]))
        return linear(layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], 1e-5), w["wte.weight"])

    def last_logits(self, ids):
        return self.forward(ids)[:, -1, :]


def greedy(model, prompt, max_new, N, EOS, PAD):
    """Greedy decoding. Returns (tokens [B, N] int32, smallest top-1/top-2 logit gap seen on a
    row that was still running: how far the choices were from a tie)."""
    B = prompt.shape[0]
    seq = prompt.astype(np.int64)
    out = np.full((B, N), PAD, dtype=np.int32)
    done = np.zeros(B, dtype=bool)
    margin = np.inf
    for t in range(min(max_new, N)):
        logits = model.last_logits(seq).astype(F32)
        nxt = logits.argmax(-1)
        top2 = np.sort(logits, -1)[:, -2:]
        gaps = top2[:, 1] - top2[:, 0]
        if (~done).any():
            margin = min(margin, float(gaps[~done].min()))
        out[:, t] = np.where(done, PAD, nxt)
        done |= nxt == EOS
        if done.all():
            break
        seq = np.concatenate([seq, nxt[:, None]], axis=1)
    return out, margin


class Hypotheses:
    """Hugging Face's BeamHypotheses with length_penalty = 0: keeps the NB best finished
    sequences by summed log-probability."""

    def __init__(self, nb):
        self.nb, self.items = nb, []  # (score, tokens)
        self.close_calls = []         # |score - worst| of every comparison against the worst

    def worst(self):
        return min(s for s, _ in self.items)

    def full(self):
        return len(self.items) >= self.nb

    def add(self, tokens, score):
        if not self.full():
            self.items.append((score, tokens))
            return
        worst = self.worst()
        self.close_calls.append(abs(score - worst))
        if score > worst:
            i = [s for s, _ in self.items].index(worst)
            del self.items[i]
            self.items.append((score, tokens))


def beam_search(model, prompt, NB, N, EOS, PAD, V, steps=None):
    """Beam search as documented in examples/gpt2.grp (HF BeamSearchScorer, length_penalty = 0,
    stop when NB hypotheses are finished and the worst beats the best live beam, or after N
    tokens). prompt [1, S]. Returns (tokens [NB, N] int32, scores [NB] float32, margin): margin
    is the smallest gap between two values whose order decided anything (a near-tie guard).
    steps: at most this many tokens (default N)."""
    beams = [([], F32(0.0) if i == 0 else F32(-1e9)) for i in range(NB)]
    hyps = Hypotheses(NB)
    gaps = []
    stopped = False
    for t in range(N if steps is None else min(steps, N)):
        seqs = np.array([list(prompt[0]) + toks for toks, _ in beams], dtype=np.int64)
        logp = log_softmax32(model.last_logits(seqs))
        beam_scores = np.array([s for _, s in beams], dtype=F32)
        cand = (logp + beam_scores[:, None]).reshape(-1)
        order = np.argsort(-cand, kind="stable")[: 2 * NB + 1]
        live = []
        used = 0
        for rank, idx in enumerate(order[: 2 * NB]):
            used = rank
            b, tok = divmod(int(idx), V)
            s = F32(cand[idx])
            if tok == EOS:
                if rank < NB:
                    hyps.add(beams[b][0] + [EOS], s)
                continue
            live.append((beams[b][0] + [tok], s))
            if len(live) == NB:
                break
        vals = cand[order[: used + 2]]
        gaps.extend(np.abs(np.diff(vals)).tolist())
        beams = live
        if hyps.full():
            best_live = max(s for _, s in beams)
            gaps.append(abs(hyps.worst() - best_live))
            if hyps.worst() >= best_live:
                stopped = True
                break
    if not stopped:
        for toks, s in beams:
            hyps.add(toks, s)
    ranked = sorted(hyps.items, key=lambda it: -it[0])  # stable: equal scores keep their order
    scores = np.array([s for s, _ in ranked], dtype=F32)
    gaps.extend(np.abs(np.diff(scores)).tolist())
    gaps.extend(hyps.close_calls)
    out = np.full((NB, N), PAD, dtype=np.int32)
    for i, (_, toks) in enumerate(ranked):
        out[i, : len(toks)] = toks
    return out, scores, (min(gaps) if gaps else np.inf), {"stopped_early": stopped, "steps": t + 1,
                                                           "finished_eos": sum(
                                                               1 for _, tk in ranked if EOS in tk)}
