// Compares every CPU kernel with an independent NumPy reference (numpy_ref.py) on seeded random
// inputs of several shapes and dtypes. Inputs and references travel through a temporary
// directory in a tiny raw format (see numpy_ref.py). Skipped if python3 or numpy is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "runtime/cpu/kernels.h"

namespace grape::cpu::test {
namespace {

namespace fs = std::filesystem;
using ir::Op;

enum class Dist { Uniform, Positive, HalfSteps, NearOne, WithNaN, Wide, Small };

struct Case {
  Op op;
  KernelAttrs a;
  std::vector<Tensor> in;
};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  Tensor operator()(DType t, Shape s, Dist d = Dist::Uniform) {
    Tensor x(t, std::move(s));
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (t == DType::Bool) {
        x.set(i, unit() < 0.5);
      } else if (is_int(t)) {
        int64_t lo = -10, hi = 10;
        if (d == Dist::Positive) lo = 1;
        if (d == Dist::Small || d == Dist::HalfSteps) lo = -3, hi = 3;
        if (d == Dist::Wide) lo = -3'000'000'000LL, hi = 3'000'000'000LL;
        x.set_int(i, lo + static_cast<int64_t>(unit() * static_cast<double>(hi - lo + 1)) % (hi - lo + 1));
      } else {
        double u = unit(), v = -3 + 6 * u;
        if (d == Dist::Positive) v = 0.1 + 3.9 * u;
        if (d == Dist::HalfSteps) v = std::floor(u * 13) / 2 - 3;
        if (d == Dist::NearOne) v = 0.5 + u;
        if (d == Dist::Wide) v = (u - 0.5) * 2e10;
        if (d == Dist::Small) v = std::floor(u * 7) - 3;
        if (d == Dist::WithNaN && unit() < 0.15) v = NAN;
        x.set(i, v);
      }
    }
    return x;
  }

 private:
  double unit() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  std::mt19937 rng_;
};

void write_tensor(const fs::path& p, const Tensor& t) {
  std::ofstream f(p, std::ios::binary);
  f << "GRPT " << dtype_name(t.dtype()) << " " << t.rank();
  for (int64_t d : t.shape()) f << " " << d;
  f << "\n";
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
}

Tensor read_tensor(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("missing reference " + p.string());
  std::string header;
  std::getline(f, header);
  std::istringstream h(header);
  std::string magic, dt;
  size_t rank;
  h >> magic >> dt >> rank;
  Shape s(rank);
  for (auto& d : s) h >> d;
  Tensor t(*parse_dtype(dt), s);
  f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  return t;
}

void write_case(const fs::path& dir, size_t i, const Case& c) {
  std::ofstream f(dir / ("case_" + std::to_string(i) + ".txt"));
  const KernelAttrs& a = c.a;
  char buf[64];
  f << "op " << ir::op_name(c.op) << "\ndtype " << dtype_name(a.dtype) << "\n";
  std::snprintf(buf, sizeof buf, "%.17g", a.value);
  f << "value " << buf << "\nivalue " << a.ivalue << "\naxes";
  for (int64_t x : a.axes) f << " " << x;
  f << "\naxis " << a.axis << "\nk " << a.k << "\nkeepdims " << a.keepdims;
  std::snprintf(buf, sizeof buf, "%.17g", a.eps);
  f << "\neps " << buf << "\napprox_tanh " << a.approx_tanh << "\nshape";
  for (int64_t x : a.shape) f << " " << x;
  f << "\n";
  for (const SliceSpec& s : a.slices) f << "slice " << s.start << " " << s.size << " " << s.step << " " << s.squeeze << "\n";
  f << "ninputs " << c.in.size() << "\n";
  for (size_t j = 0; j < c.in.size(); ++j)
    write_tensor(dir / ("case_" + std::to_string(i) + "_in_" + std::to_string(j) + ".bin"), c.in[j]);
}

std::string describe(const Case& c) {
  std::string s = std::string(ir::op_name(c.op)) + "(";
  for (size_t j = 0; j < c.in.size(); ++j)
    s += (j ? ", " : "") + std::string(dtype_name(c.in[j].dtype())) + shape_to_string(c.in[j].shape());
  return s + ")";
}

void compare(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what << ": " << shape_to_string(got.shape()) << " vs " << shape_to_string(want.shape());
  if (!is_float(got.dtype())) {
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(got.get_int(i), want.get_int(i)) << what << " element " << i;
    return;
  }
  double rtol = got.dtype() == DType::F32 ? 1e-5 : 1e-2, atol = got.dtype() == DType::F32 ? 1e-6 : 1e-3;
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(w) || std::isinf(w)) {
      ASSERT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << what << " element " << i << ": " << g << " vs " << w;
      continue;
    }
    ASSERT_LE(std::fabs(g - w), rtol * std::fabs(w) + atol) << what << " element " << i << ": " << g << " vs " << w;
    err2 += (g - w) * (g - w);
    ref2 += w * w;
  }
  if (ref2 > 0) {
    EXPECT_LE(std::sqrt(err2 / ref2), rtol) << what << ": relative L2 error";
  }
}

bool have_numpy() {
  static const bool ok = std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

// A fresh temporary directory, removed (with its files) when the test ends, pass or fail.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "grape_numpy_ref_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void check_against_numpy(const std::vector<Case>& cases) {
  TempDir tmp;
  const fs::path& dir = tmp.path;
  for (size_t i = 0; i < cases.size(); ++i) write_case(dir, i, cases[i]);
  std::string cmd = "python3 '" GRAPE_SOURCE_DIR "/tests/kernels/numpy_ref.py' '" + dir.string() + "' " +
                    std::to_string(cases.size()) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string log;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) log += buf;
  int rc = pclose(p);
  ASSERT_EQ(rc, 0) << "numpy_ref.py failed:\n" << log;
  size_t compared = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::string what = "case " + std::to_string(i) + " " + describe(c);
    std::vector<Tensor> got;
    try {
      got = run_kernel(c.op, c.in, c.a);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " threw: " << e.what();
      continue;
    }
    for (size_t j = 0; j < got.size(); ++j) {
      Tensor want = read_tensor(dir / ("case_" + std::to_string(i) + "_out_" + std::to_string(j) + ".bin"));
      compare(got[j], want, what + " result " + std::to_string(j));
      ++compared;
    }
  }
  EXPECT_GE(compared, cases.size());
}

#define REQUIRE_NUMPY()                                                        \
  do {                                                                         \
    if (!have_numpy()) {                                                       \
      GTEST_SKIP() << "python3 with numpy not found: NumPy references skipped"; \
    }                                                                          \
  } while (0)

const DType kFloats[] = {DType::F32, DType::F16, DType::BF16};
const std::vector<Shape> kShapes = {{}, {7}, {3, 5}, {2, 0}};

Case mk(Op op, std::vector<Tensor> in, KernelAttrs a = {}) { return {op, std::move(a), std::move(in)}; }

TEST(NumpyRef, Unary) {
  REQUIRE_NUMPY();
  Gen g(1);
  std::vector<Case> cases;
  const Op fops[] = {Op::Neg, Op::Abs, Op::Exp, Op::Tanh, Op::Sigmoid, Op::Relu, Op::Silu, Op::Sin,
                     Op::Cos, Op::Floor, Op::Ceil, Op::Sign, Op::Gelu};
  for (DType t : kFloats)
    for (const Shape& s : kShapes) {
      for (Op op : fops) cases.push_back(mk(op, {g(t, s)}));
      for (Op op : {Op::Log, Op::Sqrt, Op::Rsqrt}) cases.push_back(mk(op, {g(t, s, Dist::Positive)}));
      cases.push_back(mk(Op::Round, {g(t, s, Dist::HalfSteps)}));
      cases.push_back(mk(Op::IsNan, {g(t, s, Dist::WithNaN)}));
      cases.push_back(mk(Op::Sign, {g(t, s, Dist::WithNaN)}));
      KernelAttrs a;
      a.approx_tanh = true;
      cases.push_back(mk(Op::Gelu, {g(t, s)}, a));
    }
  for (DType t : {DType::I32, DType::I64})
    for (Op op : {Op::Neg, Op::Abs, Op::Sign, Op::IsNan}) cases.push_back(mk(op, {g(t, {4, 3})}));
  cases.push_back(mk(Op::Not, {g(DType::Bool, {5, 2})}));
  check_against_numpy(cases);
}

TEST(NumpyRef, Cast) {
  REQUIRE_NUMPY();
  Gen g(2);
  std::vector<Case> cases;
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool};
  for (DType from : all)
    for (DType to : all)
      for (Dist d : {Dist::Uniform, Dist::Wide, Dist::WithNaN}) {
        if (d == Dist::WithNaN && !is_float(from)) continue;
        KernelAttrs a;
        a.dtype = to;
        cases.push_back(mk(Op::Cast, {g(from, {3, 4}, d)}, a));
      }
  check_against_numpy(cases);
}

TEST(NumpyRef, Binary) {
  REQUIRE_NUMPY();
  Gen g(3);
  std::vector<Case> cases;
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 4}, {3, 4}}, {{2, 1, 4}, {3, 1}}, {{}, {5}}, {{0, 3}, {1, 3}}};
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64};
  for (DType t : types)
    for (auto& [sa, sb] : shapes) {
      for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Maximum, Op::Minimum})
        cases.push_back(mk(op, {g(t, sa), g(t, sb)}));
      cases.push_back(mk(Op::Div, {g(t, sa), g(t, sb, is_int(t) ? Dist::Small : Dist::Uniform)}));
      cases.push_back(mk(Op::Mod, {g(t, sa), g(t, sb, is_int(t) ? Dist::Small : Dist::Uniform)}));
      cases.push_back(mk(Op::Pow, is_int(t) ? std::vector<Tensor>{g(t, sa, Dist::Small), g(t, sb, Dist::Small)}
                                            : std::vector<Tensor>{g(t, sa, Dist::Positive), g(t, sb)}));
      for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge})
        cases.push_back(mk(op, {g(t, sa, Dist::HalfSteps), g(t, sb, Dist::HalfSteps)}));
    }
  for (Op op : {Op::Maximum, Op::Minimum, Op::Lt, Op::Eq, Op::Ne})
    cases.push_back(mk(op, {g(DType::F32, {4, 4}, Dist::WithNaN), g(DType::F32, {4}, Dist::WithNaN)}));
  for (Op op : {Op::And, Op::Or, Op::Eq, Op::Ne})
    cases.push_back(mk(op, {g(DType::Bool, {3, 1}), g(DType::Bool, {4})}));
  check_against_numpy(cases);
}

TEST(NumpyRef, Where) {
  REQUIRE_NUMPY();
  Gen g(4);
  std::vector<Case> cases;
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    cases.push_back(mk(Op::Where, {g(DType::Bool, {2, 1}), g(t, {3}), g(t, {})}));
    cases.push_back(mk(Op::Where, {g(DType::Bool, {4}), g(t, {3, 1}), g(t, {2, 1, 4})}));
    cases.push_back(mk(Op::Where, {g(DType::Bool, {}), g(t, {2, 2}), g(t, {2, 2})}));
  }
  check_against_numpy(cases);
}

TEST(NumpyRef, Reductions) {
  REQUIRE_NUMPY();
  Gen g(5);
  std::vector<Case> cases;
  const std::vector<std::vector<int64_t>> axes_sets = {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}, {}};
  for (const auto& axes : axes_sets)
    for (bool keep : {false, true}) {
      KernelAttrs a;
      a.axes = axes;
      a.keepdims = keep;
      for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
        for (Op op : {Op::Sum, Op::Max, Op::Min}) cases.push_back(mk(op, {g(t, {3, 4, 5})}, a));
        cases.push_back(mk(Op::Prod, {g(t, {3, 4, 5}, is_int(t) ? Dist::Small : Dist::NearOne)}, a));
        if (is_float(t)) cases.push_back(mk(Op::Mean, {g(t, {3, 4, 5})}, a));
      }
      for (Op op : {Op::All, Op::Any}) cases.push_back(mk(op, {g(DType::Bool, {3, 4, 5})}, a));
      for (Op op : {Op::Max, Op::Min, Op::Sum}) cases.push_back(mk(op, {g(DType::F32, {3, 4, 5}, Dist::WithNaN)}, a));
    }
  KernelAttrs e;
  e.axes = {1};
  for (Op op : {Op::Sum, Op::Prod, Op::Mean}) cases.push_back(mk(op, {g(DType::F32, {3, 0})}, e));
  for (Op op : {Op::All, Op::Any}) cases.push_back(mk(op, {g(DType::Bool, {3, 0})}, e));
  e.axes = {};
  cases.push_back(mk(Op::Sum, {g(DType::F32, {})}, e));
  check_against_numpy(cases);
}

TEST(NumpyRef, ArgReduceAndCumSum) {
  REQUIRE_NUMPY();
  Gen g(6);
  std::vector<Case> cases;
  for (int64_t ax : {0, 1})
    for (bool keep : {false, true})
      for (Dist d : {Dist::HalfSteps, Dist::WithNaN, Dist::Uniform})
        for (DType t : {DType::F32, DType::BF16, DType::I32}) {
          if (d == Dist::WithNaN && !is_float(t)) continue;
          KernelAttrs a;
          a.axis = ax;
          a.keepdims = keep;
          cases.push_back(mk(Op::ArgMax, {g(t, {4, 6}, d)}, a));
          cases.push_back(mk(Op::ArgMin, {g(t, {4, 6}, d)}, a));
        }
  for (int64_t ax : {0, 1, 2})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
      KernelAttrs a;
      a.axis = ax;
      cases.push_back(mk(Op::CumSum, {g(t, {3, 4, 5})}, a));
    }
  check_against_numpy(cases);
}

TEST(NumpyRef, Normalisation) {
  REQUIRE_NUMPY();
  Gen g(7);
  std::vector<Case> cases;
  for (DType t : kFloats) {
    for (auto [shape, ax] : std::vector<std::pair<Shape, int64_t>>{{{3, 7}, 0}, {{3, 7}, 1}, {{2, 3, 4}, 1}, {{5}, 0}}) {
      KernelAttrs a;
      a.axis = ax;
      cases.push_back(mk(Op::Softmax, {g(t, shape)}, a));
      cases.push_back(mk(Op::LogSoftmax, {g(t, shape)}, a));
    }
    for (Shape shape : {Shape{4, 16}, Shape{2, 3, 8}, Shape{5}}) {
      KernelAttrs a;
      a.eps = 1e-5;
      int64_t n = shape.back();
      cases.push_back(mk(Op::LayerNorm, {g(t, shape), g(t, {n}), g(t, {n})}, a));
      a.eps = 1e-6;
      cases.push_back(mk(Op::RmsNorm, {g(t, shape), g(t, {n})}, a));
    }
  }
  check_against_numpy(cases);
}

TEST(NumpyRef, LinearAlgebra) {
  REQUIRE_NUMPY();
  Gen g(8);
  std::vector<Case> cases;
  const std::vector<std::pair<Shape, Shape>> mm = {{{5, 7}, {7, 3}}, {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}},
                                                   {{4}, {4, 3}},    {{3, 4}, {4}},         {{4}, {4}},
                                                   {{2, 3, 4}, {4}}, {{64, 64}, {64, 64}},  {{3, 0}, {0, 2}}};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    for (auto& [sa, sb] : mm) cases.push_back(mk(Op::MatMul, {g(t, sa), g(t, sb)}));
    cases.push_back(mk(Op::Linear, {g(t, {2, 3, 8}), g(t, {5, 8}), g(t, {5})}));
    cases.push_back(mk(Op::Linear, {g(t, {2, 3, 8}), g(t, {5, 8})}));
    cases.push_back(mk(Op::Linear, {g(t, {8}), g(t, {6, 8}), g(t, {6})}));
  }
  cases.push_back(mk(Op::MatMul, {g(DType::F32, {2, 96, 80}), g(DType::F32, {80, 100})}));  // threaded path
  cases.push_back(mk(Op::Linear, {g(DType::F32, {100, 128}), g(DType::F32, {96, 128}), g(DType::F32, {96})}));
  check_against_numpy(cases);
}

KernelAttrs slices(std::vector<SliceSpec> s) {
  KernelAttrs a;
  a.slices = std::move(s);
  return a;
}

TEST(NumpyRef, ShapeOps) {
  REQUIRE_NUMPY();
  Gen g(9);
  std::vector<Case> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::Bool}) {
    for (std::vector<int64_t> perm : {std::vector<int64_t>{2, 0, 1}, {1, 0, 2}, {0, 1, 2}, {2, 1, 0}}) {
      KernelAttrs a;
      a.axes = perm;
      cases.push_back(mk(Op::Permute, {g(t, {2, 3, 4})}, a));
    }
    KernelAttrs r;
    r.shape = {4, 6};
    cases.push_back(mk(Op::Reshape, {g(t, {2, 3, 4})}, r));
    for (auto [from, to] : std::vector<std::pair<Shape, Shape>>{{{3, 1}, {2, 3, 4}}, {{}, {2, 2}}, {{1, 4}, {3, 4}}}) {
      KernelAttrs a;
      a.shape = to;
      cases.push_back(mk(Op::Expand, {g(t, from)}, a));
    }
    KernelAttrs c;
    c.axis = 1;
    cases.push_back(mk(Op::Concat, {g(t, {2, 3}), g(t, {2, 1}), g(t, {2, 0}), g(t, {2, 4})}, c));
    c.axis = 0;
    cases.push_back(mk(Op::Concat, {g(t, {1, 3}), g(t, {2, 3})}, c));
    c.axis = 2;
    cases.push_back(mk(Op::Concat, {g(t, {2, 2, 1}), g(t, {2, 2, 3})}, c));
    Tensor x = g(t, {5, 6});
    const std::vector<std::vector<SliceSpec>> specs = {
        {{1, 2, 2, false}, {0, 3, 2, false}}, {{4, 1, 1, true}, {1, 5, 1, false}},  {{0, 5, 1, false}, {5, 1, 1, true}},
        {{0, 2, 3, false}, {2, 0, 1, false}}, {{2, 1, 1, true}, {3, 1, 1, true}},   {{0, 3, 2, false}, {1, 2, 4, false}}};
    for (const auto& sp : specs) {
      cases.push_back(mk(Op::Slice, {x}, slices(sp)));
      Shape vs;
      for (const SliceSpec& s : sp)
        if (!s.squeeze) vs.push_back(s.size);
      cases.push_back(mk(Op::SliceUpdate, {x, g(t, vs)}, slices(sp)));
      cases.push_back(mk(Op::SliceUpdate, {x, g(t, {})}, slices(sp)));
    }
    // Broadcast value: a row written into every row of the region.
    cases.push_back(mk(Op::SliceUpdate, {x, g(t, {3})}, slices({{1, 2, 2, false}, {0, 3, 2, false}})));
  }
  check_against_numpy(cases);
}

TEST(NumpyRef, Gathers) {
  REQUIRE_NUMPY();
  Gen g(10);
  std::vector<Case> cases;
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    for (DType it : {DType::I32, DType::I64}) {
      for (int64_t ax : {0, 1}) {
        KernelAttrs a;
        a.axis = ax;
        cases.push_back(mk(Op::Take, {g(t, {5, 3}), g(it, {2, 4})}, a));  // indices in [-10, 10]: wrap + clamp
        cases.push_back(mk(Op::Take, {g(t, {5, 3}), g(it, {})}, a));
        cases.push_back(mk(Op::TakeAlongAxis, {g(t, {4, 5}), g(it, ax == 0 ? Shape{3, 5} : Shape{4, 3})}, a));
        cases.push_back(mk(Op::TakeAlongAxis, {g(t, {4, 5}), g(it, ax == 0 ? Shape{2, 1} : Shape{1, 3})}, a));
        cases.push_back(mk(Op::TakeAlongAxis, {g(t, ax == 0 ? Shape{4, 1} : Shape{1, 5}), g(it, {3, 2})}, a));
      }
    }
    for (auto [ax, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {0, 2}, {1, 8}, {1, 0}}) {
      KernelAttrs a;
      a.axis = ax;
      a.k = k;
      cases.push_back(mk(Op::TopK, {g(t, {3, 8}, Dist::HalfSteps)}, a));
      if (is_float(t)) cases.push_back(mk(Op::TopK, {g(t, {3, 8}, Dist::WithNaN)}, a));
    }
  }
  for (DType t : {DType::F32, DType::BF16, DType::I32, DType::Bool}) {
    KernelAttrs a;
    a.k = 4;
    a.dtype = t;
    cases.push_back(mk(Op::OneHot, {g(DType::I32, {2, 3}, Dist::Small)}, a));
    cases.push_back(mk(Op::OneHot, {g(DType::I64, {}, Dist::Positive)}, a));
  }
  check_against_numpy(cases);
}

TEST(NumpyRef, Creation) {
  REQUIRE_NUMPY();
  std::vector<Case> cases;
  for (auto [s, t, off] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 5, 0}, {4, 4, 2}, {2, 6, -1}, {1, 1, 0}}) {
    KernelAttrs a;
    a.shape = {s, t};
    cases.push_back(mk(Op::CausalMask, {Tensor::scalar_i32(static_cast<int32_t>(off))}, a));
    cases.push_back(mk(Op::CausalMask, {Tensor::scalar_i64(off)}, a));
  }
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    KernelAttrs a;
    a.dtype = t;
    a.value = -1.0 / 3;
    a.ivalue = t == DType::Bool ? 1 : -7;
    cases.push_back(mk(Op::Constant, {}, a));
    a.shape = {2, 3};
    cases.push_back(mk(Op::Full, {}, a));
    a.shape = {6};
    if (t != DType::Bool) cases.push_back(mk(Op::Arange, {}, a));
  }
  check_against_numpy(cases);
}

}  // namespace
}  // namespace grape::cpu::test
