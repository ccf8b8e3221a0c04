#include "ir/dim.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace grape::ir {

Dim::Dim(int64_t c) {
  if (c != 0) terms_[{}] = c;
}

Dim Dim::sym(const std::string& name) {
  Dim d;
  d.terms_[{name}] = 1;
  return d;
}

bool Dim::is_const() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }

int64_t Dim::const_value() const { return terms_.empty() ? 0 : terms_.begin()->second; }

void Dim::normalize() {
  for (auto it = terms_.begin(); it != terms_.end();) it = it->second == 0 ? terms_.erase(it) : std::next(it);
  // Drop atoms no longer referenced.
  for (auto it = atoms_.begin(); it != atoms_.end();) {
    bool used = false;
    for (const auto& [m, c] : terms_)
      if (std::find(m.begin(), m.end(), it->first) != m.end()) used = true;
    it = used ? std::next(it) : atoms_.erase(it);
  }
}

// "dimension A op B overflows int64".
static DimOverflow overflow(const Dim& a, const char* op, const Dim& b) {
  return DimOverflow("dimension " + a.str() + " " + op + " " + b.str() + " overflows int64");
}

Dim Dim::sum(const Dim& a, const Dim& b, bool subtract) {
  Dim r = a;
  for (const auto& [m, c] : b.terms_) {
    int64_t& t = r.terms_[m];
    if (subtract ? __builtin_sub_overflow(t, c, &t) : __builtin_add_overflow(t, c, &t))
      throw overflow(a, subtract ? "-" : "+", b);
  }
  r.atoms_.insert(b.atoms_.begin(), b.atoms_.end());
  r.normalize();
  return r;
}

Dim operator+(const Dim& a, const Dim& b) { return Dim::sum(a, b, false); }

Dim operator-(const Dim& a, const Dim& b) { return Dim::sum(a, b, true); }

Dim operator*(const Dim& a, const Dim& b) {
  Dim r;
  for (const auto& [ma, ca] : a.terms_)
    for (const auto& [mb, cb] : b.terms_) {
      Dim::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t product;
      int64_t& t = r.terms_[m];
      if (__builtin_mul_overflow(ca, cb, &product) || __builtin_add_overflow(t, product, &t))
        throw overflow(a, "*", b);
    }
  r.atoms_ = a.atoms_;
  r.atoms_.insert(b.atoms_.begin(), b.atoms_.end());
  r.normalize();
  return r;
}

// Removes one occurrence of each element of `sub` from `m`; false if `sub` is not contained.
static bool remove_sub_multiset(std::vector<std::string>& m, const std::vector<std::string>& sub) {
  for (const auto& s : sub) {
    auto it = std::find(m.begin(), m.end(), s);
    if (it == m.end()) return false;
    m.erase(it);
  }
  return true;
}

std::optional<Dim> Dim::div(const Dim& a, const Dim& b) {
  if (b.terms_.empty()) return std::nullopt;
  if (b.terms_.size() == 1) {
    // Division by a single term c*m: exact when every term of a contains m and c divides it.
    const auto& [mb, cb] = *b.terms_.begin();
    if (cb == -1)
      for (const auto& [ma, ca] : a.terms_)
        if (ca == std::numeric_limits<int64_t>::min()) throw overflow(a, "/", b);
    Dim r;
    bool exact = true;
    for (const auto& [ma, ca] : a.terms_) {
      Monomial m = ma;
      if (ca % cb != 0 || !remove_sub_multiset(m, mb)) {
        exact = false;
        break;
      }
      r.terms_[m] += ca / cb;
    }
    if (exact) {
      r.atoms_ = a.atoms_;
      r.normalize();
      return r;
    }
    if (a.is_const() && b.is_const()) return std::nullopt;
  }
  std::string name = "(" + a.str() + ")/(" + b.str() + ")";
  Dim r;
  r.terms_[{name}] = 1;
  r.atoms_[name] = std::make_shared<const std::pair<Dim, Dim>>(a, b);
  return r;
}

int64_t Dim::eval(const std::map<std::string, int64_t>& env) const {
  // Symbols bound from huge (possibly empty) inputs can push a product or sum past int64; a wrapped
  // value would surface later as a "negative" or a wrong but plausible dimension.
  auto overflow = [this](int64_t a, const char* op, int64_t b) {
    return std::overflow_error("dim " + str() + " = " + std::to_string(a) + " " + op + " " +
                               std::to_string(b) + " overflows int64");
  };
  int64_t total = 0;
  for (const auto& [m, c] : terms_) {
    int64_t v = c;
    for (const auto& s : m) {
      auto atom = atoms_.find(s);
      int64_t x;
      if (atom != atoms_.end()) {
        int64_t num = atom->second->first.eval(env), den = atom->second->second.eval(env);
        if (den == -1 && num == std::numeric_limits<int64_t>::min()) throw overflow(num, "/", den);
        if (den == 0 || num % den != 0)
          throw std::runtime_error("dimension " + s + " = " + std::to_string(num) + "/" + std::to_string(den) +
                                   " is not an exact division");
        x = num / den;
      } else {
        auto it = env.find(s);
        if (it == env.end()) throw std::runtime_error("symbolic dimension " + s + " is not bound");
        x = it->second;
      }
      int64_t product;
      if (__builtin_mul_overflow(v, x, &product)) throw overflow(v, "*", x);
      v = product;
    }
    int64_t sum;
    if (__builtin_add_overflow(total, v, &sum)) throw overflow(total, "+", v);
    total = sum;
  }
  return total;
}

void Dim::collect_symbols(std::set<std::string>& out) const {
  for (const auto& [m, c] : terms_)
    for (const auto& s : m) {
      auto atom = atoms_.find(s);
      if (atom != atoms_.end()) {
        atom->second->first.collect_symbols(out);
        atom->second->second.collect_symbols(out);
      } else {
        out.insert(s);
      }
    }
}

std::string Dim::str() const {
  if (terms_.empty()) return "0";
  std::string out;
  // Symbolic terms first (in canonical order), the constant last: "S + 1", "3*E".
  auto emit = [&](const Monomial& m, int64_t c) {
    bool neg = c < 0;
    // The magnitude as unsigned: -INT64_MIN does not fit in int64.
    uint64_t mag = neg ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (out.empty()) {
      if (neg) out += "-";
    } else {
      out += neg ? " - " : " + ";
    }
    std::string body;
    if (m.empty() || mag != 1) body = std::to_string(mag);
    for (const auto& s : m) body += (body.empty() ? "" : "*") + s;
    out += body;
  };
  for (const auto& [m, c] : terms_)
    if (!m.empty()) emit(m, c);
  auto it = terms_.find({});
  if (it != terms_.end()) emit(it->first, it->second);
  return out;
}

std::string dims_to_string(const std::vector<Dim>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + dims[i].str();
  return out;
}

}  // namespace grape::ir
