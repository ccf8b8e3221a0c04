"""Per-opcode and per-instruction summary of an Nsight Compute source page (SASS) in CSV:

  ncu --set full --import-source no --page source --print-source sass --csv -k KERNEL ... > k.csv
  python3 bench/ncu_sass_summary.py k.csv

Prints the warp instructions executed, the stall samples by opcode (executed share, stall
share), the stall reasons summed over the kernel, and the 25 instructions with the most stall
samples with their main reason. bench/results/2026-11-23d-h100/ncu_*_sass_summary.txt are its
output for the wide GEMM and the prefill attention kernels.
"""
import collections
import csv
import io
import sys
txt=open(sys.argv[1]).read().split('\n')
start=[i for i,l in enumerate(txt) if l.startswith('"Address","Source"')][0]
rows=list(csv.reader(io.StringIO('\n'.join(txt[start:]))))
h=rows[0]; data=[r for r in rows[1:] if len(r)==len(h)]
ix={n:i for i,n in enumerate(h)}
def f(r,n):
    try: return float(r[ix[n]])
    except: return 0.0
tot_s=sum(f(r,"Warp Stall Sampling (All Samples)") for r in data)
tot_i=sum(f(r,"Instructions Executed") for r in data)
print("instructions executed (warp)",tot_i,"samples",tot_s, "rows",len(data))
# opcode histogram by executed and stall
byop=collections.defaultdict(lambda:[0,0])
for r in data:
    op=r[ix["Source"]].split()[0] if r[ix["Source"]].split() else "?"
    if op.startswith('@'): op=r[ix["Source"]].split()[1]
    op=op.split('.')[0]
    byop[op][0]+=f(r,"Instructions Executed"); byop[op][1]+=f(r,"Warp Stall Sampling (All Samples)")
for op,(e,s) in sorted(byop.items(), key=lambda kv:-kv[1][1])[:18]:
    print(f"{op:10s} exec {e:10.0f} ({100*e/tot_i:5.1f}%) stall {s:7.0f} ({100*s/tot_s:5.1f}%)")
stalls=[n for n in h if n.startswith("stall_") and "Not Issued" not in n]
print({n:int(sum(f(r,n) for r in data)) for n in stalls if sum(f(r,n) for r in data)>0})
print("top stall instructions:")
for r in sorted(data,key=lambda r:-f(r,"Warp Stall Sampling (All Samples)"))[:25]:
    top=max(stalls,key=lambda n:f(r,n))
    print(f'{f(r,"Warp Stall Sampling (All Samples)"):6.0f} {f(r,"Instructions Executed"):8.0f} {top:16s} {r[ix["Address"]][-5:]} {r[ix["Source"]].strip()[:70]}')
