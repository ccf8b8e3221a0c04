// Entry point of lang/: text -> AST. Syntax errors are collected in `diags` (all of them the parser
// can recover from); the returned Program holds whatever parsed cleanly.
#pragma once
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace grape {

// Parses the file already added to `sm` under id `file`.
ast::Program parse_program(const SourceManager& sm, int file, Diagnostics& diags);

}  // namespace grape
