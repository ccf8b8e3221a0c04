// A design probe, not product code: GPT-2 small's decode step (fp16, 5 rows, 128 past positions, 12
// layers, random weights) as ONE persistent kernel with TWO dependent all-to-all stages a layer
// instead of five, the cut the thirty-sixth session's probes pointed at (scripts/probes/
// decode_megakernel.cu: 60 stages at 3.5-5.5 us each; scripts/probes/stage_chain.cu: 1.25-1.6 us a
// stage with no work at all).
//   stage A (attention block), one thread-block cluster of 8 per head: each block computes 24 of the
//     head's 192 q/k/v columns (ln_1 fused) and pushes them into the shared memory of the block
//     that owns the row (st.async, counted on the receiver's mbarrier: no cluster barrier); blocks
//     0..4 attend for their row and push the 64 outputs to all 8; every block multiplies them by its
//     96 columns of the head's 64 rows of attn c_proj and adds the 5 x 96 results into the step's
//     fp32 sum in L2 (vector reductions; the 12 heads meet there).
//   stage B (MLP block), every block: C (24 or 32) columns of c_fc (ln_2 fused, gelu), pushed to
//     every block of its cluster; each block then multiplies the cluster's 8 C gelu outputs by its
//     96 columns of those rows of mlp c_proj and adds the 5 x 96 results into the step's sum.
//   The residual stays in fp32: step s's sum Y[s] starts at zero (zeroed one launch ahead, two
//   sets); every block adds its share of the step's input rows, the products add their outputs, so
//   Y[s] is step s + 1's input. A step waits for one counter that every block of the previous step
//   adds 1 to with a release.
//   A producer warp streams every block's next items (weights in a per-block layout made on the
//   host, and the attention's past keys and values) into a shared-memory ring by bulk copies,
//   optionally paced (MK_PACE) so that 96 blocks' copies do not reach DRAM as one burst at every
//   step's start, just when the step's rows are read.
// It checks its logits against plain reference kernels (one thread per output) before timing.
//
// Answer (H200; bench/RESULTS.md "thirty-seventh session", outputs in
// bench/results/2026-11-28-h100/twostage/): 149 us a step in the best configuration against Grape's
// graph executor's 413 us in the same run (149-154 us on four lent H200s, 170 on a fifth whose
// lm_head took 29 us); a layer takes 10 us, of which the counter, the rows' L2 round trip and the
// layer norm take 1.8-2 us a stage; lm_head 22 us.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o decode_two_stage scripts/probes/decode_two_stage.cu
// Run:   ./decode_two_stage [iters]   (correctness, time per step, per-stage phase stamps).
//        Environment: MK_PACE=list (ns per 8 KB weight copy), MK_LM_L2=list (lm_head items put in
//        L2 during the last layers), MK_EXTRA=1 (the clusters that fit beyond the 12 join for
//        lm_head only), MK_KV_GLOBAL=1 (the attention reads the past keys/values from global
//        memory, put into L2 a step ahead, not from the ring), MK_LN2=1 (two-pass layer-norm
//        variance), MK_SPLIT=1 (stage A's attention split over the cluster by position),
//        MK_PROFILE=1 (after the checks, five launches of the last MK_PACE /
//        MK_LM_L2 configuration only, for ncu or nsys). The best configuration measured:
//        MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1 ./decode_two_stage 200
#include <cstring>
#include <vector>

#include "decode_reference.cuh"
#include "probe_sync.cuh"

constexpr int kCluster = 8, kThreads = 256, kLaunchThreads = kThreads + 32, kInFlight = 8;
constexpr int kQkvCols = 3 * kHd / kCluster;  // 24 of the head's 192 q/k/v columns a block
constexpr int kProjCols = kD / kCluster;      // 96 of attn c_proj's and mlp c_proj's columns a block
constexpr int kLmCols = 32;
constexpr int kLmItems = (kVocab + kLmCols - 1) / kLmCols;
constexpr int kSteps = 2 * kLayers;  // stages A and B of every layer; lm_head is step kSteps
constexpr int kLda = kD + 8;         // the staged rows' pitch in halves
constexpr int kMaxItems = kSteps + kLmItems / 96 + 2, kMaxSeg = 1 + 2 * kRows;
constexpr int kRingBytes = 196608;
// Per step and block: 0 wait passed, 1 weight in, 2 rows staged, 3 first product done, 4 first cluster
// sync passed, 5 attention done, 6 second cluster sync passed, 7 done.
constexpr int kStamps = 9, kDone = 7;  // 8: warp 0's rows loaded (inside the staging)

// Byte offsets inside an item. A: the q/k/v tile [kD][24], ln_1 scale and shift, the 24 biases, the
// head's attn c_proj rows for this block's 96 columns [12][64][8], attn c_proj's bias [kD]; then (blocks
// 0..4) the row's past keys and values [kPast][kHd] each.
constexpr unsigned kAT = 0, kAG = kAT + kD * kQkvCols * 2, kAB = kAG + 2 * kD * 2, kAW = kAB + kQkvCols * 2,
                   kAPB = kAW + kHd * kProjCols * 2, kABlob = kAPB + kD * 2, kAK = kABlob,
                   kAV = kAK + kPast * kHd * 2, kAKV = kAV + kPast * kHd * 2;
// MK_SPLIT items: the blob, then every row's keys and values of this block's 16 past positions.
constexpr int kSplitPos = kPast / kCluster;  // 16
constexpr int kPartW = kHd + 4;              // a row's partial: max, sum, 2 pad, 64 values
constexpr unsigned kSK = kABlob, kSV = kSK + kRows * kSplitPos * kHd * 2,
                   kSKV = kSV + kRows * kSplitPos * kHd * 2;
// B (C = c_fc columns a block): the c_fc tile [kD][C], ln_2 scale and shift, C biases, mlp c_proj's
// rows of the cluster's 8 C c_fc columns for this block's 96 columns [12][8 C][8], mlp c_proj's
// bias [kD].
struct BLayout {
  unsigned t, g, b, w2, pb, blob;
};
__host__ __device__ constexpr BLayout b_layout(int C) {
  return BLayout{0u,
                 (unsigned)(kD * C * 2),
                 (unsigned)(kD * C * 2 + 2 * kD * 2),
                 (unsigned)(kD * C * 2 + 2 * kD * 2 + C * 2),
                 (unsigned)(kD * C * 2 + 2 * kD * 2 + C * 2 + C * kD * 2),
                 (unsigned)(kD * C * 2 + 2 * kD * 2 + C * 2 + C * kD * 2 + kD * 2)};
}
// lm_head: the tile [kD][32]; the block's first item also ln_f's scale and shift.
constexpr unsigned kLmT = 0, kLmG = kD * kLmCols * 2;

struct Item {
  int step, index;  // step 0..kSteps (lm_head); index: lm_head's item
  unsigned bytes;
  int nseg;
  const void* src[kMaxSeg];
  unsigned len[kMaxSeg], off[kMaxSeg];
  const void* l2[2];  // put into L2 when the item is issued (MK_KV_GLOBAL: the past keys, values)
  unsigned l2len[2];
};
struct Params {
  const Item* items;    // [grid][kMaxItems]
  const int* nitems;    // [grid]
  unsigned* counters;   // [kSteps]
  const float* x0;      // the launch's input rows [kRows][kD]
  float* Y;             // two sets [2][kSteps][kRows][kD]: step s adds its input rows (each block its share)
                        // and its output (the products' reductions) into Y[s], the next step's input
  __half* kc[kLayers];  // [kRows][kHeads][kT][kHd]
  __half* vc[kLayers];
  float* logits;                            // [kRows][kVocab]
  int fc_cols, heads_clusters, b_clusters;  // clusters past these idle in stage A / B
  int step_blocks;  // blocks 0.. that take part in the layers' steps (the rest: lm_head only)
  // MK_KV_GLOBAL=1: the attention reads the past keys/values from global memory (put into L2 when
  // the item is issued, a step ahead) instead of the ring, as longer contexts would have to.
  int kv_global;
  int ln_two_pass;  // MK_LN2=1: the layer norm's variance in a second pass (as the product must)
  int attn_split;   // MK_SPLIT=1: stage A's attention split over the cluster by position (stage_a_split)
  unsigned cepoch;  // launches so far, this one included (counter targets)
  int mode;         // bit 0: no counter waits (the streaming bound; results wrong); bit 1: L2 prefetch of
                    // the next item (run 232: no gain); bit 2: serial cluster arrivals;
                    // bit 3: items issued after the previous step's rows are staged (run 234:
                    // slower); bit 4: the exchanges by cluster barriers (runs 233-235) instead of
                    // pushed stores
  unsigned long long* stamps;  // [kSteps + 1][grid][kStamps] or null
  // The producer's pacing: copies of at most 8 KB, one every pace_ns (0: 16 KB copies at once), so
  // that the blocks' next items do not reach DRAM as one burst at every step's start, when the
  // rows are loaded; and lm_l2: lm_head items of the block's put into L2, one with each item
  // issued from step kSteps - lm_l2 on.
  unsigned pace_ns;
  int lm_l2;
};

__device__ __forceinline__ void csync() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }
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
// Block `rank` of this cluster's shared-memory address of the same variable as `p`.
__device__ __forceinline__ unsigned remote(const void* p, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_remote(unsigned addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
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

// A barrier of the cluster's compute threads only (the producer warp never joins: barrier.cluster
// would wait for it). Lanes 0-7 of warp 0 arrive, with a release, on the mbarrier of block `lane`
// (one each, in parallel: thread 0 arriving on all eight in turn, mode bit 2, costs eight release
// fences in a row); two barriers alternate, so that a fast block's next arrival cannot land in a
// slow block's current phase.
struct ClusterSync {
  unsigned long long* bars;  // [2] in shared memory, 8 arrivals each
  unsigned uses;
  bool serial;
  __device__ void sync() {
    csync();
    unsigned long long* b = bars + (uses & 1u);
    if (serial) {
      if (threadIdx.x == 0)
        for (unsigned r = 0; r < kCluster; ++r)
          asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote(b, r))
                       : "memory");
    } else if (threadIdx.x < kCluster) {
      asm volatile(
          "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote(b, threadIdx.x))
          : "memory");
    }
    if (threadIdx.x == 0) mbar_wait_cluster(b, (uses >> 1) & 1u);
    ++uses;
    csync();
  }
};

// The step's input rows R (fp32), through a layer norm with scale and shift from the item's bytes,
// into As (fp16) [kRows][kLda], one warp a row; the rows' elements [lo, hi) (this block's share,
// flattened) are also added into Y, the sum the next step reads.
__device__ void stage_rows(const float* R, const __half* gamma, __half* As, float* Y, int lo, int hi,
                           unsigned long long* st, bool two_pass) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (w >= kRows) return;
  uint4 gu[3], bu[3];  // the scale and shift first: shared-memory loads, off the rows' latency
  for (int j = 0; j < 3; ++j) {
    gu[j] = reinterpret_cast<const uint4*>(gamma)[lane + 32 * j];
    bu[j] = reinterpret_cast<const uint4*>(gamma + kD)[lane + 32 * j];
  }
  float v[3][8];
  for (int j = 0; j < 3; ++j) {
    const int k = (lane + 32 * j) * 8;
    for (int i = 0; i < 2; ++i) {
      const float4 x = __ldcg(reinterpret_cast<const float4*>(R + w * kD + k) + i);
      v[j][4 * i] = x.x, v[j][4 * i + 1] = x.y, v[j][4 * i + 2] = x.z, v[j][4 * i + 3] = x.w;
    }
  }
  // Sum and sum of squares in one pass, their shuffles interleaved.
  float sum = 0.0f, sq = 0.0f;
  for (int j = 0; j < 3; ++j)
    for (int e = 0; e < 8; ++e) sum += v[j][e], sq = fmaf(v[j][e], v[j][e], sq);
  for (int o = 16; o; o >>= 1) {
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
    sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  if (st && threadIdx.x == 0) st[8] = globaltimer();
  const float mean = sum / kD;
  float var = sq / kD - mean * mean;
  if (two_pass) {
    float d2 = 0.0f;
    for (int j = 0; j < 3; ++j)
      for (int e = 0; e < 8; ++e) d2 = fmaf(v[j][e] - mean, v[j][e] - mean, d2);
    for (int o = 16; o; o >>= 1) d2 += __shfl_xor_sync(0xffffffffu, d2, o);
    var = d2 / kD;
  }
  const float rstd = rsqrtf(fmaxf(var, 0.0f) + 1e-5f);
  for (int j = 0; j < 3; ++j) {
    const int k = (lane + 32 * j) * 8;
    const __half* g = reinterpret_cast<const __half*>(&gu[j]);
    const __half* b = reinterpret_cast<const __half*>(&bu[j]);
    __align__(16) __half o8[8];
    for (int e = 0; e < 8; ++e)
      o8[e] = __float2half((v[j][e] - mean) * rstd * __half2float(g[e]) + __half2float(b[e]));
    *reinterpret_cast<uint4*>(As + w * kLda + k) = *reinterpret_cast<const uint4*>(o8);
  }
  // This block's share of the rows into the next step's sum (after the staging's own work).
  if (Y)
    for (int j = 0; j < 3; ++j) {
      const int at = w * kD + (lane + 32 * j) * 8;
      if (at + 8 > lo && at < hi)
        for (int e = 0; e < 8; ++e)
          if (at + e >= lo && at + e < hi) atomicAdd(Y + at + e, v[j][e]);
    }
}

// As [kRows][kD] times a tile [kD][8 NB] on the tensor cores (mma.m16n8k16, rows 5..15 zero, the
// warps taking the k steps in turn); the warps' partial sums are left in red [8][kRows][8 NB] for
// gemv_sum after a csync. A 32-column tile's rows are 64 bytes, so the 8 rows an ldmatrix reads
// would share 2 bank groups: its 16-byte chunk j of row k is stored at j ^ ((k >> 1) & 3) (the
// host's swizzle32), which spreads them over 8.
template <int NB>
__device__ void gemv(const __half* As, const unsigned char* tile, float* red) {
  constexpr int C = 8 * NB, W = kThreads / 32;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  float acc[NB][4];
#pragma unroll
  for (int j = 0; j < NB; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const __half* arow = As + g * kLda + 2 * c;
  const int rr = (lane & 7) + 8 * ((lane >> 3) & 1), sw = NB == 4 ? (rr >> 1) & 3 : 0;
  const unsigned wbase = smem_addr(tile) + rr * C * 2;
#pragma unroll 4
  for (int s = w; s < kD / 16; s += W) {
    unsigned a[4] = {0u, 0u, 0u, 0u};
    if (g < kRows) {
      a[0] = *reinterpret_cast<const unsigned*>(arow + 16 * s);
      a[2] = *reinterpret_cast<const unsigned*>(arow + 16 * s + 8);
    }
    unsigned b[2 * NB];
    const unsigned addr = wbase + s * 16 * C * 2;
#pragma unroll
    for (int j = 0; j < NB; ++j)
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                   : "=r"(b[2 * j]), "=r"(b[2 * j + 1])
                   : "r"(addr + 16 * (j ^ sw)));
#pragma unroll
    for (int j = 0; j < NB; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * j]), "r"(b[2 * j + 1]));
  }
  if (g < kRows)
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      red[(w * kRows + g) * C + 8 * j + 2 * c] = acc[j][0];
      red[(w * kRows + g) * C + 8 * j + 2 * c + 1] = acc[j][1];
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
  __half* As;   // [kRows][kLda]
  float* red;   // [8][kRows][32]
  float* qkv;   // [kRows][192]: the q/k/v of this block's row (attention blocks; MK_SPLIT: of every
                // row), fp16-rounded
  float* att;   // [kRows][kHd]: the head's attention outputs, fp16-rounded
  float* part;  // stage B's gelu outputs of the cluster (halves [kRows][8 C + 8]); the attention's
                // scratch
  // Pushed exchanges (the default; mode bit 4: cluster barriers instead): mbarriers counting the
  // bytes of [0] this row's q/k/v, [1] the head's attention outputs, [2] the cluster's gelu outputs, each
  // completing once a layer.
  unsigned long long* xbar;
  bool push;
  float* fs;  // stage B's gelu outputs, halves [8][40] (rows 5..7 unused)
};

// Rows a [kRows][K] (halves, row pitch `pitch`; rows 5..15 zero) times an item's [12][K][8] weight
// (an n-block's K rows of 16 bytes contiguous, so ldmatrix reads distinct banks) for this block's
// 96 columns of the output, on the tensor cores, added (with `bias`, if not null) into `delta` by
// vector reductions. The k steps go in 4 quarters and the 12 n-blocks in 2 halves: warp w takes
// quarter w & 3 of half w >> 2 (six independent accumulators, one A fragment a k step); the
// quarters' partial sums meet in kp [4][kRows][96] (shared memory).
template <int K>
__device__ void proj96(const __half* a_rows, int pitch, const unsigned char* wt, float* kp,
                       const __half* bias, float* delta, unsigned rank) {
  constexpr int KQ = K / 16 / 4;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g8 = lane >> 2, c = lane & 3, kq = w & 3,
            nh = w >> 2;
  const unsigned wb = smem_addr(wt) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * 16;
  float acc[6][4] = {};
#pragma unroll
  for (int q = 0; q < KQ; ++q) {
    const int ks = kq * KQ + q;
    unsigned a[4] = {0u, 0u, 0u, 0u};
    if (g8 < kRows) {
      a[0] = *reinterpret_cast<const unsigned*>(a_rows + g8 * pitch + 16 * ks + 2 * c);
      a[2] = *reinterpret_cast<const unsigned*>(a_rows + g8 * pitch + 16 * ks + 8 + 2 * c);
    }
#pragma unroll
    for (int i = 0; i < 6; ++i) {
      unsigned b0, b1;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                   : "=r"(b0), "=r"(b1)
                   : "r"(wb + ((nh * 6 + i) * K + 16 * ks) * 16));
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
          "{%8, %9}, {%0, %1, %2, %3};"
          : "+f"(acc[i][0]), "+f"(acc[i][1]), "+f"(acc[i][2]), "+f"(acc[i][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
  }
  if (g8 < kRows)
#pragma unroll
    for (int i = 0; i < 6; ++i)
      *reinterpret_cast<float2*>(kp + (kq * kRows + g8) * kProjCols + (nh * 6 + i) * 8 + 2 * c) =
          make_float2(acc[i][0], acc[i][1]);
  csync();
  if (tid < kRows * kProjCols / 2) {
    const int b = tid / (kProjCols / 2), n = 2 * (tid - b * (kProjCols / 2)), col = (int)rank * kProjCols + n;
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

// Stage A for head h, this block's rank in its cluster.
__device__ void stage_a(const Params& p, int layer, int h, unsigned rank, const unsigned char* it,
                        const Smem& s, ClusterSync& cs, float* delta, unsigned long long* st) {
  const int tid = threadIdx.x;
  const unsigned parity = (unsigned)layer & 1u;
  if (s.push && tid == 0) {
    if (rank < kRows) mbar_expect(s.xbar, 3 * kHd * 4);
    mbar_expect(s.xbar + 1, kRows * kHd * 4);
  }
  gemv<kQkvCols / 8>(s.As, it + kAT, s.red);
  csync();
  if (s.push) {
    // Row r's 24 values to block r, 4 a thread.
    if (tid < kRows * kQkvCols / 4) {
      const int r = tid / (kQkvCols / 4), j = 4 * (tid - r * (kQkvCols / 4));
      const __half* bias = reinterpret_cast<const __half*>(it + kAB) + j;
      const float4 v = make_float4(round_half(gemv_sum(s.red, kQkvCols, r, j) + __half2float(bias[0])),
                                   round_half(gemv_sum(s.red, kQkvCols, r, j + 1) + __half2float(bias[1])),
                                   round_half(gemv_sum(s.red, kQkvCols, r, j + 2) + __half2float(bias[2])),
                                   round_half(gemv_sum(s.red, kQkvCols, r, j + 3) + __half2float(bias[3])));
      st_async4(s.qkv + rank * kQkvCols + j, (unsigned)r, s.xbar, v);
    }
    if (st && tid == 0) st[3] = globaltimer();
    if (rank < kRows) mbar_wait(s.xbar, parity);
  } else {
    if (tid < kRows * kQkvCols) {
      const int r = tid / kQkvCols, j = tid - r * kQkvCols;
      const float v =
          gemv_sum(s.red, kQkvCols, r, j) + __half2float(reinterpret_cast<const __half*>(it + kAB)[j]);
      st_remote(remote(s.qkv + rank * kQkvCols + j, (unsigned)r), round_half(v));
    }
    if (st && tid == 0) st[3] = globaltimer();
    cs.sync();
  }
  if (st && tid == 0) st[4] = globaltimer();
  if (rank < kRows) {
    // Row b = rank of head h: the new key and value into the caches; scores with two threads a past
    // key (32 dimensions each) and threads 0-1 also the new key; softmax by warp maxima and sums;
    // the outputs as 4 partial sums over 32 keys each.
    const int b = (int)rank, item = b * kHeads + h, lane = tid & 31, w = tid >> 5;
    const __half* Ks =
        p.kv_global ? p.kc[layer] + (size_t)item * kT * kHd : reinterpret_cast<const __half*>(it + kAK);
    const __half* Vs =
        p.kv_global ? p.vc[layer] + (size_t)item * kT * kHd : reinterpret_cast<const __half*>(it + kAV);
    float* wm = s.part;    // [8] warp maxima
    float* ws = wm + 8;    // [8] warp sums
    float* pr = ws + 8;    // [kT] probabilities (unnormalised)
    float* pv = pr + 160;  // [4][64]
    const float* q = s.qkv;
    if (tid < kHd) {
      const long long at = ((long long)item * kT + kPast) * kHd + tid;
      p.kc[layer][at] = __float2half(s.qkv[kHd + tid]);
      p.vc[layer][at] = __float2half(s.qkv[2 * kHd + tid]);
    }
    const int key = tid >> 1, half = tid & 1;
    float sc = 0.0f, sn = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = half * 4 + ((j + key) & 3);
      const uint4 u = *reinterpret_cast<const uint4*>(Ks + key * kHd + c * 8);
      const __half* e = reinterpret_cast<const __half*>(&u);
#pragma unroll
      for (int i = 0; i < 8; ++i) sc = fmaf(q[c * 8 + i], __half2float(e[i]), sc);
    }
    if (tid < 2)
      for (int d = 32 * tid; d < 32 * tid + 32; ++d) sn = fmaf(q[d], q[kHd + d], sn);
    sc += __shfl_xor_sync(0xffffffffu, sc, 1);
    sn += __shfl_xor_sync(0xffffffffu, sn, 1);
    sc *= 0.125f, sn *= 0.125f;
    float m = fmaxf(sc, tid == 0 ? sn : -INFINITY);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) wm[w] = m;
    csync();
    m = wm[0];
#pragma unroll
    for (int i = 1; i < 8; ++i) m = fmaxf(m, wm[i]);
    const float e = half ? 0.0f : __expf(sc - m);
    if (!half) pr[key] = e;
    float sum = e;
    if (tid == 0) {
      const float en = __expf(sn - m);
      pr[kPast] = en;
      sum += en;
    }
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) ws[w] = sum;
    csync();
    {
      const int d = tid & 63, pt = tid >> 6;
      float o = pt == 0 ? pr[kPast] * q[2 * kHd + d] : 0.0f;
#pragma unroll 8
      for (int t = pt * 32; t < pt * 32 + 32; ++t) o = fmaf(pr[t], __half2float(Vs[t * kHd + d]), o);
      pv[pt * 64 + d] = o;
    }
    csync();
    float inv = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) inv += ws[i];
    inv = 1.0f / inv;
    // Every block of the cluster gets the row's 64 outputs.
    if (s.push) {
      if (tid < kCluster * kHd / 4) {
        const int d = 4 * (tid & 15);
        float o[4];
        for (int i = 0; i < 4; ++i)
          o[i] = round_half((pv[d + i] + pv[64 + d + i] + pv[128 + d + i] + pv[192 + d + i]) * inv);
        st_async4(s.att + b * kHd + d, (unsigned)(tid >> 4), s.xbar + 1, make_float4(o[0], o[1], o[2], o[3]));
      }
    } else {
      for (int t = tid; t < kCluster * kHd; t += kThreads) {
        const int d = t & 63;
        const unsigned to = (unsigned)(t >> 6);
        const float o = (pv[d] + pv[64 + d] + pv[128 + d] + pv[192 + d]) * inv;
        st_remote(remote(s.att + b * kHd + d, to), round_half(o));
      }
    }
  }
  if (st && tid == 0) st[5] = globaltimer();
  if (s.push)
    mbar_wait(s.xbar + 1, parity);
  else
    cs.sync();
  if (st && tid == 0) st[6] = globaltimer();
  // The head's share of attn c_proj for this block's 96 columns: the outputs as halves (in the
  // gemv's scratch, free now), then proj96.
  for (int t = tid; t < kRows * kHd; t += kThreads)
    reinterpret_cast<__half*>(s.red)[(t / kHd) * (kHd + 8) + t % kHd] = __float2half(s.att[t]);
  csync();
  proj96<kHd>(reinterpret_cast<const __half*>(s.red), kHd + 8, it + kAW, s.part,
              h == 0 ? reinterpret_cast<const __half*>(it + kAPB) : nullptr, delta, rank);
}

// MK_SPLIT=1: stage A with the attention split over the cluster by position, flash-decoding style.
// Every block gets every row's q/k/v; block r takes past positions [16 r, 16 r + 16) of all 5 rows
// (block 7 also the new position), one warp a row, and pushes each row's partial (max, sum, 64
// weighted values) to every block; every block merges the 8 partials of every row. The same two
// exchanges as stage_a, no idle blocks, and a block's keys/values (5 rows x 16 positions) grow with
// the context by 1/8 of a row's, not by a whole row's.
__device__ void stage_a_split(const Params& p, int layer, int h, unsigned rank, const unsigned char* it,
                              const Smem& s, float* delta, unsigned long long* st) {
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const unsigned parity = (unsigned)layer & 1u;
  float* parts = s.part;  // [8 blocks][kRows][kPartW]
  if (tid == 0) {
    mbar_expect(s.xbar, kRows * 3 * kHd * 4);
    mbar_expect(s.xbar + 1, kCluster * kRows * kPartW * 4);
  }
  gemv<kQkvCols / 8>(s.As, it + kAT, s.red);
  csync();
  // Every row's 24 values to every block, 4 a store.
  if (tid < kCluster * kRows * kQkvCols / 4) {
    const int q = tid / (kRows * kQkvCols / 4), rest = tid - q * (kRows * kQkvCols / 4),
              r = rest / (kQkvCols / 4), j = 4 * (rest - r * (kQkvCols / 4));
    const __half* bias = reinterpret_cast<const __half*>(it + kAB) + j;
    const float4 v = make_float4(round_half(gemv_sum(s.red, kQkvCols, r, j) + __half2float(bias[0])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 1) + __half2float(bias[1])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 2) + __half2float(bias[2])),
                                 round_half(gemv_sum(s.red, kQkvCols, r, j + 3) + __half2float(bias[3])));
    st_async4(s.qkv + r * 3 * kHd + rank * kQkvCols + j, (unsigned)q, s.xbar, v);
  }
  if (st && tid == 0) st[3] = globaltimer();
  mbar_wait(s.xbar, parity);
  if (st && tid == 0) st[4] = globaltimer();
  if (rank < kRows && tid < kHd) {  // row `rank`'s new key and value into the caches
    const long long at = ((long long)((int)rank * kHeads + h) * kT + kPast) * kHd + tid;
    p.kc[layer][at] = __float2half(s.qkv[rank * 3 * kHd + kHd + tid]);
    p.vc[layer][at] = __float2half(s.qkv[rank * 3 * kHd + 2 * kHd + tid]);
  }
  if (w < kRows) {
    const int b = w;
    const float* q = s.qkv + b * 3 * kHd;
    const __half* Ks = reinterpret_cast<const __half*>(it + kSK) + b * kSplitPos * kHd;
    const __half* Vs = reinterpret_cast<const __half*>(it + kSV) + b * kSplitPos * kHd;
    const bool has_new = rank == kCluster - 1;
    float sc = -INFINITY;
    if (lane < kSplitPos) {
      float a = 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = (j + lane) & 7;
        const uint4 u = *reinterpret_cast<const uint4*>(Ks + lane * kHd + c * 8);
        const __half* e = reinterpret_cast<const __half*>(&u);
#pragma unroll
        for (int i = 0; i < 8; ++i) a = fmaf(q[c * 8 + i], __half2float(e[i]), a);
      }
      sc = a * 0.125f;
    } else if (lane == kSplitPos && has_new) {
      float a = 0.0f;
      for (int d = 0; d < kHd; ++d) a = fmaf(q[d], q[kHd + d], a);
      sc = a * 0.125f;
    }
    float m = sc;
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float e = __expf(sc - m);  // 0 for the lanes without a position
    float l = e;
    for (int o = 16; o; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    // Lane takes dimensions 2 lane and 2 lane + 1.
    float o0 = 0.0f, o1 = 0.0f;
#pragma unroll
    for (int t = 0; t < kSplitPos; ++t) {
      const float et = __shfl_sync(0xffffffffu, e, t);
      const __half2 v2 = *reinterpret_cast<const __half2*>(Vs + t * kHd + 2 * lane);
      o0 = fmaf(et, __low2float(v2), o0);
      o1 = fmaf(et, __high2float(v2), o1);
    }
    const float en = __shfl_sync(0xffffffffu, e, kSplitPos);
    if (has_new) o0 = fmaf(en, q[2 * kHd + 2 * lane], o0), o1 = fmaf(en, q[2 * kHd + 2 * lane + 1], o1);
    // The partial [max, sum, 0, 0, 64 values] to every block: even lanes four values a store.
    const float n0 = __shfl_down_sync(0xffffffffu, o0, 1), n1 = __shfl_down_sync(0xffffffffu, o1, 1);
    float* row = parts + ((int)rank * kRows + b) * kPartW;
    for (unsigned to = 0; to < kCluster; ++to) {
      if (!(lane & 1)) st_async4(row + 4 + 2 * lane, to, s.xbar + 1, make_float4(o0, o1, n0, n1));
      if (lane == 1) st_async4(row, to, s.xbar + 1, make_float4(m, l, 0.0f, 0.0f));
    }
  }
  if (st && tid == 0) st[5] = globaltimer();
  mbar_wait(s.xbar + 1, parity);
  if (st && tid == 0) st[6] = globaltimer();
  // Merge the 8 partials of every row into the attention outputs.
  for (int t = tid; t < kRows * kHd; t += kThreads) {
    const int b = t / kHd, d = t - b * kHd;
    float M = -INFINITY;
#pragma unroll
    for (int q = 0; q < kCluster; ++q) M = fmaxf(M, parts[(q * kRows + b) * kPartW]);
    float L = 0.0f, O = 0.0f;
#pragma unroll
    for (int q = 0; q < kCluster; ++q) {
      const float* pr = parts + (q * kRows + b) * kPartW;
      const float f = __expf(pr[0] - M);
      L = fmaf(pr[1], f, L);
      O = fmaf(pr[4 + d], f, O);
    }
    s.att[t] = round_half(O / L);
  }
  csync();
  for (int t = tid; t < kRows * kHd; t += kThreads)
    reinterpret_cast<__half*>(s.red)[(t / kHd) * (kHd + 8) + t % kHd] = __float2half(s.att[t]);
  csync();
  proj96<kHd>(reinterpret_cast<const __half*>(s.red), kHd + 8, it + kAW, s.part,
              h == 0 ? reinterpret_cast<const __half*>(it + kAPB) : nullptr, delta, rank);
}

// Stage B for block g (C c_fc columns a block).
template <int NB>
__device__ void stage_b(int layer, unsigned rank, bool first_cluster, const unsigned char* it, const Smem& s,
                        ClusterSync& cs, float* delta, unsigned long long* st) {
  constexpr int C = 8 * NB;
  constexpr BLayout L = b_layout(C);
  const int tid = threadIdx.x;
  constexpr int KC = kCluster * C, kHb = KC + 8;     // the cluster's c_fc columns; hbuf's row pitch
  __half* hbuf = reinterpret_cast<__half*>(s.part);  // [kRows][kHb]: the cluster's gelu outputs
  if (s.push && tid == 0) mbar_expect(s.xbar + 2, kCluster * kRows * C * 2);
  gemv<NB>(s.As, it + L.t, s.red);
  csync();
  if (tid < kRows * C) {
    const int r = tid / C, j = tid - r * C;
    const float v = gemv_sum(s.red, C, r, j) + __half2float(reinterpret_cast<const __half*>(it + L.b)[j]);
    reinterpret_cast<__half*>(s.fs)[r * 40 + j] = __float2half(gelu(v));
  }
  csync();
  if (st && tid == 0) st[5] = globaltimer();
  // Every block of the cluster gets this block's C gelu outputs of every row (16 bytes a store).
  if (tid < kCluster * kRows * C / 8) {
    const int q = tid / (kRows * C / 8), rest = tid - q * (kRows * C / 8), b = rest / (C / 8),
              k8 = 8 * (rest - b * (C / 8));
    const uint4 v = *reinterpret_cast<const uint4*>(reinterpret_cast<const __half*>(s.fs) + b * 40 + k8);
    __half* to = hbuf + b * kHb + (int)rank * C + k8;
    if (s.push) {
      st_async4b(to, (unsigned)q, s.xbar + 2, v);
    } else {
      const unsigned at = remote(to, (unsigned)q);
      asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(at), "r"(v.x), "r"(v.y),
                   "r"(v.z), "r"(v.w)
                   : "memory");
    }
  }
  if (st && tid == 0) st[3] = globaltimer();
  if (s.push)
    mbar_wait(s.xbar + 2, (unsigned)layer & 1u);
  else
    cs.sync();
  if (st && tid == 0) st[4] = globaltimer();
  // The cluster's share of mlp c_proj for this block's 96 columns: its gelu outputs [kRows][KC]
  // times the item's rows [12][KC][8].
  proj96<KC>(hbuf, kHb, it + L.w2, s.part + ((kRows * kHb / 2 + 3) & ~3),
             first_cluster ? reinterpret_cast<const __half*>(it + L.pb) : nullptr, delta, rank);
}

__device__ void lm_item(const Params& p, int index, const unsigned char* it, const Smem& s) {
  gemv<kLmCols / 8>(s.As, it + kLmT, s.red);
  csync();
  const int tid = threadIdx.x;
  if (tid < kRows * kLmCols) {
    const int r = tid / kLmCols, j = tid - r * kLmCols, n = index * kLmCols + j;
    if (n < kVocab) p.logits[r * kVocab + n] = gemv_sum(s.red, kLmCols, r, j);
  }
}

__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kLaunchThreads, 1)
    decode_two_stage(const __grid_constant__ Params p) {
  extern __shared__ __align__(1024) unsigned char smem[];
  Smem s;
  s.ring = smem;
  s.As = reinterpret_cast<__half*>(smem + kRingBytes);
  s.red = reinterpret_cast<float*>(s.As + kRows * kLda);
  s.qkv = s.red + 8 * kRows * 32;
  s.att = s.qkv + kRows * 192;
  s.part = s.att + kRows * kHd;
  s.fs = s.part + kRows * kD;
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(s.fs + kRows * 32);
  unsigned long long* cbars = bars + kInFlight;
  s.xbar = cbars + 2;
  s.push = !(p.mode & 16);
  unsigned long long* ends = s.xbar + 3;
  unsigned* starts = reinterpret_cast<unsigned*>(ends + kInFlight);
  volatile int* consumed = reinterpret_cast<volatile int*>(starts + kInFlight);
  volatile int* staged = consumed + 1;  // the last step whose rows the consumers have staged
  const int tid = threadIdx.x, g = blockIdx.x, grid = gridDim.x;
  const unsigned rank = (unsigned)(g % kCluster);
  const int cluster = g / kCluster;
  const Item* items = p.items + (size_t)g * kMaxItems;
  const int nitems = p.nitems[g];
  if (tid == 0) {
    for (int j = 0; j < kInFlight; ++j) mbar_init(bars + j, 1);
    mbar_init(cbars, kCluster);
    mbar_init(cbars + 1, kCluster);
    for (int j = 0; j < 3; ++j) mbar_init(s.xbar + j, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    *consumed = 0;
    *staged = -1;
  }
  // Every block's barriers exist before any block arrives on them (all 288 threads, once).
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if (tid >= kThreads) {
    // The producer: items in order into the ring, at most kInFlight ahead, wrapping at the end.
    if (tid != kThreads) return;
    unsigned long long head = 0, tail = 0, next_t = 0;
    int seen = 0, lm_pref = 0;
    for (int n = 0; n < nitems; ++n) {
      const Item& I = items[n];
      for (;;) {
        unsigned long long at = head;
        const unsigned pos = (unsigned)(at % kRingBytes);
        if (pos + I.bytes > kRingBytes) at += kRingBytes - pos;
        // Mode bit 3: not before the consumers have staged the previous step's rows (so that the
        // item's copies do not queue ahead of those loads).
        const bool gate = !(p.mode & 8) || g >= p.step_blocks || *staged >= I.step - 1;
        if (gate && n - seen < kInFlight && at + I.bytes - tail <= kRingBytes) {
          const int j = n % kInFlight;
          starts[j] = (unsigned)(at % kRingBytes);
          ends[j] = at + I.bytes;
          unsigned char* dst = s.ring + starts[j];
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          mbar_expect(bars + j, I.bytes);
          const bool paced = p.pace_ns && I.step < kSteps;  // lm_head's stream is not paced
          const unsigned chunk = paced ? 8192u : 16384u;
          for (int q = 0; q < I.nseg; ++q)
            for (unsigned o = 0; o < I.len[q]; o += chunk) {
              if (paced) {
                unsigned long long now = globaltimer();
                while (now < next_t) now = globaltimer();
                // By copy, not by bytes: a short last piece waits the whole pace too. Pacing by bytes
                // measured slower for every configuration (run 251: 176.6-177.0 against 170.3-170.4
                // us in run 250 on the same machine), so MK_SPLIT's 2 KB pieces pay a full pace each.
                next_t = max(now, next_t) + p.pace_ns;
              }
              bulk_load(dst + I.off[q] + o, static_cast<const unsigned char*>(I.src[q]) + o,
                        min(chunk, I.len[q] - o), bars + j);
            }
          if (I.step < kSteps && I.step >= kSteps - p.lm_l2 && lm_pref < p.lm_l2 &&
              kSteps + lm_pref < nitems) {
            const Item& M = items[kSteps + lm_pref++];
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(M.src[0]), "r"(M.len[0])
                         : "memory");
          }
          head = at + I.bytes;
          for (int q = 0; q < 2; ++q)
            if (I.l2[q])
              asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(I.l2[q]), "r"(I.l2len[q])
                           : "memory");
          // Mode bit 1: the item after this one into L2 now (the ring holds one item ahead; this
          // gives the weight stream a second).
          if ((p.mode & 2) && n + 1 < nitems) {
            const Item& J = items[n + 1];
            for (int q = 0; q < J.nseg; ++q)
              asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(J.src[q]), "r"(J.len[q])
                           : "memory");
          }
          break;
        }
        const int c = *consumed;
        if (c != seen) {
          seen = c;
          tail = ends[(c - 1) % kInFlight];
        }
      }
    }
    return;
  }
  // The other set of sums, zeroed for the next launch (this launch's set was zeroed by the last).
  {
    float* other = p.Y + (size_t)((p.cepoch + 1) & 1u) * kSteps * kRows * kD;
    for (int t = g * kThreads + tid; t < kSteps * kRows * kD; t += grid * kThreads) other[t] = 0.0f;
  }
  float* Y = p.Y + (size_t)(p.cepoch & 1u) * kSteps * kRows * kD;
  ClusterSync cs{cbars, 0, (p.mode & 4) != 0};
  const int share = (kRows * kD + p.step_blocks - 1) / p.step_blocks;
  csync();
  int last_step = -1;
  for (int n = 0; n < nitems; ++n) {
    const Item& I = items[n];
    const int step = I.step;
    unsigned long long* st = p.stamps ? p.stamps + ((size_t)step * grid + g) * kStamps : nullptr;
    const float* R = step == 0 ? p.x0 : Y + (size_t)(step - 1) * kRows * kD;
    float* Yout = step < kSteps ? Y + (size_t)step * kRows * kD : nullptr;
    const bool first = step != last_step;
    if (first) {
      if (step > 0 && !(p.mode & 1) && tid == 0) {
        const unsigned target = (unsigned)p.step_blocks * p.cepoch;
        while (ld_acquire(p.counters + step - 1) < target) {
        }
      }
      csync();
      if (st && tid == 0) st[0] = globaltimer();
    }
    mbar_wait(bars + n % kInFlight, (unsigned)(n / kInFlight) & 1u);
    if (first && st && tid == 0) st[1] = globaltimer();
    const unsigned char* it = s.ring + starts[n % kInFlight];
    const bool is_a = step < kSteps && step % 2 == 0,
               active = step == kSteps || cluster < (is_a ? p.heads_clusters : p.b_clusters);
    const int lo = min(g * share, kRows * kD), hi = min(lo + share, kRows * kD);
    if (first && active) {
      const unsigned gam = step == kSteps ? kLmG : is_a ? kAG : b_layout(p.fc_cols).g;
      stage_rows(R, reinterpret_cast<const __half*>(it + gam), s.As, Yout, lo, hi, st, p.ln_two_pass);
      csync();
      if (tid == 0) *staged = step;
      if (st && tid == 0) st[2] = globaltimer();
    } else if (first && tid < hi - lo) {
      atomicAdd(Yout + lo + tid, __ldcg(R + lo + tid));  // an idle block's share
    }
    if (first && !active && tid == 0) *staged = step;
    float* delta = Yout;
    if (step == kSteps)
      lm_item(p, I.index, it, s);
    else if (!active)
      ;
    else if (is_a)
      p.attn_split ? stage_a_split(p, step / 2, cluster, rank, it, s, delta, st)
                   : stage_a(p, step / 2, cluster, rank, it, s, cs, delta, st);
    else if (p.fc_cols == 24)
      stage_b<3>(step / 2, rank, cluster == 0, it, s, cs, delta, st);
    else
      stage_b<4>(step / 2, rank, cluster == 0, it, s, cs, delta, st);
    csync();
    if (tid == 0) {
      *consumed = n + 1;
      if (step < kSteps) red_release_add(p.counters + step, 1u);
      if (st) st[7] = globaltimer();
    }
    last_step = step;
  }
  // No block leaves while another may still read its shared memory.
  cs.sync();
}

// ---- host ----
// Element (k, j) of a tile [kD][cols]: 32-column tiles swizzled as gemv reads them.
static size_t tile_at(int k, int j, int cols) {
  if (cols != 32) return (size_t)k * cols + j;
  return (size_t)k * 32 + (((j >> 3) ^ ((k >> 1) & 3)) << 3) + (j & 7);
}
static void put(std::vector<__half>& blob, size_t at_bytes, const __half* src, size_t n) {
  std::memcpy(blob.data() + at_bytes / 2, src, n * 2);
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t smem = (size_t)kRingBytes + kRows * kLda * 2 +
                      4 * (8 * kRows * 32 + kRows * 192 + kRows * kHd + kRows * kD + kRows * 32) +
                      8 * (kInFlight + 2 + 3 + kInFlight) + 4 * kInFlight + 16;
  CK(cudaFuncSetAttribute(decode_two_stage, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int clusters = 0;
  {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(kCluster * 16);
    cfg.blockDim = dim3(kLaunchThreads);
    cfg.dynamicSmemBytes = smem;
    CK(cudaOccupancyMaxActiveClusters(&clusters, decode_two_stage, &cfg));
  }
  std::printf("device %s, %d SMs, shared memory %zu bytes a block, %d clusters of %d fit\n", prop.name,
              prop.multiProcessorCount, smem, clusters, kCluster);
  // c_fc columns a block: 3072 / (8 x clusters) must be 24 (16 clusters) or 32 (12 clusters).
  const int nclusters = clusters >= 16 ? 16 : 12, fc_cols = kF / (kCluster * nclusters);
  if (clusters < 12) {
    std::fprintf(stderr, "needs 12 co-resident clusters of 8 (one a head); %d fit\n", clusters);
    return 1;
  }
  // MK_EXTRA=1: the clusters that fit beyond those (at most 16 in all) join for lm_head only: they
  // take no part in the layers' steps (run 240 had them in every step: the steps slowed), and their
  // rings fill with their first lm_head items while the layers run.
  auto flag = [](const char* name) { return std::getenv(name) && std::atoi(std::getenv(name)); };
  const bool extra = flag("MK_EXTRA"), kv_global = flag("MK_KV_GLOBAL"), split = flag("MK_SPLIT");
  const int grid = kCluster * (extra ? std::min(clusters, 16) : nclusters), b_blocks = kCluster * nclusters;
  const BLayout BL = b_layout(fc_cols);
  if (kAKV + BL.blob > (unsigned)kRingBytes) {
    std::fprintf(stderr, "stage A and B items (%u + %u bytes) do not fit the ring together\n", kAKV, BL.blob);
    return 1;
  }
  std::printf(
      "grid %d (%d clusters in stage B), c_fc %d columns a block; item bytes A %u, B %u; past keys/values "
      "%s; "
      "layer norm %s\n",
      grid, nclusters, fc_cols,
      split       ? kSKV
      : kv_global ? kABlob
                  : kAKV,
      BL.blob,
      split       ? "split over the cluster"
      : kv_global ? "from L2"
                  : "in the ring",
      flag("MK_LN2") ? "two-pass" : "one-pass");

  // Weights in natural layouts (for the reference), then each block's items.
  struct LayerW {
    std::vector<__half> wqkv, wproj, wfc, wmp, ln1g, ln1b, ln2g, ln2b, bqkv, bproj, bfc, bmp;
    __half *d_wqkv, *d_wproj, *d_wfc, *d_wmp, *d_ln1g, *d_ln1b, *d_ln2g, *d_ln2b, *d_bqkv, *d_bproj, *d_bfc,
        *d_bmp, *kc, *vc, *blob_a, *blob_b;
  };
  std::vector<LayerW> Lw(kLayers);
  double weight_bytes = 0;
  for (auto& l : Lw) {
    l.wqkv = rand_vec((size_t)kD * 3 * kD, 0.04f), l.wproj = rand_vec((size_t)kD * kD, 0.04f);
    l.wfc = rand_vec((size_t)kD * kF, 0.04f), l.wmp = rand_vec((size_t)kF * kD, 0.02f);
    l.ln1g = rand_vec(kD, 0.2f, 1.0f), l.ln1b = rand_vec(kD, 0.1f), l.ln2g = rand_vec(kD, 0.2f, 1.0f);
    l.ln2b = rand_vec(kD, 0.1f), l.bqkv = rand_vec(3 * kD, 0.1f), l.bproj = rand_vec(kD, 0.1f);
    l.bfc = rand_vec(kF, 0.1f), l.bmp = rand_vec(kD, 0.1f);
    l.d_wqkv = upload(l.wqkv), l.d_wproj = upload(l.wproj), l.d_wfc = upload(l.wfc), l.d_wmp = upload(l.wmp);
    l.d_ln1g = upload(l.ln1g), l.d_ln1b = upload(l.ln1b), l.d_ln2g = upload(l.ln2g),
    l.d_ln2b = upload(l.ln2b);
    l.d_bqkv = upload(l.bqkv), l.d_bproj = upload(l.bproj), l.d_bfc = upload(l.bfc), l.d_bmp = upload(l.bmp);
    l.kc = upload(rand_vec((size_t)kRows * kHeads * kT * kHd, 1.0f));
    l.vc = upload(rand_vec((size_t)kRows * kHeads * kT * kHd, 1.0f));
    weight_bytes += 2.0 * ((double)kD * 3 * kD + kD * kD + 2.0 * kD * kF);
    // A blobs: [head][rank], kABlob bytes each.
    std::vector<__half> a((size_t)kHeads * kCluster * kABlob / 2);
    for (int h = 0; h < kHeads; ++h)
      for (int r = 0; r < kCluster; ++r) {
        const size_t base = ((size_t)h * kCluster + r) * kABlob;
        __half* t = a.data() + base / 2;
        for (int j = 0; j < kQkvCols; ++j) {
          const int hc = r * kQkvCols + j, col = (hc / kHd) * kD + h * kHd + hc % kHd;
          for (int k = 0; k < kD; ++k) t[(kAT / 2) + k * kQkvCols + j] = l.wqkv[(size_t)k * 3 * kD + col];
          t[kAB / 2 + j] = l.bqkv[col];
        }
        put(a, base + kAG, l.ln1g.data(), kD);
        put(a, base + kAG + 2 * kD, l.ln1b.data(), kD);
        for (int d = 0; d < kHd; ++d)
          for (int n = 0; n < kProjCols; ++n)
            t[kAW / 2 + ((n / 8) * kHd + d) * 8 + n % 8] =
                l.wproj[(size_t)(h * kHd + d) * kD + r * kProjCols + n];
        put(a, base + kAPB, l.bproj.data(), kD);
      }
    l.blob_a = upload(a);
    // B blobs: [block], BL.blob bytes each.
    std::vector<__half> b((size_t)b_blocks * BL.blob / 2);
    for (int g = 0; g < b_blocks; ++g) {
      const size_t base = (size_t)g * BL.blob;
      __half* t = b.data() + base / 2;
      for (int j = 0; j < fc_cols; ++j) {
        const int col = g * fc_cols + j;
        for (int k = 0; k < kD; ++k) t[BL.t / 2 + tile_at(k, j, fc_cols)] = l.wfc[(size_t)k * kF + col];
        t[BL.b / 2 + j] = l.bfc[col];
      }
      put(b, base + BL.g, l.ln2g.data(), kD);
      put(b, base + BL.g + 2 * kD, l.ln2b.data(), kD);
      put(b, base + BL.pb, l.bmp.data(), kD);
      // mlp c_proj: the cluster's rows (its c_fc columns) for this block's 96 columns, [12][KC][8].
      const int KC = kCluster * fc_cols, cl = g / kCluster, rk = g % kCluster;
      for (int nb = 0; nb < kProjCols / 8; ++nb)
        for (int k = 0; k < KC; ++k)
          for (int e = 0; e < 8; ++e)
            t[BL.w2 / 2 + ((size_t)nb * KC + k) * 8 + e] =
                l.wmp[(size_t)(cl * KC + k) * kD + rk * kProjCols + nb * 8 + e];
    }
    l.blob_b = upload(b);
  }
  auto wte = rand_vec((size_t)kVocab * kD, 0.1f);
  __half* d_wte = upload(wte);
  std::vector<__half> lm((size_t)kLmItems * kD * kLmCols, __float2half(0.0f));
  for (int i = 0; i < kLmItems; ++i)
    for (int k = 0; k < kD; ++k)
      for (int j = 0; j < kLmCols; ++j) {
        const int n = i * kLmCols + j;
        if (n < kVocab) lm[(size_t)i * kD * kLmCols + tile_at(k, j, kLmCols)] = wte[(size_t)n * kD + k];
      }
  __half* d_lm = upload(lm);
  weight_bytes += 2.0 * kVocab * kD;
  auto lnf = rand_vec(2 * kD, 0.1f);
  for (int k = 0; k < kD; ++k) lnf[k] = __float2half(1.0f + 2.0f * __half2float(lnf[k]));
  __half* d_lnf = upload(lnf);
  auto xh = rand_vec((size_t)kRows * kD, 1.0f);
  std::vector<float> xf(xh.size());
  for (size_t i = 0; i < xh.size(); ++i) xf[i] = __half2float(xh[i]);
  __half* x_in = upload(xh);
  float* d_x0 = upload(xf);

  // Each block's items.
  std::vector<Item> items((size_t)grid * kMaxItems);
  std::vector<int> nitems(grid, 0);
  for (int g = 0; g < grid; ++g) {
    const int cl = g / kCluster, r = g % kCluster;
    auto add = [&](Item I) {
      if (nitems[g] >= kMaxItems) {
        std::fprintf(stderr, "too many items for block %d\n", g);
        std::exit(1);
      }
      items[(size_t)g * kMaxItems + nitems[g]++] = I;
    };
    for (int l = 0; l < kLayers && g < b_blocks; ++l) {
      Item A{};
      A.step = 2 * l;
      if (cl < kHeads) {
        A.src[0] =
            reinterpret_cast<const unsigned char*>(Lw[l].blob_a) + ((size_t)cl * kCluster + r) * kABlob;
        A.len[0] = kABlob, A.off[0] = 0, A.nseg = 1, A.bytes = kABlob;
        if (split) {
          // Past positions [16 r, 16 r + 16) of every row: keys, then values.
          for (int b = 0; b < kRows; ++b) {
            const size_t at = (((size_t)b * kHeads + cl) * kT + r * kSplitPos) * kHd;
            const unsigned len = kSplitPos * kHd * 2;
            A.src[1 + b] = Lw[l].kc + at, A.len[1 + b] = len, A.off[1 + b] = kSK + b * len;
            A.src[1 + kRows + b] = Lw[l].vc + at, A.len[1 + kRows + b] = len,
                              A.off[1 + kRows + b] = kSV + b * len;
          }
          A.nseg = 1 + 2 * kRows, A.bytes = kSKV;
        } else if (r < kRows) {
          const size_t row = ((size_t)r * kHeads + cl) * kT * kHd;
          if (kv_global) {
            A.l2[0] = Lw[l].kc + row, A.l2len[0] = kPast * kHd * 2;
            A.l2[1] = Lw[l].vc + row, A.l2len[1] = kPast * kHd * 2;
          } else {
            A.src[1] = Lw[l].kc + row, A.len[1] = kPast * kHd * 2, A.off[1] = kAK;
            A.src[2] = Lw[l].vc + row, A.len[2] = kPast * kHd * 2, A.off[2] = kAV;
            A.nseg = 3, A.bytes = kAKV;
          }
        }
      }
      add(A);
      Item B{};
      B.step = 2 * l + 1;
      if (g < b_blocks) {
        B.src[0] = reinterpret_cast<const unsigned char*>(Lw[l].blob_b) + (size_t)g * BL.blob;
        B.len[0] = BL.blob, B.off[0] = 0, B.nseg = 1, B.bytes = BL.blob;
      }
      add(B);
    }
    bool first = true;
    for (int i = g; i < kLmItems; i += grid) {
      Item M{};
      M.step = kSteps, M.index = i;
      M.src[0] = d_lm + (size_t)i * kD * kLmCols, M.len[0] = kD * kLmCols * 2, M.off[0] = kLmT, M.nseg = 1;
      M.bytes = kLmG;
      if (first) {
        M.src[1] = d_lnf, M.len[1] = 2 * kD * 2, M.off[1] = kLmG, M.nseg = 2;
        M.bytes = kLmG + 4 * kD;
      }
      first = false;
      add(M);
    }
  }

  Params p{};
  p.items = upload(items);
  p.nitems = upload(nitems);
  CK(cudaMalloc(&p.counters, kSteps * 4));
  CK(cudaMemset(p.counters, 0, kSteps * 4));
  p.x0 = d_x0;
  CK(cudaMalloc(&p.Y, (size_t)2 * kSteps * kRows * kD * 4));
  CK(cudaMemset(p.Y, 0, (size_t)2 * kSteps * kRows * kD * 4));
  for (int l = 0; l < kLayers; ++l) p.kc[l] = Lw[l].kc, p.vc[l] = Lw[l].vc;
  CK(cudaMalloc(&p.logits, (size_t)kRows * kVocab * 4));
  p.fc_cols = fc_cols;
  p.heads_clusters = kHeads;
  p.b_clusters = nclusters;
  p.step_blocks = b_blocks;
  p.kv_global = kv_global;
  p.attn_split = split;
  p.ln_two_pass = flag("MK_LN2");
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, (size_t)(kSteps + 1) * grid * kStamps * 8));

  auto launch = [&](int mode, unsigned long long* stp, unsigned pace = 0, int lm_l2 = 0) {
    ++p.cepoch;
    p.mode = mode;
    p.pace_ns = pace;
    p.lm_l2 = lm_l2;
    p.stamps = stp;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kLaunchThreads);
    cfg.dynamicSmemBytes = smem;
    CK(cudaLaunchKernelEx(&cfg, decode_two_stage, p));
  };

  // The reference (fp16 rows between products, as Grape), then the kernel; compare.
  float* ref_logits;
  CK(cudaMalloc(&ref_logits, (size_t)kRows * kVocab * 4));
  {
    std::vector<RefLayer> ref(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      const LayerW& w = Lw[l];
      ref[l] = RefLayer{w.d_ln1g, w.d_ln1b, w.d_wqkv, w.d_bqkv, w.d_wproj, w.d_bproj, w.d_ln2g,
                        w.d_ln2b, w.d_wfc,  w.d_bfc,  w.d_wmp,  w.d_bmp,   w.kc,      w.vc};
    }
    reference_step(ref, x_in, d_lnf, d_lnf + kD, d_wte, ref_logits);
  }
  auto check = [&](const char* what) {
    const LogitsDiff d = compare_logits(p.logits, ref_logits);
    std::printf("check (%s): logits rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d -> %s\n", what, d.rel_l2,
                d.max_abs, d.argmax_equal, kRows, d.ok() ? "ok" : "FAILED");
    return d.ok();
  };
  CK(cudaMemset(p.logits, 0, (size_t)kRows * kVocab * 4));
  launch(0, nullptr);
  CK(cudaDeviceSynchronize());
  if (!check("first launch")) return 1;
  for (int i = 0; i < 5; ++i) launch(0, nullptr);
  CK(cudaMemset(p.logits, 0, (size_t)kRows * kVocab * 4));
  launch(0, nullptr);
  CK(cudaDeviceSynchronize());
  if (!check("seventh launch")) return 1;

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaMemset(p.logits, 0, (size_t)kRows * kVocab * 4));
  launch(4, nullptr);
  CK(cudaDeviceSynchronize());
  if (!check("serial cluster arrivals")) return 1;
  launch(8, nullptr);
  CK(cudaDeviceSynchronize());
  if (!check("items after staging")) return 1;
  launch(16, nullptr);
  CK(cudaDeviceSynchronize());
  if (!check("cluster barriers")) return 1;
  // Pacing (MK_PACE, a list of ns per 8 KB copy) and lm_head items put in L2 (MK_LM_L2, a list).
  auto list = [](const char* name) {
    std::vector<int> v;
    const char* e = std::getenv(name);
    for (const char* at = e; at && *at;) {
      v.push_back(std::atoi(at));
      at = std::strchr(at, ',');
      if (at) ++at;
    }
    return v;
  };
  const std::vector<int> paces = list("MK_PACE"), lms = list("MK_LM_L2");
  if (std::getenv("MK_PROFILE")) {
    // For a profiler: five launches of the last MK_PACE / MK_LM_L2 configuration, nothing else.
    const int pace = paces.empty() ? 0 : paces.back(), lm_l2 = lms.empty() ? 0 : lms.back();
    for (int i = 0; i < 5; ++i) launch(0, nullptr, pace, lm_l2);
    CK(cudaDeviceSynchronize());
    return check("profiled launches") ? 0 : 1;
  }
  struct Run {
    int mode, pace, lm;
  };
  std::vector<Run> runs = {{0, 0, 0}, {16, 0, 0}, {1, 0, 0}};
  for (int v : paces) runs.push_back({0, v, 0});
  for (int v : lms) runs.push_back({0, 0, v});
  if (!paces.empty() && !lms.empty()) runs.push_back({0, paces.back(), lms.back()});
  runs.push_back({0, 0, 0});
  for (auto [mode, pace, lm_l2] : runs) {
    if (pace || lm_l2) {
      CK(cudaMemset(p.logits, 0, (size_t)kRows * kVocab * 4));
      launch(mode, nullptr, pace, lm_l2);
      CK(cudaDeviceSynchronize());
      if (!check("pacing / lm_head in L2")) return 1;
    }
    for (int i = 0; i < 20; ++i) launch(mode, nullptr, pace, lm_l2);
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) launch(mode, nullptr, pace, lm_l2);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double us = 1000.0 * ms / iters;
    std::printf(
        "%s, pace %d ns, lm_head items in L2 %d: %.1f us per step (back-to-back launches), weights %.1f MB "
        "-> %.2f TB/s\n",
        mode == 0    ? "decode step"
        : mode == 2  ? "decode step, next item into L2"
        : mode == 4  ? "decode step, serial cluster arrivals"
        : mode == 8  ? "decode step, items issued after staging"
        : mode == 16 ? "decode step, exchanges by cluster barriers"
        : mode == 9  ? "no counter waits, items issued after staging"
        : mode == 1  ? "no counter waits (streaming bound; results not checked)"
                     : "no counter waits, next item into L2",
        pace, lm_l2, us, weight_bytes / 1e6, weight_bytes / (us * 1e-6) / 1e12);
  }
  // One stamped step: per step, µs after the previous step's last block was done: the first block
  // past its wait, and the last block's weight in, rows staged, first and second cluster sync, done.
  std::vector<Run> stamped = {{0, 0, 0}};
  if (!paces.empty() || !lms.empty())
    stamped.push_back({0, paces.empty() ? 0 : paces.back(), lms.empty() ? 0 : lms.back()});
  for (auto [smode, pace, lm_l2] : stamped) {
    std::printf("stamped, mode %d, pace %d ns, lm_head items in L2 %d:\n", smode, pace, lm_l2);
    CK(cudaMemset(stamps, 0, (size_t)(kSteps + 1) * grid * kStamps * 8));
    launch(smode, stamps, pace, lm_l2);
    CK(cudaDeviceSynchronize());
    if (!check("stamped launch")) return 1;
    std::vector<unsigned long long> sv((size_t)(kSteps + 1) * grid * kStamps);
    CK(cudaMemcpy(sv.data(), stamps, sv.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (size_t i = 0; i < sv.size(); i += kStamps)
      if (sv[i]) t0 = std::min(t0, sv[i]);
    // Per step: the first and the last block past the wait, and each later mark's last block, in us
    // after the previous step's last block was done; then each phase's mean length over the blocks
    // (from the block's previous mark in time). Marks a step lacks print as "-".
    const char* marks[kStamps] = {"wait",      "weight", "staged", "prod1", "sync1",
                                  "attn|gelu", "sync2",  "done",   "loaded"};
    double prev = 0, last[3][kStamps + 1] = {}, mean[3][kStamps] = {};
    int seen[3] = {};
    for (int s = 0; s <= kSteps; ++s) {
      const int kind = s == kSteps ? 2 : s % 2;
      unsigned long long first = ~0ull, mx[kStamps] = {};
      double ph[kStamps] = {};
      int cnt[kStamps] = {};
      for (int b = 0; b < grid; ++b) {
        const unsigned long long* e = &sv[((size_t)s * grid + b) * kStamps];
        if (e[0]) first = std::min(first, e[0]);
        // Each mark's phase runs from the block's mark just before it in time (stage B's gelu
        // mark comes before its first product's).
        std::vector<std::pair<unsigned long long, int>> order;
        for (int k = 0; k < kStamps; ++k) {
          mx[k] = std::max(mx[k], e[k]);
          if (e[k]) order.push_back({e[k], k});
        }
        std::sort(order.begin(), order.end());
        for (size_t i = 1; i < order.size(); ++i)
          ph[order[i].second] += (order[i].first - order[i - 1].first) / 1e3, ++cnt[order[i].second];
      }
      if (s >= 2 || kind == 2) {
        ++seen[kind];
        last[kind][0] += (first - t0) / 1e3 - prev;
        for (int k = 0; k < kStamps; ++k) {
          last[kind][k + 1] += mx[k] ? (mx[k] - t0) / 1e3 - prev : -1e9;
          mean[kind][k] += cnt[k] ? ph[k] / cnt[k] : -1e9;
        }
      }
      prev = (mx[kDone] - t0) / 1e3;
    }
    std::printf("span of the stamped step %.2f us. Layers 1-11 (A, B) and lm_head, mean over steps:\n", prev);
    std::printf("      first");
    for (int k = 0; k < kStamps; ++k) std::printf(" %8s", marks[k]);
    std::printf("   (the last block's mark, us after the previous step's done)\n");
    const char* kinds[3] = {"A ", "B ", "lm"};
    for (int kind = 0; kind < 3; ++kind) {
      std::printf("   %s %6.2f", kinds[kind], last[kind][0] / seen[kind]);
      for (int k = 0; k < kStamps; ++k)
        last[kind][k + 1] < -1e8 ? (void)std::printf(" %8s", "-")
                                 : (void)std::printf(" %8.2f", last[kind][k + 1] / seen[kind]);
      std::printf("\n");
    }
    std::printf("   phase lengths, mean over blocks (us from the block's previous mark):\n");
    for (int kind = 0; kind < 3; ++kind) {
      std::printf("   %s       ", kinds[kind]);
      for (int k = 0; k < kStamps; ++k)
        mean[kind][k] < -1e8 ? (void)std::printf(" %8s", "-")
                             : (void)std::printf(" %8.2f", mean[kind][k] / seen[kind]);
      std::printf("\n");
    }
    std::printf("   layer %.2f us\n", (last[0][kDone + 1] + last[1][kDone + 1]) / seen[0]);
  }
  return 0;
}
