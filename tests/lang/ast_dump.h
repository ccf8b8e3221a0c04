// An S-expression rendering of the AST, so tests can state the expected structure in one line.
//   a + b * c          -> (+ a (* b c))
//   f(x, axis=-1)      -> (call f x axis=(- 1))
//   x[:, i, ...]       -> (index x (: _ _) i ...)
#pragma once
#include <sstream>
#include <string>

#include "lang/ast.h"

namespace grape::testing {

std::string dump(const ast::ExprPtr& e);
std::string dump(const ast::TypeExpr& t);
std::string dump(const ast::StmtPtr& s);
std::string dump(const std::shared_ptr<ast::Block>& b);
std::string dump(const ast::WeightEntry& w);
std::string dump(const ast::Program& p);  // one declaration per line

inline std::string dump_opt(const ast::ExprPtr& e) { return e ? dump(e) : "_"; }

inline std::string dump(const ast::ExprPtr& e) {
  using K = ast::ExprKind;
  if (!e) return "<null>";
  switch (e->kind) {
    case K::IntLit: return std::to_string(e->int_value);
    case K::FloatLit: return e->text;
    case K::BoolLit: return e->bool_value ? "true" : "false";
    case K::StringLit: return "\"" + e->text + "\"";
    case K::Name: return e->text;
    case K::Member: return "(. " + dump(e->args.at(0)) + " " + e->text + ")";
    case K::Unary: return std::string("(") + ast::to_string(e->unary_op) + " " + dump(e->args.at(0)) + ")";
    case K::Binary:
      return std::string("(") + ast::to_string(e->binary_op) + " " + dump(e->args.at(0)) + " " + dump(e->args.at(1)) +
             ")";
    case K::Call: {
      std::string s = "(call " + e->text;
      for (const auto& a : e->args) s += " " + dump(a);
      for (const auto& kw : e->kwargs) s += " " + kw.name + "=" + dump(kw.value);
      return s + ")";
    }
    case K::Index: {
      std::string s = "(index " + dump(e->args.at(0));
      for (const auto& it : e->items) {
        switch (it.kind) {
          case ast::IndexItem::Kind::Index: s += " " + dump(it.index); break;
          case ast::IndexItem::Kind::Ellipsis: s += " ..."; break;
          case ast::IndexItem::Kind::Slice:
            s += " (: " + dump_opt(it.start) + " " + dump_opt(it.stop);
            if (it.step) s += " " + dump(it.step);
            s += ")";
            break;
        }
      }
      return s + ")";
    }
    case K::Tuple: {
      std::string s = "(tuple";
      for (const auto& a : e->args) s += " " + dump(a);
      return s + ")";
    }
  }
  return "?";
}

inline std::string dump(const ast::TypeExpr& t) {
  if (t.dtype == "int" && t.dims.empty()) return "int";
  std::string s = t.dtype + "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + dump(t.dims[i]);
  return s + "]";
}

inline std::string dump(const std::shared_ptr<ast::Block>& b) {
  if (!b) return "<null>";
  std::string s = "{";
  for (size_t i = 0; i < b->stmts.size(); ++i) s += (i ? "; " : "") + dump(b->stmts[i]);
  return s + "}";
}

inline std::string dump(const ast::StmtPtr& s) {
  using K = ast::StmtKind;
  if (!s) return "<null>";
  auto names = [&] {
    std::string out;
    for (size_t i = 0; i < s->names.size(); ++i) out += (i ? ", " : "") + s->names[i];
    return out;
  };
  switch (s->kind) {
    case K::Let: return "(let " + names() + " = " + dump(s->value) + ")";
    case K::Var:
      return "(var " + names() + (s->type ? ": " + dump(*s->type) : std::string()) + " = " + dump(s->value) + ")";
    case K::Assign: return "(assign " + dump(s->target) + " " + dump(s->value) + ")";
    case K::ExprStmt: return "(expr " + dump(s->value) + ")";
    case K::If: {
      std::string out = "(if " + dump(s->cond) + " " + dump(s->then_block);
      if (s->else_block) out += " else " + dump(s->else_block);
      return out + ")";
    }
    case K::For:
      return "(for " + names() + " " + dump(s->range_start) + " " + dump(s->range_end) + " " + dump(s->body) + ")";
    case K::While:
      return "(while " + dump(s->cond) + (s->max_trips ? " max " + dump(s->max_trips) : std::string()) + " " +
             dump(s->body) + ")";
    case K::Break: return "(break)";
    case K::Continue: return "(continue)";
    case K::Return: return "(return " + dump(s->value) + ")";
    case K::BlockStmt: return dump(s->body);
  }
  return "?";
}

inline std::string dump(const ast::WeightEntry& w) {
  std::string name;
  for (size_t i = 0; i < w.name_parts.size(); ++i) name += (i ? "." : "") + w.name_parts[i];
  if (!w.is_group()) return name + ": " + (w.type ? dump(*w.type) : "<none>");
  std::string s = name + "[" + dump(w.count) + "] {";
  for (size_t i = 0; i < w.children.size(); ++i) s += (i ? "; " : "") + dump(w.children[i]);
  return s + "}";
}

inline std::string dump(const ast::Program& p) {
  std::string out;
  if (p.model_name) out += "model " + *p.model_name + "\n";
  for (const auto& c : p.consts) out += "const " + c.name + " = " + dump(c.value) + "\n";
  for (const auto& w : p.weights) {
    out += "weights ";
    if (w.prefix) out += "prefix \"" + *w.prefix + "\" ";
    out += "{";
    for (size_t i = 0; i < w.entries.size(); ++i) out += (i ? "; " : "") + dump(w.entries[i]);
    out += "}\n";
  }
  for (const auto& s : p.states) {
    out += "state " + s.name + ": " + dump(s.type) + " = ";
    switch (s.init) {
      case ast::StateDecl::Init::Zeros: out += "zeros"; break;
      case ast::StateDecl::Init::Ones: out += "ones"; break;
      case ast::StateDecl::Init::Full: out += "full(" + dump(s.fill_value) + ")"; break;
    }
    out += "\n";
  }
  for (const auto& f : p.fns) {
    out += "fn " + f.name + "(";
    for (size_t i = 0; i < f.params.size(); ++i) out += (i ? ", " : "") + f.params[i].name + ": " + dump(f.params[i].type);
    out += ")";
    if (!f.results.empty()) {
      out += " -> ";
      if (f.tuple_result) out += "(";
      for (size_t i = 0; i < f.results.size(); ++i) out += (i ? ", " : "") + dump(f.results[i]);
      if (f.tuple_result) out += ")";
    }
    out += " " + dump(f.body) + "\n";
  }
  return out;
}

// "line:col-line:col" of a span, for span assertions.
inline std::string where(const Span& s) {
  return std::to_string(s.begin.line) + ":" + std::to_string(s.begin.column) + "-" + std::to_string(s.end.line) +
         ":" + std::to_string(s.end.column);
}

}  // namespace grape::testing
