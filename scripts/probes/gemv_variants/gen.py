"""Times the decode GEMV kernels Grape generates, as they are and in variants, in CUDA graphs.

  mkdir -p /tmp/dk && GRAPE_DUMP_KERNELS=/tmp/dk grape compile examples/gpt2.grp --arch sm_90 -D L=1
  python3 scripts/probes/gemv_variants/gen.py /tmp/dk OUT      # one .cu per (kernel, variant)
  cd OUT && for f in *.cu; do nvcc -O3 -arch=sm_90 -c $f; done
  nvcc -O3 -arch=sm_90 -c .../gemv_variants/main.cu && nvcc -arch=sm_90 -o gemv_variants *.o

main.cu launches each one as the eager executor would (the parameter block by value, the grid,
shared memory and K splits scheduler/launch.cpp picks for batch 5) 200 times in a CUDA graph over 20
weight copies, and prints microseconds per launch beside the variant's largest difference from the
unchanged kernel. Compare with scripts/probes/gemv_probe.cu (a plain GEMV of the same shapes).
A variant is a text substitution in the kernel source; the kernels are decode_step's at L=1
(k1 c_attn, k5 attn c_proj, k6 c_fc, k7 mlp c_proj) and the names below must match that dump.
"""
import os
import re
import sys

dump, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
kernels = {"cproj": "decode_step_k5_add", "cfc": "decode_step_k6_gelu", "mlpproj": "decode_step_k7_matmul", "cattn": "decode_step_k1_add"}
variants = {
  "base": [],
  "pf3": [("#define GRAPE_GEMV_PF 8", "#define GRAPE_GEMV_PF 3")],
  "lb1": [("__launch_bounds__(256, 2)", "__launch_bounds__(256, 1)")],
  # Not MT (rows per pass): grape_reduce_scatter needs a power-of-two number of values per lane.
}
names = []
for kn, f in kernels.items():
    src = open(f"{dump}/{f}.cu").read()
    src = src.replace("namespace grape::jit {", "").replace("}  // namespace grape::jit", "")
    src = re.sub(r'#line [^\n]*\n', '\n', src)
    for vn, subs in variants.items():
        s = src
        for a, b in subs:
            assert a in s, (kn, vn, a)
            s = s.replace(a, b)
        name = f"{kn}_{vn}"
        s = s.replace("grape_kernel_mma(", f"unused_mma_{name}(").replace("grape_kernel(", f"k_{name}(")
        s += f'\nvoid launch_{name}(const void* kp, int grid, int smem, cudaStream_t st) {{\n  void* args[] = {{const_cast<void*>(kp)}};\n  cudaFuncSetAttribute((const void*)k_{name}, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);\n  cudaLaunchKernel((const void*)k_{name}, dim3(grid), dim3(256), args, smem, st);\n}}\n'
        open(f"{out}/{name}.cu", "w").write(s)
        names.append(name)
open(f"{out}/names.txt", "w").write("\n".join(names))
