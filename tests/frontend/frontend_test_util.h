// Helpers for front-end tests: compile a .grp text, look at the resulting IR, check diagnostics.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/compile.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "lang/diagnostics.h"
#include "lang/source.h"

namespace grape::testing {

struct Compiled {
  SourceManager sm;
  Diagnostics diags;
  std::optional<ir::Module> module;

  bool ok() const { return module.has_value(); }
  // "line:col: message" per diagnostic, one per line.
  std::string errors() const {
    std::string out;
    for (const auto& d : diags.all())
      out += std::to_string(d.span.begin.line) + ":" + std::to_string(d.span.begin.column) + ": " + d.message + "\n";
    return out;
  }
  const ir::Function& fn(const std::string& name = "main") const {
    const ir::Function* f = module->find(name);
    if (!f) throw std::runtime_error("no function " + name);
    return *f;
  }
  std::string ir(const std::string& name = "main") const { return ir::print_function(fn(name)); }
};

inline std::unique_ptr<Compiled> compile(const std::string& text, std::map<std::string, int64_t> defines = {},
                                         bool optimize = true) {
  auto c = std::make_unique<Compiled>();
  int id = c->sm.add("test.grp", text);
  CompileOptions opts;
  opts.defines = std::move(defines);
  opts.optimize = optimize;
  opts.verify = true;
  c->module = compile_source(c->sm, id, opts, c->diags);
  return c;
}

// Every op of a function, loop bodies included (pre-order).
inline std::vector<const ir::Operation*> all_ops(const ir::Function& f) {
  std::vector<const ir::Operation*> out;
  ir::for_each_op(f.body, [&](const ir::Operation& op) { out.push_back(&op); });
  return out;
}

inline std::vector<const ir::Operation*> ops_of(const ir::Function& f, ir::Op kind) {
  std::vector<const ir::Operation*> out;
  for (const auto* op : all_ops(f))
    if (op->op == kind) out.push_back(op);
  return out;
}

// The op defining `v` (nullptr for parameters and loop-body parameters).
inline const ir::Operation* def_of(const ir::Function& f, ir::ValueId v) {
  for (const auto* op : all_ops(f))
    for (ir::ValueId r : op->results)
      if (r == v) return op;
  return nullptr;
}

inline ir::ValueId param_value(const ir::Function& f, const std::string& name) {
  for (const auto& p : f.params)
    if (p.name == name) return p.value;
  return ir::kNoValue;
}

}  // namespace grape::testing

// Compiles `src` and fails the test (with the diagnostics) if it did not compile.
#define COMPILE_OK(var, ...)                                  \
  auto var = ::grape::testing::compile(__VA_ARGS__);          \
  ASSERT_TRUE(var->ok()) << var->errors()
