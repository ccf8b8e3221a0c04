#include "runtime/shape_buckets.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "base/error.h"

namespace grape {
namespace {

// The smallest power of two >= v (v >= 2), saturating at 2^62.
int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t{1} << 62)) p <<= 1;
  return p;
}

// The pow2 bucket of v above `floor` (floor >= 0): values 0 and 1 are buckets of their own, so a
// dim of 1 (one row, one token) never shares a graph with 2.
DimBucket pow2_bucket(int64_t v, int64_t floor) {
  if (v <= 1) return {v, v};
  int64_t hi = pow2_at_least(v);
  int64_t lo = std::max(hi / 2 + 1, floor + 1);
  return {lo, hi};
}

[[noreturn]] void bad(const std::string& spec, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "buckets \"" + spec + "\": " + why);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool is_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

ShapeBuckets ShapeBuckets::parse(const std::string& spec) {
  ShapeBuckets out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t semi = spec.find(';', pos);
    std::string part = trim(spec.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
    pos = semi == std::string::npos ? spec.size() + 1 : semi + 1;
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string::npos)
      bad(spec, "expected NAME=pow2, NAME=exact or NAME=E1,E2,... in \"" + part + "\"");
    std::string name = trim(part.substr(0, eq)), value = trim(part.substr(eq + 1));
    if (!is_name(name)) bad(spec, "\"" + name + "\" is not a dim name");
    if (out.rules_.count(name)) bad(spec, "dim " + name + " is named twice");
    BucketRule r;
    if (value == "pow2") {
      r.kind = BucketRule::Kind::Pow2;
    } else if (value == "exact") {
      r.kind = BucketRule::Kind::Exact;
    } else {
      r.kind = BucketRule::Kind::Edges;
      size_t at = 0;
      while (at <= value.size()) {
        size_t comma = value.find(',', at);
        std::string e = trim(value.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        at = comma == std::string::npos ? value.size() + 1 : comma + 1;
        char* end = nullptr;
        errno = 0;
        long long x = e.empty() ? 0 : std::strtoll(e.c_str(), &end, 10);
        if (e.empty() || *end != '\0' || errno == ERANGE || x < 1)
          bad(spec, "the rule of " + name + " must be pow2, exact or positive edges like 16,64,256; got \"" +
                        value + "\"");
        if (!r.edges.empty() && x <= r.edges.back()) bad(spec, "the edges of " + name + " must increase");
        r.edges.push_back(x);
      }
    }
    out.rules_[name] = r;
  }
  return out;
}

const BucketRule& ShapeBuckets::rule(const std::string& dim) const {
  static const BucketRule kPow2;
  auto it = rules_.find(dim);
  return it == rules_.end() ? kPow2 : it->second;
}

DimBucket ShapeBuckets::bucket(const std::string& dim, int64_t value) const {
  const BucketRule& r = rule(dim);
  switch (r.kind) {
    case BucketRule::Kind::Exact: return {value, value};
    case BucketRule::Kind::Pow2: return pow2_bucket(value, 0);
    case BucketRule::Kind::Edges: {
      if (value <= 0) return {value, value};
      int64_t lo = 1;
      for (int64_t e : r.edges) {
        if (value <= e) return {lo, e};
        lo = e + 1;
      }
      return pow2_bucket(value, r.edges.back());
    }
  }
  return {value, value};
}

std::string ShapeBuckets::key(const std::map<std::string, int64_t>& dims) const {
  std::string k;
  for (const auto& [name, value] : dims) {
    DimBucket b = bucket(name, value);
    k += (k.empty() ? "" : ", ") + name + "=" +
         (b.lo == b.hi ? std::to_string(b.lo) : std::to_string(b.lo) + ".." + std::to_string(b.hi));
  }
  return k;
}

std::string ShapeBuckets::spec() const {
  std::string s;
  for (const auto& [name, r] : rules_) {
    if (r.kind == BucketRule::Kind::Pow2) continue;
    s += (s.empty() ? "" : ";") + name + "=";
    if (r.kind == BucketRule::Kind::Exact) {
      s += "exact";
    } else {
      for (size_t i = 0; i < r.edges.size(); ++i) s += (i ? "," : "") + std::to_string(r.edges[i]);
    }
  }
  return s;
}

}  // namespace grape
