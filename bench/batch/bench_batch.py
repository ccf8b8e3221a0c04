#!/usr/bin/env python3
"""The throughput targets of `grape batch` (issue 9): N single-row MLP requests through
`grape batch --max-batch 64`, against the same rows as N separate `grape run` invocations, and
against one `grape run` on all the rows stacked into one batch.

    python3 bench/batch/bench_batch.py --grape build-batch/grape                  # CPU target
    python3 bench/batch/bench_batch.py --grape build/grape --backend cuda --inputs npy-rows \\
        --defines D=4096,H=16384,C=4096 --n 100000 --max-batch 256 --runs 0       # GPU target
    ... --devices all                                                             # every GPU
    python3 bench/batch/bench_batch.py --grape build-batch/grape --model rows --inputs npy-rows \\
        --outputs npy-rows --n 100000 --max-batch 256 --runs 0 --out-root /dev/shm   # host side alone

`grape run` per request is timed on --runs invocations (default 500) and scaled to N: a process
start, model load and session per request is the same cost every time. The GPU target compares
requests/s with the rows/s of `grape bench` on full batches of --max-batch rows
(batch_over_bench_throughput, target >= 0.8). The results of the batch
are checked against the stacked run (the same bits on the CPU backend). Prints one JSON object;
--json-out writes it too.

What the figures cover. `processing_requests_per_s` (and batch_over_bench_throughput) is the
summary's `requests_per_s` of the best run: requests over the span from the first request read
to the last result line written, the final fsync of results.jsonl and of every output file
included; the start (program, random weights, sessions, kernels) is not in it, as it is not in
`grape bench`'s figure. Unlike `grape bench`, that span also reads the inputs (the shared .npy
is mapped, so a file not in the page cache is read from disk) and writes the outputs durably:
with --outputs npy-rows, the 4096-wide MLP writes 8 KB per request, so the disk's fsynced write
rate bounds the throughput (`output_mb_per_s` shows how close it is). `requests_per_s` is over the
whole process (start included).

--model rows runs bench/batch/rows.grp instead of the MLP: the same f16[B, 4096] rows in and out
and no compute, so that on a CPU the figure is the host side of `grape batch` alone. --out-root
puts the output folders elsewhere, e.g. on /dev/shm (tmpfs: no disk, fsync costs nothing) to
measure the host side without the disk.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(REPO, "examples", "mlp.grp")
ROWS = os.path.join(REPO, "bench", "batch", "rows.grp")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grape", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--model", choices=["mlp", "rows"], default="mlp",
                    help="the MLP, or bench/batch/rows.grp (f16[B, D] rows in and out, no compute)")
    ap.add_argument("--defines", default=None, help="the model's sizes (MLP default: tiny D=32,H=64,C=10; "
                    "rows default: D=4096)")
    ap.add_argument("--out-root", default=None, help="where the output folders go (default: beside the requests)")
    ap.add_argument("--n", type=int, default=10000, help="requests")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=500, help="grape run invocations timed (0: skip)")
    ap.add_argument("--devices", default=None, help="passed to grape batch (e.g. all)")
    ap.add_argument("--threads", default=None, help="sessions per device (default: grape's auto)")
    ap.add_argument("--repeat", type=int, default=3, help="batch and stacked runs: best of this many")
    ap.add_argument("--inputs", choices=["json", "npy-rows"], default="json",
                    help="requests carry their row as JSON numbers, or as rows of one shared .npy file")
    ap.add_argument("--outputs", default=None, help="passed to grape batch (auto, inline, npy)")
    ap.add_argument("--batch-args", default="", help="more arguments for grape batch (e.g. --no-warmup)")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    grape = os.path.abspath(a.grape)
    if a.defines is None:
        a.defines = "D=32,H=64,C=10" if a.model == "mlp" else "D=4096"
    defs = dict(kv.split("=") for kv in a.defines.split(","))
    dargs = [x for k, v in defs.items() for x in ("-D", f"{k}={v}")]
    common = [MLP if a.model == "mlp" else ROWS, "--entry", "main", *dargs, "--backend", a.backend]
    if a.model == "mlp":
        common += ["--random-weights", "1"]
    D = int(defs["D"])

    tmp = tempfile.mkdtemp(prefix="grape_bench_batch_")
    out_root = tempfile.mkdtemp(prefix="grape_bench_batch_out_", dir=a.out_root) if a.out_root else tmp
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((a.n, D)).astype(np.float16)
    req = os.path.join(tmp, "requests.jsonl")
    stacked = os.path.join(tmp, "x_all.npy")
    np.save(stacked, xs)
    with open(req, "w") as f:
        for i in range(a.n):
            if a.inputs == "json":
                x = [xs[i].tolist()]
            else:
                x = {"npy": "x_all.npy", "rows": [i, i + 1]}
            f.write(json.dumps({"id": f"r{i}", "inputs": {"x": x}}) + "\n")
    one = os.path.join(tmp, "x_one.npy")
    np.save(one, xs[:1])

    def timed(args):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return time.perf_counter() - t0

    res = {"model": a.model, "backend": a.backend, "defines": a.defines, "out_root": out_root, "n": a.n,
           "max_batch": a.max_batch, "inputs": a.inputs, "cores": os.cpu_count()}
    batch_s, summary, best, rates = [], None, None, []
    for k in range(a.repeat):
        out = os.path.join(out_root, f"out{k}")
        args = [grape, "batch", *common, "--requests", req, "--output", out, "--max-batch", str(a.max_batch),
                "--json", "--quiet"]
        if a.threads:
            args += ["--threads", a.threads]
        if a.outputs:
            args += ["--outputs", a.outputs]
        if a.devices:
            args += ["--devices", a.devices]
        args += a.batch_args.split()
        t0 = time.perf_counter()
        p = subprocess.run(args, check=True, capture_output=True, text=True)
        batch_s.append(time.perf_counter() - t0)
        s = json.loads(p.stdout)
        rates.append(s["requests_per_s"])
        # The best run by its processing rate (the figure compared with the bench).
        # Only its outputs are kept (for the check below; /dev/shm is small).
        if summary is None or s["requests_per_s"] > summary["requests_per_s"]:
            if best:
                shutil.rmtree(best, ignore_errors=True)
            summary, best = s, out
        else:
            shutil.rmtree(out, ignore_errors=True)
    res["batch_s"] = min(batch_s)
    res["batch_summary"] = summary
    res["batch_processing_rates"] = rates

    stacked_s = min(timed([grape, "run", *common, "--input", f"x={stacked}", "--output", os.path.join(tmp, "st")])
                    for _ in range(a.repeat))
    res["stacked_run_s"] = stacked_s

    # The batch's results equal the stacked run's rows (a sample of 2,000 of them for large runs).
    want = np.load(os.path.join(tmp, "st", "out0.npy"))
    check = set(range(a.n)) if a.n <= 20000 else set(np.random.default_rng(1).choice(a.n, 2000, replace=False))
    same = True
    files = {}  # npy-rows files hold many requests' rows: mapped once
    with open(os.path.join(best, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            i = int(r["id"][1:])
            if i not in check:
                continue
            v = r["outputs"]["out0"]
            if isinstance(v, dict):
                path = os.path.join(best, v["npy"])
                if path not in files:
                    files[path] = np.load(path, mmap_mode="r")
                got = files[path][v["rows"][0]:v["rows"][1]] if "rows" in v else files[path]
            else:
                got = np.array(v, want.dtype)
            same = same and got.shape == (1,) + want.shape[1:] and np.array_equal(got[0], want[i])
    res["identical_to_stacked"] = bool(same)

    # The GPU target's reference: the same rows as full batches of --max-batch rows in `grape bench`
    # (the compute alone: no process start, no reading or writing).
    full = os.path.join(tmp, "x_full.npy")
    np.save(full, xs[:a.max_batch])
    p = subprocess.run([grape, "bench", *common, "--input", f"x={full}", "--iters", "50", "--warmup", "5", "--json"],
                       check=True, capture_output=True, text=True)
    bench = json.loads(p.stdout)
    res["bench_median_ms"] = bench["median_ms"]
    res["bench_rows_per_s"] = a.max_batch / (bench["median_ms"] / 1000)

    if a.runs:
        t0 = time.perf_counter()
        for _ in range(a.runs):
            subprocess.run([grape, "run", *common, "--input", f"x={one}", "--output", os.path.join(tmp, "one")],
                           check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        per_run = (time.perf_counter() - t0) / a.runs
        res["run_per_invocation_s"] = per_run
        res["runs_measured"] = a.runs
        res["runs_scaled_s"] = per_run * a.n
        res["speedup_vs_runs"] = per_run * a.n / res["batch_s"]
    res["batch_over_stacked"] = res["batch_s"] / stacked_s
    res["requests_per_s"] = a.n / res["batch_s"]
    # The GPU target is about throughput: requests/s while requests are processed (the summary's
    # seconds), not counting the start (program, weights, kernels), as grape bench does not.
    res["processing_requests_per_s"] = summary["requests_per_s"]
    res["startup_s"] = summary["startup_seconds"]
    out_cols = int(defs.get("C", D)) if a.model == "mlp" else D
    res["output_mb_per_s"] = summary["requests_per_s"] * out_cols * 2 / 1e6
    res["batch_over_bench_throughput"] = summary["requests_per_s"] / res["bench_rows_per_s"]
    if a.out_root:
        shutil.rmtree(out_root, ignore_errors=True)
    print(json.dumps(res, indent=2))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
