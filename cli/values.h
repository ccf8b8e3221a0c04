// Element values of host tensors as the command line reads and prints them: every dtype as a
// double, and doubles (or exact integers) stored into every dtype with the library's rounding.
#pragma once
#include <cstddef>
#include <cstdint>

#include "grape.h"

namespace grape::cli {

// The value of element i of `data` as a double (f16 and bf16 exactly, i64 rounded past 2^53).
double element(grp_dtype dtype, const void* data, size_t i);

// Stores v as element i of `data`: floats rounded to nearest even (f16, bf16 too), bool as v != 0.
// Integer dtypes take store_integer; v must then already be integral and in range.
void store_float(grp_dtype dtype, void* data, size_t i, double v);
void store_integer(grp_dtype dtype, void* data, size_t i, int64_t v);

bool is_float_dtype(grp_dtype dtype);

}  // namespace grape::cli
