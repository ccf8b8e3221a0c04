// ir::Dim: canonical form, constant folding, exact and non-exact symbolic division, evaluation
// and printing.
#include "ir/dim.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>

namespace grape::ir {
namespace {

const Dim B = Dim::sym("B");
const Dim S = Dim::sym("S");
const Dim E = Dim::sym("E");

// The message of the std::runtime_error that `f` throws, or "<no throw>".
template <class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no throw>";
}

TEST(DimCanonical, ProductIsCommutative) {
  EXPECT_EQ(Dim(3) * E, E * Dim(3));
  EXPECT_EQ(B * S, S * B);
  EXPECT_EQ((B * S).str(), (S * B).str());
}

TEST(DimCanonical, AddThenSubtractIsIdentity) {
  EXPECT_EQ((S + 1) - 1, S);
  EXPECT_EQ((S + B) - B, S);
  EXPECT_EQ(S - S, Dim(0));
  EXPECT_TRUE((S - S).is_const(0));
}

TEST(DimCanonical, Distributes) {
  EXPECT_EQ(B * S + S, S * (B + 1));
  EXPECT_EQ((B + 1) * (B - 1), B * B - 1);
  EXPECT_EQ(Dim(2) * (S + 3), S + S + 6);
}

TEST(DimCanonical, DifferentPolynomialsDiffer) {
  EXPECT_NE(S + 1, S);
  EXPECT_NE(B * S, B + S);
  EXPECT_NE(Dim(2) * S, S * S);
  EXPECT_NE(S, B);
}

TEST(DimConst, Folding) {
  EXPECT_TRUE(Dim().is_const(0));
  EXPECT_TRUE(Dim(7).is_const(7));
  EXPECT_TRUE((Dim(2) + Dim(3)).is_const(5));
  EXPECT_TRUE((Dim(4) * Dim(5)).is_const(20));
  EXPECT_TRUE((Dim(4) - Dim(9)).is_const(-5));
  EXPECT_EQ((Dim(4) - Dim(9)).const_value(), -5);
  EXPECT_FALSE(S.is_const());
  EXPECT_FALSE((S + 1).is_const());
  EXPECT_TRUE((S * 0).is_const(0));
  EXPECT_TRUE(((S + 2) - S).is_const(2));
}

TEST(DimDiv, ExactSymbolic) {
  auto a = Dim::div(Dim(3) * E, E);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->is_const(3));

  auto b = Dim::div(B * S, S);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, B);

  auto c = Dim::div(Dim(2) * S + 4, Dim(2));
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, S + 2);

  auto d = Dim::div(S * S, S);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, S);

  auto e = Dim::div(Dim(6) * B * S + Dim(3) * S, Dim(3) * S);
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, Dim(2) * B + 1);

  auto zero = Dim::div(Dim(0), S);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(zero->is_const(0));
}

TEST(DimDiv, ConstantDivision) {
  auto q = Dim::div(Dim(12), Dim(4));
  ASSERT_TRUE(q);
  EXPECT_TRUE(q->is_const(3));
  auto n = Dim::div(Dim(-12), Dim(4));
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->is_const(-3));
  EXPECT_FALSE(Dim::div(Dim(7), Dim(2)));  // inexact constants: an error now, not an atom
  EXPECT_FALSE(Dim::div(Dim(7), Dim(0)));  // by zero
  EXPECT_FALSE(Dim::div(S, Dim(0)));
  EXPECT_FALSE(Dim::div(S, S - S));
}

TEST(DimDiv, NonExactBecomesAtom) {
  auto h = Dim::div(S, Dim(2));
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->is_const());
  EXPECT_NE(*h, S);
  EXPECT_EQ(h->str(), "(S)/(2)");
  EXPECT_EQ(h->eval({{"S", 6}}), 3);
  EXPECT_EQ(h->eval({{"S", 0}}), 0);
  EXPECT_EQ(h->eval({{"S", -4}}), -2);
  std::string msg = thrown([&] { h->eval({{"S", 7}}); });
  EXPECT_NE(msg.find("(S)/(2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("exact"), std::string::npos) << msg;

  // The same division written twice is the same atom.
  EXPECT_EQ(*Dim::div(S, Dim(2)), *h);
}

TEST(DimDiv, AtomWithSymbolicDenominator) {
  auto q = Dim::div(Dim(6), S);
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->is_const());
  EXPECT_EQ(q->eval({{"S", 3}}), 2);
  EXPECT_NE(thrown([&] { q->eval({{"S", 4}}); }), "<no throw>");
  EXPECT_NE(thrown([&] { q->eval({{"S", 0}}); }), "<no throw>");  // division by zero at run time

  auto r = Dim::div(S + 1, S);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->eval({{"S", 1}}), 2);
  EXPECT_NE(thrown([&] { r->eval({{"S", 2}}); }), "<no throw>");

  // Division by a sum: S*(B+1) / (B+1) is not simplified, but evaluates exactly.
  auto p = Dim::div(B * S + S, B + 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->eval({{"B", 2}, {"S", 3}}), 3);
}

TEST(DimDiv, AtomsTakePartInArithmetic) {
  Dim h = *Dim::div(S, Dim(2));
  Dim x = h * 3 + B;
  EXPECT_EQ(x.eval({{"S", 8}, {"B", 1}}), 13);
  EXPECT_NE(thrown([&] { x.eval({{"S", 9}, {"B", 1}}); }), "<no throw>");
  // Once the atom cancels out, it is no longer needed (nor checked).
  Dim gone = x - h * 3;
  EXPECT_EQ(gone, B);
  EXPECT_EQ(gone.eval({{"B", 5}}), 5);
  std::set<std::string> syms;
  x.collect_symbols(syms);
  EXPECT_EQ(syms, (std::set<std::string>{"B", "S"}));
}

TEST(DimEval, Values) {
  EXPECT_EQ(Dim(5).eval({}), 5);
  EXPECT_EQ((B * S + S).eval({{"B", 2}, {"S", 3}}), 9);
  EXPECT_EQ((S - B * 2).eval({{"B", 4}, {"S", 3}}), -5);
  EXPECT_EQ((E * E).eval({{"E", 7}}), 49);
}

TEST(DimEval, MissingSymbolThrowsNamingIt) {
  std::string msg = thrown([] { (B * S + 1).eval({{"B", 2}}); });
  EXPECT_NE(msg.find("S"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not bound"), std::string::npos) << msg;

  std::string msg2 = thrown([] { Dim::sym("HEADS").eval({{"H", 2}}); });
  EXPECT_NE(msg2.find("HEADS"), std::string::npos) << msg2;

  // Inside a division atom too.
  Dim q = *Dim::div(Dim::sym("T"), Dim(2));
  std::string msg3 = thrown([&] { q.eval({}); });
  EXPECT_NE(msg3.find("T"), std::string::npos) << msg3;
  EXPECT_NE(msg3.find("not bound"), std::string::npos) << msg3;
}

TEST(DimEval, OverflowThrowsNamingTheDimAndOperands) {
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(thrown([&] {
              (B * S).eval({{"B", big}, {"S", 4}});
            }),
            "dim B*S = 4611686018427387904 * 4 overflows int64");
  EXPECT_EQ(thrown([&] {
              (B + S).eval({{"B", big}, {"S", big}});
            }),
            "dim B + S = 4611686018427387904 + 4611686018427387904 overflows int64");
  EXPECT_EQ(thrown([&] { (E * 3).eval({{"E", big}}); }), "dim 3*E = 3 * 4611686018427387904 overflows int64");
  EXPECT_EQ(thrown([&] {
              (Dim(0) - S - 2).eval({{"S", INT64_MAX}});
            }),
            "dim -S - 2 = -2 + -9223372036854775807 overflows int64");
  // Inside a division atom, and the one quotient that does not fit.
  Dim q = *Dim::div(B * S, E);
  EXPECT_NE(thrown([&] {
              q.eval({{"B", big}, {"S", 4}, {"E", 2}});
            }).find("overflows int64"),
            std::string::npos);
  Dim r = *Dim::div(B, E);
  EXPECT_NE(thrown([&] {
              r.eval({{"B", INT64_MIN}, {"E", -1}});
            }).find("overflows int64"),
            std::string::npos);
  // Near the limit without passing it.
  EXPECT_EQ((B * S).eval({{"B", big}, {"S", 1}}), big);
  EXPECT_EQ((B + S).eval({{"B", INT64_MAX}, {"S", 0}}), INT64_MAX);
}

TEST(DimStr, Formatting) {
  EXPECT_EQ(Dim().str(), "0");
  EXPECT_EQ(Dim(768).str(), "768");
  EXPECT_EQ(Dim(-1).str(), "-1");
  EXPECT_EQ(S.str(), "S");
  EXPECT_EQ((S + 1).str(), "S + 1");
  EXPECT_EQ((Dim(1) + S).str(), "S + 1");
  EXPECT_EQ((S - 1).str(), "S - 1");
  EXPECT_EQ((E * 3).str(), "3*E");
  EXPECT_EQ((Dim(0) - S).str(), "-S");
  EXPECT_EQ((B * S + S).str(), "B*S + S");
  EXPECT_EQ((Dim(2) * S * B).str(), "2*B*S");
  EXPECT_EQ((S - B * 2).str(), "-2*B + S");
  EXPECT_EQ((E * E).str(), "E*E");
  EXPECT_EQ(dims_to_string({B, Dim(768), S + 1}), "B, 768, S + 1");
  EXPECT_EQ(dims_to_string({}), "");
}

// Coefficients past int64 throw DimOverflow (before: signed overflow, undefined behaviour, found by
// fuzz_program under UBSan with reshape(x, (9223372036854775807, 3))).
TEST(DimArithmetic, OverflowThrowsInsteadOfWrapping) {
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(thrown([&] { (void)(Dim(max) * Dim(3)); }), "dimension 9223372036854775807 * 3 overflows int64");
  EXPECT_THROW((void)(Dim(max) + Dim(1)), DimOverflow);
  EXPECT_THROW((void)(Dim(min) - Dim(1)), DimOverflow);
  EXPECT_THROW((void)(Dim(0) - Dim(min)), DimOverflow);
  // A symbolic term's coefficient, and two products that meet in one term.
  EXPECT_THROW((void)(B * Dim(max / 2 + 1) * Dim(2)), DimOverflow);
  EXPECT_THROW((void)((B + Dim(1)) * (B + Dim(max))), DimOverflow);
  EXPECT_THROW((void)Dim::div(Dim(min), Dim(-1)), DimOverflow);
  EXPECT_THROW((void)Dim::div(B * Dim(min), Dim(-1)), DimOverflow);
  // The largest values that fit still work.
  EXPECT_EQ((Dim(max - 1) + Dim(1)).const_value(), max);
  EXPECT_EQ((Dim(min + 1) - Dim(1)).const_value(), min);
  EXPECT_EQ((Dim(max / 3) * Dim(3)).const_value(), max - max % 3);
  EXPECT_EQ((B * Dim(min / 2) * Dim(2)).str(), (B * Dim(min)).str());
  // Printing the most negative coefficient (its magnitude does not fit in int64), as the
  // overflow messages do.
  EXPECT_EQ((B * Dim(min)).str(), "-9223372036854775808*B");
  EXPECT_EQ(Dim(min).str(), "-9223372036854775808");
  EXPECT_EQ(thrown([&] { (void)(Dim(min) - Dim(1)); }), "dimension -9223372036854775808 - 1 overflows int64");
}

TEST(DimCollect, Symbols) {
  std::set<std::string> syms;
  (B * S + E + 4).collect_symbols(syms);
  EXPECT_EQ(syms, (std::set<std::string>{"B", "E", "S"}));
  std::set<std::string> none;
  Dim(4).collect_symbols(none);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace grape::ir
