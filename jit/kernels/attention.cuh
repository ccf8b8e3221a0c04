// Fused attention: `softmax(chain(q @ k^T)) @ v` in one kernel, the scores never in global memory.
// For each batch-head b and query row i (S queries, KV keys, head widths DK and DV):
//
//   x[j]   = Ops::score(b, i, j, sum_d q[b][i][d] * k[b][j][d])   the softmax input: the rounded
//                                                                 product through the fused chain
//                                                                 (scale, mask, ...)
//   p[j]   = Ops::prob(exp(x[j] - max x) / sum exp(x - max x))     rounded to the softmax's dtype
//   out[d] = Ops::store(b, i, d, sum_j p[j] * v[b][j][d])          rounding and the epilogue
//
// The semantics are those of the unfused ops (runtime/cpu): the same roundings at the same points;
// only the order of the float sums differs. Two passes over the keys: the first computes the scores
// and a running (max, sum of exponentials) per lane, merged per row; the second turns scores into
// probabilities and accumulates p * v. Scores are kept in shared memory between the passes when
// they fit (p->kchunk != 0), else recomputed.
//
// Work item: (b, a group of ROWS = p->splits query rows), ROWS in {1, 2, 4, 8}. The 8 warps of a
// block are ROWS rows x (8 / ROWS) key slices: warp (r, s) takes every (8/ROWS)-th block of 32 keys
// of row r, so a decode step (one query row) still spreads its keys over the whole block. In a
// block of 32 keys lane l owns key j0 + l for the scores (a dot product against a 32 x 32 tile of
// k staged by the warp in shared memory, coalesced), and dims l, l + 32, ... for the output. The
// key slices' partial outputs meet in shared memory and are added in slice order (deterministic).
//
// Ops (generated per kernel by jit/emit_kernels.cpp):
//   static long long S(p), KV(p), DK(p), DV(p)
//   static float q(p, b, i, d), k(p, b, j, d), v(p, b, j, d)
//   typedef T; static constexpr bool kRows; static const T* k_at(p, b, j, d), v_at(p, b, j, d)
//                                          addresses of k and v elements when both are buffers
//                                          seen through views (kRows), else unused
//   static float score(p, b, i, j, float dot)
//   static float prob(float x)
//   static void store(p, b, i, d, float acc)
// Shared memory (floats, dynamic; scheduler/launch.cpp mirrors the size):
//   [ROWS][DKP] q rows | [8][32][33] per-warp k tiles (later the partial outputs) | [8][2] row
//   statistics | [ROWS][KVP] scores when cached.          DKP, KVP: DK, KV rounded up to 32.
#ifndef GRAPE_KERNELS_ATTENTION_CUH
#define GRAPE_KERNELS_ATTENTION_CUH

#define GRAPE_ATTN_WARPS 8
#define GRAPE_ATTN_TILE (32 * 33)

// Merges the softmax statistics (m, l) = (max, sum of exp(x - max)) of two sets of scores. An
// empty set is (-inf, 0); a NaN max stays NaN, as in the unfused softmax.
__device__ __forceinline__ void grape_attn_merge(float& m, float& l, float mo, float lo) {
  const float mn = grape_fmax_nan(m, mo);
  const float a = l == 0.0f ? 0.0f : l * expf(m - mn);
  const float c = lo == 0.0f ? 0.0f : lo * expf(mo - mn);
  m = mn;
  l = a + c;
}

// Lane l's dot product q . k[j0 + l] over the head width, 32 dims at a time: the warp stages a
// 32 keys x 32 dims tile of k (each load coalesced across lanes), then each lane reads its key's
// row (padded to 33: no bank conflicts). q is zero beyond DK.
template <class Ops>
__device__ __forceinline__ float grape_attn_dot(const KParams* p, long long b, long long j0, long long KV,
                                                long long DK, const float* q, float* tile, int lane) {
  float dot = 0.0f;
  for (long long d0 = 0; d0 < DK; d0 += 32) {
    // All 32 loads into registers before any store: the loads go through generic pointers, which
    // the compiler must assume may alias the tile, so interleaved stores would serialise them
    // (one memory round trip per key instead of one per tile).
    float r[32];
#pragma unroll
    for (int kk = 0; kk < 32; ++kk) {
      const long long j = j0 + kk, d = d0 + lane;
      r[kk] = (j < KV && d < DK) ? Ops::k(p, b, j, d) : 0.0f;
    }
    __syncwarp();
#pragma unroll
    for (int kk = 0; kk < 32; ++kk) tile[kk * 33 + lane] = r[kk];
    __syncwarp();
#pragma unroll 8
    for (int dd = 0; dd < 32; ++dd) dot += q[d0 + dd] * tile[lane * 33 + dd];
  }
  return dot;
}

// q . (eight k values): four interleaved partial sums, so a row's products are a chain of DK / 4
// dependent FMAs, not DK; q (floats in shared memory, 16-byte aligned) read four at a time.
__device__ __forceinline__ void grape_attn_dot8(const float* q, const float* f, float (&acc)[4]) {
  const float4 a = *reinterpret_cast<const float4*>(q), b = *reinterpret_cast<const float4*>(q + 4);
  acc[0] = fmaf(a.x, f[0], acc[0]);
  acc[1] = fmaf(a.y, f[1], acc[1]);
  acc[2] = fmaf(a.z, f[2], acc[2]);
  acc[3] = fmaf(a.w, f[3], acc[3]);
  acc[0] = fmaf(b.x, f[4], acc[0]);
  acc[1] = fmaf(b.y, f[5], acc[1]);
  acc[2] = fmaf(b.z, f[6], acc[2]);
  acc[3] = fmaf(b.w, f[7], acc[3]);
}

// Whether key row j is read by 16-byte loads: inside KV, DK whole vectors of 8, aligned. Where it
// is, grape_attn_dot_row and grape_attn_dot_vecs compute the same sums in the same order.
template <class Ops>
__device__ __forceinline__ bool grape_attn_row_vec(const KParams* p, long long b, long long j, long long KV,
                                                   long long DK) {
  return j < KV && DK % 8 == 0 && (reinterpret_cast<unsigned long long>(Ops::k_at(p, b, j, 0)) & 15) == 0;
}

// Eight consecutive elements from a 16-byte aligned address (one 16-bit vector or two float ones).
template <class T>
__device__ __forceinline__ void grape_attn_load8(const T* r, float* f) {
  if constexpr (GrapeVec<T>::kN == 8) {
    GrapeVec<T>::unpack(GRAPE_LDG(reinterpret_cast<const uint4*>(r)), f);
  } else {
    static_assert(GrapeVec<T>::kN == 4, "attention: 16-byte vectors of 8 or 4 elements");
    GrapeVec<T>::unpack(GRAPE_LDG(reinterpret_cast<const uint4*>(r)), f);
    GrapeVec<T>::unpack(GRAPE_LDG(reinterpret_cast<const uint4*>(r + 4)), f + 4);
  }
}

// The dot product of q with a key row already loaded (KVN vectors of 8: 16-bit types; DK == 8 * KVN).
template <class Ops, int KVN>
__device__ __forceinline__ float grape_attn_dot_vecs(const uint4 (&u)[KVN], const float* q) {
  static_assert(GrapeVec<typename Ops::T>::kN == 8, "attention: keys prefetched as 16-bit vectors");
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int t = 0; t < KVN; ++t) {
    float f[8];
    GrapeVec<typename Ops::T>::unpack(u[t], f);
    grape_attn_dot8(q + 8 * t, f, acc);
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// The same dot product when k's rows are contiguous in memory (Ops::kRows and a unit stride,
// checked by the caller): lane l reads key j's row itself, 16 bytes per load when the row is
// aligned, from one address computation per row.
template <class Ops>
__device__ __forceinline__ float grape_attn_dot_row(const KParams* p, long long b, long long j, long long KV,
                                                    long long DK, const float* q) {
  using T = typename Ops::T;
  if (j >= KV) return 0.0f;
  const T* kr = Ops::k_at(p, b, j, 0);
  if (grape_attn_row_vec<Ops>(p, b, j, KV, DK)) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (long long d0 = 0; d0 < DK; d0 += 8) {
      float f[8];
      grape_attn_load8(kr + d0, f);
      grape_attn_dot8(q + d0, f, acc);
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
  float dot = 0.0f;
#pragma unroll 8
  for (long long d = 0; d < DK; ++d) dot += q[d] * GrapeVec<T>::one(kr, d);
  return dot;
}

// v rows by 16-byte loads (the row-pointer case with DV = LPR * kN, LPR a power of two <= 32):
// LPR lanes read one row, so a load instruction covers 32 / LPR keys of the warp's block of 32 and
// each lane needs LPR loads per block, all in flight at once. Lane l holds dims (l % LPR) * kN ...
template <class Ops, int LPR>
__device__ __forceinline__ void grape_attn_v_load(const KParams* p, long long b, long long j0, long long KV,
                                                  int lane, uint4 (&u)[LPR]) {
  constexpr int RPL = 32 / LPR, V = GrapeVec<typename Ops::T>::kN;
  const int g = lane / LPR, c = lane % LPR;
#pragma unroll
  for (int t = 0; t < LPR; ++t) {
    const long long j = j0 + t * RPL + g;
    u[t] = j < KV ? GRAPE_LDG(reinterpret_cast<const uint4*>(Ops::v_at(p, b, j, (long long)c * V)))
                  : make_uint4(0, 0, 0, 0);
  }
}

// acc += p[j] * v[j] for the block's keys held in `u`; p[j0 + l] is lane l's probability `pj`.
template <class Ops, int LPR>
__device__ __forceinline__ void grape_attn_v_add(const uint4 (&u)[LPR], float pj, int lane,
                                                 float (&acc)[GrapeVec<typename Ops::T>::kN]) {
  constexpr int RPL = 32 / LPR, V = GrapeVec<typename Ops::T>::kN;
  const int g = lane / LPR;
#pragma unroll
  for (int t = 0; t < LPR; ++t) {
    const float pk = __shfl_sync(0xffffffffu, pj, t * RPL + g);
    float f[V];
    GrapeVec<typename Ops::T>::unpack(u[t], f);
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = fmaf(pk, f[e], acc[e]);
  }
}

// One work item. DVT = ceil(DV / 32): output dims per lane. LPR: lanes per v row for 16-byte v loads
// (DV / kN when that is a power of two <= 32, else 0: element loads). KVN: 16-byte vectors in a key
// row when the keys are 16-bit rows of at most 8 vectors (DK == 8 * KVN), else 0; a warp's first
// key row per lane is then requested before q is staged, with its first v rows, so the kernel
// waits for global memory once before the scores rather than twice.
template <class Ops, int DVT, int LPR, int KVN = 0>
__device__ void grape_attention(const KParams* p, long long item, float* smem) {
  const long long S = Ops::S(p), KV = Ops::KV(p), DK = Ops::DK(p), DV = Ops::DV(p);
  const int rows = (int)p->splits, slices = GRAPE_ATTN_WARPS / rows;
  const long long groups = (S + rows - 1) / rows;
  const long long b = item / groups, i0 = (item % groups) * rows;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, r = w / slices, s = w % slices;
  const long long i = i0 + r;
  const bool live = i < S;  // the same for the whole warp
  const long long dkp = (DK + 31) / 32 * 32, kvp = (KV + 31) / 32 * 32;
  float* qs = smem;
  float* tiles = qs + rows * dkp;
  float* tile = tiles + w * GRAPE_ATTN_TILE;
  float* stats = tiles + GRAPE_ATTN_WARPS * GRAPE_ATTN_TILE;
  float* cache = p->kchunk ? stats + 2 * GRAPE_ATTN_WARPS + r * kvp : nullptr;
  const float neg_inf = -__int_as_float(0x7f800000);

  // Rows of k and v read through row pointers when both have unit stride along the head width.
  bool rows_ok = false;
  if constexpr (Ops::kRows)
    rows_ok = (DK < 2 || Ops::k_at(p, b, 0, 1) == Ops::k_at(p, b, 0, 0) + 1) &&
              (DV < 2 || Ops::v_at(p, b, 0, 1) == Ops::v_at(p, b, 0, 0) + 1);

  // v rows by vector loads when they are aligned and a whole number of vectors apart.
  bool vrows = false;
  constexpr int LPRV = LPR > 0 ? LPR : 1;
  if constexpr (Ops::kRows && LPR > 0) {
    using T = typename Ops::T;
    const T* v0 = Ops::v_at(p, b, 0, 0);
    vrows = rows_ok && (reinterpret_cast<unsigned long long>(v0) & 15) == 0 &&
            (KV < 2 || (Ops::v_at(p, b, 1, 0) - v0) % GrapeVec<T>::kN == 0);
  }
  // The v rows of this warp's first block of keys are requested now (when they take few
  // registers), so that they arrive with the k rows and pass 2 starts without a memory wait.
  constexpr bool kPrefetchV = LPR > 0 && LPR <= 8;
  uint4 vpre[LPRV];
  if constexpr (kPrefetchV)
    if (vrows && live) grape_attn_v_load<Ops, LPRV>(p, b, (long long)s * 32, KV, lane, vpre);
  // So is this lane's key row of the warp's first block (its scores' operand), before q.
  constexpr int KVNV = KVN > 0 ? KVN : 1;
  uint4 kpre[KVNV];
  bool kpre_ok = false;
  if constexpr (KVN > 0) {
    const long long j = (long long)s * 32 + lane;
    kpre_ok = live && rows_ok && DK == 8 * KVN && grape_attn_row_vec<Ops>(p, b, j, KV, DK);
    if (kpre_ok) {
      const uint4* kr = reinterpret_cast<const uint4*>(Ops::k_at(p, b, j, 0));
#pragma unroll
      for (int t = 0; t < KVN; ++t) kpre[t] = GRAPE_LDG(kr + t);
    }
  }

  {
    // rows * dkp <= 8 * 256: at most 8 elements per thread, loaded before any is stored (see
    // grape_attn_dot).
    float qr[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const long long t = threadIdx.x + u * GRAPE_ATTN_WARPS * 32, rr = t / dkp, d = t % dkp;
      qr[u] = (t < rows * dkp && i0 + rr < S && d < DK) ? Ops::q(p, b, i0 + rr, d) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const long long t = threadIdx.x + u * GRAPE_ATTN_WARPS * 32;
      if (t < rows * dkp) qs[t] = qr[u];
    }
  }
  __syncthreads();
  GRAPE_TIMELINE_MARK(p, 0);  // q staged
  const float* q = qs + r * dkp;

  // Pass 1: scores, and each lane's running softmax statistics.
  float m = neg_inf, l = 0.0f;
  if (live) {
    for (long long j0 = (long long)s * 32; j0 < KV; j0 += (long long)slices * 32) {
      float dot;
      if (KVN > 0 && kpre_ok && j0 == (long long)s * 32)
        dot = grape_attn_dot_vecs<Ops, KVNV>(kpre, q);
      else
        dot = rows_ok ? grape_attn_dot_row<Ops>(p, b, j0 + lane, KV, DK, q)
                      : grape_attn_dot<Ops>(p, b, j0, KV, DK, q, tile, lane);
      const long long j = j0 + lane;
      if (j < KV) {
        const float x = Ops::score(p, b, i, j, dot);
        if (cache) cache[j] = x;
        grape_attn_merge(m, l, x, x == neg_inf ? 0.0f : 1.0f);
      }
    }
  }
  // The warp's statistics: the largest maximum first, then every lane's sum rescaled to it and
  // added (two independent butterflies instead of a chain of five merges, each with two exp).
  {
    const float mw = grape_warp_max_nan(m);
    l = grape_warp_sum(l == 0.0f ? 0.0f : l * expf(m - mw));
    m = mw;
  }
  if (lane == 0) {
    stats[2 * w] = m;
    stats[2 * w + 1] = l;
  }
  __syncthreads();
  GRAPE_TIMELINE_MARK(p, 1);  // pass 1 (the scores)
  // The row's statistics: the maximum over its slices, then their rescaled sums in slice order
  // (every warp of the row alike).
  float M = neg_inf, L = 0.0f;
  for (int t = 0; t < slices; ++t) M = grape_fmax_nan(M, stats[2 * (r * slices + t)]);
  for (int t = 0; t < slices; ++t) {
    const float lt = stats[2 * (r * slices + t) + 1];
    L += lt == 0.0f ? 0.0f : lt * expf(stats[2 * (r * slices + t)] - M);
  }

  // Pass 2: probabilities times v.
  float acc[DVT];
#pragma unroll
  for (int t = 0; t < DVT; ++t) acc[t] = 0.0f;
  constexpr int VN = GrapeVec<typename Ops::T>::kN;
  float vacc[VN];
#pragma unroll
  for (int e = 0; e < VN; ++e) vacc[e] = 0.0f;
  if (live && vrows) {
    for (long long j0 = (long long)s * 32; j0 < KV; j0 += (long long)slices * 32) {
      const long long j = j0 + lane;
      const float x = cache ? (j < KV ? cache[j] : neg_inf) : neg_inf;
      float pj = 0.0f;
      if (j < KV) {
        float xs = x;
        if (!cache) xs = Ops::score(p, b, i, j, grape_attn_dot_row<Ops>(p, b, j, KV, DK, q));
        pj = Ops::prob(expf(xs - M) / L);
      }
      if (kPrefetchV && j0 == (long long)s * 32) {
        grape_attn_v_add<Ops, LPRV>(vpre, pj, lane, vacc);
      } else {
        uint4 u[LPRV];
        grape_attn_v_load<Ops, LPRV>(p, b, j0, KV, lane, u);
        grape_attn_v_add<Ops, LPRV>(u, pj, lane, vacc);
      }
    }
  } else if (live) {
    for (long long j0 = (long long)s * 32; j0 < KV; j0 += (long long)slices * 32) {
      const long long j = j0 + lane;
      float x;
      if (cache) {
        x = j < KV ? cache[j] : neg_inf;
      } else {
        const float dot = rows_ok ? grape_attn_dot_row<Ops>(p, b, j, KV, DK, q)
                                  : grape_attn_dot<Ops>(p, b, j0, KV, DK, q, tile, lane);
        x = j < KV ? Ops::score(p, b, i, j, dot) : neg_inf;
      }
      const float pj = j < KV ? Ops::prob(expf(x - M) / L) : 0.0f;
      // KB rows of v are loaded into registers before any is used, so their loads are in flight
      // together (one memory round trip per KB keys, not per key).
      constexpr int KB = DVT <= 2 ? 16 : (DVT <= 4 ? 8 : 4);
#pragma unroll
      for (int k0 = 0; k0 < 32; k0 += KB) {
        float vr[KB][DVT];
#pragma unroll
        for (int u = 0; u < KB; ++u)
#pragma unroll
          for (int t = 0; t < DVT; ++t) {
            const long long jj = j0 + k0 + u, d = lane + 32 * t;
            if (jj < KV && d < DV)
              vr[u][t] =
                  rows_ok ? GrapeVec<typename Ops::T>::one(Ops::v_at(p, b, jj, 0), d) : Ops::v(p, b, jj, d);
            else
              vr[u][t] = 0.0f;
          }
#pragma unroll
        for (int u = 0; u < KB; ++u) {
          const float pk = __shfl_sync(0xffffffffu, pj, k0 + u);
#pragma unroll
          for (int t = 0; t < DVT; ++t) acc[t] += pk * vr[u][t];
        }
      }
    }
  }

  GRAPE_TIMELINE_MARK(p, 2);  // pass 2 (times v), warp 0
  // The successor may launch now (Ops::kTriggerAfterKeys): only the sums and stores are left.
  if constexpr (Ops::kTriggerAfterKeys) GRAPE_LAUNCH_DEPENDENTS();
  // The key slices' partial outputs, added in slice order by the row's first warp.
  __syncthreads();
  float* part = tiles;  // [8][DVT * 32]
  if (vrows) {
    // Lanes l, l + LPR, ... hold the same dims for different keys.
#pragma unroll
    for (int o = LPRV; o < 32; o <<= 1)
#pragma unroll
      for (int e = 0; e < VN; ++e) vacc[e] += __shfl_xor_sync(0xffffffffu, vacc[e], o);
    if (lane < LPRV)
#pragma unroll
      for (int e = 0; e < VN; ++e) part[w * DVT * 32 + lane * VN + e] = vacc[e];
  } else {
#pragma unroll
    for (int t = 0; t < DVT; ++t) part[w * DVT * 32 + lane + 32 * t] = acc[t];
  }
  __syncthreads();
  GRAPE_TIMELINE_MARK(p, 3);  // the slices' partial outputs in shared memory
  if (live && s == 0) {
#pragma unroll
    for (int t = 0; t < DVT; ++t) {
      const long long d = lane + 32 * t;
      if (d >= DV) continue;
      float sum = 0.0f;
      for (int u = 0; u < slices; ++u) sum += part[(r * slices + u) * DVT * 32 + lane + 32 * t];
      Ops::store(p, b, i, d, sum);
    }
  }
  __syncthreads();
}

#endif  // GRAPE_KERNELS_ATTENTION_CUH
