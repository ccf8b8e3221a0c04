// Memory-bound matrix products with W [K][N] (`x @ w`, GPT-2's Conv1D) and at most a few rows, on
// the tensor cores: the same product, work items and epilogue as gemv.cuh's grape_gemv_kn, with
// the weight as mma.sync's A operand (16 columns of the product x 16 k) and the staged rows of A
// as its B operand (8 rows x 16 k):
//
//   out[r][n] = Ops::store(r, n, sum_k A(r, k) * W(k, n))        r < R, n < N, k < K
//
// Why: on the FMA path every 16-byte weight vector costs a warp 8 conversions, 8 * rows FMAs and
// rows shared-memory loads, and the per-row shuffle reductions cost as much again; decode's
// products ran one short wave whose time was that dependent chain (1,200-1,500 instructions per
// warp at 2-3 warps per scheduler; bench/RESULTS.md, thirtieth session). Here a 16-deep slab of
// 64 columns costs a warp 4 weight loads, 16 byte permutes, 2 shared loads and 4 mma.
//
// Layout. A warp covers 64 columns: lane (g, c) = (lane / 4, lane % 4) loads, 16 bytes each, the 8
// columns n0 + 8g .. + 8 of weight rows k = 16s + {2c, 2c + 1, 2c + 8, 2c + 9} of slab s. A 32-bit
// operand register holds two k of one column, so the two rows' halves are paired by byte
// permutes; the column order inside an mma is free (the outputs say which column they are): mma i
// takes columns 8g + 2i (its row g) and 8g + 2i + 1 (row g + 8), and its accumulators are then
// out[2c][8g + 2i], out[2c + 1][8g + 2i], out[2c][8g + 2i + 1], out[2c + 1][8g + 2i + 1].
// The 8 warps of a block split the block's K range slab by slab; shared memory adds their sums.
// Rows are taken 8 at a time (more: another pass over the weight, from L2). K splits across blocks
// meet in distributed shared memory when the splits of a tile are one thread-block cluster, else
// as in gemv.cuh (grape_splitk_finish). In a cluster on sm_90 (Ops::kAsyncExchange) each block
// sends the owner of an output its sum by st.async, which counts its 4 bytes on the owner's
// mbarrier, and the owner waits for its barrier alone: no release fence (ERRBAR) and no second
// cluster barrier (run 224: decode_step 1.1-1.5%, beam_search 1.0% faster). The host checks
// N % 8 == 0 (so every row of W is 16-byte aligned and a lane's 8 columns are all in range or all out).
//
// Weight in shared memory (Ops::kWeightTma, sm_90, K ranges of at most GRAPE_GEMV_MMA_TMA_MAX_K,
// a tensor map from the executor in p->weight_map): the block's [K range][64 columns] of W comes
// by the copy engine, one bulk tensor copy per 64 rows (boxes of 64 x 64, elements past K or N as
// zeros), requested where the register path requests its first slabs, and the warps read their
// operands from there. Why: an SM's ordinary loads return in order, so A's loads (and a fused
// norm's row statistics) issued after the wait queued behind the weight's; the copy engine's do
// not hold them up (bench/RESULTS.md, thirty-fourth session). One copy per weight row instead
// measured slower: issuing 128-384 copies per block delayed its wait (branch
// experiment/gemv-weight-bulk-copy). The 128-byte swizzle stores 16-byte chunk c of row k at
// chunk c ^ (k % 8), so the 8 lanes of a quarter-warp (4 rows, 2 chunks) read distinct banks.
// Otherwise (an older target, a longer K range, no map) the lanes load the weight into
// registers, GRAPE_GEMV_MMA_PS slabs ahead.
//
// Shared memory: A [8][KCS + 8] in A's dtype (KCS = grape_gemv_kcs: 8 rows of a B-operand load fall
// in distinct banks with the 16-byte pad), then floats: row statistics [8][2], the warps' sums
// [8][8][64] and the cluster's sums [8][64] + 8, the exchange's barrier (8 bytes); then, for K
// ranges of at most GRAPE_GEMV_MMA_TMA_MAX_K, the weight tile [KCS][128 bytes] at the next
// 1024-byte boundary and its barrier (8 bytes, 16 with padding). scheduler/launch.h
// (gemv_mma_shared_bytes) mirrors it.
#ifndef GRAPE_KERNELS_GEMV_MMA_CUH
#define GRAPE_KERNELS_GEMV_MMA_CUH

#define GRAPE_GEMV_MMA_TILE 64  // columns per work item
#define GRAPE_GEMV_MMA_PS 4     // slabs per warp in flight (4 x 4 16-byte loads per lane)
#define GRAPE_GEMV_MMA_TMA_MAX_K 512

// Two weight rows' 32-bit words at one pair of columns as the operand registers of those columns:
// low halves (the even column) and high halves (the odd), row r0's value first (the lower k).
__device__ __forceinline__ unsigned grape_pair_even(unsigned r0, unsigned r1) {
  return __byte_perm(r0, r1, 0x5410);
}
__device__ __forceinline__ unsigned grape_pair_odd(unsigned r0, unsigned r1) {
  return __byte_perm(r0, r1, 0x7632);
}
__device__ __forceinline__ unsigned grape_u4_word(const uint4& u, int i) {
  return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

template <class Ops>
__device__ void grape_gemv_kn_mma(const KParams* p, long long item, unsigned char* smem) {
  using W = typename Ops::W;
  using T = typename Ops::T;
  static_assert(sizeof(W) == 2 && sizeof(T) == 2, "gemv_kn_mma: 16-bit weights and rows of one type");
  constexpr int MT = GRAPE_GEMV_MT, TN = GRAPE_GEMV_MMA_TILE, PS = GRAPE_GEMV_MMA_PS,
                WARPS = GRAPE_GEMV_THREADS / 32;
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const long long tiles = (N + TN - 1) / TN;
  // Launched in clusters (scheduler/launch.cpp: sm_90, cluster == splits, one block per item), the
  // blocks of a cluster are one tile's splits and add their sums through distributed shared
  // memory; otherwise (the mono executor, older GPUs) as gemv.cuh, through global memory.
  const unsigned cs = grape_cluster_size();
  if (cs > 1 && cs != p->splits) __trap();
  const long long tile = cs > 1 ? item / cs : item % tiles,
                  split = cs > 1 ? grape_cluster_rank() : item / tiles;
  const long long n0 = tile * TN, k0 = split * p->kchunk;
  const int kn = (int)max(0LL, min(p->kchunk, K - k0)), lda = grape_gemv_kcs(p) + 8;
  T* As = reinterpret_cast<T*>(smem);
  float* st = reinterpret_cast<float*>(smem + MT * lda * sizeof(T));
  float* red = st + 2 * MT;
  float* inc = red + WARPS * MT * TN;  // [cs][share]: the cluster's sums of this block's outputs
  // The barrier that counts the bytes the cluster's blocks store into `inc` (Ops::kAsyncExchange).
  // Recomputed where used, as the weight tile's address below (the register path is at the cap).
  auto xbar = [&] { return reinterpret_cast<unsigned long long*>(inc + 8 * TN + 8); };
#ifdef GRAPE_BULK_COPY
  constexpr bool kAx = Ops::kAsyncExchange;
#else
  constexpr bool kAx = false;
#endif
  const bool ax = kAx && cs > 1;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const bool in_n = n0 + 8 * g < N;
  const int slabs = (kn + 15) / 16;
  const W* wt = Ops::w(p) + k0 * N + n0 + 8 * g;
  // Slab s's rows 16s + {2c, 2c + 1, 2c + 8, 2c + 9}, this lane's 8 columns; zeros past the K range
  // (the next split's rows, or past W's end) and past N.
  auto load = [&](int s, uint4* u) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int kk = 16 * s + 2 * c + (j & 1) + 8 * (j >> 1);
      u[j] = in_n && kk < kn ? grape_ld_stream16(wt + (long long)kk * N) : make_uint4(0, 0, 0, 0);
    }
  };
#if !defined(GRAPE_PERSISTENT) && !defined(GRAPE_BLOCK_SEQUENCE)
  // The next matrix product's weight into L2 (scheduler/prefetch.h; 0 bytes: none), once per
  // block, so that it streams in while this product and whatever follows it run.
  if (item == blockIdx.x) grape_prefetch_l2(p->prefetch, p->prefetch_bytes);
#endif
  // The weight tile by bulk copies, or the first PS slabs of this warp into registers: requested
  // before A is staged (and before the wait for the predecessor where the weight is the program's:
  // gemv.cuh, grape_gemv_wait).
  bool tma = false;
  // The tile at the next 1024-byte boundary of the shared window (the 128-byte swizzle's period).
  // Recomputed where used rather than kept live: the register path is at the 128-register cap.
  auto wtile = [&]() -> unsigned char* {
    unsigned char* t = reinterpret_cast<unsigned char*>(xbar() + 1);
    return t + ((0u - (unsigned)__cvta_generic_to_shared(t)) & 1023u);
  };
  auto wtile_bar = [&]() { return reinterpret_cast<unsigned long long*>(wtile() + grape_gemv_kcs(p) * 128); };
#ifdef GRAPE_BULK_COPY
  if constexpr (Ops::kWeightTma) tma = p->weight_map && grape_gemv_kcs(p) <= GRAPE_GEMV_MMA_TMA_MAX_K;
  if (tma && threadIdx.x == 0) {
    const int boxes = (kn + 63) / 64;
    unsigned char* wsm = wtile();
    unsigned long long* bar = wtile_bar();
    grape_mbar_init(bar);
    grape_mbar_expect(bar, (unsigned)boxes * 64 * 128);
    for (int i = 0; i < boxes; ++i)
      grape_bulk_tensor_load_2d(wsm + i * 64 * 128, p->weight_map, (int)n0, (int)(k0 + 64 * i), bar);
  }
#endif
#ifdef GRAPE_BULK_COPY
  if (ax && threadIdx.x == 0) grape_mbar_init(xbar());  // published by the cluster arrival below
#endif
  uint4 buf[PS][4];
  if (!tma) {
#pragma unroll
    for (int t = 0; t < PS; ++t) load(w + WARPS * t, buf[t]);
  }
  // The barrier's memory is free again once every thread has passed its wait (a later item, or
  // another body of the persistent kernel, may use it).
  auto release = [&] {
#ifdef GRAPE_BULK_COPY
    if (tma && threadIdx.x == 0) grape_mbar_inval(wtile_bar());
    if (ax && threadIdx.x == 0) grape_mbar_inval(xbar());
#endif
  };
  if (!grape_gemv_wait<Ops>(p)) {
#ifdef GRAPE_BULK_COPY
    // Skipped: the copies into this block's shared memory must land before it exits (the first
    // barrier: thread 0 has initialised the mbarrier).
    __syncthreads();
    if (tma) grape_mbar_wait(wtile_bar(), 0);
    __syncthreads();
    release();
#endif
    return;
  }
  // A cluster's blocks store into each other's shared memory only after a barrier says every block
  // has started: its arrival here, its wait just before the first store, long after.
  if (cs > 1) grape_cluster_arrive_relaxed();
  for (long long r0 = 0; r0 < R; r0 += MT) {
    const int rows = (int)min((long long)MT, R - r0);
    if (r0 > 0 && !tma) {
#pragma unroll
      for (int t = 0; t < PS; ++t) load(w + WARPS * t, buf[t]);
    }
    grape_gemv_stage<Ops>(p, As, lda, st, r0, rows, k0, kn, K);  // marks 0 and 1
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    // Rows of A past `rows` were not staged: their operand registers are zero.
    const T* brow = As + g * lda + 2 * c;
    auto slab = [&](int s, const uint4* u) {
      unsigned b[2] = {0u, 0u};
      if (g < rows) {
        b[0] = *reinterpret_cast<const unsigned*>(brow + 16 * s);
        b[1] = *reinterpret_cast<const unsigned*>(brow + 16 * s + 8);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const unsigned x0 = grape_u4_word(u[0], i), x1 = grape_u4_word(u[1], i);
        const unsigned x8 = grape_u4_word(u[2], i), x9 = grape_u4_word(u[3], i);
        const unsigned a[4] = {grape_pair_even(x0, x1), grape_pair_odd(x0, x1), grape_pair_even(x8, x9),
                               grape_pair_odd(x8, x9)};
        GrapeMma<T>::mma(acc[i], a, b);
      }
    };
    if (tma) {
#ifdef GRAPE_BULK_COPY
      if (r0 == 0) grape_mbar_wait(wtile_bar(), 0);
#endif
      const unsigned char* wsm = wtile();
      // Slab s's rows as `load` takes them, from the swizzled tile; zeros past the K range (the
      // next split's rows) and past N.
      for (int s = w; s < slabs; s += WARPS) {
        uint4 u[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int kk = 16 * s + 2 * c + (j & 1) + 8 * (j >> 1);
          u[j] = in_n && kk < kn ? *reinterpret_cast<const uint4*>(wsm + kk * 128 + ((g ^ (kk & 7)) << 4))
                                 : make_uint4(0, 0, 0, 0);
        }
        slab(s, u);
      }
    } else {
      for (int s0 = w; s0 < slabs; s0 += WARPS * PS) {
#pragma unroll
        for (int t = 0; t < PS; ++t) {
          const int s = s0 + WARPS * t;
          if (s < slabs) slab(s, buf[t]);
          load(s + WARPS * PS, buf[t]);
        }
      }
    }
    if (r0 + MT >= R) grape_gemv_weight_read<Ops>();
    // This warp's sums of rows 2c and 2c + 1, columns 8g .. 8g + 7, as two float4 each.
    if (2 * c < rows) {
      float* d0 = red + (w * MT + 2 * c) * TN + 8 * g;
      *reinterpret_cast<float4*>(d0) = make_float4(acc[0][0], acc[0][2], acc[1][0], acc[1][2]);
      *reinterpret_cast<float4*>(d0 + 4) = make_float4(acc[2][0], acc[2][2], acc[3][0], acc[3][2]);
      if (2 * c + 1 < rows) {
        float* d1 = d0 + TN;
        *reinterpret_cast<float4*>(d1) = make_float4(acc[0][1], acc[0][3], acc[1][1], acc[1][3]);
        *reinterpret_cast<float4*>(d1 + 4) = make_float4(acc[2][1], acc[2][3], acc[3][1], acc[3][3]);
      }
    }
    __syncthreads();
    GRAPE_TIMELINE_MARK(p, 2);  // every warp's products summed (the weight has arrived)
    if (cs > 1) {
      // Block q of the cluster owns outputs [q * share, (q + 1) * share) of the tile's rows x 64:
      // every block stores its sums of them (at most two per thread) into the owner's `inc` slot
      // for its rank, then one cluster barrier, then each owner adds its slots in rank order (the
      // same result whatever the timing) and stores through the epilogue. The stores wait for the
      // barrier half arrived at before (every block has started); after the full barrier no block
      // touches another's memory, so none waits for the others to leave.
      const int total = rows * TN, share = (total + (int)cs - 1) / (int)cs;
#ifdef GRAPE_BULK_COPY
      // With Ops::kAsyncExchange the stores are st.async, each counting its bytes on the owner's
      // barrier: the owner waits for cs sums of each of its outputs, and no block waits for the
      // others' stores to be released (the cluster barrier's ERRBAR: 8% of c_fc's samples, run 217).
      if (ax && threadIdx.x == 0) {
        const int owned = max(0, min(share, total - (int)split * share));
        grape_mbar_expect(xbar(), (unsigned)(cs * owned * 4));
      }
#endif
      grape_cluster_wait();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int t = threadIdx.x + h * GRAPE_GEMV_THREADS, m = t / TN, col = t - m * TN;
        if (t < total) {
          float v = 0.0f;
#pragma unroll
          for (int ww = 0; ww < WARPS; ++ww) v += red[(ww * MT + m) * TN + col];
          const int q = t / share;
          if (ax)
            grape_st_async_cluster(inc + split * share + (t - q * share), xbar(), (unsigned)q, v);
          else
            grape_st_cluster(inc + split * share + (t - q * share), (unsigned)q, v);
        }
      }
      if (!ax) {
        grape_cluster_sync();
      } else {
#ifdef GRAPE_BULK_COPY
        if (threadIdx.x < share) grape_mbar_wait(xbar(), (unsigned)(r0 / MT) & 1u);
#endif
      }
      GRAPE_TIMELINE_MARK(p, 3);  // the splits' sums exchanged
      const int t = (int)split * share + threadIdx.x;
      if (threadIdx.x < share && t < total) {
        float v[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) v[q] = q < (int)cs ? inc[q * share + threadIdx.x] : 0.0f;
        float s = 0.0f;
#pragma unroll
        for (int q = 0; q < 8; ++q) s += v[q];
        const int m = t / TN, col = t - m * TN;
        if (n0 + col < N) Ops::store(p, r0 + m, n0 + col, s);
      }
      // A next pass stores into `inc` again: after every owner has read it (this arrival, that
      // pass's wait).
      if (r0 + MT < R) grape_cluster_arrive_relaxed();
      continue;
    }
    for (int t = threadIdx.x; t < rows * TN; t += GRAPE_GEMV_THREADS) {
      const int m = t / TN, col = t - m * TN;
      float s = 0.0f;
#pragma unroll
      for (int ww = 0; ww < WARPS; ++ww) s += red[(ww * MT + m) * TN + col];
      if (n0 + col < N) grape_gemv_emit<Ops>(p, tiles, split, r0 + m, n0 + col, s);
    }
    __syncthreads();
  }
  if (p->splits > 1 && cs == 1) grape_splitk_finish<Ops, 1>(p, tile, tiles, 0, R, n0, TN);
  // Every thread has passed the weight's wait: the __syncthreads after the warps' sums; the
  // exchange's: this one.
  if (ax) __syncthreads();
  release();
}

#endif  // GRAPE_KERNELS_GEMV_MMA_CUH
