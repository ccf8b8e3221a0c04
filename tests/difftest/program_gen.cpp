#include "tests/difftest/program_gen.h"

#include <sstream>

namespace grape::difftest {

namespace {

// The value types the generator tracks: f32[4], f32[], i32[], bool[].
enum class Ty { F4, F, I, B };

struct Var {
  std::string name;
  Ty ty;
  bool is_mutable;
};

constexpr int kMaxLoopDepth = 3;
constexpr int kMaxIfDepth = 3;
constexpr int kMaxExprDepth = 3;

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed * 0x9E3779B97F4A7C15ull + 12345) {}

  GeneratedProgram run(uint64_t seed) {
    GeneratedProgram g;
    g.seed = seed;
    with_y_ = chance(0.3);
    // States first: they are globals for every function.
    scopes_.emplace_back();
    std::ostringstream head;
    head << "model difftest_" << seed << "\n";
    head << "const K = " << pick(2, 4) << "\n";
    if (chance(0.85)) {
      const char* init[] = {"zeros", "ones", "full(0.5)", "full(-1.5)"};
      head << "state acc: f32[4] = " << init[pick(0, 3)] << "\n";
      declare("acc", Ty::F4, true);
      g.state_names.push_back("acc");
    }
    if (chance(0.85)) {
      head << "state steps: i32[] = " << (chance(0.7) ? "zeros" : "full(2)") << "\n";
      declare("steps", Ty::I, true);
      g.state_names.push_back("steps");
    }
    if (chance(0.3)) {
      head << "state peak: f32[] = full(-2.0)\n";
      declare("peak", Ty::F, true);
      g.state_names.push_back("peak");
    }
    if (chance(0.2)) {
      head << "state seen: bool[] = zeros\n";
      declare("seen", Ty::B, true);
      g.state_names.push_back("seen");
    }
    out_ << head.str() << "\n";

    int helpers = pick(0, 2);
    for (int h = 0; h < helpers; ++h) gen_helper(h);

    // main
    g.inputs.push_back({"x", DType::F32, {4}});
    if (with_y_) g.inputs.push_back({"y", DType::F32, {4}});
    g.inputs.push_back({"n", DType::I32, {}});
    out_ << "fn main(x: f32[4], " << (with_y_ ? "y: f32[4], " : "") << "n: i32[]) -> (f32[4], i32[]"
         << (with_y_ ? ", f32[]" : "") << ") {\n";
    scopes_.emplace_back();
    declare("x", Ty::F4, false);
    if (with_y_) declare("y", Ty::F4, false);
    declare("n", Ty::I, false);
    indent_ = 1;
    line(std::string("var out = ") + (chance(0.5) ? "x" : "x * 0.5"));
    declare("out", Ty::F4, true);
    line(std::string("var cnt = ") + (chance(0.5) ? "0" : "n"));
    declare("cnt", Ty::I, true);
    budget_ = pick(8, 26);
    gen_stmts(pick(3, 6));
    // A conditional state update at the end, so that state differs between calls.
    if (has_state()) {
      line("if " + gen_cond(1) + " {");
      ++indent_;
      scopes_.emplace_back();
      gen_state_update();
      scopes_.pop_back();
      --indent_;
      line("}");
    }
    // Fold every variable of main's top scope into the results, so that their values matter.
    std::string fo = "out", ci = "cnt";
    for (const auto& v : scopes_.back()) {
      if (v.name == "out" || v.name == "cnt" || v.name == "x" || v.name == "y" || v.name == "n") continue;
      if (v.ty == Ty::F4 || v.ty == Ty::F) fo += " + " + v.name;
      if (v.ty == Ty::I) ci += " + " + v.name;
      if (v.ty == Ty::B) ci += " + cast(" + v.name + ", i32) * 7";
    }
    std::string ret = "return (" + fo + ", " + ci;
    if (with_y_) ret += ", " + gen(Ty::F, 2);
    line(ret + ")");
    scopes_.pop_back();
    out_ << "}\n";
    g.source = out_.str();
    return g;
  }

 private:
  std::mt19937_64 rng_;
  std::ostringstream out_;
  std::vector<std::vector<Var>> scopes_;
  int indent_ = 0;
  int loop_depth_ = 0;
  int if_depth_ = 0;
  int budget_ = 0;
  int counter_ = 0;
  bool with_y_ = false;
  bool in_helper_ = false;
  std::string xn_ = "x", nn_ = "n";  // the f32[4] and i32[] parameters of the current function
  std::vector<std::string> helpers_;
  std::vector<bool> helper_tuple_;  // the helper returns (f32[4], i32[])
  std::vector<std::string> loop_vars_;  // enclosing loop variables, innermost last

  // ---------------------------------------------------------------- randomness
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))]; }

  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }

  void line(const std::string& s) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << s << "\n";
  }

  void declare(const std::string& n, Ty t, bool m) { scopes_.back().push_back({n, t, m}); }

  std::vector<const Var*> visible(Ty t, bool need_mutable) const {
    std::vector<const Var*> out;
    for (const auto& s : scopes_)
      for (const auto& v : s)
        if (v.ty == t && (!need_mutable || v.is_mutable)) out.push_back(&v);
    return out;
  }

  bool has_state() const {
    for (const auto& v : scopes_.front())
      if (v.is_mutable) return true;
    return false;
  }

  // ---------------------------------------------------------------- expressions
  std::string flit() {
    static const std::vector<std::string> lits = {"0.0", "0.5", "1.0", "1.5", "2.0", "3.0", "(-1.0)", "(-0.5)",
                                                  "(-2.0)"};
    return one_of(lits);
  }
  std::string ilit() { return std::to_string(pick(0, 5)); }

  std::string var_of(Ty t) {
    auto vs = visible(t, false);
    if (vs.empty()) return "";
    // Prefer loop variables a little for i32 (they make dynamic indices and bounds).
    if (t == Ty::I && !loop_vars_.empty() && chance(0.4)) return loop_vars_[static_cast<size_t>(pick(0, static_cast<int>(loop_vars_.size()) - 1))];
    return vs[static_cast<size_t>(pick(0, static_cast<int>(vs.size()) - 1))]->name;
  }

  std::string leaf(Ty t) {
    std::string v = chance(0.8) ? var_of(t) : "";
    if (!v.empty()) return v;
    switch (t) {
      case Ty::F4: return chance(0.5) ? xn_ : "full(4, " + flit() + ", f32)";
      case Ty::F: return flit();
      case Ty::I: return ilit();
      case Ty::B: return chance(0.5) ? "true" : "false";
    }
    return "";
  }

  // A name of type f32[4] for indexing (indexing applies to names only).
  std::string f4_name() {
    std::string v = var_of(Ty::F4);
    return v.empty() ? xn_ : v;
  }

  // A device-scalar index: always reads a variable, so it is never a (possibly out-of-range)
  // compile-time index; out-of-range values wrap once and clamp at run time.
  // Only vars, loop variables and the input are used: the front end folds a `let` of a literal
  // to a compile-time integer and then rejects an out-of-range index at compile time.
  std::string dyn_index() {
    std::vector<std::string> cands = loop_vars_;
    cands.push_back(nn_);
    for (const Var* v : visible(Ty::I, true)) cands.push_back(v->name);
    std::string v = one_of(cands);
    switch (pick(0, 4)) {
      case 0: return "(" + v + " + " + ilit() + ")";
      case 1: return "(" + v + " - 1)";
      case 2: return "argmax(" + f4_name() + ", axis=0)";
      default: return v;
    }
  }

  std::string gen(Ty t, int d) {
    if (d <= 0 || chance(0.25)) return leaf(t);
    switch (t) {
      case Ty::F4: return gen_f4(d - 1);
      case Ty::F: return gen_f(d - 1);
      case Ty::I: return gen_i(d - 1);
      case Ty::B: return gen_cond(d);
    }
    return "";
  }

  std::string gen_f4(int d) {
    switch (pick(0, 15)) {
      case 0: return "(" + gen(Ty::F4, d) + " + " + gen(Ty::F4, d) + ")";
      case 1: return "(" + gen(Ty::F4, d) + " - " + gen(Ty::F4, d) + ")";
      case 2: return "(" + gen(Ty::F4, d) + " * 0.5)";
      case 3: return "(" + gen(Ty::F4, d) + " + " + gen(Ty::F, d) + ")";
      case 4: return "maximum(" + gen(Ty::F4, d) + ", " + gen(Ty::F4, d) + ")";
      case 5: return "minimum(" + gen(Ty::F4, d) + ", " + flit() + ")";
      case 6: {
        std::string a = f4_name();
        return "where(" + a + " > " + flit() + ", " + a + ", " + gen(Ty::F4, d) + ")";
      }
      case 7: return "where(" + gen_cond(d) + ", " + gen(Ty::F4, d) + ", " + gen(Ty::F4, d) + ")";
      case 8: return "relu(" + gen(Ty::F4, d) + ")";
      case 9: return "abs(" + gen(Ty::F4, d) + ")";
      case 10: return "(-" + f4_name() + ")";
      case 11: return "concat((" + f4_name() + "[0:2], " + f4_name() + "[2:4]), axis=0)";
      case 12: return "(cast(arange(4, i32), f32) + " + gen(Ty::F4, d) + ")";
      case 13: return "(" + gen(Ty::F4, d) + " * " + gen(Ty::F, d) + ")";
      case 14: return chance(0.3) ? "(softmax(" + gen(Ty::F4, d) + ") * 4.0)" : "(" + xn_ + " * 2.0)";
      default: return "(cast(" + gen(Ty::I, d) + ", f32) + " + gen(Ty::F4, d) + ")";
    }
  }

  std::string gen_f(int d) {
    switch (pick(0, 11)) {
      case 0: return "sum(" + gen(Ty::F4, d) + ")";
      case 1: return "max(" + gen(Ty::F4, d) + ")";
      case 2: return "min(" + gen(Ty::F4, d) + ")";
      case 3: return "mean(" + gen(Ty::F4, d) + ")";
      case 4: return f4_name() + "[" + std::to_string(pick(-4, 3)) + "]";
      case 5: return f4_name() + "[" + dyn_index() + "]";
      case 6: return "(" + gen(Ty::F, d) + " + " + gen(Ty::F, d) + ")";
      case 7: return "(" + gen(Ty::F, d) + " - " + gen(Ty::F, d) + ")";
      case 8: return "(" + gen(Ty::F, d) + " * 0.5)";
      case 9: return "cast(" + gen(Ty::I, d) + ", f32)";
      case 10: return "maximum(" + gen(Ty::F, d) + ", " + gen(Ty::F, d) + ")";
      default: return "where(" + gen_cond(d) + ", " + gen(Ty::F, d) + ", " + gen(Ty::F, d) + ")";
    }
  }

  std::string gen_i(int d) {
    switch (pick(0, 10)) {
      case 0: return "(" + gen(Ty::I, d) + " + " + gen(Ty::I, d) + ")";
      case 1: return "(" + gen(Ty::I, d) + " - " + ilit() + ")";
      case 2: return "argmax(" + gen(Ty::F4, d) + ", axis=0)";
      case 3: return "argmin(" + gen(Ty::F4, d) + ", axis=0)";
      case 4: return "minimum(" + gen(Ty::I, d) + ", " + gen(Ty::I, d) + ")";
      case 5: return "maximum(" + gen(Ty::I, d) + ", " + ilit() + ")";
      case 6: return "(" + gen(Ty::I, d) + " % 3)";
      case 7: return "where(" + gen_cond(d) + ", " + gen(Ty::I, d) + ", " + gen(Ty::I, d) + ")";
      case 8: return "sum(cast(" + gen(Ty::F4, d) + " > " + gen(Ty::F, d) + ", i32))";
      case 9: return "cast(" + gen_cond(d) + ", i32)";
      default: return "(" + gen(Ty::I, d) + " * 2)";
    }
  }

  // A bool[] condition.
  std::string gen_cond(int d) {
    if (d <= 0) {
      switch (pick(0, 3)) {
        case 0: return "(" + leaf(Ty::I) + " < " + leaf(Ty::I) + ")";
        case 1: return "any(" + f4_name() + " > " + flit() + ")";
        case 2: return "(sum(" + f4_name() + ") > " + flit() + ")";
        default: {
          std::string b = var_of(Ty::B);
          return b.empty() ? "(" + leaf(Ty::I) + " >= " + ilit() + ")" : b;
        }
      }
    }
    switch (pick(0, 12)) {
      case 0: return "any(" + gen(Ty::F4, d - 1) + " > " + gen(Ty::F4, d - 1) + ")";
      case 1: return "all(" + gen(Ty::F4, d - 1) + " >= " + flit() + ")";
      case 2: return "(sum(" + gen(Ty::F4, d - 1) + ") > " + flit() + ")";
      case 3: return "(" + gen(Ty::F, d - 1) + " < " + gen(Ty::F, d - 1) + ")";
      case 4: return "(" + gen(Ty::I, d - 1) + " < " + gen(Ty::I, d - 1) + ")";
      case 5: return "(" + gen(Ty::I, d - 1) + " == " + ilit() + ")";
      case 6: return "(" + gen(Ty::I, d - 1) + " >= " + ilit() + ")";
      case 7: return "(not " + gen_cond(d - 1) + ")";
      case 8: return "(" + gen_cond(d - 1) + " and " + gen_cond(d - 1) + ")";
      case 9: return "(" + gen_cond(d - 1) + " or " + gen_cond(d - 1) + ")";
      case 10: return "(" + gen(Ty::I, d - 1) + " != " + gen(Ty::I, d - 1) + ")";
      case 11: return "any(" + f4_name() + " == " + flit() + ")";
      default: return chance(0.5) ? gen_cond(0) : (chance(0.5) ? "true" : "false");
    }
  }

  // Values assigned inside loops are clamped so that no loop-carried value can grow unbounded.
  std::string clamped(Ty t, const std::string& e) {
    if (loop_depth_ == 0 && !in_helper_) return e;
    switch (t) {
      case Ty::F4: case Ty::F: return "minimum(maximum(" + e + ", (-50.0)), 50.0)";
      case Ty::I: return "minimum(maximum(" + e + ", (-1000)), 1000)";
      case Ty::B: return e;
    }
    return e;
  }

  // An update of a mutable variable that usually depends on its old value (loop-carried).
  std::string update_expr(const Var& v) {
    int d = pick(1, kMaxExprDepth - 1);
    switch (v.ty) {
      case Ty::F4:
        switch (pick(0, 4)) {
          case 0: return clamped(v.ty, "(" + v.name + " + " + gen(Ty::F4, d) + ")");
          case 1: return clamped(v.ty, "(" + v.name + " * 0.5 + " + gen(Ty::F, d) + ")");
          case 2: return clamped(v.ty, "maximum(" + v.name + ", " + gen(Ty::F4, d) + ")");
          case 3: return clamped(v.ty, "where(" + gen_cond(d) + ", " + gen(Ty::F4, d) + ", " + v.name + ")");
          default: return clamped(v.ty, gen(Ty::F4, d));
        }
      case Ty::F:
        switch (pick(0, 2)) {
          case 0: return clamped(v.ty, "(" + v.name + " + " + gen(Ty::F, d) + ")");
          case 1: return clamped(v.ty, "maximum(" + v.name + ", " + gen(Ty::F, d) + ")");
          default: return clamped(v.ty, gen(Ty::F, d));
        }
      case Ty::I:
        switch (pick(0, 3)) {
          case 0: return clamped(v.ty, "(" + v.name + " + 1)");
          case 1: return clamped(v.ty, "(" + v.name + " + " + gen(Ty::I, d) + ")");
          case 2: return clamped(v.ty, "(" + v.name + " - " + ilit() + ")");
          default: return clamped(v.ty, gen(Ty::I, d));
        }
      case Ty::B:
        switch (pick(0, 2)) {
          case 0: return "(" + v.name + " or " + gen_cond(d) + ")";
          case 1: return "(not " + v.name + ")";
          default: return gen_cond(d);
        }
    }
    return "";
  }

  // ---------------------------------------------------------------- statements
  void gen_stmts(int count) {
    for (int i = 0; i < count; ++i) gen_stmt();
  }

  void gen_block_body(int count) {
    scopes_.emplace_back();
    ++indent_;
    gen_stmts(count);
    --indent_;
    scopes_.pop_back();
  }

  void gen_decl() {
    static const std::vector<Ty> tys = {Ty::F4, Ty::F4, Ty::F, Ty::I, Ty::I, Ty::B};
    Ty t = one_of(tys);
    bool is_var = chance(0.75);
    std::string n = fresh(is_var ? "v" : "l");
    line(std::string(is_var ? "var " : "let ") + n + " = " + gen(t, pick(0, kMaxExprDepth)));
    declare(n, t, is_var);
  }

  bool gen_assign() {
    static const std::vector<Ty> tys = {Ty::F4, Ty::F4, Ty::F, Ty::I, Ty::I, Ty::B};
    auto vs = visible(one_of(tys), true);
    if (vs.empty()) return false;
    const Var& v = *vs[static_cast<size_t>(pick(0, static_cast<int>(vs.size()) - 1))];
    line(v.name + " = " + update_expr(v));
    return true;
  }

  bool gen_slice_write() {
    auto vs = visible(Ty::F4, true);
    if (vs.empty()) return false;
    const Var& v = *vs[static_cast<size_t>(pick(0, static_cast<int>(vs.size()) - 1))];
    switch (pick(0, 4)) {
      case 4: {  // a scalar broadcast into a static range
        int a = pick(0, 2);
        line(v.name + "[" + std::to_string(a) + ":" + std::to_string(a + 2) + "] = " + clamped(Ty::F, gen(Ty::F, 1)));
        break;
      }
      case 0:  // static single element
        line(v.name + "[" + std::to_string(pick(-4, 3)) + "] = " + clamped(Ty::F, gen(Ty::F, 2)));
        break;
      case 1: {  // dynamic single element (loop variable, counter, input)
        std::string idx = dyn_index();
        line(v.name + "[" + idx + "] = " + clamped(Ty::F, gen(Ty::F, 2)));
        break;
      }
      case 2: {  // static range from another f32[4]
        int a = pick(0, 2), b = pick(0, 2);
        line(v.name + "[" + std::to_string(a) + ":" + std::to_string(a + 2) + "] = " + f4_name() + "[" +
             std::to_string(b) + ":" + std::to_string(b + 2) + "] * 0.5");
        break;
      }
      default: {  // read-modify-write of one element
        std::string idx = loop_vars_.empty() ? std::to_string(pick(0, 3)) : loop_vars_.back();
        line(v.name + "[" + idx + "] = " + clamped(Ty::F, v.name + "[" + idx + "] + " + gen(Ty::F, 1)));
        break;
      }
    }
    return true;
  }

  void gen_if() {
    ++if_depth_;
    line("if " + gen_cond(pick(1, 2)) + " {");
    gen_block_body(pick(1, 3));
    int elifs = chance(0.3) ? pick(1, 2) : 0;
    for (int i = 0; i < elifs; ++i) {
      line("} else if " + gen_cond(pick(1, 2)) + " {");
      gen_block_body(pick(1, 2));
    }
    if (chance(0.5)) {
      line("} else {");
      gen_block_body(pick(1, 3));
    }
    line("}");
    --if_depth_;
  }

  // `if COND { ...; break }` (or continue), at the current loop level, maybe inside more ifs.
  void gen_jump() {
    const char* jump = chance(0.55) ? "break" : "continue";
    int nest = pick(0, 2);
    for (int i = 0; i < nest; ++i) {
      line("if " + gen_cond(1) + " {");
      ++indent_;
      scopes_.emplace_back();
      if (chance(0.4)) gen_assign();
    }
    line("if " + jump_cond() + " {");
    ++indent_;
    scopes_.emplace_back();
    if (chance(0.5)) {
      if (!gen_assign()) gen_slice_write();
    }
    line(jump);
    scopes_.pop_back();
    --indent_;
    if (chance(0.25)) {
      line("} else {");
      ++indent_;
      scopes_.emplace_back();
      gen_assign();
      scopes_.pop_back();
      --indent_;
    }
    line("}");
    for (int i = 0; i < nest; ++i) {
      scopes_.pop_back();
      --indent_;
      line("}");
    }
  }

  // A condition for break/continue that is true on some iterations and false on others.
  std::string jump_cond() {
    if (!loop_vars_.empty() && chance(0.4)) {
      const std::string& i = loop_vars_[static_cast<size_t>(pick(0, static_cast<int>(loop_vars_.size()) - 1))];
      const char* ops[] = {" == ", " >= ", " > "};
      return "(" + i + ops[pick(0, 2)] + std::to_string(pick(0, 3)) + ")";
    }
    if (chance(0.3)) {
      auto vs = visible(Ty::F4, true);
      if (!vs.empty()) {
        const Var& v = *vs[static_cast<size_t>(pick(0, static_cast<int>(vs.size()) - 1))];
        return chance(0.5) ? "(sum(" + v.name + ") > " + flit() + ")" : "any(" + v.name + " > " + flit() + ")";
      }
    }
    return gen_cond(pick(0, 2));
  }

  // Counts trips in the function's trace variable, so that every change in how often a loop
  // body runs shows in the results.
  void trace_trip() {
    if (in_helper_) line("r = " + clamped(Ty::F4, "r + 0.5"));
    else line("cnt = " + clamped(Ty::I, "cnt + " + (loop_vars_.empty() || chance(0.5) ? std::string("1") : loop_vars_.back())));
  }

  std::string loop_bound() {
    switch (pick(0, 5)) {
      case 0: return nn_;
      case 1: return "minimum(" + nn_ + ", " + std::to_string(pick(1, 4)) + ")";
      case 2: return loop_vars_.empty() ? nn_ : loop_vars_.back();
      case 3: return "K";
      case 4: return "argmax(" + xn_ + ", axis=0)";
      default: return std::to_string(pick(0, 4));
    }
  }

  void gen_for() {
    std::string i = fresh("i");
    std::string lo, hi;
    if (chance(0.45)) {  // static bounds: unrollable; sometimes empty
      int a = pick(0, 1);
      lo = std::to_string(a);
      hi = chance(0.15) ? "K" : std::to_string(pick(std::max(0, a - 1), 4));
    } else {
      lo = chance(0.7) ? "0" : std::to_string(pick(1, 2));
      hi = loop_bound();
    }
    line("for " + i + " in " + lo + ".." + hi + " {");
    ++loop_depth_;
    loop_vars_.push_back(i);
    scopes_.emplace_back();
    declare(i, Ty::I, false);
    ++indent_;
    gen_loop_body();
    --indent_;
    scopes_.pop_back();
    loop_vars_.pop_back();
    --loop_depth_;
    line("}");
  }

  void gen_while() {
    std::string w = fresh("w");
    line("var " + w + " = 0");
    declare(w, Ty::I, true);
    std::string cond;
    switch (pick(0, 3)) {
      case 0: cond = "(" + w + " < " + nn_ + ")"; break;
      case 1: cond = "(" + w + " < " + std::to_string(pick(1, 5)) + ")"; break;
      case 2: cond = "(sum(" + f4_name() + ") < " + flit() + ")"; break;
      default: cond = "((" + w + " < " + nn_ + ") and " + gen_cond(1) + ")"; break;
    }
    std::string bound = chance(0.2) ? "K" : std::to_string(pick(1, 8));
    line("while " + cond + " max " + bound + " {");
    ++loop_depth_;
    scopes_.emplace_back();
    ++indent_;
    bool counter_first = chance(0.75);
    if (counter_first) line(w + " = " + w + " + 1");
    gen_loop_body();
    if (!counter_first) line(w + " = " + w + " + 1");
    --indent_;
    scopes_.pop_back();
    --loop_depth_;
    line("}");
  }

  void gen_loop_body() {
    int count = pick(1, 4);
    int jump_at = chance(0.7) ? pick(0, count) : -1;
    for (int k = 0; k <= count; ++k) {
      if (k == jump_at) gen_jump();
      if (k < count) gen_stmt();
    }
    if (chance(0.5)) trace_trip();
    if (chance(0.05)) line(chance(0.5) ? "break" : "continue");
  }

  void gen_call() {
    auto vs = visible(Ty::F4, true);
    size_t hi = static_cast<size_t>(pick(0, static_cast<int>(helpers_.size()) - 1));
    std::string h = helpers_[hi];
    std::string call = h + "(" + gen(Ty::F4, 1) + ", " + gen(Ty::I, 1) + ")";
    if (helper_tuple_[hi]) {
      std::string a = fresh("l"), b = fresh("l");
      line("let " + a + ", " + b + " = " + call);
      declare(a, Ty::F4, false);
      declare(b, Ty::I, false);
      return;
    }
    if (vs.empty() || chance(0.3)) {
      std::string n = fresh("l");
      line("let " + n + " = " + call);
      declare(n, Ty::F4, false);
    } else {
      const Var& v = *vs[static_cast<size_t>(pick(0, static_cast<int>(vs.size()) - 1))];
      line(v.name + " = " + clamped(Ty::F4, call));
    }
  }

  void gen_state_update() {
    std::vector<const Var*> st;
    for (const auto& v : scopes_.front())
      if (v.is_mutable) st.push_back(&v);
    const Var& v = *st[static_cast<size_t>(pick(0, static_cast<int>(st.size()) - 1))];
    if (v.ty == Ty::F4 && chance(0.3)) {
      std::string idx = chance(0.5) ? "cnt" : "n";
      line(v.name + "[" + idx + "] = " + clamped(Ty::F, v.name + "[" + idx + "] + 1.0"));
    } else {
      bool saved = in_helper_;
      in_helper_ = true;  // always clamp state updates: they accumulate across calls
      line(v.name + " = " + update_expr(v));
      in_helper_ = saved;
    }
  }

  void gen_stmt() {
    if (budget_ <= 0) {
      if (!gen_assign()) gen_decl();
      return;
    }
    --budget_;
    for (;;) {
      switch (pick(0, 15)) {
        case 0: case 1: gen_decl(); return;
        case 2: case 3: case 4: if (gen_assign()) return; break;
        case 5: case 6: if (gen_slice_write()) return; break;
        case 7: case 8:
          if (if_depth_ < kMaxIfDepth) { gen_if(); return; }
          break;
        case 9: case 10:
          if (loop_depth_ < kMaxLoopDepth) { gen_for(); return; }
          break;
        case 11:
          if (loop_depth_ < kMaxLoopDepth) { gen_while(); return; }
          break;
        case 12:
          if (loop_depth_ > 0) { gen_jump(); return; }
          break;
        case 13:
          if (!helpers_.empty()) { gen_call(); return; }
          break;
        case 14:
          if (has_state() && !in_helper_) {
            if (chance(0.5)) {
              line("if " + gen_cond(1) + " {");
              ++indent_;
              scopes_.emplace_back();
              gen_state_update();
              scopes_.pop_back();
              --indent_;
              line("}");
            } else {
              gen_state_update();
            }
            return;
          }
          break;
        default:
          if (gen_assign()) return;
          break;
      }
    }
  }

  void gen_helper(int h) {
    std::string name = "h" + std::to_string(h);
    bool tuple = chance(0.4);
    out_ << "fn " << name << "(a: f32[4], k: i32[]) -> " << (tuple ? "(f32[4], i32[])" : "f32[4]") << " {\n";
    // Helpers see only their parameters and the states.
    std::vector<std::vector<Var>> saved;
    saved.swap(scopes_);
    scopes_.push_back(saved.front());
    scopes_.emplace_back();
    declare("a", Ty::F4, false);
    declare("k", Ty::I, false);
    indent_ = 1;
    in_helper_ = true;
    xn_ = "a";
    nn_ = "k";
    line("var r = a");
    declare("r", Ty::F4, true);
    if (tuple) {
      line("var q = k");
      declare("q", Ty::I, true);
    }
    budget_ = pick(2, 6);
    gen_stmts(pick(1, 3));
    line(tuple ? "return (r, q)" : "return r");
    in_helper_ = false;
    xn_ = "x";
    nn_ = "n";
    scopes_.swap(saved);
    scopes_.front() = saved.front();
    out_ << "}\n\n";
    helpers_.push_back(name);
    helper_tuple_.push_back(tuple);
  }
};

}  // namespace

GeneratedProgram generate_program(uint64_t seed) {
  Gen g(seed);
  return g.run(seed);
}

std::vector<std::pair<std::string, Tensor>> random_inputs(const std::vector<InputSpec>& specs, std::mt19937_64& rng) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& s : specs) {
    Tensor t(s.dtype, s.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (s.dtype) {
        case DType::I32: case DType::I64:
          t.set_int(i, std::uniform_int_distribution<int>(-1, 6)(rng));
          break;
        case DType::Bool:
          t.set_int(i, std::uniform_int_distribution<int>(0, 1)(rng));
          break;
        default:
          t.set(i, 0.5 * std::uniform_int_distribution<int>(-8, 8)(rng));
          break;
      }
    }
    out.emplace_back(s.name, t);
  }
  return out;
}

}  // namespace grape::difftest
