#include "jit/persistent_source.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "jit/kernel_source.h"

namespace grape::jit {

namespace {

constexpr const char* kGlueMarker = "#line 1 \"generated\"\n";
constexpr const char* kEntryStart = "extern \"C\" __global__ void ";

// The grid-wide barrier: one word, whose top bit flips once all blocks have arrived. Block 0 adds
// 2^31 - (blocks - 1), every other block 1, so the word's low bits are back where they were after
// each barrier (no reset, between barriers or launches) and the block whose add completes the sum
// flips the top bit; each block waits to see the top bit differ from what its own add returned.
// One atomic per block and no second round trip (an arrival count reset by the last block, then
// a generation bump, cost a serialised atomic more per barrier).
constexpr const char* kHelpers = R"(
__device__ __forceinline__ unsigned int grape_ld_volatile(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// The block's index in the launch, read from the hardware register (for the barrier and the trace,
// which must not depend on how a source names blocks).
__device__ __forceinline__ unsigned int grape_ctaid() {
  unsigned int b;
  asm("mov.u32 %0, %%ctaid.x;" : "=r"(b));
  return b;
}
// Tracing (PersistentParams::trace): block 0 stamps when it arrives at each barrier and leaves it.
__device__ __forceinline__ void grape_trace(unsigned long long* trace, int slot) {
  if (trace && grape_ctaid() == 0 && threadIdx.x == 0) trace[slot] = grape_globaltimer();
}
__device__ __noinline__ void grape_grid_barrier(unsigned int* bar, unsigned long long* trace, int n) {
  __syncthreads();
  if (threadIdx.x == 0) {
    grape_trace(trace, 2 * n);
    const unsigned int add = grape_ctaid() == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    __threadfence();  // the block's writes (ordered before this thread by the barrier above)
    const unsigned int old = atomicAdd(bar, add);
    // Read back to back: a pause of 100-1000 ns between reads measured slower (run 150).
    while (((old ^ grape_ld_volatile(bar)) & 0x80000000u) == 0) {
    }
    __threadfence();
    grape_trace(trace, 2 * n + 1);
  }
  __syncthreads();
}
struct alignas(16) GrapePersistentWord {
  unsigned long long lo, hi;
};
__device__ __noinline__ void grape_grid_copy(const PersistentCopy& c) {
  if (c.pred && !*c.pred) return;
  unsigned char* d = (unsigned char*)c.dst;
  const unsigned char* s = (const unsigned char*)c.src;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x,
                           stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long done = 0;
  if ((((unsigned long long)d | (unsigned long long)s) & 15) == 0) {
    const unsigned long long words = c.bytes / 16;
    for (unsigned long long w = first; w < words; w += stride)
      ((GrapePersistentWord*)d)[w] = ((const GrapePersistentWord*)s)[w];
    done = words * 16;
  }
  for (unsigned long long b = done + first; b < c.bytes; b += stride) d[b] = s[b];
}
// A step's parameter block and its prefetch range into shared memory: the entries read it there,
// where the compiler knows the step's global stores cannot change it (through a global pointer it
// would reload every field after every store), and with no L1 refill after each barrier's acquire.
__device__ __forceinline__ void grape_stage_params(KParams& dst, const KParams* src, PersistentRange& pf,
                                                   const PersistentRange* pf_src) {
  constexpr int kWords = (int)(sizeof(KParams) / 16);
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) ((uint4*)&dst)[i] = ((const uint4*)src)[i];
  if (threadIdx.x == 0) pf = *pf_src;
}
)";

size_t matching_brace(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::string::npos;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::string persistent_entry(const std::string& source, const std::string& symbol, long long rows) {
  const size_t marker = source.find(kGlueMarker);
  if (marker == std::string::npos) return "";
  const std::string glue = source.substr(marker + std::string(kGlueMarker).size());
  const size_t first = glue.find(kEntryStart);
  if (first == std::string::npos) return "";
  std::string prefix = glue.substr(0, first);
  // The definitions before the entry points and the entry's body must not depend on the
  // preprocessor (a define or a conditional would apply to every kernel of the persistent
  // source); a pragma (`#pragma unroll` in a loop) applies where it stands.
  auto only_pragmas = [](const std::string& text) {
    for (size_t at = text.find('#'); at != std::string::npos; at = text.find('#', at + 1))
      if (text.compare(at, 7, "#pragma") != 0) return false;
    return true;
  };
  if (!only_pragmas(prefix)) return "";
  const std::string signature = " " + symbol + "(const __grid_constant__ KParams kp) {";
  size_t at = glue.find(signature);
  while (at != std::string::npos && glue.rfind(kEntryStart, at) != glue.rfind('\n', at) + 1)
    at = glue.find(signature, at + 1);
  if (at == std::string::npos) return "";
  const size_t open = at + signature.size() - 1, close = matching_brace(glue, open);
  if (close == std::string::npos) return "";
  std::string body = glue.substr(open, close - open + 1);
  if (body.find("__global__") != std::string::npos || !only_pragmas(body)) return "";
  // kp is in shared memory (grape_stage_params); saying so lets the compiler keep its fields in
  // registers across the step's global stores.
  std::string out =
      prefix +
      "__device__ __noinline__ void grape_entry(const KParams& kp) {\n  __builtin_assume(__isShared(&kp));" +
      body.substr(1) + "\n";
  replace_all(out, "__ldg(", "grape_ld_plain(");
  if (rows > 0) replace_all(out, "GRAPE_ROWS_OR(", "GRAPE_ROWS_AS(" + std::to_string(rows) + "LL, ");
  return out;
}

std::string persistent_kernel_source(const std::vector<PersistentStep>& steps,
                                     const std::vector<KernelSpec>& specs, int threads) {
  std::map<std::string, size_t> entry_ns;  // distinct converted entries -> namespace number
  std::vector<std::string> templates;
  std::string bodies, code;
  // Parameter blocks are double-buffered in shared memory: a launch's block is staged right after
  // the previous launch (before the barrier, whose wait hides the loads); the block it overwrites
  // was last read by the launch before, which every thread has left (a barrier, or the
  // __syncthreads after each staging, lies between).
  std::vector<size_t> launches;
  for (const PersistentStep& st : steps)
    if (st.kind == PersistentStep::Kind::Launch) launches.push_back(st.index);
  auto stage = [&](size_t n) {
    if (n < launches.size())
      code += "  grape_stage_params(grape_kp[" + std::to_string(n % 2) + "], pp.kernel + " +
              std::to_string(launches[n]) + ", grape_pf[" + std::to_string(n % 2) + "], pp.prefetch + " +
              std::to_string(n) + ");\n";
  };
  stage(0);
  size_t launched = 0;
  int barriers = 0;
  code += "  grape_trace(pp.trace, 0);\n";
  for (const PersistentStep& st : steps) {
    code += st.barrier_before
                ? "  grape_grid_barrier(pp.barrier, pp.trace, " + std::to_string(++barriers) + ");\n"
                : "  __syncthreads();\n";
    if (st.kind == PersistentStep::Kind::Copy) {
      code += "  grape_grid_copy(pp.copy[" + std::to_string(st.index) + "]);\n";
      continue;
    }
    const KernelSpec& s = specs.at(st.index);
    const std::string entry = persistent_entry(s.source, st.entry, st.rows);
    if (entry.empty())
      throw std::invalid_argument("kernel " + s.name + " (entry " + st.entry +
                                  ") cannot run inside a persistent kernel");
    auto [it, added] = entry_ns.emplace(entry, entry_ns.size());
    const std::string ns = "grape_p" + std::to_string(it->second);
    if (added) {
      for (const std::string& t : s.templates)
        if (std::find(templates.begin(), templates.end(), t) == templates.end()) templates.push_back(t);
      bodies += "namespace " + ns + " {\n" + entry + "}  // namespace " + ns + "\n\n";
    }
    const std::string b = std::to_string(launched % 2);
    code += "  grape_prefetch_l2(grape_pf[" + b + "].ptr, grape_pf[" + b + "].bytes);\n";
    code += "  " + ns + "::grape_entry(grape_kp[" + std::to_string(launched % 2) + "]);  // " + s.name + "\n";
    stage(++launched);
  }
  std::string glue =
      "// a persistent kernel of " + std::to_string(steps.size()) + " step(s)\n" + kHelpers + "\n" + bodies +
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads) + ", " +
      std::to_string(kPersistentBlocksPerSm) + ") " + kPersistentSymbol +
      "(const __grid_constant__ PersistentParams pp) {\n" +
      "  __shared__ __align__(16) KParams grape_kp[2];\n  __shared__ PersistentRange grape_pf[2];\n" + code +
      "  if (pp.trace) grape_grid_barrier(pp.barrier, pp.trace, " + std::to_string(barriers + 1) +
      ");  // only to stamp the end\n}\n";
  // After the CUDA headers (NVRTC's precompiled header covers only the includes at the start).
  return assemble_kernel_source(templates, glue, "#define GRAPE_PERSISTENT 1\n");
}

}  // namespace grape::jit
