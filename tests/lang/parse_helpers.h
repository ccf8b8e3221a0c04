#pragma once
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/parse.h"
#include "tests/lang/ast_dump.h"

namespace grape::testing {

struct Parsed {
  SourceManager sm;
  Diagnostics diags;
  ast::Program program;
  // "line:col: message" per diagnostic, one per line.
  std::string errors() const {
    std::string out;
    for (const auto& d : diags.all())
      out += std::to_string(d.span.begin.line) + ":" + std::to_string(d.span.begin.column) + ": " + d.message + "\n";
    return out;
  }
};

inline std::unique_ptr<Parsed> parse(const std::string& text) {
  auto p = std::make_unique<Parsed>();
  int id = p->sm.add("test.grp", text);
  p->program = parse_program(p->sm, id, p->diags);
  return p;
}

// The body of `fn f() { <body> }` dumped as a block.
inline std::string body(const std::string& text, std::string* errors = nullptr) {
  auto p = parse("fn f() {\n" + text + "\n}\n");
  if (errors) *errors = p->errors();
  if (p->program.fns.size() != 1) return "<no fn> " + p->errors();
  return dump(p->program.fns[0].body);
}

}  // namespace grape::testing

namespace grape::testing {

// `const X = <text>` parsed; the value dumped, or the errors if there were any.
inline std::string expr(const std::string& text) {
  auto p = parse("const X = " + text + "\n");
  if (p->diags.has_errors() || p->program.consts.size() != 1) return "ERR " + p->errors();
  return dump(p->program.consts[0].value);
}

}  // namespace grape::testing
