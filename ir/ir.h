// The predicated IR. A Function is a Block of Operations in SSA form over numbered values. Control
// flow exists only as (1) an optional predicate operand on an op — when the predicate is false
// the op does nothing and its results are undefined; (2) `select` ops that merge values; and
// (3) `loop` ops: a device loop whose continue-condition is computed on the device:
//
//   %r... = loop(%cond0, %init...) max N { ^(%carried...): ...; yield %cond_next, %next... }
//
// runs the body while the condition holds (at most N times if N >= 0) and returns the final
// carried values (the initial ones if it never ran).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dim.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "lang/source.h"

namespace grape::ir {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct Type {
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  size_t rank() const { return shape.size(); }
  std::string str() const;  // "f16[B, 768]"
  friend bool operator==(const Type& a, const Type& b) { return a.dtype == b.dtype && a.shape == b.shape; }
  friend bool operator!=(const Type& a, const Type& b) { return !(a == b); }
};

// One axis of a slice. `start` is static unless `dynamic` names the operand holding a device
// scalar start (which is wrapped and clamped at run time; see cpu::resolve_dynamic_start).
struct SliceAxis {
  Dim start;
  Dim size;
  int64_t step = 1;
  bool squeeze = false;
  int dynamic = -1;
  friend bool operator==(const SliceAxis&, const SliceAxis&) = default;
};

struct Attrs {
  DType dtype = DType::F32;
  double fvalue = 0;
  int64_t ivalue = 0;
  std::vector<int64_t> axes;
  int64_t axis = 0;
  int64_t k = 0;
  bool keepdims = false;
  double eps = 0;
  bool approx_tanh = false;
  std::vector<Dim> shape;
  std::vector<SliceAxis> slices;
  std::string name;         // Weight, StateRead, StateWrite: the tensor's name
  int64_t index = 0;        // Param: the parameter's position
  int64_t max_trips = -1;   // Loop: the `max N` bound, -1 if none
  friend bool operator==(const Attrs&, const Attrs&) = default;
};

struct Block;

struct Operation {
  Op op = Op::Constant;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  ValueId pred = kNoValue;  // bool[] value; kNoValue: always runs
  Attrs attrs;
  Span loc;
  std::shared_ptr<Block> body;  // Loop only
};

struct Block {
  std::vector<ValueId> params;  // Loop body: the carried values of this iteration
  std::vector<Operation> ops;
  std::vector<ValueId> yields;  // Loop body: continue condition, then next carried values;
                                // function body: the results
};

struct ValueInfo {
  Type type;
  std::string hint;  // source name, for readable dumps
};

struct Param {
  std::string name;
  Type type;
  ValueId value = kNoValue;
  Span loc;
};

struct Function {
  std::string name;
  Span loc;
  std::vector<Param> params;
  std::vector<Type> result_types;
  Block body;
  std::vector<ValueInfo> values;
  std::vector<std::string> symbols;  // symbolic dims, each bound by some parameter's shape

  ValueId new_value(Type type, std::string hint = {});
  const Type& type(ValueId v) const { return values.at(static_cast<size_t>(v)).type; }
};

struct WeightInfo {
  std::string name;  // full name in the weights file (prefix applied)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Span loc;
};

struct StateInfo {
  std::string name;
  Type type;  // may use symbolic dims, bound per session from the entry's parameters
  enum class Init { Zeros, Ones, Full } init = Init::Zeros;
  double fill = 0;
  Span loc;
};

struct Module {
  std::string name;
  std::vector<WeightInfo> weights;
  std::vector<StateInfo> states;
  std::vector<Function> functions;  // the entry points
  const Function* find(const std::string& name) const;
};

// Visits every op of a block and, recursively, of loop bodies (pre-order).
template <class F>
void for_each_op(const Block& b, F&& f) {
  for (const auto& op : b.ops) {
    f(op);
    if (op.body) for_each_op(*op.body, f);
  }
}

}  // namespace grape::ir
