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
// A kernel of little work (the slice writes of a decode step's cache) releases its successor as it
// starts, so the successor's launch overlaps it (scheduler::update_launch_dependents_early). Not
// inside a block sequence or the persistent kernel, where the body is one step of a larger kernel.
#if defined(GRAPE_BLOCK_SEQUENCE) || defined(GRAPE_PERSISTENT)
#define GRAPE_RELEASE_AT_START()
#else
#define GRAPE_RELEASE_AT_START() GRAPE_LAUNCH_DEPENDENTS()
#endif

// Kernel timeline (GRAPE_TIMELINE, defined in every kernel's source when GRAPE_KERNEL_TIMELINE is
// set: scheduler::kernel_timeline). Thread 0 of every block stamps %globaltimer into its launch's
// KParams::timeline slot: [0] the earliest block start, [1] / [2] the earliest / latest block past
// the wait for the predecessor, [3] the latest block end (thread 0 leaving the entry point), and
// [4 + i] the latest block past mark i (GRAPE_TIMELINE_MARK(p, i), i < 4: a kernel template's
// phases, e.g. gemv_mma.cuh's "A staged", "products summed", "splits exchanged"). The
// stamps show, in a graph with programmatic launches, how long each kernel runs after its
// predecessor has finished, which ncu (kernels one by one, cold caches) and the eager profile
// (events around each launch) cannot.
// The GPU's nanosecond clock (the timeline's stamps; the mono executor's trace, persistent_source.cpp).
__device__ __forceinline__ unsigned long long grape_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#ifdef GRAPE_TIMELINE
__device__ __forceinline__ void grape_timeline_waited(unsigned long long* t) {
  if (t && threadIdx.x == 0) {
    const unsigned long long now = grape_globaltimer();
    atomicMin(t + 1, now);
    atomicMax(t + 2, now);
  }
}
struct GrapeTimelineScope {
  unsigned long long* t;
  __device__ explicit GrapeTimelineScope(unsigned long long* slot) : t(slot) {
    if (t && threadIdx.x == 0) atomicMin(t, grape_globaltimer());
  }
  __device__ ~GrapeTimelineScope() {
    if (t && threadIdx.x == 0) atomicMax(t + 3, grape_globaltimer());
  }
};
__device__ __forceinline__ void grape_timeline_mark(unsigned long long* t, int i) {
  if (t && threadIdx.x == 0) atomicMax(t + 4 + i, grape_globaltimer());
}
#define GRAPE_TIMELINE_SCOPE(kp) GrapeTimelineScope grape_timeline_scope((kp).timeline)
#define GRAPE_TIMELINE_WAITED(p) grape_timeline_waited((p)->timeline)
#define GRAPE_TIMELINE_MARK(p, i) grape_timeline_mark((p)->timeline, i)
#else
#define GRAPE_TIMELINE_SCOPE(kp)
#define GRAPE_TIMELINE_WAITED(p)
#define GRAPE_TIMELINE_MARK(p, i)
#endif

// Weights into L2 ahead of their kernel. A matrix product's tensor-core entry points call this
// with their parameter block's `prefetch` range right after their wait and predicate check
// (jit/emit_kernels.cpp), gemv_mma.cuh's blocks before their wait (a prefetch changes no load's
// result). The executors give each matrix product's weight to the
// matrix product before it (scheduler/prefetch.h), so it streams into L2 while that product runs
// (and whatever runs between the two) instead of behind the product that reads it. Every thread
// of the grid takes pieces of 16 KB, blocks first, so a grid of a few blocks still spreads its
// requests. The start is 16-byte aligned (the executors check); a size's last 15 bytes are left
// alone: a hint.
__device__ __forceinline__ void grape_prefetch_l2(const void* base, unsigned long long bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes == 0) return;  // most kernels: one uniform branch
  const unsigned long long a = reinterpret_cast<unsigned long long>(base);
  constexpr unsigned long long kPiece = 16384;
  const unsigned long long pieces = (bytes + kPiece - 1) / kPiece;
  for (unsigned long long i = (unsigned long long)threadIdx.x * gridDim.x + blockIdx.x; i < pieces;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long off = i * kPiece, left = bytes - off;
    const unsigned n = (unsigned)(left < kPiece ? left : kPiece) & ~15u;
    if (n != 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a + off), "r"(n) : "memory");
  }
#endif
}
#endif
