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
// The glue (jit/emit_kernels.cpp, topk_one_pass()) supplies the row's elements and the stores of
// the outputs (Ops, below) and loops over the work items; larger k take k passes
// (grape_topk_passes, at the end).
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
//
// Each warp first takes its own best k by k rounds of warp maxima (shuffles only), then warp 0
// takes the best k of those lists the same way: one block barrier in all. A block-wide maximum
// per round (two barriers and a serial pass over the warps' maxima each) made the merge the
// larger part of a beam search's top 10 of 251k candidates.
template <int K, class Emit>
__device__ __forceinline__ void grape_topk_merge_keys(GrapeTopKKeys<K>& l, int k, Emit emit) {
  __shared__ unsigned long long warp_best[32 * K];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  // Keys are distinct (each holds its element's index) except the empty 0, which no list pops
  // into a winner: a warp's round ends its list when its maximum is 0.
  for (int t = 0; t < k; ++t) {
    const unsigned long long m = grape_warp_max_u64(l.k[0]);
    if (lane == 0) warp_best[w * K + t] = m;
    if (m != 0 && l.k[0] == m) l.pop();
  }
  __syncthreads();
  if (w == 0) {
    GrapeTopKKeys<K> all;
    all.init();
    for (int i = lane; i < nw * k; i += 32) {
      const unsigned long long key = warp_best[(i / k) * K + i % k];
      if (key > all.k[K - 1]) all.insert(key);
    }
    for (int t = 0; t < k; ++t) {
      const unsigned long long best = grape_warp_max_u64(all.k[0]);
      if (best == 0) break;  // the same on every lane
      if (all.k[0] == best) all.pop();
      if (lane == 0) emit(t, best);
    }
  }
  __syncthreads();  // warp_best may be reused by the caller's next merge
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

// ---- the one-pass kernels (k <= GRAPE_TOPK_MAX_K) ----------------------------------------------
//
// Ops (jit/emit_kernels.cpp, topk_one_pass()):
//   using T                float (keys, rows split over blocks) or long long (lists, a block per row)
//   static long long rows(p), cnt(p)
//   struct Row; static Row row(p, row_index)   the row's indices, computed once per row
//   static T x(p, const Row&, j)               the (fused) input
//   static void out(p, const Row&, t, T value, long long index)   output t's stores
//
// U elements per thread and step, all loaded before any is offered (16 measured no faster than
// 8: 144 against 145 us for 251k floats on one block of an H100, where ncu shows the block
// issue-bound, 611k warp instructions at 2.2 per cycle: hence the split over blocks). The steps
// go a warp at a time (jw is the same on the warp's lanes: grape_topk_offer_step ends with a
// warp shuffle); thread i loads elements jb + q * blockDim.x of its step.

// Float rows: work item `item` is part item % splits of row item / splits (LaunchDims::splits,
// p->splits; 1 when the row is not split). Each part's best K go to the scratch area and the
// row's last part merges them.
template <class Ops, int K, int U>
__device__ void grape_topk_one_pass_keys(const KParams* p, long long item) {
  const long long rows = Ops::rows(p), cnt = Ops::cnt(p);
  const long long splits = p->splits > 1 ? p->splits : 1, per = (cnt + splits - 1) / splits;
  unsigned* const counters = (unsigned*)p->scratch;
  unsigned long long* const keys = (unsigned long long*)((char*)p->scratch + 8 * rows);
  const long long row_index = item / splits, part = item % splits;
  const long long lo = part * per, hi = grape_min_ll(cnt, lo + per);
  const typename Ops::Row row = Ops::row(p, row_index);
  GrapeTopKKeys<K> l;
  l.init();
  unsigned long long thr = 0;
  for (long long jw = lo + threadIdx.x - (threadIdx.x & 31); jw < hi; jw += U * (long long)blockDim.x) {
    const long long jb = jw + (threadIdx.x & 31);
    float xs[U];
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const long long j = jb + (long long)q * blockDim.x;
      if (j < hi) xs[q] = Ops::x(p, row, j);
    }
    grape_topk_offer_step<K, U>(l, thr, xs, jb, blockDim.x, hi);
  }
  if (splits > 1 && !grape_topk_gather_parts(l, K, splits, keys + (row_index * splits + part) * K,
                                             keys + row_index * splits * K, counters + 2 * row_index))
    return;
  grape_topk_merge_keys(l, K, [&](long long t, unsigned long long key) {
    Ops::out(p, row, t, grape_topk_key_value(key), grape_topk_key_index(key));
  });
}

// Integer rows: one block per row, (value, index) lists.
template <class Ops, int K, int U>
__device__ void grape_topk_one_pass_list(const KParams* p, long long row_index) {
  __shared__ long long smv[32];
  __shared__ long long smi[32];
  const long long cnt = Ops::cnt(p);
  const long long lo = 0, hi = cnt;
  const typename Ops::Row row = Ops::row(p, row_index);
  GrapeTopKList<long long, K> l;
  l.init();
  for (long long jw = lo + threadIdx.x - (threadIdx.x & 31); jw < hi; jw += U * (long long)blockDim.x) {
    const long long jb = jw + (threadIdx.x & 31);
    long long xs[U];
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const long long j = jb + (long long)q * blockDim.x;
      if (j < hi) xs[q] = Ops::x(p, row, j);
    }
#pragma unroll
    for (int q = 0; q < U; ++q)
      if (jb + (long long)q * blockDim.x < hi) l.offer(xs[q], jb + (long long)q * blockDim.x);
  }
  grape_topk_merge(l, K, smv, smi,
                   [&](long long t, long long bv, long long bi) { Ops::out(p, row, t, bv, bi); });
}

// ---- k > GRAPE_TOPK_MAX_K: k passes ------------------------------------------------------------

// Top-k of one row by k block-wide selections (one block per row): pass t finds the best element
// in topk order after the previous pass's (value, index), so the row is read k times; thread 0
// stores each. Fewer than k outputs when the row has fewer elements.
//
// Ops (jit/emit_kernels.cpp, topk()):
//   using T                          float or long long
//   static constexpr long long kK    k
//   static long long rows(p), cnt(p)
//   struct Row; static Row row(p, row_index)   the row's indices, computed once per row
//   static T x(p, const Row&, j)               the (fused) input
//   static void out(p, const Row&, t, T value, long long index)   output t's stores
template <class Ops>
__device__ void grape_topk_passes(const KParams* p, long long row_index) {
  using T = typename Ops::T;
  __shared__ T smv[32];
  __shared__ long long smi[32];
  auto before = [](T a, long long ia, T b, long long ib) { return grape_topk_before(a, ia, b, ib); };
  const long long cnt = Ops::cnt(p);
  const typename Ops::Row row = Ops::row(p, row_index);
  T pv = 0;
  long long pi = -1;
  for (long long t = 0; t < Ops::kK; ++t) {
    T bv = 0;
    long long bi = -1;
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      const T xv = Ops::x(p, row, j);
      if ((pi < 0 || before(pv, pi, xv, j)) && before(xv, j, bv, bi)) {
        bv = xv;
        bi = j;
      }
    }
    grape_block_best(bv, bi, before, smv, smi);
    pv = bv;
    pi = bi;
    if (threadIdx.x == 0 && bi >= 0) Ops::out(p, row, t, bv, bi);
  }
}

#endif  // GRAPE_KERNELS_TOPK_CUH
