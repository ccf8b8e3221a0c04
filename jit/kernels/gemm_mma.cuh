// Compute-bound matrix products on the tensor cores (f16 or bf16 operands, fp32 accumulation):
//
//   out[r][n] = Ops::store(r, n, sum_k A(r, k) * W(k, n))        r < R, n < N, k < K
//
// One work item is a BM x BN output tile. Operands go through shared memory in a STAGES-deep
// cp.async pipeline (W always when its rows are 16-byte aligned; A when Ops::kADirect, i.e. A is a
// plain row-major [R][K] buffer), are read into registers with ldmatrix and multiplied with
// mma.sync.m16n8k16. A with a fused row normalisation (Ops::kRowStats) or any other computed A is
// produced by Ops::a and stored into the same shared-memory stage. Rows are padded by 16 bytes so
// ldmatrix is free of bank conflicts. Ragged edges read zeros; the epilogue stores only r < R, n < N.
//
// Ops: as gemv.cuh, plus
//   typedef T                        the operand type (__half or __nv_bfloat16) of A and W
//   static constexpr bool kWKN       W layout [K][N] (else [N][K])
//   static constexpr bool kADirect;  static const T* a_ptr(p)
//   static constexpr bool kAView;    static const T* a_addr(p, r, k)   A is a buffer seen through
//                                    views (merge_heads, say): 8 k whose addresses are consecutive
//                                    and 16-byte aligned (every address checked, unless kAViewRows:
//                                    the views' shapes show it) go by cp.async, others element by
//                                    element into the same stage
//   static constexpr bool kAViewSplit;  a_addr(p, r, k) == a_addr(p, r, 0) + (a_addr(p, 0, k) -
//                                    a_addr(p, 0, 0)) (Ctx::axis_separable): each row's part is
//                                    computed once per tile, the k part once per K step
#ifndef GRAPE_KERNELS_GEMM_MMA_CUH
#define GRAPE_KERNELS_GEMM_MMA_CUH

#define GRAPE_GEMM_THREADS 256
#define GRAPE_GEMM_BK 32

// Eight consecutive elements that are not 16-byte aligned, one by one: a call, so that the compiler
// cannot if-convert it into the copy loop, where its 16 loads and stores would be issued
// (predicated off) for every chunk of every K step (run 69: 1.6 M of BERT's out-projection's
// 3.6 M instructions).
template <class T>
__device__ __noinline__ void grape_copy8_unaligned(T* dst, const T* src) {
#pragma unroll
  for (int e = 0; e < 8; ++e) dst[e] = src[e];
}

template <class T>
struct GrapeMma;
template <>
struct GrapeMma<__half> {
  __device__ static void mma(float* c, const unsigned* a, const unsigned* b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ static __half from(float x) { return __float2half_rn(x); }
  // Two values as one 32-bit mma operand register, `lo` in the low half.
  __device__ static unsigned pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
  }
  __device__ static float2 unpack(unsigned x) {
    return __half22float2(*reinterpret_cast<const __half2*>(&x));
  }
};
template <>
struct GrapeMma<__nv_bfloat16> {
  __device__ static void mma(float* c, const unsigned* a, const unsigned* b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ static __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
  __device__ static unsigned pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
  }
  __device__ static float2 unpack(unsigned x) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
  }
};

__device__ __forceinline__ unsigned grape_smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared; `bytes` < 16 zero-fills the rest (0: all zeros, nothing read).
__device__ __forceinline__ void grape_cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(grape_smem_addr(dst)), "l"(src),
               "r"(bytes));
}
__device__ __forceinline__ void grape_cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void grape_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

__device__ __forceinline__ void grape_cp_async16_s(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void grape_ldmatrix_x4_s(unsigned* r, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void grape_ldmatrix_x4_trans_s(unsigned* r, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// The 16-byte chunks one thread copies into every stage of one operand: CH chunks of a stage of
// ROWS rows x COLS elements (row stride LD in shared memory), chunk c = threadIdx.x + i * threads.
// Global and shared addresses are computed once per work item; a K step only moves the source.
template <int ROWS, int COLS, int LD>
struct GrapeChunks {
  static constexpr int kChunks = ROWS * COLS / 8;
  static constexpr int kPerThread = (kChunks + GRAPE_GEMM_THREADS - 1) / GRAPE_GEMM_THREADS;
  const char* src[kPerThread];  // the chunk's global address at the first K step (valid when row_ok)
  unsigned dst[kPerThread];     // its shared-memory byte offset within a stage
  int col[kPerThread];          // its first column (element) within the stage
  bool row_ok[kPerThread];      // the chunk exists and its row is in range
  __device__ __forceinline__ int row(int i) const {
    return (int)((threadIdx.x + i * GRAPE_GEMM_THREADS) / (COLS / 8));
  }
  // Whether this thread has an i-th chunk (false only when the stage has fewer chunks than threads).
  __device__ __forceinline__ bool has(int i) const {
    return kPerThread * GRAPE_GEMM_THREADS == kChunks || threadIdx.x + i * GRAPE_GEMM_THREADS < kChunks;
  }
};
template <int ROWS, int COLS, int LD, class T>
__device__ __forceinline__ void grape_chunks_init(GrapeChunks<ROWS, COLS, LD>& ch, const T* base,
                                                  long long row0, long long rows, long long row_stride,
                                                  long long col0, long long cols_valid) {
#pragma unroll
  for (int i = 0; i < GrapeChunks<ROWS, COLS, LD>::kPerThread; ++i) {
    const int c = threadIdx.x + i * GRAPE_GEMM_THREADS, r = c / (COLS / 8), cc = (c % (COLS / 8)) * 8;
    const bool live = c < GrapeChunks<ROWS, COLS, LD>::kChunks;
    ch.row_ok[i] = live && row0 + r < rows && cc < cols_valid;
    ch.src[i] =
        reinterpret_cast<const char*>(ch.row_ok[i] ? base + (row0 + r) * row_stride + col0 + cc : base);
    ch.dst[i] = (unsigned)((r * LD + cc) * sizeof(T));
    ch.col[i] = cc;
  }
}

__device__ __forceinline__ void grape_ldmatrix_x4(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(grape_smem_addr(p)));
}
__device__ __forceinline__ void grape_ldmatrix_x4_trans(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(grape_smem_addr(p)));
}

// Work item `item` = (output tile, K split): a BM x BN tile over K range [split * kchunk, + kchunk),
// 8 warps as WARPS_M x (8 / WARPS_M), each warp a (BM / WARPS_M) x (BN / WARPS_N) sub-tile of 16 x 8
// mma tiles, S shared-memory stages. Shared memory: S * (BM + max(BN, BK) ...) operand stages plus
// the row statistics; scheduler/launch.cpp computes the same size. With more than one split the
// partial sums meet in grape_splitk_finish (gemv.cuh).
//
// AWHOLE (the 16-row tiles of a vocabulary projection, scheduler::gemv_tc_dims): the block's rows
// of A over its whole K range are staged once, by grape_gemv_stage (16-byte loads, a fused
// normalisation applied), after the first W stages are requested; only W moves through the stages.
// Shared memory: S W stages, the row statistics, then A as [BM][kcs], kcs = the K range rounded up
// to 64, plus 8 (grape_gemm_whole_a_stride). A computed K step by K step instead (Ops::a, one step
// ahead) left lm_head's loop waiting on A's load latency: 1.8 of 4.8 TB/s (run 161).
__device__ __forceinline__ int grape_gemm_whole_a_stride(long long kchunk) {
  return (int)(((kchunk + 63) & ~63LL) + 8);
}
template <class Ops, int BM, int BN, int WARPS_M, int S, bool AWHOLE = false>
__device__ void grape_gemm_mma(const KParams* p, long long item, unsigned char* smem) {
  using T = typename Ops::T;
  constexpr int BK = GRAPE_GEMM_BK, WARPS_N = 8 / WARPS_M;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MI = WM / 16, NI = WN / 8;
  constexpr int LDA = BK + 8;                       // A stage: [BM][LDA]
  constexpr int LDB = Ops::kWKN ? BN + 8 : BK + 8;  // B stage: [BK][LDB] or [BN][LDB]
  constexpr int A_STAGE = BM * LDA, B_STAGE = Ops::kWKN ? BK * LDB : BN * LDB;
  static_assert(NI % 2 == 0, "ldmatrix.x4 loads two n8 tiles of B");
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const long long tn = (N + BN - 1) / BN, tiles = ((R + BM - 1) / BM) * tn;
  const long long tile = item % tiles, split = item / tiles;
  const long long m0 = (tile / tn) * BM, n0 = (tile % tn) * BN;
  const long long kbeg = split * p->kchunk, kend = min(K, kbeg + p->kchunk);
  T* As = reinterpret_cast<T*>(smem);
  T* Bs = AWHOLE ? As : As + S * A_STAGE;
  float* st = reinterpret_cast<float*>(Bs + S * B_STAGE);  // [BM][2]
  const int kcs = AWHOLE ? grape_gemm_whole_a_stride(p->kchunk) : LDA;  // A's row stride
  if constexpr (AWHOLE) As = reinterpret_cast<T*>(st + 2 * BM);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int wm0 = (w / WARPS_N) * WM, wn0 = (w % WARPS_N) * WN;
  const T* wp = reinterpret_cast<const T*>(Ops::w(p));
  const bool w_vec = Ops::kWKN ? N % 8 == 0 : K % 8 == 0;
  // A staged by load_tile (else by fetch_a / store_a around the tensor-core work, or whole).
  const bool a_vec = !AWHOLE && ((Ops::kADirect && K % 8 == 0) || Ops::kAView);
  const bool a_steps = !AWHOLE && !a_vec;  // A through fetch_a / store_a

  if constexpr (Ops::kRowStats && !AWHOLE) {
    for (int m = w; m < BM; m += 8) {
      float s0 = 0.0f, s1 = 0.0f;
      if (m0 + m < R) Ops::row_stats(p, m0 + m, K, &s0, &s1);
      if (lane == 0) {
        st[2 * m] = s0;
        st[2 * m + 1] = s1;
      }
    }
    __syncthreads();
  }

  // A computed by Ops::a: fetched into registers before the current tile's mma and stored into
  // its stage after, so the loads' latency overlaps the tensor-core work.
  constexpr int AREG = BM * BK / GRAPE_GEMM_THREADS;
  float areg[AREG];
  auto fetch_a = [&](long long k0) {
#pragma unroll
    for (int i = 0; i < AREG; ++i) {
      const int t = threadIdx.x + i * GRAPE_GEMM_THREADS, r = t / BK, kk = t % BK;
      const long long gr = m0 + r, gk = k0 + kk;
      float v = 0.0f;
      if (gr < R && gk < kend) {
        if constexpr (Ops::kRowStats)
          v = Ops::a(p, gr, gk, st[2 * r], st[2 * r + 1]);
        else
          v = Ops::a(p, gr, gk, 0.0f, 0.0f);
      }
      areg[i] = v;
    }
  };
  auto store_a = [&](int stage) {
    T* as = As + stage * A_STAGE;
#pragma unroll
    for (int i = 0; i < AREG; ++i) {
      const int t = threadIdx.x + i * GRAPE_GEMM_THREADS;
      as[(t / BK) * LDA + t % BK] = GrapeMma<T>::from(areg[i]);
    }
  };
  // The row part of this thread's A chunks' addresses when A is a separable view (kAViewSplit).
  constexpr int AROWS = (BM * BK / 8 + GRAPE_GEMM_THREADS - 1) / GRAPE_GEMM_THREADS;
  const char* arow[AROWS];
#pragma unroll
  for (int j = 0; j < AROWS; ++j) {
    arow[j] = nullptr;
    if constexpr (Ops::kAViewSplit && !Ops::kADirect) {
      const long long gr = m0 + (threadIdx.x + j * GRAPE_GEMM_THREADS) / (BK / 8);
      arow[j] = reinterpret_cast<const char*>(Ops::a_addr(p, gr < R ? gr : m0, 0));
    }
  }
  // Chunk addresses of the direct A and the vectorised W, computed once (GrapeChunks).
  const unsigned sA = grape_smem_addr(As), sB = grape_smem_addr(Bs);
  GrapeChunks<BM, BK, LDA> ca;  // used when A is direct (else a_ptr is null and nothing reads it)
  grape_chunks_init(ca, Ops::kADirect ? Ops::a_ptr(p) : wp, m0, R, K, kbeg, BK);
  GrapeChunks<(Ops::kWKN ? BK : BN), (Ops::kWKN ? BN : BK), LDB> cw;
  if constexpr (Ops::kWKN)
    grape_chunks_init(cw, wp, kbeg, K, N, n0, N - n0);
  else
    grape_chunks_init(cw, wp, n0, N, K, kbeg, BK);
  if constexpr (!Ops::kWKN) {
    // Rows through Ops::w_row: in a kernel of sibling products each row is in its part's weight.
#pragma unroll
    for (int i = 0; i < cw.kPerThread; ++i)
      if (cw.row_ok[i]) cw.src[i] = reinterpret_cast<const char*>(Ops::w_row(p, n0 + cw.row(i)) + kbeg + cw.col[i]);
  }
  auto load_tile = [&](int stage, long long k0) {
    T* as = As + stage * A_STAGE;
    T* bs = Bs + stage * B_STAGE;
    const int step = (int)((k0 - kbeg) / BK);  // K steps since the first
    const long long left = kend - k0;          // columns of K (rows for kWKN) left in range
    if (a_vec) {
      if constexpr (Ops::kADirect) {
#pragma unroll
        for (int i = 0; i < ca.kPerThread; ++i) {
          if (!ca.has(i)) continue;
          const bool ok = ca.row_ok[i] && ca.col[i] < left;
          grape_cp_async16_s(sA + stage * A_STAGE * (unsigned)sizeof(T) + ca.dst[i],
                             ok ? ca.src[i] + (long long)step * BK * (long long)sizeof(T) : ca.src[i],
                             ok ? 16 : 0);
        }
      } else if constexpr (Ops::kAView) {
#pragma unroll
        for (int j = 0; j < AROWS; ++j) {
          const int c = threadIdx.x + j * GRAPE_GEMM_THREADS;
          if (c >= BM * BK / 8) break;
          const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
          const long long gr = m0 + r, gk = k0 + kc;
          T* dst = as + r * LDA + kc;
          if (gr < R && gk + 8 <= kend) {
            const T* a0;
            if constexpr (Ops::kAViewSplit)  // the row's part, computed once, plus the k part
              a0 = reinterpret_cast<const T*>(arow[j] + (reinterpret_cast<const char*>(Ops::a_addr(p, 0, gk)) -
                                                         reinterpret_cast<const char*>(Ops::a_addr(p, 0, 0))));
            else
              a0 = Ops::a_addr(p, gr, gk);
            bool run = (reinterpret_cast<unsigned long long>(a0) & 15) == 0;
            if constexpr (!Ops::kAViewRows)
#pragma unroll
              for (int e = 1; e < 8; ++e) run = run && Ops::a_addr(p, gr, gk + e) == a0 + e;
            if (run) {
              grape_cp_async16(dst, a0, 16);
              continue;
            }
            if constexpr (Ops::kAViewRows) {  // consecutive but not 16-byte aligned
              grape_copy8_unaligned(dst, a0);
              continue;
            }
          }
          float f[8];
#pragma unroll
          for (int e = 0; e < 8; ++e)
            f[e] = (gr < R && gk + e < kend) ? Ops::a(p, gr, gk + e, 0.0f, 0.0f) : 0.0f;
#pragma unroll
          for (int e = 0; e < 8; ++e) dst[e] = GrapeMma<T>::from(f[e]);
        }
      }
    }
    if (w_vec) {
#pragma unroll
      for (int i = 0; i < cw.kPerThread; ++i) {
        if (!cw.has(i)) continue;
        // [K][N]: a chunk is a K row's 8 columns, in range while its row is; [N][K]: 8 K columns.
        const bool ok = cw.row_ok[i] && (Ops::kWKN ? cw.row(i) < left : cw.col[i] < left);
        const long long adv = Ops::kWKN ? (long long)step * BK * N : (long long)step * BK;
        grape_cp_async16_s(sB + stage * B_STAGE * (unsigned)sizeof(T) + cw.dst[i],
                           ok ? cw.src[i] + adv * (long long)sizeof(T) : cw.src[i], ok ? 16 : 0);
      }
    } else {
      for (int t = threadIdx.x; t < BK * BN; t += GRAPE_GEMM_THREADS) {
        if constexpr (Ops::kWKN) {
          const int r = t / BN, c = t % BN;
          const long long gk = k0 + r, gn = n0 + c;
          bs[r * LDB + c] = (gk < kend && gn < N) ? wp[gk * N + gn] : GrapeMma<T>::from(0.0f);
        } else {
          const int r = t / BK, c = t % BK;
          const long long gn = n0 + r, gk = k0 + c;
          bs[r * LDB + c] = (gk < kend && gn < N) ? Ops::w_row(p, gn)[gk] : GrapeMma<T>::from(0.0f);
        }
      }
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int KT = (int)max(0LL, (kend - kbeg + BK - 1) / BK);
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < KT) {
      load_tile(s, kbeg + (long long)s * BK);
      if (a_steps) {
        fetch_a(kbeg + (long long)s * BK);
        store_a(s);
      }
    }
    grape_cp_async_commit();
  }
  if constexpr (AWHOLE)  // while the first W stages are in flight; ends with __syncthreads
    grape_gemv_stage<Ops>(p, As, kcs, st, m0, (int)min((long long)BM, R - m0), kbeg, (int)(kend - kbeg), K);
  // This lane's ldmatrix addresses in stage 0 at kk = 0 (bytes in the shared window); a stage and
  // a K offset are constants added to them (for a whole A, the K step's offset).
  const unsigned a_ld = sA + (unsigned)(((wm0 + (lane & 15)) * kcs + (lane >> 4) * 8) * sizeof(T));
  const unsigned b_ld =
      Ops::kWKN ? sB + (unsigned)(((lane & 15) * LDB + wn0 + (lane >> 4) * 8) * sizeof(T))
                : sB + (unsigned)(((wn0 + (lane & 7) + ((lane >> 4) << 3)) * LDB + ((lane >> 3) & 1) * 8) *
                                  sizeof(T));
  int cur = 0, nxt = S - 1;  // the stage read now, the stage loaded now
  for (int kt = 0; kt < KT; ++kt) {
    grape_cp_async_wait<S - 2>();
    __syncthreads();
    const int nt = kt + S - 1;
    if (nt < KT) {
      load_tile(nxt, kbeg + (long long)nt * BK);
      if (a_steps) fetch_a(kbeg + (long long)nt * BK);
    }
    grape_cp_async_commit();
    const unsigned as = a_ld + (unsigned)((AWHOLE ? kt * BK : cur * A_STAGE) * sizeof(T));
    const unsigned bs = b_ld + (unsigned)(cur * B_STAGE * sizeof(T));
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        grape_ldmatrix_x4_s(af[i], as + (unsigned)((i * 16 * kcs + kk) * sizeof(T)));
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        if constexpr (Ops::kWKN)
          grape_ldmatrix_x4_trans_s(r, bs + (unsigned)((kk * LDB + j * 8) * sizeof(T)));
        else
          grape_ldmatrix_x4_s(r, bs + (unsigned)((j * 8 * LDB + kk) * sizeof(T)));
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) GrapeMma<T>::mma(acc[i][j], af[i], bf[j]);
    }
    if (a_steps && nt < KT) store_a(nxt);
    cur = cur + 1 == S ? 0 : cur + 1;
    nxt = nxt + 1 == S ? 0 : nxt + 1;
  }
  grape_cp_async_wait<0>();
  // A vocabulary projection's weight is read: its successor may launch (Ops::kTriggerAfterWeight).
  if constexpr (AWHOLE && Ops::kTriggerAfterWeight) GRAPE_LAUNCH_DEPENDENTS();
  __syncthreads();  // the next item's first loads overwrite the stages

  if (p->splits > 1) {
    float* part =
        reinterpret_cast<float*>(static_cast<char*>(p->scratch) + grape_gemv_partials_offset(tiles));
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const long long r = m0 + wm0 + i * 16 + (lane >> 2), n = n0 + wn0 + j * 8 + (lane & 3) * 2;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long long rr = r + (e >> 1) * 8, nn = n + (e & 1);
          if (rr < R && nn < N) part[(split * R + rr) * N + nn] = acc[i][j][e];
        }
      }
    }
    grape_splitk_finish<Ops, 2>(p, tile, tiles, m0, BM, n0, BN);
    return;
  }

  if (m0 + BM <= R && n0 + BN <= N) {
    // A whole tile: no bounds checks, so no branches between the epilogue's loads (read-only,
    // jit/emit_context.h) and stores, and the compiler issues the loads together.
    grape_tile_store<Ops>(n0, n0 + BN, [&](auto st) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const long long r = m0 + wm0 + i * 16 + (lane >> 2), n = n0 + wn0 + j * 8 + (lane & 3) * 2;
          st(p, r, n, acc[i][j][0]);
          st(p, r, n + 1, acc[i][j][1]);
          st(p, r + 8, n, acc[i][j][2]);
          st(p, r + 8, n + 1, acc[i][j][3]);
        }
    });
    return;
  }
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const long long r = m0 + wm0 + i * 16 + (lane >> 2), n = n0 + wn0 + j * 8 + (lane & 3) * 2;
      if (r < R) {
        if (n < N) Ops::store(p, r, n, acc[i][j][0]);
        if (n + 1 < N) Ops::store(p, r, n + 1, acc[i][j][1]);
      }
      if (r + 8 < R) {
        if (n < N) Ops::store(p, r + 8, n, acc[i][j][2]);
        if (n + 1 < N) Ops::store(p, r + 8, n + 1, acc[i][j][3]);
      }
    }
  }
}

#endif  // GRAPE_KERNELS_GEMM_MMA_CUH
