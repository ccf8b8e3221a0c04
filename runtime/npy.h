// NumPy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// reader and writer for single dense arrays.
//
// Reading: format versions 1.0, 2.0 and 3.0 (3.0: UTF-8 header). The header dict literal is
// parsed strictly: exactly the keys 'descr', 'fortran_order' and 'shape' (no duplicates), Python
// string / True / False / tuple-of-int literals only, at most 10000 bytes (numpy's own safety
// limit). Supported dtypes and their Grape types:
//   '<f4' -> f32, '<f2' -> f16, '<i4' -> i32, '<i8' -> i64, '|b1' -> bool (any byte-order mark
//   is accepted for the 1-byte bool; nonzero bytes read as true).
// Everything else is a grape::Error with code Format (IO for open/read failures) naming the file:
// big-endian arrays ('>f4'), object arrays ('|O'), structured dtypes, other dtypes ('<f8', '<u2',
// ...), Fortran-ordered arrays (unless the layout equals C order: at most one dim > 1), negative
// or overflowing shapes, bad magic, unknown versions, truncated files and trailing data.
// Scalars (shape ()) and empty arrays are supported.
//
// Writing: version 1.0 (2.0 only if the header would not fit), C order, the header padded with
// spaces and a newline so the data starts at a multiple of 64 bytes (as numpy writes it).
// bf16 has no numpy dtype: bf16 tensors are written as '<f4' (float32; the conversion is exact),
// so reading such a file back gives an f32 tensor. Writes are atomic (temporary file + rename).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace grape {

inline constexpr size_t kNpyMaxHeaderSize = 10000;

Tensor read_npy(const std::string& path);
Tensor read_npy_bytes(const uint8_t* data, size_t size, const std::string& name_for_errors);

// Throws grape::Error (InvalidArgument) for an undefined tensor, IO if the file cannot be written.
void write_npy(const std::string& path, const Tensor& t);
// The same bytes as write_npy writes, in memory.
std::vector<uint8_t> serialize_npy(const Tensor& t);

}  // namespace grape
