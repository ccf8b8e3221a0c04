#include "tests/fuzz/program_mutator.h"

#include <cctype>
#include <random>
#include <vector>

#include "tests/difftest/program_gen.h"

namespace grape::fuzz {
namespace {

enum class Kind { Ident, Number, Punct, Space };

struct Tok {
  std::string text;
  Kind kind;
};

std::vector<Tok> lex(const std::string& s) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t j = i + 1;
    Kind k = Kind::Punct;
    if (std::isspace(c) || c == '#') {
      k = Kind::Space;  // comments travel with the whitespace: they are never mutated
      if (c == '#')
        while (j < s.size() && s[j] != '\n') ++j;
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    } else if (std::isalpha(c) || c == '_') {
      k = Kind::Ident;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    } else if (std::isdigit(c)) {
      k = Kind::Number;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    } else if (j < s.size() && std::string("=!<>.-").find(static_cast<char>(c)) != std::string::npos &&
               std::string("=.>").find(s[j]) != std::string::npos) {
      ++j;  // ==, !=, <=, >=, .., ->
    }
    out.push_back({s.substr(i, j - i), k});
    i = j;
  }
  return out;
}

std::string join(const std::vector<Tok>& toks) {
  std::string s;
  for (const auto& t : toks) s += t.text;
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// Words a program may use: keywords, dtypes and builtins (lang/ and frontend/builtins.cpp).
const std::vector<std::string> kWords = {
    "fn",          "let",      "var",     "if",     "else",     "for",
    "in",          "while",    "max",     "break",  "continue", "return",
    "const",       "state",    "weights", "prefix", "model",    "true",
    "false",       "and",      "or",      "not",    "zeros",    "ones",
    "full",        "f32",      "f16",     "bf16",   "i32",      "i64",
    "bool",        "int",      "sum",     "mean",   "min",      "prod",
    "all",         "any",      "argmax",  "argmin", "softmax",  "log_softmax",
    "layer_norm",  "rms_norm", "matmul",  "linear", "reshape",  "transpose",
    "permute",     "expand",   "concat",  "split",  "take",     "take_along_axis",
    "topk",        "one_hot",  "cumsum",  "where",  "arange",   "causal_mask",
    "cast",        "exp",      "log",     "sqrt",   "rsqrt",    "tanh",
    "sigmoid",     "relu",     "gelu",    "silu",   "sin",      "cos",
    "floor",       "ceil",     "round",   "sign",   "isnan",    "abs",
    "maximum",     "minimum",  "pow",     "axis",   "eps",      "keepdims",
    "approximate", "B",        "S",       "N"};

const std::vector<std::string> kNumbers = {"0",
                                           "1",
                                           "2",
                                           "3",
                                           "-1",
                                           "4096",
                                           "4097",
                                           "65536",
                                           "2147483647",
                                           "2147483648",
                                           "9223372036854775807",
                                           "99999999999999999999",
                                           "0.5",
                                           "1e30",
                                           "1e-45",
                                           "0.0",
                                           "100000"};

const std::vector<std::string> kPuncts = {"+",  "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "@",
                                          "..", ":", ",", "(", ")", "[",  "]",  "{", "}",  "=", "->", "."};

const std::vector<std::string> kSnippets = {"break",
                                            "continue",
                                            "return x",
                                            "let q = x",
                                            "var q = 0",
                                            "const Q = 1 / 0",
                                            "const Q = C",
                                            "state sq: f32[4] = zeros",
                                            "x = x + 1",
                                            "if true { break }",
                                            "while true { }",
                                            "while true max 3 { }",
                                            "for i in 0..4097 { let z = x[i] }",
                                            "let a, b = topk(x, 2)",
                                            "let t = (x, x)",
                                            "return (x, x)",
                                            "fn g(x: f32[4]) -> f32[4] { return g(x) }",
                                            "let e = x[99]",
                                            "let r = reshape(x, (3, 3))"};

class Mutator {
 public:
  Mutator(const std::string& program, uint64_t seed) : rng_(seed), program_(program) {}

  std::string run() {
    std::string p = program_;
    int n = pick(1, 3);
    for (int i = 0; i < n; ++i) p = once(p);
    return p;
  }

 private:
  std::mt19937_64 rng_;
  std::string program_;

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <class T>
  const T& any(const std::vector<T>& v) {
    return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))];
  }

  std::string once(const std::string& p) {
    switch (pick(0, 11)) {
      case 0: return difftest::generate_program(rng_()).source;
      case 1:
      case 2: return replace_token(p, Kind::Ident);
      case 3: return replace_token(p, Kind::Number);
      case 4: return replace_token(p, Kind::Punct);
      case 5: return drop_token(p);
      default: return edit_lines(p);
    }
  }

  std::string replace_token(const std::string& p, Kind kind) {
    std::vector<Tok> toks = lex(p);
    std::vector<size_t> at;
    std::vector<std::string> names;
    for (size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].kind == kind) at.push_back(i);
      if (toks[i].kind == Kind::Ident) names.push_back(toks[i].text);
    }
    if (at.empty()) return edit_lines(p);
    Tok& t = toks[any(at)];
    if (kind == Kind::Number) {
      t.text = any(kNumbers);
    } else if (kind == Kind::Punct) {
      t.text = any(kPuncts);
    } else if (pick(0, 3) == 0 && t.text.size() > 1) {
      size_t i = static_cast<size_t>(pick(0, static_cast<int>(t.text.size()) - 2));
      std::swap(t.text[i], t.text[i + 1]);  // a typo
    } else {
      t.text = pick(0, 1) ? any(kWords) : any(names);
    }
    return join(toks);
  }

  std::string drop_token(const std::string& p) {
    std::vector<Tok> toks = lex(p);
    if (toks.empty()) return p;
    toks.erase(toks.begin() + pick(0, static_cast<int>(toks.size()) - 1));
    return join(toks);
  }

  std::string edit_lines(const std::string& p) {
    std::vector<std::string> lines = split_lines(p);
    if (lines.empty()) return std::string(any(kSnippets)) + "\n";
    size_t i = static_cast<size_t>(pick(0, static_cast<int>(lines.size()) - 1));
    size_t j = static_cast<size_t>(pick(0, static_cast<int>(lines.size()) - 1));
    switch (pick(0, 6)) {
      case 0: lines.insert(lines.begin() + static_cast<long>(i), lines[j]); break;
      case 1: lines.erase(lines.begin() + static_cast<long>(i)); break;
      case 2: std::swap(lines[i], lines[j]); break;
      case 3: lines.insert(lines.begin() + static_cast<long>(i), any(kSnippets)); break;
      case 4: {  // wrap a line in a control-flow statement
        const char* heads[] = {"if true {",          "if x[0] > 0.0 {",    "for i in 0..3 {",
                               "for i in 0..n {",    "while true max 2 {", "while false {",
                               "if n > 1 { } else {"};
        lines[i] = std::string(heads[pick(0, 6)]) + "\n" + lines[i] + "\n}";
        break;
      }
      case 5: lines[i] += " " + lines[j]; break;
      default: lines.resize(i); break;  // a program cut short
    }
    return join_lines(lines);
  }
};

}  // namespace

std::string mutate_program(const std::string& program, uint64_t seed) { return Mutator(program, seed).run(); }

std::string cross_programs(const std::string& a, const std::string& b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> la = split_lines(a), lb = split_lines(b), out;
  size_t ca = la.empty() ? 0 : rng() % (la.size() + 1), cb = lb.empty() ? 0 : rng() % (lb.size() + 1);
  out.assign(la.begin(), la.begin() + static_cast<long>(ca));
  out.insert(out.end(), lb.begin() + static_cast<long>(cb), lb.end());
  return join_lines(out);
}

}  // namespace grape::fuzz
