#!/usr/bin/env python3
"""scripts/timeline_summary.py on a small kernel timeline written by hand (the format of
DeviceProgram::timeline_write): per-group sums measured from each previous kernel's end, groups by
source position, a kernel that does not wait, phase marks, and clear errors for a malformed line or a missing
file.

    python3 tests/python/test_timeline_summary.py [PATH/TO/grape]      (the argument is unused)

Exit 0: passed; 1: a failure (on stderr)."""
import io
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import timeline_summary as ts  # noqa: E402

# Two "layers" of two kernels each (the gelu ones with phase marks; none reached mark 2) and a last
# kernel that does not wait.
TIMELINE = """# main: 5 kernels; us from the first start: start, first and last block past the wait, end
0.000 0.500 1.000 4.000 kernel main_k0_add (add at line 3)
3.000 4.500 5.000 9.000 m=5.000,6.000,-,8.000 kernel main_k1_gelu (gelu at line 4)
8.000 9.250 9.500 12.000 kernel main_k2_add (add at line 3)
12.500 13.000 13.000 20.000 m=13.500,14.000,-,18.000 kernel main_k3_gelu (gelu at line 4)
19.000 - - 21.000 kernel main_k4_le (le at line 9)
"""


def close(a, b):
    return abs(a - b) < 1e-9


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


def main():
    rows = ts.parse(TIMELINE.splitlines())
    check(len(rows) == 5 and rows[4][1] is None and rows[4][2] is None, f"parse: {rows}")
    check(rows[1][4] == "kernel main_k1_gelu (gelu at line 4)" and rows[1][5] == (5.0, 6.0, None, 8.0)
          and rows[0][5] is None, f"parse marks: {rows[1]} {rows[0]}")
    groups, span = ts.summarise(rows)
    check(close(span, 21.0), f"span {span}")
    check(list(groups) == ["add at line 3", "gelu at line 4", "le at line 9"], f"groups {list(groups)}")
    # add at line 3: k0 measured from its own start (0): start 0, first 0.5, last 1, added 4, after 3.5;
    # k2 from k1's end (9): start -1, first 0.25, last 0.5, added 3, after 2.75.
    n, s, f, l, added, after = groups["add at line 3"][:6]
    check(n == 2 and close(s, -1.0) and close(f, 0.75) and close(l, 1.5) and close(added, 7.0)
          and close(after, 6.25), f"add group {groups['add at line 3']}")
    # gelu at line 4: k1 from 4: -1, 0.5, 1, 5, 4.5; k3 from 12: 0.5, 1, 1, 8, 7.
    n, s, f, l, added, after = groups["gelu at line 4"][:6]
    check(n == 2 and close(s, -0.5) and close(f, 1.5) and close(l, 2.0) and close(added, 13.0)
          and close(after, 11.5), f"gelu group {groups['gelu at line 4']}")
    # Marks from the predecessor's end: k1 (from 4) 1, 2, -, 4; k3 (from 12) 1.5, 2, -, 6.
    marks = groups["gelu at line 4"][7]
    check(marks[0] == [2, 2.5] and marks[1] == [2, 4.0] and marks[2] == [0, 0.0] and marks[3] == [2, 10.0],
          f"gelu marks {marks}")
    check(all(m[0] == 0 for m in groups["add at line 3"][7]), f"add marks {groups['add at line 3'][7]}")
    # le does not wait: its start (-1 from 20) stands for the wait; added 1, after 2.
    n, s, f, l, added, after = groups["le at line 9"][:6]
    check(n == 1 and close(s, -1.0) and close(f, -1.0) and close(l, -1.0) and close(added, 1.0)
          and close(after, 2.0), f"le group {groups['le at line 9']}")

    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "tl.txt")
        with open(good, "w") as fh:
            fh.write(TIMELINE)
        out = io.StringIO()
        with redirect_stdout(out):
            rc = ts.main(["timeline_summary.py", good])
        text = out.getvalue()
        check(rc == 0, f"rc {rc}")
        check("5 kernels, 21.0 us from the first start to the last end" in text, text)
        main_table = text[:text.index("phase marks")]
        lines = [x for x in main_table.splitlines() if x.rstrip().endswith(("line 3", "line 4", "line 9"))]
        check([x.split("   ")[-1].strip() for x in lines] == ["gelu at line 4", "add at line 3", "le at line 9"],
              f"order by time added: {lines}")
        table = text[text.index("phase marks"):].splitlines()
        check(len(table) == 3 and table[2].split() == ["2", "+0.75", "+1.25", "+2.00", "-", "+5.00", "6.50",
                                                        "gelu", "at", "line", "4"], f"marks table: {table}")
        bad = os.path.join(d, "bad.txt")
        with open(bad, "w") as fh:
            fh.write("# header\n1.0 2.0 3.0\n")
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "timeline_summary.py"), bad],
                           capture_output=True, text=True)
        check(r.returncode == 1 and "line 2" in r.stderr and bad in r.stderr, f"malformed: {r.returncode} {r.stderr}")
        with open(bad, "w") as fh:
            fh.write("# header\n1.0 2.0 3.0 4.0 m=1,2 kernel k (add at line 1)\n")
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "timeline_summary.py"), bad],
                           capture_output=True, text=True)
        check(r.returncode == 1 and "line 2" in r.stderr and "m=a,b,c,d" in r.stderr,
              f"malformed marks: {r.returncode} {r.stderr}")
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "timeline_summary.py"),
                            os.path.join(d, "missing.txt")], capture_output=True, text=True)
        check(r.returncode == 1 and "missing.txt" in r.stderr, f"missing: {r.returncode} {r.stderr}")
    print("test_timeline_summary: ok")


if __name__ == "__main__":
    main()
