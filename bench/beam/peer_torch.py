"""The beam workload's PyTorch peer: examples/gpt2.grp's `beam_search` (NB beams, stop when the
finished hypotheses cannot be beaten) on the same safetensors weights, written the way a PyTorch
user writes it: the model step's tensors on the device, the beam bookkeeping and the stopping test
in a Python loop, so every token costs one host synchronisation (the point of the comparison).

Two variants, timed per call (prefill + every step + the final ranking):
  eager       the step's kernels launched one by one from Python;
  cuda_graph  the step captured once in a CUDA graph (two graphs, one per KV-cache buffer of the
              ping-pong below) and replayed with static input and output tensors.
Both run the same code and must give identical tokens.

The step follows gpt2.grp's loop body: the KV cache is reordered to follow the beams *inside* the
step (gpt2.grp: `bkc = take(bkc, src, axis=1)` before `beam_decode`), over the whole cache of T
positions, as a gather from one cache buffer into the other (no copy back); then the decode of
the NB chosen tokens at position S + t, then log_softmax (f32) + beam scores and the top 2*NB of
the NB*V candidates. The host reads those 2*NB (value, index) pairs (one copy, one sync), runs the
candidate scan of gpt2.grp in Python, uploads (src, tokens, position, scores) in one copy and
replays the step. The first step's candidates come from the prefill (eager in both variants).

Ties: gpt2.grp ranks equal candidates by the lower flat index (b*V + token). torch.topk does not
promise an order among equal values, so the host sorts the 2*NB pairs by (-value, index), and
the step also counts the candidates >= the 2*NB-th value; when more than 2*NB tie at the border
the host picks the lowest indices itself (one extra sync, counted; it does not happen on the
benchmark's inputs, whose values are f32 sums of log-probabilities).

Numerics: on CUDA plain fp16 PyTorch ops (as bench/decode/peer_torch.py). With --numerics ref
(the default on the CPU) every op computes as Grape's CPU reference backend does (matrix products,
norms and softmaxes in double, correctly rounded to f16; elementwise math in f32), so that the
local test (bench/beam/test_tiny.py) can demand identical tokens and scores.

usage: peer_torch.py WEIGHTS.safetensors PROMPT.npy OUT_TOKENS.npy OUT.json
                     [--device cuda|cpu] [--tiny] [--iters N] [--warmup N] [--numerics native|ref]
                     [--nh NH] [--T T] [--N N] [--NB NB] [--eos EOS] [--pad PAD] [--out-scores F]
PROMPT.npy: int32 [1, S]. OUT_TOKENS.npy: int32 [NB, N] (cuda_graph variant where there is one),
scores beside it (OUT_TOKENS with _scores.npy, or --out-scores). --iters 0: no timing (tokens
only). --tiny: the tiny model's consts (NH=4, T=64, N=8, EOS=127), as examples/README.md."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import count_kernels, read_safetensors, time_cuda  # noqa: E402

PREFIX = "transformer."


def load_weights(path, device):
    """The safetensors file as {name without PREFIX: tensor on device} (no safetensors package)."""
    return {(k[len(PREFIX):] if k.startswith(PREFIX) else k): torch.from_numpy(a).to(device)
            for k, a in read_safetensors(path).items()}


# ---- op numerics ------------------------------------------------------------------------------

class NativeOps:
    """Plain fp16 PyTorch: what the GPU peer runs."""

    def __init__(self, device):
        self.device = device

    def mm(self, a, b):
        return a @ b

    def add(self, a, b):
        return a + b

    def mul(self, a, b):
        return a * b

    def layer_norm(self, x, g, b):
        return F.layer_norm(x, (x.shape[-1],), g, b, 1e-5)

    def softmax(self, x):
        return x.softmax(-1)

    def gelu(self, x):
        return F.gelu(x, approximate="tanh")

    def linear(self, x, w):
        return F.linear(x, w)

    def log_softmax32(self, x):
        return torch.log_softmax(x.float(), -1)


def f16_from_double(d):
    """float64 -> float16 correctly rounded: round to f32 by truncation with a sticky bit ("round to
    odd"), then to f16, as Grape's CPU backend stores a double result (no double rounding)."""
    f = d.float()
    back = f.double()
    inexact = back != d
    f = torch.where(inexact & (back.abs() > d.abs()), torch.nextafter(f, torch.zeros_like(f)), f)
    bits = f.view(torch.int32)
    bits = torch.where(inexact, bits | 1, bits)
    return bits.view(torch.float32).half()


class RefOps:
    """Grape's CPU reference numerics (runtime/cpu/): matmul, linear, layer_norm, softmax and
    log_softmax in double, one correct rounding to the result dtype; elementwise ops in f32 from
    f16 operands, rounded to f16. For the exact local comparison, not for speed."""

    def __init__(self, device):
        self.device = device
        c = lambda v: torch.tensor(v, dtype=torch.float32, device=device)
        self.k2 = c(2.0) * c(0.7978845608028654)  # 2 * sqrt(2/pi), both f32 as in the C++ source
        self.c3 = c(0.044715)
        self.one = c(1.0)

    def mm(self, a, b):
        return f16_from_double(a.double() @ b.double())

    def add(self, a, b):
        return (a.float() + b.float()).half()

    def mul(self, a, b):
        return (a.float() * b.float()).half()

    def layer_norm(self, x, g, b):
        x = x.double()
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) * (x - mu)).mean(-1, keepdim=True)
        inv = 1.0 / torch.sqrt(var + 1e-5)
        return f16_from_double((x - mu) * inv * g.double() + b.double())

    def softmax(self, x):
        x = x.double()
        e = torch.exp(x - x.amax(-1, keepdim=True))
        return f16_from_double(e / e.sum(-1, keepdim=True))

    def gelu(self, x):
        # x * sigmoid(2k (x + 0.044715 x^3)) in f32, the CPU kernel's formula; exp correctly
        # rounded to f32 (via double), as the C library's expf is on all but rare arguments.
        x = x.float()
        u = self.k2 * (x + self.c3 * x * x * x)
        e = torch.exp((-u).double()).float()
        return (x * (self.one / (self.one + e))).half()

    def linear(self, x, w):
        return f16_from_double(x.double() @ w.double().t())

    def log_softmax32(self, x):
        x = x.double()
        m = x.amax(-1, keepdim=True)
        return ((x - m) - torch.log(torch.exp(x - m).sum(-1, keepdim=True))).float()


# ---- the model (examples/gpt2.grp, op for op) -------------------------------------------------

class GPT2:
    def __init__(self, w, nh, T, ops):
        self.w, self.o = w, ops
        self.V, self.E = w["wte.weight"].shape
        self.P = w["wpe.weight"].shape[0]
        self.L = sum(1 for k in w if k.endswith(".ln_1.weight"))
        self.NH, self.HD, self.T = nh, self.E // nh, T
        dev = w["wte.weight"].device
        # rsqrt(cast(HD, f16)) in f16, and the masked logit -10000: made before any graph capture
        self.scale = torch.rsqrt(torch.tensor(float(self.HD), dtype=torch.float32)).half().to(dev)
        self.neg = torch.tensor(-10000.0, dtype=torch.float16, device=dev)
        self.positions = torch.arange(T, device=dev)

    def g(self, name):
        return self.w[name]

    def heads(self, x):
        B, S, _ = x.shape
        return x.view(B, S, self.NH, self.HD).transpose(1, 2)

    def qkv(self, x, l):
        o, h = self.o, f"h.{l}."
        a = o.layer_norm(x, self.g(h + "ln_1.weight"), self.g(h + "ln_1.bias"))
        y = o.add(o.mm(a, self.g(h + "attn.c_attn.weight")), self.g(h + "attn.c_attn.bias"))
        q, k, v = y.split(self.E, -1)
        return self.heads(q), self.heads(k), self.heads(v)

    def attend(self, q, k, v, mask):
        o = self.o
        att = o.mul(o.mm(q, k.transpose(2, 3)), self.scale)
        return o.mm(o.softmax(torch.where(mask, att, self.neg)), v)

    def block_rest(self, x, y, l):
        """attn_proj then ffn of gpt2.grp: the residual stream after block l."""
        o, h = self.o, f"h.{l}."
        B, _, S, _ = y.shape
        y = y.transpose(1, 2).reshape(B, S, self.E)
        x = o.add(x, o.add(o.mm(y, self.g(h + "attn.c_proj.weight")), self.g(h + "attn.c_proj.bias")))
        a = o.layer_norm(x, self.g(h + "ln_2.weight"), self.g(h + "ln_2.bias"))
        f = o.gelu(o.add(o.mm(a, self.g(h + "mlp.c_fc.weight")), self.g(h + "mlp.c_fc.bias")))
        return o.add(x, o.add(o.mm(f, self.g(h + "mlp.c_proj.weight")), self.g(h + "mlp.c_proj.bias")))

    def lm_head(self, x):
        o = self.o
        return o.linear(o.layer_norm(x, self.g("ln_f.weight"), self.g("ln_f.bias")), self.g("wte.weight"))

    def prefill(self, ids, kc, vc):
        """beam_prefill: ids [NB, S] (int64); writes cache positions 0..S-1, returns [NB, V]."""
        S = ids.shape[1]
        x = self.o.add(self.g("wte.weight")[ids], self.g("wpe.weight")[:S])
        mask = torch.ones(S, S, dtype=torch.bool, device=ids.device).tril()
        for l in range(self.L):
            q, k, v = self.qkv(x, l)
            kc[l, :, :, :S] = k
            vc[l, :, :, :S] = v
            x = self.block_rest(x, self.attend(q, k, v, mask), l)
        return self.lm_head(x[:, S - 1:S, :])[:, 0, :]

    def decode(self, tok, pos, kc, vc):
        """beam_decode: tok [NB] at cache position pos ([1], on the device); returns [NB, V]."""
        B = tok.shape[0]
        x = self.o.add(self.g("wte.weight").index_select(0, tok).view(B, 1, self.E),
                       self.g("wpe.weight").index_select(0, pos))
        mask = (self.positions <= pos).view(1, self.T)
        for l in range(self.L):
            q, k, v = self.qkv(x, l)
            kc[l].index_copy_(2, pos, k)
            vc[l].index_copy_(2, pos, v)
            x = self.block_rest(x, self.attend(q, kc[l], vc[l], mask), l)
        return self.lm_head(x)[:, 0, :]


# ---- beam search: device step + Python loop ---------------------------------------------------

class BeamSearch:
    def __init__(self, model, NB, N, EOS, PAD, device):
        self.m, self.NB, self.N, self.EOS, self.PAD = model, NB, N, EOS, PAD
        self.dev = device
        self.cuda = device.type == "cuda"
        m = model
        if NB * m.V >= 1 << 24:
            raise SystemExit("NB*V must stay below 2^24 (indices travel as exact f32)")
        shape = (m.L, NB, m.NH, m.T, m.HD)
        # KV cache: two buffers; step t reorders buffer t%2 into buffer (t+1)%2 and decodes there
        self.kc = [torch.zeros(shape, dtype=torch.float16, device=device) for _ in range(2)]
        self.vc = [torch.zeros(shape, dtype=torch.float16, device=device) for _ in range(2)]
        # static step inputs, int32 [src(NB), tok(NB), pos(1), scores as f32 bits(NB)], and their
        # pinned host twin: one upload per token
        self.inp = torch.zeros(3 * NB + 1, dtype=torch.int32, device=device)
        self.inp_host = torch.zeros(3 * NB + 1, dtype=torch.int32, pin_memory=self.cuda)
        self.res_host = torch.zeros(4 * NB + 1, dtype=torch.float32, pin_memory=self.cuda)
        self.graphs = None
        self.syncs = 0

    # the device part of a step ------------------------------------------------------------------
    def select(self, logits, scores):
        """cand = log_softmax(f32) + scores; top 2*NB over NB*V; packed [values, indices (exact in
        f32), count of candidates >= the 2*NB-th value] and the flat candidates."""
        k = 2 * self.NB
        flat = (self.m.o.log_softmax32(logits) + scores.view(-1, 1)).view(-1)
        top_v, top_i = torch.topk(flat, k)
        cnt = (flat >= top_v[k - 1]).sum()
        return torch.cat([top_v, top_i.float(), cnt.float().view(1)]), flat

    def step(self, par):
        """Reorder the cache by src (buffer par -> 1-par), decode tok at pos, select."""
        NB, inp = self.NB, self.inp
        src, tok, pos = inp[:NB].long(), inp[NB:2 * NB].long(), inp[2 * NB:2 * NB + 1].long()
        scores = inp[2 * NB + 1:].view(torch.float32)
        kd, vd = self.kc[1 - par], self.vc[1 - par]
        torch.index_select(self.kc[par], 1, src, out=kd)
        torch.index_select(self.vc[par], 1, src, out=vd)
        return self.select(self.m.decode(tok, pos, kd, vd), scores)

    def capture(self):
        """Warm up on a side stream, then capture step(0) and step(1), one graph each."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for par in (0, 1, 0, 1):
                self.step(par)
        torch.cuda.current_stream().wait_stream(s)
        self.graphs = []
        for par in (0, 1):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = self.step(par)
            self.graphs.append((g, out))
        torch.cuda.synchronize()

    def run_step(self, par, graphed):
        if graphed:
            g, out = self.graphs[par]
            g.replay()
            return out
        return self.step(par)

    # host side ---------------------------------------------------------------------------------
    def sync(self):
        if self.cuda:
            torch.cuda.current_stream().synchronize()
        self.syncs += 1

    def upload(self, src, tok, pos, scores):
        NB, h = self.NB, self.inp_host.numpy()
        h[:NB], h[NB:2 * NB], h[2 * NB] = src, tok, pos
        h[2 * NB + 1:] = scores.astype(np.float32).view(np.int32)
        self.inp.copy_(self.inp_host, non_blocking=self.cuda)

    def readback(self, packed, flat):
        """The 2*NB best candidates in gpt2.grp's order: value descending, then flat index."""
        k = 2 * self.NB
        self.res_host.copy_(packed, non_blocking=self.cuda)
        self.sync()
        a = self.res_host.numpy()
        vals, idx, cnt = a[:k].copy(), a[k:2 * k].astype(np.int64), int(a[2 * k])
        if cnt > k:  # more candidates equal the border value than fit: the lowest indices win
            sel = torch.nonzero(flat >= float(vals.min())).view(-1)
            v2, i2 = flat[sel].cpu().numpy(), sel.cpu().numpy()
            self.syncs += 1
            order = sorted(range(len(i2)), key=lambda j: (-v2[j], i2[j]))[:k]
            return v2[order].astype(np.float32), i2[order]
        order = sorted(range(k), key=lambda j: (-vals[j], idx[j]))
        return vals[order], idx[order]

    def __call__(self, prompt, graphed):
        """prompt: np int32 [1, S]. Returns (tokens [NB, N] int32, scores [NB] f32, steps, stopped)."""
        NB, N, EOS, PAD, V, T = self.NB, self.N, self.EOS, self.PAD, self.m.V, self.m.T
        S = prompt.shape[1]
        if not S <= T <= self.m.P:
            raise SystemExit(f"need S <= T <= P, got S={S}, T={T}, P={self.m.P}")
        self.syncs = 0
        ids = torch.from_numpy(np.ascontiguousarray(prompt)).to(self.dev).long().expand(NB, S)
        self.syncs += self.cuda  # a blocking copy from pageable memory
        scores = np.array([0.0] + [-1e9] * (NB - 1), dtype=np.float32)
        logits = self.m.prefill(ids, self.kc[0], self.vc[0])
        self.upload(np.zeros(NB), np.zeros(NB), S, scores)
        packed, flat = self.select(logits, self.inp[2 * NB + 1:].view(torch.float32))
        seqs = np.full((NB, N), PAD, dtype=np.int32)
        fin_seqs = np.full((NB, N), PAD, dtype=np.int32)
        fin_scores = np.full(NB, -1e30, dtype=np.float32)
        stopped, steps = False, 0
        for t in range(N):
            if S + t > T:  # the cache is full
                break
            top_v, top_i = self.readback(packed, flat)
            steps = t + 1
            next_seqs, next_scores = seqs.copy(), scores.copy()
            next_tok, src = np.zeros(NB, np.int32), np.zeros(NB, np.int32)
            filled = 0
            for j in range(2 * NB):
                b, tk = divmod(int(top_i[j]), V)
                s = top_v[j]
                if tk == EOS:
                    if j < NB:
                        w = int(np.argmin(fin_scores))
                        if s > fin_scores[w]:
                            fin_seqs[w] = seqs[b]
                            fin_seqs[w, t] = EOS
                            fin_scores[w] = s
                    continue
                next_seqs[filled] = seqs[b]
                next_seqs[filled, t] = tk
                next_scores[filled] = s
                next_tok[filled] = tk
                src[filled] = b
                filled += 1
                if filled == NB:
                    break
            seqs, scores = next_seqs, next_scores
            if fin_scores.min() >= scores.max():
                stopped = True
                break
            # gpt2.grp decodes whenever t < N - 1; at S + t == T that decode's logits are never
            # used (the next step stops on the full cache), so it is skipped here
            if t < N - 1 and S + t + 1 <= T:
                self.upload(src, next_tok, S + t, scores)
                packed, flat = self.run_step(t % 2, graphed)
        if not stopped:  # offer the live beams, in beam order, to the finished set
            for b in range(NB):
                w = int(np.argmin(fin_scores))
                if scores[b] > fin_scores[w]:
                    fin_seqs[w] = seqs[b]
                    fin_scores[w] = scores[b]
        order = sorted(range(NB), key=lambda i: (-fin_scores[i], i))
        return fin_seqs[order], fin_scores[order], steps, stopped


# ---- driver -----------------------------------------------------------------------------------

def time_wall(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    t = np.sort(np.array(t))
    pick = lambda q: float(t[min(len(t) - 1, int(q * (len(t) - 1) + 0.5))])
    return {"min_ms": float(t[0]), "median_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99),
            "mean_ms": float(t.mean())}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weights")
    ap.add_argument("prompt")
    ap.add_argument("out_tokens")
    ap.add_argument("out_json")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="NH=4, T=64, N=8, EOS=127 (examples/README.md)")
    ap.add_argument("--iters", type=int, default=5, help="timed calls per variant (0: tokens only)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--numerics", choices=("native", "ref"), default=None,
                    help="native fp16 PyTorch ops (default on CUDA) or Grape's CPU reference numerics")
    ap.add_argument("--nh", type=int)
    ap.add_argument("--T", type=int)
    ap.add_argument("--N", type=int)
    ap.add_argument("--NB", type=int, default=5)
    ap.add_argument("--eos", type=int)
    ap.add_argument("--pad", type=int)
    ap.add_argument("--out-scores")
    a = ap.parse_args(argv)
    tiny = dict(nh=4, T=64, N=8, eos=127) if a.tiny else dict(nh=12, T=256, N=128, eos=50256)
    for k, v in tiny.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.pad is None:
        a.pad = a.eos
    if a.numerics is None:
        a.numerics = "native" if a.device == "cuda" else "ref"
    if a.out_scores is None:
        a.out_scores = (a.out_tokens[:-4] if a.out_tokens.endswith(".npy") else a.out_tokens) + "_scores.npy"
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    ops = (NativeOps if a.numerics == "native" else RefOps)(dev)
    model = GPT2(load_weights(a.weights, dev), a.nh, a.T, ops)
    prompt = np.load(a.prompt).astype(np.int32)
    if prompt.ndim != 2 or prompt.shape[0] != 1:
        raise SystemExit(f"prompt must be int32 [1, S], got {prompt.shape}")
    bs = BeamSearch(model, a.NB, a.N, a.eos, a.pad, dev)
    res = {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
           "numerics": a.numerics,
           "config": {"L": model.L, "E": model.E, "NH": model.NH, "V": model.V, "P": model.P, "T": model.T,
                      "N": a.N, "NB": a.NB, "EOS": a.eos, "PAD": a.pad, "S": int(prompt.shape[1])},
           "kv_reorder": "inside the step (graph): index_select of the whole cache into the other of "
                         "two buffers, before the decode, as gpt2.grp's take(bkc, src, axis=1)"}
    variants = ["eager"] + (["cuda_graph"] if cuda else [])
    with torch.no_grad():
        out = {}
        for v in variants:
            if v == "cuda_graph":
                t0 = time.perf_counter()
                bs.capture()
                res["capture_s"] = time.perf_counter() - t0
            toks, scores, steps, stopped = bs(prompt, v == "cuda_graph")
            out[v] = (toks, scores)
            res[v] = {"steps": steps, "stopped_early": stopped, "host_syncs_per_call": bs.syncs}
        res["steps"] = steps
        res["stopped_early"] = stopped
        ref_t, ref_s = out["eager"]
        res["eager_equals_graph"] = all(np.array_equal(out[v][0], ref_t) and np.array_equal(out[v][1], ref_s)
                                        for v in variants)
        if not res["eager_equals_graph"]:
            print("!!! eager and CUDA-graph variants give different tokens or scores !!!", file=sys.stderr)
        toks, scores = out[variants[-1]]
        np.save(a.out_tokens, toks.astype(np.int32))
        np.save(a.out_scores, scores.astype(np.float32))
        res["tokens"] = toks.tolist()
        res["scores"] = scores.tolist()
        if a.iters > 0:
            timer = (lambda f, n, w: time_cuda(torch, f, n, w)) if cuda else time_wall
            for v in variants:
                r = timer(lambda: bs(prompt, v == "cuda_graph"), a.iters, a.warmup)
                r["ms_per_token"] = r["median_ms"] / max(steps, 1)
                res[v].update(r)
            S = prompt.shape[1]
            ids = torch.from_numpy(prompt).to(dev).long().expand(a.NB, S)
            res["prefill_eager"] = timer(lambda: model.prefill(ids, bs.kc[0], bs.vc[0]), max(a.iters, 3), 1)
            if cuda:
                bs.upload(np.zeros(a.NB), np.zeros(a.NB), S, np.zeros(a.NB, np.float32))
                res["step_eager"] = time_cuda(torch, lambda: bs.step(0), 50, 5)
                res["step_graph_replay"] = time_cuda(torch, bs.graphs[0][0].replay, 200, 20)
                res["kernels_per_step_eager"] = count_kernels(torch, lambda: bs.step(0))
    with open(a.out_json, "w") as f:
        json.dump(res, f, indent=1)
    brief = {k: v for k, v in res.items() if k not in ("tokens", "scores")}
    print(json.dumps(brief, indent=1))
    return res


if __name__ == "__main__":
    main()
