#include "lang/parse.h"

#include <algorithm>
#include <exception>
#include <string>

#include "lang/lexer.h"
#include "lang/parse_context.h"
#include "parser.hpp"

namespace grape {

std::string ParseContext::spelling(Span span) const {
  if (span.begin.line != span.end.line) return {};
  std::string_view line = src.line(span.begin.line);
  size_t b = static_cast<size_t>(std::max(1, span.begin.column) - 1);
  size_t e = static_cast<size_t>(std::max(1, span.end.column) - 1);
  if (b >= line.size() || e <= b) return {};
  std::string s(line.substr(b, e - b));
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

int ParseContext::depth_of(const void* node) const {
  auto it = depth_.find(node);
  return it == depth_.end() ? 0 : it->second;
}

int ParseContext::type_depth(const ast::TypeExpr& t) const {
  int d = 0;
  for (const auto& dim : t.dims) d = std::max(d, expr_depth(dim));
  return d;
}

bool ParseContext::too_deep(int depth, Span span) {
  if (depth <= kMaxDepth) return false;
  if (!reported_too_deep_) {
    reported_too_deep_ = true;
    error(span, "nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
  }
  return true;
}

ast::ExprPtr ParseContext::expr(ast::ExprPtr e) {
  int d = 0;
  for (const auto& a : e->args) d = std::max(d, expr_depth(a));
  for (const auto& kw : e->kwargs) d = std::max(d, expr_depth(kw.value));
  for (const auto& item : e->items)
    d = std::max({d, expr_depth(item.index), expr_depth(item.start), expr_depth(item.stop), expr_depth(item.step)});
  ++d;
  if (too_deep(d, e->span)) {
    auto leaf = std::make_shared<ast::Expr>();
    leaf->kind = ast::ExprKind::IntLit;
    leaf->span = e->span;
    e = std::move(leaf);
    d = 1;
  }
  depth_[e.get()] = d;
  return e;
}

ast::StmtPtr ParseContext::stmt(ast::StmtPtr s) {
  int d = std::max({expr_depth(s->target), expr_depth(s->value), expr_depth(s->cond), expr_depth(s->range_start),
                    expr_depth(s->range_end), expr_depth(s->max_trips), depth_of(s->then_block.get()),
                    depth_of(s->else_block.get()), depth_of(s->body.get())});
  if (s->type) d = std::max(d, type_depth(*s->type));
  ++d;
  if (too_deep(d, s->span)) return nullptr;
  depth_[s.get()] = d;
  return s;
}

std::shared_ptr<ast::Block> ParseContext::block(std::shared_ptr<ast::Block> b) {
  int d = 0;
  for (const auto& s : b->stmts) d = std::max(d, depth_of(s.get()));
  ++d;
  if (too_deep(d, b->span)) {
    b->stmts.clear();
    d = 1;
  }
  depth_[b.get()] = d;
  return b;
}

ast::Program parse_program(const SourceManager& sm, int file, Diagnostics& diags) {
  Span whole{file, {1, 1}, {1, 1}};
  try {
    const SourceFile& src = sm.file(file);
    ParseContext ctx(src, file, diags);
    Lexer lexer(src, file, diags);
    Parser parser(lexer, ctx);
    parser.parse();
    return std::move(ctx.program);
  } catch (const std::exception& e) {
    diags.error(whole, std::string("internal error in the parser: ") + e.what());
  } catch (...) {
    diags.error(whole, "internal error in the parser");
  }
  ast::Program empty;
  empty.file = file;
  return empty;
}

}  // namespace grape
