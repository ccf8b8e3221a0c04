"""Prints the benchmark table (Grape vs the PyTorch peers, measured in the same run) after checking
that both sides computed the same outputs. usage: report.py DIR"""
import json
import sys

import numpy as np


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))


def main(d):
    ok = True
    lines = []
    # decode
    g = json.load(open(f"{d}/grape_decode.json"))
    p = json.load(open(f"{d}/torch_decode.json"))
    err = rel_l2(np.load(f"{d}/torch_decode_logits.npy"), np.load(f"{d}/grape_decode/out0.npy"))
    same = err <= 1e-2
    ok &= same
    lines.append(f"decode (GPT-2 small, fp16, batch 5, past 128) on {p['device']}: logits (executor auto) rel. L2 vs PyTorch {err:.2e} "
                 f"({'ok' if same else 'MISMATCH'})")
    lines.append(f"  Grape eager: median {g['median_ms']:.3f} ms (p90 {g['p90_ms']:.3f}, p99 {g['p99_ms']:.3f}), "
                 f"{g['kernels_per_call']} kernels, {g['host_syncs_per_call']} host syncs, "
                 f"{g['device_bytes'] / 1e6:.0f} MB device memory")
    # The graph executor and mono's decoder plan, where the run has them (bench/run.sh).
    for name in ("graph", "mono"):
        try:
            x = json.load(open(f"{d}/grape_decode_{name}.json"))
        except FileNotFoundError:
            continue
        plan = f", plan {x['plan']}" if x.get("plan") else ""
        lines.append(f"  Grape {name}: median {x['median_ms']:.3f} ms (p90 {x['p90_ms']:.3f}), "
                     f"{x['kernels_per_call']} kernels{plan}")
        try:
            e = rel_l2(np.load(f"{d}/torch_decode_logits.npy"), np.load(f"{d}/grape_decode_{name}/out0.npy"))
            ok &= e <= 1e-2
            lines.append(f"    its logits rel. L2 vs PyTorch {e:.2e} ({'ok' if e <= 1e-2 else 'MISMATCH'})")
        except FileNotFoundError:
            pass
        if "cuda_graph" in p:
            lines.append(f"    PyTorch cuda_graph / Grape {name}: {p['cuda_graph']['median_ms'] / x['median_ms']:.2f}x")
    for k in ("eager", "cuda_graph", "torch_compile"):
        if k in p:
            lines.append(f"  PyTorch {k:13s}: median {p[k]['median_ms']:.3f} ms  -> Grape eager is "
                         f"{p[k]['median_ms'] / g['median_ms']:.2f}x {'faster' if p[k]['median_ms'] > g['median_ms'] else 'as fast (slower)'}")
    if "torch_compile_error" in p:
        lines.append(f"  PyTorch torch.compile failed: {p['torch_compile_error']}")
    lines.append(f"  PyTorch eager launches {p['kernels_eager']} kernels per step")
    for name in ("cold", "warm"):
        try:
            c = json.load(open(f"{d}/grape_decode_{name}.json"))
            lines.append(f"  Grape session creation, {name} kernel cache: kernel build {c['compile_ms']:.0f} ms")
        except FileNotFoundError:
            pass
    # overhead
    try:
        g = json.load(open(f"{d}/grape_overhead.json"))
        p = json.load(open(f"{d}/torch_overhead.json"))
        n = p["n"]
        err = rel_l2(np.load(f"{d}/torch_overhead.npy"), np.load(f"{d}/grape_overhead/out0.npy"))
        same = err <= 1e-4
        ok &= same
        lines.append(f"overhead ({n} chained softmax ops): outputs rel. L2 {err:.2e} ({'ok' if same else 'MISMATCH'})")
        lines.append(f"  per op boundary: Grape eager {1000 * g['median_ms'] / n:.2f} us ({g['kernels_per_call']} kernels), "
                     f"PyTorch eager {1000 * p['eager']['median_ms'] / n:.2f} us, "
                     f"PyTorch CUDA graph {1000 * p['cuda_graph']['median_ms'] / n:.2f} us")
    except FileNotFoundError:
        pass
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
