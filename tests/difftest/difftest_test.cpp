// Differential tests of the control-flow lowering: the real pipeline (front end -> predicated IR ->
// CPU reference executor, through Model/Session) against the tree-walking interpreter with real
// jumps, on the hand-written cases in tests/difftest/cases/ and on seeded random programs.
//
// Reproduce one random program: GRAPE_DIFFTEST_SEED=123 ./grape_difftest_tests
// (runs only that seed, and prints its program text).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <optional>
#include <sstream>

#include "lang/parse.h"
#include "base/error.h"
#include "runtime/model.h"
#include "tests/difftest/interpreter.h"
#include "tests/difftest/program_gen.h"

namespace grape::difftest {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

std::string tensor_str(const Tensor& t) {
  if (!t.defined()) return "<undefined>";
  std::ostringstream os;
  os.precision(9);
  os << dtype_name(t.dtype()) << shape_to_string(t.shape()) << " {";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) os << ", ";
    if (is_float(t.dtype())) os << t.get(i); else os << t.get_int(i);
  }
  os << "}";
  return os.str();
}

std::string inputs_str(const Inputs& in) {
  std::string s;
  for (const auto& [n, t] : in) s += "    " + n + " = " + tensor_str(t) + "\n";
  return s;
}

// Exact for ints and bools, 1e-5 (absolute + relative) for floats; NaN equals NaN.
std::optional<std::string> mismatch(const Tensor& want, const Tensor& got) {
  if (want.defined() != got.defined()) return "defined differs";
  if (!want.defined()) return std::nullopt;
  if (want.dtype() != got.dtype()) return std::string("dtype ") + dtype_name(want.dtype()) + " vs " + dtype_name(got.dtype());
  if (want.shape() != got.shape()) return "shape " + shape_to_string(want.shape()) + " vs " + shape_to_string(got.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (is_float(want.dtype())) {
      double a = want.get(i), b = got.get(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (!(std::fabs(a - b) <= 1e-5 + 1e-5 * std::fabs(a))) return "element " + std::to_string(i) + " differs";
    } else if (want.get_int(i) != got.get_int(i)) {
      return "element " + std::to_string(i) + " differs";
    }
  }
  return std::nullopt;
}

struct DiffConfig {
  std::string name;    // for messages
  std::string source;
  std::map<std::string, int64_t> defines;
  std::vector<std::string> states;
  std::vector<std::vector<Inputs>> sessions;  // per session, the inputs of each call
};

// Runs both sides; returns a complete, reproducible failure report or nullopt.
std::optional<std::string> run_diff(const DiffConfig& cfg) {
  std::ostringstream rep;
  rep << "=== " << cfg.name << " ===\n--- program ---\n" << cfg.source << "--- end program ---\n";
  std::shared_ptr<Model> model;
  ModelOptions opts;
  opts.defines = cfg.defines;
  try {
    model = Model::load_source(cfg.source, cfg.name + ".grp", opts);
  } catch (const std::exception& e) {
    rep << "the pipeline rejected the program:\n" << e.what() << "\n";
    return rep.str();
  }
  for (size_t si = 0; si < cfg.sessions.size(); ++si) {
    std::unique_ptr<Interpreter> interp;
    std::unique_ptr<Session> session;
    try {
      interp = std::make_unique<Interpreter>(parse_or_throw(cfg.source, cfg.name), cfg.defines);
    } catch (const std::exception& e) {
      rep << "the interpreter could not load the program: " << e.what() << "\n";
      return rep.str();
    }
    try {
      session = std::make_unique<Session>(model, "main");
    } catch (const std::exception& e) {
      rep << "Session creation failed: " << e.what() << "\n";
      return rep.str();
    }
    std::unique_ptr<Interpreter> fresh;  // for states the pipeline never created
    for (size_t ci = 0; ci < cfg.sessions[si].size(); ++ci) {
      const Inputs& in = cfg.sessions[si][ci];
      std::string where = "session " + std::to_string(si) + ", call " + std::to_string(ci + 1);
      std::vector<Tensor> want, got;
      try {
        want = interp->call("main", in);
      } catch (const std::exception& e) {
        rep << where << ": the interpreter failed: " << e.what() << "\ninputs:\n" << inputs_str(in);
        return rep.str();
      }
      try {
        // The pipeline gets its own copies: nothing it does may leak into the oracle's inputs.
        Inputs copy;
        for (const auto& [n, t] : in) copy.emplace_back(n, t.clone());
        got = session->run(copy);
      } catch (const std::exception& e) {
        rep << where << ": the pipeline failed at run time: " << e.what() << "\ninputs:\n" << inputs_str(in);
        return rep.str();
      }
      std::ostringstream diff;
      if (want.size() != got.size()) {
        diff << "  number of results: interpreter " << want.size() << ", pipeline " << got.size() << "\n";
      } else {
        for (size_t k = 0; k < want.size(); ++k)
          if (auto m = mismatch(want[k], got[k]))
            diff << "  result " << k << " (" << *m << "):\n    interpreter " << tensor_str(want[k])
                 << "\n    pipeline    " << tensor_str(got[k]) << "\n";
      }
      for (const auto& s : cfg.states) {
        Tensor w = interp->state(s), g = session->state(s);
        if (!g.defined() && w.defined()) {
          // The session creates only the states its entry uses (the interpreter creates all of
          // them): a state the pipeline never created must still hold its initial value, which a
          // fresh interpreter shows after the same first call.
          if (!fresh) {
            fresh = std::make_unique<Interpreter>(parse_or_throw(cfg.source, cfg.name), cfg.defines);
            fresh->call("main", cfg.sessions[si][0]);
          }
          g = fresh->state(s);
          if (!g.defined()) g = Tensor();
        }
        if (auto m = mismatch(w, g))
          diff << "  state " << s << " (" << *m << "):\n    interpreter " << tensor_str(w) << "\n    pipeline    "
               << tensor_str(g) << "\n";
      }
      if (!diff.str().empty()) {
        rep << where << ": MISMATCH\ninputs (all calls of this session so far):\n";
        for (size_t k = 0; k <= ci; ++k) rep << "  call " << k + 1 << ":\n" << inputs_str(cfg.sessions[si][k]);
        rep << diff.str();
        return rep.str();
      }
    }
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ generator self-check

TEST(DiffTestGenerator, ProgramsParseWithoutDiagnostics) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    GeneratedProgram g = generate_program(seed);
    SourceManager sm;
    int file = sm.add("gen.grp", g.source);
    Diagnostics diags;
    parse_program(sm, file, diags);
    ASSERT_TRUE(diags.all().empty()) << "seed " << seed << "\n" << g.source << "\n" << diags.render(sm);
  }
}

TEST(DiffTestGenerator, IsDeterministic) {
  EXPECT_EQ(generate_program(42).source, generate_program(42).source);
  EXPECT_NE(generate_program(42).source, generate_program(43).source);
}

// ------------------------------------------------------------------ random programs

constexpr int kShards = 10;

int total_seeds() {
  if (const char* s = std::getenv("GRAPE_DIFFTEST_SEEDS")) return std::max(1, std::atoi(s));
  return 1000;
}

DiffConfig random_config(uint64_t seed) {
  GeneratedProgram g = generate_program(seed);
  DiffConfig cfg;
  cfg.name = "seed " + std::to_string(seed);
  cfg.source = g.source;
  cfg.states = g.state_names;
  std::mt19937_64 rng(seed * 7919 + 17);
  for (int s = 0; s < 2; ++s) cfg.sessions.push_back({random_inputs(g.inputs, rng), random_inputs(g.inputs, rng)});
  return cfg;
}

class RandomPrograms : public ::testing::TestWithParam<int> {};

TEST_P(RandomPrograms, MatchInterpreter) {
  std::vector<uint64_t> seeds;
  if (const char* one = std::getenv("GRAPE_DIFFTEST_SEED")) {
    if (GetParam() != 0) GTEST_SKIP();
    seeds.push_back(std::strtoull(one, nullptr, 10));
  } else {
    for (int s = GetParam() + 1; s <= total_seeds(); s += kShards) seeds.push_back(static_cast<uint64_t>(s));
  }
  int failures = 0;
  std::vector<uint64_t> failed;
  for (uint64_t seed : seeds) {
    DiffConfig cfg = random_config(seed);
    if (std::getenv("GRAPE_DIFFTEST_SEED")) std::cout << cfg.source;
    if (auto rep = run_diff(cfg)) {
      ++failures;
      failed.push_back(seed);
      if (failures <= 3) ADD_FAILURE() << *rep;
    }
  }
  if (failures > 3) {
    std::string list;
    for (uint64_t s : failed) list += " " + std::to_string(s);
    ADD_FAILURE() << failures << " of " << seeds.size() << " seeds failed (first 3 reported above):" << list;
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, RandomPrograms, ::testing::Range(0, kShards));

// ------------------------------------------------------------------ hand-written cases

std::string cases_dir() { return std::string(GRAPE_SOURCE_DIR) + "/tests/difftest/cases"; }

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cases_dir(), ec))
    if (e.path().extension() == ".grp") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Directives in a case's comments:
//   # difftest-define: NAME=VALUE    a -D override, given to both sides
//   # difftest-values: PARAM=v1,v2   the values an i32/bool scalar parameter takes, in turn
DiffConfig case_config(const std::string& name) {
  DiffConfig cfg;
  cfg.name = name;
  std::ifstream f(cases_dir() + "/" + name + ".grp");
  std::stringstream ss;
  ss << f.rdbuf();
  cfg.source = ss.str();
  std::map<std::string, std::vector<int64_t>> values;
  std::istringstream lines(cfg.source);
  for (std::string l; std::getline(lines, l);) {
    auto directive = [&](const std::string& key) -> std::optional<std::pair<std::string, std::string>> {
      auto p = l.find(key);
      if (p == std::string::npos) return std::nullopt;
      std::string rest = l.substr(p + key.size());
      rest.erase(std::remove(rest.begin(), rest.end(), ' '), rest.end());
      auto eq = rest.find('=');
      return std::make_pair(rest.substr(0, eq), rest.substr(eq + 1));
    };
    if (auto d = directive("# difftest-define:")) cfg.defines[d->first] = std::stoll(d->second);
    if (auto d = directive("# difftest-values:")) {
      std::istringstream vs(d->second);
      for (std::string v; std::getline(vs, v, ',');) values[d->first].push_back(std::stoll(v));
    }
  }
  ast::Program prog = parse_or_throw(cfg.source, name);
  for (const auto& s : prog.states) cfg.states.push_back(s.name);
  std::map<std::string, int64_t> consts;
  for (const auto& c : prog.consts)
    if (c.value->kind == ast::ExprKind::IntLit) consts[c.name] = c.value->int_value;
  for (const auto& [k, v] : cfg.defines) consts[k] = v;
  const ast::FnDecl* main = nullptr;
  for (const auto& fn : prog.fns)
    if (fn.name == "main") main = &fn;
  if (!main) throw std::runtime_error(name + ": no main");
  std::vector<InputSpec> specs;
  for (const auto& p : main->params) {
    InputSpec s;
    s.name = p.name;
    s.dtype = *parse_dtype(p.type.dtype);
    for (const auto& d : p.type.dims) {
      if (d->kind == ast::ExprKind::IntLit) s.shape.push_back(d->int_value);
      else if (d->kind == ast::ExprKind::Name && consts.count(d->text)) s.shape.push_back(consts[d->text]);
      else s.shape.push_back(3);  // a symbolic dim
    }
    specs.push_back(s);
  }
  std::mt19937_64 rng(std::hash<std::string>{}(name));
  int call_no = 0;
  for (int s = 0; s < 4; ++s) {
    std::vector<Inputs> calls;
    for (int c = 0; c < 3; ++c, ++call_no) {
      Inputs in = random_inputs(specs, rng);
      for (auto& [pn, t] : in) {
        auto v = values.find(pn);
        if (v != values.end() && t.numel() == 1) t.set_int(0, v->second[static_cast<size_t>(call_no) % v->second.size()]);
      }
      calls.push_back(in);
    }
    cfg.sessions.push_back(calls);
  }
  return cfg;
}

class Cases : public ::testing::TestWithParam<std::string> {};

TEST_P(Cases, MatchInterpreter) {
  DiffConfig cfg = case_config(GetParam());
  if (auto rep = run_diff(cfg)) ADD_FAILURE() << *rep;
}

INSTANTIATE_TEST_SUITE_P(Grp, Cases, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace grape::difftest
