// Hashes for the kernel cache: XXH3-128 names an entry, XXH64 checks its payload. Thin wrappers over
// xxHash (header-only use), so no other file includes <xxhash.h>.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace grape::jit {

struct Hash128 {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  // 32 lowercase hex digits, high half first (XXH3's canonical order).
  std::string hex() const;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

Hash128 xxh3_128(const void* data, std::size_t size);
std::uint64_t xxh64(const void* data, std::size_t size);

// Streaming XXH3-128 over a sequence of fields. Each field is length-prefixed, so ("ab", "c") and
// ("a", "bc") hash differently.
class FieldHasher {
 public:
  FieldHasher();
  ~FieldHasher();
  FieldHasher(const FieldHasher&) = delete;
  FieldHasher& operator=(const FieldHasher&) = delete;

  FieldHasher& field(std::string_view bytes);
  FieldHasher& field(std::uint64_t value);
  Hash128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace grape::jit
