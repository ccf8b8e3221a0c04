// Entry point of the front end: AST -> checked, predicated, optimized IR module.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "frontend/limits.h"
#include "ir/ir.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace grape {

struct CompileOptions {
  std::map<std::string, int64_t> defines;  // -D NAME=VALUE: overrides of `const NAME`
  bool optimize = true;                    // run DCE, CSE, constant folding
  bool verify = true;                      // run the IR verifier after lowering and each pass
  // Reject device loops without a trip bound (`while` without `max N`, `for` over a run-time
  // range): executors that run loops by pure predication need one.
  bool require_loop_bounds = false;

  CompileLimits limits;
};

// Lowers every function whose parameters and results are all tensors into an entry of the module.
// Returns nullopt if any error was reported (all of them are in `diags`).
std::optional<ir::Module> compile_program(const ast::Program& program, const SourceManager& sm,
                                          const CompileOptions& opts, Diagnostics& diags);

// Parses and compiles a file already added to `sm`.
std::optional<ir::Module> compile_source(const SourceManager& sm, int file, const CompileOptions& opts,
                                         Diagnostics& diags);

// Runs the optimization pipeline (with verification between passes when `verify`). When the
// environment variable GRAPE_DUMP_IR=1 is set, prints the IR to stderr after each pass that
// changed it.
void optimize_function(ir::Function& f, bool verify);

}  // namespace grape
