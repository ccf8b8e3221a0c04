// matmul (NumPy rules) and linear (PyTorch convention). Operands are widened once (floats to
// float, exact; ints to int64); float dot products accumulate in double, int ones in wrapping
// int64. Large products are split over threads by output rows.
#include <algorithm>
#include <thread>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

constexpr double kParallelMacs = 1e6;

// Runs fn(begin, end) over [0, n), on several threads when `work` is large.
template <class F>
void parallel_rows(int64_t n, double work, F fn) {
  int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), 16);
  if (work < kParallelMacs || threads < 2 || n < 2) {
    fn(int64_t{0}, n);
    return;
  }
  threads = std::min(threads, n);
  std::vector<std::thread> pool;
  int64_t chunk = (n + threads - 1) / threads;
  for (int64_t b = 0; b < n; b += chunk) pool.emplace_back(fn, b, std::min(n, b + chunk));
  for (auto& th : pool) th.join();
}

template <class T>
std::vector<T> widen(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_same_v<T, float>)
      v[i] = load_f(t, i);
    else
      v[i] = load_i(t, i);
  }
  return v;
}

// C[r, :] = A[r, :] @ B for rows r of a batch of row-major matrices; Acc is double or int64.
template <class T, class Acc>
void gemm_rows(const T* A, const T* B, int64_t K, int64_t N, Acc* acc) {
  std::fill(acc, acc + N, Acc{0});
  for (int64_t k = 0; k < K; ++k) {
    Acc av = A[k];
    const T* brow = B + k * N;
    for (int64_t j = 0; j < N; ++j) {
      if constexpr (std::is_same_v<Acc, double>)
        acc[j] += av * static_cast<double>(brow[j]);
      else
        acc[j] = wrap_add(acc[j], wrap_mul(av, brow[j]));
    }
  }
}

void check_operands(Op op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(op,
         std::string("operand dtypes differ: ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  if (a.dtype() == DType::Bool) fail(op, "bool operands are not supported");
}

template <class T, class Acc>
void matmul_impl(const Tensor& a, const Tensor& b, const Shape& as, const Shape& bs, const Shape& batch,
                 Tensor& out) {
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<T> A = widen<T>(a), B = widen<T>(b);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  int64_t nb = num_elements(batch);
  std::vector<int64_t> aoff(nb), boff(nb);
  StridedWalker w(batch, {broadcast_strides(ab, batch), broadcast_strides(bb, batch)});
  for (int64_t i = 0; i < nb; ++i, w.next()) {
    aoff[i] = w.offset(0) * M * K;
    boff[i] = w.offset(1) * K * N;
  }
  parallel_rows(nb * M, static_cast<double>(nb) * M * N * K, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(static_cast<size_t>(N));
    for (int64_t r = begin; r < end; ++r) {
      int64_t bi = r / M, i = r % M;
      gemm_rows<T, Acc>(A.data() + aoff[bi] + i * K, B.data() + boff[bi], K, N, acc.data());
      for (int64_t j = 0; j < N; ++j) {
        if constexpr (std::is_same_v<Acc, double>)
          store_d(out, r * N + j, acc[j]);
        else
          store_i(out, r * N + j, acc[j]);
      }
    }
  });
}

std::vector<Tensor> matmul(const Tensor& a, const Tensor& b) {
  Op op = Op::MatMul;
  check_operands(op, a, b);
  if (a.rank() == 0 || b.rank() == 0)
    fail(op, "operands must have at least one axis: " + shp(a) + " @ " + shp(b));
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  if (as.back() != bs[bs.size() - 2]) fail(op, "inner dims differ: " + shp(a) + " @ " + shp(b));
  Shape batch;
  try {
    batch = broadcast_shapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
  } catch (const KernelError&) {
    fail(op, "batch dims do not broadcast: " + shp(a) + " @ " + shp(b));
  }
  Shape full = batch;
  full.push_back(as[as.size() - 2]);
  full.push_back(bs.back());
  Tensor out = new_output(a.dtype(), full);
  if (is_float(a.dtype()))
    matmul_impl<float, double>(a, b, as, bs, batch, out);
  else
    matmul_impl<int64_t, int64_t>(a, b, as, bs, batch, out);
  Shape result = batch;  // drop the axes added for 1-D operands
  if (a.rank() > 1) result.push_back(as[as.size() - 2]);
  if (b.rank() > 1) result.push_back(bs.back());
  return {out.reshaped(result)};
}

template <class T, class Acc>
void linear_impl(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t rows, int64_t in, int64_t outf,
                 Tensor& out) {
  std::vector<T> X = widen<T>(x), W = widen<T>(w);
  std::vector<T> Bv = bias ? widen<T>(*bias) : std::vector<T>();
  parallel_rows(rows, static_cast<double>(rows) * in * outf, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = X.data() + r * in;
      for (int64_t o = 0; o < outf; ++o) {
        const T* wr = W.data() + o * in;
        Acc acc = bias ? static_cast<Acc>(Bv[o]) : Acc{0};
        for (int64_t k = 0; k < in; ++k) {
          if constexpr (std::is_same_v<Acc, double>)
            acc += static_cast<double>(xr[k]) * wr[k];
          else
            acc = wrap_add(acc, wrap_mul(xr[k], wr[k]));
        }
        if constexpr (std::is_same_v<Acc, double>)
          store_d(out, r * outf + o, acc);
        else
          store_i(out, r * outf + o, acc);
      }
    }
  });
}

std::vector<Tensor> linear(const std::vector<Tensor>& args) {
  Op op = Op::Linear;
  const Tensor& x = args[0];
  const Tensor& w = args[1];
  check_operands(op, x, w);
  if (x.rank() == 0) fail(op, "input must have at least one axis, got " + shp(x));
  if (w.rank() != 2) fail(op, "weight must be 2-D [out, in], got " + shp(w));
  int64_t in = x.shape().back(), outf = w.dim(0);
  if (w.dim(1) != in)
    fail(op, "in features differ: input " + shp(x) + " vs weight " + shp(w) + " ([out, in])");
  const Tensor* bias = args.size() > 2 ? &args[2] : nullptr;
  if (bias) {
    check_operands(op, x, *bias);
    if (bias->shape() != Shape{outf})
      fail(op, "bias shape " + shp(*bias) + " must be [" + std::to_string(outf) + "]");
  }
  Shape os = x.shape();
  os.back() = outf;
  int64_t rows = prod(x.shape(), 0, x.rank() - 1);
  Tensor out = new_output(x.dtype(), os);
  if (is_float(x.dtype()))
    linear_impl<float, double>(x, w, bias, rows, in, outf, out);
  else
    linear_impl<int64_t, int64_t>(x, w, bias, rows, in, outf, out);
  return {out};
}

}  // namespace

std::vector<Tensor> run_linalg(Op op, const std::vector<Tensor>& in, const KernelAttrs&) {
  if (op == Op::MatMul) return matmul(in[0], in[1]);
  return linear(in);
}

}  // namespace grape::cpu::detail
