// The CPU reference executor: runs a predicated IR function with obviously correct semantics.
// Ops whose predicate is false are skipped and leave their results undefined; `select` passes one
// operand through; device loops run while their device-computed condition holds. Every result's
// shape is checked against its IR type, so front-end bugs surface as internal errors here.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "base/error.h"
#include "runtime/run_control.h"
#include "runtime/tensor.h"

namespace grape::cpu {

struct ExecEnv {
  const std::map<std::string, Tensor>* weights = nullptr;  // by file name
  std::map<std::string, Tensor>* state = nullptr;          // updated by state_write
  std::map<std::string, int64_t> dims;                     // values of the symbolic dims
  std::function<SourcePosition(Span)> locate;              // an op's position, for errors (throw_at)
  // The loop trip cap, deadline and interrupt flag, checked before every op and loop trip
  // (null: the default cap, no deadline, no interrupt).
  const RunControl* control = nullptr;
};

// Runs `f` on inputs given in parameter order. Throws grape::Error on failure (the state map is
// then left untouched).
std::vector<Tensor> execute(const ir::Function& f, const std::vector<Tensor>& inputs, ExecEnv& env);

}  // namespace grape::cpu
