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
// not wait for the whole file. The tensor's `mapped` is the file, for MappedFile::check.
std::shared_ptr<const HostTensor> map_npy(const std::string& path);

// The run cannot go on: a file it maps changed size (or could not be read) while the run used it,
// so values read from it may be zeros instead of the file's. Not a request's error (every later
// request that reads the file is hit too): the run stops, resumably. Deliberately not an ApiError,
// which a call answers by retrying its requests one by one and failing them.
struct MappedFileChanged {
  std::string message;  // "<file> changed size while it was being read (truncated?)"
};

// A .npy file that map_npy mapped, kept for the run (NpyCache).
//
// Another process may truncate the file while the run reads it. A read of a mapped page that
// now lies wholly past the end of the file raises SIGBUS, which would kill the run. So while any
// file is mapped, a SIGBUS handler is installed: for a fault inside a live mapping it maps zero
// pages over the rest of that mapping and returns, so the read completes (with zeros) and every
// later read of those pages does too, and it marks the file. A fault anywhere else goes on to the
// handler that was there before (by default: the process dies of SIGBUS, as without this one).
//
// Reads past the new end within the file's new last page raise nothing: the OS zero-fills them.
// Linux removes the pages past that page from the mappings first (truncate_pagecache; tmpfs
// likewise), so after such a read, a read of the file's old last page faults: check() makes that
// read, and looks at the file's size (fstat) only when the worker read the old last page itself,
// or the file is marked. (A file system that zeroes the tail before it shrinks the file, as XFS
// does, shows the zeros for a moment at the old size: a rewrite, which neither check sees.)
//
// So the reads stay plain memory reads (the fast path: rows that lie end to end go to the call
// where they are), and the worker calls check() once per call and file, after the call's inputs
// were read and before it runs; it costs a system call only for calls that read the file's last
// page (an fstat per call cost 5% of a run of single-row calls). Reading the rows with pread
// instead would need no signal handler, but costs a second copy of every row that now goes to
// the call where it lies, and a system call per request where rows are not end to end; jumping
// out of the handler (siglongjmp) cannot be done safely, since the read may be inside the
// library's copy.
class MappedFile {
 public:
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Throws MappedFileChanged when the file is shorter now than when it was mapped, or a read of
  // it faulted. Called after the reads: a truncation before them is seen here, and one after
  // them did not touch what they read. `last_page`: whether they read the file's last page
  // (in_last_page). A file rewritten in place at the same size is not seen.
  void check(bool last_page) const;
  // Whether the bytes [p, p + n) of the mapping reach into the file's last page.
  bool in_last_page(const void* p, size_t n) const { return static_cast<const uint8_t*>(p) + n > last_page_; }
  const std::string& path() const { return path_; }

  struct Slot;  // batch_npy.cpp

 private:
  friend std::shared_ptr<const HostTensor> map_npy(const std::string& path);
  MappedFile(std::string path, int fd, uint8_t* base, size_t size);

  std::string path_;
  int fd_;  // kept open for fstat: the path may name another file by now
  uint8_t* base_;
  size_t size_;               // the file's size when mapped (the mapping is whole pages)
  const uint8_t* last_page_;  // the page that holds the file's last byte
  Slot* slot_;                // its entry in the table of live mappings (for the SIGBUS handler)
};

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
