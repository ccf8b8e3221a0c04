"""Per-call device time of one Grape program and of its PyTorch peer under Nsight Compute, for
bench_kernels.py --ncu (its docstring says why). Both sides are measured the same way: `ncu --csv
--print-units base --clock-control none --cache-control none --metrics gpu__time_duration.sum`,
every kernel of a few steady-state calls, a call's figure the sum of its kernels, the median of the
calls reported.

  Grape:   `grape bench CASE.grp --executor eager --warmup 3 --iters 5` with --kernel-name regex:grape;
           the last 5 x (kernels per call) kernels are the 5 timed calls (autotuning launches, if the
           tuning cache lacks a decision, come first and fall outside them).
  PyTorch: this file run as `python3 ncu_time.py peer OP NAME=FILE.npy ...`: 3 calls, then 5 inside
           the NVTX push/pop range "grape_peer" (--nvtx --nvtx-include grape_peer/), so only the
           op's own kernels are profiled (not the input copies, nor anything before); kernels per
           call = kernels / 5 (split-K GEMMs launch a reduction beside the product).

  python3 bench/kernels/ncu_time.py --self-test   checks the CSV parser on a hand-written sample.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys

NCU_FLAGS = ["--csv", "--print-units", "base", "--clock-control", "none", "--cache-control", "none",
             "--metrics", "gpu__time_duration.sum"]
METRIC = "gpu__time_duration.sum"
WARMUP, CALLS = 3, 5
PEER_RANGE = "grape_peer"
# Microseconds per unit of gpu__time_duration as ncu versions print it (base or auto units).
_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}

# The PyTorch op of each case kind; bench_kernels.py checks Grape's output against these too.
PEER_OPS = {
    "kn": lambda torch, t: t["x"] @ t["w"],
    "nk": lambda torch, t: torch.nn.functional.linear(t["x"], t["w"]),
    "attention": lambda torch, t: torch.nn.functional.scaled_dot_product_attention(t["q"], t["k"], t["v"]),
}


def find_ncu():
    """ncu's path; SystemExit with a clear message where it is not on PATH."""
    path = shutil.which("ncu")
    if not path:
        sys.exit("--ncu: Nsight Compute's `ncu` is not on PATH (it ships with the CUDA toolkit, e.g. "
                 "/usr/local/cuda/bin/ncu: add its folder to PATH)")
    return path


def parse_ncu_csv(text):
    """[(kernel name, microseconds)] of every profiled kernel in launch order, from the stdout of
    `ncu --csv --metrics gpu__time_duration.sum ...` (which also holds ==PROF== lines and the
    profiled program's own output: only the quoted CSV lines from the header on are read)."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID",')), None)
    if start is None:
        return []
    rows = csv.DictReader(l for l in lines[start:] if l.startswith('"'))
    kernels = {}
    for r in rows:
        if r.get("Metric Name") != METRIC:
            continue
        unit = r.get("Metric Unit", "").strip()
        if unit not in _US:
            raise ValueError(f"ncu: unknown unit {unit!r} for {METRIC}")
        key = (r.get("Process ID", ""), int(r["ID"]))
        kernels[key] = (r["Kernel Name"], float(r["Metric Value"].replace(",", "")) * _US[unit])
    return list(kernels.values())  # dicts keep insertion order: ncu prints kernels as launched


def per_call_us(kernel_us, calls, per_call=None):
    """Median over `calls` calls of the summed time of each call's kernels. `kernel_us` holds the
    kernels in launch order; with `per_call` the last calls x per_call of them are the calls (the
    earlier ones are warm-up), without it all of them are, `calls` equal groups."""
    if per_call is None:
        if not kernel_us or len(kernel_us) % calls:
            raise ValueError(f"{len(kernel_us)} kernels profiled: not a multiple of {calls} calls")
        per_call = len(kernel_us) // calls
    need = calls * per_call
    if per_call < 1 or len(kernel_us) < need:
        raise ValueError(f"{len(kernel_us)} kernels profiled, expected at least {calls} calls x {per_call}")
    tail = kernel_us[len(kernel_us) - need:]
    return statistics.median(sum(tail[i * per_call:(i + 1) * per_call]) for i in range(calls)), per_call


def _run_ncu(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    kernels = parse_ncu_csv(p.stdout)
    if p.returncode != 0 or not kernels:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-15:])
        raise RuntimeError(f"ncu on {what} (exit {p.returncode}, {len(kernels)} kernels):\n{tail}")
    return kernels


def ncu_grape(ncu, grape, grape_args, per_call):
    """(median us per call, kernels per call) of `grape bench` on the eager executor. grape_args:
    the program and its --backend/--weights/--input arguments; per_call: kernels one call launches
    (`grape bench --profile --json`)."""
    cmd = [ncu, *NCU_FLAGS, "--kernel-name", "regex:grape", grape, "bench", *grape_args,
           "--executor", "eager", "--warmup", str(WARMUP), "--iters", str(CALLS)]
    kernels = _run_ncu(cmd, "grape bench")
    return per_call_us([us for _, us in kernels], CALLS, per_call)


def ncu_torch(ncu, op, files):
    """(median us per call, kernels per call) of PyTorch's op (a PEER_OPS key) on the arrays of
    `files` ({operand name: .npy path})."""
    cmd = [ncu, *NCU_FLAGS, "--nvtx", "--nvtx-include", PEER_RANGE + "/",
           sys.executable, os.path.abspath(__file__), "peer", op, *(f"{n}={p}" for n, p in files.items())]
    kernels = _run_ncu(cmd, f"PyTorch's {op}")
    return per_call_us([us for _, us in kernels], CALLS)


def peer_main(op, specs):
    """Runs under ncu: WARMUP calls of the op, then CALLS calls inside the NVTX range."""
    import numpy as np
    import torch
    t = {}
    for s in specs:
        name, path = s.split("=", 1)
        t[name] = torch.from_numpy(np.load(path)).cuda()
    fn = PEER_OPS[op]
    for _ in range(WARMUP):
        fn(torch, t)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(PEER_RANGE)
    for _ in range(CALLS):
        fn(torch, t)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


# ncu 2025.x `--csv` output of a profiled program that prints a line of its own; kernel 0 has a
# second metric row (ignored), times carry thousands separators, units vary as ncu versions print them.
_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
           '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _row(i, name, unit, value, metric=METRIC):
    return (f'"{i}","4242","python3.12","127.0.0.1","{name}","1","7","(384, 1, 1)","(2, 64, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def self_test():
    text = "\n".join([
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        "==PROF== Profiling \"nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN\" - 0: 0%....50%....100% - 1 pass",
        "some output of the program, \"quoted\", with commas",
        "==PROF== Disconnected from process 4242",
        _HEADER,
        _row(0, "nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN", "byte", "14,336", "dram__bytes.sum"),
        _row(0, "nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN", "nsecond", "17,540"),
        _row(1, "cublasLt::splitKreduce_kernel", "nsecond", "2,016"),
        _row(2, "nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN", "ns", "17180"),
        _row(3, "cublasLt::splitKreduce_kernel", "usecond", "1.984"),
        _row(4, "nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN", "nsecond", "17,310.5"),
        _row(5, "cublasLt::splitKreduce_kernel", "nsecond", "2,048"),
        "==WARNING== a warning ncu prints after the report",
    ])
    k = parse_ncu_csv(text)
    assert [n for n, _ in k] == ["nvjet_sm90_hsh_96x128_64x7_2x1_v_bz_TNN", "cublasLt::splitKreduce_kernel"] * 3, k
    assert abs(k[0][1] - 17.54) < 1e-9 and abs(k[3][1] - 1.984) < 1e-9 and abs(k[4][1] - 17.3105) < 1e-9, k
    us, n = per_call_us([t for _, t in k], 3)  # PyTorch: 3 calls of a split-K GEMM + its reduction
    assert n == 2 and abs(us - (17.3105 + 2.048)) < 1e-9, (us, n)  # median of 19.556, 19.164, 19.3585
    us, n = per_call_us([t for _, t in k], 2, per_call=2)  # Grape: the last 2 calls of 2 kernels
    assert n == 2 and abs(us - statistics.median([17.18 + 1.984, 17.3105 + 2.048])) < 1e-9, (us, n)
    for bad in (lambda: per_call_us([1.0] * 7, 5), lambda: per_call_us([1.0] * 3, 2, per_call=2),
                lambda: parse_ncu_csv(_HEADER + "\n" + _row(0, "k", "cycle", "5"))):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("expected ValueError")
    assert parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    print("ncu_time self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-test"]:
        self_test()
    elif sys.argv[1:2] == ["peer"] and len(sys.argv) > 3:
        peer_main(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
