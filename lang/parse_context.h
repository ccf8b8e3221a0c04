// State shared by the parser's actions (parser.yy): the program being built, diagnostics, and the
// nesting guard. Internal to lang/.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/source.h"

namespace grape {

struct ParseContext {
  // Deeper expression / statement trees than this are cut off with one diagnostic: the tree is
  // built without recursion, but every later stage (and the destructors) recurse over it.
  static constexpr int kMaxDepth = 256;

  ParseContext(const SourceFile& src, int file, Diagnostics& diags) : src(src), file(file), diags(diags) {
    program.file = file;
  }

  void error(Span span, std::string message) { diags.error(span, std::move(message)); }
  // The source text under a one-line span (for messages).
  std::string spelling(Span span) const;

  // Every node goes through one of these once its children are attached. They record its depth and
  // replace a too-deep node with a harmless placeholder (an IntLit / nothing / an empty block).
  ast::ExprPtr expr(ast::ExprPtr e);
  ast::StmtPtr stmt(ast::StmtPtr s);
  std::shared_ptr<ast::Block> block(std::shared_ptr<ast::Block> b);

  const SourceFile& src;
  int file;
  Diagnostics& diags;
  ast::Program program;
  bool saw_decl = false;  // for "model must come first"

 private:
  int depth_of(const void* node) const;
  int expr_depth(const ast::ExprPtr& e) const { return e ? depth_of(e.get()) : 0; }
  int type_depth(const ast::TypeExpr& t) const;
  bool too_deep(int depth, Span span);

  std::unordered_map<const void*, int> depth_;
  bool reported_too_deep_ = false;
};

}  // namespace grape
