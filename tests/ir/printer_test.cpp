// The IR printer: exact text of small hand-built functions (expectations written by hand from
// the format), and stable renumbering.
#include "ir/printer.h"

#include <gtest/gtest.h>

#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

// `padding` unused values are allocated first (and between ops) so internal ids differ from
// the printed ones.
Function demo(int padding) {
  Builder b("demo");
  auto pad = [&] {
    for (int k = 0; k < padding; ++k) b.f.new_value(f32());
  };
  Dim B = Dim::sym("B");
  pad();
  ValueId x = b.param("x", f32({B, 4}));
  ValueId n = b.param("n", i32());
  pad();
  ValueId c2 = b.cf32(2);
  ValueId y = b.op(Op::Mul, {x, c2}, f32({B, 4}));
  ValueId zero = b.ci32(0);
  ValueId lt = b.op(Op::Lt, {zero, n}, boolean());
  auto h = b.begin_loop(lt, {zero, y}, 8);
  pad();
  ValueId one = b.ci32(1);
  ValueId i2 = b.op(Op::Add, {h.params[0], one}, i32());
  ValueId odd = b.op(Op::Eq, {i2, one}, boolean());
  ValueId a2 = b.op(Op::Add, {h.params[1], x}, f32({B, 4}), {}, odd);
  ValueId sel = b.op(Op::Select, {odd, a2, h.params[1]}, f32({B, 4}));
  ValueId c = b.op(Op::Lt, {i2, n}, boolean());
  auto r = b.end_loop(h, c, {i2, sel});
  pad();
  ValueId s = b.op(Op::Sum, {r[1]}, f32({B, 1}), axes({1}, true));
  b.effect(Op::StateWrite, {r[0]}, named("steps"));
  Attrs ra;
  ra.shape = {B};
  ValueId out = b.op(Op::Reshape, {s}, f32({B}), ra);
  b.ret({out});
  return b.f;
}

const char* kDemo =
    "func @demo(%0 x: f32[B, 4], %1 n: i32[]) -> (f32[B]) {\n"
    "  %2 = constant {f32, value=2} : f32[]\n"
    "  %3 = mul %0, %2 : f32[B, 4]\n"
    "  %4 = constant {i32, value=0} : i32[]\n"
    "  %5 = lt %4, %1 : bool[]\n"
    "  %6, %7 = loop %5, %4, %3 {max=8} : i32[], f32[B, 4] {\n"
    "  ^(%8, %9):\n"
    "    %10 = constant {i32, value=1} : i32[]\n"
    "    %11 = add %8, %10 : i32[]\n"
    "    %12 = eq %11, %10 : bool[]\n"
    "    %13 = add %9, %0 if %12 : f32[B, 4]\n"
    "    %14 = select %12, %13, %9 : f32[B, 4]\n"
    "    %15 = lt %11, %1 : bool[]\n"
    "    yield %15, %11, %14\n"
    "  }\n"
    "  %16 = sum %7 {axes=(1), keepdims} : f32[B, 1]\n"
    "  state_write %6 {\"steps\"}\n"
    "  %17 = reshape %16 {shape=[B]} : f32[B]\n"
    "  return %17\n"
    "}\n";

TEST(Printer, ExactText) { EXPECT_EQ(print_function(demo(0)), kDemo); }

TEST(Printer, RenumberingIgnoresInternalIds) {
  EXPECT_EQ(print_function(demo(3)), kDemo);
  EXPECT_EQ(print_function(demo(17)), kDemo);
}

TEST(Printer, PrintingIsRepeatable) {
  Function f = demo(5);
  std::string first = print_function(f);
  EXPECT_EQ(print_function(f), first);
}

TEST(Printer, AttributeFormats) {
  Builder b("attrs");
  Dim S = Dim::sym("S");
  ValueId x = b.param("x", f32({S, 8, 3}));
  ValueId t = b.param("t", i32());
  Attrs sl;
  sl.slices = {SliceAxis{Dim(0), S, 1, false, -1}, SliceAxis{Dim(2), Dim(3), 2, false, -1},
               SliceAxis{Dim(0), Dim(1), 1, true, 1}};
  ValueId s = b.op(Op::Slice, {x, t}, f32({S, 3}), sl);
  Attrs fa;
  fa.dtype = DType::F16;
  fa.fvalue = 0.5;
  fa.shape = {S, Dim(3)};
  ValueId full = b.op(Op::Full, {}, f16({S, 3}), fa);
  Attrs ca;
  ca.dtype = DType::F16;
  ValueId cast = b.op(Op::Cast, {s}, f16({S, 3}), ca);
  ValueId sum = b.op(Op::Add, {cast, full}, f16({S, 3}));
  Attrs ga;
  ga.approx_tanh = true;
  ValueId g = b.op(Op::Gelu, {sum}, f16({S, 3}), ga);
  Attrs w;
  w.name = "h.0.w";
  ValueId wt = b.op(Op::Weight, {}, f16({3}), w);
  Attrs ln;
  ln.eps = 1e-5;
  ValueId norm = b.op(Op::LayerNorm, {g, wt, wt}, f16({S, 3}), ln);
  // topk has two results; build it by hand.
  Operation tk;
  tk.op = Op::TopK;
  tk.operands = {norm};
  tk.attrs.axis = -1;
  tk.attrs.k = 2;
  ValueId vals = b.f.new_value(f16({S, 2}));
  ValueId idx = b.f.new_value(i32({S, 2}));
  tk.results = {vals, idx};
  b.f.body.ops.push_back(tk);
  ValueId tr = b.cbool(true);
  b.ret({vals, idx, tr});
  EXPECT_EQ(print_function(b.f),
            "func @attrs(%0 x: f32[S, 8, 3], %1 t: i32[]) -> (f16[S, 2], i32[S, 2], bool[]) {\n"
            "  %2 = slice %0, %1 {[0:+S, 2:+3:2, $1]} : f32[S, 3]\n"
            "  %3 = full {f16, value=0.5, shape=[S, 3]} : f16[S, 3]\n"
            "  %4 = cast %2 {f16} : f16[S, 3]\n"
            "  %5 = add %4, %3 : f16[S, 3]\n"
            "  %6 = gelu %5 {approximate=tanh} : f16[S, 3]\n"
            "  %7 = weight {\"h.0.w\"} : f16[3]\n"
            "  %8 = layer_norm %6, %7, %7 {eps=1e-05} : f16[S, 3]\n"
            "  %9, %10 = topk %8 {axis=-1, k=2} : f16[S, 2], i32[S, 2]\n"
            "  %11 = constant {bool, value=1} : bool[]\n"
            "  return %9, %10, %11\n"
            "}\n");
}

TEST(Printer, Module) {
  Module m;
  m.name = "tiny";
  m.weights.push_back(WeightInfo{"fc.weight", DType::F16, {4, 2}, {}});
  StateInfo kc;
  kc.name = "kc";
  kc.type = f32({Dim::sym("B"), 4});
  m.states.push_back(kc);
  StateInfo c;
  c.name = "c";
  c.type = i32();
  c.init = StateInfo::Init::Full;
  c.fill = 3;
  m.states.push_back(c);
  Builder b("main");
  ValueId x = b.param("x", f32({2}));
  b.ret({x});
  m.functions.push_back(b.f);
  EXPECT_EQ(print_module(m),
            "module tiny\n"
            "weight \"fc.weight\": f16[4, 2]\n"
            "state kc: f32[B, 4] = zeros\n"
            "state c: i32[] = full(3)\n"
            "\n"
            "func @main(%0 x: f32[2]) -> (f32[2]) {\n"
            "  return %0\n"
            "}\n");
}

}  // namespace
}  // namespace grape::ir
