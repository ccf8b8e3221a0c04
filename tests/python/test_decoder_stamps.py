#!/usr/bin/env python3
"""scripts/decoder_stamps.py (the analysis of GRAPE_MONO_TRACE_STAMPS's file) on a synthetic file
whose answer is known: 16 blocks, 4 layer steps and lm_head, every phase the same length except one
block's rows at step 2, which must come out as that step's last block, with the spans and the
rows' minimum/median/maximum computed by hand; and a second file for lm_head's breakdown by
block kind and item count.

    python3 tests/python/test_decoder_stamps.py [PATH/TO/grape]        (from the repository root)

Exit 0: passed; 1: a failure (on stderr)."""
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "decoder_stamps.py")


def stamps_file(path):
    """Writes the file; returns each step's span in us."""
    blocks, steps, late_block, late_step = 16, 5, 5, 2
    begin, spans = 0, []
    with open(path, "w") as f:
        f.write("# block item step  stamps 0..12\n")
        lines = []
        for st in range(steps):
            end = 0
            for b in range(blocks):
                s = [0] * 13
                s[0] = begin
                s[1] = begin + 800
                s[10] = s[1] + 260
                s[2] = s[10] + 30
                s[3] = s[2] + 800 + (600 if (b, st) == (late_block, late_step) else 0)
                if st < steps - 1:
                    s[5] = s[3] + 400
                    s[8] = s[5] + 500
                    s[4] = s[8] + 500
                else:
                    s[4] = s[3] + 3000
                end = max(end, s[4])
                lines.append((b, st, s))
            spans.append((end - begin) / 1e3)
            begin = end
        for b, st, s in sorted(lines):
            f.write("%d %d %d %s\n" % (b, st, st, " ".join(str(v) for v in s)))
    return spans


def lm_head_file(path):
    """Two layer blocks (0, 1: a layer step, then 2 and 3 lm_head items) and two lm_head-only
    blocks (2, 3: 2 items each); lm_head begins at 1000 ns (the layer step's end). Every item
    computes 500 ns; the gaps from one item's end to the next one in the ring are 200, 400, 200,
    100 and 300 ns."""
    lines = [(b, 0, 0, [0, 100, 150, 200, 1000] + [0] * 8) for b in (0, 1)]
    lm = {0: [(1100, 1700), (1900, 2450)],
          1: [(1100, 1700), (2100, 2650), (2850, 3400)],
          2: [(1050, 1600), (1700, 2250)],
          3: [(1050, 1600), (1900, 2450)]}
    for b, its in lm.items():
        first = 1 if b < 2 else 0
        for n, (arrived, done) in enumerate(its):
            s = [0] * 13
            s[0], s[1], s[2], s[3], s[4] = arrived - 50, arrived - 20, arrived, done - 500, done
            lines.append((b, first + n, 1, s))
    with open(path, "w") as f:
        f.write("# block item step  stamps 0..12\n")
        for b, item, st, s in lines:
            f.write("%d %d %d %s\n" % (b, item, st, " ".join(str(v) for v in s)))


def check_lm_head(d, failures):
    path = os.path.join(d, "lm_head.txt")
    lm_head_file(path)
    out = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
    if out.returncode != 0:
        failures.append("lm_head file: exit %d: %s" % (out.returncode, out.stderr))
        return
    # Ends from lm_head's begin: block 0 1.45, block 1 2.40, blocks 2 and 3 1.25 and 1.45.
    for want in ("layer blocks, 2 items: 1 blocks, 1.45/1.45/1.45",
                 "layer blocks, 3 items: 1 blocks, 2.40/2.40/2.40",
                 "lm_head-only blocks, 2 items: 2 blocks, 1.25/1.35/1.45",
                 "compute (rows staged to done) median 0.50 us",
                 "next one in the ring median 0.20 us"):
        if want not in out.stdout:
            failures.append("lm_head breakdown should have %r:\n%s" % (want, out.stdout))


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stamps.txt")
        spans = stamps_file(path)
        out = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        rows = {}
        for line in out.stdout.splitlines():
            f = line.split()
            if f and f[0].isdigit():
                rows[int(f[0])] = line
        if sorted(rows) != list(range(5)):
            failures.append("steps %s, expected 0..4:\n%s" % (sorted(rows), out.stdout))
        for st, span in enumerate(spans):
            line = rows.get(st, "")
            got = line.split()[2] if line else "?"
            if got != "%.2f" % span:
                failures.append("step %d: span %s, expected %.2f: %s" % (st, got, span, line))
        step2 = rows.get(2, "")
        # Rows staged 0.8 + 0.26 + 0.03 + 0.8 us into the step, the late block 0.6 us later.
        for want in ("block 5:", "1.89/1.89/2.49", " A "):
            if want not in step2:
                failures.append("step 2 should have %r: %s" % (want, step2))
        if " lm " not in rows.get(4, ""):
            failures.append("step 4 should be lm_head: %s" % rows.get(4, ""))
        if " B " not in rows.get(1, ""):
            failures.append("step 1 should be stage B: %s" % rows.get(1, ""))
        check_lm_head(d, failures)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("test_decoder_stamps: %s" % ("passed" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
