#include "ir/passes/const_fold.h"

#include <cmath>
#include <optional>
#include <unordered_map>

#include "base/half.h"
#include "ir/passes/rewrite.h"

namespace grape::ir {
namespace {

struct Scalar {
  DType dtype;
  double f;   // float dtypes
  int64_t i;  // integer and bool dtypes
  bool integral() const { return !is_float(dtype); }
  double as_double() const { return integral() ? static_cast<double>(i) : f; }
};

// `v` rounded to float dtype `t` (round to nearest even), as the backends store it.
double round_to(DType t, double v) {
  const float f = static_cast<float>(v);
  if (t == DType::F16) return f16_to_f32(f32_to_f16(f));
  if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(f));
  return f;
}

// Casts to a float type and square roots of constants, computed as the backends compute them
// (in f32, then rounded to the result's type: runtime/cpu/elementwise.cpp, jit/emit_expr.cpp).
// The folded constant holds the rounded value, which every later rounding leaves as it is. So
// `rsqrt(cast(64, f16))`, an attention's scale, is one constant instead of a conversion, a
// square root and a division per score in the fused kernel.
std::optional<Scalar> fold_float_unary(Op op, DType out, const Scalar& a) {
  if (!is_float(out)) return std::nullopt;
  if (a.integral() && (a.i > (int64_t{1} << 53) || a.i < -(int64_t{1} << 53))) return std::nullopt;
  // The operand as the program computes with it: an f16/bf16 literal is rounded at its use.
  const float x = static_cast<float>(a.integral() ? static_cast<double>(a.i) : round_to(a.dtype, a.f));
  switch (op) {
    case Op::Cast: return Scalar{out, round_to(out, x), 0};
    case Op::Sqrt:
      if (a.dtype != out) return std::nullopt;
      return Scalar{out, round_to(out, std::sqrt(x)), 0};
    case Op::Rsqrt:
      if (a.dtype != out) return std::nullopt;
      return Scalar{out, round_to(out, 1.0f / std::sqrt(x)), 0};
    default: return std::nullopt;
  }
}

// Besides those, folds only what is exactly representable without reproducing f16/bf16 rounding:
// float results are folded for f32 only.
std::optional<Scalar> fold(Op op, DType out, const std::vector<Scalar>& in) {
  if (in.size() == 1)
    if (auto r = fold_float_unary(op, out, in[0])) return r;
  if (out == DType::F16 || out == DType::BF16) return std::nullopt;
  // f16/bf16 operands hold unrounded literal values; comparing those would disagree with the
  // rounded values the program computes with, so they are not folded.
  for (const auto& s : in)
    if (s.dtype == DType::F16 || s.dtype == DType::BF16) return std::nullopt;
  auto make_bool = [](bool b) { return Scalar{DType::Bool, 0, b ? 1 : 0}; };
  if (in.size() == 1) {
    const Scalar& a = in[0];
    switch (op) {
      case Op::Neg:
        if (a.dtype == DType::Bool) return std::nullopt;
        return a.integral() ? Scalar{out, 0, -a.i} : Scalar{out, -a.f, 0};
      case Op::Not: return make_bool(!a.i);
      default: return std::nullopt;
    }
  }
  if (in.size() != 2 || in[0].dtype != in[1].dtype) return std::nullopt;
  const Scalar &a = in[0], &b = in[1];
  bool integral = a.integral();
  switch (op) {
    case Op::Add: return integral ? Scalar{out, 0, a.i + b.i} : Scalar{out, static_cast<float>(a.f + b.f), 0};
    case Op::Sub: return integral ? Scalar{out, 0, a.i - b.i} : Scalar{out, static_cast<float>(a.f - b.f), 0};
    case Op::Mul: return integral ? Scalar{out, 0, a.i * b.i} : Scalar{out, static_cast<float>(a.f * b.f), 0};
    case Op::Eq: return make_bool(a.as_double() == b.as_double());
    case Op::Ne: return make_bool(a.as_double() != b.as_double());
    case Op::Lt: return make_bool(a.as_double() < b.as_double());
    case Op::Le: return make_bool(a.as_double() <= b.as_double());
    case Op::Gt: return make_bool(a.as_double() > b.as_double());
    case Op::Ge: return make_bool(a.as_double() >= b.as_double());
    case Op::And: return make_bool(a.i && b.i);
    case Op::Or: return make_bool(a.i || b.i);
    default: return std::nullopt;
  }
}

bool in_range(const Scalar& s) {
  if (s.dtype == DType::I32) return s.i >= INT32_MIN && s.i <= INT32_MAX;
  return true;
}

class Folder {
 public:
  explicit Folder(Function& f) : f_(f) {}
  bool run() {
    block(f_.body);
    replace_uses(f_.body, repl_);
    return changed_;
  }

 private:
  Function& f_;
  std::unordered_map<ValueId, Scalar> consts_;
  std::unordered_map<ValueId, ValueId> repl_;
  bool changed_ = false;

  ValueId resolve(ValueId v) {
    auto it = repl_.find(v);
    return it == repl_.end() ? v : resolve(it->second);
  }
  const Scalar* constant(ValueId v) {
    auto it = consts_.find(v);
    return it == consts_.end() ? nullptr : &it->second;
  }

  void block(Block& b) {
    for (auto& op : b.ops) {
      for (auto& v : op.operands) v = resolve(v);
      if (op.pred != kNoValue) op.pred = resolve(op.pred);
      if (op.body) {
        block(*op.body);
        continue;
      }
      if (op.op == Op::Constant) {
        // An f32 constant holds the f32 value of its literal, not the literal's double.
        double f = op.attrs.dtype == DType::F32 ? static_cast<double>(static_cast<float>(op.attrs.fvalue))
                                                : op.attrs.fvalue;
        consts_[op.results[0]] = Scalar{op.attrs.dtype, f, op.attrs.ivalue};
        continue;
      }
      if (op.op == Op::Select) {
        if (const Scalar* c = constant(op.operands[0])) {
          repl_[op.results[0]] = c->i ? op.operands[1] : op.operands[2];
          changed_ = true;
        }
        continue;
      }
      if ((op.op == Op::And || op.op == Op::Or) && op.pred == kNoValue) {
        for (int side = 0; side < 2; ++side)
          if (const Scalar* c = constant(op.operands[static_cast<size_t>(side)])) {
            ValueId other = op.operands[static_cast<size_t>(1 - side)];
            bool identity = (op.op == Op::And) == (c->i != 0);  // x and true, x or false
            if (identity && f_.type(other) == f_.type(op.results[0])) {
              repl_[op.results[0]] = other;
              changed_ = true;
              break;
            }
          }
      }
      if (!is_elementwise(op.op) || op.results.size() != 1 || op.pred != kNoValue) continue;
      std::vector<Scalar> in;
      for (ValueId v : op.operands) {
        const Scalar* c = constant(v);
        if (!c) break;
        in.push_back(*c);
      }
      if (in.size() != op.operands.size()) continue;
      DType out = f_.type(op.results[0]).dtype;
      auto r = fold(op.op, out, in);
      if (!r || !in_range(*r)) continue;
      op.op = Op::Constant;
      op.operands.clear();
      op.attrs = Attrs{};
      op.attrs.dtype = out;
      op.attrs.fvalue = r->integral() ? 0 : r->f;
      op.attrs.ivalue = r->integral() ? r->i : 0;
      consts_[op.results[0]] = *r;
      changed_ = true;
    }
    for (auto& y : b.yields) y = resolve(y);
  }
};

}  // namespace

bool fold_constants(Function& f) { return Folder(f).run(); }

}  // namespace grape::ir
