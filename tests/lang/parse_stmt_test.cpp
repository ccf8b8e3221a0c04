// Statements, blocks, control flow and the layout rules (newlines, `;`, `else` on the next line,
// contextual `max`, `0..4`).
#include <gtest/gtest.h>

#include "tests/lang/parse_helpers.h"

namespace grape::testing {
namespace {

std::string ok_body(const std::string& text) {
  std::string errors;
  std::string b = body(text, &errors);
  EXPECT_EQ(errors, "") << "in:\n" << text;
  return b;
}

TEST(ParseStmt, Bindings) {
  EXPECT_EQ(ok_body("let a = 1"), "{(let a = 1)}");
  EXPECT_EQ(ok_body("let a, b, c = f(x)"), "{(let a, b, c = (call f x))}");
  EXPECT_EQ(ok_body("var a: f32[B, 3*E] = x"), "{(var a: f32[B, (* 3 E)] = x)}");
  EXPECT_EQ(ok_body("var s: bool[] = true"), "{(var s: bool[] = true)}");
  EXPECT_EQ(ok_body("var t = 0"), "{(var t = 0)}");
  EXPECT_EQ(ok_body("t = t + 1"), "{(assign t (+ t 1))}");
  EXPECT_EQ(ok_body("kc[:, :, t, :] = k"), "{(assign (index kc (: _ _) (: _ _) t (: _ _)) k)}");
  EXPECT_EQ(ok_body("f(x)"), "{(expr (call f x))}");
}

TEST(ParseStmt, ControlFlow) {
  EXPECT_EQ(ok_body("if c { a = 1 }"), "{(if c {(assign a 1)})}");
  EXPECT_EQ(ok_body("if c { a = 1 } else { a = 2 }"), "{(if c {(assign a 1)} else {(assign a 2)})}");
  EXPECT_EQ(ok_body("if a { x } else if b { y } else { z }"),
            "{(if a {(expr x)} else {(if b {(expr y)} else {(expr z)})})}");
  EXPECT_EQ(ok_body("for i in 0..4 { f(i) }"), "{(for i 0 4 {(expr (call f i))})}");
  EXPECT_EQ(ok_body("for i in 0..L-1 { }"), "{(for i 0 (- L 1) {})}");
  EXPECT_EQ(ok_body("for i in a+1..b*2 { }"), "{(for i (+ a 1) (* b 2) {})}");
  EXPECT_EQ(ok_body("while t < n { t = t + 1 }"), "{(while (< t n) {(assign t (+ t 1))})}");
  EXPECT_EQ(ok_body("while t < n max N { break }"), "{(while (< t n) max N {(break)})}");
  EXPECT_EQ(ok_body("while t < n max 2*N { continue }"), "{(while (< t n) max (* 2 N) {(continue)})}");
  EXPECT_EQ(ok_body("return x"), "{(return x)}");
  EXPECT_EQ(ok_body("return a, b"), "{(return (tuple a b))}");
  EXPECT_EQ(ok_body("return (a, b)"), "{(return (tuple a b))}");
  EXPECT_EQ(ok_body("{ let a = 1 }\n{ }"), "{{(let a = 1)}; {}}");
}

TEST(ParseStmt, MaxIsContextual) {
  EXPECT_EQ(ok_body("let max = 3\nlet m = max(x, axis=1)\nwhile max > 0 max max { max = max - 1 }"),
            "{(let max = 3); (let m = (call max x axis=1)); (while (> max 0) max max {(assign max (- max 1))})}");
  EXPECT_EQ(ok_body("while max(x) > 0 max N { }"), "{(while (> (call max x) 0) max N {})}");
}

TEST(ParseStmt, Separators) {
  EXPECT_EQ(ok_body("let a = 1; let b = 2"), "{(let a = 1); (let b = 2)}");
  EXPECT_EQ(ok_body("\n\n  let a = 1 ;;\n\n # comment\n let b = 2;\n\n"), "{(let a = 1); (let b = 2)}");
  EXPECT_EQ(ok_body("if c { break }; let x = 1"), "{(if c {(break)}); (let x = 1)}");
  EXPECT_EQ(ok_body("if c {\n  break\n}\nlet x = 1"), "{(if c {(break)}); (let x = 1)}");
  EXPECT_EQ(ok_body("let a = f(x,\n  y,\n\n  z)"), "{(let a = (call f x y z))}");
  EXPECT_EQ(ok_body("let a = x[\n 0,\n 1]"), "{(let a = (index x 0 1))}");
  EXPECT_EQ(ok_body("let a = (b +\n c)"), "{(let a = (+ b c))}");
  EXPECT_EQ(ok_body("let a = 1\r\nlet b = 2\r\n"), "{(let a = 1); (let b = 2)}");
}

TEST(ParseStmt, ElseOnNextLine) {
  EXPECT_EQ(ok_body("if a {\n  x\n}\nelse {\n  y\n}"), "{(if a {(expr x)} else {(expr y)})}");
  EXPECT_EQ(ok_body("if a { x }\n\n  # why\n\nelse if b { y }\nelse { z }"),
            "{(if a {(expr x)} else {(if b {(expr y)} else {(expr z)})})}");
  // `elsewhere` is an identifier, not `else`.
  EXPECT_EQ(ok_body("if a { x }\nelsewhere = 1"), "{(if a {(expr x)}); (assign elsewhere 1)}");
}

TEST(ParseStmt, StatementSpans) {
  auto p = parse("fn f() {\n  let a, b = g(x)\n  if a {\n    b\n  } else if c { d }\n}\n");
  ASSERT_FALSE(p->diags.has_errors()) << p->errors();
  const auto& body = *p->program.fns[0].body;
  EXPECT_EQ(where(body.span), "1:8-6:2");
  const auto& let = body.stmts[0];
  EXPECT_EQ(where(let->span), "2:3-2:18");
  EXPECT_EQ(where(let->name_spans[0]), "2:7-2:8");
  EXPECT_EQ(where(let->name_spans[1]), "2:10-2:11");
  const auto& iff = body.stmts[1];
  EXPECT_EQ(where(iff->span), "3:3-5:20");
  EXPECT_EQ(where(iff->then_block->span), "3:8-5:4");
  EXPECT_EQ(where(iff->else_block->span), "5:10-5:20");
  EXPECT_EQ(where(iff->else_block->stmts[0]->span), "5:10-5:20");
}

TEST(ParseDecl, TopLevel) {
  auto p = parse(R"(model gpt2
const L = 12
const E = 768
weights prefix "transformer." {
  wte.weight: f16[V, E]
  h[L] {
    ln_1.weight: f16[E]; ln_1.bias: f16[E]
    attn.c_attn.weight: f16[E, 3*E]
    inner[2] { w: f32[] }
  }
  h.3.attn.c_attn.bias: f16[3*E]
}
weights { x: bool[] }
state kc: f16[L, B, NH, T, E/NH] = zeros
state ones_: i32[] = ones
state step: i32[] = full(-1)
fn main(x: f16[B, D], n: int, flag: bool[],) -> f16[B, 10] { return x }
fn two(a: i32[B]) -> (f32[B], i32[B]) { return a, a }
fn one_tuple(a: i32[B]) -> (f32[B],) { return (a,) }
fn nothing() { }
)");
  ASSERT_FALSE(p->diags.has_errors()) << p->errors();
  EXPECT_EQ(dump(p->program), R"(model gpt2
const L = 12
const E = 768
weights prefix "transformer." {wte.weight: f16[V, E]; h[L] {ln_1.weight: f16[E]; ln_1.bias: f16[E]; attn.c_attn.weight: f16[E, (* 3 E)]; inner[2] {w: f32[]}}; h.3.attn.c_attn.bias: f16[(* 3 E)]}
weights {x: bool[]}
state kc: f16[L, B, NH, T, (/ E NH)] = zeros
state ones_: i32[] = ones
state step: i32[] = full((- 1))
fn main(x: f16[B, D], n: int, flag: bool[]) -> f16[B, 10] {(return x)}
fn two(a: i32[B]) -> (f32[B], i32[B]) {(return (tuple a a))}
fn one_tuple(a: i32[B]) -> (f32[B]) {(return (tuple a))}
fn nothing() {}
)");
  EXPECT_EQ(p->program.file, 0);
  EXPECT_EQ(where(p->program.model_span), "1:7-1:11");
  const auto& w = p->program.weights[0];
  EXPECT_EQ(where(w.prefix_span), "4:16-4:30");
  EXPECT_EQ(where(w.entries[1].span), "6:3-10:4");
  EXPECT_EQ(where(w.entries[1].name_span), "6:3-6:4");
  EXPECT_EQ(where(w.entries[2].name_span), "11:3-11:23");
  EXPECT_EQ(where(w.entries[0].type->span), "5:15-5:24");
  EXPECT_EQ(where(w.entries[0].type->dtype_span), "5:15-5:18");
  const auto& f = p->program.fns[0];
  EXPECT_EQ(where(f.name_span), "17:4-17:8");
  EXPECT_EQ(where(f.params[1].name_span), "17:23-17:24");
  EXPECT_EQ(f.params[1].type.dtype, "int");
  EXPECT_TRUE(f.params[1].type.dims.empty());
  EXPECT_EQ(where(f.span), "17:1-17:72");
  EXPECT_TRUE(p->program.fns[1].tuple_result);
  EXPECT_FALSE(p->program.fns[0].tuple_result);
  EXPECT_TRUE(p->program.fns[2].tuple_result);
  EXPECT_EQ(where(p->program.states[0].span), "14:1-14:41");
}

TEST(ParseDecl, MultiLineSignature) {
  auto p = parse("fn f(\n  a: f32[N],\n  b: f32[N]\n) -> f32[N] {\n  return a + b\n}\n");
  ASSERT_FALSE(p->diags.has_errors()) << p->errors();
  EXPECT_EQ(dump(p->program), "fn f(a: f32[N], b: f32[N]) -> f32[N] {(return (+ a b))}\n");
}

TEST(ParseDecl, EmptyAndBlankFiles) {
  for (const char* text : {"", "\n", "# only a comment", "\n\n# c\n;\n", ";;"}) {
    auto p = parse(text);
    EXPECT_FALSE(p->diags.has_errors()) << text << "\n" << p->errors();
    EXPECT_EQ(dump(p->program), "");
  }
}

}  // namespace
}  // namespace grape::testing

namespace grape::testing {
// Regression: a weight group may have a dotted name (BERT's `encoder.layer[L] { ... }`); it was
// rejected with "unexpected '['".
TEST(ParseWeights, DottedGroupName) {
  auto p = parse("weights prefix \"bert.\" {\n  encoder.layer[2] { w: f32[4] }\n}\n");
  EXPECT_EQ(p->errors(), "");
  ASSERT_EQ(p->program.weights.size(), 1u);
  ASSERT_EQ(p->program.weights[0].entries.size(), 1u);
  const auto& g = p->program.weights[0].entries[0];
  EXPECT_TRUE(g.is_group());
  EXPECT_EQ(g.name_parts, (std::vector<std::string>{"encoder", "layer"}));
  ASSERT_EQ(g.children.size(), 1u);
  EXPECT_EQ(g.children[0].name_parts, std::vector<std::string>{"w"});
}
}  // namespace grape::testing
