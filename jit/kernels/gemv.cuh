// Memory-bound matrix products: a few rows (decode: batch x 1 token), so the time is the time to
// read the weight once.
//
//   out[r][n] = Ops::store(r, n, sum_k A(r, k) * W(k, n))        r < R, n < N, k < K
//
// W is a materialised buffer in one of two layouts: [K][N] (`x @ w`, GPT-2's Conv1D; gemv_kn) or
// [N][K] (`linear`, PyTorch's nn.Linear; gemv_nk). A comes from Ops::a (a load, or a load through a
// fused row normalisation); each block stages its rows and K range of A in shared memory, in A's
// dtype (Ops::a returns values rounded to it, so this is exact and halves the space of fp32).
// Weights are read 16 bytes per thread per load, several loads in flight.
//
// Work items are (column tile, K split) pairs, so a narrow product still covers every SM; the host
// prefers narrower column tiles to K splits (scheduler/launch.cpp), as a split costs a round of
// partial sums through global memory at the end of the kernel. With more than one split, each split writes
// fp32 partial sums to p->scratch; the last split of a column tile to finish (a counter per tile, which that
// split resets to 0 for the next launch) adds the partials in split order (in four interleaved sums), so
// results do not depend on timing, and applies the epilogue.
//
// Ops (generated per kernel by jit/emit_matmul.cpp):
//   typedef W, T                               weight and A element: __half or __nv_bfloat16
//   static constexpr bool kRowStats            A has a fused row normalisation
//   static long long R(p), N(p), K(p)
//   static const W* w(p)
//   static void row_stats(p, r, K, s0*, s1*)   whole warp; only used when kRowStats
//   static float a(p, r, k, s0, s1)
//   static constexpr bool kAVec                a_vec exists: A(r, k .. k + 7) by 16-byte loads
//   static bool a_vec_ok(p)                    the buffers a_vec reads are 16-byte aligned
//   static void a_vec(p, r, k, s0, s1, float* out8)   k a multiple of 8
//   static void store(p, r, n, float acc)      applies bias, rounding and the fused epilogue
#ifndef GRAPE_KERNELS_GEMV_CUH
#define GRAPE_KERNELS_GEMV_CUH

// A runtime row count x, or the literal a row-count variant is compiled for (jit/kernel_source.h,
// kRowsDefine): with R known, the loops over rows below unroll completely and their per-row
// predicates fold away (run 155: 19-21% faster GEMVs at 5 rows). A persistent kernel holding bodies
// of several row counts names each body's literal with GRAPE_ROWS_AS instead (jit/persistent_source.cpp).
#ifdef GRAPE_ROWS
#define GRAPE_ROWS_OR(x) (GRAPE_ROWS)
#else
#define GRAPE_ROWS_OR(x) (x)
#endif
#define GRAPE_ROWS_AS(n, x) (n)

#define GRAPE_GEMV_THREADS 256
#define GRAPE_GEMV_MT 8     // rows per pass (more rows: more passes over the same weights, from L2)
#define GRAPE_GEMV_KC 1536  // the longest K range of one split (shared memory holds A's [MT][KC])
#define GRAPE_GEMV_PF 8     // weight vectors per thread requested before A is staged (gemv_kn)
#define GRAPE_GEMV_NK_PF 2  // steps of 4 vectors per lane requested before A is staged (gemv_nk)

// Not through the read-only path in a persistent kernel, where W may be an earlier step's result.
__device__ __forceinline__ uint4 grape_ld_stream16(const void* p) {
  uint4 u;
#ifndef GRAPE_PERSISTENT
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p));
#else
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p)
               : "memory");
#endif
  return u;
}

// Columns per work item: gemv_kn's is TX * kN (a template argument, LaunchRule::gemv_cols on the
// host); gemv_nk's is fixed (mirrored in scheduler/launch.cpp).
#define GRAPE_GEMV_NK_TILE 128

// The epilogue of a tile whose columns are [c0, c1): f(st), st(p, r, col, v) storing column col
// of the whole product. In a kernel of sibling products (Ops::kParts > 1: several linears of one
// A, their columns one after another) st is the epilogue of the one part that holds all the
// tile's columns, its branch taken once per tile instead of once per element; a tile across two
// parts gets Ops::store, which finds the part of each element.
template <class Ops, int P>
struct GrapeStoreIn {
  __device__ __forceinline__ void operator()(const KParams* p, long long r, long long col, float v) const {
    Ops::template store_in<P>(p, r, col - Ops::part_begin(P), v);
  }
};
template <class Ops>
struct GrapeStoreAny {
  __device__ __forceinline__ void operator()(const KParams* p, long long r, long long col, float v) const {
    Ops::store(p, r, col, v);
  }
};
template <class Ops, class F>
__device__ __forceinline__ void grape_tile_store(long long c0, long long c1, F&& f) {
  static_assert(Ops::kParts >= 1 && Ops::kParts <= 4, "at most four sibling products (scheduler/fusion.h)");
  if constexpr (Ops::kParts > 1) {
    const int a = Ops::part(c0);
    if (a == Ops::part(c1 - 1)) {
      if (a == 0) return f(GrapeStoreIn<Ops, 0>());
      if (a == 1) return f(GrapeStoreIn<Ops, 1>());
      if constexpr (Ops::kParts > 2)
        if (a == 2) return f(GrapeStoreIn<Ops, 2>());
      if constexpr (Ops::kParts > 3)
        if (a == 3) return f(GrapeStoreIn<Ops, 3>());
    }
  }
  f(GrapeStoreAny<Ops>());
}

// Shared memory: A [MT][KCS] in A's dtype, KCS = p->kchunk rounded up to 64 (grape_gemv_kcs), then
// floats: row statistics [MT][2] and the cross-warp sums [8][MT][64]. scheduler/launch.cpp mirrors it.
__device__ __forceinline__ int grape_gemv_kcs(const KParams* p) { return ((int)p->kchunk + 63) & ~63; }
template <class T>
__device__ __forceinline__ float* grape_gemv_floats(unsigned char* smem, const KParams* p) {
  return reinterpret_cast<float*>(smem + GRAPE_GEMV_MT * grape_gemv_kcs(p) * sizeof(T));
}
__device__ __forceinline__ __half grape_gemv_from_float(float v, __half) { return __float2half_rn(v); }
__device__ __forceinline__ uint4 grape_gemv_pack8(const float* f, __half) {
  __half2 h[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
  return *reinterpret_cast<const uint4*>(h);
}
__device__ __forceinline__ uint4 grape_gemv_pack8(const float* f, __nv_bfloat16) {
  __nv_bfloat162 h[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return *reinterpret_cast<const uint4*>(h);
}
__device__ __forceinline__ __nv_bfloat16 grape_gemv_from_float(float v, __nv_bfloat16) {
  return __float2bfloat16_rn(v);
}

// Stages A rows [r0, r0 + rows) x k in [k0, k0 + kn) into As (row stride kcs; zeros up to a
// multiple of 64 in k).
template <class Ops>
__device__ __forceinline__ void grape_gemv_stage(const KParams* p, typename Ops::T* As, int kcs, float* st,
                                                 long long r0, int rows, long long k0, int kn, long long K) {
  using T = typename Ops::T;
  if constexpr (Ops::kRowStats) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int m = w; m < rows; m += GRAPE_GEMV_THREADS / 32) {
      float s0, s1;
      Ops::row_stats(p, r0 + m, K, &s0, &s1);
      if (lane == 0) {
        st[2 * m] = s0;
        st[2 * m + 1] = s1;
      }
    }
    __syncthreads();
    GRAPE_TIMELINE_MARK(p, 0);  // the rows' statistics
  }
  const unsigned kp = (kn + 63) & ~63, total = rows * kp;
  if constexpr (Ops::kAVec) {
    // Eight k per load (Ops::a_vec: 16-byte loads of A, or of a normalisation's input, scale and
    // shift) when everything is aligned to eight elements.
    if (kn % 8 == 0 && k0 % 8 == 0 && K % 8 == 0 && Ops::a_vec_ok(p)) {
      const unsigned kv = kp / 8, total_v = rows * kv;
      constexpr int B = 4;
      for (unsigned base = threadIdx.x; base < total_v; base += B * GRAPE_GEMV_THREADS) {
        float v[B][8];
#pragma unroll
        for (int u = 0; u < B; ++u) {
          const unsigned t = base + u * GRAPE_GEMV_THREADS, m = t / kv, kk = (t - m * kv) * 8;
          if (t < total_v && kk < (unsigned)kn) {
            if constexpr (Ops::kRowStats)
              Ops::a_vec(p, r0 + m, k0 + kk, st[2 * m], st[2 * m + 1], v[u]);
            else
              Ops::a_vec(p, r0 + m, k0 + kk, 0.0f, 0.0f, v[u]);
          } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) v[u][e] = 0.0f;
          }
        }
#pragma unroll
        for (int u = 0; u < B; ++u) {
          const unsigned t = base + u * GRAPE_GEMV_THREADS, m = t / kv, kk = (t - m * kv) * 8;
          if (t < total_v) *reinterpret_cast<uint4*>(As + m * kcs + kk) = grape_gemv_pack8(v[u], T());
        }
      }
      __syncthreads();
      GRAPE_TIMELINE_MARK(p, 1);  // A staged
      return;
    }
  }
  // Eight elements per thread are loaded before any is stored, so their loads are in flight together.
  constexpr int B = 8;
  for (unsigned base = threadIdx.x; base < total; base += B * GRAPE_GEMV_THREADS) {
    float v[B];
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const unsigned t = base + u * GRAPE_GEMV_THREADS, m = t / kp, kk = t - m * kp;
      v[u] = 0.0f;
      if (t < total && kk < (unsigned)kn) {
        if constexpr (Ops::kRowStats)
          v[u] = Ops::a(p, r0 + m, k0 + kk, st[2 * m], st[2 * m + 1]);
        else
          v[u] = Ops::a(p, r0 + m, k0 + kk, 0.0f, 0.0f);
      }
    }
#pragma unroll
    for (int u = 0; u < B; ++u) {
      const unsigned t = base + u * GRAPE_GEMV_THREADS, m = t / kp, kk = t - m * kp;
      if (t < total) As[m * kcs + kk] = grape_gemv_from_float(v[u], T());
    }
  }
  __syncthreads();
  GRAPE_TIMELINE_MARK(p, 1);  // A staged
}

__device__ __forceinline__ long long grape_gemv_partials_offset(long long tiles) {
  return ((tiles * 4 + 255) / 256) * 256;
}

// Split-K completion, shared with gemm_mma.cuh: every split of output tile `tile` has written its
// partial sums for rows [r0, r0 + rows) x columns [n0, n0 + cols); the last split to arrive adds
// them and stores through the epilogue. 256 threads. Each element's sum is (s0 + s1) + (s2 + s3),
// s_j the sum in order of splits j, j + 4, ... below the last multiple of 4, the remaining splits
// added to s0, so the result does not depend on the launch.
//
// The finishing block is the kernel's critical path (on BERT's b=1 products the other blocks had
// long ended while it summed one element at a time): each thread takes G groups of W consecutive
// columns (W = 4: 16-byte loads where the rows allow) and, for four splits at a time, issues all
// 4 * G loads before any add, with no branch between them (a group past the tile reads the tile's
// first group and is not stored).
__device__ __forceinline__ void grape_add4(float4& s, const float4& v) {
  s.x += v.x;
  s.y += v.y;
  s.z += v.z;
  s.w += v.w;
}

template <class Ops, int G, int W>
__device__ __forceinline__ void grape_splitk_sum(const KParams* p, const float* base, long long stride,
                                                 int splits, long long r0, long long n0, int nr, int nc) {
  const long long N = Ops::N(p);
  const int gc = nc / W, groups = nr * gc;
  auto load = [&](long long o) {
    if constexpr (W == 4)
      return __ldcg(reinterpret_cast<const float4*>(base + o));
    else
      return make_float4(__ldcg(base + o), 0.0f, 0.0f, 0.0f);
  };
  for (int g0 = threadIdx.x; g0 < groups; g0 += 256 * G) {
    float4 s[G][4];
    long long off[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int q = g0 + g * 256 < groups ? g0 + g * 256 : 0;
      off[g] = (long long)(q / gc) * N + (q % gc) * W;
#pragma unroll
      for (int j = 0; j < 4; ++j) s[g][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    int sp = 0;
    for (; sp + 4 <= splits; sp += 4) {
      float4 v[G][4];
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int j = 0; j < 4; ++j) v[g][j] = load(off[g] + (sp + j) * stride);
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int j = 0; j < 4; ++j) grape_add4(s[g][j], v[g][j]);
    }
    if (sp < splits) {  // 1 to 3 splits left, loaded together, added in order to s0
      const int left = splits - sp;
      float4 v[G][3];
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int j = 0; j < 3; ++j) v[g][j] = load(off[g] + (sp + (j < left ? j : 0)) * stride);
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int j = 0; j < 3; ++j)
          if (j < left) grape_add4(s[g][0], v[g][j]);
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int q = g0 + g * 256;
      if (q >= groups) break;
      const long long r = r0 + q / gc, n = n0 + (long long)(q % gc) * W;
      const float t[4] = {(s[g][0].x + s[g][1].x) + (s[g][2].x + s[g][3].x),
                          (s[g][0].y + s[g][1].y) + (s[g][2].y + s[g][3].y),
                          (s[g][0].z + s[g][1].z) + (s[g][2].z + s[g][3].z),
                          (s[g][0].w + s[g][1].w) + (s[g][2].w + s[g][3].w)};
#pragma unroll
      for (int e = 0; e < W; ++e) Ops::store(p, r, n + e, t[e]);
    }
  }
}

// G: column groups per thread and pass. The GEMMs take 2 (8 loads in flight; 4 would hold 128
// floats at once, sums and loads, and spill at 128 registers); the GEMVs 1 (at most 16 rows: one
// or two passes; their main loops already use every register they may).
template <class Ops, int G>
__device__ void grape_splitk_finish(const KParams* p, long long tile, long long tiles, long long r0,
                                    long long rows, long long n0, int cols) {
  __shared__ int last;
  const long long R = Ops::R(p), N = Ops::N(p);
  const int splits = (int)p->splits;
  unsigned int* counters = static_cast<unsigned int*>(p->scratch);
  const float* part = reinterpret_cast<const float*>(static_cast<const char*>(p->scratch) +
                                                     grape_gemv_partials_offset(tiles));
  // The block's partial stores happen before thread 0's fence (barrier), which orders them before
  // its arrival (cumulativity): one fence per block, not one per thread.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&counters[tile], 1u) == (unsigned int)(splits - 1);
    __threadfence();
  }
  __syncthreads();
  if (!last) return;
  const int nr = (int)min(rows, R - r0), nc = (int)min((long long)cols, N - n0);
  const float* base = part + r0 * N + n0;
  if ((N & 3) == 0 && (nc & 3) == 0 && (reinterpret_cast<size_t>(base) & 15) == 0)
    grape_splitk_sum<Ops, G, 4>(p, base, R * N, splits, r0, n0, nr, nc);
  else
    grape_splitk_sum<Ops, G, 1>(p, base, R * N, splits, r0, n0, nr, nc);
  __syncthreads();
  if (threadIdx.x == 0) counters[tile] = 0;
}

template <class Ops>
__device__ __forceinline__ void grape_gemv_emit(const KParams* p, long long tiles, long long split,
                                                long long r, long long n, float v) {
  if (p->splits == 1) {
    Ops::store(p, r, n, v);
  } else {
    float* part =
        reinterpret_cast<float*>(static_cast<char*>(p->scratch) + grape_gemv_partials_offset(tiles));
    part[(split * Ops::R(p) + r) * Ops::N(p) + n] = v;
  }
}

// Sums C values per lane over the lanes whose indices differ only in bits HI, HI / 2, ..., LO (powers
// of two), reduce-scatter style: at each bit a lane keeps one half of its values and adds its
// partner's copy of that half. Afterwards f[j], j < C * LO / (2 * HI), is the complete sum of the
// value with index j + C / (2 * HI) * (lane & bits) — C - C * LO / (2 * HI) shuffles in all,
// instead of C per bit.
template <int C, int H, int O, int LO>
__device__ __forceinline__ void grape_reduce_scatter_level(float (&f)[C], int lane) {
  if constexpr (O >= LO) {
    const bool upper = (lane & O) != 0;
#pragma unroll
    for (int j = 0; j < H; ++j) {
      const float send = upper ? f[j] : f[j + H];
      const float keep = upper ? f[j + H] : f[j];
      f[j] = keep + __shfl_xor_sync(0xffffffffu, send, O);
    }
    grape_reduce_scatter_level<C, H / 2, O / 2, LO>(f, lane);
  }
}
template <int C, int HI, int LO>
__device__ __forceinline__ void grape_reduce_scatter(float (&f)[C], int lane) {
  grape_reduce_scatter_level<C, C / 2, HI, LO>(f, lane);
}

// Programmatic dependent launch (grid_dependency.cuh) in a GEMV entry point whose weight no kernel
// writes (Ops::kWeightBeforeWait, jit/emit_matmul.cpp): the entry does not wait at its start; the
// body requests its first weight vectors, then waits here and checks the predicate (false: the
// step is skipped), so those loads overlap the predecessor's end. Elsewhere the entry has waited.
template <class Ops>
__device__ __forceinline__ bool grape_gemv_wait(const KParams* p) {
  if constexpr (Ops::kWeightBeforeWait) {
    GRAPE_GRID_WAIT();
    GRAPE_TIMELINE_WAITED(p);
    if (p->pred && !*p->pred) return false;
  }
  return true;
}
// After the last pass over the weight: the successor may launch (Ops::kTriggerAfterWeight) and
// request its own weight while this kernel adds and stores its sums.
template <class Ops>
__device__ __forceinline__ void grape_gemv_weight_read() {
  if constexpr (Ops::kTriggerAfterWeight) GRAPE_LAUNCH_DEPENDENTS();
}

// W [K][N]: TX threads cover TX * kN consecutive columns of a weight row (16 bytes each), the
// 256 / TX groups of TX threads walk K; warp shuffles and then shared memory add the partial sums.
template <class Ops, int TX>
__device__ void grape_gemv_kn(const KParams* p, long long item, unsigned char* smem) {
  using W = typename Ops::W;
  using T = typename Ops::T;
  constexpr int V = GrapeVec<W>::kN, MT = GRAPE_GEMV_MT, TN = TX * V, KG = GRAPE_GEMV_THREADS / TX;
  static_assert(TX == 1 || TX == 2 || TX == 4 || TX == 8, "gemv_kn: TX is 1, 2, 4 or 8");
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const long long tiles = (N + TN - 1) / TN, tile = item % tiles, split = item / tiles;
  const long long n0 = tile * TN, k0 = split * p->kchunk;
  const int kn = (int)max(0LL, min(p->kchunk, K - k0)), kcs = grape_gemv_kcs(p);
  T* As = reinterpret_cast<T*>(smem);
  float* st = grape_gemv_floats<T>(smem, p);
  float* red = st + 2 * MT;
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const long long n = n0 + tx * V;
  const bool vec = N % V == 0 && n + V <= N;
  const W* wt = Ops::w(p) + k0 * N;
  // The first GRAPE_GEMV_PF weight vectors of this thread are requested before A is staged, so
  // their latency overlaps the row statistics and A's loads.
  uint4 pre[GRAPE_GEMV_PF];
  if (vec) {
#pragma unroll
    for (int t = 0; t < GRAPE_GEMV_PF; ++t)
      pre[t] = ty + KG * t < kn ? grape_ld_stream16(wt + (long long)(ty + KG * t) * N + n)
                                : make_uint4(0, 0, 0, 0);
  }
  if (!grape_gemv_wait<Ops>(p)) return;
  for (long long r0 = 0; r0 < R; r0 += MT) {
    const int rows = (int)min((long long)MT, R - r0);
    grape_gemv_stage<Ops>(p, As, kcs, st, r0, rows, k0, kn, K);
    float acc[MT * V];
#pragma unroll
    for (int i = 0; i < MT * V; ++i) acc[i] = 0.0f;
    // Weight row k0 + kk (this thread's V columns) times A's column kk, into every row's sums.
    auto add_row = [&](int kk, const float* wv) {
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        if (m < rows) {
          const float a = GrapeVec<T>::one(As, m * kcs + kk);
#pragma unroll
          for (int v = 0; v < V; ++v) acc[m * V + v] = fmaf(a, wv[v], acc[m * V + v]);
        }
      }
    };
    if (vec) {
#pragma unroll
      for (int t = 0; t < GRAPE_GEMV_PF; ++t) {
        const int kk = ty + KG * t;
        if (kk < kn) {
          float wv[V];
          GrapeVec<W>::unpack(r0 == 0 ? pre[t] : grape_ld_stream16(wt + (long long)kk * N + n), wv);
          add_row(kk, wv);
        }
      }
#pragma unroll 4
      for (int kk = ty + KG * GRAPE_GEMV_PF; kk < kn; kk += KG) {
        float wv[V];
        GrapeVec<W>::unpack(grape_ld_stream16(wt + (long long)kk * N + n), wv);
        add_row(kk, wv);
      }
    } else {
      for (int kk = ty; kk < kn; kk += KG) {
        float wv[V];
#pragma unroll
        for (int v = 0; v < V; ++v)
          wv[v] = n + v < N ? GrapeVec<W>::one(wt, (long long)kk * N + n + v) : 0.0f;
        add_row(kk, wv);
      }
    }
    if (r0 + MT >= R) grape_gemv_weight_read<Ops>();
    // Lanes tx, tx + TX, ... of a warp hold the same columns for different k: afterwards lane
    // (g, tx) holds the warp's sums of acc[2 * TX * g + j], j < 2 * TX.
    grape_reduce_scatter<MT * V, 16, TX>(acc, lane);
#pragma unroll
    for (int j = 0; j < 2 * TX; ++j) {
      const int i = 2 * TX * (lane / TX) + j, m = i / V;
      if (m < rows) red[(w * MT + m) * 64 + tx * V + i % V] = acc[j];
    }
    __syncthreads();
    GRAPE_TIMELINE_MARK(p, 2);  // every warp's products summed
    for (int t = threadIdx.x; t < rows * TN; t += GRAPE_GEMV_THREADS) {
      const int m = t / TN, c = t - m * TN;
      float s = 0.0f;
#pragma unroll
      for (int ww = 0; ww < 8; ++ww) s += red[(ww * MT + m) * 64 + c];
      if (n0 + c < N) grape_gemv_emit<Ops>(p, tiles, split, r0 + m, n0 + c, s);
    }
    __syncthreads();
  }
  if (p->splits > 1) grape_splitk_finish<Ops, 1>(p, tile, tiles, 0, R, n0, TN);
}

// W [N][K]: in each warp, 4 groups of 8 lanes read 4 weight rows (columns of the product), 8 * kN
// consecutive k each (128 contiguous bytes); each lane keeps 4 columns (16 per warp, 128 per block);
// shuffles over the 8 lanes of a group add the partial sums.
template <class Ops>
__device__ void grape_gemv_nk(const KParams* p, long long item, unsigned char* smem) {
  using W = typename Ops::W;
  using T = typename Ops::T;
  constexpr int V = GrapeVec<W>::kN, MT = GRAPE_GEMV_MT, JN = 4, TN = GRAPE_GEMV_NK_TILE;
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const long long tiles = (N + TN - 1) / TN, tile = item % tiles, split = item / tiles;
  const long long n0 = tile * TN, k0 = split * p->kchunk;
  const int kn = (int)max(0LL, min(p->kchunk, K - k0)), kcs = grape_gemv_kcs(p);
  T* As = reinterpret_cast<T*>(smem);
  float* st = grape_gemv_floats<T>(smem, p);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 3, kl = lane & 7;
  const long long nb = n0 + w * 16 + g;  // this lane's columns: nb + 4 * j
  const bool vec = K % V == 0;
  const W* wt = Ops::w(p) + k0;
  // Row n of the weight from k0. In a kernel of sibling products (Ops::kParts > 1) each row is in
  // its part's weight (Ops::w_row), found once per row; a single weight keeps the plain offset,
  // which needs fewer registers than pointers held per row.
  const W* wr[Ops::kParts > 1 ? JN : 1];
  if constexpr (Ops::kParts > 1) {
#pragma unroll
    for (int j = 0; j < JN; ++j) wr[j] = Ops::w_row(p, nb + 4 * j < N ? nb + 4 * j : 0) + k0;
  }
  auto wrow = [&](int j) -> const W* {
    if constexpr (Ops::kParts == 1)
      return wt + (nb + 4 * j) * K;
    else
      return wr[j];
  };
  // This lane's weights at k0 + kk: JN rows, V consecutive k each.
  auto load = [&](int kk, int j, uint4& u) {
    const long long n = nb + 4 * j;
    u = n < N && vec && kk + V <= kn ? grape_ld_stream16(wrow(j) + kk) : make_uint4(0, 0, 0, 0);
  };
  // The first GRAPE_GEMV_NK_PF steps' weights are requested before A is staged (see gemv_kn).
  uint4 pre[GRAPE_GEMV_NK_PF][JN];
#pragma unroll
  for (int t = 0; t < GRAPE_GEMV_NK_PF; ++t)
#pragma unroll
    for (int j = 0; j < JN; ++j) load(kl * V + t * 8 * V, j, pre[t][j]);
  if (!grape_gemv_wait<Ops>(p)) return;
  for (long long r0 = 0; r0 < R; r0 += MT) {
    const int rows = (int)min((long long)MT, R - r0);
    grape_gemv_stage<Ops>(p, As, kcs, st, r0, rows, k0, kn, K);
    float acc[MT * JN];
#pragma unroll
    for (int i = 0; i < MT * JN; ++i) acc[i] = 0.0f;
    // One step: k in [kk, kk + V) of this lane's JN rows, from `u` where a vector load applies.
    auto step = [&](int kk, const uint4* u) {
      float wv[JN][V];
#pragma unroll
      for (int j = 0; j < JN; ++j) {
        const long long n = nb + 4 * j;
        if (n < N && vec && kk + V <= kn) {
          GrapeVec<W>::unpack(u[j], wv[j]);
        } else {
#pragma unroll
          for (int v = 0; v < V; ++v)
            wv[j][v] = (n < N && kk + v < kn) ? GrapeVec<W>::one(wrow(j), kk + v) : 0.0f;
        }
      }
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        if (m < rows) {
          float a[V];
          GrapeVec<T>::unpack(*reinterpret_cast<const uint4*>(As + m * kcs + kk), a);
#pragma unroll
          for (int j = 0; j < JN; ++j)
#pragma unroll
            for (int v = 0; v < V; ++v) acc[m * JN + j] = fmaf(a[v], wv[j][v], acc[m * JN + j]);
        }
      }
    };
#pragma unroll
    for (int t = 0; t < GRAPE_GEMV_NK_PF; ++t) {
      const int kk = kl * V + t * 8 * V;
      if (kk >= kn) break;
      if (r0 == 0) {
        step(kk, pre[t]);
      } else {
        uint4 u[JN];
#pragma unroll
        for (int j = 0; j < JN; ++j) load(kk, j, u[j]);
        step(kk, u);
      }
    }
#pragma unroll 2
    for (int kk = kl * V + GRAPE_GEMV_NK_PF * 8 * V; kk < kn; kk += 8 * V) {
      uint4 u[JN];
#pragma unroll
      for (int j = 0; j < JN; ++j) load(kk, j, u[j]);
      step(kk, u);
    }
    if (r0 + MT >= R) grape_gemv_weight_read<Ops>();
    // The 8 lanes of a group hold the same columns for different k: afterwards lane kl holds the
    // sums of row kl (acc[JN * kl + j]) for its JN columns.
    static_assert(MT * JN == 32 && JN == 4, "gemv_nk: one row of 4 columns per lane after the reduction");
    grape_reduce_scatter<MT * JN, 4, 1>(acc, lane);
    if (kl < rows) {
#pragma unroll
      for (int j = 0; j < JN; ++j) {
        const long long n = nb + 4 * j;
        if (n < N) grape_gemv_emit<Ops>(p, tiles, split, r0 + kl, n, acc[j]);
      }
    }
    __syncthreads();
  }
  if (p->splits > 1) grape_splitk_finish<Ops, 1>(p, tile, tiles, 0, R, n0, TN);
}

#endif  // GRAPE_KERNELS_GEMV_CUH
