"""The bert workload (performance.md): Grape's BERT-base `forward` (examples/bert.grp, sequence 128,
batch 1 and 16, graph executor) beside its PyTorch peer (bench/bert/peer_torch.py: the same model
eager, in a CUDA graph, and in a CUDA graph with scaled_dot_product_attention), same seeded
weights and inputs (bench/bert/make_inputs.py), hidden states compared before anything is timed.
Targets (issue 7): batch 1 <= 0.45 ms, batch 16 <= 1.5 ms of kernel time.

    python3 bench/bert/bench_bert.py --grape build/grape --out DIR        (the GPU machine)

Writes under DIR: bert.safetensors, ids{1,16}.npy, mask{1,16}.npy, grape_bert_b{B}/out0.npy,
torch_bert_b{B}.npy, grape_bert_b{B}.json, torch_bert_b{B}.json and bert_results.md. Exit status
1 when the hidden states differ by more than 1e-2 (relative L2)."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grape", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    d = a.out
    subprocess.run([sys.executable, os.path.join(HERE, "make_inputs.py"), d], check=True)
    rows, ok = [], True
    for b in (1, 16):
        args = [os.path.join(ROOT, "examples", "bert.grp"), "--entry", "forward", "--weights", f"{d}/bert.safetensors",
                "--input", f"ids={d}/ids{b}.npy", "--input", f"mask={d}/mask{b}.npy", "--backend", "cuda",
                "--executor", "graph"]
        subprocess.run([a.grape, "run", *args, "--output", f"{d}/grape_bert_b{b}"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, os.path.join(HERE, "peer_torch.py"), f"{d}/bert.safetensors", f"{d}/ids{b}.npy",
                        f"{d}/mask{b}.npy", f"{d}/torch_bert_b{b}.npy", f"{d}/torch_bert_b{b}.json"], check=True,
                       stdout=subprocess.DEVNULL)
        want = np.load(f"{d}/torch_bert_b{b}.npy").astype(np.float64)
        got = np.load(f"{d}/grape_bert_b{b}/out0.npy").astype(np.float64)
        err = float(np.linalg.norm(want - got) / np.linalg.norm(want))
        ok &= err <= 1e-2
        with open(f"{d}/grape_bert_b{b}.json", "w") as f:
            subprocess.run([a.grape, "bench", *args, "--warmup", "10", "--iters", str(a.iters), "--json"], check=True,
                           stdout=f)
        g = json.load(open(f"{d}/grape_bert_b{b}.json"))
        p = json.load(open(f"{d}/torch_bert_b{b}.json"))
        best = min(p["graph"]["median_ms"], p["graph_sdpa"]["median_ms"])
        rows.append(f"| BERT-base forward, b={b}, s=128 | **{g['median_ms']:.3f} ms**, {g['kernels_per_call']} kernels "
                    f"| {p['eager']['median_ms']:.3f} ms | {p['graph']['median_ms']:.3f} ms "
                    f"| {p['graph_sdpa']['median_ms']:.3f} ms | {best / g['median_ms']:.2f}x | {err:.2e} |")
    table = ["| workload | Grape (graph) | PyTorch eager | PyTorch + graph | PyTorch + graph + SDPA "
             "| best peer / Grape | hidden states rel. L2 |", "|---|---|---|---|---|---|---|", *rows]
    open(f"{d}/bert_results.md", "w").write("\n".join(table) + "\n")
    print("\n".join(table))
    if not ok:
        print("BERT: Grape's hidden states differ from PyTorch's (rel. L2 > 1e-2)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
