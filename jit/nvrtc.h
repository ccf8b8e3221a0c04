// NVRTC, loaded with dlopen at run time: CUDA C++ source -> cubin and PTX. It needs no GPU, so
// machines without one still compile (and cache) every kernel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grape::jit {

struct CompileResult {
  std::vector<std::uint8_t> cubin;  // empty for a virtual target (compute_90)
  std::string ptx;
  // NVRTC's log of the successful compile: its warnings; empty when the source compiled cleanly.
  // `grape compile` fails CI on a non-empty log.
  std::string log;
  std::string nvrtc_version;  // "13.0"
  bool from_cache = false;

  bool has_warnings() const { return !log.empty(); }
};

// Never throws; false with the reason in *why.
bool nvrtc_available(std::string* why = nullptr);
// The loaded library's version, "13.0". Throws Error(NoDevice, "no NVRTC library found (...)").
std::string nvrtc_version();
// The libnvrtc file that was loaded.
std::string nvrtc_library_path();
// Whether compiles use NVRTC's automatic precompiled headers: NVRTC 12.8 or newer, and
// pch_wanted() (read once, when NVRTC is loaded).
bool nvrtc_uses_pch();
// The precompiled header's policy: $GRAPE_NVRTC_PCH ("0" off, "1" on), else on only where builds
// run on at most kPchMaxThreads threads (`hardware_threads`). Each compile maps the .pch file in
// 64 KB pieces (~230 mmap calls; a gpt2.grp build: 33,000 mmaps and 7 s more system time, 2-core
// measurement), and every mmap takes the process's memory-map lock for writing, stalling the
// page faults of every other compile thread: on 2 cores the header saves ~10% of the CPU, on the
// 16-core GPU machines the cold build ran each compile 2.5x longer than alone, half of it off the
// CPU (docs/kernels.md).
constexpr unsigned kPchMaxThreads = 4;
bool pch_wanted(const char* env, unsigned hardware_threads);
// The toolkit include directory passed to NVRTC (for cuda_fp16.h, cuda_bf16.h), found beside the
// loaded library, else under $CUDA_HOME or /usr/local/cuda; empty when none has cuda_fp16.h.
std::string cuda_include_dir();
// Targets this NVRTC can compile for, as compute capabilities (75, 80, 90, ...).
std::vector<int> nvrtc_supported_archs();

// The options every compile gets before the caller's: -std=c++17, --gpu-architecture=<arch>,
// -default-device. The include path (-I<cuda_include_dir()>) is added too but not listed here:
// it depends on the installation, not on what is compiled, so it stays out of the cache key.
std::vector<std::string> default_compile_options(const std::string& arch);

// Compiles `source` (program name `name`.cu, so log lines read "k_12.cu(3): error: ...") for
// `arch`: "sm_90" (cubin and PTX) or "compute_90" (PTX only). Failures throw:
//   Error(NoDevice)    no libnvrtc;
//   Error(Unsupported) an arch this NVRTC cannot target, or an option it rejects;
//   Error(Internal)    the source does not compile (Grape generated it, so it is Grape's bug); the
//                      message holds the kernel name, NVRTC's full log and the numbered source.
CompileResult compile_cuda(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& options = {});

// "  1 | first line\n  2 | second line\n": source listings in error messages.
std::string number_lines(const std::string& source);

}  // namespace grape::jit
