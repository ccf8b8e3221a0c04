// The library-level API the CLI (and later the C API) sits on: a Model is a compiled .grp program
// plus its weights (immutable once built, shareable); a Session runs one entry of a model on the
// CPU reference executor and owns the model's state between calls.
// Every failure throws grape::Error with a complete, user-facing message.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/tensor.h"

namespace grape {

namespace ir { struct Module; }

struct ModelOptions {
  std::map<std::string, int64_t> defines;  // -D NAME=VALUE const overrides
  bool optimize = true;                     // false: the IR exactly as lowered (for `grape ir --no-optimize`)
  bool require_loop_bounds = false;         // reject device loops without a trip bound
};

// A tensor type as declared: dtype plus dims, each dim either a number or a symbolic expression.
struct TensorSignature {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::string> dims;  // "4", "B", "S+1"
  std::string to_string() const;  // "f16[B, 768]"
};

class Model {
 public:
  static std::shared_ptr<Model> load_file(const std::string& path, const ModelOptions& opts = {});
  static std::shared_ptr<Model> load_source(const std::string& source, const std::string& name,
                                            const ModelOptions& opts = {});
  ~Model();

  void set_weights_file(const std::string& safetensors_path);
  void set_random_weights(uint64_t seed);
  // Weights by their full names (prefix included), validated like a file.
  void set_weights(const std::map<std::string, Tensor>& weights);
  bool has_weights() const;

  const ir::Module& module() const;
  std::vector<std::string> entry_names() const;
  // Weights as declared: full file names (prefix applied) with dtypes and concrete shapes.
  std::vector<TensorSignature> weight_signatures() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Model();
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  // entry: "" means "main". backend: "cpu" (the only one in this build) or "auto".
  Session(std::shared_ptr<const Model> model, const std::string& entry);
  ~Session();

  const std::vector<TensorSignature>& inputs() const;
  const std::vector<TensorSignature>& outputs() const;
  // Inputs bound by parameter name; every parameter must be given exactly once.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs);
  void reset_state();
  // Current value of a state tensor (undefined Tensor before the first run binds its shape).
  Tensor state(const std::string& name) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape
