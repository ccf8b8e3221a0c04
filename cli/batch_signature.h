// The entry's signature as `grape batch` needs it, and the rule that decides whether requests may
// be stacked into one call (docs/batch.md, "Dynamic batching").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grape.h"

namespace grape::cli {

struct ParamInfo {
  std::string name;
  grp_dtype dtype;
  std::vector<int64_t> dims;       // -1 where symbolic
  std::vector<std::string> exprs;  // each dim as declared ("768", "B", "S+1")
  bool stacked = false;            // inputs: the leading dim is the batch dim
};

struct Signature {
  std::vector<ParamInfo> inputs;
  std::vector<ParamInfo> outputs;
  // The symbolic dim requests are stacked along; empty when the entry cannot be batched, and
  // `why_not` then says why.
  std::string batch_dim;
  std::string why_not;
  // The model has state: every call starts from a fresh state, as a new `grape run` would.
  bool stateful = false;

  int input_index(const std::string& name) const;
};

// Reads the signature of the session's entry and applies the batching rule: there is a symbol X
// that is the whole leading dim of every output and of at least one input, and X occurs in no
// other dim of any input or output. Inputs led by X are stacked; the others are shared by all
// the requests of one call, which must then give them identical values.
Signature read_signature(grp_session* s);

}  // namespace grape::cli
