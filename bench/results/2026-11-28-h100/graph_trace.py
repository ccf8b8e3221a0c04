#!/usr/bin/env python3
"""Per-kernel durations and gaps inside CUDA graph replays, from `nsys stats --report
cuda_gpu_trace --format csv`. Usage: graph_trace.py TRACE.csv KERNELS_PER_REPLAY [REPLAYS=10]
Takes the last REPLAYS replays (KERNELS_PER_REPLAY kernels each, in start order) and prints, per
position, the median duration, the median gap since the previous kernel ended (negative: overlap
through programmatic dependent launch) and the grid."""
import csv
import statistics
import sys

path, per = sys.argv[1], int(sys.argv[2])
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
rows = list(csv.DictReader(open(path)))
def col(r, *names):
    for n in names:
        for k in r:
            if k.startswith(n):
                return r[k]
    return ""
ks = []
for r in rows:
    name = col(r, "Name")
    if "memcpy" in name.lower() or "memset" in name.lower() or not col(r, "GrdX"):
        continue
    ks.append((int(col(r, "Start")), int(col(r, "Duration")), col(r, "GrdX"), col(r, "BlkX"), name))
ks.sort()
if len(ks) < per * reps:
    reps = len(ks) // per
ks = ks[len(ks) - per * reps:]
spans, durs, gaps = [], [[] for _ in range(per)], [[] for _ in range(per)]
for i in range(reps):
    r = ks[i * per:(i + 1) * per]
    spans.append((r[-1][0] + r[-1][1] - r[0][0]) / 1e3)
    for j, (s, d, *_ ) in enumerate(r):
        durs[j].append(d / 1e3)
        gaps[j].append(0.0 if j == 0 else (s - (r[j - 1][0] + r[j - 1][1])) / 1e3)
print(f"{reps} replays of {per} kernels: span (first start to last end) median {statistics.median(spans):.1f} us, "
      f"min {min(spans):.1f}; sum of median durations {sum(statistics.median(d) for d in durs):.1f} us; "
      f"sum of median gaps {sum(statistics.median(g) for g in gaps):.1f} us")
print(" pos  grid x block   dur_us  gap_us")
last = ks[(reps - 1) * per:]
for j in range(per):
    print(f"{j:4d} {last[j][2]:>5} x {last[j][3]:<4} {statistics.median(durs[j]):7.2f} {statistics.median(gaps[j]):7.2f}")
