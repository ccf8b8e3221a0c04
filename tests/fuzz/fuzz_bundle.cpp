// libFuzzer target for the kernel bundle reader (jit/kernel_bundle.h): any input must either parse
// or throw grape::Error, never crash, hang or allocate without bound. Random bytes rarely get past
// the header and checksum, so an input whose first byte is odd is taken as the payload instead:
// this Grape's version string is put in front, and the result is compressed and framed with a
// correct header, which takes the fuzzer into the field-by-field reader.
#include <zstd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "jit/hash.h"
#include "jit/kernel_bundle.h"

namespace {

std::string u64(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>(v >> (8 * i));
  return out;
}

std::string framed(const std::string& payload) {
  std::string c(ZSTD_compressBound(payload.size()), '\0');
  c.resize(ZSTD_compress(c.data(), c.size(), payload.data(), payload.size(), 1));
  return std::string("GRAPEKB\x01", 8) + u64(grape::jit::kBundleFormatVersion) + u64(payload.size()) +
         u64(grape::jit::xxh64(payload.data(), payload.size())) + u64(c.size()) + c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (!input.empty() && (input[0] & 1)) {
    const std::string version = grape::jit::grape_version();
    input = framed(u64(version.size()) + version + input.substr(1));
  }
  try {
    auto b = grape::jit::KernelBundle::parse(input, "fuzz.grpkb");
    for (const auto& k : b->kernels())
      if (k.cubin.empty() && k.ptx.empty()) std::abort();  // parse promised every kernel has code
  } catch (const grape::Error&) {
  }
  return 0;
}
