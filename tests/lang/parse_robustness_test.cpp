// The parser never crashes, hangs or recurses without bound: deep nesting, long chains and random
// bytes all end in diagnostics.
#include <gtest/gtest.h>

#include <random>

#include "tests/lang/parse_helpers.h"

namespace grape::testing {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

bool mentions(const Parsed& p, const std::string& text) { return p.errors().find(text) != std::string::npos; }

TEST(ParseRobustness, DeepBrackets) {
  auto p = parse("const X = " + repeat("(", 100000) + "1" + repeat(")", 100000) + "\n");
  EXPECT_TRUE(mentions(*p, "1:267: brackets nested too deeply (more than 256 levels)")) << p->errors();
  EXPECT_EQ(p->diags.num_errors(), 1);
  auto q = parse("fn f() {\n" + repeat("{", 5000) + repeat("}", 5000) + "\n}\n");
  EXPECT_TRUE(mentions(*q, "brackets nested too deeply")) << q->errors();
  auto r = parse("const X = " + repeat("f(", 50000) + "\n");
  EXPECT_TRUE(mentions(*r, "brackets nested too deeply")) << r->errors();
}

TEST(ParseRobustness, NestingJustBelowTheLimitIsFine) {
  auto p = parse("const X = " + repeat("(", 250) + "1" + repeat(")", 250) + "\n");
  EXPECT_EQ(p->errors(), "");
  auto q = parse("const X = " + repeat("-", 250) + "1\n");
  EXPECT_EQ(q->errors(), "");
}

TEST(ParseRobustness, LongChainsWithoutBrackets) {
  for (const std::string& text : {
           "const X = " + repeat("-", 100000) + "1\n",
           "const X = " + repeat("not ", 50000) + "a\n",
           "const X = a" + repeat(" + a", 50000) + "\n",
           "const X = a" + repeat(".b", 50000) + "\n",
           "const X = a" + repeat("[0]", 50000) + "\n",
           "fn f() {\n" + repeat("if a {} else ", 20000) + "{}\n}\n",
       }) {
    auto p = parse(text);
    EXPECT_TRUE(mentions(*p, "nested too deeply (more than 256 levels)")) << p->errors();
    EXPECT_EQ(p->diags.num_errors(), 1);
  }
}

TEST(ParseRobustness, ManyErrorsAreCapped) {
  auto p = parse(repeat("const = 1\n", 1000));
  EXPECT_GT(p->diags.num_errors(), Diagnostics::kMaxErrors);
  EXPECT_EQ(static_cast<int>(p->diags.all().size()), Diagnostics::kMaxErrors);
}

TEST(ParseRobustness, UnterminatedEverything) {
  for (const char* text : {"fn f(", "fn f() {", "fn f() { let x = (", "weights {", "weights { h[2] {", "const X = [",
                           "const X = \"", "fn f() { if x {", "fn f() { while", "state", "fn", "\"", "(", "{", "}",
                           ")", "]", "else", "}\nelse", "->", "...", "0..", "1e", "1e+", ".", "#"}) {
    auto p = parse(text);
    (void)p->diags.render(p->sm);
    SUCCEED();
  }
}

TEST(ParseRobustness, RandomBytes) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 300; ++round) {
    std::string text(static_cast<size_t>(rng() % 400), '\0');
    for (auto& c : text) c = static_cast<char>(rng() % 256);
    auto p = parse(text);
    (void)p->diags.render(p->sm);
  }
}

TEST(ParseRobustness, RandomTokenSoup) {
  const char* pieces[] = {"fn ", "f", "(", ")", "{", "}", "[", "]", "\n", ";", "let ", "var ", "x", "=", "1", "2.5",
                          ",", ":", "f16", "if ", "else ", "while ", "max ", "for ", "in ", "..", "...", "->",
                          "return ", "+", "-", "*", "@", "==", "<", "and ", "not ", "\"s\"", "weights ", "state ",
                          "const ", "model ", ".", "# c\n", "break ", "continue ", "true ", "zeros", "full"};
  std::mt19937 rng(777);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) text += pieces[rng() % std::size(pieces)];
    auto p = parse(text);
    (void)p->diags.render(p->sm);
  }
}

}  // namespace
}  // namespace grape::testing
