// One line of a `grape batch` request file, read into host tensors of the entry's dtypes:
//   {"id": "r1", "inputs": {"x": [[0.5, 1.0]], "n": 3, "mask": {"npy": "m.npy"}}}
//   {"id": "r2", "inputs": {"x": {"npy": "all.npy", "rows": [16, 24]}}}     rows 16..23 of a file
// A request that cannot be read keeps its line number and the reason, and becomes an error
// result; it never stops the other requests.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cli/batch_signature.h"
#include "grape.h"

namespace grape::cli {

class MappedFile;

// A dense C-order host tensor. Its bytes are shared and may be a view into a larger buffer: an
// --input value serves every request, and the rows of a shared .npy file are not copied.
struct HostTensor {
  grp_dtype dtype = GRP_F32;
  std::vector<int64_t> shape;
  std::shared_ptr<const uint8_t> bytes;  // keeps the buffer it points into alive
  size_t size = 0;                       // bytes
  // The mapped .npy file the bytes lie in (map_npy), which `bytes` keeps alive; null for memory.
  // Its rows are checked after they are read (MappedFile::check): another process may truncate it.
  const MappedFile* mapped = nullptr;

  size_t nbytes() const { return size; }
  const void* data() const { return bytes.get(); }

  // A tensor that owns `data`.
  static HostTensor owning(grp_dtype dtype, std::vector<int64_t> shape, std::vector<uint8_t> data);
  // A tensor that keeps `t` alive and views its bytes.
  static HostTensor of(struct grp_tensor* t);
};

struct Request {
  size_t line = 0;  // 1-based line number in the request file
  bool has_id = false;
  std::string id;                  // the id as text: a string's value, or an integer's digits
  std::string id_json;             // the id as it appears in results.jsonl ("null" without one)
  uint64_t id_hash = 0;            // fnv1a64(id) when has_id: the shard and the duplicate check use it
  std::vector<HostTensor> inputs;  // one per parameter of the entry
  int64_t rows = 1;                // the size of the batch dim (1 when the entry is not batchable)
  std::string error;               // non-empty: rejected before any call; the message names file and line
};

// The .npy files that requests take rows of ({"npy": PATH, "rows": [a, b]}), each mapped (or,
// in a form the mapping does not take, read) once and kept for the whole run. Thread-safe.
class NpyCache {
 public:
  // ApiError when the file cannot be read.
  std::shared_ptr<const HostTensor> get(const std::string& path);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const HostTensor>> files_;
};

// What every request is read against.
struct RequestContext {
  const Signature* sig = nullptr;
  std::string file;                       // the request file as named in messages ("<stdin>")
  std::string base_dir;                   // relative {"npy": path} resolve against it
  std::vector<const HostTensor*> shared;  // per parameter: the --input value, or null
  NpyCache* npy_rows = nullptr;           // the files of {"npy": ..., "rows": ...} values
};

// The shared .npy file the last request named, as one parsing thread remembers it: consecutive
// requests mostly name the same file, whose path then need not be resolved and looked up again.
struct NpyMemo {
  std::string name;  // as the request wrote it
  std::string path;  // resolved
  std::shared_ptr<const HostTensor> file;
};

// Reads one non-blank line. Never throws for bad content: the error is in Request::error. `memo`
// may be shared by the calls of one thread.
Request parse_request(std::string_view text, size_t line, const RequestContext& ctx, NpyMemo* memo = nullptr);

// Why t cannot be parameter p's value (dtype, rank or a fixed dim); empty when it can. `source`
// follows the parameter's name in the message (" (file.npy)").
std::string mismatch(const HostTensor& t, const ParamInfo& p, const std::string& source);

// Reads a .npy file into a host tensor (ApiError on failure).
HostTensor read_npy(const std::string& path);

}  // namespace grape::cli
