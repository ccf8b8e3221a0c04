#include "frontend/compile.h"

#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "frontend/globals.h"
#include "frontend/lowerer.h"
#include "ir/passes/const_fold.h"
#include "ir/passes/cse.h"
#include "ir/passes/dce.h"
#include "ir/passes/narrow_updates.h"
#include "ir/passes/predicated_selects.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "lang/parse.h"

namespace grape {

void optimize_function(ir::Function& f, bool verify) {
  static const bool dump = [] {
    const char* v = std::getenv("GRAPE_DUMP_IR");
    return v && std::string(v) == "1";
  }();
  auto step = [&](const char* name, bool (*pass)(ir::Function&)) {
    bool changed = pass(f);
    if (verify) ir::verify_or_throw(f, name);
    if (changed && dump) std::cerr << "// after " << name << "\n" << ir::print_function(f) << "\n";
    return changed;
  };
  if (verify) ir::verify_or_throw(f, "lowering");
  if (dump) std::cerr << "// after lowering\n" << ir::print_function(f) << "\n";
  for (int round = 0; round < 4; ++round) {
    bool changed = step("constant folding", ir::fold_constants);
    changed |= step("common-subexpression elimination", ir::eliminate_common_subexpressions);
    changed |= step("narrowing predicated slice updates", ir::narrow_predicated_updates);
    // After narrowing: it matches `select %p, (update %x if %p), %x`, which this pass may rewrite.
    changed |= step("folding selects under their predicate", ir::fold_predicated_selects);
    changed |= step("dead-code elimination", ir::eliminate_dead_code);
    if (!changed) break;
  }
}

static bool is_entry_candidate(const ast::FnDecl& f) {
  for (const auto& p : f.params)
    if (p.type.dtype == "int") return false;
  for (const auto& r : f.results)
    if (r.dtype == "int") return false;
  return true;
}

std::optional<ir::Module> compile_program(const ast::Program& program, const SourceManager& sm,
                                          const CompileOptions& opts, Diagnostics& diags) {
  (void)sm;
  frontend::Globals g;
  frontend::build_globals(program, opts, diags, g);
  ir::Module m;
  m.name = program.model_name.value_or("");
  for (const auto& name : g.weight_order) {
    const auto& w = g.weights.at(name);
    ir::WeightInfo info;
    info.name = w.file_name;
    info.dtype = w.type.dtype;
    for (const auto& d : w.type.shape) info.shape.push_back(d.const_value());
    info.loc = w.loc;
    m.weights.push_back(info);
  }
  for (const auto& name : g.state_order) m.states.push_back(g.state_info.at(name));
  // Errors in declarations do not stop the functions from being checked: report everything.
  frontend::LoweringBudget budget;
  budget.elements = g.declared_elements;
  for (const auto& f : program.fns) {
    auto it = g.fns.find(f.name);
    if (!is_entry_candidate(f) || it == g.fns.end() || it->second != &f) continue;
    // A limit of the whole program was reached (and reported): the other entries would only
    // report it again.
    if (budget.exhausted) break;
    ir::Function fn;
    frontend::Lowerer lowerer(g, opts, diags, budget);
    if (!lowerer.lower_entry(f, fn)) continue;
    try {
      if (opts.optimize)
        optimize_function(fn, opts.verify);
      else if (opts.verify)
        ir::verify_or_throw(fn, "lowering");
    } catch (const std::logic_error&) {
      // Malformed IR is a compiler bug, unless an error already reported (in a declaration the
      // entry uses) explains it: then that error is the one to show.
      if (diags.has_errors()) continue;
      throw;
    }
    m.functions.push_back(std::move(fn));
  }
  if (diags.has_errors()) return std::nullopt;
  return m;
}

std::optional<ir::Module> compile_source(const SourceManager& sm, int file, const CompileOptions& opts,
                                         Diagnostics& diags) {
  ast::Program p = parse_program(sm, file, diags);
  if (diags.has_errors()) return std::nullopt;
  return compile_program(p, sm, opts, diags);
}

}  // namespace grape
