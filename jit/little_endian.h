// Fixed-width little-endian fields of Grape's binary files (the kernel cache's entries and kernel
// bundles: jit/kernel_cache.cpp, jit/kernel_bundle.cpp), independent of the host's byte order,
// and the errno text their I/O errors quote.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace grape::jit {

inline void put_le32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put_le64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint32_t get_le32(const unsigned char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline std::uint64_t get_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace grape::jit
