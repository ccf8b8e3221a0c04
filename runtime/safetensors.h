// The safetensors weight format (https://github.com/huggingface/safetensors): reader and writer.
//
// Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON header (an object mapping
// tensor names to {"dtype", "shape", "data_offsets": [begin, end]} plus an optional
// "__metadata__" object of string -> string), then the data buffer; offsets are relative to the
// start of the data buffer.
//
// The reader validates like the reference implementation, plus a few strictness rules:
//   - N <= 100,000,000 and 8 + N <= file size (checked before anything is allocated);
//   - the header is valid UTF-8, starts with '{' and is one strict JSON object (RFC 8259), which
//     may be followed by whitespace (writers pad with spaces);
//   - duplicate keys anywhere in the header are an error (stricter than the reference);
//   - every tensor entry has exactly the fields dtype (string), shape (array of non-negative
//     integers) and data_offsets (array of two non-negative integers); unknown fields are an
//     error (stricter than the reference);
//   - dtypes F32 F16 BF16 I32 I64 BOOL are supported; other safetensors dtypes (F64, I8, U8, ...)
//     are rejected with "unsupported dtype F64 for tensor 'x'";
//   - end >= begin, numel * dtype size (overflow-checked) == end - begin;
//   - sorted by begin, the tensors are contiguous from 0 (no gaps, no overlap) and the last one
//     ends exactly at the end of the file (8 + N + last end == file size).
// BOOL bytes other than 0 are read as 1 (true).
// Every error is a grape::Error with code Format (IO for open/read failures) whose message names
// the file and the tensor or field, e.g.
//   model.safetensors: tensor 'h.0.attn.c_attn.weight': data_offsets [0, 100] hold 100 bytes but
//   shape [4, 8] of F16 needs 64
//
// The writer emits what the reference writer emits: the "__metadata__" entry first (omitted when
// empty), then the tensors in data order (larger dtypes first for alignment, then by name), the
// header padded with spaces to a multiple of 8 bytes. Writes are atomic (temporary file + rename).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor.h"

namespace grape {

// The largest header the reader accepts (the reference implementation's limit).
inline constexpr uint64_t kSafetensorsMaxHeaderSize = 100'000'000;

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry, if any
};

std::map<std::string, Tensor> read_safetensors(const std::string& path);
std::map<std::string, Tensor> read_safetensors_bytes(const uint8_t* data, size_t size,
                                                     const std::string& name_for_errors);
SafetensorsContents read_safetensors_contents(const std::string& path);
SafetensorsContents read_safetensors_contents_bytes(const uint8_t* data, size_t size,
                                                    const std::string& name_for_errors);

// Throws grape::Error (InvalidArgument) for an undefined tensor, a tensor named "__metadata__" or
// names/metadata that are not valid UTF-8; IO if the file cannot be written.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The same bytes as write_safetensors writes, in memory.
std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata = {});

// "F32", "F16", "BF16", "I32", "I64", "BOOL".
const char* safetensors_dtype_name(DType t);
// nullopt for anything but the six names above.
std::optional<DType> parse_safetensors_dtype(std::string_view name);

}  // namespace grape
