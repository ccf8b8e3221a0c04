// Small file helpers shared by the weight and tensor file formats: whole-file reads, positioned
// reads of an open file, and atomic writes (temporary file in the same folder + rename, so a
// failure never leaves a partial file at the destination).
// Every failure throws grape::Error with code IO and a message naming the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grape {

// The whole content of a regular file of at most max_size bytes (larger files are refused before
// anything is read). Other files (FIFOs, devices, directories) are refused without blocking.
std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_size = UINT64_MAX);

// A read-only regular file, open for positioned reads; anything else (a FIFO, a device, a
// directory) is refused without blocking (used to read big weight files without
// holding the whole file in memory twice).
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly n bytes at offset into dst (throws IO on a short read).
  void read_at(uint64_t offset, void* dst, size_t n) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Writes the concatenation of `parts` to path atomically: a temporary file beside it is written,
// flushed to disk and renamed over path. On any failure the temporary file is removed and the
// destination is left untouched.
struct ByteSpan {
  const void* data;
  size_t size;
};
void write_file_atomic(const std::string& path, const std::vector<ByteSpan>& parts);
void write_file_atomic(const std::string& path, const std::string& content);

// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace grape
