// Symbolic dimensions: integer polynomials over named symbols (B, S, ...) in a canonical form, so
// that `S+1` written twice, or `3*E` and `E*3`, compare equal. Division that is not exact
// symbolically becomes an opaque atom "(num)/(den)" evaluated (and checked for exactness) at run
// time.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace grape::ir {

// Thrown by Dim's +, -, * and div when a coefficient does not fit in int64 (a program can write
// dims such as 9223372036854775807 * 3; no tensor has that many elements, and wrapping would be
// undefined behaviour). The front end reports it at the expression it was lowering.
class DimOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

class Dim {
 public:
  Dim() = default;  // the constant 0
  Dim(int64_t c);   // NOLINT: implicit from integers is the natural spelling
  static Dim sym(const std::string& name);

  bool is_const() const;
  int64_t const_value() const;  // requires is_const()
  bool is_const(int64_t v) const { return is_const() && const_value() == v; }

  // Throw DimOverflow when a coefficient of the result does not fit in int64.
  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  // Exact division; symbolic non-exact division yields an atom. Returns nullopt for division by a
  // constant that does not divide a constant numerator, or by zero; DimOverflow for
  // INT64_MIN / -1.
  static std::optional<Dim> div(const Dim& a, const Dim& b);
  friend bool operator==(const Dim& a, const Dim& b) { return a.terms_ == b.terms_; }
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }
  friend bool operator<(const Dim& a, const Dim& b) { return a.terms_ < b.terms_; }

  // Value under a binding of every symbol; throws std::runtime_error naming the symbol if one is
  // unbound, or if a division atom is not exact; std::overflow_error (a runtime_error) naming the
  // dim and the operands when the value does not fit in int64.
  int64_t eval(const std::map<std::string, int64_t>& env) const;
  void collect_symbols(std::set<std::string>& out) const;
  std::string str() const;

 private:
  using Monomial = std::vector<std::string>;  // sorted atom names, repeated for powers
  std::map<Monomial, int64_t> terms_;         // no zero coefficients
  // Division atoms referenced by terms_, by their printed name.
  std::map<std::string, std::shared_ptr<const std::pair<Dim, Dim>>> atoms_;
  void normalize();
  // a + b, or a - b: DimOverflow when a coefficient leaves int64.
  static Dim sum(const Dim& a, const Dim& b, bool subtract);
};

std::string dims_to_string(const std::vector<Dim>& dims);  // "B, 768"

}  // namespace grape::ir
