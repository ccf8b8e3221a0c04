// Reading a caller's options struct under the struct_size rules of grape.h: at least the first
// version's fields; a caller built against a newer header may pass a larger struct whose unknown
// tail is all zero (its defaults); a nonzero unknown tail is refused rather than ignored.
#pragma once
#include <cstring>
#include <string>

#include "capi/src/internal.h"

namespace grape::capi {

// The *_options_init() of grape.h: the defaults' first `size` bytes (a zero, i.e. default, tail
// beyond the struct this library knows) and struct_size = size. A size below the first version's
// is written too, so that read_options() reports it.
template <class T>
void init_options(T* opts, size_t size, const T& defaults) {
  if (opts == nullptr || size < sizeof(size_t)) return;
  unsigned char* out = reinterpret_cast<unsigned char*>(opts);
  std::memcpy(out, static_cast<const void*>(&defaults), size < sizeof(T) ? size : sizeof(T));
  if (size > sizeof(T)) std::memset(out + sizeof(T), 0, size - sizeof(T));
  opts->struct_size = size;
}

template <class T>
T read_options(const T* given, const T& defaults, size_t min_size, const char* what) {
  if (given == nullptr) return defaults;
  size_t n = given->struct_size;
  if (n < min_size)
    invalid(std::string(what) + ": struct_size is " + std::to_string(n) + ", at least " + std::to_string(min_size) +
            " expected (initialise it with the *_default_options() function)");
  if (n > sizeof(T)) {
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(given) + sizeof(T);
    for (size_t i = 0; i < n - sizeof(T); ++i)
      if (tail[i] != 0)
        throw Error(ErrorCode::Unsupported, std::string(what) + ": struct_size " + std::to_string(n) +
                                                " sets fields this library (version " GRAPE_VERSION_STRING
                                                ") does not know; it is older than the grape.h the caller was built with");
    n = sizeof(T);
  }
  T out = defaults;
  std::memcpy(static_cast<void*>(&out), given, n);
  out.struct_size = sizeof(T);
  return out;
}

}  // namespace grape::capi
