// The parameter block of every generated kernel: `extern "C" __global__ void k(const __grid_constant__
// KParams kp)` (passed by value; the kernel bodies read it through `const KParams* p = &kp`). One definition
// for both sides: the host includes this header (jit/kernel_spec.h) and every kernel source embeds its text
// (jit/embed.cmake), so the two layouts cannot drift apart. Include guards, not #pragma once: NVRTC sees this
// text inside the kernel's main file.
#ifndef GRAPE_JIT_KERNEL_ABI_H
#define GRAPE_JIT_KERNEL_ABI_H

#define GRAPE_KMAX_BUFFERS 16
#define GRAPE_KMAX_RANK 8
#define GRAPE_KMAX_EXTRA 8
// Block sequences (scheduler/sequence.h): the most kernels, copies and loops one may hold.
#define GRAPE_SEQ_MAX_KERNELS 64
#define GRAPE_SEQ_MAX_COPIES 32
#define GRAPE_SEQ_MAX_LOOPS 4
#define GRAPE_SEQ_MAX_PATCHES 256

#ifndef __CUDACC_RTC__
namespace grape::jit {
#endif

struct KParams {
  const unsigned char* pred;  // the kernel returns at once when non-null and *pred == 0
  void* buf[GRAPE_KMAX_BUFFERS];
  long long shape[GRAPE_KMAX_BUFFERS][GRAPE_KMAX_RANK];
  long long extra[GRAPE_KMAX_EXTRA];
  // Matrix products (jit/kernels/gemv.cuh, gemm_mma.cuh), chosen on the host per launch
  // (scheduler/launch.h): K splits and the K range of each, and a zero-initialised scratch area
  // (split-K counters, then fp32 partial sums). Attention (jit/kernels/attention.cuh): splits is
  // the number of query rows per block, kchunk non-zero when the scores stay in shared memory.
  void* scratch;
  long long splits;
  long long kchunk;
  // L2 prefetch (jit/kernels/grid_dependency.cuh): every kernel requests [prefetch, prefetch +
  // prefetch_bytes) as it starts; the executors set it to the weight of a later matrix product
  // (scheduler/prefetch.h), or leave 0 bytes.
  const void* prefetch;
  unsigned long long prefetch_bytes;
  // Kernel timeline (GRAPE_KERNEL_TIMELINE, runtime/cuda/device_program.h): null, or this launch
  // slot's eight %globaltimer stamps (ns): the first block's start, the first and last block past
  // the wait for the predecessor, the last block's end, the last block past each of four marks
  // (jit/kernels/grid_dependency.cuh).
  unsigned long long* timeline;
  // gemv_mma.cuh: null, or the weight's tensor map (a CUtensorMap of [K][N] in boxes of 64
  // columns x 64 rows, 128-byte swizzle) in device memory, for one bulk tensor copy per box
  // (runtime/cuda/device_program.cpp, encode_weight_maps).
  const void* weight_map;
};

// The parameters of a block-sequence kernel (scheduler/sequence.h, jit/sequence_source.h): one
// block runs several kernels' bodies, copies and loops in order. Slots are numbered in the order
// scheduler::BlockSequence lists them; the sequence's code says which slot each step uses.
struct SeqParams {
  const KParams* kernel[GRAPE_SEQ_MAX_KERNELS];  // each kernel's parameter block, in device memory
  void* copy_dst[GRAPE_SEQ_MAX_COPIES];
  const void* copy_src[GRAPE_SEQ_MAX_COPIES];
  unsigned long long copy_bytes[GRAPE_SEQ_MAX_COPIES];
  const unsigned char* copy_pred[GRAPE_SEQ_MAX_COPIES];  // null: unconditional
  const unsigned char* loop_init[GRAPE_SEQ_MAX_LOOPS];   // checked before a loop's first trip
  const unsigned char* loop_cond[GRAPE_SEQ_MAX_LOOPS];   // checked after each trip
  // Storages that live only inside the sequence are kept in its shared memory, after the copies
  // of its kernels' parameter blocks (scheduler::sequence_locals). Each patch points one field of
  // one kernel's block there: kernel slot << 26 | field << 21 | offset / 16, field a buffer index
  // or GRAPE_KMAX_BUFFERS for the predicate. The copies' and loops' *_local: the shared-memory
  // offset of that address, or -1 where it is in global memory.
  unsigned int local_patch[GRAPE_SEQ_MAX_PATCHES];
  int local_patches;
  int copy_dst_local[GRAPE_SEQ_MAX_COPIES];
  int copy_src_local[GRAPE_SEQ_MAX_COPIES];
  int copy_pred_local[GRAPE_SEQ_MAX_COPIES];
  int loop_init_local[GRAPE_SEQ_MAX_LOOPS];
  int loop_cond_local[GRAPE_SEQ_MAX_LOOPS];
};
// The one kernel of the mono executor (runtime/cuda/mono_executor.h, jit/persistent_source.h): every
// step of an entry in one launch of co-resident blocks. Its copies come from a table in device memory.
struct PersistentCopy {
  void* dst;
  const void* src;
  unsigned long long bytes;
  const unsigned char* pred;  // null: unconditional
};
// A range of device memory the whole grid requests into L2 (grape_prefetch_l2); 0 bytes: none.
struct PersistentRange {
  const void* ptr;
  unsigned long long bytes;
};
struct PersistentParams {
  const KParams* kernel;       // the program's parameter blocks in device memory, one slot per kernel
  const PersistentCopy* copy;  // the copies, in the order the kernel's code names them
  // Per launch, in order: what the grid requests into L2 as that launch starts (the weight of the
  // next matrix product, so weights stream from memory while other steps and barriers run).
  const PersistentRange* prefetch;
  // Null, or 2 * (barriers + 2) stamps of %globaltimer (ns) that block 0 writes: [0] the start,
  // [2i] its arrival at barrier i and [2i + 1] its leaving it (barrier i = 1.. in code order;
  // the last is the kernel's end). The mono executor's GRAPE_MONO_TRACE.
  unsigned long long* trace;
  unsigned int* barrier;  // one word, zero before the first launch (jit/persistent_source.cpp)
};
// A sequence copies its kernels' blocks 16 bytes at a time.
static_assert(sizeof(KParams) % 16 == 0, "KParams must be a whole number of 16-byte words");
// Kernel parameters of up to 4 KB are accepted by every driver and device.
static_assert(sizeof(SeqParams) <= 4096, "SeqParams must fit a kernel's parameter space");

#ifndef __CUDACC_RTC__
}  // namespace grape::jit
#endif

#endif  // GRAPE_JIT_KERNEL_ABI_H
