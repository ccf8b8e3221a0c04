// Internal to frontend/: the program's top-level declarations, resolved once: consts (with -D
// overrides applied), weights (flattened groups, prefix), states and functions.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/compile.h"
#include "ir/ir.h"

namespace grape::frontend {

struct WeightDecl {
  std::string file_name;  // name in the weights file (prefix applied)
  ir::Type type;          // constant dims only
  Span loc;
};

struct Globals {
  std::map<std::string, int64_t> consts;
  std::map<std::string, WeightDecl> weights;    // by the name used in expressions
  std::map<std::string, int64_t> groups;        // group path ("h", "h.3.inner") -> count
  std::vector<std::string> weight_order;        // declaration order
  std::map<std::string, const ast::StateDecl*> states;
  std::vector<std::string> state_order;
  std::map<std::string, ir::StateInfo> state_info;
  std::map<std::string, const ast::FnDecl*> fns;
  // Declarations that failed (already reported): uses of them are silently errors, not "unknown".
  std::set<std::string> poisoned;
  // Elements of the weights and states of static shape, against CompileLimits::max_program_elements
  // (the lowerer goes on counting from here).
  int64_t declared_elements = 0;

  // True if some weight or group is named `path` or starts with `path.`.
  bool is_weight_prefix(const std::string& path) const;
  std::vector<std::string> all_names() const;  // for "did you mean"
};

// Evaluates a compile-time integer expression over literals and consts (used for consts, weight
// shapes and group counts). Reports errors and returns nullopt.
std::optional<int64_t> eval_const_int(const ast::Expr& e, const std::map<std::string, int64_t>& consts,
                                      Diagnostics& diags);

// The same with names resolved by `lookup`: nullopt means "not a const" (reported here with a
// suggestion from `candidates`); an inner nullopt means the const failed (already reported).
using ConstLookup = std::function<std::optional<std::optional<int64_t>>(const std::string&)>;
std::optional<int64_t> eval_const_int(const ast::Expr& e, const ConstLookup& lookup,
                                      const std::vector<std::string>& candidates, Diagnostics& diags);

// `a op b` for the dimension operators + - * /. nullopt for another operator (err empty) or an
// inexact division (err says so).
std::optional<ir::Dim> combine_dims(ast::BinaryOp op, const ir::Dim& a, const ir::Dim& b, std::string* err);

bool build_globals(const ast::Program& p, const CompileOptions& opts, Diagnostics& diags, Globals& g);

}  // namespace grape::frontend
