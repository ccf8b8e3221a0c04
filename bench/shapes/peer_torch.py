#!/usr/bin/env python3
"""The shapes workload's PyTorch peer: GPT-2 small *prefill* (fp16, batch 1) at many prompt
lengths, with one CUDA graph per length -- what a PyTorch server that wants graph-speed prefill at
every length has to keep. Grape's claim (issue 8, bench/shapes) is that it covers all lengths
1..1024 with a handful of graphs; this script measures what the per-length alternative costs.

The model is written exactly like the `prefill` entry of examples/gpt2.grp:
  x = wte[ids] + wpe[0:S]; per block: ln_1 -> c_attn (HF Conv1D, x @ w + b) -> split q, k, v ->
  heads; kc[l, :, :, 0:S, :] = k, vc[...] = v (a KV cache preallocated for T positions);
  att = (q @ k^T) * rsqrt(HD) in fp16, masked with -10000 where key j > query i (not -inf),
  softmax, @ v; merge heads -> c_proj -> residual; ln_2 -> c_fc -> GELU *tanh approximation*
  -> c_proj -> residual. Then pos = S and logits = ln_f(x[:, S-1]) @ wte^T: the LAST position
  only. Layer norms use eps 1e-5.
T: gpt2.grp's default cache is T=256 positions, too short for prompts of up to 1024 tokens (its
prefill fails with "slice out of range"), so both sides use T = P = 1024 (Grape: `-D T=1024`).

For each length S (the ids are IDS[:, :S]):
  - eager: warm up, then the median of --iters calls timed with CUDA events (bench/common.py);
  - warm-up on a side stream, then ONE CUDA graph captured for that length with its own private
    memory pool (`torch.cuda.graph(g)`, the standard way; `--shared-pool` captures every length
    into one pool instead, longest first, as vLLM does -- then a graph's output is overwritten by
    the next graph's replay, so only one length can be in flight);
  - capture_ms: wall time of the capture including instantiation (the `with` block, synchronised);
  - memory: torch.cuda.memory_reserved / memory_allocated, and the driver's free memory
    (torch.cuda.mem_get_info, which also sees the instantiated graph's own device memory, outside
    PyTorch's allocator) before and after the capture, synchronised, after empty_cache() has
    released the eager calls' cached blocks. Earlier graphs are kept alive, as a server keeping
    one graph per length would;
  - replay: --warmup replays, then the median of --iters replays timed with CUDA events.
Before the measured captures, one throwaway capture at the shortest length primes the one-time
allocations (cuBLAS workspaces of the capture stream), which would otherwise be charged to the
first measured graph; it is kept alive and reported as "prime".

Extrapolation to every length of --range (default 1..1024, one graph each): memory and capture
time are interpolated piecewise-linearly between the sampled lengths (extended linearly past the
first and last sample) and summed over every integer length. Piecewise-linear, not one straight
line, because the attention scores grow as S^2 and the allocator rounds to segments; a
least-squares straight line and a least-squares quadratic are reported beside it as cross-checks.
The more lengths sampled (--lengths or --all LO:HI --sample K), the better the estimate.

--device cpu runs the same function on the CPU (no graphs, no timing of graphs: the correctness
check of the peer against Grape's CPU reference at tiny sizes, see README.md); --tiny expects the
tiny weights (L=2, E=64, NH=4, V=128, P=64) and uses T=64, like gpt2.grp with
`-D L=2 -D E=64 -D NH=4 -D V=128 -D P=64 -D T=64`.

usage: peer_torch.py WEIGHTS.safetensors IDS.npy OUT.json
           [--lengths 1,2,4,...,1024 | --all 1:1024 --sample K] [--range 1:1024]
           [--iters 50] [--warmup 5] [--logits-dir DIR] [--logits-only]
           [--device cuda|cpu] [--tiny] [--nh NH] [--T T] [--shared-pool]
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import read_safetensors, time_cuda  # noqa: E402


def load(path, device):
    """The safetensors file as {name: tensor} on `device` (no safetensors package needed)."""
    return {k: torch.from_numpy(a).to(device) for k, a in read_safetensors(path).items()}


def parse_lengths(a, P):
    """The sampled lengths: --lengths, or about K lengths of --all LO:HI (half spaced geometrically,
    for the short prompts, half evenly, for the long ones that hold most of the memory; both ends
    included; coinciding ones merged), or by default the powers of two up to P plus the odd multiples of P/8."""
    if a.lengths:
        s = {int(x) for x in a.lengths.split(",") if x}
    elif a.all:
        lo, hi = (int(x) for x in a.all.split(":"))
        k = max(2, a.sample)
        s = {lo, hi}
        s |= {int(round(x)) for x in np.geomspace(lo, hi, (k + 1) // 2)}
        s |= {int(round(x)) for x in np.linspace(lo, hi, k // 2 + 1)}
    else:
        s = {2 ** i for i in range(int(math.log2(P)) + 1)} | {P * j // 8 for j in (3, 5, 6, 7)}
    s = sorted(x for x in s if 1 <= x <= P)
    if not s:
        sys.exit("no lengths in 1..P")
    return s


def extrapolate(xs, ys, lo, hi):
    """Sum over every integer length lo..hi of ys interpolated piecewise-linearly between the
    samples xs (sorted), extended linearly past both ends (with one sample: constant)."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    grid = np.arange(lo, hi + 1, dtype=float)
    if len(xs) == 1:
        return float(ys[0] * len(grid))
    v = np.interp(grid, xs, ys)
    left, right = grid < xs[0], grid > xs[-1]
    v[left] = ys[0] + (grid[left] - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
    v[right] = ys[-1] + (grid[right] - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return float(np.maximum(v, 0).sum())


def fit_sum(xs, ys, lo, hi, deg):
    """Sum over lo..hi of a least-squares polynomial of degree deg through the samples."""
    if len(xs) <= deg:
        return None
    c = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), deg)
    return float(np.maximum(np.polyval(c, np.arange(lo, hi + 1, dtype=float)), 0).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("weights")
    ap.add_argument("ids", help="int32 [1, Smax] .npy; length S uses ids[:, :S]")
    ap.add_argument("out_json")
    ap.add_argument("--lengths", help="comma-separated lengths, e.g. 1,2,4,8,...,1024")
    ap.add_argument("--all", help="LO:HI: sample --sample lengths of this range")
    ap.add_argument("--sample", type=int, default=16)
    ap.add_argument("--range", default=None, help="LO:HI of the extrapolation (default 1:P)")
    ap.add_argument("--iters", type=int, default=50, help="timed replays / eager calls per length")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--logits-dir", help="write logits_S.npy (float32 [1, V]) for each length")
    ap.add_argument("--logits-only", action="store_true", help="compute and write the logits; time nothing")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--tiny", action="store_true", help="tiny weights: NH=4, T=64")
    ap.add_argument("--nh", type=int, default=None, help="attention heads (default 12, --tiny 4)")
    ap.add_argument("--T", type=int, default=None, help="KV-cache positions (default P)")
    ap.add_argument("--shared-pool", action="store_true", help="capture all lengths into one memory pool")
    a = ap.parse_args()

    dev = a.device
    cuda = dev == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("no CUDA device: use --device cpu")
    w = load(a.weights, dev)
    g = lambda n: w["transformer." + n]  # noqa: E731
    V, E = g("wte.weight").shape
    P = g("wpe.weight").shape[0]
    L = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("transformer.h."))
    NH = a.nh or (4 if a.tiny else 12)
    HD = E // NH
    T = a.T or P
    lengths = parse_lengths(a, min(P, T))
    lo, hi = (int(x) for x in a.range.split(":")) if a.range else (1, min(P, T))
    ids_all = torch.from_numpy(np.load(a.ids).astype(np.int64)).to(dev)
    if ids_all.ndim != 2 or ids_all.shape[0] != 1 or ids_all.shape[1] < lengths[-1]:
        sys.exit(f"ids: want int [1, >= {lengths[-1]}], got {tuple(ids_all.shape)}")

    f16 = torch.float16
    # Made before any capture: the cache (state of the program), the causal mask, the constants.
    kc = torch.zeros(L, 1, NH, T, HD, device=dev, dtype=f16)
    vc = torch.zeros_like(kc)
    pos = torch.zeros((), device=dev, dtype=torch.int32)
    causal = torch.ones(P, P, device=dev, dtype=torch.bool).tril()  # causal_mask: j <= i
    scale = torch.rsqrt(torch.tensor(float(HD), dtype=f16, device=dev))
    neg = torch.tensor(-10000.0, dtype=f16, device=dev)
    blocks = [{k: g(f"h.{l}.{k}") for k in (
        "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
        "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
        "mlp.c_proj.weight", "mlp.c_proj.bias")} for l in range(L)]
    wte, wpe = g("wte.weight"), g("wpe.weight")

    def prefill(ids):
        """gpt2.grp's prefill(ids: i32[1, S]) -> f16[1, V]; writes kc, vc and pos."""
        S = ids.shape[1]
        x = wte[ids] + wpe[0:S]  # [1, S, E]
        mask = causal[:S, :S]
        heads = lambda t: t.view(1, S, NH, HD).transpose(1, 2)  # noqa: E731
        for l, b in enumerate(blocks):
            h = F.layer_norm(x, (E,), b["ln_1.weight"], b["ln_1.bias"], 1e-5)
            q, k, v = (h @ b["attn.c_attn.weight"] + b["attn.c_attn.bias"]).split(E, -1)
            q, k, v = heads(q), heads(k), heads(v)
            kc[l, :, :, 0:S, :] = k
            vc[l, :, :, 0:S, :] = v
            att = torch.where(mask, (q @ k.transpose(2, 3)) * scale, neg)
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(1, S, E)
            x = x + (y @ b["attn.c_proj.weight"] + b["attn.c_proj.bias"])
            h = F.layer_norm(x, (E,), b["ln_2.weight"], b["ln_2.bias"], 1e-5)
            f = F.gelu(h @ b["mlp.c_fc.weight"] + b["mlp.c_fc.bias"], approximate="tanh")
            x = x + (f @ b["mlp.c_proj.weight"] + b["mlp.c_proj.bias"])
        pos.fill_(S)
        x = F.layer_norm(x[:, S - 1:S, :], (E,), g("ln_f.weight"), g("ln_f.bias"), 1e-5)
        return (x @ wte.t())[:, 0, :]

    def save_logits(S, t):
        if a.logits_dir:
            os.makedirs(a.logits_dir, exist_ok=True)
            np.save(os.path.join(a.logits_dir, f"logits_{S}.npy"), t.float().cpu().numpy())

    res = {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
           "config": {"L": L, "E": E, "NH": NH, "V": V, "P": P, "T": T, "batch": 1, "dtype": "float16"},
           "pool": "shared" if a.shared_pool else "private", "iters": a.iters, "warmup": a.warmup}

    if a.logits_only or not cuda:
        rows = []
        with torch.no_grad():
            for S in lengths:
                ids = ids_all[:, :S].contiguous()
                out = prefill(ids)
                save_logits(S, out)
                row = {"S": S}
                if not a.logits_only:  # CPU timing: wall time, for the smoke test only
                    t0 = time.perf_counter()
                    for _ in range(a.iters):
                        prefill(ids)
                    row["eager_ms"] = (time.perf_counter() - t0) * 1e3 / a.iters
                rows.append(row)
        res["lengths"] = rows
        res["note"] = "no CUDA graphs: " + ("--logits-only" if a.logits_only else "--device cpu")
        with open(a.out_json, "w") as f:
            json.dump(res, f, indent=1)
        print(json.dumps(res, indent=1))
        return

    def mem():
        torch.cuda.synchronize()
        free, _ = torch.cuda.mem_get_info()
        return torch.cuda.memory_reserved(), torch.cuda.memory_allocated(), free

    graphs = []  # kept alive: a server holds one graph per length
    pool = torch.cuda.graph_pool_handle() if a.shared_pool else None
    side = torch.cuda.Stream()

    def capture(ids):
        """Side-stream warm-up, then one graph for ids' length; returns the graph, its static
        output, the capture wall time (ms) and the memory it took (reserved, allocated, device)."""
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                prefill(ids)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the eager calls' cached blocks are not the graph's
        r0, a0, f0 = mem()
        graph = torch.cuda.CUDAGraph()
        t0 = time.perf_counter()
        with torch.cuda.graph(graph, pool=pool):
            out = prefill(ids)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        r1, a1, f1 = mem()
        graphs.append((graph, out, ids))
        return graph, out, ms, (r1 - r0, a1 - a0, f0 - f1)

    rows = []
    with torch.no_grad():
        ids = ids_all[:, :lengths[0]].contiguous()
        prefill(ids)
        _, _, ms, (br, ba, bd) = capture(ids)
        res["prime"] = {"S": lengths[0], "capture_ms": ms, "bytes_reserved": br, "bytes_allocated": ba,
                        "bytes_device": bd}
        order = sorted(lengths, reverse=a.shared_pool)  # a shared pool is filled longest first
        for S in order:
            ids = ids_all[:, :S].contiguous()
            eager_out = prefill(ids)
            eager = time_cuda(torch, lambda: prefill(ids), a.iters, a.warmup)
            graph, out, ms, (br, ba, bd) = capture(ids)
            replay = time_cuda(torch, graph.replay, a.iters, a.warmup)
            graph.replay()
            torch.cuda.synchronize()
            diff = (out.float() - eager_out.float()).norm() / eager_out.float().norm()
            save_logits(S, out)
            rows.append({"S": S, "graph_ms": replay["median_ms"], "eager_ms": eager["median_ms"],
                         "capture_ms": ms, "graph_bytes_reserved": br, "graph_bytes_allocated": ba,
                         "graph_bytes_device": bd, "graph": replay, "eager": eager,
                         "graph_vs_eager_rel_l2": float(diff)})
            print(f"S={S:5d}  graph {replay['median_ms']:.3f} ms  eager {eager['median_ms']:.3f} ms  "
                  f"capture {ms:.1f} ms  reserved +{br / 2**20:.1f} MiB  device +{bd / 2**20:.1f} MiB",
                  file=sys.stderr)
    rows.sort(key=lambda r: r["S"])
    res["lengths"] = rows
    xs = [r["S"] for r in rows]
    col = lambda k: [r[k] for r in rows]  # noqa: E731
    ex = {"range": [lo, hi], "graphs": hi - lo + 1, "sampled": len(rows),
          "bytes_reserved": extrapolate(xs, col("graph_bytes_reserved"), lo, hi),
          "bytes_allocated": extrapolate(xs, col("graph_bytes_allocated"), lo, hi),
          "bytes_device": extrapolate(xs, col("graph_bytes_device"), lo, hi),
          "capture_s": extrapolate(xs, col("capture_ms"), lo, hi) / 1e3,
          "bytes_reserved_lsq_linear": fit_sum(xs, col("graph_bytes_reserved"), lo, hi, 1),
          "bytes_reserved_lsq_quadratic": fit_sum(xs, col("graph_bytes_reserved"), lo, hi, 2),
          "bytes_device_lsq_linear": fit_sum(xs, col("graph_bytes_device"), lo, hi, 1),
          "capture_s_lsq_linear": (fit_sum(xs, col("capture_ms"), lo, hi, 1) or 0) / 1e3}
    res["extrapolated_all_lengths"] = ex
    res["sampled_totals"] = {"bytes_reserved": sum(col("graph_bytes_reserved")),
                             "bytes_device": sum(col("graph_bytes_device")),
                             "capture_s": sum(col("capture_ms")) / 1e3}
    res["method"] = ("piecewise-linear interpolation of each sampled length's graph memory and capture time "
                     "(extended linearly past the end samples), summed over every integer length of the range; "
                     "*_lsq_linear / *_lsq_quadratic: least-squares line / quadratic in S over the samples, summed "
                     "the same way (cross-checks). bytes_reserved/allocated: torch.cuda.memory_reserved/allocated "
                     "growth over the capture; bytes_device: drop of the driver's free memory (mem_get_info), which "
                     "also counts the instantiated graph itself. Pool: " + res["pool"] + ".")
    with open(a.out_json, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != "lengths"}, indent=1))


if __name__ == "__main__":
    main()
