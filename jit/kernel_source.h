// Kernel sources from their parts: the embedded templates (jit/kernels/*.cuh, real CUDA, compiled
// into the library at build time by jit/embed.cmake) and the glue jit/emit_kernels.cpp generates.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace grape::jit {

struct EmbeddedFile {
  const char* name;  // "gemv.cuh", "kernel_abi.h"
  const char* text;
};
extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kNumEmbeddedFiles;

// The text of an embedded file; throws std::logic_error for a name that is not embedded.
const std::string& embedded_file(const std::string& name);

// The symbol of every generated kernel. Each kernel is its own module, so kernels need no unique
// names, and two kernels with the same code (the same layer repeated) have the same source: they
// compile once and share one kernel-cache entry.
constexpr const char* kKernelSymbol = "grape_kernel";
// Matrix products have a second entry point, kKernelSymbol + this, for the tensor-core path;
// tensor-core attention (attention_mma.cuh) one with two warps per row group.
constexpr const char* kTensorCoreSuffix = "_mma";
// And a third, kKernelSymbol + kWideSuffix, with 128 x 128 tiles for large products: only in the
// source when compiled with kWideDefine defined, so that it costs NVRTC time only for the kernels
// that launch it (runtime/cuda/device_program.cpp builds that variant at first use).
constexpr const char* kWideSuffix = "_wide";
constexpr const char* kWideDefine = "GRAPE_GEMM_WIDE";
// With kWideDefine the products whose operands suit Hopper's warpgroup MMA (LaunchRule::wgmma) have
// one more entry point when compiled for sm_90a: 128 x 64 tiles, for products too small for 128 x
// 128 tiles to fill the GPU (LaunchDims::narrow).
constexpr const char* kWgmma64Suffix = "_wgmma64";
// ... and its 128 x 96 wgmma entry (a tuning candidate only; scheduler::LaunchDims::n96).
constexpr const char* kWgmma96Suffix = "_wgmma96";
// ... and its 64 x 64 wgmma entry, two warpgroups of 64 x 32 (a tuning candidate only, for the
// products whose 128-row tiles leave most of the GPU idle; scheduler::LaunchDims::m64).
constexpr const char* kWgmmaM64Suffix = "_wgmma_m64";
// The source of a matrix product's wide variant: `source` with kWideDefine defined.
std::string wide_variant_source(const std::string& source);
// Row-count variants: a matrix product whose row count is a runtime dim (decode's batch B) reads
// it through GRAPE_ROWS_OR(x) (gemv.cuh), which is `rows` when the source is compiled with
// kRowsDefine defined as `rows`; that source then has only the GEMV entry point (kKernelSymbol).
// The GEMV's loops over rows are then fully known to the compiler: 12-20% faster per product at
// 5 rows (docs/kernels.md, "Row-count variants"). runtime/cuda/device_program.cpp builds them at the
// first bind of each row count <= scheduler::kGemvMaxRows.
constexpr const char* kRowsDefine = "GRAPE_ROWS";
std::string rows_variant_source(const std::string& source, long long rows);

// The decoder plan's kernel (jit/kernels/decoder_step.cuh, entry point kDecoderSymbol) for `rows`
// rows, `layers` layers, a cache of `cache_len` positions, a vocabulary of `vocab`, `fc_cols` c_fc
// columns a block (24 or 32) and a ring of `ring_bytes` (jit::decoder_ring_bytes), with `switches`
// (each one's code is absent from the kernel without it: the same code behind a run-time test
// measured slower, bench/RESULTS.md run 297).
constexpr const char* kDecoderSymbol = "grape_decoder";
// Its target: the plan runs only on compute capability 9.0, and its rows' multicast copies are
// sm_90a's (ptxas advises against them for plain sm_90).
constexpr const char* kDecoderArch = "sm_90a";
struct DecoderSwitches {
  // lm_head's items past the blocks' lists claimed at run time (DecoderParams::lm_claims).
  bool lm_claim = false;
  // At its end, each block puts the next launch's first item (its step-0 weights and the row's
  // past keys and values) into L2, so that step 0 does not wait for DRAM.
  bool prefetch_next = false;
  // A layer step's counter polled by each cluster's rank 0 only, which copies the whole rows into
  // all 8 blocks (one multicast); the others wait for the copy alone (120 pollers of one counter
  // become 15, and a cluster's rows no longer wait for the latest of its 8 polls).
  bool one_poller = false;
  // The past keys and values copied into the ring with the weights' L2 evict_first policy (they
  // are read once a launch), leaving L2 to the lm_head items kept there across launches.
  bool kv_evict_first = false;
  // With lm_claim: as its last layer item is copied, each layer block puts P of the claimed lm_head
  // items (the first ones claimed: lm_claim_from + block + grid k, k < P) into L2, so that DRAM,
  // idle from then until lm_head's blocks free their rings, brings them before they are claimed.
  // Slower at every P (run 305: part of the prefetched bytes come from DRAM twice).
  int lm_late = 0;
};
std::string decoder_kernel_source(int rows, int layers, long long cache_len, long long vocab, int fc_cols,
                                  unsigned ring_bytes, DecoderSwitches switches = {});

// A complete NVRTC source: the CUDA headers, kernel_abi.h, prelude.cuh, then each named template
// (in order, each once, with #line markers so NVRTC's messages name the template file and line),
// then `glue`.
// `defines` ("#define X 1\n" lines) go right after the CUDA headers: NVRTC's precompiled header
// covers the includes at the very start of a source, so every kernel must begin with the same ones.
std::string assemble_kernel_source(const std::vector<std::string>& templates, const std::string& glue,
                                   const std::string& defines = "");

}  // namespace grape::jit
