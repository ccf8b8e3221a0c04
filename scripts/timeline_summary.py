#!/usr/bin/env python3
"""Summarises a kernel timeline (GRAPE_KERNEL_TIMELINE=FILE, docs/kernels.md "Kernel timeline").

    python3 scripts/timeline_summary.py FILE

Each kernel is measured from the end of the kernel before it (the previous line's end): when its
blocks started (negative: resident before the predecessor had ended, as programmatic dependent
launch allows), when its first and last block passed the wait for the predecessor, and when it
ended, which is what it adds to the run; "after wait" is its end minus its first block past the
wait: the time it runs once its inputs are there. Kernels are grouped by their source position
(the label's "(op at line N)": one group per layer-repeated kernel) and the groups listed by the
time they add, largest first, with per-launch averages. A kernel that does not wait ("-") counts
its start instead of a wait. A kernel whose template marks its phases (the optional "m=a,b,c,d"
field: the last block past each mark, "-" where none reached it) gets a second table: each mark
per launch from the predecessor's end, so the steps between the wait and the end can be read off.
"""
import re
import sys


def parse(lines):
    """(start, first_wait, last_wait, end, label, marks) per kernel line; waits are None for "-",
    marks a tuple of four (None where unset), or None for a kernel without marks."""
    rows = []
    to = lambda v: None if v == "-" else float(v)  # noqa: E731
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 4)
        if len(parts) < 5:
            raise ValueError(f"line {n}: expected 'start first last end label', got {line!r}")
        start, first, last, end = parts[:4]
        label, marks = parts[4], None
        if label.startswith("m="):
            field, _, label = label.partition(" ")
            marks = tuple(to(v) for v in field[2:].split(","))
            if len(marks) != 4 or not label:
                raise ValueError(f"line {n}: expected 'm=a,b,c,d label', got {line!r}")
        rows.append((float(start), to(first), to(last), float(end), label, marks))
    return rows


def group_of(label):
    m = re.search(r"\(([^()]*)\)\s*$", label)
    return m.group(1) if m else label


def summarise(rows):
    """Per group: [launches, sum start, sum first, sum last, sum added, sum after-wait, label,
    [per mark: launches reaching it, sum from the predecessor's end]], in the order the groups
    first appear; and the run's span (first start to last end)."""
    groups = {}
    prev_end = rows[0][0] if rows else 0.0
    for start, first, last, end, label, marks in rows:
        first = start if first is None else first
        last = start if last is None else last
        g = groups.setdefault(group_of(label), [0, 0.0, 0.0, 0.0, 0.0, 0.0, label, [[0, 0.0] for _ in range(4)]])
        g[0] += 1
        g[1] += start - prev_end
        g[2] += first - prev_end
        g[3] += last - prev_end
        g[4] += end - prev_end
        g[5] += end - first
        for i, v in enumerate(marks or ()):
            if v is not None:
                g[7][i][0] += 1
                g[7][i][1] += v - prev_end
        prev_end = end
    span = (rows[-1][3] - rows[0][0]) if rows else 0.0
    return groups, span


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            rows = parse(f.readlines())
    except (OSError, ValueError) as e:
        print(f"timeline_summary: {argv[1]}: {e}", file=sys.stderr)
        return 1
    groups, span = summarise(rows)
    print(f"{len(rows)} kernels, {span:.1f} us from the first start to the last end")
    print("   n  added us  per launch: start  first wait  last wait    end  after wait   kernel")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1][4]):
        n = g[0]
        print(f"{n:4d} {g[4]:9.1f}  {g[1] / n:+17.2f} {g[2] / n:+11.2f} {g[3] / n:+10.2f} "
              f"{g[4] / n:6.2f} {g[5] / n:11.2f}   {name}")
    marked = [(name, g) for name, g in groups.items() if any(m[0] for m in g[7])]
    if marked:
        print("\nphase marks (last block past each), per launch from the predecessor's end:")
        print("   n   first wait   mark 0   mark 1   mark 2   mark 3      end   kernel")
        for name, g in sorted(marked, key=lambda kv: -kv[1][4]):
            n = g[0]
            cells = "".join(f"{m[1] / m[0]:+9.2f}" if m[0] else f"{'-':>9}" for m in g[7])
            print(f"{n:4d} {g[2] / n:+12.2f}{cells} {g[4] / n:8.2f}   {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
