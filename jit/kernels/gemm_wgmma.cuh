// Hopper (sm_90a) matrix products: warpgroup MMA (wgmma.mma_async) on operands in shared memory.
//
//   out[r][n] = Ops::store(r, n, sum_k A(r, k) * W(n, k))        r < R, n < N, k < K
//
// One work item is a 128 x BN output tile (BN = 128; 64 for products too small to fill the GPU
// with 128 x 128 tiles; 96, a measured candidate (runtime/cuda/autotune.h), for products whose
// 128-wide tiles leave a quarter of the GPU idle: BERT b=16's 768-wide ones, 96 tiles of 128 x 128
// or 128 of 128 x 96 on 132 multiprocessors), computed by two warpgroups (256 threads), each 64 x BN with m64nBNk16
// instructions. A ([R][K], Ops::kADirect, or seen through views whose rows are consecutive and
// whose addresses are a row part plus a k part, Ops::kAViewSplit: each row's part is computed once
// per tile) and W ([N][K], so both operands are K-major, the layout
// wgmma reads without a transpose) go by cp.async into an S-stage ring of 128 x 64-element
// stages, each row one 128-byte line stored in the 128-byte swizzle (16-byte chunk c of row r at
// chunk c ^ (r % 8)) that the wgmma descriptors name, so the tensor cores read without bank
// conflicts. The loads run S - 2 stages ahead; one batch of wgmma stays in flight while the
// threads wait for the next stage (wgmma.wait_group 1), so the stage refilled in an iteration is
// the one read two iterations before. The finished tile goes through shared memory so that the
// epilogue's stores coalesce. Only compiled for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL):
// jit/emit_matmul.cpp's wide entry point falls back to gemm_mma.cuh elsewhere, and at run time
// when K % 8 != 0 (no 16-byte rows). scheduler/launch.cpp sizes the shared memory to match.
#ifndef GRAPE_KERNELS_GEMM_WGMMA_CUH
#define GRAPE_KERNELS_GEMM_WGMMA_CUH

#define GRAPE_WGMMA_BM 128
#define GRAPE_WGMMA_BK 64
// One pipeline stage of 128 x BN tiles: A's 128 rows and W's BN rows of 64 elements (128 bytes);
// of BM x BN tiles (BM = 64: gemm_wgmma.cuh's 64-row tiles), A's BM rows and W's BN.
#define GRAPE_WGMMA_STAGE_BYTES(BN) ((128 + (BN)) * 128)
#define GRAPE_WGMMA_STAGE_BYTES_M(BM, BN) (((BM) + (BN)) * 128)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// The 64 accumulator registers of one m64n128k16 instruction, as asm operands 0..63.
#define GRAPE_WGMMA_D64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GRAPE_WGMMA_D64_OUT \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// The 32 accumulator registers of one m64n64k16 instruction.
#define GRAPE_WGMMA_D32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GRAPE_WGMMA_D32_OUT \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// The 16 accumulator registers of one m64n32k16 instruction.
#define GRAPE_WGMMA_D16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define GRAPE_WGMMA_D16_OUT \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])

// The 48 accumulator registers of one m64n96k16 instruction.
#define GRAPE_WGMMA_D48 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define GRAPE_WGMMA_D48_OUT \
  GRAPE_WGMMA_D32_OUT, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])

// d += A * B^T for one k16 step of operand type TY (f16, bf16), n = 128 or 64; scale-d is 1
// (accumulate), no negation, no transposes.
#define GRAPE_WGMMA_M64N128K16(TY)                                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" GRAPE_WGMMA_D64          \
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                     \
               : GRAPE_WGMMA_D64_OUT                                                                  \
               : "l"(a), "l"(b), "r"(1))
#define GRAPE_WGMMA_M64N64K16(TY)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" GRAPE_WGMMA_D32           \
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                     \
               : GRAPE_WGMMA_D32_OUT                                                                  \
               : "l"(a), "l"(b), "r"(1))

#define GRAPE_WGMMA_M64N32K16(TY)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " {" GRAPE_WGMMA_D16           \
               "}, %16, %17, p, 1, 1, 0, 0;\n}\n"                                                     \
               : GRAPE_WGMMA_D16_OUT                                                                  \
               : "l"(a), "l"(b), "r"(1))

#define GRAPE_WGMMA_M64N96K16(TY)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n96k16.f32." TY "." TY " {" GRAPE_WGMMA_D48           \
               "}, %48, %49, p, 1, 1, 0, 0;\n}\n"                                                     \
               : GRAPE_WGMMA_D48_OUT                                                                  \
               : "l"(a), "l"(b), "r"(1))

template <class T, int N> struct GrapeWgmma;
template <> struct GrapeWgmma<__half, 128> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N128K16("f16"); }
};
template <> struct GrapeWgmma<__nv_bfloat16, 128> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N128K16("bf16"); }
};
template <> struct GrapeWgmma<__half, 96> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N96K16("f16"); }
};
template <> struct GrapeWgmma<__nv_bfloat16, 96> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N96K16("bf16"); }
};
template <> struct GrapeWgmma<__half, 32> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N32K16("f16"); }
};
template <> struct GrapeWgmma<__nv_bfloat16, 32> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N32K16("bf16"); }
};
template <> struct GrapeWgmma<__half, 64> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N64K16("f16"); }
};
template <> struct GrapeWgmma<__nv_bfloat16, 64> {
  __device__ static void mma(float* d, unsigned long long a, unsigned long long b) { GRAPE_WGMMA_M64N64K16("bf16"); }
};

// A shared-memory matrix descriptor for a K-major operand in 128-byte swizzle: start address,
// leading byte offset 16 (unused by this layout), stride byte offset 1024 (from one group of 8
// rows to the next), swizzle mode 1 (128 B). Addresses and offsets are in 16-byte units.
__device__ __forceinline__ unsigned long long grape_wgmma_desc(unsigned saddr) {
  return (unsigned long long)((saddr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void grape_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void grape_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void grape_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// The accumulators are written by the asynchronous wgmma: pin them so the compiler neither reads
// nor moves them between an instruction's issue and its wait.
template <int NREG> __device__ __forceinline__ void grape_wgmma_pin(float* d) {
#pragma unroll
  for (int i = 0; i < NREG; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Writes to shared memory by ordinary (generic-proxy) stores and cp.async, made visible to the
// tensor cores' reads (the async proxy); each thread fences its own writes before the barrier.
__device__ __forceinline__ void grape_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// A value the optimiser must treat as unknown from here on, so it keeps it in a register instead
// of recomputing it at each use (see the chunk addresses below).
__device__ __forceinline__ void grape_opaque(const char*& p) { asm volatile("" : "+l"(p)); }
__device__ __forceinline__ void grape_opaque(unsigned& x) { asm volatile("" : "+r"(x)); }

// The pipeline depth is the launch's: as many 32 KB stages as the dynamic shared memory holds
// after the 1024 bytes of alignment (scheduler/launch.cpp gives 3 for two blocks per
// multiprocessor, 4 for one), so one kernel serves both; each depth is its own main loop.
__device__ __forceinline__ int grape_wgmma_stages_given(unsigned stage_bytes) {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return (int)min((bytes - 1024u) / stage_bytes, 8u);
}
// The main loop with S stages: the tile's sums into acc (NACC per thread, zero on entry). BM = 128:
// warpgroup g computes rows 64 g .. 64 g + 63, all BN columns; BM = 64: all 64 rows, columns
// g BN / 2 .. (g + 1) BN / 2 - 1 (WN columns per warpgroup).
template <class Ops, int BM, int BN, int S>
__device__ __forceinline__ void grape_wgmma_mainloop(const KParams* p, long long m0, long long n0,
                                                     long long kbeg, long long kend, unsigned base,
                                                     unsigned char* smem, float* acc) {
  using T = typename Ops::T;
  constexpr int BK = GRAPE_WGMMA_BK, WN = BM == 128 ? BN : BN / 2;
  constexpr unsigned kStageA = BM * 128, kStage = GRAPE_WGMMA_STAGE_BYTES_M(BM, BN);
  // W and A chunks per thread, accumulators per thread
  constexpr int WCH = BN / 32, ACH = BM / 32, NACC = WN / 2;
  static_assert(S >= 3, "the refilled stage is the one read two iterations before");
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const int tid = threadIdx.x, wg = tid >> 7;

  // This thread's 16-byte chunks: rows (tid / 8) + 32 i of A (BM / 32) and of W (BN / 32), chunk tid % 8
  // of each 64-element row; its swizzled position is the same for all (rows 32 apart). Sources
  // are computed once per tile (a row past the end reads its tile's first row with size 0, so
  // every address stays valid); a K step adds the same byte offset to all.
  const int crow = tid >> 3, cchunk = tid & 7;
  unsigned cdst = (unsigned)(crow * 128 + ((cchunk ^ (crow & 7)) << 4));
  const char* src[8];  // W chunks 0..WCH-1, then A chunks 0..ACH-1 at 4.. (direct A: the chunk; a
                       // separable view: its row part, a_addr(p, r, 0))
  unsigned rows_ok = 0;  // bit i: chunk i's row exists
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long n = n0 + crow + 32 * i, r = m0 + crow + 32 * i;
    if (i < WCH) {
      rows_ok |= (n < N ? 1u : 0u) << i;
      src[i] = reinterpret_cast<const char*>(reinterpret_cast<const T*>(Ops::w_row(p, n < N ? n : n0)) + cchunk * 8);
    } else {
      src[i] = nullptr;
    }
    if (i >= ACH) {
      src[4 + i] = nullptr;
      continue;
    }
    rows_ok |= (r < R ? 1u : 0u) << (4 + i);
    if constexpr (Ops::kADirect)
      src[4 + i] = reinterpret_cast<const char*>(Ops::a_ptr(p) + (r < R ? r : m0) * K + cchunk * 8);
    else  // a view: the row's part of its addresses (see load_stage)
      src[4 + i] = reinterpret_cast<const char*>(Ops::a_addr(p, r < R ? r : m0, 0));
  }
  // Opaque to the optimiser, which would otherwise recompute every address from threadIdx in
  // each K step (about 150 instructions a step, as many issue slots as the tensor work).
#pragma unroll
  for (int i = 0; i < 8; ++i)
    if (i < WCH || (i >= 4 && i < 4 + ACH)) grape_opaque(src[i]);
  grape_opaque(rows_ok);
  grape_opaque(cdst);
  auto load_stage = [&](int stage, long long k0) {
    const unsigned sw = base + stage * kStage + kStageA + cdst, sa = sw - kStageA;
    const unsigned live = k0 + cchunk * 8 < kend ? rows_ok : 0u;
    const long long off = k0 * (long long)sizeof(T);
#pragma unroll
    for (int i = 0; i < WCH; ++i) grape_cp_async16_s(sw + i * 32 * 128, src[i] + off, (live >> i) & 1 ? 16 : 0);
    // A view whose address is (row part) + (k part) (Ops::kAViewSplit): the k part once per
    // stage, with row 0's index arithmetic folded away; no division per chunk and K step.
    long long koff = 0;
    if constexpr (!Ops::kADirect)
      koff = reinterpret_cast<const char*>(Ops::a_addr(p, 0, k0 + cchunk * 8)) -
             reinterpret_cast<const char*>(Ops::a_addr(p, 0, 0));
#pragma unroll
    for (int i = 0; i < ACH; ++i) {
      if constexpr (Ops::kADirect) {
        grape_cp_async16_s(sa + i * 32 * 128, src[4 + i] + off, (live >> (4 + i)) & 1 ? 16 : 0);
      } else {
        const bool ok = (live >> (4 + i)) & 1;
        const char* a0 = src[4 + i] + koff;
        if (!ok || (reinterpret_cast<unsigned long long>(a0) & 15) == 0) {
          grape_cp_async16_s(sa + i * 32 * 128, ok ? a0 : src[0], ok ? 16 : 0);
        } else {  // consecutive (kAViewRows) but not 16-byte aligned: element by element
          grape_copy8_unaligned(reinterpret_cast<T*>(smem + (sa - base) + i * 32 * 128),
                                reinterpret_cast<const T*>(a0));
        }
      }
    }
  };

  const int KT = (int)max(0LL, (kend - kbeg + BK - 1) / BK);
#pragma unroll
  for (int s = 0; s < S - 2; ++s) {
    if (s < KT) load_stage(s, kbeg + (long long)s * BK);
    grape_cp_async_commit();
  }
  // Descriptors of stage 0 (this warpgroup's 64 rows of A and WN rows of W); a stage and a k16
  // step add to the start address field (16-byte units; it cannot carry out of its 14 bits).
  const unsigned long long da0 = grape_wgmma_desc(base + (BM == 128 ? wg * 64 * 128 : 0)),
                           dw0 = grape_wgmma_desc(base + kStageA + (BM == 128 ? 0 : wg * WN * 128));
  int cur = 0, nxt = S - 2;  // the stage read now, the stage loaded now
  for (int kt = 0; kt < KT; ++kt) {
    grape_cp_async_wait<S - 3>();
    grape_fence_proxy_async();
    __syncthreads();  // stage kt is in, and every warpgroup is done with stage kt - 2
    const int nt = kt + S - 2;
    if (nt < KT) load_stage(nxt, kbeg + (long long)nt * BK);
    grape_cp_async_commit();
    const unsigned long long step = (unsigned long long)(cur * (kStage >> 4));
    grape_wgmma_fence();
    grape_wgmma_pin<NACC>(acc);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // k16 steps: 32 bytes further along the swizzled lines
      GrapeWgmma<T, WN>::mma(acc, da0 + step + 2 * kk, dw0 + step + 2 * kk);
    grape_wgmma_commit();
    grape_wgmma_wait<1>();
    grape_wgmma_pin<NACC>(acc);
    cur = cur + 1 == S ? 0 : cur + 1;
    nxt = nxt + 1 == S ? 0 : nxt + 1;
  }
  grape_wgmma_wait<0>();
  grape_wgmma_pin<NACC>(acc);
  grape_cp_async_wait<0>();
}

// One work item: a BM x BN output tile (BM = 128, or 64 for products whose 128-row tiles are too
// few to fill the GPU), its main loop with S stages (S = 0: as many as the
// launch's shared memory holds, 3 or 4, each depth its own main loop), then one epilogue for all
// depths: the code of a kernel that runs once per multiprocessor is fetched cold, and every
// instantiation beside the one that runs measured slower (docs/kernels.md, run 109).
template <class Ops, int BN, int S, int BM>
__device__ void grape_gemm_wgmma_tile(const KParams* p, long long item, unsigned char* smem_raw) {
  constexpr int WN = BM == 128 ? BN : BN / 2, NACC = WN / 2;  // a warpgroup's columns, accumulators per thread
  static_assert(BM == 128 ? BN == 64 || BN == 96 || BN == 128 : BM == 64 && BN == 64,
                "m64n64k16, m64n96k16 or m64n128k16 per warpgroup; or 64 x 64 tiles of two m64n32k16");
  static_assert(!Ops::kWKN && (Ops::kADirect || Ops::kAViewSplit), "K-major operands only");
  const long long R = Ops::R(p), N = Ops::N(p), K = Ops::K(p);
  const long long tn = (N + BN - 1) / BN, tiles = ((R + BM - 1) / BM) * tn;
  const long long tile = item % tiles, split = item / tiles;
  const long long m0 = (tile / tn) * BM, n0 = (tile % tn) * BN;
  const long long kbeg = split * p->kchunk, kend = min(K, kbeg + p->kchunk);
  // The swizzle is on address bits 4-9, so every stage starts at a multiple of 1024 bytes (the
  // launch asks for 1024 bytes more than the stages need).
  const unsigned raw = grape_smem_addr(smem_raw), base = (raw + 1023u) & ~1023u;
  unsigned char* const smem = smem_raw + (base - raw);
  const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7;
  float acc[NACC];
#pragma unroll
  for (int i = 0; i < NACC; ++i) acc[i] = 0.0f;
  if constexpr (S != 0) {
    grape_wgmma_mainloop<Ops, BM, BN, S>(p, m0, n0, kbeg, kend, base, smem, acc);
  } else {
    const int stages = grape_wgmma_stages_given(GRAPE_WGMMA_STAGE_BYTES_M(BM, BN));
    if (stages == 3) grape_wgmma_mainloop<Ops, BM, BN, 3>(p, m0, n0, kbeg, kend, base, smem, acc);
    else if (stages >= 4) grape_wgmma_mainloop<Ops, BM, BN, 4>(p, m0, n0, kbeg, kend, base, smem, acc);
    else __trap();  // scheduler::gemm_wgmma_shared_bytes never gives less than 3 stages
  }
  __syncthreads();  // every warpgroup is done with the stages: the tile goes through them below

  // Accumulator j * 4 + e: row (BM = 128: wg * 64 +) warp * 16 + lane / 4 (+ 8 for e >= 2), column
  // (BM = 64: wg * WN +) 8 j + 2 (lane % 4) (+ 1 for odd e), the mma.sync m16n8 layout repeated
  // along n.
  const int trow = (BM == 128 ? wg * 64 : 0) + ((tid >> 5) & 3) * 16 + (lane >> 2),
            tcol = (BM == 128 ? 0 : wg * WN) + (lane & 3) * 2;
  constexpr int LDT = BN + 8;  // the staged tile's row stride in floats (see the epilogue below)
  float* const ts = reinterpret_cast<float*>(smem);
  if (p->splits > 1 && grape_cluster_size() > 1) {
    // The splits of this tile are the blocks of this cluster (grape_gemm_wgmma): each stages its
    // partial tile in its shared memory, then block `rank` adds rows [rank, rank + 1) * BM / splits
    // of all of them in rank order (deterministic) and stores them through the epilogue.
#pragma unroll
    for (int j = 0; j < WN / 8; ++j) {
      *reinterpret_cast<float2*>(ts + trow * LDT + tcol + j * 8) = make_float2(acc[j * 4], acc[j * 4 + 1]);
      *reinterpret_cast<float2*>(ts + (trow + 8) * LDT + tcol + j * 8) = make_float2(acc[j * 4 + 2], acc[j * 4 + 3]);
    }
    grape_cluster_sync();
    const int splits = (int)p->splits, rows = BM / splits, rank = (int)grape_cluster_rank(), w = tid >> 5;
    const unsigned tsa = grape_smem_addr(ts);
    grape_tile_store<Ops>(n0, min(n0 + BN, N), [&](auto st) {
      for (int rr = rank * rows + w; rr < (rank + 1) * rows; rr += 8) {
        if (m0 + rr >= R) break;
#pragma unroll
        for (int c = 0; c < BN / 32; ++c) {
          const int col = lane + 32 * c;
          const unsigned at = tsa + (unsigned)(rr * LDT + col) * 4u;
          float sum = 0.0f;
          for (int q = 0; q < splits; ++q) sum += grape_ld_cluster(at, (unsigned)q);
          if (n0 + col < N) st(p, m0 + rr, n0 + col, sum);
        }
      }
    });
    grape_cluster_sync();  // no block leaves (or reuses its stages) while another reads them
    return;
  }
  if (p->splits > 1) {
    float* part = reinterpret_cast<float*>(static_cast<char*>(p->scratch) + grape_gemv_partials_offset(tiles));
#pragma unroll
    for (int j = 0; j < WN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long r = m0 + trow + (e >> 1) * 8, n = n0 + tcol + j * 8 + (e & 1);
        if (r < R && n < N) part[(split * R + r) * N + n] = acc[j * 4 + e];
      }
    grape_splitk_finish<Ops, 2>(p, tile, tiles, m0, BM, n0, BN);
    return;
  }
  // The epilogue through shared memory: each warp then stores whole rows, lane l columns l,
  // l + 32, ..., so one store instruction writes 32 consecutive elements (2 sectors) instead of
  // 8 rows x 8 bytes, and the epilogue's loads (bias, residual) coalesce the same way. Rows
  // padded to BN + 8 floats (8 banks apart): the float2 writes of a half-warp hit 16 distinct
  // bank pairs.
#pragma unroll
  for (int j = 0; j < WN / 8; ++j) {
    *reinterpret_cast<float2*>(ts + trow * LDT + tcol + j * 8) = make_float2(acc[j * 4], acc[j * 4 + 1]);
    *reinterpret_cast<float2*>(ts + (trow + 8) * LDT + tcol + j * 8) = make_float2(acc[j * 4 + 2], acc[j * 4 + 3]);
  }
  __syncthreads();
  const int w = tid >> 5;
  constexpr int WR = BM / 8;  // rows per warp
  if (m0 + BM <= R && n0 + BN <= N) {
    // Every row of the warp's WR unrolled: the epilogue's loads (bias, residual) of all of them
    // are issued before the first store, one memory round trip per tile instead of four.
    grape_tile_store<Ops>(n0, n0 + BN, [&](auto st) {
#pragma unroll
      for (int rr = w * WR; rr < w * WR + WR; ++rr)
#pragma unroll
        for (int c = 0; c < BN / 32; ++c) st(p, m0 + rr, n0 + lane + 32 * c, ts[rr * LDT + lane + 32 * c]);
    });
  } else {
    for (int rr = w * WR; rr < w * WR + WR; ++rr) {
      if (m0 + rr >= R) break;
#pragma unroll
      for (int c = 0; c < BN / 32; ++c)
        if (n0 + lane + 32 * c < N) Ops::store(p, m0 + rr, n0 + lane + 32 * c, ts[rr * LDT + lane + 32 * c]);
    }
  }
  __syncthreads();  // the next item's first loads overwrite the tile
}

// One work item (a 128 x BN tile) with the launch's pipeline depth (S = 0: 3 stages for two blocks
// per multiprocessor, 4 for one) or with S stages, when the entry point's launch always gives S.
// Launched in clusters (LaunchDims::cluster > 1), one block per item: the cluster of blocks
// c * splits .. c * splits + splits - 1 is tile c, block rank r its K split r.
template <class Ops, int BN, int S = 0, int BM = GRAPE_WGMMA_BM>
__device__ void grape_gemm_wgmma(const KParams* p, long long item, unsigned char* smem) {
  if (const unsigned c = grape_cluster_size(); c > 1) {
    const long long tiles = ((Ops::R(p) + BM - 1) / BM) * ((Ops::N(p) + BN - 1) / BN);
    // The launch and the kernel must agree, or sums would be lost: a loud failure instead.
    if ((long long)c != p->splits || (long long)gridDim.x != tiles * c) __trap();
    item = (long long)grape_cluster_rank() * tiles + item / c;
  }
  if constexpr (S != 0) {
    if (grape_wgmma_stages_given(GRAPE_WGMMA_STAGE_BYTES_M(BM, BN)) < S) __trap();  // the launch's shared memory
  }
  grape_gemm_wgmma_tile<Ops, BN, S, BM>(p, item, smem);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL
#endif  // GRAPE_KERNELS_GEMM_WGMMA_CUH
