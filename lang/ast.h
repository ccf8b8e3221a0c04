// The abstract syntax tree of a .grp file, exactly as written (no resolution, no folding).
// Every node carries the span of source it came from. The parser builds it; the front end and
// the test-only reference interpreter read it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/source.h"

namespace grape::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::shared_ptr<Expr>;
using StmtPtr = std::shared_ptr<Stmt>;

enum class UnaryOp { Neg, Not };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, MatMul, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
const char* to_string(UnaryOp op);   // "-", "not"
const char* to_string(BinaryOp op);  // "+", "@", "and", ...

struct KeywordArg {
  std::string name;
  Span name_span;
  ExprPtr value;
};

// One item of `x[...]`: an index expression, a slice `start:stop:step` (each part optional),
// or `...`.
struct IndexItem {
  enum class Kind { Index, Slice, Ellipsis } kind = Kind::Index;
  ExprPtr index;                      // Kind::Index
  ExprPtr start, stop, step;          // Kind::Slice; null when omitted
  Span span;
};

enum class ExprKind {
  IntLit,     // int_value
  FloatLit,   // float_value, text = spelling
  BoolLit,    // bool_value
  StringLit,  // text (without quotes, escapes resolved)
  Name,       // text
  Member,     // args[0].text  (`h[i].ln_1.weight` is Member(Member(Index(Name h, i), ln_1), weight))
  Unary,      // unary_op, args[0]
  Binary,     // binary_op, args[0], args[1]
  Call,       // text = callee name, callee_span, args = positional, kwargs
  Index,      // args[0] = base, items
  Tuple,      // args = elements (a parenthesised single expression is not a tuple)
};

struct Expr {
  ExprKind kind = ExprKind::IntLit;
  Span span;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string text;
  Span callee_span;  // Call: span of the callee name
  UnaryOp unary_op = UnaryOp::Neg;
  BinaryOp binary_op = BinaryOp::Add;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
  std::vector<IndexItem> items;
};

// `f16[B, 3*E]`, `bool[]`, or the compile-time integer parameter type `int`.
struct TypeExpr {
  std::string dtype;  // "f32", "f16", "bf16", "i32", "i64", "bool", or "int"
  Span dtype_span;
  std::vector<ExprPtr> dims;
  Span span;
};

struct Block {
  std::vector<StmtPtr> stmts;
  Span span;  // from `{` to `}`
};

enum class StmtKind {
  Let,       // names (>= 1; more than one is tuple unpack), value
  Var,       // names[0], type (optional), value
  Assign,    // target (a Name or an Index of a Name), value
  ExprStmt,  // value
  If,        // cond, then_block, else_block (null if none; `else if` is an else block holding one If)
  For,       // names[0] = loop variable, range_start, range_end, body
  While,     // cond, max_trips (null if no `max N`), body
  Break,
  Continue,
  Return,    // value (may be a Tuple)
  BlockStmt, // body: a nested `{ ... }`
};

struct Stmt {
  StmtKind kind = StmtKind::ExprStmt;
  Span span;
  std::vector<std::string> names;
  std::vector<Span> name_spans;
  std::optional<TypeExpr> type;
  ExprPtr target;
  ExprPtr value;
  ExprPtr cond;
  ExprPtr range_start, range_end;
  ExprPtr max_trips;
  std::shared_ptr<Block> then_block, else_block, body;
};

struct Param {
  std::string name;
  Span name_span;
  TypeExpr type;
};

struct FnDecl {
  std::string name;
  Span name_span;
  std::vector<Param> params;
  std::vector<TypeExpr> results;  // one type, or the elements of a tuple result
  bool tuple_result = false;      // `-> (T1, T2)`
  std::shared_ptr<Block> body;
  Span span;
};

struct ConstDecl {
  std::string name;
  Span name_span;
  ExprPtr value;
  Span span;
};

// An entry of a weights block: a tensor `ln_1.weight: f16[E]` (name_parts = {"ln_1", "weight"})
// or a group `h[L] { ... }` (name_parts = {"h"}, count, children).
struct WeightEntry {
  std::vector<std::string> name_parts;
  Span name_span;
  std::optional<TypeExpr> type;  // tensors only
  ExprPtr count;                 // groups only
  std::vector<WeightEntry> children;
  bool is_group() const { return count != nullptr; }
  Span span;
};

struct WeightsDecl {
  std::optional<std::string> prefix;
  Span prefix_span;
  std::vector<WeightEntry> entries;
  Span span;
};

struct StateDecl {
  std::string name;
  Span name_span;
  TypeExpr type;
  enum class Init { Zeros, Ones, Full } init = Init::Zeros;
  ExprPtr fill_value;  // Init::Full
  Span span;
};

struct Program {
  int file = -1;
  std::optional<std::string> model_name;
  Span model_span;
  std::vector<ConstDecl> consts;
  std::vector<WeightsDecl> weights;  // a file may have several weights blocks
  std::vector<StateDecl> states;
  std::vector<FnDecl> fns;
};

}  // namespace grape::ast
