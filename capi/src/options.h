// Reading a caller's options struct under the struct_size rules of grape.h: at least the first
// version's fields; a caller built against a newer header may pass a larger struct whose unknown
// tail is all zero (its defaults); a nonzero unknown tail is refused rather than ignored.
#pragma once
#include <cstring>
#include <string>

#include "capi/src/internal.h"

namespace grape::capi {

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
