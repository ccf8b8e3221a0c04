// Row normalisations: softmax, log_softmax, layer_norm and rms_norm, the same functions as
// runtime/cpu/norm.cpp,
//
//   softmax      y[j] = exp(x[j] - max x) / sum exp(x - max x)
//   log_softmax  y[j] = (x[j] - max x) - log(sum exp(x - max x))
//   layer_norm   y[j] = (x[j] - mean) * inv,  inv = 1 / sqrt(mean (x - mean)^2 + eps)
//   rms_norm     y[j] = x[j] * inv,           inv = 1 / sqrt(mean x^2 + eps)
//
// then Ops::out(p, row, j, y) applies the rest (layer_norm's gamma and beta, the rounding to the
// output type, fused epilogue ops) and stores.
//
// grape_row_norm_warp: rows of at most 32 * PER_LANE elements, one warp per row (or two rows at
// once), four warps per block of 128 threads: each lane reads its PER_LANE elements (j = lane +
// 32 t, coalesced) once into registers and the statistics are warp shuffles, so there is no
// barrier and x is read once.
//
// grape_row_norm_block: rows of any length (longer ones, or a runtime length), one block per row.
// It reads x once per pass (a softmax's maximum and sum in one pass) and synchronises the block
// per statistic: a 128 x 768 layer norm took 7 us on an H100 that way, hence the warp kernel.
//
// Ops (jit/emit_kernels.cpp, norm_ops()), the same for both:
//   static constexpr int kKind     kGrapeSoftmax, kGrapeLogSoftmax, kGrapeLayerNorm, kGrapeRmsNorm
//   static constexpr float kEps    the norms' epsilon
//   static long long rows(p), cnt(p)
//   struct Row; static Row row(p, row_index)   the row's indices, computed once per row
//   static float x(p, const Row&, j)           the (fused) input
//   static void out(p, const Row&, j, float y)
#ifndef GRAPE_KERNELS_ROW_NORM_CUH
#define GRAPE_KERNELS_ROW_NORM_CUH

// Four rows per block of 128 threads: BERT at batch 1 (128 rows) still spreads over 32 blocks.
#define GRAPE_ROW_NORM_WARPS 4

constexpr int kGrapeSoftmax = 0, kGrapeLogSoftmax = 1, kGrapeLayerNorm = 2, kGrapeRmsNorm = 3;

// R rows of one warp at once (rows first + step * r): every row's loads are issued before any
// statistic waits on them, and the R reductions interleave. Inside a block sequence (one block
// for the whole kernel) one row after the other cost two memory round trips per step: 100 chained
// softmaxes of 8 rows took 1.25 us a step that way, 1.00 with two rows at once (run 125).
template <class Ops, int PER_LANE, int R>
__device__ void grape_row_norm_warp(const KParams* p, long long first, long long step) {
  const int lane = threadIdx.x & 31;
  const long long cnt = Ops::cnt(p);
  typename Ops::Row row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = Ops::row(p, first + step * r);
  float v[R][PER_LANE];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      const long long j = lane + 32LL * t;
      v[r][t] = j < cnt ? Ops::x(p, row[r], j) : 0.0f;
    }
  auto in = [&](int t) { return lane + 32LL * t < cnt; };
  float a[R], b[R];  // softmax: max, sum of exp; norms: mean, inv
  if constexpr (Ops::kKind == kGrapeSoftmax || Ops::kKind == kGrapeLogSoftmax) {
    float mx[R], sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      mx[r] = -__int_as_float(0x7f800000);
#pragma unroll
      for (int t = 0; t < PER_LANE; ++t)
        if (in(t)) mx[r] = grape_fmax_nan(mx[r], v[r][t]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < R; ++r) mx[r] = grape_fmax_nan(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], o));
#pragma unroll
    for (int r = 0; r < R; ++r) {
      sum[r] = 0.0f;
#pragma unroll
      for (int t = 0; t < PER_LANE; ++t)
        if (in(t)) sum[r] += expf(v[r][t] - mx[r]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < R; ++r) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], o);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      a[r] = mx[r];
      b[r] = sum[r];
    }
  } else {
    float mean[R], sq[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      mean[r] = 0.0f;
      if constexpr (Ops::kKind == kGrapeLayerNorm) {
#pragma unroll
        for (int t = 0; t < PER_LANE; ++t)
          if (in(t)) mean[r] += v[r][t];
      }
    }
    if constexpr (Ops::kKind == kGrapeLayerNorm) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int r = 0; r < R; ++r) mean[r] += __shfl_xor_sync(0xffffffffu, mean[r], o);
#pragma unroll
      for (int r = 0; r < R; ++r) mean[r] /= (float)cnt;
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      sq[r] = 0.0f;
#pragma unroll
      for (int t = 0; t < PER_LANE; ++t)
        if (in(t)) {
          const float d = v[r][t] - mean[r];
          sq[r] += d * d;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < R; ++r) sq[r] += __shfl_xor_sync(0xffffffffu, sq[r], o);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      a[r] = mean[r];
      b[r] = 1.0f / sqrtf(sq[r] / (float)cnt + Ops::kEps);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < PER_LANE; ++t) {
      if (!in(t)) continue;
      float y;
      if constexpr (Ops::kKind == kGrapeSoftmax)
        y = expf(v[r][t] - a[r]) / b[r];
      else if constexpr (Ops::kKind == kGrapeLogSoftmax)
        y = (v[r][t] - a[r]) - logf(b[r]);
      else
        y = (v[r][t] - a[r]) * b[r];
      Ops::out(p, row[r], lane + 32LL * t, y);
    }
}

// Rows [GRAPE_ROW_NORM_WARPS * blockIdx.x + warp, ...), grid-stride. Inside a block sequence
// (GRAPE_BLOCK_SEQUENCE: one block does the whole kernel) two at a time where a warp has two left
// and the rows are short (PER_LANE <= 8: 256 columns). Not in a kernel of its own, where a warp
// rarely has two rows: the second instantiation's code alone made each of 100 chained softmax
// kernels 0.12 us slower in a graph (run 125: instruction fetch at the kernel's start).
template <class Ops, int PER_LANE>
__device__ void grape_row_norm(const KParams* p) {
  const long long rows = Ops::rows(p);
  const long long stride = (long long)gridDim.x * GRAPE_ROW_NORM_WARPS;
  for (long long row = (long long)blockIdx.x * GRAPE_ROW_NORM_WARPS + (threadIdx.x >> 5); row < rows;) {
#ifdef GRAPE_BLOCK_SEQUENCE
    constexpr bool kTwoRows = PER_LANE <= 8;
#else
    constexpr bool kTwoRows = false;
#endif
    if constexpr (kTwoRows) {
      if (row + stride < rows) {
        grape_row_norm_warp<Ops, PER_LANE, 2>(p, row, stride);
        row += 2 * stride;
        continue;
      }
    }
    grape_row_norm_warp<Ops, PER_LANE, 1>(p, row, stride);
    row += stride;
  }
}

// One row per block of blockDim.x threads (a multiple of 32; the glue gives rows of known length
// from 8192 on 1024 threads: one block must keep enough loads in flight to read a long row at a
// useful rate), or per thread-block cluster of `nc` such blocks (sm_90, scheduler/launch.cpp: few
// long rows, which would leave most of the GPU idle), block `rank` of the cluster taking the
// elements j = rank * blockDim.x + i + nc * blockDim.x * t of thread i. Each block reduces its
// statistics, then the cluster combines the blocks' in rank order through distributed shared
// memory (cluster.cuh), so the result does not depend on timing.
//
// softmax and log_softmax read the row once for the maximum and the sum together: each thread
// takes GRAPE_BLOCK_PASS_U elements at a time (their loads issued together) and keeps the largest
// element it has seen and the sum of exp(x - that), rescaled when a group raises the maximum;
// then the block's maximum, and each thread's sum rescaled to it. The output pass issues each
// group's loads before its stores. (Beam search's 5 x 50257 log_softmax: 37.6 -> 29.0 us under
// ncu, beam_search 98.71 -> 97.97 ms, run 129, one block per row: 5 SMs issuing ~80 instructions
// per element, hence the clusters.) -inf elements add exp(-inf) = 0 and are skipped, so a thread
// (or block) that saw nothing else keeps a sum of 0 and adds 0, not 0 * exp(-inf - -inf) = NaN; a
// row of only -inf still comes out NaN (0 / 0, log 0 - NaN), and a NaN or +inf anywhere makes the
// maximum or the sum NaN, as the CPU's two passes do. layer_norm and rms_norm take a pass per
// statistic (the mean, then the squares).
struct GrapeMaxSum {
  float m, s;  // a maximum, and a sum of exp(x - m)
};
struct GrapeSoftmaxCombine {
  __device__ GrapeMaxSum operator()(GrapeMaxSum a, GrapeMaxSum b) const {
    const float nm = grape_fmax_nan(a.m, b.m);
    return {nm, (a.s == 0.0f ? 0.0f : a.s * expf(a.m - nm)) + (b.s == 0.0f ? 0.0f : b.s * expf(b.m - nm))};
  }
};

template <class Ops>
__device__ void grape_row_norm_block(const KParams* p, long long row_index, unsigned rank = 0, unsigned nc = 1) {
  __shared__ float sm[32];
  constexpr int U = GRAPE_BLOCK_PASS_U;
  const long long cnt = Ops::cnt(p);
  const long long first = (long long)rank * blockDim.x + threadIdx.x, step = (long long)nc * blockDim.x;
  const typename Ops::Row row = Ops::row(p, row_index);
  const float kNegInf = -__int_as_float(0x7f800000);
  auto x = [&](long long j) { return Ops::x(p, row, j); };
  float a, b;  // softmax: max, sum of exp; norms: mean, inv
  if constexpr (Ops::kKind == kGrapeSoftmax || Ops::kKind == kGrapeLogSoftmax) {
    // U elements at a time, their loads issued together: the running maximum moves once per
    // group and the sum is rescaled once.
    float tmx = kNegInf, tsum = 0.0f;
    for (long long j0 = first; j0 < cnt; j0 += U * step) {
      float v[U];
#pragma unroll
      for (int q = 0; q < U; ++q) {
        const long long j = j0 + q * step;
        v[q] = j < cnt ? x(j) : kNegInf;
      }
      float gm = kNegInf;
#pragma unroll
      for (int q = 0; q < U; ++q)
        if (v[q] != kNegInf) gm = grape_fmax_nan(gm, v[q]);
      const float nm = grape_fmax_nan(tmx, gm);
      if (nm == kNegInf) continue;  // only -inf so far: they add nothing
      float add = 0.0f;
#pragma unroll
      for (int q = 0; q < U; ++q)
        if (v[q] != kNegInf) add += expf(v[q] - nm);
      tsum = (tsum == 0.0f ? 0.0f : tsum * expf(tmx - nm)) + add;
      tmx = nm;
    }
    a = grape_block_reduce(tmx, GrapeMax(), sm);
    b = grape_block_reduce(tsum == 0.0f ? 0.0f : tsum * expf(tmx - a), GrapeAdd(), sm);
    if (nc > 1) {
      const GrapeMaxSum all = grape_cluster_combine(GrapeMaxSum{a, b}, GrapeSoftmaxCombine());
      a = all.m;
      b = all.s;
    }
  } else {
    float mean = 0.0f;
    if constexpr (Ops::kKind == kGrapeLayerNorm) {
      grape_span_pass(first, step, cnt, x, [&](long long, float v) { mean += v; });
      mean = grape_block_reduce(mean, GrapeAdd(), sm);
      if (nc > 1) mean = grape_cluster_combine(mean, GrapeAdd());
      mean /= (float)cnt;
    }
    float sq = 0.0f;
    grape_span_pass(first, step, cnt, x, [&](long long, float v) {
      const float d = v - mean;
      sq += d * d;
    });
    sq = grape_block_reduce(sq, GrapeAdd(), sm);
    if (nc > 1) sq = grape_cluster_combine(sq, GrapeAdd());
    a = mean;
    b = 1.0f / sqrtf(sq / (float)cnt + Ops::kEps);
  }
  // The output: each group's loads before any of its stores (a store may alias an input).
  const float lb = Ops::kKind == kGrapeLogSoftmax ? logf(b) : 0.0f;
  grape_span_pass(first, step, cnt, x, [&](long long j, float v) {
    float y;
    if constexpr (Ops::kKind == kGrapeSoftmax)
      y = expf(v - a) / b;
    else if constexpr (Ops::kKind == kGrapeLogSoftmax)
      y = (v - a) - lb;
    else
      y = (v - a) * b;
    Ops::out(p, row, j, y);
  });
}

// The kernel's rows (grape_cluster_rows, cluster.cuh).
template <class Ops>
__device__ void grape_row_norm_rows(const KParams* p) {
  grape_cluster_rows(Ops::rows(p), [&](long long row, unsigned rank, unsigned nc) { grape_row_norm_block<Ops>(p, row, rank, nc); });
}

#endif  // GRAPE_KERNELS_ROW_NORM_CUH
