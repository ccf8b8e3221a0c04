// Owns a grp_error for a test: ok(), code() and msg() read it, the destructor frees it.
#pragma once
#include <string>

#include "grape.h"

struct Err {
  grp_error* e;
  explicit Err(grp_error* x) : e(x) {}
  ~Err() { grp_error_free(e); }
  Err(const Err&) = delete;
  Err& operator=(const Err&) = delete;
  bool ok() const { return e == nullptr; }
  grp_code code() const { return grp_error_code(e); }
  std::string msg() const { return e ? grp_error_message(e) : ""; }
};
