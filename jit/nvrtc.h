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
// The precompiled header's policy: on unless $GRAPE_NVRTC_PCH is "0". Measured on a fresh 16-core
// H100 machine (run 139, truly cold builds of every gpt2.grp kernel, alternating): 8.97 / 10.37 s
// with it, 14.84 / 15.81 s without (docs/kernels.md, "Cold builds"). The session before had turned it
// off on > 4 hardware threads on a 2-core strace (33,000 mmaps of the .pch per build) without
// measuring; the measurement reversed that.
bool pch_wanted(const char* env);
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
