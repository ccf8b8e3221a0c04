#!/usr/bin/env python3
"""scripts/decoder_stamps.py (the analysis of GRAPE_MONO_TRACE_STAMPS's file) on a synthetic file
whose answer is known: 16 blocks, 4 layer steps and lm_head, every phase the same length except one
block's rows at step 2, which must come out as that step's last block, with the spans and the
rows' minimum/median/maximum computed by hand.

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
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("test_decoder_stamps: %s" % ("passed" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
