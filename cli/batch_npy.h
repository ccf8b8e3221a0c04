// The .npy files of `grape batch` that carry many requests' rows: input files mapped into memory
// instead of read up front ({"npy": PATH, "rows": [a, b]}), and the output files of --outputs
// npy-rows, which take the rows of many calls in large sequential writes and are fsynced once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/batch_request.h"
#include "grape.h"

namespace grape::cli {

// The file mapped read-only, when its header is the plain form numpy and Grape write
// ({'descr': '<f2', 'fortran_order': False, 'shape': (N, ...), } with a dtype that needs no
// conversion) and its size matches the header; null otherwise, for read_npy to read it (and to
// report what is wrong). The pages are read by the OS as rows are used, so the first call does
// not wait for the whole file. ApiError when the file cannot be opened.
std::shared_ptr<const HostTensor> map_npy(const std::string& path);

// One .npy file of --outputs npy-rows, written as calls finish: the rows are appended with one
// write per call, and the header, written first with room for any row count, is rewritten with
// the real count when the file is finished. It is created under a temporary name and renamed
// into place by finish(), after an fsync, so that no result line ever names a partial file.
class NpyRowsFile {
 public:
  // `row_shape`: the dims after the first; `dtype`: the output's (bf16 is written as f32, as
  // grape run does). ApiError when the file cannot be created.
  NpyRowsFile(std::string path, grp_dtype dtype, std::vector<int64_t> row_shape);
  ~NpyRowsFile();  // a file not finished is removed
  NpyRowsFile(const NpyRowsFile&) = delete;
  NpyRowsFile& operator=(const NpyRowsFile&) = delete;

  // Whether rows of this dtype and row shape may go to this file.
  bool fits(grp_dtype dtype, const int64_t* row_shape, size_t rank) const;
  // Appends `rows` rows (`nbytes` bytes in the output's dtype); returns the index of the first.
  int64_t append(const void* data, int64_t rows, size_t nbytes);
  int64_t rows() const { return rows_; }
  uint64_t bytes() const { return offset_; }
  // Rewrites the header, fsyncs, closes and renames the file into place.
  void finish();

 private:
  std::string header(int64_t rows) const;
  void write_all(const void* data, size_t n, uint64_t at);

  std::string path_, tmp_;
  grp_dtype dtype_;
  std::vector<int64_t> row_shape_;
  size_t header_size_ = 0, len_bytes_ = 2;
  int fd_ = -1;
  int64_t rows_ = 0;
  uint64_t offset_ = 0;
};

// The part of a temporary file's name that follows the final name ("x.npy" + it): a run killed
// in the middle of an npy-rows file leaves one, which the next run in the folder removes.
extern const char* const kTempInfix;

// Removes what killed runs left in DIR/outputs (files named *kTempInfix*).
void remove_stale_temporaries(const std::string& outputs_dir);

}  // namespace grape::cli
