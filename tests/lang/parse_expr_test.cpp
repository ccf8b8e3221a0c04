// Expressions: precedence, associativity, postfix forms, literals, spans.
#include <gtest/gtest.h>

#include "tests/lang/parse_helpers.h"

namespace grape::testing {
namespace {

TEST(ParseExpr, Literals) {
  EXPECT_EQ(expr("42"), "42");
  EXPECT_EQ(expr("1.0"), "1.0");
  EXPECT_EQ(expr("1e-5"), "1e-5");
  EXPECT_EQ(expr(".5"), ".5");
  EXPECT_EQ(expr("1.5E+3"), "1.5E+3");
  EXPECT_EQ(expr("true"), "true");
  EXPECT_EQ(expr("false"), "false");
  EXPECT_EQ(expr("\"tanh\""), "\"tanh\"");
  EXPECT_EQ(expr("-1"), "(- 1)");
  EXPECT_EQ(expr("9223372036854775807"), "9223372036854775807");
}

TEST(ParseExpr, LiteralValues) {
  auto p = parse("const A = 1e-5\nconst B = \"a\\\"b\\\\c\\nd\\te\"\nconst C = 007\n");
  ASSERT_FALSE(p->diags.has_errors()) << p->errors();
  EXPECT_DOUBLE_EQ(p->program.consts[0].value->float_value, 1e-5);
  EXPECT_EQ(p->program.consts[1].value->text, "a\"b\\c\nd\te");
  EXPECT_EQ(p->program.consts[2].value->int_value, 7);
}

TEST(ParseExpr, Precedence) {
  EXPECT_EQ(expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr("a / b * c % d"), "(% (* (/ a b) c) d)");
  EXPECT_EQ(expr("a @ b + c"), "(+ (@ a b) c)");
  EXPECT_EQ(expr("-a * b"), "(* (- a) b)");
  EXPECT_EQ(expr("a * -b"), "(* a (- b))");
  EXPECT_EQ(expr("- -a"), "(- (- a))");
  EXPECT_EQ(expr("-x[0]"), "(- (index x 0))");
  EXPECT_EQ(expr("a < b + 1"), "(< a (+ b 1))");
  EXPECT_EQ(expr("a == b"), "(== a b)");
  EXPECT_EQ(expr("a != b"), "(!= a b)");
  EXPECT_EQ(expr("a <= b"), "(<= a b)");
  EXPECT_EQ(expr("a >= b"), "(>= a b)");
  EXPECT_EQ(expr("a > b"), "(> a b)");
  EXPECT_EQ(expr("not a == b"), "(not (== a b))");
  EXPECT_EQ(expr("not a and b"), "(and (not a) b)");
  EXPECT_EQ(expr("not not a"), "(not (not a))");
  EXPECT_EQ(expr("a or b and c"), "(or a (and b c))");
  EXPECT_EQ(expr("a and b or c"), "(or (and a b) c)");
  EXPECT_EQ(expr("a or b or c"), "(or (or a b) c)");
  EXPECT_EQ(expr("a < b and b < c"), "(and (< a b) (< b c))");
  EXPECT_EQ(expr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(expr("done or (next == EOS)"), "(or done (== next EOS))");
}

TEST(ParseExpr, Postfix) {
  EXPECT_EQ(expr("h[i].ln_1.weight"), "(. (. (index h i) ln_1) weight)");
  EXPECT_EQ(expr("fc1.weight"), "(. fc1 weight)");
  EXPECT_EQ(expr("h.3.attn.c_attn.bias"), "(. (. (. (. h 3) attn) c_attn) bias)");
  EXPECT_EQ(expr("x[0][1]"), "(index (index x 0) 1)");
  EXPECT_EQ(expr("x[:, -1, :]"), "(index x (: _ _) (- 1) (: _ _))");
  EXPECT_EQ(expr("x[a:b]"), "(index x (: a b))");
  EXPECT_EQ(expr("x[..., 0]"), "(index x ... 0)");
  EXPECT_EQ(expr("x[::2]"), "(index x (: _ _ 2))");
  EXPECT_EQ(expr("x[1:]"), "(index x (: 1 _))");
  EXPECT_EQ(expr("x[:n:2]"), "(index x (: _ n 2))");
  EXPECT_EQ(expr("x[1::-1]"), "(index x (: 1 _ (- 1)))");
  EXPECT_EQ(expr("kc[:, :, t, :]"), "(index kc (: _ _) (: _ _) t (: _ _))");
  EXPECT_EQ(expr("prompt[:, S-1]"), "(index prompt (: _ _) (- S 1))");
}

TEST(ParseExpr, Calls) {
  EXPECT_EQ(expr("f()"), "(call f)");
  EXPECT_EQ(expr("f(x)"), "(call f x)");
  EXPECT_EQ(expr("f(x,)"), "(call f x)");
  EXPECT_EQ(expr("softmax(x, axis=-1)"), "(call softmax x axis=(- 1))");
  EXPECT_EQ(expr("gelu(x, approximate=\"tanh\")"), "(call gelu x approximate=\"tanh\")");
  EXPECT_EQ(expr("sum(x, axis=(0, 1), keepdims=true)"), "(call sum x axis=(tuple 0 1) keepdims=true)");
  EXPECT_EQ(expr("layer_norm(x, g, b, eps=1e-5)"), "(call layer_norm x g b eps=1e-5)");
  EXPECT_EQ(expr("max(x, axis=0)"), "(call max x axis=0)");
  EXPECT_EQ(expr("max"), "max");
  EXPECT_EQ(expr("zeros((B, N), f32)"), "(call zeros (tuple B N) f32)");
  EXPECT_EQ(expr("f(g(x), h(y)[0])"), "(call f (call g x) (index (call h y) 0))");
  EXPECT_EQ(expr("f(\n  x,\n  y\n)"), "(call f x y)");
}

TEST(ParseExpr, Tuples) {
  EXPECT_EQ(expr("(a)"), "a");
  EXPECT_EQ(expr("(a,)"), "(tuple a)");
  EXPECT_EQ(expr("(a, b)"), "(tuple a b)");
  EXPECT_EQ(expr("(a, b,)"), "(tuple a b)");
  EXPECT_EQ(expr("((a, b), c)"), "(tuple (tuple a b) c)");
  EXPECT_EQ(expr("(N)"), "N");
}

TEST(ParseExpr, FloatVersusMemberAndRange) {
  EXPECT_EQ(expr("a*.5"), "(* a .5)");
  EXPECT_EQ(expr("a - .5"), "(- a .5)");
  EXPECT_EQ(expr("x.5"), "(. x 5)");
  EXPECT_EQ(expr("f(x).0"), "(. (call f x) 0)");
  EXPECT_EQ(expr("1.5"), "1.5");
}

TEST(ParseExpr, Spans) {
  // columns:                1        10        20        30
  auto p = parse("const X = (a + b) * f(c)[0].w\n");
  ASSERT_FALSE(p->diags.has_errors()) << p->errors();
  const auto& mul = p->program.consts[0].value;
  EXPECT_EQ(where(mul->span), "1:11-1:30");
  const auto& add = mul->args[0];
  EXPECT_EQ(where(add->span), "1:12-1:17");
  EXPECT_EQ(where(add->args[0]->span), "1:12-1:13");
  const auto& member = mul->args[1];
  EXPECT_EQ(member->kind, ast::ExprKind::Member);
  EXPECT_EQ(where(member->span), "1:21-1:30");
  const auto& index = member->args[0];
  EXPECT_EQ(where(index->span), "1:21-1:28");
  EXPECT_EQ(where(index->items[0].span), "1:26-1:27");
  const auto& call = index->args[0];
  EXPECT_EQ(where(call->span), "1:21-1:25");
  EXPECT_EQ(where(call->callee_span), "1:21-1:22");

  auto q = parse("const Y = x[:, 1:n]\nconst Z = f(a, key=2)\n");
  ASSERT_FALSE(q->diags.has_errors()) << q->errors();
  const auto& items = q->program.consts[0].value->items;
  EXPECT_EQ(where(items[0].span), "1:13-1:14");
  EXPECT_EQ(where(items[1].span), "1:16-1:19");
  const auto& kw = q->program.consts[1].value->kwargs.at(0);
  EXPECT_EQ(where(kw.name_span), "2:16-2:19");
  EXPECT_EQ(where(kw.value->span), "2:20-2:21");
  EXPECT_EQ(where(q->program.consts[1].name_span), "2:7-2:8");
  EXPECT_EQ(where(q->program.consts[1].span), "2:1-2:22");
}

TEST(ParseExpr, OperatorNames) {
  EXPECT_STREQ(ast::to_string(ast::BinaryOp::MatMul), "@");
  EXPECT_STREQ(ast::to_string(ast::BinaryOp::And), "and");
  EXPECT_STREQ(ast::to_string(ast::UnaryOp::Not), "not");
  EXPECT_STREQ(ast::to_string(ast::UnaryOp::Neg), "-");
}

}  // namespace
}  // namespace grape::testing
