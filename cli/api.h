// What every grape command needs from the C API: owning handles, errors turned into exceptions,
// loading a model with its weights and opening a session as the command line asks.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/args.h"
#include "grape.h"

namespace grape::cli {

// A failed C API call (or a CLI-level error with a grp_code), carried to main_impl.
struct ApiError {
  grp_code code;
  std::string message;
  // The message is rendered diagnostics (`file:line:col: error: ...`), which carry their own
  // "error:" prefix.
  bool rendered = false;
};

// Takes ownership of e; throws ApiError if it is an error.
void check(grp_error* e, const std::string& prefix = "");

// s as a JSON string literal.
std::string json_string(const std::string& s);

struct ModelDeleter {
  void operator()(grp_model* m) const { grp_model_destroy(m); }
};
struct SessionDeleter {
  void operator()(grp_session* s) const { grp_session_destroy(s); }
};
struct TensorDeleter {
  void operator()(grp_tensor* t) const { grp_tensor_destroy(t); }
};
using ModelPtr = std::unique_ptr<grp_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<grp_session, SessionDeleter>;
using TensorPtr = std::unique_ptr<grp_tensor, TensorDeleter>;

// Loads FILE with the -D defines and compile switches of `o`.
ModelPtr load(const std::string& file, const Options& o);

// Loads o.files[0] and sets its weights from --weights / --random-weights (a usage error when the
// model declares weights and neither is given). `cmd` names the command in usage errors.
ModelPtr load_with_weights(const Options& o, const char* cmd);

// A session of o.entry on o.backend / o.executor / the given device, with the run bounds of `o`.
// Prints the --backend auto fallback notice once when `announce` is set.
SessionPtr open_session(grp_model* model, const Options& o, int device, bool announce);

// The --input NAME=F.npy tensors, read in the order given; each paired with its parameter index.
// Errors: an unreadable file, an unknown parameter name, a name given twice.
std::vector<std::pair<size_t, TensorPtr>> read_named_inputs(grp_session* s, const Options& o);

}  // namespace grape::cli
