// libFuzzer target for the .npy reader: any input must either parse or throw grape::Error, never
// crash, hang, leak or allocate without bound. A successfully parsed input must survive a
// write/read round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape::Tensor t;
  try {
    t = grape::read_npy_bytes(data, size, "fuzz.npy");
  } catch (const grape::Error&) {
    return 0;
  }
  std::vector<uint8_t> bytes = grape::serialize_npy(t);
  grape::Tensor u = grape::read_npy_bytes(bytes.data(), bytes.size(), "roundtrip");
  if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes()) std::abort();
  if (t.nbytes() && std::memcmp(u.raw(), t.raw(), t.nbytes()) != 0) std::abort();
  return 0;
}
