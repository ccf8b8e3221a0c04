#!/usr/bin/env python3
"""compute-sanitizer over every example (tiny sizes) and every control-flow case, on every CUDA
executor of the CLI. Called by `scripts/gpu-check.sh sanitize`; see docs/gpu-testing.md.

usage: gpu_sanitize.py --grape GRAPE --out DIR [--tools memcheck,racecheck,initcheck]
                       [--executors eager,graph] [--jobs N] [--filter SUBSTRING]
                       [--sanitizer PATH] [--backend cuda|cpu] [--list]

Programs: examples/mlp.grp, gpt2.grp and bert.grp at the sizes of the GPU tests (their entries of
examples/README.md), every tests/difftest/cases/*.grp and every tests/golden/ir/*.grp. Inputs are
generated from each entry's signature (plain Python, no numpy): floats from a seeded generator,
integer tensors in [0, 2), and for scalar int/bool/float parameters several values in turn
(a case's `# difftest-values:` list where it has one), so that branches are taken and not taken
and loops run zero and several times; each value set is one `grape run`.

Before the sanitizer runs, each (program, entry, executor) runs once without it, which fills the
kernel cache ($GRAPE_CACHE_DIR) so that NVRTC does not run under the sanitizer, and shows whether
the program runs at all. A sanitizer run fails when grape or the tool exits non-zero, when the
tool prints no summary, or when any number in a summary line is not zero ("ERROR SUMMARY: 0
errors", "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"). Each failure line names the
first report and grape's own `error:` line, if any (under memcheck grape's exit status is replaced
by the tool's). Every run's complete
output is kept as DIR/<tool>/<executor>/<program>.<entry>.<variant>.log; DIR/summary.txt lists
the failures, rewritten after every run (headed INCOMPLETE until the sweep ends, so a sweep stopped
by a time limit still shows what ran). Exit status: 0 clean, 1 any failure, 2 usage.

--backend cpu (with no sanitizer: --tools none) checks the generated inputs and commands on a
machine without a GPU.
"""
import argparse
import concurrent.futures
import glob
import itertools
import os
import random
import re
import shlex
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_TIMEOUT_S = 600

GPT2_TINY = ["-D", "L=2", "-D", "E=64", "-D", "NH=4", "-D", "V=128", "-D", "P=64", "-D", "T=64", "-D", "N=8"]
BERT_TINY = ["-D", "L=2", "-D", "H=64", "-D", "NH=4", "-D", "I=256", "-D", "V=128", "-D", "P=64"]
EXAMPLES = [
    ("mlp", "examples/mlp.grp", ["-D", "D=32", "-D", "H=64"], ["main"]),
    ("gpt2", "examples/gpt2.grp", GPT2_TINY,
     ["forward", "prefill", "decode", "decode_step", "generate", "beam_search"]),
    ("bert", "examples/bert.grp", BERT_TINY, ["forward", "forward_typed"]),
]
# Sizes of the symbolic dims of entry parameters (batch 2, everything else 4).
SYMBOL_SIZE = {"B": 2}
DEFAULT_SYMBOL_SIZE = 4
# Values a scalar parameter takes in turn, by dtype (a case's difftest-values list wins).
SCALAR_VALUES = {"bool": [0, 1], "i32": [0, 3], "i64": [0, 3], "f32": [-1.0, 4.0], "f16": [-1.0, 4.0],
                 "bf16": [-1.0, 4.0]}
MAX_VARIANTS = 4
# Executors whose sanitized runs must not share the GPU with another sanitized process (main()).
SERIAL_EXECUTORS = {"graph"}
NPY_DESCR = {"f32": ("<f4", "f"), "f16": ("<f2", "e"), "i32": ("<i4", "i"), "i64": ("<i8", "q"),
             "bool": ("|b1", "?")}


class UsageError(Exception):
    pass


# ------------------------------------------------------------------ programs and their inputs

def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def consts_of(text, defines):
    """Integer consts of a program (`const N = 4`), with -D overrides; others are skipped."""
    out = {}
    for m in re.finditer(r"^\s*const\s+([A-Za-z_]\w*)\s*=\s*(-?\d+)\s*(#.*)?$", text, re.M):
        out[m.group(1)] = int(m.group(2))
    for i in range(0, len(defines) - 1):
        if defines[i] == "-D":
            k, _, v = defines[i + 1].partition("=")
            out[k] = int(v)
    return out


def split_top(s):
    """Splits on commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "[(" and 1 or 0
        depth -= ch in "])" and 1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def signature(text, entry, consts):
    """[(name, dtype, shape)] of `fn entry(...)`, symbols sized by SYMBOL_SIZE."""
    m = re.search(r"\bfn\s+" + re.escape(entry) + r"\s*\((.*?)\)\s*->", text, re.S)
    if not m:
        raise UsageError(f"no entry '{entry}'")
    params = []
    for p in split_top(re.sub(r"#[^\n]*", "", m.group(1))):
        pm = re.fullmatch(r"([A-Za-z_]\w*)\s*:\s*(\w+)\s*\[(.*)\]", p, re.S)
        if not pm:
            raise UsageError(f"cannot read parameter '{p}' of '{entry}'")
        dims = []
        for d in split_top(pm.group(3)):
            if re.fullmatch(r"\d+", d):
                dims.append(int(d))
            elif d in consts:
                dims.append(consts[d])
            elif re.fullmatch(r"[A-Za-z_]\w*", d):
                dims.append(SYMBOL_SIZE.get(d, DEFAULT_SYMBOL_SIZE))
            else:
                raise UsageError(f"cannot size dimension '{d}' of parameter '{pm.group(1)}' of '{entry}'")
        if pm.group(2) not in NPY_DESCR:
            raise UsageError(f"no input generator for dtype {pm.group(2)} (parameter '{pm.group(1)}')")
        params.append((pm.group(1), pm.group(2), dims))
    return params


def difftest_values(text):
    out = {}
    for m in re.finditer(r"#\s*difftest-values:\s*(\w+)\s*=\s*([-\d.,\s]+)", text):
        out[m.group(1)] = [float(v) if "." in v else int(v) for v in m.group(2).replace(" ", "").split(",") if v]
    return out


def variants(params, listed):
    """One dict {scalar param: value} per run."""
    scalars = [(n, listed.get(n, SCALAR_VALUES[t])) for n, t, shape in params if not shape]
    cap = max([MAX_VARIANTS] + [len(v) for v in listed.values()])  # a listed case runs every value
    combos = list(itertools.product(*[vals for _, vals in scalars]))[:cap]
    return [dict(zip([n for n, _ in scalars], c)) for c in combos]


def write_npy(path, dtype, shape, values):
    descr, fmt = NPY_DESCR[dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<" + fmt * len(values), *values))


def make_inputs(directory, params, scalar_values, seed):
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    args = []
    for name, dtype, shape in params:
        n = 1
        for d in shape:
            n *= d
        if not shape:
            vals = [scalar_values[name]]
        elif dtype == "bool":
            vals = [rng.random() < 0.7 for _ in range(n)]
        elif dtype in ("i32", "i64"):
            vals = [rng.randrange(2) for _ in range(n)]
        else:
            vals = [round(rng.uniform(-2, 2), 3) for _ in range(n)]
        if dtype == "bool":
            vals = [bool(v) for v in vals]
        elif dtype in ("i32", "i64"):
            vals = [int(v) for v in vals]
        else:
            vals = [float(v) for v in vals]
        path = os.path.join(directory, name + ".npy")
        write_npy(path, dtype, shape, vals)
        args += ["--input", f"{name}={path}"]
    return args


def programs(name_filter):
    """[(label, file, extra args, entry, text)] of every program run."""
    out = []
    for label, path, defines, entries in EXAMPLES:
        for e in entries:
            out.append((label, path, defines, e))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/difftest/cases/*.grp"))):
        rel = os.path.relpath(path, ROOT)
        defines = []
        for m in re.finditer(r"#\s*difftest-define:\s*(\w+=-?\d+)", read(rel)):
            defines += ["-D", m.group(1)]
        out.append(("difftest/" + os.path.basename(path)[:-4], rel, defines, "main"))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/golden/ir/*.grp"))):
        rel = os.path.relpath(path, ROOT)
        first = read(rel).split("\n", 1)[0]
        args = shlex.split(first[len("# args:"):]) if first.startswith("# args:") else []
        entry, defines, i = "main", [], 0
        while i < len(args):
            if args[i] == "--entry":
                entry = args[i + 1]
                i += 1
            elif args[i] == "-D":
                defines += ["-D", args[i + 1]]
                i += 1
            i += 1
        out.append(("golden/" + os.path.basename(path)[:-4], rel, defines, entry))
    return [p for p in out if not name_filter or name_filter in f"{p[0]}.{p[3]}"]


def jobs_of(progs, inputs_dir):
    """[(label, argv without executor/output, variant tag)] for every program, entry and value set."""
    jobs = []
    for label, path, defines, entry in progs:
        text = read(path)
        params = signature(text, entry, consts_of(text, defines))
        base = [path, "--entry", entry] + defines
        if re.search(r"^\s*weights\b", text, re.M):
            base += ["--random-weights", "1"]
        for k, values in enumerate(variants(params, difftest_values(text))):
            tag = "-".join(f"{n}={v}" for n, v in values.items()) or "default"
            d = os.path.join(inputs_dir, label.replace("/", "_"), entry, tag)
            jobs.append((f"{label}.{entry}", base + make_inputs(d, params, values, seed=k + 1), tag))
    return jobs


# ------------------------------------------------------------------ running

def executors_of(grape):
    """The executors `grape run --help` lists (--executor a|b|auto), without auto."""
    p = subprocess.run([grape, "run", "--help"], capture_output=True, text=True)
    m = re.search(r"--executor\s+([\w|]+)", p.stdout + p.stderr)
    if not m:
        return ["default"]  # a CLI without --executor: its one CUDA executor
    return [e for e in m.group(1).split("|") if e != "auto"]


def summary_problem(log):
    """None when the sanitizer's summary lines are all zero, else what is wrong."""
    lines = [l for l in log.splitlines() if "SUMMARY:" in l]
    if not lines:
        return "the sanitizer printed no summary"
    for l in lines:
        if any(int(n) != 0 for n in re.findall(r"\d+", l.split("SUMMARY:", 1)[1])):
            return l.strip("= ").strip()
    return None


def run_one(cmd, log_path, sanitized):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
        out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode("utf-8", "replace") + f"\nTIMEOUT after {RUN_TIMEOUT_S}s\n", -1
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as f:
        f.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n" + out)
    problems = []
    if sanitized:
        summary = summary_problem(out)
        if summary:
            problems.append(summary)
            # The first report names the kernel and the access ("Uninitialized __global__ memory
            # read of size 1 bytes ... in grape_kernel ...").
            first = next((l for l in out.splitlines() if l.startswith("========= ") and "SUMMARY" not in l
                          and "COMPUTE-SANITIZER" not in l and l.strip("= ")), None)
            if first:
                problems.append(first.strip("= ").strip())
    # grape's own error (an asynchronous CUDA error, say): under memcheck its exit status is
    # replaced by the tool's, and the leak report that follows it would hide the cause.
    error = next((l for l in out.splitlines() if l.startswith("error:")), None)
    if error:
        problems.append(error.strip())
    if rc != 0:
        problems.append(f"exit status {rc}")
    return "; ".join(problems) or None, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grape", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tools", default="memcheck,racecheck,initcheck")
    ap.add_argument("--executors", default="")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--filter", default="")
    ap.add_argument("--sanitizer", default="compute-sanitizer")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--list", action="store_true", help="print the runs and exit")
    a = ap.parse_args()
    tools = [t for t in a.tools.split(",") if t and t != "none"]
    for t in tools:
        if t not in ("memcheck", "racecheck", "initcheck", "synccheck"):
            print(f"gpu_sanitize: unknown tool '{t}'", file=sys.stderr)
            return 2
    executors = [e for e in a.executors.split(",") if e] or executors_of(a.grape)
    if a.backend == "cpu":
        executors = ["cpu"]
    try:
        jobs = jobs_of(programs(a.filter), os.path.join(a.out, "inputs"))
    except UsageError as e:
        print(f"gpu_sanitize: {e}", file=sys.stderr)
        return 2
    if not jobs:
        print("gpu_sanitize: no program matches the filter", file=sys.stderr)
        return 2

    def grape_cmd(argv, executor, tag_dir):
        cmd = [a.grape, "run"] + argv + ["--backend", a.backend, "--output", tag_dir]
        return cmd + (["--executor", executor] if executor not in ("default", "cpu") else [])

    def tool_cmd(tool):
        # API errors are left out: grape checks every driver call's status itself, and probes
        # (optional features) fail on purpose. Leaks are device allocations left at exit.
        extra = ["--leak-check", "full"] if tool == "memcheck" else []
        if tool == "racecheck":
            # compute-sanitizer 2025.3.1 crashes (SIGSEGV in the tool, 0 hazards) on gpt2
            # generate/beam_search under the graph executor whenever it instruments
            # grape_loop_next, and only then (docs/execution.md). racecheck looks for shared-memory
            # hazards; grape_loop_next is one thread with no shared memory, so leaving it out
            # hides nothing racecheck could find.
            extra = ["--kernel-name-exclude", "kne=grape_loop_next"]
        return [a.sanitizer, "--tool", tool, "--report-api-errors", "no", "--error-exitcode", "86"] + extra

    runs = []  # (tool or "plain", executor, name, tag, cmd)
    plain, seen = [], set()
    for name, argv, tag in jobs:
        # Without a sanitizer (a check of the inputs) every value set runs plainly.
        if not tools or name not in seen:
            seen.add(name)
            plain.append((name, tag, argv))
    for executor in executors:
        for job in plain:
            runs.append(("plain", executor) + job)
    for tool in tools:
        for executor in executors:
            for name, argv, tag in jobs:
                runs.append((tool, executor, name, tag, argv))
    if a.list:
        for tool, executor, name, tag, argv in runs:
            pre = [] if tool == "plain" else tool_cmd(tool)
            print(" ".join(shlex.quote(c) for c in pre + grape_cmd(argv, executor, "OUT")))
        return 0

    failures, counts = [], {}
    t_start = time.time()

    def report(finished):
        lines = [] if finished else [
            f"INCOMPLETE: {sum(counts.values())} of {len(runs)} runs done so far (still running, or stopped)"]
        lines.append(f"{'tool':10} {'executor':8} {'runs':>5} {'failed':>6}")
        for (tool, executor), n in sorted(counts.items()):
            bad = sum(1 for f in failures if f[0] == tool and f[1] == executor)
            lines.append(f"{tool:10} {executor:8} {n:5} {bad:6}")
        lines.append(f"{len(failures)} failed of {sum(counts.values())} runs in {time.time() - t_start:.0f}s")
        for tool, executor, name, tag, problem, log in sorted(failures):
            lines.append(f"  {tool} {executor} {name} [{tag}]: {problem}\n    {log}")
        return "\n".join(lines) + "\n"

    def save(finished):
        # Rewritten after every run, so a sweep stopped by a time limit still says what it did.
        text = report(finished)
        os.makedirs(a.out, exist_ok=True)
        tmp = os.path.join(a.out, "summary.txt.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(a.out, "summary.txt"))
        return text

    def execute(batch, jobs):
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            futs = {}
            for tool, executor, name, tag, argv in batch:
                stem = os.path.join(a.out, tool, executor, f"{name.replace('/', '_')}.{tag}")
                cmd = ([] if tool == "plain" else tool_cmd(tool)) + grape_cmd(argv, executor, stem + ".out")
                futs[pool.submit(run_one, cmd, stem + ".log", tool != "plain")] = (tool, executor, name, tag, stem)
            for f in concurrent.futures.as_completed(futs):
                tool, executor, name, tag, stem = futs[f]
                problem, dt = f.result()
                key = (tool, executor)
                counts[key] = counts.get(key, 0) + 1
                if problem:
                    failures.append((tool, executor, name, tag, problem, stem + ".log"))
                    print(f"FAIL {tool:9} {executor:7} {name} [{tag}]: {problem} ({dt:.0f}s)", flush=True)
                save(False)

    # The plain runs first: they fill the kernel cache; a program that fails there is not
    # run under the sanitizer (its failure is already reported).
    execute([r for r in runs if r[0] == "plain"], a.jobs)
    broken = {(f[1], f[2]) for f in failures}
    sanitized = [r for r in runs if r[0] != "plain" and (r[1], r[2]) not in broken]
    # Graphs with conditional (WHILE) nodes fault with CUDA_ERROR_ILLEGAL_ADDRESS under memcheck
    # and initcheck when several sanitized processes share the GPU, and never when one runs at a
    # time: a compute-sanitizer defect, reproduced without Grape by scripts/probes/sanitizer_while.cu
    # (docs/execution.md). So the graph executor's runs go one at a time, after the others.
    execute([r for r in sanitized if r[1] not in SERIAL_EXECUTORS], a.jobs)
    execute([r for r in sanitized if r[1] in SERIAL_EXECUTORS], 1)

    print(save(True), end="")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
