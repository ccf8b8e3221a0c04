"""Probe: how NVRTC scales over Grape's kernel sources on many threads (the cold build's wall
time), straight through libnvrtc (ctypes releases the GIL) with Grape's options:

    GRAPE_DUMP_KERNELS=/tmp/dk grape compile examples/gpt2.grp --arch sm_90
    python3 scripts/probes/nvrtc_parallel.py /tmp/dk [threads]

Identical sources are compiled once and the longest first, as jit/parallel_compile.cpp does. Prints,
for the kernels, the block sequences and both: the wall time, the sum of the compile times and the
longest compiles; with and without NVRTC's precompiled header (-pch)."""
import ctypes
import glob
import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

cands = [os.environ.get("NVRTC", "")] + sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"), reverse=True)
lib = None
for c in cands:
    if c and "builtins" not in c:
        try:
            lib = ctypes.CDLL(c)
            break
        except OSError:
            pass
if lib is None:
    lib = ctypes.CDLL("libnvrtc.so")
include = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")


def compile_one(src, pch):
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None)
    opts = [b"-std=c++17", b"--gpu-architecture=sm_90", b"-default-device", b"-I" + include.encode()]
    if pch:
        opts += [b"-pch", b"-pch-messages=false", b"-pch-verbose=false"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    t = time.time()
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.time() - t
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return r, dt


def run(files, threads, pch):
    srcs = {}
    for f in files:
        s = open(f, "rb").read()
        srcs.setdefault(hashlib.md5(s).hexdigest(), (f, s))
    jobs = sorted(srcs.values(), key=lambda x: -len(x[1]))
    t = time.time()
    with ThreadPoolExecutor(threads) as ex:
        res = list(ex.map(lambda j: (j[0], *compile_one(j[1], pch)), jobs))
    wall = time.time() - t
    top = sorted(res, key=lambda r: -r[2])[:3]
    print(f"  {len(jobs)} sources: wall {wall:.2f} s, sum of compile times {sum(r[2] for r in res):.1f} s, "
          f"failures {sum(r[1] != 0 for r in res)}; longest: "
          + ", ".join(f"{os.path.basename(r[0])} {r[2]:.2f}" for r in top), flush=True)


d = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
every = glob.glob(os.path.join(d, "*.cu"))
seq = [f for f in every if "_sequence" in f]
ker = [f for f in every if "_sequence" not in f]
for pch in (True, False):
    print(f"{threads} threads, pch {pch}")
    for name, files in (("kernels", ker), ("sequences", seq), ("both", every)):
        print(" ", name)
        run(files, threads, pch)
