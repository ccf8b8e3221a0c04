#!/usr/bin/env python3
"""Golden tests for the grape CLI.

  tests/golden/diagnostics/NAME.grp  ->  NAME.expected : `grape check` exit status and stderr
  tests/golden/ir/NAME.grp           ->  NAME.ir       : `grape ir` stdout (must exit 0)

A first line `# args: ...` in a .grp adds arguments to the command (e.g. `-D N=3`,
`--no-optimize`, `--entry f`); a line `# env: NAME=VALUE ...` among the leading comment lines sets
environment variables for it (e.g. `GRAPE_LIMITS=max_ops=20000`, so that a limit is reached fast
in sanitizer builds too). Paths are given relative to the repository root, so that the
file names in diagnostics are stable.

An .expected file starts with `# exit: N`; the rest is the exact stderr. If the command also
wrote to stdout, that follows a line `# stdout:` at the end.

usage: run_golden.py GRAPE [--update] [NAME_SUBSTRING...]
  --update  rewrite the expected files from the current output (review every change!)
Exit status: 0 all pass, 1 a mismatch, 2 usage error.
"""
import concurrent.futures
import difflib
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join("tests", "golden")
TIMEOUT_S = 60


def case_args(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        first = f.readline()
    if first.startswith("# args:"):
        return shlex.split(first[len("# args:"):])
    return []


def case_env(path):
    env = dict(os.environ)
    env.pop("GRAPE_LIMITS", None)
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("#"):
                break
            if line.startswith("# env:"):
                for item in shlex.split(line[len("# env:"):]):
                    k, _, v = item.partition("=")
                    env[k] = v
    return env


def run(grape, argv, env=None):
    try:
        p = subprocess.run([grape] + argv, cwd=ROOT, capture_output=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return None, "", f"TIMEOUT after {TIMEOUT_S}s\n"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def diag_case(grape, grp):
    rc, out, err = run(grape, ["check", grp] + case_args(grp), case_env(grp))
    text = f"# exit: {rc}\n" + err
    if text and not text.endswith("\n"):
        text += "\n"
    if out:
        text += "# stdout:\n" + out
    return grp[:-len(".grp")] + ".expected", text, None


def ir_case(grape, grp):
    rc, out, err = run(grape, ["ir", grp] + case_args(grp), case_env(grp))
    problem = None if rc == 0 and not err else f"grape ir exited {rc}\n{err}"
    return grp[:-len(".grp")] + ".ir", out, problem


def collect(filters):
    cases = []
    for kind, fn in (("diagnostics", diag_case), ("ir", ir_case)):
        d = os.path.join(ROOT, GOLDEN, kind)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".grp"):
                continue
            rel = os.path.join(GOLDEN, kind, name)
            if filters and not any(f in rel for f in filters):
                continue
            cases.append((fn, rel))
    return cases


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    unknown = [f for f in flags if f != "--update"]
    if not args or unknown:
        sys.stderr.write(__doc__)
        return 2
    grape = os.path.abspath(args[0])
    if not os.access(grape, os.X_OK):
        sys.stderr.write(f"run_golden.py: {grape} is not an executable\n")
        return 2
    update = "--update" in flags
    cases = collect(args[1:])
    if not cases:
        sys.stderr.write("run_golden.py: no cases found\n")
        return 1
    failed, updated = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(lambda c: (c[1],) + c[0](grape, c[1]), cases))
    for grp, expected_path, actual, problem in results:
        full = os.path.join(ROOT, expected_path)
        if problem:
            failed.append(grp)
            print(f"FAIL {grp}: {problem}")
            continue
        if update:
            old = open(full, encoding="utf-8").read() if os.path.exists(full) else None
            if old != actual:
                with open(full, "w", encoding="utf-8") as f:
                    f.write(actual)
                updated.append(expected_path)
            continue
        if not os.path.exists(full):
            failed.append(grp)
            print(f"FAIL {grp}: missing {expected_path} (run with --update and review it)")
            continue
        expected = open(full, encoding="utf-8").read()
        if expected != actual:
            failed.append(grp)
            print(f"FAIL {grp}")
            sys.stdout.writelines(difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                fromfile=expected_path, tofile=expected_path + " (actual)"))
    for u in updated:
        print(f"updated {u}")
    print(f"golden: {len(cases) - len(failed)}/{len(cases)} passed" + (f", {len(updated)} updated" if update else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
