// The decoder plan's kernel (runtime/cuda/decoder_plan.h; docs/execution.md, "The decoder plan"):
// a GPT-2 small decode step — embedding, every layer, ln_f and lm_head — as ONE persistent kernel
// with TWO dependent all-to-all stages a layer, the design scripts/probes/decode_two_stage.cu
// measured (149 us a step on an H200 against 413 us for the graph executor's 63 kernels).
//   Stage A (attention), one thread-block cluster of 8 per head: each block computes 24 of the
//     head's 192 q/k/v columns (ln_1 fused) and pushes them into the shared memory of the block
//     that owns the row (st.async, counted on the receiver's mbarrier: no cluster barrier); blocks
//     0..rows-1 write the row's new key and value into the caches, attend over positions 0..p and
//     push the 64 outputs to all 8; every block multiplies them by its 96 columns of the head's 64
//     rows of attn c_proj and adds the rows x 96 results into the step's fp32 sum in L2 (vector
//     reductions: the 12 heads meet there).
//   Stage B (MLP), every block of the stage's clusters: C (24 or 32) columns of c_fc (ln_2 fused,
//     gelu), pushed to every block of its cluster; each block then multiplies the cluster's 8 C
//     gelu outputs by its 96 columns of those rows of mlp c_proj and adds the results into the sum.
//   The residual stays in fp32: step s's sum Y[s] starts at zero (zeroed one launch ahead, two
//   sets); every block adds its share of the step's input rows and the products add their
//   outputs, so Y[s] is step s + 1's input. A step waits for one counter that every block of the
//   previous step adds 1 to with a release; a layer step's rows then come to a cluster as one
//   copy, an eighth read by each block and multicast to all 8.
//   A producer warp streams the block's next items (weights in a per-block layout made when the
//   plan is bound) into a shared-memory ring by bulk copies, paced so that the blocks' copies do
//   not reach DRAM as one burst at every step's start, when the step's rows are read.
// The host defines GRAPE_DEC_ROWS (1..8), GRAPE_DEC_LAYERS, GRAPE_DEC_T (the caches' length),
// GRAPE_DEC_VOCAB, GRAPE_DEC_FC_COLS (24 or 32) and GRAPE_DEC_RING (the ring's bytes); the entry
// point is grape_decoder, launched in clusters of 8 with kDecLaunchThreads threads a block.
#ifndef GRAPE_KERNELS_DECODER_STEP_CUH
#define GRAPE_KERNELS_DECODER_STEP_CUH

namespace grape_dec {

constexpr int kRows = GRAPE_DEC_ROWS, kLayers = GRAPE_DEC_LAYERS, kT = GRAPE_DEC_T, kVocab = GRAPE_DEC_VOCAB;
constexpr int kFcCols = GRAPE_DEC_FC_COLS;
// lm_head's items past the blocks' lists claimed at run time (DecoderParams::lm_claims, which is
// then set). A compile-time switch: the same code with a run-time test measured 2.6 us slower
// with the claims off than the kernel without it (run 297).
constexpr bool kLmClaim = GRAPE_DEC_LM_CLAIM != 0;
// The next launch's step-0 item put into L2 at the end (jit::DecoderSwitches::prefetch_next).
constexpr bool kPrefetchNext = GRAPE_DEC_PREFETCH_NEXT != 0;
// A layer step's counter polled by each cluster's rank 0 only, which then copies all of the rows
// (jit::DecoderSwitches::one_poller).
constexpr bool kOnePoller = GRAPE_DEC_ONE_POLLER != 0;
// The past keys and values read with the weights' L2 evict_first policy
// (jit::DecoderSwitches::kv_evict_first).
constexpr bool kKvEvictFirst = GRAPE_DEC_KV_EVICT_FIRST != 0;
// Claimed lm_head items a layer block puts into L2 as its last layer item is copied
// (jit::DecoderSwitches::lm_late; only with kLmClaim).
constexpr int kLmLate = GRAPE_DEC_LM_LATE;
static_assert(kLmLate >= 0 && (kLmLate == 0 || kLmClaim), "late lm_head prefetches are of claimed items");
constexpr unsigned kRingBytes = GRAPE_DEC_RING;
constexpr int kD = kDecEmbed, kHeads = kDecHeads, kHd = kDecHeadDim, kCluster = kDecCluster,
              kThreads = kDecThreads, kInFlight = kDecInFlight, kQkvCols = kDecQkvCols,
              kProjCols = kDecProjCols, kLmCols = kDecLmCols;
constexpr int kSteps = 2 * kLayers;  // stages A and B of every layer; lm_head is step kSteps
constexpr int kLda = kD + 8;         // the staged rows' pitch in halves
static_assert(kRows >= 1 && kRows <= kDecMaxRows, "one attention row per block of a cluster");
static_assert(kFcCols == 24 || kFcCols == 32, "c_fc columns a block: 3072 over 16 or 12 clusters of 8");
static_assert(kRingBytes % 1024 == 0, "the ring is a whole number of KB");
constexpr DecoderShared kShared = decoder_shared(kRows, kRingBytes);
static_assert(kRows * kFcCols <= kThreads && kRows * kLmCols <= kThreads, "a thread an output of a product");
// A row's past keys and values (pos x 64 each) come into the ring with the block's stage-A item
// while a stage-A and a stage-B item still fit beside them: up to kKvRing positions. Past that the
// attention reads them from global memory (put into L2 a step ahead): 14 us a GPT-2 small step
// slower in scripts/probes/decode_two_stage.cu (run 247), 8 us in this kernel at 128 positions
// (run 260, GRAPE_DECODER_KV_RING=0; 40-50 us while each thread's value loads went one after
// another, run 254).
constexpr int kKvRing =
    (int)((kRingBytes - kDecABytes - decoder_b_layout(kFcCols).bytes) / (2u * kDecHeadDim * 2u));

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void csync() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, "
        "p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(b)), "r"(parity)
        : "memory");
}
__device__ __forceinline__ void mbar_wait_cluster(unsigned long long* b, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(b)), "r"(parity)
        : "memory");
}
// `bytes` from global `src` into this block's shared memory at `dst`, counted on mbarrier `b`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(b))
      : "memory");
}
// The same with an L2 cache policy (createpolicy): the weights stream through L2 as evict_first,
// so that what was put there to stay (lm_head's first items) is not evicted by them.
__device__ __forceinline__ void bulk_load_hint(void* dst, const void* src, unsigned bytes, unsigned long long* b,
                                               unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
      "%4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(b)), "l"(policy)
      : "memory");
}
// `bytes` from global `src` into the shared memory at `dst` of every block of the cluster, counted
// on each one's mbarrier at `b`'s offset (one L2 read for the cluster's 8 blocks).
__device__ __forceinline__ void bulk_load_multicast(void* dst, const void* src, unsigned bytes,
                                                    unsigned long long* b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
      "%4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(b)), "h"((unsigned short)((1u << kCluster) - 1u))
      : "memory");
}
__device__ __forceinline__ void prefetch_l2_hint(const void* p, unsigned bytes, unsigned long long policy) {
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p), "r"(bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ unsigned long long policy_evict_first() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ unsigned long long policy_evict_last() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// The ring's consumed-items count: the compute threads' last reads of an item happen before the
// count that frees it (release), and the producer's copies over it after it sees that (acquire).
__device__ __forceinline__ void st_release_cta(int* p, int v) {
  asm volatile("st.release.cta.shared.u32 [%0], %1;" ::"r"(smem_addr(p)), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_acquire_cta(const int* p) {
  int v;
  asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem_addr(p)) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Block `rank` of this cluster's shared-memory address of the same variable as `p`.
__device__ __forceinline__ unsigned remote(const void* p, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
  return r;
}
// Stores into block `rank`'s shared memory that count their bytes on that block's mbarrier `bar`
// (the receiver waits for its expected bytes; no release fence, no barrier round trip).
__device__ __forceinline__ void st_async4(const void* p, unsigned rank, const unsigned long long* bar,
                                          float4 v) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
          remote(p, rank)),
      "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote(bar, rank))
      : "memory");
}
__device__ __forceinline__ void st_async4b(const void* p, unsigned rank, const unsigned long long* bar,
                                           uint4 v) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
          remote(p, rank)),
      "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(remote(bar, rank))
      : "memory");
}
__device__ __forceinline__ float round_half(float v) { return __half2float(__float2half(v)); }
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// A barrier of the cluster's compute threads only (the producer warp has returned; barrier.cluster
// would wait for it): lanes 0-7 of warp 0 arrive, with a release, on the mbarrier of block `lane`.
__device__ void cluster_sync(unsigned long long* bar) {
  csync();
  if (threadIdx.x < kCluster)
    asm volatile(
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote(bar, threadIdx.x))
        : "memory");
  if (threadIdx.x == 0) mbar_wait_cluster(bar, 0u);
  csync();
}

// Element i of the step's input rows: step 0's are the embeddings (wte[token] + wpe[p], an f16 add
// as the program's), the others the previous step's fp32 sum.
__device__ __forceinline__ float embedding(const DecoderParams& p, int pos, int i) {
  const int r = i / kD, k = i - r * kD;
  const __half* wte = static_cast<const __half*>(p.token_table);
  const __half* wpe = static_cast<const __half*>(p.position_table);
  return __half2float(__hadd(wte[(long long)p.tokens[r] * kD + k], wpe[(long long)pos * kD + k]));
}

// The step's input rows, one warp a row, lane `lane` holding elements (lane + 32 j) * 8 .. + 7:
// the previous step's sum, or step 0's embeddings (16-byte loads of both tables' rows).
__device__ __forceinline__ void load_rows(const DecoderParams& p, int pos, const float* R, float (&v)[3][8]) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (w >= kRows) return;
  const uint4* te = nullptr;
  const uint4* pe = nullptr;
  if (!R) {
    te = reinterpret_cast<const uint4*>(static_cast<const __half*>(p.token_table) + (long long)p.tokens[w] * kD);
    pe = reinterpret_cast<const uint4*>(static_cast<const __half*>(p.position_table) + (long long)pos * kD);
  }
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const int k = (lane + 32 * j) * 8;
    if (R) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float4 x = __ldcg(reinterpret_cast<const float4*>(R + w * kD + k) + i);
        v[j][4 * i] = x.x, v[j][4 * i + 1] = x.y, v[j][4 * i + 2] = x.z, v[j][4 * i + 3] = x.w;
      }
    } else {
      const uint4 a = te[lane + 32 * j], b = pe[lane + 32 * j];
      const __half* ah = reinterpret_cast<const __half*>(&a);
      const __half* bh = reinterpret_cast<const __half*>(&b);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[j][e] = __half2float(__hadd(ah[e], bh[e]));  // an f16 add, as the program's
    }
  }
}

// The step's input rows from the cluster's copy in shared memory (R: [kRows][kD] fp32), as
// load_rows leaves them.
__device__ __forceinline__ void load_rows_shared(const float* R, float (&v)[3][8]) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (w >= kRows) return;
#pragma unroll
  for (int j = 0; j < 3; ++j)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float4 x = *reinterpret_cast<const float4*>(R + w * kD + (lane + 32 * j) * 8 + 4 * i);
      v[j][4 * i] = x.x, v[j][4 * i + 1] = x.y, v[j][4 * i + 2] = x.z, v[j][4 * i + 3] = x.w;
    }
}

// The loaded rows through a layer norm (one-pass statistics about a shift, below) with scale and
// shift from the item's bytes, into As (f16 [kRows][kLda]), one warp a row; the rows' elements
// [lo, hi) (this block's share, flattened) are also added into Y, the sum the next step reads.
__device__ void stage_rows(float (&v)[3][8], const __half* gamma, float eps, __half* As, float* Y, int lo,
                           int hi) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (w >= kRows) return;
  uint4 gu[3], bu[3];
  for (int j = 0; j < 3; ++j) {
    gu[j] = reinterpret_cast<const uint4*>(gamma)[lane + 32 * j];
    bu[j] = reinterpret_cast<const uint4*>(gamma + kD)[lane + 32 * j];
  }
  // One pass over the row for both statistics, about a shift: the row's first element (lane 0's),
  // so that the variance's E[(x - K)^2] - E[x - K]^2 does not cancel when the mean is large beside
  // the spread. The sums go as trees of the lane's three groups, and both warp reductions are
  // interleaved: one round of shuffles, not two after one another (the two-pass form put two
  // 24-long chains of adds and ten dependent shuffles on every step's critical path).
  const float K = __shfl_sync(0xffffffffu, v[0][0], 0);
  float s1[3], s2[3];
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e += 2) {
      const float x0 = v[j][e] - K, x1 = v[j][e + 1] - K;
      a += x0, b += x1;
      c = fmaf(x0, x0, c), d = fmaf(x1, x1, d);
    }
    s1[j] = a + b, s2[j] = c + d;
  }
  float sum = s1[0] + s1[1] + s1[2], sq = s2[0] + s2[1] + s2[2];
  // The block's share of the rows into the sum here, where their issue overlaps the shuffles'
  // latency (after the normalised rows' stores it was 0.1-0.13 us of every step, run 273).
  if (Y)
    for (int j = 0; j < 3; ++j) {
      const int at = w * kD + (lane + 32 * j) * 8;
      if (at + 8 > lo && at < hi)
        for (int e = 0; e < 8; ++e)
          if (at + e >= lo && at + e < hi) atomicAdd(Y + at + e, v[j][e]);
    }
  for (int o = 16; o; o >>= 1) {
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  const float shifted_mean = sum * (1.0f / kD), mean = K + shifted_mean;
  const float rstd = rsqrtf(fmaxf(sq * (1.0f / kD) - shifted_mean * shifted_mean, 0.0f) + eps);
  for (int j = 0; j < 3; ++j) {
    const int k = (lane + 32 * j) * 8;
    const __half* g = reinterpret_cast<const __half*>(&gu[j]);
    const __half* b = reinterpret_cast<const __half*>(&bu[j]);
    __align__(16) __half o8[8];
    for (int e = 0; e < 8; ++e)
      o8[e] = __float2half((v[j][e] - mean) * rstd * __half2float(g[e]) + __half2float(b[e]));
    *reinterpret_cast<uint4*>(As + w * kLda + k) = *reinterpret_cast<const uint4*>(o8);
  }
}

// The tensor cores' m16n8k16 with the weights as the 16-row operand A (16 output columns) and the
// rows as the 8-column operand B (rows past kRows zero): at up to 8 rows, half the mma of putting
// the rows in A's 16 (11 of 16 were zero at 5 rows; the products' mma rate showed in the steps).
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&a)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
}

// As [kRows][kD] times a tile [kD][8 NB] (tensor cores, weights as A: mma_16816), the warps
// taking the k steps in turn, each warp's in two accumulator sets so that its chain of dependent
// mma is half as long; the warps' partial sums are left in red [8][kRows][8 NB] for gemv_sum
// after a csync. A's fragments by ldmatrix.trans of the tile's rows: x4 for 16 columns (lanes
// 0-7: k 0-7 of the m tile's first 8 columns, 8-15: k 0-7 of its second, 16-31: k 8-15 of
// both), x2 for an odd last 8 (lanes 0-15: k 0-15).
template <int NB>
__device__ void gemv(const __half* As, const unsigned char* tile, float* red) {
  constexpr int C = 8 * NB, W = kThreads / 32, MT = (NB + 1) / 2;
  static_assert(kD / 16 % (2 * W) == 0, "every warp takes the same number of k-step pairs");
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  float acc[2][MT][4];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int t = 0; t < MT; ++t) acc[h][t][0] = acc[h][t][1] = acc[h][t][2] = acc[h][t][3] = 0.0f;
  const __half* xrow = As + g * kLda + 2 * c;
  // The tile's 8-column chunks are swizzled at 32 columns (decoder_tile_at): chunk j of row k is
  // at j ^ ((k >> 1) & 3).
  const int k4 = 8 * (lane >> 4) + (lane & 7), k2 = lane & 15, half = (lane >> 3) & 1;
  const int sw4 = NB == 4 ? (k4 >> 1) & 3 : 0, sw2 = NB == 4 ? (k2 >> 1) & 3 : 0;
  const unsigned base4 = smem_addr(tile) + k4 * C * 2, base2 = smem_addr(tile) + k2 * C * 2;
#pragma unroll
  for (int k = 0; k < kD / 16 / (2 * W); ++k)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int s = w + W * (2 * k + h);
      unsigned b0 = 0u, b1 = 0u;
      if (g < kRows) {
        b0 = *reinterpret_cast<const unsigned*>(xrow + 16 * s);
        b1 = *reinterpret_cast<const unsigned*>(xrow + 16 * s + 8);
      }
#pragma unroll
      for (int t = 0; t < MT; ++t) {
        unsigned a[4];
        if (2 * t + 1 < NB) {
          ldsm_x4_trans(a, base4 + s * 16 * C * 2 + 16 * ((2 * t + half) ^ sw4));
        } else {
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                       : "=r"(a[0]), "=r"(a[2])
                       : "r"(base2 + s * 16 * C * 2 + 16 * ((2 * t) ^ sw2)));
          a[1] = a[3] = 0u;
        }
        mma_16816(acc[h][t], a, b0, b1);
      }
    }
  // acc[.][t]: columns 16 t + g (0, 1) and + 8 (2, 3) of rows 2 c (0, 2) and 2 c + 1 (1, 3).
#pragma unroll
  for (int t = 0; t < MT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = 2 * c + (e & 1), col = 16 * t + g + 8 * (e >> 1);
      if (r < kRows && col < C) red[(w * kRows + r) * C + col] = acc[0][t][e] + acc[1][t][e];
    }
}
__device__ __forceinline__ float gemv_sum(const float* red, int C, int r, int j) {
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) s += red[(w * kRows + r) * C + j];
  return s;
}

struct Smem {
  unsigned char* ring;
  __half* As;
  float* red;
  float* qkv;   // [192]: the q/k/v of this block's row (attention blocks), fp16-rounded
  float* att;   // [kRows][kHd]: the head's attention outputs, fp16-rounded
  float* part;  // stage B's gelu outputs of the cluster and partial sums; the attention's scores
  float* fs;    // stage B's own gelu outputs, halves [kRows][40]
  // mbarriers counting the bytes of [0] this row's q/k/v, [1] the head's attention outputs, [2] the
  // cluster's gelu outputs, each completing once a layer.
  unsigned long long* xbar;
};

// Rows a [kRows][K] (halves, row pitch `pitch`; rows past kRows zero) times an item's [12][K][8]
// weight for this block's 96 output columns, on the tensor cores (weights as A: mma_16816),
// added (with `bias`, if not null) into `delta` by vector reductions. The k steps go in 4 quarters
// and the 6 m tiles (two 8-column n-blocks each) in 2 halves: warp w takes quarter w & 3 of half
// w >> 2; the quarters' partial sums meet in kp [4][kRows][96].
template <int K>
__device__ void proj96(const __half* a_rows, int pitch, const unsigned char* wt, float* kp,
                       const __half* bias, float* delta, unsigned rank) {
  constexpr int KQ = K / 16 / 4;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g8 = lane >> 2, c = lane & 3, kq = w & 3,
            nh = w >> 2;
  // ldmatrix.x4.trans rows: lanes 0-7 k 0-7 of the m tile's first n-block, 8-15 of its second,
  // 16-31 k 8-15 of both.
  const unsigned wb = smem_addr(wt) + (((lane >> 3) & 1) * K + 8 * (lane >> 4) + (lane & 7)) * 16;
  float acc[3][4] = {};
#pragma unroll
  for (int q = 0; q < KQ; ++q) {
    const int ks = kq * KQ + q;
    unsigned b0 = 0u, b1 = 0u;
    if (g8 < kRows) {
      b0 = *reinterpret_cast<const unsigned*>(a_rows + g8 * pitch + 16 * ks + 2 * c);
      b1 = *reinterpret_cast<const unsigned*>(a_rows + g8 * pitch + 16 * ks + 8 + 2 * c);
    }
#pragma unroll
    for (int t = 0; t < 3; ++t) {
      unsigned a[4];
      ldsm_x4_trans(a, wb + ((nh * 6 + 2 * t) * K + 16 * ks) * 16);
      mma_16816(acc[t], a, b0, b1);
    }
  }
  // acc[t]: columns 48 nh + 16 t + g8 (0, 1) and + 8 (2, 3) of rows 2 c (0, 2) and 2 c + 1 (1, 3).
#pragma unroll
  for (int t = 0; t < 3; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = 2 * c + (e & 1);
      if (r < kRows) kp[(kq * kRows + r) * kProjCols + nh * 48 + 16 * t + g8 + 8 * (e >> 1)] = acc[t][e];
    }
  csync();
  // rows x 48 column pairs: more than the 256 threads from 6 rows on.
  for (int e = tid; e < kRows * kProjCols / 2; e += kThreads) {
    const int b = e / (kProjCols / 2), n = 2 * (e - b * (kProjCols / 2)), col = (int)rank * kProjCols + n;
    float2 t = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 u = *reinterpret_cast<const float2*>(kp + (q * kRows + b) * kProjCols + n);
      t.x += u.x, t.y += u.y;
    }
    if (bias) t.x += __half2float(bias[col]), t.y += __half2float(bias[col + 1]);
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(delta + b * kD + col), "f"(t.x), "f"(t.y)
                 : "memory");
  }
}

// `stamp` (thread 0's, or null): a phase's end at stamp[k] (DecoderParams::trace).
__device__ __forceinline__ void mark(unsigned long long* stamp, int k) {
  if (stamp) stamp[k] = globaltimer();
}

// One warp's share of a row's past keys 0..pos-1 (key base + 16 w + lane / 2 of every pass of
// 128; two lanes a key, 32 dimensions each) into its running maximum m, sum l and outputs o0, o1
// (dimensions 2 lane, 2 lane + 1). kRing: Ks and Vs point into the ring (shared memory: a separate
// instantiation, so that the loads are ld.shared, not generic); else into the caches, read
// through L2. qr: the lane's query dimensions, chunk j being dimensions 8 c .. 8 c + 7 with
// c = (lane & 1) * 4 + ((j + key) & 3): the rotation keeps a key's two lanes and their neighbours
// on different banks, and it is the same at every pass (key & 3 = (lane / 2) & 3).
template <bool kRing>
__device__ __forceinline__ void attend_keys(const __half* Ks, const __half* Vs, const float (&qr)[4][8], int pos,
                                            float scale, float& m, float& l, float& o0, float& o1) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, hk = lane & 1;
  const float kNegInf = -__int_as_float(0x7f800000);
  for (int base = 0; base < pos; base += kThreads / 2) {
    const int first = base + 16 * w, key = first + (lane >> 1);
    if (first >= pos) break;  // warp-uniform: this warp has no key left
    // The warp's 16 values first (dimensions 2 lane, 2 lane + 1 of each: 128 contiguous bytes a
    // key), all in flight beside the keys' loads; a key past pos reads row pos - 1, weighted 0.
    unsigned vu[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const unsigned* vrow = reinterpret_cast<const unsigned*>(Vs + (long long)min(first + j, pos - 1) * kHd + 2 * lane);
      vu[j] = kRing ? *vrow : __ldcg(vrow);
    }
    // The lane's 32 dimensions in four independent chains of 8 (one 32-long chain of dependent
    // fma was on every pass's critical path).
    float sc4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (key < pos) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = hk * 4 + ((j + key) & 3);
        const uint4* kp = reinterpret_cast<const uint4*>(Ks + (long long)key * kHd + c * 8);
        const uint4 u = kRing ? *kp : __ldcg(kp);
        const __half* e = reinterpret_cast<const __half*>(&u);
#pragma unroll
        for (int i = 0; i < 8; ++i) sc4[j] = fmaf(qr[j][i], __half2float(e[i]), sc4[j]);
      }
    }
    float sc = (sc4[0] + sc4[1]) + (sc4[2] + sc4[3]);
    sc += __shfl_xor_sync(0xffffffffu, sc, 1);
    sc = key < pos ? sc * scale : kNegInf;
    float mp = sc;
    for (int o = 16; o; o >>= 1) mp = fmaxf(mp, __shfl_xor_sync(0xffffffffu, mp, o));
    const float mn = fmaxf(m, mp), keep = __expf(m - mn);  // m = -inf at first: keep 0
    const float e = key < pos ? __expf(sc - mn) : 0.0f;
    float es = hk ? 0.0f : e;  // a key's two lanes hold the same e: count it once
    for (int o = 16; o; o >>= 1) es += __shfl_xor_sync(0xffffffffu, es, o);
    l = l * keep + es;
    o0 *= keep, o1 *= keep;
    m = mn;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const float ej = __shfl_sync(0xffffffffu, e, 2 * j);  // 0 past pos
      const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&vu[j]));
      o0 = fmaf(ej, v.x, o0);
      o1 = fmaf(ej, v.y, o1);
    }
  }
}

// Row b's attention for head h of this layer (the block of rank b): the new key and value into the
// caches at position pos, then softmax(q . k / scale) . v over positions 0..pos, where the
// T - 1 - pos masked positions count in the softmax's sum with the program's fill score (their
// values, weighted 0 in fp32 unless every score is near the fill, are not read). Each warp takes
// its own keys (key base + 16 w + lane / 2 of every pass of 128; two lanes a key, 32 dimensions
// each) with a running maximum, sum and output (lane: dimensions 2 lane, 2 lane + 1), so the warps
// meet once, with the new key's own term, in the 64 outputs out64 (flash-decoding inside a block:
// two block barriers instead of five).
__device__ void attend_row(const DecoderParams& p, int layer, int h, int b, int pos, const unsigned char* it,
                           const Smem& s, float* out64, unsigned long long* stamp) {
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const long long row = (((long long)layer * kRows + b) * kHeads + h) * kT * kHd;
  __half* Kc = static_cast<__half*>(p.k_cache) + row;
  __half* Vc = static_cast<__half*>(p.v_cache) + row;
  // The past keys and values: in the ring after the item's weights (see kKvRing), or in the caches.
  const bool in_ring = p.kv_ring && pos <= kKvRing;
  float* wm = s.part;  // [8] the warps' maxima, [8] their sums, the new key's score, [8][64] outputs
  float* ws = wm + 8;
  float* snew = ws + 8;
  float* pv = snew + 4;
  const float* q = s.qkv;
  if (tid < kHd) {
    Kc[(long long)pos * kHd + tid] = __float2half(q[kHd + tid]);
    Vc[(long long)pos * kHd + tid] = __float2half(q[2 * kHd + tid]);
  }
  if (w == kThreads / 32 - 1) {  // the new key's score (its value is q's last 64)
    float sn = q[2 * lane] * q[kHd + 2 * lane] + q[2 * lane + 1] * q[kHd + 2 * lane + 1];
    for (int o = 16; o; o >>= 1) sn += __shfl_xor_sync(0xffffffffu, sn, o);
    if (lane == 0) *snew = sn * p.scale;
  }
  const float kNegInf = -__int_as_float(0x7f800000);
  // The lane's 32 query dimensions, in the order its key chunks are read (see attend_keys).
  float qr[4][8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = (lane & 1) * 4 + ((j + (lane >> 1)) & 3);
#pragma unroll
    for (int i = 0; i < 8; ++i) qr[j][i] = q[c * 8 + i];
  }
  float m = kNegInf, l = 0.0f, o0 = 0.0f, o1 = 0.0f;
  if (in_ring)
    attend_keys<true>(reinterpret_cast<const __half*>(it + kDecABytes),
                      reinterpret_cast<const __half*>(it + kDecABytes + pos * kHd * 2), qr, pos, p.scale, m, l,
                      o0, o1);
  else
    attend_keys<false>(Kc, Vc, qr, pos, p.scale, m, l, o0, o1);
  if (lane == 0) wm[w] = m, ws[w] = l;
  pv[w * 64 + 2 * lane] = o0;
  pv[w * 64 + 2 * lane + 1] = o1;
  mark(stamp, 11);
  csync();
  mark(stamp, 12);
  if (tid < kHd) {
    const int masked = kT - 1 - pos;
    const float sn = *snew;
    float mx = fmaxf(sn, masked > 0 ? p.masked : kNegInf);
#pragma unroll
    for (int i = 0; i < kThreads / 32; ++i) mx = fmaxf(mx, wm[i]);
    const float en = __expf(sn - mx);
    float total = en + (masked > 0 ? (float)masked * __expf(p.masked - mx) : 0.0f), out = en * q[2 * kHd + tid];
    // No branch on a warp without keys: its maximum is -inf, so its factor is 0 (mx is finite: at
    // least the new key's score), and its sum and outputs are 0. Branch-free, the warps' loads and
    // exponentials go in parallel (a branch each serialised them: 8 dependent rounds).
#pragma unroll
    for (int i = 0; i < kThreads / 32; ++i) {
      const float f = __expf(wm[i] - mx);
      total = fmaf(ws[i], f, total);
      out = fmaf(pv[i * 64 + tid], f, out);
    }
    out64[tid] = __fdividef(out, total);
  }
  csync();
}

// Stage A for head h, this block's rank in its cluster.
__device__ void stage_a(const DecoderParams& p, int layer, int h, unsigned rank, int pos,
                        const unsigned char* it, const Smem& s, float* delta, unsigned long long* stamp) {
  const int tid = threadIdx.x;
  const unsigned parity = (unsigned)layer & 1u;
  if (tid == 0) {
    if (rank < kRows) mbar_expect(s.xbar, 3 * kHd * 4);
    mbar_expect(s.xbar + 1, kRows * kHd * 4);
  }
  gemv<kQkvCols / 8>(s.As, it + kDecAT, s.red);
  csync();
  mark(stamp, 5);
  // Row r's 24 values to block r, 4 a thread.
  if (tid < kRows * kQkvCols / 4) {
    const int r = tid / (kQkvCols / 4), j = 4 * (tid - r * (kQkvCols / 4));
    const __half* bias = reinterpret_cast<const __half*>(it + kDecAB) + j;
    const float4 v = make_float4(round_half(gemv_sum(s.red, kQkvCols, r, j) + __half2float(bias[0])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 1) + __half2float(bias[1])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 2) + __half2float(bias[2])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 3) + __half2float(bias[3])));
    st_async4(s.qkv + rank * kQkvCols + j, (unsigned)r, s.xbar, v);
  }
  if (rank < kRows) {
    mbar_wait(s.xbar, parity);
    mark(stamp, 6);
    float* out64 = s.red;  // the gemv's sums are consumed (the csync above)
    attend_row(p, layer, h, (int)rank, pos, it, s, out64, stamp);
    mark(stamp, 7);
    // Every block of the cluster gets the row's 64 outputs.
    if (tid < kCluster * kHd / 4) {
      const int d = 4 * (tid & 15);
      st_async4(s.att + rank * kHd + d, (unsigned)(tid >> 4), s.xbar + 1,
                make_float4(round_half(out64[d]), round_half(out64[d + 1]), round_half(out64[d + 2]),
                            round_half(out64[d + 3])));
    }
  }
  mbar_wait(s.xbar + 1, parity);
  mark(stamp, 8);
  // The head's share of attn c_proj for this block's 96 columns: the outputs as halves (in the
  // gemv's scratch: every read of out64 precedes the push), then proj96.
  csync();
  for (int t = tid; t < kRows * kHd; t += kThreads)
    reinterpret_cast<__half*>(s.red)[(t / kHd) * (kHd + 8) + t % kHd] = __float2half(s.att[t]);
  csync();
  proj96<kHd>(reinterpret_cast<const __half*>(s.red), kHd + 8, it + kDecAW, s.part,
              h == 0 ? reinterpret_cast<const __half*>(it + kDecAPB) : nullptr, delta, rank);
  mark(stamp, 9);
}

// Stage B (C c_fc columns a block).
template <int NB>
__device__ void stage_b(int layer, unsigned rank, bool first_cluster, const unsigned char* it, const Smem& s,
                        float* delta, unsigned long long* stamp) {
  constexpr int C = 8 * NB;
  constexpr DecoderBLayout L = decoder_b_layout(C);
  const int tid = threadIdx.x;
  constexpr int KC = kCluster * C, kHb = KC + 8;     // the cluster's c_fc columns; hbuf's row pitch
  __half* hbuf = reinterpret_cast<__half*>(s.part);  // [kRows][kHb]: the cluster's gelu outputs
  if (tid == 0) mbar_expect(s.xbar + 2, kCluster * kRows * C * 2);
  gemv<NB>(s.As, it + L.t, s.red);
  csync();
  mark(stamp, 5);
  if (tid < kRows * C) {
    const int r = tid / C, j = tid - r * C;
    const float v = gemv_sum(s.red, C, r, j) + __half2float(reinterpret_cast<const __half*>(it + L.b)[j]);
    reinterpret_cast<__half*>(s.fs)[r * 40 + j] = __float2half(gelu_tanh(round_half(v)));
  }
  csync();
  mark(stamp, 6);
  // Every block of the cluster gets this block's C gelu outputs of every row (16 bytes a store).
  if (tid < kCluster * kRows * C / 8) {
    const int q = tid / (kRows * C / 8), rest = tid - q * (kRows * C / 8), b = rest / (C / 8),
              k8 = 8 * (rest - b * (C / 8));
    const uint4 v = *reinterpret_cast<const uint4*>(reinterpret_cast<const __half*>(s.fs) + b * 40 + k8);
    st_async4b(hbuf + b * kHb + (int)rank * C + k8, (unsigned)q, s.xbar + 2, v);
  }
  mbar_wait(s.xbar + 2, (unsigned)layer & 1u);
  mark(stamp, 8);
  proj96<KC>(hbuf, kHb, it + L.w2, s.part + ((kRows * kHb / 2 + 3) & ~3),
             first_cluster ? reinterpret_cast<const __half*>(it + L.pb) : nullptr, delta, rank);
  mark(stamp, 9);
}

__device__ void lm_item(const DecoderParams& p, int index, const unsigned char* it, const Smem& s) {
  gemv<kLmCols / 8>(s.As, it + kDecLmT, s.red);
  csync();
  const int tid = threadIdx.x;
  if (tid < kRows * kLmCols) {
    const int r = tid / kLmCols, j = tid - r * kLmCols, n = index * kLmCols + j;
    if (n < kVocab)
      static_cast<__half*>(p.logits)[(long long)r * kVocab + n] =
          __float2half(gemv_sum(s.red, kLmCols, r, j));
  }
}

// Where row `row`'s keys (or values) of layer `layer` and head `head` start in the caches
// (f16 [L][rows][12][T][64]).
__device__ __forceinline__ long long kv_rows_at(int layer, int row, int head) {
  return (((long long)layer * kRows + row) * kHeads + head) * kT * kHd;
}

// lm_head's item `item` in its tiles (p.lm_tiles; read by claimed items and late prefetches).
__device__ __forceinline__ const unsigned char* lm_tile_at(const DecoderParams& p, int item) {
  return static_cast<const unsigned char*>(p.lm_tiles) + (long long)item * kDecLmG;
}

// The producer warp's lane 0: items in order into the ring, at most kInFlight ahead, wrapping at
// the end; the ring's space comes back as the consumers finish items. After the block's list, with
// kLmClaim, lm_head items claimed one at a time (claimed[slot]: the item, -1 when none is left).
__device__ void produce(const DecoderParams& p, const DecoderItem* items, int nitems, int pos, const Smem& s,
                        unsigned long long* bars, unsigned long long* ends, unsigned* starts,
                        int* consumed, int* claimed, DecoderItem* own) {
  unsigned long long head = 0, tail = 0, next_t = 0;
  // The next claimed item, asked for one item ahead so that the atomic's round trip is not on the
  // copy's path; whether the block's first lm_head tile (which brings ln_f) has gone.
  int claim = -1;
  bool lm_started = false;
  auto take = [&]() {
    return (int)atomicAdd(p.lm_claims + (p.epoch & 1u), 1u) + p.lm_claim_from;
  };
  if (kLmClaim && nitems == 0) claim = take();
  const unsigned long long stream_policy = policy_evict_first(), keep_policy = policy_evict_last();
  int seen = 0, lm_pref = 0;
  // lm_l2_spread: the lm_head item being put into L2 one 8 KB piece after each weight copy.
  const unsigned char* lm_src = nullptr;
  unsigned lm_left = 0;
  auto lm_into_l2 = [&](const void* src, unsigned bytes) {
    if (p.l2_hints)
      prefetch_l2_hint(src, bytes, keep_policy);
    else
      prefetch_l2(src, bytes);
  };
  const bool kv_in_ring = p.kv_ring && pos <= kKvRing;
  for (int n = 0; kLmClaim || n < nitems; ++n) {
    // A listed item's descriptor from global memory; a claimed one's made in `own` (shared memory,
    // so that the pieces' loop indexes it as it does a listed one's: a local copy took 6 KB more
    // code, or local memory).
    const DecoderItem* desc = items + n;
    if (kLmClaim && n >= nitems) {
      *own = DecoderItem{};
      own->step = kSteps;
      own->index = claim;
      if (claim < p.lm_items) {
        own->src[0] = lm_tile_at(p, claim);
        own->len[0] = own->bytes = kDecLmG;
        own->pieces = 1;
        if (!lm_started) {  // ln_f's scale and shift after the block's first tile, as the lists have it
          own->src[1] = p.lnf;
          own->len[1] = 2 * kD * 2;
          own->off[1] = kDecLmG;
          own->pieces = 2;
          own->bytes += own->len[1];
        }
      }
      desc = own;
    }
    const DecoderItem& I = *desc;
    // A stage-A item of a row's block: where that row's past keys and values are.
    const bool kv_row = I.step < kSteps && I.step % 2 == 0 && I.index >= 0 && pos > 0;
    const long long kv_at = kv_rows_at(I.step / 2, I.index, blockIdx.x / kCluster);
    const unsigned kv_bytes = (unsigned)pos * kHd * 2,
                   bytes = I.bytes + (kv_row && kv_in_ring ? 2 * kv_bytes : 0);
    for (;;) {
      unsigned long long at = head;
      const unsigned ring_pos = (unsigned)(at % kRingBytes);
      if (ring_pos + bytes > kRingBytes) at += kRingBytes - ring_pos;
      if (n - seen < kInFlight && at + bytes - tail <= kRingBytes) {
        const int j = n % kInFlight;
        if (kLmClaim && n >= nitems) {
          // Seen by the consumer after the slot's barrier completes (the arrive releases it).
          claimed[j] = I.index < p.lm_items ? I.index : -1;
          if (I.index >= p.lm_items) {  // none left: the slot completes with no bytes, and ends the block
            mbar_expect(bars + j, 0);
            return;
          }
        }
        starts[j] = (unsigned)(at % kRingBytes);
        ends[j] = at + bytes;
        unsigned char* dst = s.ring + starts[j];
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        mbar_expect(bars + j, bytes);
        // lm_head's stream is not paced, nor the first item (nothing else reads DRAM yet).
        const bool paced = p.pace_ns && I.step < kSteps && n > 0;
        const unsigned chunk = paced ? 8192u : 16384u;
        for (int q = 0; q < I.pieces; ++q)
          for (unsigned o = 0; o < I.len[q]; o += chunk) {
            if (paced) {
              // By copy, not by bytes: pacing by bytes measured slower (bench/RESULTS.md, run 251).
              unsigned long long now = globaltimer();
              while (now < next_t) now = globaltimer();
              next_t = max(now, next_t) + p.pace_ns;
            }
            if (p.l2_hints)
              bulk_load_hint(dst + I.off[q] + o, static_cast<const unsigned char*>(I.src[q]) + o,
                             min(chunk, I.len[q] - o), bars + j, stream_policy);
            else
              bulk_load(dst + I.off[q] + o, static_cast<const unsigned char*>(I.src[q]) + o,
                      min(chunk, I.len[q] - o), bars + j);
            if (lm_left) {
              const unsigned c = min(8192u, lm_left);
              lm_into_l2(lm_src, c);
              lm_src += c;
              lm_left -= c;
            }
          }
        // During the last layers, the first lm_head items into L2 (their stream is not paced).
        // (A step block's items are its kSteps layer items, then its lm_head items.)
        if (I.step < kSteps && I.step >= kSteps - p.lm_l2 && lm_pref < p.lm_l2 && kSteps + lm_pref < nitems) {
          const DecoderItem& M = items[kSteps + lm_pref++];
          if (p.lm_l2_spread) {
            // At once, the grid's prefetches are one burst of 4.6 MB; the A steps' wakes were
            // 0.3-1.1 us longer in the steps that issue them (run 290). What is left of the
            // previous item goes now; the next item's copies carry this one.
            if (lm_left) lm_into_l2(lm_src, lm_left);
            lm_src = static_cast<const unsigned char*>(M.src[0]);
            lm_left = M.len[0];
          } else {
            lm_into_l2(M.src[0], M.len[0]);
          }
        }
        // The row's past keys and values after the weights (unpaced: they are the step's own
        // data, and the layer's only), or into L2 for the attention to read a step later.
        const __half* k_rows = static_cast<const __half*>(p.k_cache) + kv_at;
        const __half* v_rows = static_cast<const __half*>(p.v_cache) + kv_at;
        if (kv_row && kv_in_ring) {
          if (kKvEvictFirst && p.l2_hints) {
            bulk_load_hint(dst + kDecABytes, k_rows, kv_bytes, bars + j, stream_policy);
            bulk_load_hint(dst + kDecABytes + kv_bytes, v_rows, kv_bytes, bars + j, stream_policy);
          } else {
            bulk_load(dst + kDecABytes, k_rows, kv_bytes, bars + j);
            bulk_load(dst + kDecABytes + kv_bytes, v_rows, kv_bytes, bars + j);
          }
        } else if (kv_row) {
          prefetch_l2(k_rows, kv_bytes);
          prefetch_l2(v_rows, kv_bytes);
        }
        // kLmLate: from here DRAM has little to bring (the ring holds the listed lm_head items, in
        // L2 already) until lm_head's blocks free their rings; the first claimed items come now.
        // (Slower at every P, run 305: L2 has no room for them beside what it keeps.)
        if (kLmLate > 0 && I.step == kSteps - 1)
          for (int k = 0; k < kLmLate; ++k) {
            const int late = p.lm_claim_from + (int)blockIdx.x + (int)gridDim.x * k;
            if (late < p.lm_items) prefetch_l2(lm_tile_at(p, late), kDecLmG);
          }
        head = at + bytes;
        if (kLmClaim) {
          if (I.step == kSteps) lm_started = true;
          // The item after this one, if it will be a claimed one.
          if (n + 1 >= nitems) claim = take();
        }
        break;
      }
      const int c = ld_acquire_cta(consumed);
      if (c != seen) {
        seen = c;
        tail = ends[(c - 1) % kInFlight];
      }
    }
  }
}

}  // namespace grape_dec

extern "C" __global__ void __cluster_dims__(grape_dec::kCluster, 1, 1) __launch_bounds__(kDecLaunchThreads, 1)
    grape_decoder(const __grid_constant__ DecoderParams p) {
  using namespace grape_dec;
  extern __shared__ __align__(1024) unsigned char smem[];
  Smem s;
  s.ring = smem + kShared.ring;
  s.As = reinterpret_cast<__half*>(smem + kShared.as);
  s.red = reinterpret_cast<float*>(smem + kShared.red);
  s.qkv = reinterpret_cast<float*>(smem + kShared.qkv);
  s.att = reinterpret_cast<float*>(smem + kShared.att);
  s.part = reinterpret_cast<float*>(smem + kShared.part);
  s.fs = reinterpret_cast<float*>(smem + kShared.fs);
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem + kShared.bars);
  unsigned long long* cbar = bars + kInFlight;  // the closing cluster barrier; [1] the rows' copies
  unsigned long long* rbar = cbar + 1;
  s.xbar = cbar + 2;
  unsigned long long* ends = s.xbar + 3;
  unsigned* starts = reinterpret_cast<unsigned*>(ends + kInFlight);
  int* consumed = reinterpret_cast<int*>(starts + kInFlight);
  int* claimed = consumed + 2;
  DecoderItem* own = reinterpret_cast<DecoderItem*>(claimed + kInFlight);
  const int tid = threadIdx.x, g = blockIdx.x, grid = gridDim.x;
  const unsigned rank = (unsigned)(g % kCluster);
  const int cluster = g / kCluster;
  const DecoderItem* items = p.items + (long long)g * p.max_items;
  const int nitems = p.nitems[g];
  const int pos = p.position;
  if (tid == 0) {
    for (int j = 0; j < kInFlight; ++j) mbar_init(bars + j, 1);
    mbar_init(cbar, kCluster);
    mbar_init(rbar, 1);
    for (int j = 0; j < 3; ++j) mbar_init(s.xbar + j, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    *consumed = 0;
  }
  // The block's own barriers exist before its producer copies into them.
  __syncthreads();
  // Every block's barriers exist before any block arrives on them (all threads arrive once). The
  // producer does not wait for the cluster: its copies arrive on its own block's barriers only,
  // and step 0's item (from DRAM, the kernel's first bytes) starts before the cluster has met.
  if (tid >= kThreads) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    if (tid == kThreads) produce(p, items, nitems, pos, s, bars, ends, starts, consumed, claimed, own);
    return;
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  // The other set of sums, zeroed for the next launch (this launch's set was zeroed by the last).
  {
    float* other = p.Y + (long long)((p.epoch + 1) & 1u) * kSteps * kRows * kD;
    for (int t = g * kThreads + tid; t < kSteps * kRows * kD; t += grid * kThreads) other[t] = 0.0f;
    if (kLmClaim && g == 0 && tid == 0) p.lm_claims[(p.epoch + 1) & 1u] = 0u;
  }
  float* Y = p.Y + (long long)(p.epoch & 1u) * kSteps * kRows * kD;
  const int share = (kRows * kD + p.step_blocks - 1) / p.step_blocks;
  csync();
  int last_step = -1;
  unsigned rows_phase = 0;  // the rows' copies waited for (rbar's phases)
  // Each item's step and index are read one item ahead, and its layer norm's epsilon before the
  // step's wait: a global load on a step's path costs an L2 round trip (the counter's acquire
  // loads invalidate L1), and the epsilon's sat between the rows and their statistics.
  int next_step = nitems > 0 ? items[0].step : 0, next_index = nitems > 0 ? items[0].index : 0;
  // Past the block's list, with kLmClaim: lm_head items the producer claimed (claimed[slot]), until
  // it finds none left.
  for (int n = 0; kLmClaim || n < nitems; ++n) {
    const bool listed = !kLmClaim || n < nitems;
    const int step = listed ? next_step : kSteps;
    int index = next_index;
    if (n + 1 < nitems) next_step = items[n + 1].step, next_index = items[n + 1].index;
    const float eps = p.eps[step];
    unsigned long long* stamp = p.trace && tid == 0 && (!kLmClaim || n < p.max_items)
                                    ? p.trace + ((long long)g * p.max_items + n) * kDecTraceStamps
                                    : nullptr;
    if (stamp) stamp[0] = globaltimer();
    const float* R = step == 0 ? nullptr : Y + (long long)(step - 1) * kRows * kD;
    float* Yout = step < kSteps ? Y + (long long)step * kRows * kD : nullptr;
    const bool first = step != last_step;
    const bool is_a = step < kSteps && step % 2 == 0,
               active = step == kSteps || cluster < (is_a ? kHeads : p.b_clusters);
    // A layer step's rows come as one copy a cluster: each block reads an eighth from L2 and
    // multicasts it into every block's `part` (120 blocks reading the same 15 KB at once made
    // the rows' loads take 0.6 to 1.5 us, run 286). A cluster is active or idle as a whole, and
    // each of its blocks has an item of every layer step (not so at lm_head: its rows are loaded).
    const bool shared_rows = first && active && p.rows_multicast && step > 0 && step < kSteps;
    // kOnePoller: rank 0 alone polls and copies the whole rows to the cluster; the other blocks
    // only wait for the copy (their rows' barrier counts its bytes), which rank 0 issues after
    // seeing every block's release of the previous step, as each rank does for its eighth below.
    const bool by_rank0 = kOnePoller && shared_rows;
    if (first) {
      if (step > 0 && tid == 0) {
        const unsigned target = (unsigned)p.step_blocks * p.epoch;
        // Acquire loads: relaxed polls and one fence.acq_rel.gpu once the count is reached took
        // about 1 us more a step (run 263: the fence costs more than the acquire loads).
        if (!by_rank0 || rank == 0)
          while (ld_acquire(p.counters + step - 1) < target) {
          }
        if (by_rank0) {
          mbar_expect(rbar, kRows * kD * 4);
          if (rank == 0) {
            asm volatile("fence.proxy.async.global;" ::: "memory");
            bulk_load_multicast(s.part, R, kRows * kD * 4, rbar);
          }
        } else if (shared_rows) {
          // The sums were written by the other blocks' reductions (generic proxy); the copy reads
          // them through the async proxy.
          asm volatile("fence.proxy.async.global;" ::: "memory");
          constexpr unsigned kShare = kRows * kD * 4 / kCluster;
          mbar_expect(rbar, kRows * kD * 4);
          bulk_load_multicast(reinterpret_cast<unsigned char*>(s.part) + rank * kShare,
                              reinterpret_cast<const unsigned char*>(R) + rank * kShare, kShare, rbar);
        }
      }
      csync();
    }
    if (stamp) stamp[1] = globaltimer();
    // The step's rows are loaded before waiting for the item (its scale and shift): their latency
    // overlaps the item's last bytes, which at step 0 are the kernel's first.
    float v[3][8];
    if (first && active && !shared_rows) load_rows(p, pos, R, v);
    if (stamp) stamp[10] = globaltimer();
    mbar_wait(bars + n % kInFlight, (unsigned)(n / kInFlight) & 1u);
    if (!listed) {
      index = claimed[n % kInFlight];
      if (index < 0) break;  // every thread reads the same slot: the whole block leaves the loop
    }
    if (stamp) stamp[2] = globaltimer();
    const unsigned char* it = s.ring + starts[n % kInFlight];
    const int lo = min(g * share, kRows * kD), hi = min(lo + share, kRows * kD);
    if (first && active) {
      if (shared_rows) {
        if (tid < kRows * 32) mbar_wait(rbar, rows_phase & 1u);
        load_rows_shared(s.part, v);
        ++rows_phase;
      }
      const unsigned gam = step == kSteps ? kDecLmG : is_a ? kDecAG : decoder_b_layout(kFcCols).g;
      stage_rows(v, reinterpret_cast<const __half*>(it + gam), eps, s.As, Yout, lo, hi);
      csync();
    } else if (first && tid < hi - lo) {
      // An idle block's share of the rows into the sum.
      atomicAdd(Yout + lo + tid, R ? __ldcg(R + lo + tid) : embedding(p, pos, lo + tid));
    }
    if (stamp) stamp[3] = globaltimer();
    if (step == kSteps)
      lm_item(p, index, it, s);
    else if (active && is_a)
      stage_a(p, step / 2, cluster, rank, pos, it, s, Yout, stamp);
    else if (active)
      stage_b<kFcCols / 8>(step / 2, rank, cluster == 0, it, s, Yout, stamp);
    csync();
    if (stamp) stamp[4] = globaltimer();
    if (tid == 0) {
      st_release_cta(consumed, n + 1);
      if (step < kSteps) red_release_add(p.counters + step, 1u);
    }
    last_step = step;
  }
  // Step 0's item is the launch's first read and comes from DRAM (about 1 us of step 0's wait,
  // run 298's trace): the next launch's goes into L2 now, when this one has nothing left to
  // stream. Its row's past keys and values as they will be if the next launch is one position on.
  if (kPrefetchNext && tid == 0 && nitems > 0 && items[0].step == 0) {
    const DecoderItem& I = items[0];
    for (int q = 0; q < I.pieces; ++q) prefetch_l2(I.src[q], I.len[q]);
    const int next = min(pos + 1, kT);
    if (I.index >= 0) {
      const long long kv_at = kv_rows_at(0, I.index, cluster);
      prefetch_l2(static_cast<const __half*>(p.k_cache) + kv_at, (unsigned)next * kHd * 2);
      prefetch_l2(static_cast<const __half*>(p.v_cache) + kv_at, (unsigned)next * kHd * 2);
    }
  }
  // No block leaves while another may still read its shared memory.
  cluster_sync(cbar);
}

#endif  // GRAPE_KERNELS_DECODER_STEP_CUH
