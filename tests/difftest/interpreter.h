// A test-only tree-walking interpreter of the .grp AST with REAL jumps: `if` runs one branch,
// loops loop, `break`/`continue` leave the loop body at once. It is the oracle for the front end's
// predication rewriter (differential tests compare it with Model/Session on the CPU executor).
//
// Numerics are delegated to cpu::run_kernel, so any difference it finds is a control-flow (or
// lowering) difference, not a kernel one. It covers the subset of .grp used by the difftest cases
// and the random program generator, assumes the program type-checks, and throws InterpError for
// anything it does not support.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lang/ast.h"
#include "lang/source.h"
#include "runtime/tensor.h"

namespace grape::difftest {

struct InterpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses `source`; throws InterpError with the rendered diagnostics if it has syntax errors.
// The SourceManager must outlive nothing: the returned Program owns all it needs.
ast::Program parse_or_throw(const std::string& source, const std::string& name);

// One interpreter instance plays one Session: its state persists across call()s.
class Interpreter {
 public:
  explicit Interpreter(ast::Program program, std::map<std::string, int64_t> defines = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs `entry` ("" means "main") with inputs bound by parameter name; returns the results in
  // declaration order (one tensor, or the elements of a tuple result).
  std::vector<Tensor> call(const std::string& entry,
                           const std::vector<std::pair<std::string, Tensor>>& inputs);

  // Current value of a state tensor (undefined before the first call binds its shape).
  Tensor state(const std::string& name) const;
  std::vector<std::string> state_names() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::difftest
