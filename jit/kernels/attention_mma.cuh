// Fused attention on the tensor cores, for many query rows (prefill, encoders): the same function
// as attention.cuh,
//
//   x[j]   = Ops::score(b, i, j, sum_d q[b][i][d] * k[b][j][d])
//   p[j]   = Ops::prob(exp(x[j] - max x) / sum exp(x - max x))
//   out[d] = Ops::store(b, i, d, sum_j p[j] * v[b][j][d])
//
// with q, k, v and p of one 16-bit type T (f16 or bf16; the code generator checks it), so that
// both products run on mma.sync.m16n8k16 with fp32 accumulation, as the unfused matmuls do. Each
// score is rounded and put through the elementwise chain (scale, mask) by Ops::score, as the
// unfused ops do. The softmax is computed online, in one pass over the keys (FlashAttention's
// form): per key tile the row's running maximum, the exponentials against it rounded to T and
// multiplied with v, the output and the sum rescaled when the maximum grows, and the output
// divided by the sum at the end. The unfused softmax rounds each probability after dividing by
// the sum; here the division comes after the product with v, so results differ from the unfused
// ops by about one rounding of T (relative L2 about 1e-3, as PyTorch's fused attention differs
// from its unfused form). A row whose scores are all -inf gives NaN, as the unfused softmax does.
// (The first version kept the unfused roundings exactly with two passes — the row statistics,
// then the probabilities — and took 20.5 us for BERT-base at batch 16: bench/RESULTS.md,
// seventeenth session.)
//
// Work item: (b, a tile of 16 * RG query rows), RG row groups of 16 rows, KS warps per row group;
// the launch picks (scheduler/launch.cpp), each form its own entry point. 4 x 1 (4 warps, 128
// threads, 64 rows): each warp scores its rows against every key. 2 x 4 (8 warps, 32 rows; 4 x 2
// where the head widths do not allow it, scheduler::attention_mma_quarter_keys): warp w takes the
// rows of group w % RG and share w / RG of every key tile's 64 keys, multiplies its probabilities
// with those rows of v, and at the end the warps of a row group rescale their partial outputs and
// sums to the largest of their maxima and add them (through shared memory): a small batch's few
// items (BERT-base at batch 1: 48 of 32 rows) then run on more blocks and warps, each with a
// quarter of the dependent work. The block stages the q tile once and the keys in tiles of 64 (k
// and v rows, double-buffered: tiles 0 and 1 are requested together, then tile t + 2 into tile
// t's buffer once the warps are done with it, so its cp.async loads fly while they multiply
// tile t + 1).
// Rows beyond S are zeros and are neither scored nor stored; keys beyond KV are zeros and get no
// probability (a tile whose keys and the warp's rows all exist skips those checks). Warps whose rows all lie
// beyond S only help with the loads.
//
// Operands are staged in 16-byte chunks (8 elements along the head width): by cp.async when
// Ops::*_at gives the chunk's 8 addresses consecutive and 16-byte aligned (every address checked
// unless the code generator showed the rows contiguous from the views' shapes, Ops::k*Rows), else
// element by element through Ops::q/k/v. Widths are padded
// to DKP, DVP (multiples of 16) with zeros.
//
// Ops (jit/emit_attention.cpp):
//   typedef T
//   static long long S(p), KV(p), DK(p), DV(p)
//   static float q(p, b, i, d), k(p, b, j, d), v(p, b, j, d)
//   static constexpr bool kQAt, kKAt, kVAt; static const T* q_at(p, b, i, d), k_at(...), v_at(...)
//   static constexpr bool kQRows, kKRows, kVRows   a row's chunks are contiguous (from the views'
//                                                  shapes): only their alignment is checked
//   static float score(p, b, i, j, float dot)
//   static void store(p, b, i, d, float acc)
//   static constexpr bool kOutAt; static T* out_at(p, b, i, d)   the output's address, when the kernel
//                                                  stores round(acc) itself along a unit-stride last
//                                                  axis d (no epilogue): rows go out in 16-byte pieces
// Shared memory (T elements): q [64][DKP + 8] | k [2][64][DKP + 8] | v [2][64][DVP + 8] |
// statistics, floats [RG][KS][16 rows][2] (at most 256); scheduler/launch.h computes the same
// size. Rows are padded by 16 bytes: ldmatrix without bank conflicts. With several warps per row
// group the k and v tiles hold the partial outputs at the end.
#ifndef GRAPE_KERNELS_ATTENTION_MMA_CUH
#define GRAPE_KERNELS_ATTENTION_MMA_CUH

#define GRAPE_ATTN_MMA_ROWS 64
#define GRAPE_ATTN_MMA_KEYS 64

// Which operand a staging call reads: 0 q (rows i), 1 k, 2 v (rows j).
template <class Ops, int WHICH>
struct GrapeAttnOperand;
template <class Ops>
struct GrapeAttnOperand<Ops, 0> {
  static constexpr bool kAt = Ops::kQAt, kRows = Ops::kQRows;
  __device__ static const typename Ops::T* at(const KParams* p, long long b, long long r, long long d) {
    return Ops::q_at(p, b, r, d);
  }
  __device__ static float get(const KParams* p, long long b, long long r, long long d) {
    return Ops::q(p, b, r, d);
  }
};
template <class Ops>
struct GrapeAttnOperand<Ops, 1> {
  static constexpr bool kAt = Ops::kKAt, kRows = Ops::kKRows;
  __device__ static const typename Ops::T* at(const KParams* p, long long b, long long r, long long d) {
    return Ops::k_at(p, b, r, d);
  }
  __device__ static float get(const KParams* p, long long b, long long r, long long d) {
    return Ops::k(p, b, r, d);
  }
};
template <class Ops>
struct GrapeAttnOperand<Ops, 2> {
  static constexpr bool kAt = Ops::kVAt, kRows = Ops::kVRows;
  __device__ static const typename Ops::T* at(const KParams* p, long long b, long long r, long long d) {
    return Ops::v_at(p, b, r, d);
  }
  __device__ static float get(const KParams* p, long long b, long long r, long long d) {
    return Ops::v(p, b, r, d);
  }
};

// Rows [r0, r0 + ROWS) of one operand (width D, valid rows r < limit) into dst [ROWS][DP + 8].
// Issues cp.async for the aligned contiguous chunks; the caller commits and waits.
template <class Ops, int WHICH, int ROWS, int DP, int THREADS>
__device__ __forceinline__ void grape_attn_mma_stage(const KParams* p, long long b, long long r0,
                                                     long long limit, long long D, typename Ops::T* dst) {
  using T = typename Ops::T;
  using X = GrapeAttnOperand<Ops, WHICH>;
  constexpr int CHUNKS = DP / 8, LD = DP + 8;
  // Not unrolled: the unrolled addresses are hoisted out of the key loops (209 registers instead
  // of 134, one block less per multiprocessor).
  constexpr int EACH = (ROWS * CHUNKS + THREADS - 1) / THREADS;
#pragma unroll 1
  for (int u = 0; u < EACH; ++u) {
    const int c = threadIdx.x + u * THREADS;
    if (ROWS * CHUNKS % THREADS != 0 && c >= ROWS * CHUNKS) break;
    const int rr = c / CHUNKS, d = (c % CHUNKS) * 8;
    const long long r = r0 + rr;
    T* s = dst + rr * LD + d;
    if (r >= limit || d >= D) {
      *reinterpret_cast<uint4*>(s) = make_uint4(0, 0, 0, 0);
      continue;
    }
    if constexpr (X::kAt) {
      if (d + 8 <= D) {
        const T* a = X::at(p, b, r, d);
        bool run = (reinterpret_cast<unsigned long long>(a) & 15) == 0;
        if constexpr (!X::kRows)
#pragma unroll
          for (int e = 1; e < 8; ++e) run = run && X::at(p, b, r, d + e) == a + e;
        if (run) {
          grape_cp_async16(s, a, 16);
          continue;
        }
      }
    }
    float f[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = d + e < D ? X::get(p, b, r, d + e) : 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) s[e] = GrapeMma<T>::from(f[e]);
  }
}

// The warp's 16 x (8 * NB) scores of its keys of one key tile (ks: their first key row): acc[n][e]
// for key n * 8 + (lane & 3) * 2 + (e & 1), row (lane >> 2) + 8 * (e >> 1). qf: the warp's q rows
// as mma A fragments.
template <class T, int DKP, int NB>
__device__ __forceinline__ void grape_attn_mma_scores(const unsigned (&qf)[DKP / 16][4], const T* ks,
                                                      int lane, float (&acc)[NB][4]) {
  constexpr int LD = DKP + 8;
#pragma unroll
  for (int n = 0; n < NB; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < DKP / 16; ++kk) {
#pragma unroll
    for (int n = 0; n < NB; n += 2) {
      unsigned r[4];
      grape_ldmatrix_x4(
          r, ks + (n * 8 + (lane & 7) + ((lane >> 4) << 3)) * LD + kk * 16 + ((lane >> 3) & 1) * 8);
      const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      GrapeMma<T>::mma(acc[n], qf[kk], b0);
      GrapeMma<T>::mma(acc[n + 1], qf[kk], b1);
    }
  }
}

// exp(x) as __expf computes it, with results below 2^-126 flushed to zero: without the flush
// NVRTC guards every ex2 against subnormal results (4 more instructions). A probability that small
// rounds to zero in T either way, and its share of a row's sum (at least 1) is below any ulp.
#define GRAPE_LOG2E 1.4426950408889634f  // log2(e)
__device__ __forceinline__ float grape_attn_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float grape_attn_exp(float x) { return grape_attn_exp2(x * GRAPE_LOG2E); }

// p @ v of the warp's keys of one key tile: a[kk] are the probabilities of its keys kk * 16 .. + 15
// as mma A fragments, vt their first v row.
template <class T, int DVP, int KSTEPS>
__device__ __forceinline__ void grape_attn_mma_pv(const unsigned (&a)[KSTEPS][4], const T* vt, int lane,
                                                  float (&o)[DVP / 8][4]) {
  constexpr int LDV = DVP + 8;
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
    for (int n = 0; n < DVP / 8; n += 2) {
      unsigned r[4];
      grape_ldmatrix_x4_trans(r, vt + (kk * 16 + (lane & 15)) * LDV + n * 8 + (lane >> 4) * 8);
      const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      GrapeMma<T>::mma(o[n], a[kk], b0);
      GrapeMma<T>::mma(o[n + 1], a[kk], b1);
    }
}

// One key tile t of a warp's rows (the keys of its share kh): scores, the online-softmax update of
// its rows' maxima m, sums l and outputs o, and p @ v. kt, vt: the tile's k and v rows in shared
// memory.
template <class Ops, int DKP, int DVP, int KS>
__device__ __forceinline__ void grape_attn_mma_tile(const KParams* p, long long b, long long t, long long S,
                                                    long long KV, long long wi, int lane, int kh,
                                                    const unsigned (&qf)[DKP / 16][4],
                                                    const typename Ops::T* kt, const typename Ops::T* vt,
                                                    float (&m)[2], float (&l)[2], float (&o)[DVP / 8][4]) {
  using T = typename Ops::T;
  constexpr int BKV = GRAPE_ATTN_MMA_KEYS, HALF = BKV / KS, NB = HALF / 8, LDK = DKP + 8, LDV = DVP + 8;
  const long long r0 = wi + (lane >> 2);
  const float neg_inf = -__int_as_float(0x7f800000);
  float acc[NB][4];
  grape_attn_mma_scores<T, DKP, NB>(qf, kt + kh * HALF * LDK, lane, acc);
  const long long j0 = t * BKV + kh * HALF;
  const bool full = j0 + HALF <= KV;  // no key of the warp's half beyond KV: no key checks
  // The C fragments of two adjacent key blocks of 8 are the A fragment of a 16-key step: word
  // (2 * n + h) holds row h's keys n * 8 + (lane & 3) * 2 + {0, 1} of the warp's share.
  unsigned a[HALF / 16][4];
  // Every score of the tile goes through Ops::score unconditionally, so the loads of the chain
  // (a mask) are issued together and shared by the lane's two rows when they do not depend on
  // the row. Behind a condition each load was waited for before the next was issued: 32 L2
  // latencies in a row per tile (bench/RESULTS.md, eighteenth session). A tile whose keys and
  // the warp's rows are all in range (every tile of BERT) takes no checks at all; at the edges
  // the indices are clamped into range (a row beyond S reads row S - 1, a key beyond KV key
  // KV - 1) and those scores are then -inf.
  float x[2][2 * NB];
  const long long jl = j0 + (lane & 3) * 2;
  if (full && wi + 16 <= S) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int n = 0; n < NB; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          x[h][2 * n + e] = Ops::score(p, b, r0 + 8 * h, jl + n * 8 + e, acc[n][2 * h + e]);
  } else {
    // This lane's keys n * 8 + e < left exist (at most HALF: no overflow for long rows).
    const int left = (int)(KV - jl < HALF ? KV - jl : HALF);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long i = r0 + 8 * h, ic = i < S ? i : S - 1;
#pragma unroll
      for (int n = 0; n < NB; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = n * 8 + e;
          const float sc = Ops::score(p, b, ic, jl + (c < left ? c : left - 1), acc[n][2 * h + e]);
          x[h][2 * n + e] = i < S && c < left ? sc : neg_inf;
        }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = neg_inf;
#pragma unroll
    for (int u = 0; u < 2 * NB; ++u) mx = grape_fmax_nan(mx, x[h][u]);
    mx = grape_fmax_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = grape_fmax_nan(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mn = grape_fmax_nan(m[h], mx);
    // While every score so far is -inf nothing was added (exp(-inf - -inf) would be NaN); a NaN
    // maximum (a NaN score) makes the row NaN, as the unfused softmax does.
    const float scale = m[h] == mn ? 1.0f : grape_attn_exp(m[h] - mn);
    m[h] = mn;
    l[h] *= scale;
#pragma unroll
    for (int n = 0; n < DVP / 8; ++n) {
      o[n][2 * h] *= scale;
      o[n][2 * h + 1] *= scale;
    }
    // exp(x - mn) as 2^(x log2 e - mn log2 e): one fused multiply-add per score before ex2
    // (FlashAttention's form; the same function to within the approximate ex2's error).
    const float mc = mn * GRAPE_LOG2E;
    // The tile's share of the sum in four interleaved partial sums: a quarter of the dependent adds
    // of one running sum, for three more registers.
    float pr[2 * NB], sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int u = 0; u < 2 * NB; ++u) {
      pr[u] = mn == neg_inf ? 0.0f : grape_attn_exp2(fmaf(x[h][u], GRAPE_LOG2E, -mc));
      sum[u & 3] += pr[u];
    }
    l[h] += (sum[0] + sum[1]) + (sum[2] + sum[3]);
#pragma unroll
    for (int n = 0; n < NB; ++n) a[n >> 1][(n & 1) * 2 + h] = GrapeMma<T>::pack(pr[2 * n], pr[2 * n + 1]);
  }
  grape_attn_mma_pv<T, DVP, HALF / 16>(a, vt + kh * HALF * LDV, lane, o);
}

// Output rows through shared memory (Ops::kOutAt: the kernel stores the product's rounded result
// itself, no epilogue, along a last axis d of unit stride; Ops::out_at gives element (b, i, d)'s
// address). A lane's mma fragments hold pairs of adjacent columns of 8 rows apart, so storing them
// directly is one 16-bit store per element (32 per lane for a head width of 64, a fifth of BERT
// b=16's stall samples, bench/RESULTS.md twentieth session); instead the row group's 16 x DVP
// results are written to shared memory as T (the same rounding as Ops::store), then copied out in
// 16-byte pieces. Rows of `rows` are LD elements apart.
template <class T>
__device__ __forceinline__ void grape_attn_mma_stage_out(T* rows, int ld, int n, int lane, float v0, float v1,
                                                         float v2, float v3) {
  const int r = lane >> 2, col = n * 8 + (lane & 3) * 2;
  *reinterpret_cast<unsigned*>(rows + r * ld + col) = GrapeMma<T>::pack(v0, v1);
  *reinterpret_cast<unsigned*>(rows + (r + 8) * ld + col) = GrapeMma<T>::pack(v2, v3);
}
// Copies the staged 16 rows (first row wi) to the output, pieces u0, u0 + step, ...: the threads
// of the row group share them. A piece whose address is not 16-byte aligned (the output's last
// axis not a multiple of 8, or an odd base) or that crosses DV goes element by element.
template <class Ops, int DVP>
__device__ __forceinline__ void grape_attn_mma_write_rows(const KParams* p, long long b, long long wi,
                                                          long long S, long long DV,
                                                          const typename Ops::T* rows, int ld, int u0,
                                                          int step) {
  using T = typename Ops::T;
  constexpr int CH = DVP / 8;
  for (int u = u0; u < 16 * CH; u += step) {
    const int r = u / CH, d = (u % CH) * 8;
    const long long i = wi + r;
    if (i >= S || d >= DV) continue;
    T* dst = Ops::out_at(p, b, i, d);
    const T* src = rows + r * ld + d;
    if (d + 8 <= DV && (reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int e = 0; e < 8 && d + e < DV; ++e) dst[e] = src[e];
    }
  }
}

// One work item: RG row groups of 16 query rows, KS warps per row group (4 x 1: each warp all keys
// of its rows; 4 x 2: each warp half of every key tile; 2 x 4: a quarter). The 4-warp and the
// 8-warp forms are separate entry points (jit/emit_attention.cpp): in one kernel both paths' code
// evicted each other's from the instruction cache between a model's kernels (BERT's attention with
// KS = 2 took 16 us instead of 9).
template <class Ops, int DKP, int DVP, int RG, int KS>
__device__ void grape_attention_mma(const KParams* p, long long item, unsigned char* smem) {
  using T = typename Ops::T;
  constexpr int BQ = 16 * RG, BKV = GRAPE_ATTN_MMA_KEYS, THREADS = 32 * RG * KS;
  static_assert((RG == 4 && (KS == 1 || KS == 2)) || (RG == 2 && KS == 4), "4 x 1, 4 x 2 or 2 x 4 warps");
  static_assert(KS == 1 || (DVP / 8) % KS == 0, "the output's column blocks split among a row group's warps");
  constexpr int LDK = DKP + 8, LDV = DVP + 8;
  // Output rows staged in the q tile (grape_attn_mma_write_rows) where they fit in its rows.
  constexpr bool kStaged = Ops::kOutAt && DVP <= DKP;
  static_assert(DKP % 16 == 0 && DVP % 16 == 0, "head widths are padded to multiples of 16");
  const long long S = Ops::S(p), KV = Ops::KV(p), DK = Ops::DK(p), DV = Ops::DV(p);
  const long long qtiles = (S + BQ - 1) / BQ, b = item / qtiles, i0 = (item % qtiles) * BQ;
  const long long tiles = (KV + BKV - 1) / BKV;
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + GRAPE_ATTN_MMA_ROWS * LDK;                       // [2][BKV][LDK]
  T* vs = ks + 2 * BKV * LDK;                                   // [2][BKV][LDV]
  float* stats = reinterpret_cast<float*>(vs + 2 * BKV * LDV);  // [RG][KS][16][2]
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = w % RG, kh = w / RG;
  const long long wi = i0 + g * 16;                    // the warp's first row
  const bool live = wi < S;                            // warp-uniform, the same for a row group
  const long long r0 = wi + (lane >> 2), r1 = r0 + 8;  // this lane's two rows
  const float neg_inf = -__int_as_float(0x7f800000);

  // Both buffers' tiles are requested before the first is waited for (commit groups 0 and 1; the
  // iteration for tile t then commits tile t + 2's group, perhaps empty): behind a single buffered
  // request, tile 1's loads left only when tile 0 had arrived, two memory latencies in a row for
  // BERT's 128 keys (bench/RESULTS.md, twentieth session).
  grape_attn_mma_stage<Ops, 0, BQ, DKP, THREADS>(p, b, i0, S, DK, qs);
  if (tiles > 0) {
    grape_attn_mma_stage<Ops, 1, BKV, DKP, THREADS>(p, b, 0, KV, DK, ks);
    grape_attn_mma_stage<Ops, 2, BKV, DVP, THREADS>(p, b, 0, KV, DV, vs);
  }
  grape_cp_async_commit();
  if (tiles > 1) {
    grape_attn_mma_stage<Ops, 1, BKV, DKP, THREADS>(p, b, BKV, KV, DK, ks + BKV * LDK);
    grape_attn_mma_stage<Ops, 2, BKV, DVP, THREADS>(p, b, BKV, KV, DV, vs + BKV * LDV);
  }
  grape_cp_async_commit();

  // One pass, online softmax: per key tile the row's running maximum m (the same in the row's 4
  // lanes: a tile's maximum goes through two shuffles), the output and this lane's share l of the
  // sum of exponentials rescaled when m grows, then exp(x - m), rounded to T, times v.
  unsigned qf[DKP / 16][4];
  float m[2] = {neg_inf, neg_inf}, l[2] = {0.0f, 0.0f};
  float o[DVP / 8][4];
#pragma unroll
  for (int n = 0; n < DVP / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  for (long long t = 0; t < tiles; ++t) {
    grape_cp_async_wait<1>();  // every group but the last: tile t's
    __syncthreads();           // tile t is in for every thread's copies
    if (t == 0 && live)
#pragma unroll
      for (int kk = 0; kk < DKP / 16; ++kk)
        grape_ldmatrix_x4(qf[kk], qs + (g * 16 + (lane & 15)) * LDK + kk * 16 + (lane >> 4) * 8);
    if (live)
      grape_attn_mma_tile<Ops, DKP, DVP, KS>(p, b, t, S, KV, wi, lane, kh, qf, ks + (t & 1) * BKV * LDK,
                                             vs + (t & 1) * BKV * LDV, m, l, o);
    if (t + 2 < tiles) {
      __syncthreads();  // every warp is done with tile t's buffers
      grape_attn_mma_stage<Ops, 1, BKV, DKP, THREADS>(p, b, (t + 2) * BKV, KV, DK, ks + (t & 1) * BKV * LDK);
      grape_attn_mma_stage<Ops, 2, BKV, DVP, THREADS>(p, b, (t + 2) * BKV, KV, DV, vs + (t & 1) * BKV * LDV);
    }
    grape_cp_async_commit();
  }
  grape_cp_async_wait<0>();
  if (kStaged && tiles == 0) {
    __syncthreads();  // every thread's q copies are in before rows are staged over them
  }
  // The row's sum: each of its 4 lanes summed its own keys against the same maximum.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  if constexpr (KS == 1) {
    const float inv[2] = {1.0f / l[0], 1.0f / l[1]};  // once per row, not per element
    if constexpr (kStaged) {
      // Rows g * 16 .. of the q tile are this warp's alone, and read only at tile 0.
      if (live) {
        T* rows = qs + g * 16 * LDK;
#pragma unroll
        for (int n = 0; n < DVP / 8; ++n)
          grape_attn_mma_stage_out(rows, LDK, n, lane, o[n][0] * inv[0], o[n][1] * inv[0], o[n][2] * inv[1],
                                   o[n][3] * inv[1]);
        __syncwarp();
        grape_attn_mma_write_rows<Ops, DVP>(p, b, wi, S, DV, rows, LDK, lane, 32);
      }
    } else if (live) {
#pragma unroll
      for (int n = 0; n < DVP / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long long i = (e >> 1) ? r1 : r0, d = n * 8 + (lane & 3) * 2 + (e & 1);
          if (i < S && d < DV) Ops::store(p, b, i, d, o[n][e] * inv[e >> 1]);
        }
    }
  } else {
    // The KS warps of a row group meet: each one's (m, l) through shared memory, each rescaled to
    // the largest maximum (every warp computes the same factors and the same sum, in warp order),
    // then warp kh stores the column blocks [kh * CB, kh * CB + CB) and gets the others' rescaled
    // partial outputs for them through the k and v tiles.
    __syncthreads();  // every warp is done with the k and v tiles
    if (live && (lane & 3) == 0)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float* st = stats + ((g * KS + kh) * 16 + (lane >> 2) + 8 * h) * 2;
        st[0] = m[h];
        st[1] = l[h];
      }
    __syncthreads();
    float f[2], inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float* so = stats + (g * KS * 16 + (lane >> 2) + 8 * h) * 2;  // warp q's at so + 32 q
      float mn = so[0];
#pragma unroll
      for (int q = 1; q < KS; ++q) mn = grape_fmax_nan(mn, so[32 * q]);
      float sum = 0.0f;
      f[h] = 1.0f;
#pragma unroll
      for (int q = 0; q < KS; ++q) {
        const float mq = so[32 * q], fq = mq == mn ? 1.0f : grape_attn_exp(mq - mn);
        sum += so[32 * q + 1] * fq;
        if (q == kh) f[h] = fq;
      }
      inv[h] = 1.0f / sum;
    }
    constexpr int CB = DVP / 8 / KS;
    // [RG][KS owners][KS - 1 senders][CB][4][32 lanes] floats (scheduler/launch.h checks they fit).
    float* ox = reinterpret_cast<float*>(ks);
    auto slot = [&](int owner, int sender, int u, int e) {
      return ((((g * KS + owner) * (KS - 1) + (sender < owner ? sender : sender - 1)) * CB + u) * 4 + e) *
                 32 +
             lane;
    };
    if (live)
#pragma unroll
      for (int q = 0; q < KS; ++q) {
        if (q == kh) continue;
#pragma unroll
        for (int u = 0; u < CB; ++u)
#pragma unroll
          for (int e = 0; e < 4; ++e) ox[slot(q, kh, u, e)] = o[q * CB + u][e] * f[e >> 1];
      }
    __syncthreads();
    T* rows = qs + g * 16 * LDK;  // the row group's results when staged (kStaged)
    if (live) {
#pragma unroll
      for (int u = 0; u < CB; ++u) {
        float res[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float mine = 0.0f;  // o[kh * CB + u][e] by selects: o stays in registers
#pragma unroll
          for (int q = 0; q < KS; ++q)
            if (q == kh) mine = o[q * CB + u][e];
          float sum = 0.0f;
#pragma unroll
          for (int q = 0; q < KS; ++q) {
            if (q == kh)
              sum += mine * f[e >> 1];
            else
              sum += ox[slot(kh, q, u, e)];
          }
          res[e] = sum * inv[e >> 1];
        }
        const int n = kh * CB + u;
        if constexpr (kStaged) {
          grape_attn_mma_stage_out(rows, LDK, n, lane, res[0], res[1], res[2], res[3]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const long long i = (e >> 1) ? r1 : r0, d = n * 8 + (lane & 3) * 2 + (e & 1);
            if (i < S && d < DV) Ops::store(p, b, i, d, res[e]);
          }
        }
      }
    }
    if constexpr (kStaged) {
      __syncthreads();  // the row group's KS warps have staged their column blocks
      if (live) grape_attn_mma_write_rows<Ops, DVP>(p, b, wi, S, DV, rows, LDK, kh * 32 + lane, 32 * KS);
    }
  }
  __syncthreads();  // the next item's staging overwrites the tiles
}

#endif  // GRAPE_KERNELS_ATTENTION_MMA_CUH
