#!/usr/bin/env python3
"""Runs examples/*.grp at tiny sizes through the grape CLI (CPU backend) and compares them with
independent numpy implementations (np_gpt2.py, np_bert.py): logits and hidden states by relative
L2 error, greedy and beam-search tokens exactly.

    python3 tests/python/test_examples.py PATH/TO/grape        (from the repository root)

Exit 0: all passed; 1: a failure (described on stderr); 77: skipped (numpy or safetensors
missing)."""
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

try:
    import numpy as np
    from safetensors.numpy import save_file
except ImportError as e:
    print(f"SKIP: test_examples needs numpy and safetensors ({e})")
    sys.exit(77)

import np_bert  # noqa: E402
import np_gpt2  # noqa: E402
from grape_cli import Grape, GrapeError  # noqa: E402
from np_f16 import gelu_exact, linear  # noqa: E402

GPT2_D = dict(L=2, E=64, NH=4, V=128, P=64, T=64, N=8)
BERT_D = dict(L=2, H=64, NH=4, I=256, V=128, P=64)
MLP_D = dict(D=32, H=64, C=10)
REL_TOL = 1e-2
# Token choices are only compared where the numpy reference decided them by at least this much
# (logit or log-probability units), so that f16 rounding differences cannot flip them.
MARGIN = 0.03


class Failure(Exception):
    pass


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def expect_close(name, got, want, tol=REL_TOL):
    if got.shape != want.shape:
        raise Failure(f"{name}: shape {got.shape}, expected {want.shape}")
    if not np.all(np.isfinite(got.astype(np.float32))):
        raise Failure(f"{name}: non-finite values in the output")
    err = rel_l2(got, want)
    if err > tol:
        i = np.unravel_index(np.argmax(np.abs(got.astype(np.float32) - want.astype(np.float32))), got.shape)
        raise Failure(f"{name}: relative L2 error {err:.3e} > {tol:.0e}; worst element {i}: "
                      f"got {got[i]}, expected {want[i]}")
    return err


def expect_tokens(name, got, want):
    if got.shape != want.shape or got.dtype.kind not in "iu" or not np.array_equal(got, want):
        def show(a):
            return "\n".join("    " + line for line in str(a).splitlines())
        raise Failure(f"{name}: tokens differ\n  got {got.dtype}{list(got.shape)}:\n{show(got)}\n"
                      f"  expected {want.dtype}{list(want.shape)}:\n{show(want)}")


class Runner:
    def __init__(self, exe, tmp):
        self.g = Grape(exe)
        self.tmp = tmp
        self.passed, self.failed = [], []

    def case(self, name, fn, *args):
        try:
            detail = fn(*args)
            self.passed.append(name)
            print(f"ok    {name}" + (f"  ({detail})" if detail else ""), flush=True)
        except (Failure, GrapeError) as e:
            self.failed.append(name)
            print(f"FAIL  {name}\n{e}", file=sys.stderr, flush=True)
        except Exception:
            self.failed.append(name)
            print(f"FAIL  {name} (test error)\n{traceback.format_exc()}", file=sys.stderr, flush=True)

    def save(self, name, weights):
        path = os.path.join(self.tmp, name)
        save_file(weights, path)
        return path


# ---------------------------------------------------------------------------------------- check

def check_all(r):
    files = [os.path.join("examples", f) for f in ("mlp.grp", "gpt2.grp", "bert.grp")]
    r.g.check(files)


# ------------------------------------------------------------------------------------------ mlp

def mlp_case(r):
    rng = np.random.default_rng(7)
    D, H, C = MLP_D["D"], MLP_D["H"], MLP_D["C"]
    w = {"fc1.weight": (rng.standard_normal((H, D)) * 0.2).astype(np.float16),
         "fc1.bias": (rng.standard_normal(H) * 0.1).astype(np.float16),
         "fc2.weight": (rng.standard_normal((C, H)) * 0.2).astype(np.float16),
         "fc2.bias": (rng.standard_normal(C) * 0.1).astype(np.float16)}
    x = rng.standard_normal((4, D)).astype(np.float16)
    (got,) = r.g.run("examples/mlp.grp", defines=MLP_D, weights=r.save("mlp.safetensors", w),
                     inputs={"x": x})
    want = linear(gelu_exact(linear(x, w["fc1.weight"], w["fc1.bias"])), w["fc2.weight"], w["fc2.bias"])
    return f"rel L2 {expect_close('mlp main', got, want):.1e}"


# ----------------------------------------------------------------------------------------- gpt2

def distinct_per_row(toks):
    return min(len(set(row.tolist())) for row in toks)


class Gpt2Setup:
    """Two weight sets, each the first seed whose decisions are all clear of ties (MARGIN):
    - `main` (forward, prefill, decode, generate, beam search without EOS): greedy rows that
      vary (>= 5 distinct tokens in 8), so EOS can be placed mid-sequence;
    - `eos` (beam search with EOS = V-1): token V-1's embedding is scaled up so that it is often
      likely, and the search must stop early (the `break` on finished hypotheses) at step >= 3.
    PAD is V (no token), so that PAD and EOS can be told apart in the outputs."""

    EOS_SCALE = 2.0

    def __init__(self, r):
        D = GPT2_D
        self.V, self.N, self.NB = D["V"], D["N"], 5
        self.PAD = self.V
        self.beam_eos = self.V - 1
        self.prompt = np.array([[3, 17, 42, 9, 100], [77, 5, 5, 61, 20]], dtype=np.int32)
        self.seed = None
        for seed in range(100):
            m = self.model_for(seed)
            toks, margin = np_gpt2.greedy(m, self.prompt, self.N, self.N, EOS=self.V, PAD=self.PAD)
            if margin < MARGIN or distinct_per_row(toks) < 5:
                continue
            free = np_gpt2.beam_search(m, self.prompt[:1], self.NB, self.N, self.V, self.PAD, self.V)
            if free[2] < MARGIN:
                continue
            self.seed, self.model, self.greedy_free, self.beam_free = seed, m, toks, free
            self.path = r.save("gpt2.safetensors", m.weights)
            break
        self.eos_seed = None
        for seed in range(100):
            m = self.model_for(seed, eos_scale=self.EOS_SCALE)
            res = np_gpt2.beam_search(m, self.prompt[:1], self.NB, self.N, self.beam_eos, self.PAD, self.V)
            if res[2] < MARGIN or not res[3]["stopped_early"] or res[3]["steps"] < 3:
                continue
            self.eos_seed, self.eos_model, self.beam_with_eos = seed, m, res
            self.eos_path = r.save("gpt2_eos.safetensors", m.weights)
            break
        if self.seed is None or self.eos_seed is None:
            raise Failure("no weight seed in 0..99 gives tie-free greedy and beam decisions")

    def mixed_eos(self):
        """An EOS for the main weights with which some, not all, hypotheses end in EOS and the
        search runs all N steps: finalize then merges live beams into the finished set."""
        for eos in range(self.V):
            res = np_gpt2.beam_search(self.model, self.prompt[:1], self.NB, self.N, eos, self.PAD, self.V)
            if res[2] >= MARGIN and not res[3]["stopped_early"] and 0 < res[3]["finished_eos"] < self.NB:
                return eos, res
        return None

    def model_for(self, seed, eos_scale=None):
        D = GPT2_D
        w = np_gpt2.random_weights(np.random.default_rng(seed), D["L"], D["E"], D["V"], D["P"])
        if eos_scale:
            w["transformer.wte.weight"][self.beam_eos] *= np.float16(eos_scale)
        return np_gpt2.GPT2(w, D["L"], D["NH"])

    def run(self, r, entry, inputs, weights=None, **extra):
        return r.g.run("examples/gpt2.grp", entry=entry, defines={**GPT2_D, **extra},
                       weights=weights or self.path, inputs=inputs)


def gpt2_forward(r, s):
    ids = np.array([[1, 2, 3, 4, 5, 6, 7], [50, 60, 70, 80, 90, 100, 110]], dtype=np.int32)
    (got,) = s.run(r, "forward", {"ids": ids})
    want = s.model.forward(ids)
    err = expect_close("gpt2 forward logits", got, want)
    if not np.array_equal(got.astype(np.float32).argmax(-1), want.astype(np.float32).argmax(-1)):
        raise Failure("gpt2 forward: argmax of the logits differs from numpy")
    return f"rel L2 {err:.1e}"


def gpt2_prefill(r, s):
    (got,) = s.run(r, "prefill", {"ids": s.prompt})
    return f"rel L2 {expect_close('gpt2 prefill logits', got, s.model.last_logits(s.prompt)):.1e}"


def gpt2_decode(r, s):
    # One call on a fresh session: the token sits at position 0 with an empty cache.
    tok = np.array([5, 99, 127], dtype=np.int32)
    (got,) = s.run(r, "decode", {"tok": tok})
    return f"rel L2 {expect_close('gpt2 decode logits', got, s.model.last_logits(tok[:, None])):.1e}"


def gpt2_generate(r, s, prompt, max_new, eos, T=None):
    extra = {"T": T} if T else {}
    (got,) = s.run(r, "generate", {"prompt": prompt, "max_new": np.array(max_new, dtype=np.int32)},
                   EOS=eos, PAD=s.PAD, **extra)
    limit = max_new if T is None else min(max_new, T - prompt.shape[1] + 1)
    want, _ = np_gpt2.greedy(s.model, prompt, limit, s.N, EOS=eos, PAD=s.PAD)
    expect_tokens(f"gpt2 generate (B={prompt.shape[0]}, max_new={max_new}, EOS={eos}, T={T})", got, want)
    return f"{want.tolist()}"


def fresh_token(row, start):
    """The token of the first step >= start whose token does not occur earlier in row."""
    for t in range(start, len(row)):
        if row[t] not in row[:t]:
            return int(row[t])
    return None


def gpt2_generate_cases(r, s):
    free = s.greedy_free
    cases = [("full length, EOS never produced", s.prompt, s.N, s.V),
             ("max_new < N", s.prompt, 5, s.V),
             ("the KV cache fills up (T=8)", s.prompt, s.N, s.V, 8)]
    eos = fresh_token(free[0], 2)  # row 0 stops mid-way, row 1 goes on (unless it meets it too)
    if eos is not None:
        cases.append(("one row ends early", s.prompt, s.N, eos))
    eos = fresh_token(free[1], 2)  # a single row stops: every row is done, the loop breaks
    if eos is not None:
        cases.append(("all rows end: break", s.prompt[1:2], s.N, eos))
    return cases


def gpt2_beam(r, s, eos, want, weights, T=None):
    toks, scores, _, info = want
    extra = {"T": T} if T else {}
    got = s.run(r, "beam_search", {"prompt": s.prompt[:1]}, weights=weights, EOS=eos, PAD=s.PAD, **extra)
    if len(got) != 2:
        raise Failure(f"gpt2 beam_search: {len(got)} outputs, expected 2 (tokens, scores)")
    expect_tokens(f"gpt2 beam_search tokens (EOS={eos}, {info})", got[0], toks)
    if got[1].shape != scores.shape or not np.allclose(got[1], scores, rtol=1e-2, atol=0.05):
        raise Failure(f"gpt2 beam_search scores (EOS={eos}): got {got[1]}, expected {scores}")
    return f"{info}"


# ----------------------------------------------------------------------------------------- bert

def bert_case(r, typed):
    D = BERT_D
    w = np_bert.random_weights(np.random.default_rng(11), D["L"], D["H"], D["I"], D["V"], D["P"])
    path = os.path.join(r.tmp, "bert.safetensors")
    if not os.path.exists(path):
        r.save("bert.safetensors", w)
    rng = np.random.default_rng(12)
    ids = rng.integers(0, D["V"], size=(3, 9)).astype(np.int32)
    mask = np.ones((3, 9), dtype=bool)
    mask[1, 6:] = False
    mask[2, 3:] = False
    inputs = {"ids": ids}
    types = None
    if typed:
        types = np.zeros((3, 9), dtype=np.int32)
        types[:, 4:] = 1
        inputs["types"] = types
    inputs["mask"] = mask
    (got,) = r.g.run("examples/bert.grp", entry="forward_typed" if typed else "forward",
                     defines=D, weights=path, inputs=inputs)
    want = np_bert.forward(w, D["L"], D["NH"], ids, mask, types)
    name = "bert forward_typed" if typed else "bert forward"
    return f"rel L2 {expect_close(name, got, want):.1e}"


# ------------------------------------------------------------------- README smoke (random weights)

def readme_smoke(r):
    out = r.g.run("examples/mlp.grp", defines=MLP_D, random_weights=1,
                  inputs={"x": np.ones((2, MLP_D["D"]), np.float16)})
    if out[0].shape != (2, MLP_D["C"]):
        raise Failure(f"mlp with --random-weights: shape {out[0].shape}")
    out = r.g.run("examples/gpt2.grp", entry="generate", defines=GPT2_D, random_weights=1,
                  inputs={"prompt": np.array([[1, 2, 3]], np.int32), "max_new": np.array(4, np.int32)})
    if out[0].shape != (1, GPT2_D["N"]):
        raise Failure(f"gpt2 generate with --random-weights: shape {out[0].shape}")
    out = r.g.run("examples/bert.grp", entry="forward", defines=BERT_D, random_weights=1,
                  inputs={"ids": np.array([[1, 2, 3]], np.int32), "mask": np.ones((1, 3), bool)})
    if out[0].shape != (1, 3, BERT_D["H"]):
        raise Failure(f"bert forward with --random-weights: shape {out[0].shape}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    exe = sys.argv[1]
    if not os.access(exe, os.X_OK):
        print(f"FAIL: {exe} is not an executable grape", file=sys.stderr)
        return 1
    os.chdir(REPO)
    with tempfile.TemporaryDirectory(prefix="grape_examples_") as tmp:
        r = Runner(exe, tmp)
        r.case("grape check examples/*.grp", check_all, r)
        r.case("mlp main", mlp_case, r)
        r.case("bert forward", bert_case, r, False)
        r.case("bert forward_typed", bert_case, r, True)
        try:
            s = Gpt2Setup(r)
            print(f"gpt2: weight seeds {s.seed} (main), {s.eos_seed} (beam search with EOS)", flush=True)
        except Failure as e:
            print(f"FAIL  gpt2 setup\n{e}", file=sys.stderr)
            r.failed.append("gpt2 setup")
            s = None
        if s:
            r.case("gpt2 forward", gpt2_forward, r, s)
            r.case("gpt2 prefill", gpt2_prefill, r, s)
            r.case("gpt2 decode", gpt2_decode, r, s)
            for label, *args in gpt2_generate_cases(r, s):
                r.case(f"gpt2 generate: {label}", gpt2_generate, r, s, *args)
            r.case("gpt2 beam_search: EOS never produced", gpt2_beam, r, s, s.V, s.beam_free, s.path)
            r.case("gpt2 beam_search: EOS ends it early", gpt2_beam, r, s, s.beam_eos, s.beam_with_eos,
                   s.eos_path)
            T = 8
            short = np_gpt2.beam_search(s.model, s.prompt[:1], s.NB, s.N, s.V, s.PAD, s.V,
                                        steps=T - s.prompt.shape[1] + 1)
            r.case("gpt2 beam_search: the KV cache fills up (T=8)", gpt2_beam, r, s, s.V, short,
                   s.path, T)
            mixed = s.mixed_eos()
            if mixed is None:
                print("note  gpt2 beam_search: no tie-free EOS gives a mix of finished and live "
                      "hypotheses; case skipped")
            else:
                r.case("gpt2 beam_search: finished and live hypotheses", gpt2_beam, r, s, mixed[0],
                       mixed[1], s.path)
        r.case("README commands (--random-weights 1)", readme_smoke, r)
    print(f"{len(r.passed)} passed, {len(r.failed)} failed")
    if r.failed:
        print("failed: " + "; ".join(r.failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
