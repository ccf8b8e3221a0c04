// Top-k of long rows for small k (k <= GRAPE_TOPK_MAX_K): one pass over the row, the same order
// as runtime/cpu/gather.cpp topk (grape_topk_before: NaN first, then larger values, ties to the
// lower index).
//
// Each thread keeps the best K (value, index) pairs it has seen in registers, sorted best first;
// an element enters only when it beats the thread's K-th (one compare for almost every element of
// a long row). Then K rounds of a block-wide best among the threads' heads: the winner is output
// t and its thread drops it. A beam search's top 10 of 5 x 50257 candidates read the row 10 times
// with the k-pass kernel (2.7 ms on an H100, one block); this reads it once.
//
// The glue (jit/emit_kernels.cpp, topk()) offers every element of a row with offer() and emits
// the outputs from grape_topk_merge's callback on thread 0.
#ifndef GRAPE_KERNELS_TOPK_CUH
#define GRAPE_KERNELS_TOPK_CUH

#define GRAPE_TOPK_MAX_K 16

struct GrapeTopKBefore {
  template <class T>
  __device__ __forceinline__ bool operator()(T va, long long ia, T vb, long long ib) const {
    return grape_topk_before(va, ia, vb, ib);
  }
};

template <class T, int K>
struct GrapeTopKList {
  T v[K];
  long long i[K];  // -1: empty (after every element in topk order)

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int q = 0; q < K; ++q) {
      v[q] = T(0);
      i[q] = -1;
    }
  }
  // Inserts (x, j) if it beats the K-th: it replaces the K-th and bubbles up (the list stays
  // sorted); indices are fixed register slots, so nothing goes to local memory.
  __device__ __forceinline__ void offer(T x, long long j) {
    if (!grape_topk_before(x, j, v[K - 1], i[K - 1])) return;
    v[K - 1] = x;
    i[K - 1] = j;
#pragma unroll
    for (int q = K - 1; q > 0; --q) {
      if (grape_topk_before(v[q], i[q], v[q - 1], i[q - 1])) {
        T tv = v[q];
        v[q] = v[q - 1];
        v[q - 1] = tv;
        long long ti = i[q];
        i[q] = i[q - 1];
        i[q - 1] = ti;
      }
    }
  }
  __device__ __forceinline__ void pop() {
#pragma unroll
    for (int q = 0; q + 1 < K; ++q) {
      v[q] = v[q + 1];
      i[q] = i[q + 1];
    }
    i[K - 1] = -1;
  }
};

// The block's best k (k <= K) of all the threads' lists, in order: emit(t, value, index) on
// thread 0 for t = 0, 1, ... (fewer than k when the row has fewer elements). Every thread of the
// block must call it.
template <class T, int K, class Emit>
__device__ __forceinline__ void grape_topk_merge(GrapeTopKList<T, K>& l, int k, T* smv, long long* smi,
                                                 Emit emit) {
  for (int t = 0; t < k; ++t) {
    T bv = l.v[0];
    long long bi = l.i[0];
    grape_block_best(bv, bi, GrapeTopKBefore(), smv, smi);
    if (bi < 0) break;  // the same on every thread
    if (l.i[0] == bi) l.pop();
    if (threadIdx.x == 0) emit(t, bv, bi);
  }
}

#endif  // GRAPE_KERNELS_TOPK_CUH
