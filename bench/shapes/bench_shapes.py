#!/usr/bin/env python3
"""bench/shapes (issue 8, item 6): GPT-2 small *prefill* (fp16, batch 1) at every prompt length
1..1024, Grape against PyTorch with one CUDA graph per length.

Why: a CUDA graph is built for fixed shapes, so a PyTorch server that wants graph-speed prefill at
every prompt length holds one graph (and its memory pool) per length. Grape buckets the length
dimension: a few graphs cover every length. The issue's three targets, evaluated here:
  1. at most 11 graphs for all lengths 1..1024;
  2. Grape's total graph memory <= 1% of PyTorch's one-graph-per-length memory (extrapolated to
     all 1024 lengths from the sampled ones: bench/shapes/peer_torch.py);
  3. every sampled length's latency with Grape's bucketed graphs within 10% of a graph built for
     exactly that length (the worst length and ratio are reported).

    python3 bench/shapes/bench_shapes.py --grape build/grape --out DIR [--lengths 1,2,4,...]

Steps, in this order:
  a. inputs: the seeded random GPT-2 small weights of bench/decode/make_inputs.py
     (DIR/gpt2.safetensors) and ids int32 [1, 1024], seeded, in [0, 50257) (DIR/ids.npy);
  b. correctness, before anything is timed: `grape run --entry prefill` at each sampled length
     (ids[:, :S]) against the PyTorch peer's logits (peer_torch.py --logits-only), relative L2 error
     <= 1e-2 (fp16); a mismatch stops the run (exit 1) unless --keep-going;
  c. Grape, bucketed: ONE `grape bench ... --executor graph --shapes S=LO:HI[:STEP]` over every
     length (its JSON gives each length's latency, the graphs held and their bytes);
  d. Grape, exact: `grape bench ... --shapes S=s:s --buckets S=exact` per sampled length: the
     latency of a graph built for exactly that length;
  e. the peer (peer_torch.py): per sampled length eager and CUDA-graph latency, capture time and
     graph memory, extrapolated to every length of the range; its graph-replay logits are
     compared with Grape's too;
  f. DIR/summary.json, the targets, and a markdown table for bench/RESULTS.md.

The Grape command lines are built in grape_* functions below, so they are easy to adjust while
`--shapes`/`--buckets` settle. --sweep per-length and --exact-via per-length replace the `--shapes`
calls with one plain `grape bench` per length on ids[:, :S] (what today's binary supports: a graph
built for exactly that length; the "bucketed" figures are then not bucketed, and the summary
says so).

gpt2.grp's default KV cache has T=256 positions, which prefill cannot exceed ("slice out of
range"), so Grape runs with -D T=1024 and the peer's cache has 1024 positions too.

Local smoke test with no GPU (tiny model on the CPU backend and CPU PyTorch):
    python3 bench/shapes/bench_shapes.py --grape build-gpu/grape --out /tmp/shapes --tiny \\
        --backend cpu --peer-device cpu --sweep per-length --exact-via per-length
"""
import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GPT2 = os.path.join(REPO, "examples", "gpt2.grp")
PEER = os.path.join(HERE, "peer_torch.py")

FULL = {"L": 12, "E": 768, "NH": 12, "V": 50257, "P": 1024, "T": 1024}
TINY = {"L": 2, "E": 64, "NH": 4, "V": 128, "P": 64, "T": 64}
TARGET_GRAPHS, TARGET_MEMORY, TARGET_LATENCY = 11, 0.01, 1.10


def log(*x):
    print(*x, file=sys.stderr, flush=True)


def sh(cmd, logfile, parse_json=False):
    """Runs cmd (list), keeps its stderr (and stdout when not JSON) in logfile; returns stdout,
    parsed when parse_json. A failure prints the log's tail and stops the benchmark."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(logfile, "w") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        f.write(p.stderr)
        if not parse_json:
            f.write(p.stdout)
    if p.returncode != 0:
        log(f"failed (exit {p.returncode}) after {time.perf_counter() - t0:.1f} s:\n" + (p.stderr + p.stdout)[-4000:])
        sys.exit(2)
    if parse_json:
        out = p.stdout.strip()
        return json.loads(out[out.index("{"):])  # anything printed before the object is skipped
    return p.stdout


def default_lengths(P):
    """Powers of two up to P plus 3P/8, 5P/8, 6P/8, 7P/8 (the peer's default too)."""
    s = {2 ** i for i in range(P.bit_length()) if 2 ** i <= P} | {P * j // 8 for j in (3, 5, 6, 7)}
    return sorted(x for x in s if x >= 1)


# ---- inputs -----------------------------------------------------------------------------------

def write_inputs(d, cfg, tiny):
    """gpt2.safetensors from bench/decode/make_inputs.py (its sizes patched for --tiny; it also
    writes tok.npy and p.npy, unused here) and ids.npy int32 [1, P]."""
    path = os.path.join(REPO, "bench", "decode", "make_inputs.py")
    spec = importlib.util.spec_from_file_location("make_inputs", path)
    mi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mi)
    if tiny:
        mi.L, mi.E, mi.V, mi.P = cfg["L"], cfg["E"], cfg["V"], cfg["P"]
    assert (mi.L, mi.E, mi.V, mi.P) == (cfg["L"], cfg["E"], cfg["V"], cfg["P"]), "make_inputs.py sizes changed"
    mi.main(d)
    ids = np.random.default_rng(1).integers(0, cfg["V"], (1, cfg["P"])).astype(np.int32)
    np.save(os.path.join(d, "ids.npy"), ids)
    return os.path.join(d, "gpt2.safetensors"), os.path.join(d, "ids.npy")


def ids_for(d, ids_path, S):
    """ids[:, :S] as its own file (for `grape run` and the per-length fallbacks)."""
    p = os.path.join(d, "ids", f"ids_{S}.npy")
    if not os.path.exists(p):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        np.save(p, np.ascontiguousarray(np.load(ids_path)[:, :S]))
    return p


# ---- the Grape command lines (adjust here) ----------------------------------------------------

def grape_model(a, ids):
    defs = [x for k, v in a.cfg.items() if a.tiny or k == "T" for x in ("-D", f"{k}={v}")]
    return [GPT2, "--entry", "prefill", *defs, "--weights", a.weights, "--input", f"ids={ids}",
            "--backend", a.backend, *a.extra]


def grape_run(a, ids, out_dir):
    ex = ["--executor", a.run_executor] if a.run_executor else []
    return [a.grape, "run", *grape_model(a, ids), *ex, "--output", out_dir]


def grape_bench(a, ids, shapes=None, buckets=None):
    cmd = [a.grape, "bench", *grape_model(a, ids)] + (["--executor", a.executor] if a.executor else [])
    if shapes:
        cmd += ["--shapes", shapes]
    if buckets:
        cmd += ["--buckets", buckets]
    return cmd + ["--warmup", str(a.warmup), "--iters", str(a.iters), "--json"]


def shape_row(S, j):
    """A plain `grape bench --json` object as one entry of --shapes' "shapes" list."""
    return {"value": S, "first_ms": j.get("first_ms"), "median_ms": j["median_ms"], "min_ms": j["min_ms"],
            "executor": j.get("executor"), "graphs": j.get("graphs"), "graph_bytes": j.get("graph_bytes"),
            "device_bytes": j.get("device_bytes"), "compile_ms": j.get("compile_ms")}


def run_sweep(a, d):
    """Grape over every length of the range, bucketed: {"shapes": [...], "graphs", "graph_bytes", ...}."""
    lo, hi, step = a.lo, a.hi, a.step
    if a.sweep == "shapes":
        spec = f"S={lo}:{hi}" + (f":{step}" if step != 1 else "")
        return sh(grape_bench(a, a.ids, shapes=spec, buckets=a.buckets), os.path.join(d, "logs", "grape_sweep.txt"),
                  parse_json=True)
    rows = [shape_row(S, sh(grape_bench(a, ids_for(d, a.ids, S)), os.path.join(d, "logs", f"grape_sweep_{S}.txt"),
                            parse_json=True)) for S in range(lo, hi + 1, step)]
    return {"shapes": rows, "graphs": sum(r["graphs"] or 0 for r in rows),
            "graph_bytes": sum(r["graph_bytes"] or 0 for r in rows), "mode": "per-length (not bucketed)"}


def run_exact(a, d, S):
    """Grape with a graph built for exactly length S: one shapes row."""
    if a.exact_via == "shapes":
        j = sh(grape_bench(a, a.ids, shapes=f"S={S}:{S}", buckets="S=exact"),
               os.path.join(d, "logs", f"grape_exact_{S}.txt"), parse_json=True)
        return next(r for r in j["shapes"] if r["value"] == S)
    return shape_row(S, sh(grape_bench(a, ids_for(d, a.ids, S)), os.path.join(d, "logs", f"grape_exact_{S}.txt"),
                           parse_json=True))


# ---- the peer -----------------------------------------------------------------------------------

def peer_cmd(a, out_json, logits_dir, logits_only):
    cmd = [sys.executable, PEER, a.weights, a.ids, out_json, "--lengths", ",".join(map(str, a.lengths)),
           "--range", f"{a.lo}:{a.hi}", "--iters", str(a.peer_iters), "--warmup", str(a.peer_warmup),
           "--logits-dir", logits_dir, "--device", a.peer_device, "--T", str(a.cfg["T"]), "--nh", str(a.cfg["NH"])]
    if a.shared_pool:
        cmd.append("--shared-pool")
    return cmd + (["--logits-only"] if logits_only else [])


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def compare(a, d, logits_dir):
    """Grape's `grape run` logits against the peer's, per sampled length: {S: rel L2}."""
    out = {}
    for S in a.lengths:
        g = np.load(os.path.join(d, "grape_run", str(S), "out0.npy"))
        t = np.load(os.path.join(logits_dir, f"logits_{S}.npy"))
        if g.shape != t.shape:
            sys.exit(f"S={S}: grape logits {g.shape} vs torch {t.shape}")
        if not np.isfinite(g).all():
            out[S] = float("inf")
            continue
        out[S] = rel_l2(g, t)
    return out


# ---- main -----------------------------------------------------------------------------------------

def fmt_bytes(b):
    return "n/a" if b is None else f"{b / 2**20:,.1f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grape", required=True, help="the grape binary")
    ap.add_argument("--out", required=True, help="output folder (inputs, logs, JSON)")
    ap.add_argument("--lengths", help="sampled lengths (correctness, exact graphs, peer); default powers of two "
                                      "up to P and 3P/8, 5P/8, 6P/8, 7P/8")
    ap.add_argument("--range", default=None, help="LO:HI[:STEP] of the bucketed sweep and of the peer's "
                                                  "extrapolation (default 1:P, P=1024)")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--executor", default=None, help="grape bench --executor (default: graph on cuda, none on cpu)")
    ap.add_argument("--buckets", default=None, help="grape bench --buckets for the sweep (default: Grape's own)")
    ap.add_argument("--run-executor", default=None, help="grape run --executor of the correctness runs "
                                                         "(default: graph on cuda, none on cpu)")
    ap.add_argument("--warmup", type=int, default=3, help="grape bench --warmup")
    ap.add_argument("--iters", type=int, default=20, help="grape bench --iters")
    ap.add_argument("--peer-iters", type=int, default=50)
    ap.add_argument("--peer-warmup", type=int, default=5)
    ap.add_argument("--peer-device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--shared-pool", action="store_true", help="the peer captures every length into one pool")
    ap.add_argument("--sweep", default="shapes", choices=["shapes", "per-length"])
    ap.add_argument("--exact-via", default="shapes", choices=["shapes", "per-length"])
    ap.add_argument("--grape-args", default="", help="extra arguments for every grape call (one string)")
    ap.add_argument("--tiny", action="store_true", help="tiny GPT-2 (L=2 E=64 NH=4 V=128 P=T=64): smoke tests")
    ap.add_argument("--tol", type=float, default=1e-2, help="relative L2 bound of the logits (fp16)")
    ap.add_argument("--keep-going", action="store_true", help="time even when the logits differ")
    ap.add_argument("--skip-peer", action="store_true", help="Grape only (no timing of the peer)")
    a = ap.parse_args()

    a.cfg = dict(TINY if a.tiny else FULL)
    P = a.cfg["P"]
    a.grape = os.path.abspath(a.grape)
    a.extra = shlex.split(a.grape_args)
    if a.executor is None:  # the CPU backend takes no --executor (only its reference executor)
        a.executor = "graph" if a.backend == "cuda" else None
    if a.run_executor is None:
        a.run_executor = "graph" if a.backend == "cuda" else None
    rng = [int(x) for x in (a.range or f"1:{P}").split(":")]
    a.lo, a.hi, a.step = rng[0], rng[1], (rng[2] if len(rng) > 2 else 1)
    a.lengths = sorted({int(x) for x in a.lengths.split(",")}) if a.lengths else default_lengths(min(P, a.hi))
    if a.lengths[-1] > min(P, a.cfg["T"]) or a.lengths[0] < 1:
        sys.exit(f"lengths must lie in 1..{min(P, a.cfg['T'])}")
    d = os.path.abspath(a.out)
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    summary = {"config": a.cfg, "backend": a.backend, "range": [a.lo, a.hi, a.step], "lengths": a.lengths,
               "sweep_mode": a.sweep, "exact_via": a.exact_via}

    # a. inputs
    a.weights, a.ids = write_inputs(d, a.cfg, a.tiny)

    # b. correctness before timing
    for S in a.lengths:
        sh(grape_run(a, ids_for(d, a.ids, S), os.path.join(d, "grape_run", str(S))),
           os.path.join(d, "logs", f"grape_run_{S}.txt"))
    sh(peer_cmd(a, os.path.join(d, "torch_logits.json"), os.path.join(d, "torch_logits"), True),
       os.path.join(d, "logs", "torch_logits.txt"))
    errs = compare(a, d, os.path.join(d, "torch_logits"))
    worst = max(errs, key=errs.get)
    summary["check"] = {"rel_l2": {str(k): v for k, v in errs.items()}, "worst_S": worst, "worst_rel_l2": errs[worst],
                        "tol": a.tol, "passed": errs[worst] <= a.tol}
    log(f"correctness: worst rel. L2 {errs[worst]:.2e} at S={worst} (tol {a.tol:g})")
    if errs[worst] > a.tol and not a.keep_going:
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        log("logits differ: nothing timed (--keep-going to time anyway)")
        return 1

    # c. Grape, bucketed sweep over every length
    sweep = run_sweep(a, d)
    with open(os.path.join(d, "grape_sweep.json"), "w") as f:
        json.dump(sweep, f, indent=1)
    by_s = {r["value"]: r for r in sweep["shapes"]}

    # d. Grape, one exact graph per sampled length
    exact = {S: run_exact(a, d, S) for S in a.lengths}
    with open(os.path.join(d, "grape_exact.json"), "w") as f:
        json.dump({str(k): v for k, v in exact.items()}, f, indent=1)

    # e. the peer
    peer = None
    if not a.skip_peer:
        peer_json = os.path.join(d, "torch_shapes.json")
        sh(peer_cmd(a, peer_json, os.path.join(d, "torch_logits_graph"), False),
           os.path.join(d, "logs", "torch_shapes.txt"))
        with open(peer_json) as f:
            peer = json.load(f)
        g_errs = compare(a, d, os.path.join(d, "torch_logits_graph"))
        summary["check"]["graph_replay_worst_rel_l2"] = max(g_errs.values())
    prow = {r["S"]: r for r in peer["lengths"]} if peer else {}

    # f. targets
    graphs = sweep.get("graphs")
    shape_bytes = [r.get("graph_bytes") or 0 for r in sweep["shapes"]]
    grape_bytes = max([sweep.get("graph_bytes") or 0] + shape_bytes)
    ex = (peer or {}).get("extrapolated_all_lengths")
    torch_bytes = ex["bytes_reserved"] if ex else None
    torch_dev = ex["bytes_device"] if ex else None
    covers = a.lo <= 1 and a.hi >= 1024 and a.step == 1
    lat = []
    for S in a.lengths:
        b, e = by_s.get(S), exact[S]
        if b:
            lat.append({"S": S, "bucketed_ms": b["median_ms"], "exact_ms": e["median_ms"],
                        "ratio": b["median_ms"] / e["median_ms"]})
    wl = max(lat, key=lambda r: r["ratio"]) if lat else None
    summary["grape"] = {"graphs": graphs, "graph_bytes": grape_bytes, "graph_build_ms": sweep.get("graph_build_ms"),
                        "device_bytes": sweep.get("device_bytes"), "latency": lat}
    if peer:
        summary["torch"] = {"device": peer["device"], "torch": peer["torch"], "pool": peer["pool"],
                            "extrapolated_all_lengths": ex, "method": peer.get("method"), "prime": peer.get("prime")}
    summary["targets"] = {
        "graphs": {"value": graphs, "target": f"<= {TARGET_GRAPHS} for lengths 1..1024", "covers_1_1024": covers,
                   "passed": graphs is not None and graphs <= TARGET_GRAPHS and covers},
        "memory": {"grape_graph_bytes": grape_bytes, "torch_extrapolated_bytes_reserved": torch_bytes,
                   "torch_extrapolated_bytes_device": torch_dev,
                   "ratio": grape_bytes / torch_bytes if torch_bytes else None,
                   "ratio_device": grape_bytes / torch_dev if torch_dev else None,
                   "target": f"<= {TARGET_MEMORY:.0%} of PyTorch's",
                   "passed": bool(torch_bytes) and bool(graphs) and grape_bytes <= TARGET_MEMORY * torch_bytes},
        "latency": {"worst_S": wl and wl["S"], "worst_ratio": wl and wl["ratio"],
                    "target": f"bucketed <= {TARGET_LATENCY:.2f} x exact at every sampled length",
                    "passed": bool(wl) and wl["ratio"] <= TARGET_LATENCY},
    }
    if a.sweep != "shapes":
        summary["note"] = "--sweep per-length: one graph per length, not Grape's buckets: the targets mean nothing"
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    # the table for bench/RESULTS.md
    dev = peer["device"] if peer else a.backend
    ms = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    rng_s = f"{a.lo}:{a.hi}" + (f":{a.step}" if a.step != 1 else "")
    how = f"`--shapes S={rng_s}`" if a.sweep == "shapes" else f"one graph per length of {rng_s} (not bucketed)"
    model = "tiny GPT-2" if a.tiny else "GPT-2 small"
    lines = [f"{model} prefill, fp16, batch 1, T={a.cfg['T']}, on {dev}: Grape {how} "
             f"vs one PyTorch CUDA graph per length", "",
             "| S | Grape bucketed ms | Grape exact ms | PyTorch graph ms | PyTorch eager ms |",
             "|---:|---:|---:|---:|---:|"]
    for S in a.lengths:
        b, p = by_s.get(S), prow.get(S, {})
        lines.append(f"| {S} | {ms(b and b['median_ms'])} | {ms(exact[S]['median_ms'])} | "
                     f"{ms(p.get('graph_ms'))} | {ms(p.get('eager_ms'))} |")
    t = summary["targets"]
    lines += ["",
              f"- graphs for lengths {a.lo}..{a.hi}: Grape {graphs}, PyTorch {a.hi - a.lo + 1} "
              f"(target <= {TARGET_GRAPHS}: {'met' if t['graphs']['passed'] else 'not met'})",
              f"- graph memory: Grape {fmt_bytes(grape_bytes)}, PyTorch {fmt_bytes(torch_bytes)} reserved "
              f"({fmt_bytes(torch_dev)} device) extrapolated, piecewise-linear from {len(prow)} lengths; ratio "
              + (f"{t['memory']['ratio']:.2%}" if t['memory']['ratio'] is not None else "n/a")
              + f" (target <= 1%: {'met' if t['memory']['passed'] else 'not met'})"]
    if ex:
        build = sweep.get("graph_build_ms")
        lines.append(f"- PyTorch capture time for every length: {ex['capture_s']:.1f} s (extrapolated)"
                     + (f"; Grape graph build: {build:.1f} ms" if build is not None else ""))
    if wl:
        lines.append(f"- worst bucketed/exact latency: {wl['ratio']:.3f} at S={wl['S']} "
                     f"(target <= {TARGET_LATENCY:.2f}: {'met' if t['latency']['passed'] else 'not met'})")
    lines.append(f"- logits vs PyTorch: worst rel. L2 {errs[worst]:.2e} (S={worst})")
    table = "\n".join(lines)
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write(table + "\n")
    print(json.dumps(summary["targets"], indent=1))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
