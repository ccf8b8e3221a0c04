#!/usr/bin/env python3
"""Where a decoder-plan step's last block lost its time: reads GRAPE_MONO_TRACE_STAMPS's file.

Usage: scripts/decoder_stamps.py STAMPS [STEP ...]

For every layer step (and lm_head), times are in us from the step's begin (the previous step's
last block done, as in GRAPE_MONO_TRACE's lines). It prints, over the step's blocks, the minimum,
median and maximum of: the counter seen (wake), the rows staged, the product done, the exchange's
data arrived (stage A: the head's outputs; stage B: the cluster's gelu outputs) and done; then the
last block's own values, its cluster's latest product end, and how far its wake was from the
median (skew the step's span inherits). After lm_head's line: its blocks grouped by kind (layer
blocks, lm_head-only blocks) and item count with when they ended, and its items' compute and the
time from one item's end to the next one's arrival in the ring. Stamp indices: jit/decoder_abi.h, DecoderParams::trace.
"""
import statistics
import sys
from collections import defaultdict


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    items = defaultdict(list)  # step -> [(block, stamps)]
    for line in open(sys.argv[1]):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        block, item, step, stamps = int(f[0]), int(f[1]), int(f[2]), [int(x) for x in f[3:]]
        items[step].append((block, stamps, item))
    wanted = {int(s) for s in sys.argv[2:]}
    begin = 0
    steps = sorted(items)
    lm = steps[-1]
    print("step  kind  span | wake rows product exch done: min/median/max over blocks (us from the step's begin)"
          " | last block: wake rows product exch done, its cluster's latest product")
    for st in steps:
        first = {}
        done = {}
        for block, s, _ in items[st]:
            if block not in first:
                first[block] = s
            done[block] = max(done.get(block, 0), s[4])
        end = max(done.values())
        kind = "lm" if st == lm else ("A" if st % 2 == 0 else "B")

        def rel(v):
            return (v - begin) / 1e3 if v else float("nan")

        cols = (1, 3, 5, 8)  # stamps of the counter seen, rows staged, product done, exchange arrived
        stats = [[rel(s[k]) for s in first.values() if s[k]] for k in cols]
        stats.append([rel(v) for v in done.values()])
        last = max(done, key=lambda b: done[b])
        ls = first[last]
        cluster = [b for b in first if b // 8 == last // 8]
        cl_product = max((rel(first[b][5]) for b in cluster if first[b][5]), default=float("nan"))
        if not wanted or st in wanted:
            q = " ".join(
                "%.2f/%.2f/%.2f" % (min(v), statistics.median(v), max(v)) if v else "-" for v in stats)
            print("%3d %4s %6.2f | %s | block %d: %s, cluster product %.2f, wake - median %.2f" % (
                st, kind, (end - begin) / 1e3, q, last,
                " ".join("%.2f" % rel(ls[k]) for k in cols) + " %.2f" % rel(done[last]), cl_product,
                rel(ls[1]) - statistics.median(stats[0]) if stats[0] else float("nan")))
        if st == lm and (not wanted or st in wanted):
            lm_head_blocks(items, lm, begin)
        begin = end
    return 0


def lm_head_blocks(items, lm, begin):
    """lm_head's blocks grouped by kind (layer blocks, lm_head-only blocks) and item count: when
    they ended; and its items' compute and the time between one item's end and the next one's
    arrival in the ring (us)."""
    layer_blocks = {b for st in items if st != lm for b, _, _ in items[st]}
    per_block = defaultdict(list)
    for block, s, item in items[lm]:
        per_block[block].append((item, s))
    groups = defaultdict(list)
    compute, between = [], []
    for block, its in per_block.items():
        its.sort()
        kind = "layer blocks" if block in layer_blocks else "lm_head-only blocks"
        groups[(kind, len(its))].append((max(s[4] for _, s in its) - begin) / 1e3)
        for n, (_, s) in enumerate(its):
            if s[3] and s[4]:
                compute.append((s[4] - s[3]) / 1e3)
            if n and s[2] and its[n - 1][1][4]:
                between.append((s[2] - its[n - 1][1][4]) / 1e3)
    print("lm_head's blocks by kind and item count: blocks, their ends min/median/max (us from the step's begin)")
    for (kind, count), ends in sorted(groups.items()):
        print("  %s, %d items: %d blocks, %.2f/%.2f/%.2f" % (
            kind, count, len(ends), min(ends), statistics.median(ends), max(ends)))
    if compute:
        print("lm_head's items: compute (rows staged to done) median %.2f us; from an item's end to the next"
              " one in the ring median %s us" % (
                  statistics.median(compute), "%.2f" % statistics.median(between) if between else "-"))


if __name__ == "__main__":
    sys.exit(main())
