// Device helpers every generated kernel may use: element loads and stores by dtype, the integer
// and float semantics of runtime/cpu/elementwise.cpp, warp and block reductions, the (value, index)
// orders of arg-reductions and topk. Embedded in the library (jit/embed.cmake); the kernel source
// assembler (jit/kernel_source.cpp) puts it after kernel_abi.h and the CUDA headers.
// Every buffer of KParams is global memory; saying so (__isGlobal) makes these ld.global/st.global
// instead of generic accesses, which the compiler must assume may alias shared memory (so it could
// not move a load above a shared-memory store, serialising staging loops). Not in a block sequence
// (GRAPE_BLOCK_SEQUENCE), which keeps storages that live only inside it in shared memory.
#ifndef GRAPE_BLOCK_SEQUENCE
#define GRAPE_ASSUME_GLOBAL(b) __builtin_assume(__isGlobal(b))
#else
#define GRAPE_ASSUME_GLOBAL(b) ((void)0)
#endif
__device__ __forceinline__ float grape_ld_f32(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return ((const float*)b)[i]; }
__device__ __forceinline__ float grape_ld_f16(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return __half2float(((const __half*)b)[i]); }
__device__ __forceinline__ float grape_ld_bf16(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return __bfloat162float(((const __nv_bfloat16*)b)[i]); }
__device__ __forceinline__ int grape_ld_i32(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return ((const int*)b)[i]; }
__device__ __forceinline__ long long grape_ld_i64(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return ((const long long*)b)[i]; }
__device__ __forceinline__ bool grape_ld_b8(const void* b, long long i) { GRAPE_ASSUME_GLOBAL(b); return ((const unsigned char*)b)[i] != 0; }
// The same through the read-only data path (ld.global.nc) for kernels that never write what they
// read (jit/emit_context.h, Ctx::readonly_inputs): such loads may be reordered with the kernel's
// stores. In a block sequence (scheduler/sequence.h) or a persistent kernel (GRAPE_PERSISTENT,
// jit/persistent_source.h) a kernel's inputs may have been written earlier in the same launch,
// which the read-only path does not promise to see: plain loads there.
#if defined(GRAPE_PERSISTENT)
// A global load the compiler knows is global (a generic one might alias shared memory, which
// would serialise loads behind shared-memory stores), not through the read-only path. (A block
// sequence may keep storages in shared memory: plain generic loads there.)
template <class T>
__device__ __forceinline__ T grape_ld_plain(const T* p) {
  __builtin_assume(__isGlobal(p));
  return *p;
}
#define GRAPE_LDG(p) grape_ld_plain(p)
#elif defined(GRAPE_BLOCK_SEQUENCE)
#define GRAPE_LDG(p) (*(p))
#else
#define GRAPE_LDG(p) __ldg(p)
#endif
#if !defined(GRAPE_BLOCK_SEQUENCE) && !defined(GRAPE_PERSISTENT)
__device__ __forceinline__ float grape_ldg_f32(const void* b, long long i) { return __ldg((const float*)b + i); }
__device__ __forceinline__ float grape_ldg_f16(const void* b, long long i) { return __half2float(__ldg((const __half*)b + i)); }
__device__ __forceinline__ float grape_ldg_bf16(const void* b, long long i) { return __bfloat162float(__ldg((const __nv_bfloat16*)b + i)); }
__device__ __forceinline__ int grape_ldg_i32(const void* b, long long i) { return __ldg((const int*)b + i); }
__device__ __forceinline__ long long grape_ldg_i64(const void* b, long long i) { return __ldg((const long long*)b + i); }
__device__ __forceinline__ bool grape_ldg_b8(const void* b, long long i) { return __ldg((const unsigned char*)b + i) != 0; }
#else
__device__ __forceinline__ float grape_ldg_f32(const void* b, long long i) { return grape_ld_f32(b, i); }
__device__ __forceinline__ float grape_ldg_f16(const void* b, long long i) { return grape_ld_f16(b, i); }
__device__ __forceinline__ float grape_ldg_bf16(const void* b, long long i) { return grape_ld_bf16(b, i); }
__device__ __forceinline__ int grape_ldg_i32(const void* b, long long i) { return grape_ld_i32(b, i); }
__device__ __forceinline__ long long grape_ldg_i64(const void* b, long long i) { return grape_ld_i64(b, i); }
__device__ __forceinline__ bool grape_ldg_b8(const void* b, long long i) { return grape_ld_b8(b, i); }
#endif
__device__ __forceinline__ void grape_st_f32(void* b, long long i, float v) { GRAPE_ASSUME_GLOBAL(b); ((float*)b)[i] = v; }
__device__ __forceinline__ void grape_st_f16(void* b, long long i, float v) { GRAPE_ASSUME_GLOBAL(b); ((__half*)b)[i] = __float2half_rn(v); }
__device__ __forceinline__ void grape_st_bf16(void* b, long long i, float v) { GRAPE_ASSUME_GLOBAL(b); ((__nv_bfloat16*)b)[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ void grape_st_i32(void* b, long long i, int v) { GRAPE_ASSUME_GLOBAL(b); ((int*)b)[i] = v; }
__device__ __forceinline__ void grape_st_i64(void* b, long long i, long long v) { GRAPE_ASSUME_GLOBAL(b); ((long long*)b)[i] = v; }
__device__ __forceinline__ void grape_st_b8(void* b, long long i, bool v) { GRAPE_ASSUME_GLOBAL(b); ((unsigned char*)b)[i] = v ? 1 : 0; }

// f16/bf16 arithmetic is done in f32 and rounded once per op (docs/language.md).
__device__ __forceinline__ float grape_r_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ float grape_r_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// Wrapping int64 arithmetic; i32 results wrap modulo 2^32 (runtime/cpu/elementwise.cpp).
__device__ __forceinline__ int grape_to_i32(long long x) { return (int)(unsigned int)(unsigned long long)x; }
__device__ __forceinline__ long long grape_add_ll(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long grape_sub_ll(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long grape_mul_ll(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ long long grape_max_ll(long long a, long long b) { return a > b ? a : b; }
__device__ __forceinline__ long long grape_min_ll(long long a, long long b) { return a < b ? a : b; }
// Floor division (Python //); x // 0 == 0.
__device__ __forceinline__ long long grape_floordiv_ll(long long x, long long y) {
  if (y == 0) return 0;
  if (y == -1) return grape_sub_ll(0, x);
  long long q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return q;
}
// Python %: the sign of the divisor; x % 0 == 0.
__device__ __forceinline__ long long grape_mod_ll(long long x, long long y) {
  if (y == 0 || y == -1) return 0;
  long long r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
// Negative exponents give 0 except for bases 1 and -1.
__device__ __forceinline__ long long grape_pow_ll(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  long long r = 1;
  while (e) {
    if (e & 1) r = grape_mul_ll(r, base);
    base = grape_mul_ll(base, base);
    e >>= 1;
  }
  return r;
}
// float -> int truncates toward zero and saturates; NaN -> 0.
__device__ __forceinline__ int grape_f2i32(float x) {
  if (isnan(x)) return 0;
  if (x >= 2147483648.0f) return 2147483647;
  if (x <= -2147483648.0f) return (-2147483647 - 1);
  return (int)x;
}
__device__ __forceinline__ long long grape_f2i64(float x) {
  if (isnan(x)) return 0;
  if (x >= 9223372036854775808.0f) return 9223372036854775807LL;
  if (x <= -9223372036854775808.0f) return (-9223372036854775807LL - 1);
  return (long long)x;
}

__device__ __forceinline__ float grape_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float grape_relu(float x) { return x < 0.0f ? 0.0f : x; }
// gelu(x) = 0.5 x erfc(-x / sqrt 2) (runtime/cpu/elementwise.cpp), erfc by the Chebyshev fit of
// Numerical Recipes' erfcc (fractional error below 1.2e-7 in exact arithmetic, 2.5e-5 in float at
// z = 9.5 where erfc is 1e-40; 14 of 200,001 f16 results in [-12, 12] differ from the exact
// function's by one unit, where the exact value sits on a rounding boundary): one reciprocal, one
// exp2 and 10 FMAs, against two divisions and two exps in erfcf, which cost BERT's FFN up product
// a third of its time in the epilogue. erfc(-z) = 2 - erfc(z); x = +inf gives +inf, -inf NaN, as
// on the CPU.
__device__ __forceinline__ float grape_gelu(float x) {
  const float z = fabsf(x) * 0.7071067811865476f;
  float t;  // 1 / (1 + z / 2), in [0, 1]: no subnormal or range guard needed (__fdividef has two)
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.5f, z, 1.0f)));
  float q = 0.17087277f;
  q = fmaf(q, t, -0.82215223f);
  q = fmaf(q, t, 1.48851587f);
  q = fmaf(q, t, -1.13520398f);
  q = fmaf(q, t, 0.27886807f);
  q = fmaf(q, t, -0.18628806f);
  q = fmaf(q, t, 0.09678418f);
  q = fmaf(q, t, 0.37409196f);
  q = fmaf(q, t, 1.00002368f);
  q = fmaf(q, t, -1.26551223f);
  float e;  // erfc(z); ex2 flushes results below 2^-126 to 0 (gelu there is below 1e-37 anyway)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(-z, z, q) * 1.4426950408889634f));
  e *= t;
  return x >= 0.0f ? x * fmaf(-0.5f, e, 1.0f) : 0.5f * x * e;
}
__device__ __forceinline__ float grape_gelu_tanh(float x) {
  const float k = 0.7978845608028654f;
  return x * grape_sigmoid(2.0f * k * (x + 0.044715f * x * x * x));
}
__device__ __forceinline__ float grape_sign_f(float x) { return isnan(x) ? x : (float)((x > 0.0f) - (x < 0.0f)); }
__device__ __forceinline__ float grape_fmod_py(float x, float y) {
  float m = fmodf(x, y);
  if (m != 0.0f) {
    if ((y < 0.0f) != (m < 0.0f)) m += y;
  } else {
    m = copysignf(0.0f, y);
  }
  return m;
}
// max.NaN (sm_80 and newer) is one instruction where the isnan tests take four.
__device__ __forceinline__ float grape_fmax_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (isnan(a) || isnan(b)) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
#endif
}
__device__ __forceinline__ float grape_fmin_nan(float a, float b) { return (isnan(a) || isnan(b)) ? __int_as_float(0x7fc00000) : fminf(a, b); }

// take / take_along_axis: a negative index wraps once, then clamps into [0, dim - 1].
__device__ __forceinline__ long long grape_clamp_index(long long i, long long dim) {
  if (i < 0) i += dim;
  if (i > dim - 1) i = dim - 1;
  return i < 0 ? 0 : i;
}
// Dynamic slice start (cpu::resolve_dynamic_start): wraps once, clamps so `size` elements fit.
__device__ __forceinline__ long long grape_dyn_start(long long raw, long long dim, long long size) {
  if (raw < 0) raw += dim;
  long long hi = dim - size;
  if (hi < 0) hi = 0;
  return raw < 0 ? 0 : raw > hi ? hi : raw;
}

__device__ __forceinline__ float grape_mac(float acc, float a, float b) { return acc + a * b; }
__device__ __forceinline__ long long grape_mac(long long acc, long long a, long long b) { return grape_add_ll(acc, grape_mul_ll(a, b)); }
__device__ __forceinline__ float grape_plus(float a, float b) { return a + b; }
__device__ __forceinline__ long long grape_plus(long long a, long long b) { return grape_add_ll(a, b); }

__device__ __forceinline__ float grape_shfl_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ long long grape_shfl_xor(long long v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ int grape_shfl_xor(int v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
// Warp reductions (every lane gets the result; the whole warp must call).
template <class T> __device__ __forceinline__ T grape_warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v = grape_plus(v, grape_shfl_xor(v, o));
  return v;
}
__device__ __forceinline__ float grape_warp_max_nan(float v) {
  for (int o = 16; o > 0; o >>= 1) v = grape_fmax_nan(v, grape_shfl_xor(v, o));
  return v;
}
// A pass over elements j = first + step * t < cnt (a block's threads: first = threadIdx.x plus
// the block's offset in its cluster, step = blockDim.x times the cluster's blocks): f(j, x(j)) for each, in order of j, the loads of GRAPE_BLOCK_PASS_U elements
// issued before any is used. One at a time, a thread's loads are a memory latency apart: a row of
// 50257 over 256 threads is 196 of them (a beam search's log_softmax took 26 us per call that way on
// an H100, run 119). The order of f's calls is unchanged, so sums are the same as one element at a
// time.
#define GRAPE_BLOCK_PASS_U 8
template <class X, class F>
__device__ __forceinline__ void grape_span_pass(long long first, long long step, long long cnt, X x, F f) {
  constexpr int U = GRAPE_BLOCK_PASS_U;
  using V = decltype(x(0LL));
  for (long long j0 = first; j0 < cnt; j0 += U * step) {
    V v[U];
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const long long j = j0 + q * step;
      v[q] = j < cnt ? x(j) : V(0);
    }
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const long long j = j0 + q * step;
      if (j < cnt) f(j, v[q]);
    }
  }
}
// Block reduction with a combine functor; every thread of the block must call it and gets the
// result. `sm` holds 32 elements. The block size is a multiple of 32.
template <class T, class F> __device__ __forceinline__ T grape_block_reduce(T v, F f, T* sm) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, grape_shfl_xor(v, o));
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sm[w] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    T r = sm[0];
    for (int i = 1; i < nw; ++i) r = f(r, sm[i]);
    sm[0] = r;
  }
  __syncthreads();
  return sm[0];
}
struct GrapeAdd { template <class T> __device__ T operator()(T a, T b) const { return grape_plus(a, b); } };
struct GrapeMul {
  __device__ float operator()(float a, float b) const { return a * b; }
  __device__ long long operator()(long long a, long long b) const { return grape_mul_ll(a, b); }
};
struct GrapeMax {
  __device__ float operator()(float a, float b) const { return grape_fmax_nan(a, b); }
  __device__ long long operator()(long long a, long long b) const { return grape_max_ll(a, b); }
};
struct GrapeMin {
  __device__ float operator()(float a, float b) const { return grape_fmin_nan(a, b); }
  __device__ long long operator()(long long a, long long b) const { return grape_min_ll(a, b); }
};
struct GrapeAnd { __device__ int operator()(int a, int b) const { return a & b; } };
struct GrapeOr { __device__ int operator()(int a, int b) const { return a | b; } };

// (value, index) candidates for argmax/argmin/topk; index < 0 is "none".
__device__ __forceinline__ bool grape_isnan(float v) { return isnan(v); }
__device__ __forceinline__ bool grape_isnan(long long) { return false; }
// argmax/argmin (runtime/cpu/reduce.cpp arg_reduce): first index of the extreme; NaN is the
// extreme, the first NaN wins.
template <class T> __device__ __forceinline__ bool grape_arg_first(T va, long long ia, T vb, long long ib, bool is_max) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  bool an = grape_isnan(va), bn = grape_isnan(vb);
  if (an || bn) return an && bn ? ia < ib : an;
  if (va != vb) return is_max ? va > vb : va < vb;
  return ia < ib;
}
// topk order (runtime/cpu/gather.cpp topk): NaN first (lower index first), then larger values,
// ties to the lower index.
template <class T> __device__ __forceinline__ bool grape_topk_before(T va, long long ia, T vb, long long ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  bool an = grape_isnan(va), bn = grape_isnan(vb);
  if (an || bn) return an && bn ? ia < ib : an;
  if (va != vb) return va > vb;
  return ia < ib;
}
// Block-wide best (value, index) under `before`; every thread gets the result.
template <class T, class B> __device__ __forceinline__ void grape_block_best(T& v, long long& i, B before, T* smv, long long* smi) {
  for (int o = 16; o > 0; o >>= 1) {
    T ov = grape_shfl_xor(v, o);
    long long oi = grape_shfl_xor(i, o);
    if (before(ov, oi, v, i)) { v = ov; i = oi; }
  }
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) { smv[w] = v; smi[w] = i; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 1; k < nw; ++k)
      if (before(smv[k], smi[k], smv[0], smi[0])) { smv[0] = smv[k]; smi[0] = smi[k]; }
  }
  __syncthreads();
  v = smv[0];
  i = smi[0];
  __syncthreads();
}

// 16 bytes of a buffer (weights, attention rows) as floats: unpack() a uint4, one() an element.
template <class W> struct GrapeVec;
template <> struct GrapeVec<float> {
  static constexpr int kN = 4;
  __device__ static void unpack(const uint4& u, float* f) {
    f[0] = __uint_as_float(u.x); f[1] = __uint_as_float(u.y); f[2] = __uint_as_float(u.z); f[3] = __uint_as_float(u.w);
  }
  __device__ static float one(const float* p, long long i) { return p[i]; }
};
template <> struct GrapeVec<__half> {
  static constexpr int kN = 8;
  __device__ static void unpack(const uint4& u, float* f) {
    const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = __half22float2(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
  __device__ static float one(const __half* p, long long i) { return __half2float(p[i]); }
};
template <> struct GrapeVec<__nv_bfloat16> {
  static constexpr int kN = 8;
  __device__ static void unpack(const uint4& u, float* f) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = __bfloat1622float2(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
  __device__ static float one(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
};
