"""Local check of the beam peer (no GPU): for several tiny weight sets, prompt lengths and EOS/PAD
choices, runs examples/gpt2.grp's beam_search on Grape's CPU backend and peer_torch.py's search
(CPU, --numerics ref) on the same weights and prompt, and demands identical tokens and scores.
Also reports how many prefill logits differ bit for bit (the numerics emulation).

    python3 bench/beam/test_tiny.py [GRAPE]     (default: build/grape, else build-gpu/grape)

Exit 0 when every case matches. Prints 'N passed, N failed'."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import peer_torch  # noqa: E402
from bench_beam import TINY, tiny_weights  # noqa: E402

GPT2 = os.path.join(ROOT, "examples", "gpt2.grp")
SIZES = {k: v for k, v in TINY.items() if k != "EOS"}


def grape_run(grape, entry, weights, inputs, out, defines):
    cmd = [grape, "run", GPT2, "--entry", entry, "--weights", weights, "--backend", "cpu", "--output", out]
    for k, v in {**SIZES, **defines}.items():
        cmd += ["-D", f"{k}={v}"]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={v}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    files = [os.path.join(out, f"out{i}.npy") for i in range(2)]
    return [np.load(f) for f in files if os.path.exists(f)]


def main():
    found = [p for p in (os.path.join(ROOT, "build", "grape"), os.path.join(ROOT, "build-gpu", "grape"))
             if os.path.exists(p)]
    grape = sys.argv[1] if len(sys.argv) > 1 else (found[0] if found else None)
    if not grape:
        print("SKIP: no grape binary (build/grape or build-gpu/grape)")
        return 77
    tmp = tempfile.mkdtemp(prefix="beam_tiny_")
    dev = torch.device("cpu")
    weight_sets = [("gpt2init", s, None) for s in (0, 1, 2)] + [("peaked", s, None) for s in (3, 4)] + \
                  [("peaked", s, 2.0) for s in (5, 6, 7)]
    prompt_lens = (1, 5, 16, 33, 57, 60, 64)
    eos_pad = ((127, 127), (127, 128), (128, 128))  # the README's tiny EOS; PAD told apart; EOS never produced
    passed = failed = 0
    stats = {"stopped_early": 0, "cache_full": 0, "with_eos_hyp": 0}
    for wi, (style, seed, eos_scale) in enumerate(weight_sets):
        W = os.path.join(tmp, f"w{wi}.safetensors")
        tiny_weights(W, seed, style, eos_scale)
        w = peer_torch.load_weights(W, dev)
        model = peer_torch.GPT2(w, TINY["NH"], TINY["T"], peer_torch.RefOps(dev))
        # numerics: prefill logits, bit for bit (Grape's `prefill` entry, batch 3)
        ids = np.random.default_rng(100 + wi).integers(0, TINY["V"], (3, 24)).astype(np.int32)
        np.save(os.path.join(tmp, "ids.npy"), ids)
        (g_logits,) = grape_run(grape, "prefill", W, {"ids": os.path.join(tmp, "ids.npy")},
                                os.path.join(tmp, "pre"), {})
        shape = (model.L, 3, model.NH, model.T, model.HD)
        kc, vc = torch.zeros(shape, dtype=torch.float16), torch.zeros(shape, dtype=torch.float16)
        with torch.no_grad():
            p_logits = model.prefill(torch.from_numpy(ids).long(), kc, vc).numpy()
        nbits = int((g_logits.view(np.uint16) != p_logits.view(np.uint16)).sum())
        print(f"weights {wi} ({style}, seed {seed}, eos x{eos_scale}): prefill logits differing bitwise: "
              f"{nbits} of {g_logits.size}", flush=True)
        for S in prompt_lens:
            prompt = np.random.default_rng(1000 * wi + S).integers(0, TINY["V"], (1, S)).astype(np.int32)
            P = os.path.join(tmp, "prompt.npy")
            np.save(P, prompt)
            for eos, pad in eos_pad:
                name = f"weights {wi} S={S} EOS={eos} PAD={pad}"
                g_tok, g_sc = grape_run(grape, "beam_search", W, {"prompt": P}, os.path.join(tmp, "beam"),
                                        {"EOS": eos, "PAD": pad})
                bs = peer_torch.BeamSearch(model, 5, TINY["N"], eos, pad, dev)
                with torch.no_grad():
                    p_tok, p_sc, steps, stopped = bs(prompt, graphed=False)
                ok = np.array_equal(g_tok, p_tok) and np.array_equal(g_sc.view(np.uint32), p_sc.view(np.uint32))
                stats["stopped_early"] += stopped
                stats["cache_full"] += not stopped and steps < TINY["N"]
                stats["with_eos_hyp"] += bool((p_tok == eos).any()) and eos < TINY["V"]
                if ok:
                    passed += 1
                else:
                    failed += 1
                    print(f"FAIL {name}: steps {steps}, stopped {stopped}\n grape {g_tok.tolist()} {g_sc.tolist()}\n"
                          f" peer  {p_tok.tolist()} {p_sc.tolist()}", flush=True)
    print(f"cases: {passed + failed}; searches that stopped early: {stats['stopped_early']}, that filled the "
          f"KV cache: {stats['cache_full']}, with an EOS-ended hypothesis in the result: {stats['with_eos_hyp']}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
