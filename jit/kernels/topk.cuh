// Top-k of long rows for small k (k <= GRAPE_TOPK_MAX_K): one pass over the row, the same order
// as runtime/cpu/gather.cpp topk (grape_topk_before: NaN first, then larger values, ties to the
// lower index).
//
// Each thread keeps the best K elements it has seen in registers, sorted best first; then K
// rounds of a block-wide best among the threads' heads: the winner is output t and its thread
// drops it. A beam search's top 10 of 5 x 50257 candidates read the row 10 times with the k-pass
// kernel (2.7 ms on an H100, one block); this reads it once.
//
// Float rows (the common case) compare keys, not (value, index) pairs: one unsigned 64-bit
// integer per element whose integer order is the topk order (the value's bits made monotone, NaN
// highest, -0 as +0; then the complement of the index), so inserting is a branch-free network of
// min/max. An element is offered only if it beats the largest K-th key among the lanes of its
// warp (that lane already holds K better elements), so after the first few elements almost none
// is: a warp whose lanes each insert one element in ten (random data) would otherwise run the
// insertion for nearly every element (0.43 ms for 251k elements with (value, index) pairs and
// branches). Integer rows keep the (value, index) list.
//
// A long row is split over blocks (scheduler/launch.cpp: at least kTopKElementsPerBlock elements
// each, the rows filling the GPU twice): each block's best k go to the scratch area and the row's
// last block merges them (grape_topk_gather_parts).
//
// The glue (jit/emit_kernels.cpp, topk()) offers every element of a row and emits the outputs
// from the merge's callback on thread 0.
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

// ---- float rows: 64-bit keys ------------------------------------------------------------------

// Rows of up to 2^32 elements (the index takes the key's low half).
__device__ __forceinline__ unsigned long long grape_topk_key(float v, long long j) {
  unsigned u;
  if (isnan(v)) {
    u = 0xffffffffu;
  } else {
    u = __float_as_uint(v == 0.0f ? 0.0f : v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  return ((unsigned long long)u << 32) | (unsigned long long)(0xffffffffu - (unsigned)j);
}
__device__ __forceinline__ float grape_topk_key_value(unsigned long long k) {
  unsigned u = (unsigned)(k >> 32);
  if (u == 0xffffffffu) return __int_as_float(0x7fffffff);
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}
__device__ __forceinline__ long long grape_topk_key_index(unsigned long long k) {
  return (long long)(0xffffffffu - (unsigned)(k & 0xffffffffull));
}

template <int K>
struct GrapeTopKKeys {
  unsigned long long k[K];  // largest first; 0: empty (below every element's key)

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int q = 0; q < K; ++q) k[q] = 0;
  }
  // x must beat k[K - 1]: it replaces it and moves up by a min/max network.
  __device__ __forceinline__ void insert(unsigned long long x) {
    k[K - 1] = x;
#pragma unroll
    for (int q = K - 1; q > 0; --q) {
      unsigned long long hi = k[q - 1] > k[q] ? k[q - 1] : k[q];
      unsigned long long lo = k[q - 1] > k[q] ? k[q] : k[q - 1];
      k[q - 1] = hi;
      k[q] = lo;
    }
  }
  __device__ __forceinline__ void pop() {
#pragma unroll
    for (int q = 0; q + 1 < K; ++q) k[q] = k[q + 1];
    k[K - 1] = 0;
  }
};

__device__ __forceinline__ unsigned long long grape_warp_max_u64(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

// Offers a warp's elements of one step: keys[q] of element j0 + q * stride (valid where
// j0 + q * stride < cnt). Every lane of the warp must call it (the threshold is a warp shuffle).
template <int K, int U>
__device__ __forceinline__ void grape_topk_offer_step(GrapeTopKKeys<K>& l, unsigned long long& thr,
                                                      const float* xs, long long j0, long long stride,
                                                      long long cnt) {
#pragma unroll
  for (int q = 0; q < U; ++q) {
    const long long j = j0 + q * stride;
    if (j < cnt) {
      const unsigned long long key = grape_topk_key(xs[q], j);
      if (key > thr && key > l.k[K - 1]) l.insert(key);
    }
  }
  thr = grape_warp_max_u64(l.k[K - 1]);
}

// The block's best k (k <= K) keys in order: emit(t, key) on thread 0 for t = 0, 1, ... (fewer
// than k when the row has fewer elements). Every thread of the block must call it.
template <int K, class Emit>
__device__ __forceinline__ void grape_topk_merge_keys(GrapeTopKKeys<K>& l, int k, Emit emit) {
  __shared__ unsigned long long best_of_warp[32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int t = 0; t < k; ++t) {
    unsigned long long m = grape_warp_max_u64(l.k[0]);
    if (lane == 0) best_of_warp[w] = m;
    __syncthreads();
    unsigned long long best = best_of_warp[0];
    for (int i = 1; i < nw; ++i) best = best_of_warp[i] > best ? best_of_warp[i] : best;
    __syncthreads();
    if (best == 0) break;  // the same on every thread
    if (l.k[0] == best) l.pop();
    if (threadIdx.x == 0) emit(t, best);
  }
}

// A row split over `splits` blocks (LaunchDims::splits): each block publishes the best k keys of
// its part in `mine` (its slot of the row's `splits` x k keys, `all`), and the row's last block —
// the one whose increment of the row's counter completes it — gathers them all into its lists.
// Returns true on that block (which then merges and emits the row, as an unsplit block does) and
// leaves the counter at zero for the next launch. Every thread of the block must call it.
template <int K>
__device__ __forceinline__ bool grape_topk_gather_parts(GrapeTopKKeys<K>& l, int k, long long splits,
                                                        unsigned long long* mine,
                                                        const unsigned long long* all, unsigned* counter) {
  __shared__ unsigned last;
  if (threadIdx.x < k) mine[threadIdx.x] = 0;  // a part with fewer than k elements
  grape_topk_merge_keys(l, k, [&](int t, unsigned long long key) { mine[t] = key; });
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == (unsigned)(splits - 1);
  __syncthreads();
  if (!last) return false;
  __threadfence();
  l.init();
  for (long long i = threadIdx.x; i < splits * k; i += blockDim.x) {
    const unsigned long long key = __ldcg(all + i);
    if (key > l.k[K - 1]) l.insert(key);
  }
  if (threadIdx.x == 0) *counter = 0;
  return true;
}

#endif  // GRAPE_KERNELS_TOPK_CUH
