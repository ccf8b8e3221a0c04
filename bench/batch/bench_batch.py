#!/usr/bin/env python3
"""The throughput targets of `grape batch` (issue 9): N single-row MLP requests through
`grape batch --max-batch 64`, against the same rows as N separate `grape run` invocations, and
against one `grape run` on all the rows stacked into one batch.

    python3 bench/batch/bench_batch.py --grape build-batch/grape                  # CPU target
    python3 bench/batch/bench_batch.py --grape build/grape --backend cuda --inputs npy-rows \\
        --defines D=4096,H=16384,C=4096 --n 100000 --max-batch 256 --runs 0       # GPU target
    ... --devices all                                                             # every GPU

`grape run` per request is timed on --runs invocations (default 500) and scaled to N: a process
start, model load and session per request is the same cost every time. The GPU target compares
requests/s with the rows/s of `grape bench` on full batches of --max-batch rows
(batch_over_bench_throughput, target >= 0.8). The results of the batch
are checked against the stacked run (the same bits on the CPU backend). Prints one JSON object;
--json-out writes it too.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(REPO, "examples", "mlp.grp")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grape", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--defines", default="D=32,H=64,C=10", help="the MLP's sizes (default: tiny)")
    ap.add_argument("--n", type=int, default=10000, help="requests")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=500, help="grape run invocations timed (0: skip)")
    ap.add_argument("--devices", default=None, help="passed to grape batch (e.g. all)")
    ap.add_argument("--threads", default=None, help="sessions per device (default: grape's auto)")
    ap.add_argument("--repeat", type=int, default=3, help="batch and stacked runs: best of this many")
    ap.add_argument("--inputs", choices=["json", "npy-rows"], default="json",
                    help="requests carry their row as JSON numbers, or as rows of one shared .npy file")
    ap.add_argument("--outputs", default=None, help="passed to grape batch (auto, inline, npy)")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    grape = os.path.abspath(a.grape)
    defs = dict(kv.split("=") for kv in a.defines.split(","))
    dargs = [x for k, v in defs.items() for x in ("-D", f"{k}={v}")]
    common = [MLP, "--entry", "main", *dargs, "--random-weights", "1", "--backend", a.backend]
    D = int(defs["D"])

    tmp = tempfile.mkdtemp(prefix="grape_bench_batch_")
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

    res = {"backend": a.backend, "defines": a.defines, "n": a.n, "max_batch": a.max_batch, "inputs": a.inputs,
           "cores": os.cpu_count()}
    batch_s, summary = [], None
    for k in range(a.repeat):
        out = os.path.join(tmp, f"out{k}")
        args = [grape, "batch", *common, "--requests", req, "--output", out, "--max-batch", str(a.max_batch),
                "--json", "--quiet"]
        if a.threads:
            args += ["--threads", a.threads]
        if a.outputs:
            args += ["--outputs", a.outputs]
        if a.devices:
            args += ["--devices", a.devices]
        t0 = time.perf_counter()
        p = subprocess.run(args, check=True, capture_output=True, text=True)
        batch_s.append(time.perf_counter() - t0)
        summary = json.loads(p.stdout)
    res["batch_s"] = min(batch_s)
    res["batch_summary"] = summary

    stacked_s = min(timed([grape, "run", *common, "--input", f"x={stacked}", "--output", os.path.join(tmp, "st")])
                    for _ in range(a.repeat))
    res["stacked_run_s"] = stacked_s

    # The batch's results equal the stacked run's rows (a sample of 2,000 of them for large runs).
    want = np.load(os.path.join(tmp, "st", "out0.npy"))
    check = set(range(a.n)) if a.n <= 20000 else set(np.random.default_rng(1).choice(a.n, 2000, replace=False))
    same = True
    with open(os.path.join(tmp, "out0", "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            i = int(r["id"][1:])
            if i not in check:
                continue
            v = r["outputs"]["out0"]
            got = np.load(os.path.join(tmp, "out0", v["npy"])) if isinstance(v, dict) else np.array(v, want.dtype)
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
    res["batch_over_bench_throughput"] = summary["requests_per_s"] / res["bench_rows_per_s"]
    print(json.dumps(res, indent=2))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
