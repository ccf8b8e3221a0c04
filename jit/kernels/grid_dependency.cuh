// Programmatic dependent launch (Hopper and newer), for every kernel the executors launch: the
// generated ones (jit/kernel_source.cpp puts this before prelude.cuh) and the control kernels
// (runtime/cuda/control_kernels.cpp). The graph executor joins consecutive kernel nodes with
// programmatic edges, so a kernel's blocks may be launched while its predecessor still runs. Every
// kernel therefore waits here, before it reads or writes any buffer, until the predecessor has
// finished and its writes are visible (and so, transitively, every kernel before it).
// GRAPE_LAUNCH_DEPENDENTS lets the successor launch before this kernel's blocks exit (they exiting
// does the same). A kernel launched the ordinary way passes both at once; older GPUs have neither
// instruction and need neither.
#ifndef GRAPE_KERNELS_GRID_DEPENDENCY_CUH
#define GRAPE_KERNELS_GRID_DEPENDENCY_CUH
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GRAPE_GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define GRAPE_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" :::)
#else
#define GRAPE_GRID_WAIT()
#define GRAPE_LAUNCH_DEPENDENTS()
#endif
#endif
