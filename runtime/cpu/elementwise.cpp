// Elementwise kernels: unary math, cast, NumPy-broadcast binary ops and comparisons, where.
// Float math runs in f32 (f16/bf16 are widened to f32 and rounded on store); integer math runs
// in int64 with wrapping (i32 results wrap modulo 2^32, as NumPy does).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

float round_half_even(float x) {
  float r = std::round(x);                                                    // half away from zero ...
  if (std::fabs(x - std::trunc(x)) == 0.5f) r = 2.0f * std::round(x * 0.5f);  // ... except ties
  return r;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float unary_f(Op op, float x, bool approx_tanh) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0f / std::sqrt(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return sigmoid(x);
    case Op::Relu: return x < 0 ? 0.0f : x;  // NaN propagates (as torch.relu)
    case Op::Silu: return x * sigmoid(x);
    case Op::Gelu:
      // Written without the cancellation of 1 + erf(x) / 1 + tanh(u) for negative x:
      // 0.5(1 + erf(z)) = 0.5 erfc(-z) and 0.5(1 + tanh(u)) = sigmoid(2u). Same functions.
      if (approx_tanh) {
        const float k = 0.7978845608028654f;  // sqrt(2/pi)
        return x * sigmoid(2.0f * k * (x + 0.044715f * x * x * x));
      }
      return 0.5f * x * std::erfc(-x * 0.7071067811865476f);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return round_half_even(x);
    case Op::Sign: return std::isnan(x) ? x : static_cast<float>((x > 0) - (x < 0));
    default: return 0;
  }
}

int64_t unary_i(Op op, int64_t x) {
  switch (op) {
    case Op::Neg: return wrap_sub(0, x);
    case Op::Abs: return x < 0 ? wrap_sub(0, x) : x;
    case Op::Sign: return (x > 0) - (x < 0);
    default: return 0;
  }
}

std::vector<Tensor> unary(Op op, const Tensor& x, const KernelAttrs& a) {
  DType t = x.dtype();
  int64_t n = x.numel();
  if (op == Op::IsNan) {
    Tensor out = new_output(DType::Bool, x.shape());
    for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = is_float(t) && std::isnan(load_f(x, i));
    return {out};
  }
  if (op == Op::Not) {
    if (t != DType::Bool) fail(op, std::string("expects bool, got ") + dtype_name(t));
    Tensor out = new_output(DType::Bool, x.shape());
    for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = !x.data<uint8_t>()[i];
    return {out};
  }
  bool int_ok = op == Op::Neg || op == Op::Abs || op == Op::Sign;
  if (!is_float(t) && !(int_ok && is_int(t)))
    fail(op, std::string("unsupported dtype ") + dtype_name(t) +
                 (int_ok ? " (float or int expected)" : " (float expected)"));
  Tensor out = new_output(t, x.shape());
  if (is_float(t)) {
    for (int64_t i = 0; i < n; ++i) store_f(out, i, unary_f(op, load_f(x, i), a.approx_tanh));
  } else {
    for (int64_t i = 0; i < n; ++i) store_i(out, i, unary_i(op, load_i(x, i)));
  }
  return {out};
}

// Cast: float -> int truncates toward zero and saturates, NaN -> 0; anything -> bool is x != 0
// (NaN -> true); int -> int wraps; bool -> 0/1.
Tensor cast(const Tensor& x, DType to) {
  Tensor out = new_output(to, x.shape());
  DType from = x.dtype();
  int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (to == DType::Bool) {
      out.data<uint8_t>()[i] = is_float(from) ? load_f(x, i) != 0.0f : load_i(x, i) != 0;
    } else if (is_float(from)) {
      if (is_float(to))
        store_f(out, i, load_f(x, i));
      else
        out.set(i, load_f(x, i));  // Tensor::set truncates, saturates, NaN -> 0
    } else if (is_float(to)) {
      store_d(out, i, static_cast<double>(load_i(x, i)));
    } else {
      store_i(out, i, load_i(x, i));
    }
  }
  return out;
}

float binary_f(Op op, float x, float y) {
  switch (op) {
    case Op::Add: return x + y;
    case Op::Sub: return x - y;
    case Op::Mul: return x * y;
    case Op::Div: return x / y;
    case Op::Mod: {  // Python's %: result has the sign of the divisor; computed exactly via fmod
      float m = std::fmod(x, y);
      if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
      } else {
        m = std::copysign(0.0f, y);
      }
      return m;
    }
    case Op::Pow: return std::pow(x, y);
    case Op::Maximum:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN() : std::max(x, y);
    case Op::Minimum:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN() : std::min(x, y);
    default: return 0;
  }
}

int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  while (e) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

int64_t binary_i(Op op, int64_t x, int64_t y) {
  switch (op) {
    case Op::Add: return wrap_add(x, y);
    case Op::Sub: return wrap_sub(x, y);
    case Op::Mul: return wrap_mul(x, y);
    case Op::Div: {  // floor division (Python //); x // 0 == 0
      if (y == 0) return 0;
      if (y == -1) return wrap_sub(0, x);
      int64_t q = x / y;
      if (x % y != 0 && ((x < 0) != (y < 0))) --q;
      return q;
    }
    case Op::Mod: {  // Python %: sign of the divisor; x % 0 == 0
      if (y == 0 || y == -1) return 0;
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case Op::Pow: return ipow(x, y);
    case Op::Maximum: return std::max(x, y);
    case Op::Minimum: return std::min(x, y);
    default: return 0;
  }
}

template <class T>
bool compare(Op op, T x, T y) {
  switch (op) {
    case Op::Eq: return x == y;
    case Op::Ne: return x != y;
    case Op::Lt: return x < y;
    case Op::Le: return x <= y;
    case Op::Gt: return x > y;
    case Op::Ge: return x >= y;
    case Op::And: return x && y;
    case Op::Or: return x || y;
    default: return false;
  }
}

Shape broadcast_or_fail(Op op, const Shape& a, const Shape& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const KernelError& e) {
    fail(op, e.what());
  }
}

std::vector<Tensor> binary(Op op, const Tensor& x, const Tensor& y) {
  DType t = x.dtype();
  if (y.dtype() != t)
    fail(op, std::string("operand dtypes differ: ") + dtype_name(t) + " and " + dtype_name(y.dtype()));
  Shape shape = broadcast_or_fail(op, x.shape(), y.shape());
  bool cmp = op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
  bool logic = op == Op::And || op == Op::Or;
  if (logic && t != DType::Bool) fail(op, std::string("expects bool operands, got ") + dtype_name(t));
  if (!cmp && !logic && t == DType::Bool) fail(op, "bool operands are not supported (use and/or)");
  Tensor out = new_output(cmp || logic ? DType::Bool : t, shape);
  StridedWalker w(shape, {broadcast_strides(x.shape(), shape), broadcast_strides(y.shape(), shape)});
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i, w.next()) {
    int64_t ix = w.offset(0), iy = w.offset(1);
    if (cmp || logic) {
      out.data<uint8_t>()[i] =
          is_float(t) ? compare(op, load_f(x, ix), load_f(y, iy)) : compare(op, load_i(x, ix), load_i(y, iy));
    } else if (is_float(t)) {
      store_f(out, i, binary_f(op, load_f(x, ix), load_f(y, iy)));
    } else {
      store_i(out, i, binary_i(op, load_i(x, ix), load_i(y, iy)));
    }
  }
  return {out};
}

std::vector<Tensor> where(const Tensor& c, const Tensor& x, const Tensor& y) {
  if (c.dtype() != DType::Bool)
    fail(Op::Where, std::string("condition must be bool, got ") + dtype_name(c.dtype()));
  if (x.dtype() != y.dtype())
    fail(Op::Where,
         std::string("branch dtypes differ: ") + dtype_name(x.dtype()) + " and " + dtype_name(y.dtype()));
  Shape shape = broadcast_or_fail(Op::Where, broadcast_or_fail(Op::Where, c.shape(), x.shape()), y.shape());
  Tensor out = new_output(x.dtype(), shape);
  size_t es = dtype_size(x.dtype());
  StridedWalker w(shape, {broadcast_strides(c.shape(), shape), broadcast_strides(x.shape(), shape),
                          broadcast_strides(y.shape(), shape)});
  const uint8_t* pc = c.data<uint8_t>();
  const uint8_t* px = static_cast<const uint8_t*>(x.raw());
  const uint8_t* py = static_cast<const uint8_t*>(y.raw());
  uint8_t* po = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next()) {
    const uint8_t* src = pc[w.offset(0)] ? px + w.offset(1) * es : py + w.offset(2) * es;
    std::memcpy(po + i * es, src, es);
  }
  return {out};
}

}  // namespace

std::vector<Tensor> run_elementwise(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  if (op == Op::Where) return where(in[0], in[1], in[2]);
  if (op == Op::Cast) return {cast(in[0], a.dtype)};
  if (in.size() == 1) return unary(op, in[0], a);
  return binary(op, in[0], in[1]);
}

}  // namespace grape::cpu::detail
