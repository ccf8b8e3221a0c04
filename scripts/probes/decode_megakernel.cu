// A design probe, not product code: GPT-2 small's decode step (fp16, 5 rows, 128 past positions, 12
// layers, random weights) as ONE persistent kernel (one 288-thread block per multiprocessor) in which
//   - every stage (q/k/v, attention, attn c_proj, c_fc, mlp c_proj; lm_head) is split into work
//     items that the blocks take in turn; a stage's items wait for a counter that the previous
//     stage's blocks add their item counts to, once each, with a release (no grid barrier, no kernel
//     boundary);
//   - a producer warp streams the weights (in an item-contiguous layout made on the host, with the
//     item's bias and layer-norm scale/shift) and the attention's past keys/values of the block's
//     NEXT items into a 190 KB shared-memory ring by bulk copies, ahead of their dependencies: only
//     the small activation rows are read after a wait. Products run on mma.sync.
// Superseded by scripts/probes/decode_two_stage.cu (two stages a layer: 149 us on an H200).
// Question it answers (issue 7): how fast can a decode step be when kernel boundaries and weight
// loads are off the dependency chain, i.e. is the <= 170 us target a matter of this design.
// It checks its logits against plain reference kernels (one thread per output) before timing.
//
// Answer (H200, bench/RESULTS.md "thirty-sixth session", outputs in
// bench/results/2026-11-28-h100/megakernel/): 288-310 us a step against Grape's graph executor's
// 407-410 us in the same run, i.e. about 25% faster, not 2.4x: every stage still costs 3.5-5.5 us
// (the last producer's release and the consumers' poll 1-2 us, staging the activation rows 0.8-1.4,
// the item's work 1-2.5), so 60 dependent stages cannot reach 170 us. Modes that measured slower:
// per-block flags instead of a counter, rows tagged word by word instead of counters (polling
// traffic), relaxed polls with one fence, thread 0 refilling the ring (the producer warp replaced
// it: 368 -> 293 us), and MK_FUSE=1 (c_fc + mlp c_proj as one stage whose items add into fp32
// deltas by vector reductions: the reductions' drain delays the next stage).
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o decode_megakernel scripts/probes/decode_megakernel.cu
// Run:   ./decode_megakernel [iters]  (correctness, time per step per mode, thread 0's time per item by
//        phase, a per-stage chain from %globaltimer stamps). Environment: MK_COLS=qkv,proj,fc,mproj,lm
//        (columns per item: 8, 16, 24 or 32), MK_FUSE=1, MK_POLL_NS=list (adds the tagged mode).
#include <cstring>
#include <string>
#include <vector>

#include "decode_reference.cuh"
#include "probe_sync.cuh"

// The ring of weight bytes in shared memory and the barriers of the items in flight in it.
constexpr int kThreads = 256, kRingBytes = 194560, kInFlight = 16;
constexpr int kMaxCols = 32;  // columns per item: 8, 16, 24 or 32
// Launched with one more warp: the producer (mode bit 2), which refills the ring while the others
// work; they meet at named barrier 1, which it never joins.
constexpr int kLaunchThreads = kThreads + 32;
__device__ __forceinline__ void csync() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }
constexpr int kLda = kF + 8;  // A's row pitch in halves (the pad puts 8 rows' words in distinct banks)
constexpr int kMaxStages = 64;

enum Kind { kQkv, kAttn, kProj, kFc, kLm, kFcMp };

struct Stage {
  int kind, items, cols, K, N, offset;  // offset: block of item 0 (items rotate over the blocks)
  const __half* w;                      // [items][K][cols]
  const __half* bias;                   // [N] or null
  const __half* gamma;                  // layer norm of the input rows, or null
  const __half* beta;
  const __half* a;    // input rows [kRows][K]; attention: the q/k/v rows [kRows][3 * kD]
  const __half* res;  // residual added by kProj, or null
  __half* out;        // [kRows][N]; attention: [kRows][kD]
  float* logits;      // kLm
  __half* kc;         // attention: this layer's caches [kRows][kHeads][kT][kHd]
  __half* vc;
  // Tagged mode (mode bit 3): the same rows as 32-bit words, the value in the low half and in the
  // high half a tag naming the launch and the stage that wrote it; a consumer polls the words it
  // needs until their tags say they are this launch's (no counters, no release fences). Null: the
  // rows are the launch's input (x), read as halves.
  const unsigned* a32;
  const unsigned* res32;
  unsigned* out32;
  int a_from, res_from;  // the stages whose tags a32 and res32 carry
  // Fused configuration (MK_FUSE=1): the residual stream in fp32, and c_fc with mlp c_proj in one
  // stage (kFcMp) whose items add their share of the product into `acc` by vector reductions.
  const float* xf;      // a layer norm's input rows in fp32 [kRows][kD] (else `a`), plus, if set,
  const float* dlt;     // the mlp deltas accumulated by the previous kFcMp and
  const __half* dbias;  // that product's bias (in the item's bytes)
  float* xmat;          // where each item writes its share (40 values) of that sum
  const float* resf;    // an fp32 residual, and the fp32 output of kProj
  float* outf;
  float* zero;       // each item zeroes its share (40 values) of this (the deltas, for the next kFcMp)
  const __half* w2;  // kFcMp: the item's mlp c_proj rows [kD / 8][32][8] (k >= cols zero)
  float* acc;        // kFcMp: the deltas [kRows][kD]
};
__constant__ Stage c_st[kMaxStages];
__constant__ int c_nst;

__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_volatile4(const unsigned* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_volatile(const unsigned* p) {
  unsigned v;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Tagged mode: how long a thread sleeps after finding a word not yet written (0: spin).
__constant__ unsigned c_poll_ns;
__device__ __forceinline__ void backoff() {
  if (c_poll_ns) __nanosleep(c_poll_ns);
}
__device__ __forceinline__ bool tagged4(const uint4& v, unsigned t) {
  return (v.x >> 16) == t && (v.y >> 16) == t && (v.z >> 16) == t && (v.w >> 16) == t;
}
__device__ __forceinline__ unsigned poll1(const unsigned* p, unsigned t) {
  unsigned v = ld_volatile(p);
  while ((v >> 16) != t) {
    backoff();
    v = ld_volatile(p);
  }
  return v;
}
// Never 0 (0 means untagged below: a tag of 0 once hung the probe at launch 1,024), and a launch's
// tags differ from the previous launch's.
__device__ __forceinline__ unsigned tag_of(unsigned tb, int stage) {
  return 1u + (tb + (unsigned)stage) % 65535u;
}
__device__ __forceinline__ unsigned pack_tag(unsigned tag, __half h) {
  return (tag << 16) | (unsigned)__half_as_ushort(h);
}
__device__ __forceinline__ __half word_half(unsigned w) {
  return __ushort_as_half((unsigned short)(w & 0xffffu));
}

// This block's items in order: stage by stage, items i = (block - offset) mod grid, + grid, ...
struct Cursor {
  int s, i;
};
__device__ __forceinline__ void settle(Cursor& c) {
  while (c.s < c_nst && c.i >= c_st[c.s].items) {
    ++c.s;
    if (c.s < c_nst) c.i = (int)((blockIdx.x + gridDim.x - c_st[c.s].offset % gridDim.x) % gridDim.x);
  }
}
__device__ __forceinline__ Cursor first_item() {
  Cursor c{0, (int)((blockIdx.x + gridDim.x - c_st[0].offset % gridDim.x) % gridDim.x)};
  settle(c);
  return c;
}
__device__ __forceinline__ void next_item(Cursor& c) {
  c.i += gridDim.x;
  settle(c);
}

// An item's bytes in shared memory: the weight tile [K][cols], then its bias [cols] and, for a
// stage with a layer norm, the norm's scale and shift [kD] each (small, but read from DRAM after a
// dependency they would hold up the activation loads queued behind them); the attention's past
// keys, then values.
__device__ __forceinline__ unsigned tile_bytes(const Stage& S) { return (unsigned)(S.K * S.cols * 2); }
__device__ __forceinline__ unsigned item_bytes(const Stage& S) {
  if (S.kind == kAttn) return 2u * kPast * kHd * 2u;
  return tile_bytes(S) + (S.bias ? S.cols * 2u : 0u) + (S.gamma ? 4u * kD : 0u) + (S.dbias ? 2u * kD : 0u) +
         (S.w2 ? (unsigned)(kD * 32 * 2) : 0u);
}
__device__ __forceinline__ const __half* item_bias(const Stage& S, const unsigned char* wt) {
  return reinterpret_cast<const __half*>(wt + tile_bytes(S));
}
__device__ __forceinline__ const __half* item_gamma(const Stage& S, const unsigned char* wt) {
  return reinterpret_cast<const __half*>(wt + tile_bytes(S) + (S.bias ? S.cols * 2 : 0));
}
__device__ __forceinline__ const __half* item_dbias(const Stage& S, const unsigned char* wt) {
  return item_gamma(S, wt) + (S.gamma ? 2 * kD : 0);
}
__device__ __forceinline__ const unsigned char* item_w2(const Stage& S, const unsigned char* wt) {
  return reinterpret_cast<const unsigned char*>(item_dbias(S, wt) + (S.dbias ? kD : 0));
}
// Thread 0: `bytes` from `src` into shared memory at `dst`, in copies of at most 16 KB, counted on `bar`.
__device__ void bulk_load_all(const void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  for (unsigned o = 0; o < bytes; o += 16384)
    bulk_load(const_cast<unsigned char*>(static_cast<const unsigned char*>(dst)) + o,
              static_cast<const unsigned char*>(src) + o, min(16384u, bytes - o), bar);
}
// Thread 0: the item's weight (or past keys and values) into shared memory at `dst`, where the
// item_* accessors above will find each part.
__device__ void issue(const Cursor& c, unsigned char* dst, unsigned long long* bar) {
  const Stage& S = c_st[c.s];
  const unsigned bytes = item_bytes(S);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  mbar_expect(bar, bytes);
  if (S.kind == kAttn) {
    const long long base = (long long)c.i * kT * kHd;  // item = b * kHeads + h
    bulk_load(dst, S.kc + base, bytes / 2, bar);
    bulk_load(dst + bytes / 2, S.vc + base, bytes / 2, bar);
    return;
  }
  bulk_load_all(dst, S.w + (long long)c.i * S.K * S.cols, tile_bytes(S), bar);
  if (S.bias) bulk_load_all(item_bias(S, dst), S.bias + c.i * S.cols, S.cols * 2, bar);
  if (S.gamma) {
    bulk_load_all(item_gamma(S, dst), S.gamma, 2 * kD, bar);
    bulk_load_all(item_gamma(S, dst) + kD, S.beta, 2 * kD, bar);
  }
  if (S.dbias) bulk_load_all(item_dbias(S, dst), S.dbias, 2 * kD, bar);
  if (S.w2) bulk_load_all(item_w2(S, dst), S.w2 + (long long)c.i * kD * 32, kD * 32 * 2, bar);
}

// Thread 0's view of the ring: items are issued in the block's order into consecutive bytes (an
// item that would cross the end starts again at 0), at most kInFlight at a time.
struct Ring {
  unsigned long long head, tail;  // bytes allocated / freed, ever
  int issued;                     // items issued, ever
};
__device__ void fill(Ring& r, Cursor& prod, int consumed, unsigned char* ring, unsigned long long* bars,
                     unsigned* starts, unsigned long long* ends) {
  while (prod.s < c_nst && r.issued - consumed < kInFlight) {
    const unsigned bytes = item_bytes(c_st[prod.s]);
    unsigned long long at = r.head;
    const unsigned pos = (unsigned)(at % kRingBytes);
    if (pos + bytes > kRingBytes) at += kRingBytes - pos;
    if (at + bytes - r.tail > kRingBytes) return;
    const int j = r.issued % kInFlight;
    starts[j] = (unsigned)(at % kRingBytes);
    ends[j] = at + bytes;
    issue(prod, ring + starts[j], bars + j);
    r.head = at + bytes;
    ++r.issued;
    next_item(prod);
  }
}

// A's rows into shared memory [kRows][K], through the stage's layer norm if it has one.
__device__ void stage_rows(const Stage& S, __half* As, const unsigned char* wt, unsigned tb) {
  const bool tagged = tb && S.a32;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  if (S.gamma) {
    // One warp per row; K = kD here (3 chunks of 8 per lane); the scale and shift from the item's bytes.
    if (w < kRows) {
      const uint4* gs = reinterpret_cast<const uint4*>(item_gamma(S, wt));
      uint4 gu[3], bu[3], xu[3];
      for (int j = 0; j < 3; ++j) {
        gu[j] = gs[lane + 32 * j];
        bu[j] = gs[kD / 8 + lane + 32 * j];
      }
      if (tagged) {
        const unsigned t = tag_of(tb, S.a_from);
        uint4 u[6];
        for (int i = 0; i < 6; ++i)
          u[i] = ld_volatile4(S.a32 + w * kD + (lane + 32 * (i >> 1)) * 8 + 4 * (i & 1));
        for (int i = 0; i < 6; ++i)
          while (!tagged4(u[i], t)) {
            backoff();
            u[i] = ld_volatile4(S.a32 + w * kD + (lane + 32 * (i >> 1)) * 8 + 4 * (i & 1));
          }
        for (int j = 0; j < 3; ++j) {
          const uint4 &lo = u[2 * j], &hi = u[2 * j + 1];
          xu[j] = make_uint4((lo.x & 0xffffu) | (lo.y << 16), (lo.z & 0xffffu) | (lo.w << 16),
                             (hi.x & 0xffffu) | (hi.y << 16), (hi.z & 0xffffu) | (hi.w << 16));
        }
      } else if (!S.xf) {
        for (int j = 0; j < 3; ++j)
          xu[j] = __ldcg(reinterpret_cast<const uint4*>(S.a + w * kD) + lane + 32 * j);
      }
      float v[3][8];
      if (S.xf) {
        float4 xv[3][2], dv[3][2];
        for (int j = 0; j < 3; ++j)
          for (int i = 0; i < 2; ++i) {
            xv[j][i] = __ldcg(reinterpret_cast<const float4*>(S.xf + w * kD + (lane + 32 * j) * 8) + i);
            dv[j][i] = S.dlt
                           ? __ldcg(reinterpret_cast<const float4*>(S.dlt + w * kD + (lane + 32 * j) * 8) + i)
                           : make_float4(0, 0, 0, 0);
          }
        const __half* db = S.dbias ? item_dbias(S, wt) : nullptr;
        for (int j = 0; j < 3; ++j) {
          const float* x8 = reinterpret_cast<const float*>(xv[j]);
          const float* d8 = reinterpret_cast<const float*>(dv[j]);
          for (int e = 0; e < 8; ++e)
            v[j][e] = x8[e] + d8[e] + (db ? __half2float(db[(lane + 32 * j) * 8 + e]) : 0.0f);
        }
      } else {
        for (int j = 0; j < 3; ++j) {
          const __half* h = reinterpret_cast<const __half*>(&xu[j]);
          for (int e = 0; e < 8; ++e) v[j][e] = __half2float(h[e]);
        }
      }
      float sum = 0.0f;
      for (int j = 0; j < 3; ++j)
        for (int e = 0; e < 8; ++e) sum += v[j][e];
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      const float mean = sum / kD;
      float var = 0.0f;
      for (int j = 0; j < 3; ++j)
        for (int e = 0; e < 8; ++e) var += (v[j][e] - mean) * (v[j][e] - mean);
      for (int o = 16; o; o >>= 1) var += __shfl_xor_sync(0xffffffffu, var, o);
      const float rstd = rsqrtf(var / kD + 1e-5f);
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
  } else if (tagged) {
    // Four words per load, four loads in flight before any is checked.
    const unsigned t = tag_of(tb, S.a_from);
    const int per_row = S.K / 4, total = kRows * per_row;
    for (int base = tid; base < total; base += 4 * kThreads) {
      uint4 u[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = base + i * kThreads, r = c / per_row;
        if (c < total) u[i] = ld_volatile4(S.a32 + r * S.K + 4 * (c - r * per_row));
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = base + i * kThreads, r = c / per_row, k = 4 * (c - r * per_row);
        if (c >= total) continue;
        while (!tagged4(u[i], t)) {
          backoff();
          u[i] = ld_volatile4(S.a32 + r * S.K + k);
        }
        *reinterpret_cast<uint2*>(As + r * kLda + k) =
            make_uint2((u[i].x & 0xffffu) | (u[i].y << 16), (u[i].z & 0xffffu) | (u[i].w << 16));
      }
    }
  } else {
    const int per_row = S.K / 8;
    for (int t = tid; t < kRows * per_row; t += kThreads) {
      const int r = t / per_row, c = t - r * per_row;
      *reinterpret_cast<uint4*>(As + r * kLda + 8 * c) =
          __ldcg(reinterpret_cast<const uint4*>(S.a + r * S.K) + c);
    }
  }
}

// out[r][item * cols + j], r < kRows, j < cols = 8 * NB, on the tensor cores: mma.m16n8k16 with
// A = the staged rows (rows 5..15 zero) and B = 16 k x 8 columns of the weight tile [K][cols]
// (ldmatrix.trans); the warps take the k steps in turn and meet in shared memory. The epilogue's
// bias and residual were loaded before the rows were staged (`pre`).
template <int NB>
__device__ void gemv_item(const Stage& S, int item, const __half* As, const unsigned char* wt, float* red,
                          float pre, unsigned otag, __half* Fs) {
  constexpr int C = 8 * NB, W = kThreads / 32;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, c = lane & 3;
  float acc[NB][4];
#pragma unroll
  for (int j = 0; j < NB; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const int steps = S.K / 16;
  const __half* arow = As + g * kLda + 2 * c;
  // ldmatrix rows: lane l < 16 gives row k0 + (l & 7) + 8 * (l >> 3); n-block j is 16 bytes on.
  const unsigned wbase = smem_addr(wt) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * C * 2;
#pragma unroll 4
  for (int s = w; s < steps; s += W) {
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
                   : "r"(addr + 16 * j));
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
  csync();
  if (tid < kRows * C) {
    const int r = tid / C, j = tid - r * C, n = item * C + j;
    float s = 0.0f;
#pragma unroll
    for (int ww = 0; ww < W; ++ww) s += red[(ww * kRows + r) * C + j];
    if (n < S.N) {
      if (S.kind == kLm) {
        S.logits[r * S.N + n] = s;
      } else if (S.kind == kFcMp) {
        // This item's c_fc outputs, as the A rows of its share of mlp c_proj (k = j).
        Fs[r * 40 + j] = __float2half(gelu(s + __half2float(item_bias(S, wt)[j])));
      } else if (S.outf) {
        S.outf[r * S.N + n] = s + __half2float(item_bias(S, wt)[j]) + pre;
      } else {
        s += __half2float(item_bias(S, wt)[j]);
        const __half h = __float2half(S.kind == kFc ? gelu(s) + pre : s + pre);
        if (otag)
          S.out32[r * S.N + n] = pack_tag(otag, h);
        else
          S.out[r * S.N + n] = h;
      }
    }
  }
}
// The residual of this thread's output (read before the rows are staged, so that its load overlaps
// theirs).
__device__ __forceinline__ float epilogue_operands(const Stage& S, int item, unsigned tb) {
  const int C = S.cols, tid = threadIdx.x;
  if ((!S.res && !S.resf) || tid >= kRows * C) return 0.0f;
  const int r = tid / C, n = item * C + tid - r * C;
  if (n >= S.N) return 0.0f;
  if (S.resf) return __ldcg(S.resf + r * S.N + n);
  if (tb && S.res32) return __half2float(word_half(poll1(S.res32 + r * S.N + n, tag_of(tb, S.res_from))));
  return __half2float(__ldcg(S.res + r * S.N + n));
}

// Attention of row b, head h over the 128 past positions (in the slot) and the new one.
__device__ void attn_item(const Stage& S, int item, const unsigned char* slot, float* sm, unsigned tb,
                          unsigned otag) {
  const int b = item / kHeads, h = item % kHeads, tid = threadIdx.x;
  const __half* Ks = reinterpret_cast<const __half*>(slot);
  const __half* Vs = Ks + kPast * kHd;
  float* q = sm;           // [64], scaled
  float* kn = q + 64;      // the new key
  float* vn = kn + 64;     // the new value
  float* sc = vn + 64;     // [kT] scores, then probabilities
  float* part = sc + 160;  // [4][64]
  float* inv = part + 256;
  const __half* row = S.a + b * 3 * kD + h * kHd;
  if (tid < kHd) {
    __half kq, vq, qq;
    if (tb) {
      const unsigned t = tag_of(tb, S.a_from);
      const unsigned* row32 = S.a32 + b * 3 * kD + h * kHd;
      qq = word_half(poll1(row32 + tid, t));
      kq = word_half(poll1(row32 + kD + tid, t));
      vq = word_half(poll1(row32 + 2 * kD + tid, t));
    } else {
      qq = __ldcg(row + tid);
      kq = __ldcg(row + kD + tid);
      vq = __ldcg(row + 2 * kD + tid);
    }
    q[tid] = __half2float(qq) * 0.125f;
    kn[tid] = __half2float(kq);
    vn[tid] = __half2float(vq);
    const long long at = ((long long)item * kT + kPast) * kHd + tid;
    S.kc[at] = kq;
    S.vc[at] = vq;
  }
  csync();
  if (tid < kPast) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = (j + tid) & 7;
      const uint4 u = *reinterpret_cast<const uint4*>(Ks + tid * kHd + c * 8);
      const __half* e = reinterpret_cast<const __half*>(&u);
#pragma unroll
      for (int i = 0; i < 8; ++i) s = fmaf(q[c * 8 + i], __half2float(e[i]), s);
    }
    sc[tid] = s;
  } else if (tid == kPast) {
    float s = 0.0f;
    for (int d = 0; d < kHd; ++d) s = fmaf(q[d], kn[d], s);
    sc[kPast] = s;
  }
  csync();
  if (tid < 32) {
    float m = -INFINITY;
    for (int t = tid; t < kT; t += 32) m = fmaxf(m, sc[t]);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
    for (int t = tid; t < kT; t += 32) {
      const float p = __expf(sc[t] - m);
      sc[t] = p;
      sum += p;
    }
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (tid == 0) *inv = 1.0f / sum;
  }
  csync();
  {
    const int d = tid & 63, pt = tid >> 6;
    float o = pt == 0 ? sc[kPast] * vn[d] : 0.0f;
    for (int t = pt; t < kPast; t += 4) o = fmaf(sc[t], __half2float(Vs[t * kHd + d]), o);
    part[pt * 64 + d] = o;
  }
  csync();
  if (tid < kHd) {
    const float o = (part[tid] + part[64 + tid] + part[128 + tid] + part[192 + tid]) * *inv;
    if (otag)
      S.out32[b * kD + h * kHd + tid] = pack_tag(otag, __float2half(o));
    else
      S.out[b * kD + h * kHd + tid] = __float2half(o);
  }
}

// kFcMp's second half: the item's gelu outputs Fs [kRows][cols] (k < 32, zeros past cols) times its
// rows of mlp c_proj [kD / 8][32][8], added into S.acc by vector reductions (the sums of the 128
// items meet in L2; their order varies, so the result is not bit-reproducible).
__device__ void fcmp_second(const Stage& S, const unsigned char* wt, const __half* Fs) {
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, c = lane & 3;
  const unsigned w2 = smem_addr(item_w2(S, wt)) + ((lane & 7) + 8 * ((lane >> 3) & 1)) * 16;
  unsigned a[2][4] = {{0u, 0u, 0u, 0u}, {0u, 0u, 0u, 0u}};
  if (g < kRows)
    for (int ks = 0; ks < 2; ++ks) {
      a[ks][0] = *reinterpret_cast<const unsigned*>(Fs + g * 40 + 16 * ks + 2 * c);
      a[ks][2] = *reinterpret_cast<const unsigned*>(Fs + g * 40 + 16 * ks + 8 + 2 * c);
    }
  for (int nb = w; nb < kD / 8; nb += kThreads / 32) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      unsigned b0, b1;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                   : "=r"(b0), "=r"(b1)
                   : "r"(w2 + (nb * 32 + 16 * ks) * 16));
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
          : "r"(a[ks][0]), "r"(a[ks][1]), "r"(a[ks][2]), "r"(a[ks][3]), "r"(b0), "r"(b1));
    }
    if (g < kRows)
      asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(S.acc + g * kD + nb * 8 + 2 * c),
                   "f"(acc[0]), "f"(acc[1])
                   : "memory");
  }
}
// The item's share (40 values) of the materialised rows and of the zeroed deltas.
__device__ void item_shares(const Stage& S, int item, const unsigned char* wt) {
  const int tid = threadIdx.x;
  if (tid >= 40) return;
  const int t = item * 40 + tid;
  if (S.xmat && t < kRows * kD)
    S.xmat[t] = S.xf ? __ldcg(S.xf + t) + __ldcg(S.dlt + t) + __half2float(item_dbias(S, wt)[t % kD])
                     : __half2float(S.a[t]);
  if (S.zero && t < kRows * kD) S.zero[t] = 0.0f;
}

// Does block b have items in stage s?
__device__ __forceinline__ bool has_items(int s, int b) {
  return (int)((b + gridDim.x - c_st[s].offset % gridDim.x) % gridDim.x) < c_st[s].items;
}

// mode bit 0: no dependencies (the streaming bound); bit 1: per-block flags instead of one counter
// per stage. stamps: per stage and block, [0] past its wait, [1] its last item done, [2] rows
// staged, [3] its first item's weight present (ns).
__global__ void __launch_bounds__(kLaunchThreads, 1)
    decode_megakernel(unsigned* counters, unsigned* flags, unsigned epoch, unsigned cepoch, int mode,
                      unsigned long long* stamps, unsigned long long* prof) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* ring = smem;
  __half* As = reinterpret_cast<__half*>(smem + kRingBytes);  // [kRows][kLda]
  float* red = reinterpret_cast<float*>(As + kRows * kLda);   // [8][kRows][16], or the attention's
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(red + 8 * kRows * kMaxCols);
  unsigned long long* ends = bars + kInFlight;
  unsigned* starts = reinterpret_cast<unsigned*>(ends + kInFlight);
  const int tid = threadIdx.x;
  const bool nodeps = mode & 1, use_flags = mode & 2, producer_warp = mode & 4, tagged = mode & 8;
  const unsigned tb = tagged ? epoch * 64u : 0u;  // the tags' base (64 > the stages)
  volatile int* consumed = reinterpret_cast<volatile int*>(starts + kInFlight);
  __half* Fs =
      reinterpret_cast<__half*>(reinterpret_cast<unsigned char*>(starts + kInFlight) + 16);  // [8][40]
  for (int t = tid; t < 8 * 40; t += blockDim.x) Fs[t] = __float2half(0.0f);
  if (tid == 0) {
    for (int j = 0; j < kInFlight; ++j) mbar_init(bars + j, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    *consumed = 0;
  }
  __syncthreads();
  Cursor prod = first_item();
  Ring rg{0, 0, 0};
  if (tid >= kThreads) {
    // The producer: issue what fits, then wait for the consumers to finish an item.
    if (!producer_warp || tid != kThreads) return;
    int seen = 0;
    for (;;) {
      fill(rg, prod, seen, ring, bars, starts, ends);
      if (prod.s >= c_nst) return;
      int c;
      while ((c = *consumed) == seen) {
      }
      seen = c;
      rg.tail = ends[(c - 1) % kInFlight];
    }
  }
  if (tid == 0 && !producer_warp) fill(rg, prod, 0, ring, bars, starts, ends);
  csync();
  auto stamp = [&](int s, int k) {
    if (stamps && tid == 0) stamps[(s * gridDim.x + blockIdx.x) * 4 + k] = globaltimer();
  };
  auto leave = [&](int s, int count) {
    stamp(s, 1);
    if (use_flags)
      st_release(flags + s * gridDim.x + blockIdx.x, epoch);
    else
      red_release_add(counters + s, (unsigned)count);
  };
  // prof: per block, thread 0's cycles in each phase (0 dependency wait, 1 weight wait, 2 rows
  // staged, 3 the item's work, 4 the barrier after it, 5 refilling the ring, 6 the release), [7] items.
  unsigned long long pc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tlast = clock64();
  auto lap = [&](int k) {
    if (prof && tid == 0) {
      const unsigned long long t = clock64();
      pc[k] += t - tlast;
      tlast = t;
    }
  };
  int n = 0, staged = -1, last_stage = -1, done_here = 0;
  bool first_in_stage = false;
  for (Cursor cur = first_item(); cur.s < c_nst; next_item(cur), ++n) {
    const Stage& S = c_st[cur.s];
    if (cur.s != last_stage) {
      lap(7);
      if (tid == 0 && last_stage >= 0) tagged ? stamp(last_stage, 1) : leave(last_stage, done_here);
      lap(6);
      done_here = 0;
      if (cur.s > 0 && !nodeps && !tagged) {
        if (!use_flags) {
          if (tid == 0) {
            const unsigned target = (unsigned)c_st[cur.s - 1].items * cepoch;
            if (mode & 16) {
              // Relaxed polls, one acquire fence after the last.
              while (ld_relaxed(counters + cur.s - 1) < target) {
              }
              asm volatile("fence.acq_rel.gpu;" ::: "memory");
            } else {
              while (ld_acquire(counters + cur.s - 1) < target) {
              }
            }
          }
        } else if (tid < 32) {
          // Warp 0 polls the flags of every block with items in the previous stage, all at once.
          const unsigned* f = flags + (cur.s - 1) * gridDim.x;
          for (;;) {
            bool ok = true;
            for (int b = tid; b < (int)gridDim.x; b += 32)
              if (has_items(cur.s - 1, b) && ld_acquire(f + b) != epoch) ok = false;
            if (__all_sync(0xffffffffu, ok)) break;
          }
        }
      }
      csync();
      lap(0);
      stamp(cur.s, 0);
      last_stage = cur.s;
      first_in_stage = true;
    }
    const float pre = epilogue_operands(S, cur.i, tb);
    const unsigned otag = tb ? tag_of(tb, cur.s) : 0u;
    const int j = n % kInFlight;
    lap(7);
    mbar_wait(bars + j, (unsigned)(n / kInFlight) & 1u);
    lap(1);
    if (first_in_stage) stamp(cur.s, 3);
    first_in_stage = false;
    const unsigned char* wt = ring + starts[j];
    if (S.kind != kAttn && staged != cur.s) {
      stage_rows(S, As, wt, tb);
      staged = cur.s;
      csync();
      lap(2);
      stamp(cur.s, 2);
    }
    if (S.kind == kAttn)
      attn_item(S, cur.i, wt, red, tb, otag);
    else if (S.cols == 8)
      gemv_item<1>(S, cur.i, As, wt, red, pre, otag, Fs);
    else if (S.cols == 16)
      gemv_item<2>(S, cur.i, As, wt, red, pre, otag, Fs);
    else if (S.cols == 24)
      gemv_item<3>(S, cur.i, As, wt, red, pre, otag, Fs);
    else
      gemv_item<4>(S, cur.i, As, wt, red, pre, otag, Fs);
    if (S.kind == kFcMp) {
      csync();
      fcmp_second(S, wt, Fs);
    }
    if (S.kind != kAttn) item_shares(S, cur.i, wt);
    ++done_here;
    lap(3);
    csync();
    lap(4);
    if (tid == 0) {
      if (producer_warp) {
        *consumed = n + 1;
      } else {
        rg.tail = ends[j];
        fill(rg, prod, n + 1, ring, bars, starts, ends);
      }
    }
    lap(5);
  }
  if (tid == 0 && last_stage >= 0) tagged ? stamp(last_stage, 1) : leave(last_stage, done_here);
  if (prof && tid == 0) {
    pc[7] = (unsigned long long)n;  // phase 7's laps (loop overhead) are dropped: it counts items
    for (int k = 0; k < 8; ++k) prof[blockIdx.x * 8 + k] = pc[k];
  }
}

// ---- host ----
// [K][N] (or [N][K] when nk) into [items][K][cols], zeros past N.
static std::vector<__half> tile(const std::vector<__half>& w, int K, int N, int cols, bool nk) {
  const int items = (N + cols - 1) / cols;
  std::vector<__half> t((size_t)items * K * cols, __float2half(0.0f));
  for (int i = 0; i < items; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < cols; ++j) {
        const int n = i * cols + j;
        if (n < N) t[((size_t)i * K + k) * cols + j] = nk ? w[(size_t)n * K + k] : w[(size_t)k * N + n];
      }
  return t;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  int cols_qkv = 24, cols_proj = 8, cols_fc = 24, cols_mproj = 8, cols_lm = 32;
  if (const char* e = std::getenv("MK_COLS")) {
    // Columns per item: 8, 16, 24 or 32 (the gemv_item instantiations), dividing the product's N
    // (lm_head's last item is padded).
    const int got = std::sscanf(e, "%d,%d,%d,%d,%d", &cols_qkv, &cols_proj, &cols_fc, &cols_mproj, &cols_lm);
    const int cols[5] = {cols_qkv, cols_proj, cols_fc, cols_mproj, cols_lm}, ns[5] = {3 * kD, kD, kF, kD, 0};
    for (int i = 0; i < 5; ++i)
      if (got != 5 || cols[i] < 8 || cols[i] > 32 || cols[i] % 8 || (ns[i] && ns[i] % cols[i])) {
        std::fprintf(stderr,
                     "MK_COLS=%s: want five column counts qkv,proj,fc,mproj,lm, each 8, 16, 24 or 32 "
                     "and dividing 2304, 768, 3072, 768 (lm_head: any)\n",
                     e);
        return 1;
      }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int grid = prop.multiProcessorCount;
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("device %s, %d SMs; cols qkv %d proj %d fc %d mproj %d lm %d\n", prop.name, grid, cols_qkv,
              cols_proj, cols_fc, cols_mproj, cols_lm);

  struct LayerW {
    __half *ln1g, *ln1b, *wqkv, *bqkv, *wproj, *bproj, *ln2g, *ln2b, *wfc, *bfc, *wmp, *bmp, *kc, *vc;
    __half *tqkv, *tproj, *tfc, *tmp, *tw2;
  };
  const bool fuse = std::getenv("MK_FUSE") && std::atoi(std::getenv("MK_FUSE"));
  std::vector<LayerW> Lw(kLayers);
  double weight_bytes = 0;
  for (auto& l : Lw) {
    auto wqkv = rand_vec((size_t)kD * 3 * kD, 0.04f), wproj = rand_vec((size_t)kD * kD, 0.04f),
         wfc = rand_vec((size_t)kD * kF, 0.04f), wmp = rand_vec((size_t)kF * kD, 0.02f);
    l.ln1g = upload(rand_vec(kD, 0.2f, 1.0f));
    l.ln1b = upload(rand_vec(kD, 0.1f));
    l.ln2g = upload(rand_vec(kD, 0.2f, 1.0f));
    l.ln2b = upload(rand_vec(kD, 0.1f));
    l.bqkv = upload(rand_vec(3 * kD, 0.1f));
    l.bproj = upload(rand_vec(kD, 0.1f));
    l.bfc = upload(rand_vec(kF, 0.1f));
    l.bmp = upload(rand_vec(kD, 0.1f));
    l.wqkv = upload(wqkv);
    l.wproj = upload(wproj);
    l.wfc = upload(wfc);
    l.wmp = upload(wmp);
    l.tqkv = upload(tile(wqkv, kD, 3 * kD, cols_qkv, false));
    l.tproj = upload(tile(wproj, kD, kD, cols_proj, false));
    l.tfc = upload(tile(wfc, kD, kF, cols_fc, false));
    l.tmp = upload(tile(wmp, kF, kD, cols_mproj, false));
    if (fuse) {
      // kFcMp item i's rows of mlp c_proj, [kD / 8][32][8] (k >= cols_fc zero).
      std::vector<__half> t2((size_t)(kF / cols_fc) * kD * 32, __float2half(0.0f));
      for (int i = 0; i < kF / cols_fc; ++i)
        for (int nb = 0; nb < kD / 8; ++nb)
          for (int k = 0; k < cols_fc; ++k)
            for (int e = 0; e < 8; ++e)
              t2[(((size_t)i * (kD / 8) + nb) * 32 + k) * 8 + e] =
                  wmp[(size_t)(i * cols_fc + k) * kD + nb * 8 + e];
      l.tw2 = upload(t2);
    }
    l.kc = upload(rand_vec((size_t)kRows * kHeads * kT * kHd, 1.0f));
    l.vc = upload(rand_vec((size_t)kRows * kHeads * kT * kHd, 1.0f));
    weight_bytes += 2.0 * ((double)kD * 3 * kD + kD * kD + 2.0 * kD * kF);
  }
  auto wte = rand_vec((size_t)kVocab * kD, 0.1f);
  __half* d_wte = upload(wte);
  __half* t_wte = upload(tile(wte, kD, kVocab, cols_lm, true));
  weight_bytes += 2.0 * kVocab * kD;
  __half* lnfg = upload(rand_vec(kD, 0.2f, 1.0f));
  __half* lnfb = upload(rand_vec(kD, 0.1f));
  __half* x_in = upload(rand_vec((size_t)kRows * kD, 1.0f));
  __half *xr, *qkv, *o, *f, *h;
  float *logits, *ref_logits;
  CK(cudaMalloc(&xr, kRows * kD * 2));
  CK(cudaMalloc(&qkv, kRows * 3 * kD * 2));
  CK(cudaMalloc(&o, kRows * kD * 2));
  CK(cudaMalloc(&f, kRows * kF * 2));
  CK(cudaMalloc(&h, kRows * kF * 2));
  CK(cudaMalloc(&logits, (size_t)kRows * kVocab * 4));
  CK(cudaMalloc(&ref_logits, (size_t)kRows * kVocab * 4));

  // The stages (every other field zero).
  auto stage = [](int kind, int items, int cols, int K, int N, int offset, const __half* w,
                  const __half* bias, const __half* gamma, const __half* beta, const __half* a = nullptr,
                  const __half* res = nullptr, __half* out = nullptr, float* logits = nullptr,
                  __half* kc = nullptr, __half* vc = nullptr) {
    Stage s{};
    s.kind = kind, s.items = items, s.cols = cols, s.K = K, s.N = N, s.offset = offset;
    s.w = w, s.bias = bias, s.gamma = gamma, s.beta = beta, s.a = a, s.res = res, s.out = out;
    s.logits = logits, s.kc = kc, s.vc = vc;
    return s;
  };
  std::vector<Stage> st;
  int offset = 0;
  auto add = [&](Stage s) {
    s.offset = offset;
    offset = (offset + s.items) % grid;
    st.push_back(s);
  };
  // The tagged mode's rows (x_in stays the launch's untagged input).
  unsigned *xr32, *qkv32, *o32, *f32;
  CK(cudaMalloc(&xr32, kRows * kD * 4));
  CK(cudaMalloc(&qkv32, kRows * 3 * kD * 4));
  CK(cudaMalloc(&o32, kRows * kD * 4));
  CK(cudaMalloc(&f32, kRows * kF * 4));
  CK(cudaMemset(xr32, 0, kRows * kD * 4));
  CK(cudaMemset(qkv32, 0, kRows * 3 * kD * 4));
  CK(cudaMemset(o32, 0, kRows * kD * 4));
  CK(cudaMemset(f32, 0, kRows * kF * 4));
  // Stage 5l + {0 qkv, 1 attention, 2 attn c_proj, 3 c_fc, 4 mlp c_proj}; 60 lm_head.
  auto tagged = [&](const unsigned* a32, int a_from, const unsigned* res32, int res_from, unsigned* out32) {
    Stage& s = st.back();
    s.a32 = a32;
    s.a_from = a_from;
    s.res32 = res32;
    s.res_from = res_from;
    s.out32 = out32;
  };
  for (int l = 0; l < kLayers; ++l) {
    const LayerW& w = Lw[l];
    const __half* xin = l == 0 ? x_in : xr;
    const unsigned* xin32 = l == 0 ? nullptr : xr32;
    const int b = 5 * l;
    add(stage(kQkv, 3 * kD / cols_qkv, cols_qkv, kD, 3 * kD, 0, w.tqkv, w.bqkv, w.ln1g, w.ln1b, xin, nullptr,
              qkv, nullptr, nullptr, nullptr));
    tagged(xin32, b - 1, nullptr, 0, qkv32);
    add(stage(kAttn, kRows * kHeads, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr, qkv, nullptr, o, nullptr,
              w.kc, w.vc));
    tagged(qkv32, b, nullptr, 0, o32);
    add(stage(kProj, kD / cols_proj, cols_proj, kD, kD, 0, w.tproj, w.bproj, nullptr, nullptr, o, xin, xr,
              nullptr, nullptr, nullptr));
    tagged(o32, b + 1, xin32, b - 1, xr32);
    add(stage(kFc, kF / cols_fc, cols_fc, kD, kF, 0, w.tfc, w.bfc, w.ln2g, w.ln2b, xr, nullptr, f, nullptr,
              nullptr, nullptr));
    tagged(xr32, b + 2, nullptr, 0, f32);
    add(stage(kProj, kD / cols_mproj, cols_mproj, kF, kD, 0, w.tmp, w.bmp, nullptr, nullptr, f, xr, xr,
              nullptr, nullptr, nullptr));
    tagged(f32, b + 3, xr32, b + 2, xr32);
  }
  add(stage(kLm, (kVocab + cols_lm - 1) / cols_lm, cols_lm, kD, kVocab, 0, t_wte, nullptr, lnfg, lnfb, xr,
            nullptr, nullptr, logits, nullptr, nullptr));
  tagged(xr32, 5 * kLayers - 1, nullptr, 0, nullptr);
  if (fuse) {
    // Four stages a layer: q/k/v (whose items also write the residual rows, the sum of the previous
    // layer's rows, deltas and bias), attention, attn c_proj (fp32 residual in place; its items zero
    // the deltas), c_fc + mlp c_proj (deltas by reductions). Residual rows ping-pong between X[0]
    // and X[1].
    if (cols_fc > 32 || (3 * kD / cols_qkv) * 40 < kRows * kD || (kD / cols_proj) * 40 < kRows * kD) {
      std::fprintf(stderr, "MK_FUSE: needs cols_fc <= 32 and at least 96 q/k/v and attn c_proj items\n");
      return 1;
    }
    float *X[2], *D3;
    CK(cudaMalloc(&X[0], kRows * kD * 4));
    CK(cudaMalloc(&X[1], kRows * kD * 4));
    CK(cudaMalloc(&D3, kRows * kD * 4));
    st.clear();
    offset = 0;
    for (int l = 0; l < kLayers; ++l) {
      const LayerW& w = Lw[l];
      float* xdst = X[(l + 1) % 2];
      Stage q = stage(kQkv, 3 * kD / cols_qkv, cols_qkv, kD, 3 * kD, 0, w.tqkv, w.bqkv, w.ln1g, w.ln1b, x_in,
                      nullptr, qkv);
      if (l > 0) {
        q.xf = X[l % 2];
        q.dlt = D3;
        q.dbias = Lw[l - 1].bmp;
      }
      q.xmat = xdst;
      add(q);
      add(stage(kAttn, kRows * kHeads, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr, qkv, nullptr, o,
                nullptr, w.kc, w.vc));
      Stage pr = stage(kProj, kD / cols_proj, cols_proj, kD, kD, 0, w.tproj, w.bproj, nullptr, nullptr, o);
      pr.resf = xdst;
      pr.outf = xdst;
      pr.zero = D3;
      add(pr);
      Stage fm = stage(kFcMp, kF / cols_fc, cols_fc, kD, kF, 0, w.tfc, w.bfc, w.ln2g, w.ln2b);
      fm.xf = xdst;
      fm.w2 = w.tw2;
      fm.acc = D3;
      add(fm);
    }
    Stage lm =
        stage(kLm, (kVocab + cols_lm - 1) / cols_lm, cols_lm, kD, kVocab, 0, t_wte, nullptr, lnfg, lnfb);
    lm.logits = logits;
    lm.xf = X[kLayers % 2];
    lm.dlt = D3;
    lm.dbias = Lw[kLayers - 1].bmp;
    add(lm);
    std::printf("fused: 4 stages a layer (c_fc + mlp c_proj as one, fp32 residual)\n");
  }
  const int nst = (int)st.size();
  CK(cudaMemcpyToSymbol(c_st, st.data(), sizeof(Stage) * nst));
  CK(cudaMemcpyToSymbol(c_nst, &nst, sizeof(int)));

  unsigned* counters;
  CK(cudaMalloc(&counters, kMaxStages * 4));
  CK(cudaMemset(counters, 0, kMaxStages * 4));
  unsigned* flags;
  CK(cudaMalloc(&flags, (size_t)kMaxStages * grid * 4));
  CK(cudaMemset(flags, 0, (size_t)kMaxStages * grid * 4));
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, (size_t)nst * grid * 4 * 8));
  const size_t smem = (size_t)kRingBytes + kRows * kLda * 2 + 8 * kRows * kMaxCols * 4 +
                      kInFlight * (8 + 8 + 4) + 16 + 8 * 40 * 2;
  CK(cudaFuncSetAttribute(decode_megakernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_megakernel, kLaunchThreads, smem));
  std::printf("shared memory %zu bytes, %d block(s) per SM, %d stages\n", smem, per_sm, nst);
  if (per_sm < 1) return 1;

  // epoch: launches so far (the flags' value); cepoch: launches that counted on the counters.
  unsigned epoch = 0, cepoch = 0;
  auto launch = [&](int mode, unsigned long long* stp, unsigned long long* prf = nullptr) {
    ++epoch;
    if (!(mode & 2) && !(mode & 8)) ++cepoch;
    void* args[] = {&counters, &flags, &epoch, &cepoch, &mode, &stp, &prf};
    CK(cudaLaunchCooperativeKernel((void*)decode_megakernel, grid, kLaunchThreads, args, smem, 0));
  };

  // Reference, then the megakernel; compare.
  {
    std::vector<RefLayer> ref(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      const LayerW& w = Lw[l];
      ref[l] = RefLayer{w.ln1g, w.ln1b, w.wqkv, w.bqkv, w.wproj, w.bproj, w.ln2g,
                        w.ln2b, w.wfc,  w.bfc,  w.wmp,  w.bmp,   w.kc,    w.vc};
    }
    reference_step(ref, x_in, lnfg, lnfb, d_wte, ref_logits);
    launch(0, nullptr);
    CK(cudaDeviceSynchronize());
    const LogitsDiff d = compare_logits(logits, ref_logits);
    std::printf("check: logits rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d -> %s\n", d.rel_l2, d.max_abs,
                d.argmax_equal, kRows, d.ok() ? "ok" : "FAILED");
    if (!d.ok()) return 1;
  }

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<std::string> names_of(16);
  for (int m = 0; m < 16; ++m)
    names_of[m] = std::string(m & 1   ? "no dependencies (streaming bound)"
                              : m & 8 ? "decode step, tagged rows"
                              : m & 2 ? "decode step, a flag per block and stage"
                                      : "decode step, one counter per stage") +
                  (m & 4 ? ", producer warp" : "");
  for (int m = 16; m < 32; ++m) names_of.push_back(names_of[m - 16] + ", relaxed polls");
  auto mode_name = [&](int m) { return names_of[m].c_str(); };
  // Tagged mode's sleeps after a word not yet written (MK_POLL_NS, a list; unset: no tagged runs).
  std::vector<unsigned> sleeps;
  {
    const char* e = std::getenv("MK_POLL_NS");
    std::string list = e ? e : "";
    for (size_t at = 0; at < list.size();) {
      sleeps.push_back((unsigned)std::atoi(list.c_str() + at));
      const size_t comma = list.find(',', at);
      at = comma == std::string::npos ? list.size() : comma + 1;
    }
  }
  std::vector<std::pair<int, unsigned>> runs = {{4, 0}, {20, 0}, {5, 0}};
  for (unsigned ns : sleeps) runs.push_back({12, ns});
  runs.push_back({4, 0});
  runs.push_back({20, 0});
  for (auto [mode, ns] : runs) {
    CK(cudaMemcpyToSymbol(c_poll_ns, &ns, sizeof(ns)));
    if (mode & 8) std::printf("poll sleep %u ns: ", ns);
    if (mode == 2 || mode == 4 || mode == 12 || mode == 20) {  // these modes' results too
      CK(cudaMemset(logits, 0, (size_t)kRows * kVocab * 4));
      launch(mode, nullptr);
      CK(cudaDeviceSynchronize());
      const LogitsDiff d = compare_logits(logits, ref_logits);
      std::printf("check (%s): logits rel L2 %.3e\n", mode_name(mode), d.rel_l2);
      if (!d.ok()) return 1;
    }
    for (int i = 0; i < 20; ++i) launch(mode, nullptr);
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) launch(mode, nullptr);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double us = 1000.0 * ms / iters;
    std::printf("%s: %.1f us per step (back-to-back launches), weights %.1f MB -> %.2f TB/s\n",
                mode_name(mode), us, weight_bytes / 1e6, weight_bytes / (us * 1e-6) / 1e12);
  }
  // One stamped step per dependency mode: per stage, from the previous stage's last block done, the
  // first block past its wait, the last block's rows staged, the last block's first weight present
  // and the last block done.
  // Thread 0's cycles per phase, summed over the blocks' items, per item.
  unsigned long long* prof;
  CK(cudaMalloc(&prof, (size_t)grid * 8 * 8));
  std::vector<int> modes = {4, 20, 5};
  if (!sleeps.empty()) {
    const unsigned ns = sleeps.back();
    CK(cudaMemcpyToSymbol(c_poll_ns, &ns, sizeof(ns)));
    modes = {4, 20, 12, 5};
  }
  for (int mode : modes) {
    launch(mode, nullptr, prof);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> pv((size_t)grid * 8);
    CK(cudaMemcpy(pv.data(), prof, pv.size() * 8, cudaMemcpyDeviceToHost));
    double tot[8] = {};
    for (int b = 0; b < grid; ++b)
      for (int k = 0; k < 8; ++k) tot[k] += (double)pv[b * 8 + k];
    const double per = 1.0 / (clock_khz / 1e3) / tot[7];  // cycles -> us per item
    std::printf(
        "%s: thread 0's us per item (%.0f items): dependency %.2f, weight %.2f, rows %.2f, work %.2f, "
        "barrier %.2f, refill %.2f, release %.2f\n",
        mode_name(mode), tot[7], tot[0] * per, tot[1] * per, tot[2] * per, tot[3] * per, tot[4] * per,
        tot[5] * per, tot[6] * per);
  }
  for (int mode : modes) {
    if (mode & 1) continue;
    CK(cudaMemset(stamps, 0, (size_t)nst * grid * 4 * 8));
    launch(mode, stamps);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> sv((size_t)nst * grid * 4);
    CK(cudaMemcpy(sv.data(), stamps, sv.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (size_t i = 0; i < sv.size(); i += 4)
      if (sv[i]) t0 = std::min(t0, sv[i]);
    const char* kind_names[] = {"qkv", "attn", "proj", "fc", "lm", "fc+mp"};
    const int per_layer = (nst - 1) / kLayers;
    auto names = [&](int s) {
      const char* n = kind_names[st[s].kind];
      return st[s].kind == kProj && st[s].K == kF ? "mproj" : n;
    };
    double prev = 0, sum[5][4] = {};
    std::printf(
        "%s, stamped:\nstage        ready   staged   weight     done  (us from the previous stage's done)\n",
        mode_name(mode));
    for (int s = 0; s < nst; ++s) {
      unsigned long long ready = ~0ull, mx[4] = {0, 0, 0, 0};
      for (int b = 0; b < grid; ++b) {
        const unsigned long long* e = &sv[(s * grid + b) * 4];
        if (e[0]) ready = std::min(ready, e[0]);
        for (int k = 1; k < 4; ++k) mx[k] = std::max(mx[k], e[k]);
      }
      const double v[4] = {(ready - t0) / 1e3 - prev, mx[2] ? (mx[2] - t0) / 1e3 - prev : 0.0,
                           (mx[3] - t0) / 1e3 - prev, (mx[1] - t0) / 1e3 - prev};
      if (s < per_layer || s >= nst - 1)
        std::printf("%2d %-6s %8.2f %8.2f %8.2f %8.2f\n", s, names(s), v[0], v[1], v[2], v[3]);
      if (s >= per_layer && s < nst - 1)
        for (int k = 0; k < 4; ++k) sum[s % per_layer][k] += v[k] / (kLayers - 1);
      prev = (mx[1] - t0) / 1e3;
    }
    std::printf("span of the stamped step: %.2f us; layers 1-11, mean per stage:\n", prev);
    double layer = 0;
    for (int k = 0; k < per_layer; ++k) {
      std::printf("   %-6s %8.2f %8.2f %8.2f %8.2f\n", names(k), sum[k][0], sum[k][1], sum[k][2], sum[k][3]);
      layer += sum[k][3];
    }
    std::printf("   layer  %.2f us\n", layer);
  }
  return 0;
}
