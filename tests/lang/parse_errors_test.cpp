// Syntax and lexical errors: message, line:col, and that every error of a file is reported.
#include <gtest/gtest.h>

#include "tests/lang/parse_helpers.h"

namespace grape::testing {
namespace {

std::string errors_of(const std::string& text) { return parse(text)->errors(); }

TEST(ParseErrors, Catalogue) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"fn f() {\n  let x = }\n", "2:11: unexpected '}', expected an expression\n"},
      {"fn f() {\n  let x = 1 +\n}\n", "2:14: unexpected end of line, expected an expression\n"},
      {"fn f() {\n  let = 1\n}\n", "2:7: unexpected '=', expected a name\n"},
      {"fn f() {\n  if a == b == c { }\n}\n",
       "2:13: unexpected '=='; comparisons do not chain, use 'and' or parentheses\n"},
      {"fn f(x: f16[B) -> f16[B] {\n  return x\n}\n", "1:14: unexpected ')', expected an operator, ']' or ','\n"},
      {"fnn main(x: f16[B]) -> f16[B] {\n  let y = 1\n}\n",
       "1:1: unexpected identifier 'fnn', expected a declaration ('model', 'const', 'weights', 'state' or 'fn')\n"},
      {"weights {\n  a.b f16[N]\n}\n", "2:7: unexpected identifier 'f16', expected '[', ':' or '.'\n"},
      {"weights {\n  d: f17[N]\n}\n",
       "2:6: unknown element type 'f17', expected f32, f16, bf16, i32, i64 or bool (did you mean 'f16'?)\n"},
      {"fn f() {\n  while x foo 3 { }\n}\n", "2:11: unexpected identifier 'foo', expected 'max' or '{'\n"},
      {"fn f() {\n  for i = 0..3 { }\n}\n", "2:9: unexpected '=', expected 'in'\n"},
      {"fn f() {\n  x + 1 = 2\n}\n",
       "2:3: cannot assign to this expression; expected a variable or a slice of one (x[...])\n"},
      {"fn f() {\n  if x { }\n  else { }\n  else { }\n}\n", "4:3: unexpected 'else', expected end of line\n"},
      {"fn f() {\n  let c = x.f(1)\n}\n", "2:14: unexpected '(', expected an operator or end of line\n"},
      {"fn f(x: f32) -> f32[] {\n  return x\n}\n", "1:9: 'f32' needs a shape: write f32[] for a scalar\n"},
      {"fn f(x: foo) {\n}\n", "1:9: unexpected identifier 'foo', expected a type (like f32[N]) or 'int'\n"},
      {"state s: f32[] = zero\n", "1:18: unknown state initialiser 'zero', expected zeros, ones or full(VALUE)\n"},
      {"state t: f32[] = full\n", "1:18: 'full' needs a value: full(VALUE)\n"},
      {"state t: f32[] = zeros(3)\n",
       "1:18: unknown state initialiser 'zeros(...)', expected zeros, ones or full(VALUE)\n"},
      {"const A = 1\nmodel late\n", "2:1: 'model' must be the first declaration of the file\n"},
      {"fn f() {\n  let x = f(a=1, 2)\n}\n", "2:18: positional argument after keyword argument\n"},
      {"fn f() {\n  let y = x[]\n}\n", "2:13: unexpected ']', expected an expression, ':' or '...'\n"},
      {"fn f() {\n  return 1\n", "3:1: unexpected end of file, expected '}'\n"},
      {"const A = 1 const B = 2\n", "1:13: unexpected 'const', expected an operator or end of line\n"},
      {"weights prefx \"a\" { }\n", "1:9: unexpected identifier 'prefx', expected 'prefix' or '{'\n"},
      {"fn f() {\n  let a = (1, 2\n}\n", "3:1: unexpected '}', expected an operator, ')' or ','\n"},
      {"fn f() { if x { } else y }\n", "1:24: unexpected identifier 'y', expected 'if' or '{'\n"},
      {"const X = ()\n", "1:12: unexpected ')', expected an expression\n"},
      {"fn f() -> int { }\n", "1:15: unexpected '{', expected '['\n"},
      {"fn f() {\n  let a, = 1\n}\n", "2:10: unexpected '=', expected a name\n"},
      {"}\n", "1:1: unexpected '}', expected a declaration ('model', 'const', 'weights', 'state' or 'fn')\n"},
      // Lexical errors.
      {"const X = \"abc\n", "1:11: unterminated string literal (missing closing '\"')\n"},
      {"const Y = 99999999999999999999\n", "1:11: integer literal 99999999999999999999 is out of range of int64\n"},
      {"const Y = 9223372036854775808\n", "1:11: integer literal 9223372036854775808 is out of range of int64\n"},
      {"const Y = 1e999\n", "1:11: float literal 1e999 is out of range\n"},
      {"const Z = 1 $\n", "1:13: unexpected character '$'\n"},
      {"const W = \"a\\qb\"\n", "1:13: unknown escape sequence '\\q' in string (valid: \\\" \\\\ \\n \\t)\n"},
      {"const A = x && y\n", "1:13: '&&' is not an operator; use 'and'\n"},
      {"const A = x || y\n", "1:13: '||' is not an operator; use 'or'\n"},
      {"const A = !x\n", "1:11: '!' is not an operator; use 'not'\n"},
      {"const A = caf\xc3\xa9\n", "1:14: non-ASCII characters are only allowed in comments and strings\n"},
      {"const A = 1\x01\n", "1:12: unexpected character byte 0x01\n"},
  };
  for (const auto& c : cases) EXPECT_EQ(errors_of(c.text), c.expected) << "in:\n" << c.text;
}

TEST(ParseErrors, NulByteInSource) {
  auto p = parse(std::string("const A = 1\0 + 2\n", 17));
  EXPECT_EQ(p->errors(), "1:12: unexpected character byte 0x00\n");
}

TEST(ParseErrors, CommentsAndStringsMayHoldAnyBytes) {
  auto p = parse("# caf\xc3\xa9 \x01\xff\nconst A = f(x, s=\"caf\xc3\xa9\")\n");
  EXPECT_EQ(p->errors(), "");
}

TEST(ParseErrors, AllErrorsOfAFileAreReported) {
  auto p = parse(R"(model m
const A = 1 +
weights {
  a.b f16[N]
  ok: f16[N]
  c: f16[N
  d: f16[N]
}
fn f(x: f16[B]) -> f16[B] {
  let = 1
  let y = 2
  let z = y +* 3
  if y > { z = 1 }
  return x
}
fn g() {
  let q = ]
}
)");
  EXPECT_EQ(p->errors(),
            "2:14: unexpected end of line, expected an expression\n"
            "4:7: unexpected identifier 'f16', expected '[', ':' or '.'\n"
            "7:3: unexpected identifier 'd', expected an operator, ']' or ','\n"
            "10:7: unexpected '=', expected a name\n"
            "12:14: unexpected '*', expected an expression\n"
            "13:10: unexpected '{', expected an expression\n"
            "17:11: unexpected ']', expected an expression\n");
  // What parsed cleanly is kept.
  ASSERT_EQ(p->program.fns.size(), 2u);
  EXPECT_EQ(dump(p->program.fns[0].body), "{(let y = 2); (return x)}");
  ASSERT_EQ(p->program.weights.size(), 1u);
  EXPECT_EQ(dump(p->program.weights[0].entries.at(0)), "ok: f16[N]");
}

TEST(ParseErrors, ConsecutiveBadLinesAreEachReported) {
  EXPECT_EQ(errors_of("fn f() {\n  let = 1\n  let = 2\n  let = 3\n}\n"),
            "2:7: unexpected '=', expected a name\n"
            "3:7: unexpected '=', expected a name\n"
            "4:7: unexpected '=', expected a name\n");
  EXPECT_EQ(errors_of("const = 1; const = 2\n"),
            "1:7: unexpected '=', expected a name\n"
            "1:18: unexpected '=', expected a name\n");
}

TEST(ParseErrors, BrokenHeaderStillParsesTheBody) {
  // The body of a mangled `if` is parsed in place, so its closing brace does not end the function.
  auto p = parse("fn f() {\n  iff x > 0 {\n    let = 1\n  }\n  return 1 +\n}\nfn g() { }\n");
  EXPECT_EQ(p->errors(),
            "2:7: unexpected identifier 'x', expected an operator, end of line or '='\n"
            "3:9: unexpected '=', expected a name\n"
            "5:13: unexpected end of line, expected an expression\n");
  EXPECT_EQ(p->program.fns.size(), 2u);
}

TEST(ParseErrors, RenderedWithCaret) {
  auto p = parse("fn f() {\n  let x = }\n");
  std::string out = p->diags.render(p->sm);
  EXPECT_NE(out.find("test.grp:2:11: error: unexpected '}', expected an expression\n    let x = }\n            ^\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace grape::testing
