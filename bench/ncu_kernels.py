"""Lists an `ncu --csv` metrics dump kernel by kernel (ID, time in us, grid, DRAM MB), in launch order."""
import csv
import sys


def main(path, first=0, count=10**9):
    rows = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3, "byte": 1,
             "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
    for r in csv.DictReader(lines):
        v = float(r["Metric Value"].replace(",", ""))
        rows.setdefault(int(r["ID"]), {})[r["Metric Name"]] = v * scale.get(r.get("Metric Unit", ""), 1)
    for k in sorted(rows)[first:first + count]:
        m = rows[k]
        print(f"{k:4d} {m.get('gpu__time_duration.sum', 0):8.2f} us  grid {int(m.get('launch__grid_size', 0)):5d}"
              f"  {m.get('dram__bytes.sum', 0) / 1e6:7.2f} MB")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
