"""Every matrix-product shape of the decode, BERT (b=1, b=16) and MLP workloads and both attention
shapes, each as a one-op Grape program beside PyTorch in the same run (issue 7, item 9).

  python3 bench/kernels/bench_kernels.py GRAPE OUT_DIR [--backend cuda|cpu] [--only SUBSTRING] [--ncu]

For each shape it writes OUT_DIR/<name>.grp, random f16 weights (safetensors) and inputs (.npy), runs
the program once with `grape run` and compares its output with PyTorch's (rel. L2 <= 1e-2, else the
row says FAIL and nothing of it is timed), then times:
  grape_us   `grape bench --profile` (CUDA): the sum of the program's kernels' device times per
             call. Each kernel's figure includes its launch and event records, about 4 us for a
             kernel that does almost nothing (docs/kernels.md, "Profiling"). On the CPU backend:
             the wall-time median of `grape bench`.
  torch_us   the same op in PyTorch, captured 20 times in a CUDA graph and replayed: device time
             per op, without launch gaps.
and prints us, GB/s (operands and result once), TFLOP/s and grape/torch. Weights that fit in L2
(50 MB on an H100) stay there between calls on both sides, so the decode rows measure L2-resident
products; the decode workload (bench/decode) is the DRAM-bound figure. Results: OUT_DIR/kernels.json.

grape_us against torch_us is not a fair comparison: grape_us times each launch between CUDA events
(4-5 us more per kernel), torch_us replays a graph with no launch gaps, which made Grape look 1.5-2x
slower than it is on the short products. --ncu (CUDA; `ncu` must be on PATH) measures both sides
the same way after the check, with Nsight Compute's per-kernel gpu__time_duration under
`--clock-control none --cache-control none` (the GPU's own clocks, caches left warm as in a run),
`--csv --print-units base` parsed by bench/kernels/ncu_time.py:
  grape_ncu_us   `grape bench --executor eager --warmup 3 --iters 5` under ncu (kernels named
                 grape*): the last 5 calls, each the sum of its kernels (as many per call as
                 `grape bench --profile --json` counts launches), the median.
  torch_ncu_us   the op 3 times, then 5 times inside an NVTX push/pop range that alone is profiled
                 (--nvtx-include), so only the op's own kernels count, not the operands' copies to
                 the GPU; each call the sum of its kernels (a split-K GEMM's reduction counts), the
                 median.
and prints them, ncu_ratio = grape_ncu_us / torch_ncu_us, Grape's TFLOP/s at grape_ncu_us and its
share of PyTorch's at torch_ncu_us (tflops_share = torch_ncu_us / grape_ncu_us). kernels.json gains
grape_ncu_us, torch_ncu_us, grape_ncu_kernels and torch_ncu_kernels (kernels per call), ncu_ratio,
grape_ncu_TFLOPs, torch_ncu_TFLOPs and tflops_share (null where a side failed; the reason goes to
stderr). The ncu process finds Grape's autotuning decisions in the tuning cache that the run before
it wrote, so both launch the same configurations. Nsight Compute serialises kernels and adds ~1 us
to a launch of a tiny kernel (docs/kernels.md, "Profiling"), on both sides alike.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import write_safetensors  # noqa: E402
from ncu_time import PEER_OPS, find_ncu, ncu_grape, ncu_torch  # noqa: E402

# (name, layout, M, K, N): "kn" is x @ w with w [K, N] (GPT-2's Conv1D), "nk" is linear(x, w) with
# w [N, K] (nn.Linear).
PRODUCTS = [
    ("decode c_attn", "kn", 5, 768, 2304),
    ("decode attn c_proj", "kn", 5, 768, 768),
    ("decode c_fc", "kn", 5, 768, 3072),
    ("decode mlp c_proj", "kn", 5, 3072, 768),
    ("decode lm_head", "nk", 5, 768, 50257),
    ("bert b1 q/k/v/out", "nk", 128, 768, 768),
    ("bert b1 ffn up", "nk", 128, 768, 3072),
    ("bert b1 ffn down", "nk", 128, 3072, 768),
    ("bert b16 q/k/v/out", "nk", 2048, 768, 768),
    ("bert b16 ffn up", "nk", 2048, 768, 3072),
    ("bert b16 ffn down", "nk", 2048, 3072, 768),
    ("mlp fc1 b256", "nk", 256, 4096, 16384),
    ("mlp fc2 b256", "nk", 256, 16384, 4096),
]
# (name, B, heads, query rows, keys, head width): decode (one query row over the cache) and BERT.
ATTENTION = [
    ("attention decode", 5, 12, 1, 129, 64),
    ("attention bert s128", 1, 12, 128, 128, 64),
    ("attention bert s128 b16", 16, 12, 128, 128, 64),
]


def slug(name):
    return name.replace(" ", "_").replace("/", "")


def product_case(out, name, layout, M, K, N, rng):
    w_shape = (K, N) if layout == "kn" else (N, K)
    expr = "x @ w" if layout == "kn" else "linear(x, w)"
    src = f"weights {{ w: f16[{w_shape[0]}, {w_shape[1]}] }}\nfn main(x: f16[{M}, {K}]) -> f16[{M}, {N}] {{\n  return {expr}\n}}\n"
    x = (rng.standard_normal((M, K), dtype=np.float32)).astype(np.float16)
    w = (rng.standard_normal(w_shape, dtype=np.float32) / np.sqrt(K)).astype(np.float16)
    base = os.path.join(out, slug(name))
    open(base + ".grp", "w").write(src)
    write_safetensors(base + ".safetensors", {"w": w})
    np.save(base + "_x.npy", x)
    bytes_moved = 2 * (M * K + K * N + M * N)
    flops = 2 * M * N * K
    return {"name": name, "op": layout, "grp": base + ".grp", "weights": base + ".safetensors",
            "inputs": {"x": x}, "host": {"x": x, "w": w}, "peer": PEER_OPS[layout], "bytes": bytes_moved,
            "flops": flops}


def attention_case(out, name, B, H, S, KV, D, rng):
    src = (f"fn main(q: f16[{B}, {H}, {S}, {D}], k: f16[{B}, {H}, {KV}, {D}], v: f16[{B}, {H}, {KV}, {D}])"
           f" -> f16[{B}, {H}, {S}, {D}] {{\n"
           f"  let att = (q @ transpose(k, 2, 3)) * rsqrt(cast({D}, f16))\n"
           f"  return softmax(att, axis=-1) @ v\n}}\n")
    t = {n: rng.standard_normal(s, dtype=np.float32).astype(np.float16)
         for n, s in (("q", (B, H, S, D)), ("k", (B, H, KV, D)), ("v", (B, H, KV, D)))}
    base = os.path.join(out, slug(name))
    open(base + ".grp", "w").write(src)
    bytes_moved = 2 * (2 * B * H * S * D + 2 * B * H * KV * D)
    flops = 4 * B * H * S * KV * D
    return {"name": name, "op": "attention", "grp": base + ".grp", "weights": None, "inputs": t, "host": t,
            "peer": PEER_OPS["attention"], "bytes": bytes_moved, "flops": flops}


def grape_args(case, out, backend):
    args = [case["grp"], "--backend", backend]
    if case["weights"]:
        args += ["--weights", case["weights"]]
    for n, a in case["inputs"].items():
        path = os.path.join(out, f"{slug(case['name'])}_{n}.npy")
        np.save(path, a)
        args += ["--input", f"{n}={path}"]
    return args


def run_grape(grape, case, out, backend):
    """Output of one call (for the check), microseconds per call, distinct kernels and kernel launches
    per call."""
    args = grape_args(case, out, backend)
    odir = os.path.join(out, slug(case["name"]) + "_out")
    subprocess.run([grape, "run", *args, "--output", odir], check=True, capture_output=True, text=True)
    result = np.load(os.path.join(odir, "out0.npy")).astype(np.float32)
    cmd = [grape, "bench", *args, "--warmup", "10", "--iters", "100", "--json"]
    if backend == "cuda":
        cmd.append("--profile")
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    if backend == "cuda":
        us = sum(k["us_per_call"] for k in r["profile"]["kernels"])
        kernels = len(r["profile"]["kernels"])
        launches = round(sum(k["launches"] for k in r["profile"]["kernels"]) / max(1, r["profile"]["runs"]))
    else:
        us, kernels, launches = r["median_ms"] * 1e3, 0, 0
    return result, us, kernels, launches


def run_torch(case):
    """PyTorch's output and device microseconds per op (CUDA graph of 20 ops, replayed); None
    without PyTorch or a GPU."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    d = {n: torch.from_numpy(a).cuda() for n, a in case["host"].items()}
    result = case["peer"](torch, d).float().cpu().numpy()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            case["peer"](torch, d)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(20):
            case["peer"](torch, d)
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / 20)
    return result, float(np.median(times))


def run_ncu(ncu, grape, case, out, launches):
    """The --ncu figures of a case: per-call device times of both sides under Nsight Compute."""
    row = {"grape_ncu_us": None, "grape_ncu_kernels": None, "torch_ncu_us": None, "torch_ncu_kernels": None}
    try:
        row["grape_ncu_us"], row["grape_ncu_kernels"] = ncu_grape(ncu, grape, grape_args(case, out, "cuda"), launches)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"  {case['name']}: --ncu on Grape failed: {e}", file=sys.stderr)
    files = {}
    for n, a in case["host"].items():  # the operands as .npy for the peer process
        files[n] = os.path.join(out, f"{slug(case['name'])}_{n}.npy")
        np.save(files[n], a)
    try:
        row["torch_ncu_us"], row["torch_ncu_kernels"] = ncu_torch(ncu, case["op"], files)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"  {case['name']}: --ncu on PyTorch failed: {e}", file=sys.stderr)
    g, t = row["grape_ncu_us"], row["torch_ncu_us"]
    row["grape_ncu_TFLOPs"] = case["flops"] / g / 1e6 if g else None
    row["torch_ncu_TFLOPs"] = case["flops"] / t / 1e6 if t else None
    row["ncu_ratio"] = g / t if g and t else None
    row["tflops_share"] = t / g if g and t else None  # Grape's TFLOP/s over PyTorch's
    return row


def ncu_columns(r):
    f = lambda v, spec: format(v, spec) if v is not None else format("-", ">" + spec.split(".")[0])
    return (f" {f(r['grape_ncu_us'], '12.2f')} {f(r['torch_ncu_us'], '12.2f')} {f(r['ncu_ratio'], '9.2f')}"
            f" {f(r['grape_ncu_TFLOPs'], '11.2f')} {f(r['tflops_share'], '12.2f')}")


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("grape")
    ap.add_argument("out")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--only", default="", help="run the shapes whose name contains this")
    ap.add_argument("--ncu", action="store_true",
                    help="also time both sides' kernels under Nsight Compute (CUDA; ncu on PATH): "
                         "grape_ncu_us, torch_ncu_us, their ratio, TFLOP/s and Grape's share of PyTorch's")
    a = ap.parse_args()
    if a.ncu and a.backend != "cuda":
        ap.error("--ncu needs --backend cuda")
    ncu = find_ncu() if a.ncu else None
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    cases = [product_case(a.out, *p, rng) for p in PRODUCTS if a.only in p[0]]
    cases += [attention_case(a.out, *p, rng) for p in ATTENTION if a.only in p[0]]
    rows, failed = [], 0
    print(f"{'shape':24} {'grape_us':>9} {'kern':>4} {'torch_us':>9} {'grape/torch':>11} {'GB/s':>8} "
          f"{'TFLOP/s':>8} {'rel_L2':>8}" + (f" {'grape_ncu_us':>12} {'torch_ncu_us':>12} {'ncu_ratio':>9} "
                                            f"{'ncu_TFLOP/s':>11} {'tflops_share':>12}" if ncu else ""))
    for c in cases:
        got, us, kernels, launches = run_grape(a.grape, c, a.out, a.backend)
        want, torch_us = run_torch(c) if a.backend == "cuda" else (None, None)
        err = rel_l2(got, want) if want is not None else None
        ok = err is None or err <= 1e-2
        row = {"name": c["name"], "grape_us": us, "kernels": kernels, "torch_us": torch_us, "rel_l2": err,
               "bytes": c["bytes"], "flops": c["flops"], "ok": ok,
               "GBps": c["bytes"] / us / 1e3 if us else None, "TFLOPs": c["flops"] / us / 1e6 if us else None,
               "torch_GBps": c["bytes"] / torch_us / 1e3 if torch_us else None,
               "torch_TFLOPs": c["flops"] / torch_us / 1e6 if torch_us else None}
        rows.append(row)
        if not ok:
            failed += 1
            print(f"{c['name']:24} FAIL: Grape's output differs from PyTorch's, rel. L2 {err:.3g}")
            continue
        if ncu:
            row.update(run_ncu(ncu, a.grape, c, a.out, launches))
        ratio = f"{us / torch_us:11.2f}" if torch_us else f"{'-':>11}"
        print(f"{c['name']:24} {us:9.2f} {kernels:4d} {torch_us if torch_us else float('nan'):9.2f} {ratio} "
              f"{row['GBps']:8.0f} {row['TFLOPs']:8.2f} {err if err is not None else float('nan'):8.1e}"
              + (ncu_columns(row) if ncu else ""), flush=bool(ncu))
    with open(os.path.join(a.out, "kernels.json"), "w") as f:
        json.dump(rows, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
