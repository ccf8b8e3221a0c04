// "did you mean" suggestions and the rendering of long source lines.
#include "lang/diagnostics.h"

#include <gtest/gtest.h>

#include <chrono>

namespace grape {
namespace {

TEST(ClosestName, TranspositionIsOneEdit) {
  EXPECT_EQ(closest_name("tahn", {"take", "tanh", "tile"}), "tanh");
  EXPECT_EQ(closest_name("sfotmax", {"softmax", "sort"}), "softmax");
  EXPECT_EQ(closest_name("lienar", {"linear", "layer_norm"}), "linear");
}

TEST(ClosestName, FarNamesGetNoSuggestion) {
  EXPECT_EQ(closest_name("x", {"weights"}), "");
  EXPECT_EQ(closest_name("abcdef", {"uvwxyz"}), "");
}

TEST(ClosestName, LongNamesAreNotSearched) {
  std::string name(100000, 'a');
  std::vector<std::string> candidates{std::string(99999, 'a'), "tanh"};
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(closest_name(name, candidates), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(closest_name(std::string(64, 'a'), {std::string(63, 'a')}), std::string(63, 'a'));
}

TEST(Render, LongLinesAreCutAroundTheCaret) {
  SourceManager sm;
  std::string line = std::string(100000, 'x') + " bad " + std::string(200000, 'y');
  int f = sm.add("long.grp", line + "\n");
  Diagnostic d;
  d.span = Span{f, {1, 100002}, {1, 100005}};
  d.message = "oops";
  std::string out = render_diagnostic(sm, d);
  EXPECT_LT(out.size(), 600u) << out.size();
  EXPECT_EQ(out.rfind("long.grp:1:100002: error: oops\n  ...", 0), 0u) << out.substr(0, 300);
  // The caret is under "bad".
  auto nl1 = out.find('\n'), nl2 = out.find('\n', nl1 + 1);
  std::string shown = out.substr(nl1 + 1, nl2 - nl1 - 1), caret = out.substr(nl2 + 1);
  EXPECT_EQ(shown.substr(caret.find('^'), 3), "bad") << caret;
  EXPECT_EQ(caret.substr(caret.find('^'), 4), "^~~\n");
}

TEST(QuoteName, ShortNamesAreQuotedWhole) {
  EXPECT_EQ(quote_name("x"), "'x'");
  EXPECT_EQ(quote_name(std::string(kMaxQuotedName, 'a')), "'" + std::string(kMaxQuotedName, 'a') + "'");
}

TEST(QuoteName, LongNamesShowTheirStartAndLength) {
  std::string name = "start" + std::string(100000 - 5, 'a');
  EXPECT_EQ(quote_name(name), "'start" + std::string(kQuotedNameHead - 5, 'a') + "...' (100000 characters)");
  EXPECT_EQ(quote_name(std::string(kMaxQuotedName + 1, 'b')),
            "'" + std::string(kQuotedNameHead, 'b') + "...' (" + std::to_string(kMaxQuotedName + 1) +
                " characters)");
  // The cut does not split a UTF-8 character (U+00E9 is two bytes).
  std::string accents;
  while (accents.size() <= kMaxQuotedName) accents += "\xc3\xa9";
  std::string q = quote_name("a" + accents);
  EXPECT_EQ(q.substr(0, q.find("...")), "'a" + accents.substr(0, kQuotedNameHead - 2));
}

}  // namespace
}  // namespace grape
