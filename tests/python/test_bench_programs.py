#!/usr/bin/env python3
"""The .grp programs of the benchmarks that are not examples: bench/beam/beam_logic.grp (beam
search's logic without the model, timed beside beam_search for issue 8's per-token target) must be
examples/gpt2.grp's beam_search loop with the model step taken out, and must search as the numpy
reference does when the logits are the same every step.

    python3 tests/python/test_bench_programs.py PATH/TO/grape        (from the repository root)

Exit 0: passed; 1: a failure (on stderr); 77: skipped (numpy missing)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

try:
    import numpy as np
except ImportError as e:
    print(f"SKIP: test_bench_programs needs numpy ({e})")
    sys.exit(77)

import np_gpt2  # noqa: E402
from grape_cli import Grape  # noqa: E402

TINY = dict(L=2, E=64, NH=4, V=128, P=64, T=64, N=8, EOS=127)


def function_text(src, header):
    """The text of the function starting at `header` up to the next top-level line."""
    i = src.index(header)
    end = src.find("\n}\n", i)
    return src[i:end + 3]


def check_same_loop():
    gpt2 = open(os.path.join(REPO, "examples", "gpt2.grp")).read()
    logic = open(os.path.join(REPO, "bench", "beam", "beam_logic.grp")).read()
    want = function_text(gpt2, "fn beam_search(")
    want = want.replace("fn beam_search(prompt: i32[1, S]) -> (i32[NB, N], f32[NB]) {\n"
                        "  var logits = beam_prefill(expand(prompt, (NB, S)))\n",
                        "fn beam_logic(prompt: i32[1, S], logits: f16[NB, V]) -> (i32[NB, N], f32[NB]) {\n")
    want = want.replace("    if t < N - 1 { logits = beam_decode(next_tok) }\n", "")
    got = function_text(logic, "fn beam_logic(")
    if got != want:
        import difflib
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "gpt2.grp beam_search "
                                            "without the model", "beam_logic.grp"))
        raise AssertionError("bench/beam/beam_logic.grp is not gpt2.grp's beam_search loop without the "
                             "model step:\n" + diff)
    for name in ("bkc", "bvc"):
        line = f"state {name}: f16[L, NB, NH, T, HD] = zeros"
        if line not in gpt2 or line not in logic:
            raise AssertionError(f"the {name} cache shapes differ: expected '{line}' in both programs")


class FixedLogits:
    """A model whose next-token logits are the same whatever the sequence (np_gpt2.beam_search)."""

    def __init__(self, logits):
        self.logits = logits

    def last_logits(self, seqs):
        return self.logits[: seqs.shape[0]].astype(np.float32)


def check_search(grape):
    V, NB, N, EOS = TINY["V"], 5, TINY["N"], TINY["EOS"]
    checked = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        logits = (rng.standard_normal((NB, V)) * 3).astype(np.float16)
        if seed % 2:  # EOS likely among the best: finished hypotheses, maybe an early stop
            logits[:, EOS] = np.float16(6.0 + seed)
        prompt = rng.integers(0, V - 1, (1, 6)).astype(np.int32)
        toks, scores, margin, info = np_gpt2.beam_search(FixedLogits(logits), prompt, NB, N, EOS, EOS, V)
        if margin < 1e-3:  # a near-tie: f16/f32 rounding may order it either way
            continue
        got = grape.run("bench/beam/beam_logic.grp", "beam_logic", TINY, inputs={"prompt": prompt, "logits": logits})
        if not np.array_equal(got[0], toks):
            raise AssertionError(f"seed {seed} ({info}): tokens\n{got[0]}\nexpected\n{toks}")
        if not np.allclose(got[1], scores, rtol=1e-5, atol=1e-4):
            raise AssertionError(f"seed {seed}: scores {got[1]}, expected {scores}")
        checked += 1
    if checked < 4:
        raise AssertionError(f"only {checked} of 6 searches were free of near-ties")
    return checked


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.chdir(REPO)
    try:
        check_same_loop()
        print("ok    beam_logic.grp is beam_search's loop without the model")
        n = check_search(Grape(sys.argv[1]))
        print(f"ok    beam_logic searches as the numpy reference ({n} searches)")
    except AssertionError as e:
        print(f"FAIL  {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
