// Ahead-of-time kernel bundles: the compiled kernels of a program, for one or more targets, in one
// file, so that a session on another machine (or in a container without the CUDA toolkit) starts
// with no NVRTC at all: `grape compile FILE --arch sm_90 --bundle K.grpkb`, then
// `grape run FILE --bundle K.grpkb ...` (grp_session_options.kernel_bundle in the C API).
//
// A bundle is keyed by the kernels' sources, like the kernel cache (jit/kernel_cache.h), but
// without the NVRTC version: a cubin stays valid whichever NVRTC the loading machine has, or none.
// A kernel that is not in the bundle (another -D value, another Grape version, a target the bundle
// lacks) is compiled as usual when NVRTC is there; without NVRTC that is the usual "no NVRTC" error.
//
// File: magic "GRAPEKB\x01" (8 bytes), u32 format version, u32 0, u64 payload size, u64 XXH64 of
// the payload, u64 compressed size, then the zstd-compressed payload:
//   str grape version, str nvrtc version, u64 count, count x {u64 key high, u64 key low, str arch,
//   str cubin, str ptx}
// (integers little-endian; str: u64 length, then the bytes). Every length is checked against what
// is left, so a truncated, corrupt or hostile file is an error naming the file, never a crash.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/hash.h"
#include "jit/kernel_cache.h"

namespace grape::jit {

inline constexpr std::uint32_t kBundleFormatVersion = 1;

struct BundledKernel {
  Hash128 key;  // bundle_key(source, arch, options)
  std::string arch;
  std::vector<std::uint8_t> cubin;  // empty for a virtual target (then ptx)
  std::string ptx;
};

// The key of compile_cuda(source, _, arch, options) in a bundle: the kernel cache's key inputs with
// the NVRTC version left out.
Hash128 bundle_key(const std::string& source, const std::string& arch, const std::vector<std::string>& options);

// Writes `kernels` to `path` (a temporary file beside it, renamed into place). Throws Error(IO)
// naming the path.
void write_bundle(const std::string& path, const std::vector<BundledKernel>& kernels,
                  const std::string& nvrtc_version);

class KernelBundle {
 public:
  // Reads and checks the whole file. Throws Error(IO) when it cannot be read (or is not a regular
  // file), Error(Format) when it is not a valid bundle of this Grape version; both name the path.
  static std::shared_ptr<const KernelBundle> load(const std::string& path);
  // The same checks on a file's bytes; `name` stands for the path in messages (the fuzzer's entry).
  static std::shared_ptr<const KernelBundle> parse(const std::string& file, const std::string& name);

  const std::string& path() const { return path_; }
  const std::string& nvrtc_version() const { return nvrtc_version_; }  // of the machine that built it
  const std::vector<BundledKernel>& kernels() const { return kernels_; }
  const BundledKernel* find(const Hash128& key) const;

 private:
  std::string path_, nvrtc_version_;
  std::vector<BundledKernel> kernels_;
};

// Makes every later compile_cached in this process look in `bundle` first (thread-safe; a bundle
// already in use is not added twice).
void use_bundle(std::shared_ptr<const KernelBundle> bundle);
// The kernel of (source, arch, options) from the bundles in use, if one has it.
std::optional<CompileResult> find_bundled(const std::string& source, const std::string& arch,
                                          const std::vector<std::string>& options);

}  // namespace grape::jit
