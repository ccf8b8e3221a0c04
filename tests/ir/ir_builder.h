// A tiny builder for hand-written IR in tests: functions, ops (optionally predicated) and loops.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/printer.h"

namespace grape::ir::testing {

inline Type ty(DType d, std::vector<Dim> shape = {}) { return Type{d, std::move(shape)}; }
inline Type f32(std::vector<Dim> shape = {}) { return ty(DType::F32, std::move(shape)); }
inline Type f16(std::vector<Dim> shape = {}) { return ty(DType::F16, std::move(shape)); }
inline Type i32(std::vector<Dim> shape = {}) { return ty(DType::I32, std::move(shape)); }
inline Type boolean(std::vector<Dim> shape = {}) { return ty(DType::Bool, std::move(shape)); }

class Builder {
 public:
  explicit Builder(std::string name = "f") {
    f.name = std::move(name);
    cur_ = &f.body;
  }

  Function f;

  ValueId param(const std::string& name, Type t) {
    ValueId v = f.new_value(t, name);
    f.params.push_back(Param{name, t, v, {}});
    return v;
  }

  // Appends an op with one result of type `t` to the current block.
  ValueId op(Op o, std::vector<ValueId> operands, Type t, Attrs a = {}, ValueId pred = kNoValue) {
    ValueId r = f.new_value(std::move(t));
    Operation x;
    x.op = o;
    x.operands = std::move(operands);
    x.results = {r};
    x.attrs = std::move(a);
    x.pred = pred;
    cur_->ops.push_back(std::move(x));
    return r;
  }
  // An op without results (state_write).
  void effect(Op o, std::vector<ValueId> operands, Attrs a = {}, ValueId pred = kNoValue) {
    Operation x;
    x.op = o;
    x.operands = std::move(operands);
    x.attrs = std::move(a);
    x.pred = pred;
    cur_->ops.push_back(std::move(x));
  }

  ValueId cf32(double v) {
    Attrs a;
    a.dtype = DType::F32;
    a.fvalue = v;
    return op(Op::Constant, {}, f32(), a);
  }
  ValueId cf16(double v) {
    Attrs a;
    a.dtype = DType::F16;
    a.fvalue = v;
    return op(Op::Constant, {}, f16(), a);
  }
  ValueId ci32(int64_t v) {
    Attrs a;
    a.dtype = DType::I32;
    a.ivalue = v;
    return op(Op::Constant, {}, i32(), a);
  }
  ValueId cbool(bool v) {
    Attrs a;
    a.dtype = DType::Bool;
    a.ivalue = v;
    return op(Op::Constant, {}, boolean(), a);
  }
  void ret(std::vector<ValueId> vs) {
    f.body.yields = vs;
    f.result_types.clear();
    for (ValueId v : vs) f.result_types.push_back(f.type(v));
  }

  // A loop under construction: `begin_loop` creates the body parameters (one per carried init
  // value) and makes the body current; `end_loop` sets the yields, creates the results and
  // returns them.
  struct LoopHandle {
    size_t index;              // position of the loop op in the enclosing block
    Block* outer;
    std::vector<ValueId> params;
  };
  LoopHandle begin_loop(ValueId cond0, std::vector<ValueId> init, int64_t max_trips = -1) {
    Operation x;
    x.op = Op::Loop;
    x.operands = {cond0};
    x.operands.insert(x.operands.end(), init.begin(), init.end());
    x.attrs.max_trips = max_trips;
    x.body = std::make_shared<Block>();
    for (ValueId v : init) x.body->params.push_back(f.new_value(f.type(v)));
    LoopHandle h{cur_->ops.size(), cur_, x.body->params};
    cur_->ops.push_back(std::move(x));
    cur_ = cur_->ops.back().body.get();
    return h;
  }
  std::vector<ValueId> end_loop(const LoopHandle& h, ValueId cond, std::vector<ValueId> next) {
    Operation& x = h.outer->ops[h.index];
    x.body->yields = {cond};
    x.body->yields.insert(x.body->yields.end(), next.begin(), next.end());
    for (size_t i = 1; i < x.operands.size(); ++i) x.results.push_back(f.new_value(f.type(x.operands[i])));
    cur_ = h.outer;
    return x.results;
  }

  std::string print() const { return print_function(f); }

 private:
  Block* cur_;
};

inline Attrs named(const std::string& name) {
  Attrs a;
  a.name = name;
  return a;
}

inline Attrs axes(std::vector<int64_t> ax, bool keepdims = false) {
  Attrs a;
  a.axes = std::move(ax);
  a.keepdims = keepdims;
  return a;
}

}  // namespace grape::ir::testing
