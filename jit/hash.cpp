#include "jit/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>

namespace grape::jit {

std::string Hash128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

Hash128 xxh3_128(const void* data, std::size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  return {h.high64, h.low64};
}

std::uint64_t xxh64(const void* data, std::size_t size) { return XXH64(data, size, 0); }

struct FieldHasher::State {
  XXH3_state_t xxh;
};

FieldHasher::FieldHasher() : state_(std::make_unique<State>()) { XXH3_128bits_reset(&state_->xxh); }

FieldHasher::~FieldHasher() = default;

FieldHasher& FieldHasher::field(std::uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  XXH3_128bits_update(&state_->xxh, bytes, sizeof bytes);
  return *this;
}

FieldHasher& FieldHasher::field(std::string_view bytes) {
  field(static_cast<std::uint64_t>(bytes.size()));
  XXH3_128bits_update(&state_->xxh, bytes.data(), bytes.size());
  return *this;
}

Hash128 FieldHasher::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(&state_->xxh);
  return {h.high64, h.low64};
}

}  // namespace grape::jit
