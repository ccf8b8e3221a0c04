"""Sums an `ncu --csv` metrics dump: kernels, total kernel time, DRAM bytes, and the ten longest."""
import csv
import json
import sys


def main(name, path):
    rows = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        k = (r["ID"], r["Kernel Name"])
        unit = r.get("Metric Unit", "")
        v = float(r["Metric Value"].replace(",", ""))
        # Times in microseconds, sizes in bytes (ncu prints "ns"/"us"/"ms" or "nsecond"/... by version).
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3, "byte": 1,
                 "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
        rows.setdefault(k, {})[r["Metric Name"]] = v * scale.get(unit, 1)
    t = sum(r.get("gpu__time_duration.sum", 0) for r in rows.values())
    b = sum(r.get("dram__bytes.sum", 0) for r in rows.values())
    top = sorted(rows.items(), key=lambda kv: -kv[1].get("gpu__time_duration.sum", 0))[:10]
    out = {"workload": name, "kernels": len(rows), "kernel_us": round(t, 1), "dram_MB": round(b / 1e6, 1),
           "GBps": round(b / max(t, 1e-9) / 1e3, 1),
           "top": [[int(k[0]), round(v.get("gpu__time_duration.sum", 0), 1), int(v.get("launch__grid_size", 0)),
                    round(v.get("dram__bytes.sum", 0) / 1e6, 2)] for k, v in top]}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
