// What an expression lowers to: a tensor in the IR, or something the compiler knows statically
// (an integer, a symbolic dimension, a tuple, a partially named weight, a dtype, a string).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace grape::frontend {

struct Val {
  enum class Kind { Error, Tensor, Int, Float, Bool, Dim, Tuple, WeightPath, DType, String };
  Kind kind = Kind::Error;
  ir::ValueId v = ir::kNoValue;  // Tensor
  int64_t i = 0;                 // Int, Bool
  double f = 0;                  // Float
  ir::Dim dim;                   // Dim
  std::vector<Val> elems;        // Tuple
  std::string text;              // WeightPath (unprefixed, dotted), String
  DType dtype = DType::F32;      // DType
  // For tensors derived from a statically bounded for-loop index: that loop's id. Using such a
  // value where a compile-time integer is required unrolls the loop.
  int loop_index = -1;

  static Val error() { return {}; }
  static Val tensor(ir::ValueId v, int loop_index = -1) {
    Val r;
    r.kind = Kind::Tensor;
    r.v = v;
    r.loop_index = loop_index;
    return r;
  }
  static Val integer(int64_t x) {
    Val r;
    r.kind = Kind::Int;
    r.i = x;
    return r;
  }
  static Val boolean(bool b) {
    Val r;
    r.kind = Kind::Bool;
    r.i = b;
    return r;
  }
  static Val floating(double x) {
    Val r;
    r.kind = Kind::Float;
    r.f = x;
    return r;
  }
  static Val dimension(const ir::Dim& d) {
    if (d.is_const()) return integer(d.const_value());
    Val r;
    r.kind = Kind::Dim;
    r.dim = d;
    return r;
  }
  static Val tuple(std::vector<Val> elems) {
    Val r;
    r.kind = Kind::Tuple;
    r.elems = std::move(elems);
    return r;
  }
  bool is_error() const { return kind == Kind::Error; }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_static_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
};

}  // namespace grape::frontend
