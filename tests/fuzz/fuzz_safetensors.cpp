// libFuzzer target for the safetensors reader: any input must either parse or throw grape::Error,
// never crash, hang, leak or allocate without bound. A successfully parsed input must survive a
// write/read round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "runtime/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape::SafetensorsContents c;
  try {
    c = grape::read_safetensors_contents_bytes(data, size, "fuzz.safetensors");
  } catch (const grape::Error&) {
    return 0;
  }
  // Round trip: what we read, we can write, and reading it back gives the same tensors.
  std::vector<uint8_t> bytes;
  try {
    bytes = grape::serialize_safetensors(c.tensors, c.metadata);
  } catch (const grape::Error&) {
    return 0;  // e.g. a tensor named "__metadata__" cannot exist after a read; names are UTF-8
  }
  grape::SafetensorsContents back = grape::read_safetensors_contents_bytes(bytes.data(), bytes.size(), "roundtrip");
  if (back.tensors.size() != c.tensors.size() || back.metadata != c.metadata) std::abort();
  for (const auto& [name, t] : c.tensors) {
    auto it = back.tensors.find(name);
    if (it == back.tensors.end()) std::abort();
    const grape::Tensor& u = it->second;
    if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes()) std::abort();
    if (t.nbytes() && std::memcmp(u.raw(), t.raw(), t.nbytes()) != 0) std::abort();
  }
  return 0;
}
