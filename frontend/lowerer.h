// Internal to frontend/: the lowering of one entry function (with everything it calls inlined)
// from the AST to predicated IR, with name resolution and shape/dtype inference on the way.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/compile.h"
#include "frontend/globals.h"
#include "frontend/value.h"

namespace grape::frontend {

// NumPy broadcasting of symbolic shapes; nullopt if incompatible.
std::optional<std::vector<ir::Dim>> broadcast_dims(const std::vector<ir::Dim>& a,
                                                   const std::vector<ir::Dim>& b);

// A type as written in the source: "f32[N, 2*E]".
std::string type_text(const ast::TypeExpr& t);

// Thrown when a statically bounded `for` loop's index is used where a compile-time integer is
// required: the loop is then unrolled at compile time instead of becoming a device loop.
struct NeedsUnroll {
  int loop_id;
};

// Thrown to abandon lowering of the current entry after an error that leaves no sensible value.
struct AbortEntry {};

// Work done by the lowerings of one program (all entries together), checked against the limits
// of CompileOptions so that no program makes the compiler run for minutes or exhaust memory.
struct LoweringBudget {
  int64_t ops = 0;       // operations emitted, including attempts that were rolled back
  int64_t unrolled = 0;  // iterations of statically unrolled for loops
  int64_t errors = 0;    // errors reported in entry bodies, repeats included
  // Elements of the static-shaped tensors: the declared weights and states, then every emitted
  // result (against CompileLimits::max_program_elements).
  int64_t elements = 0;
  static constexpr int64_t kMaxErrors = 1000;
  bool exhausted = false;
};

class Lowerer {
 public:
  Lowerer(const Globals& globals, const CompileOptions& opts, Diagnostics& diags, LoweringBudget& budget)
      : g_(globals), opts_(opts), diags_(&diags), budget_(&budget) {}
  // Lowers `fn` as an entry point. Returns false if errors were reported.
  bool lower_entry(const ast::FnDecl& fn, ir::Function& out);

  // ---- expressions (expr.cpp) ----
  Val lower_expr(const ast::Expr& e);
  Val lower_name(const ast::Expr& e);
  Val lower_binary(ast::BinaryOp op, const Val& a, const Val& b, Span span);
  Val lower_unary(ast::UnaryOp op, const Val& a, Span span);
  Val lower_index(const ast::Expr& e);
  Val lower_member(const ast::Expr& e);
  Val lower_call(const ast::Expr& e);
  Val call_function(const ast::FnDecl& fn, const ast::Expr& call, std::vector<Val> args);
  // Resolves x[items] on a tensor into a slice description (for reads and in-place writes).
  struct SliceSpec {
    std::vector<ir::SliceAxis> axes;
    std::vector<ir::ValueId> dynamic;  // operands for dynamic starts, in order
    std::vector<ir::Dim> result_shape;
    bool ok = true;
  };
  SliceSpec resolve_slice(const ir::Type& t, const std::vector<ast::IndexItem>& items, Span span);

  // ---- builtins (builtins.cpp) ----
  std::optional<Val> lower_builtin(const std::string& name, const ast::Expr& call);
  static std::vector<std::string> builtin_names();

  // ---- helpers shared by the files above (lowerer.cpp) ----
  ir::ValueId emit(ir::Op op, std::vector<ir::ValueId> operands, ir::Type type, ir::Attrs attrs, Span loc,
                   bool predicated = true);
  std::vector<ir::ValueId> emit_multi(ir::Op op, std::vector<ir::ValueId> operands,
                                      std::vector<ir::Type> types, ir::Attrs attrs, Span loc);
  ir::ValueId constant(DType dtype, double value, Span loc);
  ir::ValueId const_true(Span loc) { return constant(DType::Bool, 1, loc); }
  // Converts a compile-time value to a tensor; `like` gives the dtype for literals (nullopt: the
  // literal's own dtype: i32 for ints, f32 for floats, bool for booleans).
  std::optional<ir::ValueId> to_tensor(const Val& v, std::optional<DType> like, Span span);
  // The compile-time integer in `v`, or an error naming `what` (or NeedsUnroll for a loop index).
  std::optional<int64_t> require_int(const Val& v, const std::string& what);
  std::optional<ir::Dim> require_dim(const Val& v, const std::string& what);
  const ir::Type& type_of(ir::ValueId v) const { return fn_->type(v); }
  std::string type_str(ir::ValueId v) const { return fn_->type(v).str(); }
  // Counts one emitted operation against CompileOptions::max_ops; past the limit reports it at
  // `loc` and abandons the entry (AbortEntry).
  void count_op(Span loc);
  // A result type with a static shape of more than CompileLimits::max_tensor_elements elements is
  // reported at `loc` and abandons the entry; so is the result that takes the program past
  // max_program_elements (`count`: false for results that are declared tensors, counted already).
  void check_elements(const ir::Type& t, Span loc, bool count = true);
  // The same, reported but not thrown; `what` starts the message ("a parameter of type").
  bool elements_ok(const ir::Type& t, Span loc, const char* what = "this makes a tensor of type");
  // A use of a declaration that failed (already reported): an error value, and this entry fails.
  Val poisoned_use() {
    had_error_ = true;
    return Val::error();
  }
  // Every error of this entry goes through here: Diagnostics deduplicates identical reports from
  // different entries, so its count cannot tell whether this entry failed. After
  // LoweringBudget::kMaxErrors errors in bodies, lowering stops: error paths emit no operations,
  // so the op budget does not bound them (a function calling a failing one twice, called twice,
  // ... reports the same error 2^depth times).
  Diagnostic& error(Span span, std::string msg) {
    had_error_ = true;
    Diagnostic& d = diags_->error(span, std::move(msg));
    if (in_body_ && ++budget_->errors >= LoweringBudget::kMaxErrors) {
      budget_->exhausted = true;
      throw AbortEntry{};
    }
    return d;
  }
  ir::Function& fn() { return *fn_; }
  // Evaluates a type as written in a signature, resolving consts and the current dim bindings.
  std::optional<ir::Type> resolve_type(const ast::TypeExpr& t, std::map<std::string, ir::Dim>* new_symbols);
  std::optional<ir::Dim> resolve_dim_expr(const ast::Expr& e, std::map<std::string, ir::Dim>* new_symbols);

 private:
  const Globals& g_;
  const CompileOptions& opts_;
  Diagnostics* diags_;
  LoweringBudget* budget_;
  ir::Function* fn_ = nullptr;
  ir::Block* cur_ = nullptr;
  ir::ValueId pred_ = ir::kNoValue;  // predicate of the statement being lowered
  size_t hoist_pos_ = 0;             // where sources (weights) are inserted in the entry block
  std::map<std::string, ir::ValueId> weight_values_;
  int next_loop_id_ = 0;
  bool had_error_ = false;
  bool in_body_ = false;  // lowering the entry's body (where AbortEntry is caught)

  struct Slot {
    std::string name;
    Val val;
    bool is_mutable = false;
    bool is_state = false;
    ir::ValueId decl_pred = ir::kNoValue;
    Span decl;
  };
  std::vector<Slot> slots_;

  struct LoopFrame {
    ir::ValueId broken = ir::kNoValue;   // kNoValue: false
    ir::ValueId skipped = ir::kNoValue;  // kNoValue: false
  };
  struct FnContext {
    const ast::FnDecl* decl = nullptr;
    std::vector<std::map<std::string, size_t>> scopes;  // name -> slot
    std::map<std::string, ir::Dim> dims;                // symbolic dims of this function
    std::vector<LoopFrame> loops;
  };
  std::vector<FnContext> ctx_;
  std::map<std::string, size_t> state_slots_;

  // ---- statements (lowerer.cpp) ----
  void lower_block(const ast::Block& b, ir::ValueId block_pred, bool new_scope = true);
  void lower_stmt(const ast::Stmt& s);
  void lower_let(const ast::Stmt& s);
  void lower_var(const ast::Stmt& s);
  void lower_assign(const ast::Stmt& s);
  void lower_if(const ast::Stmt& s);
  void lower_for(const ast::Stmt& s);
  void lower_while(const ast::Stmt& s);
  void lower_break_continue(const ast::Stmt& s);
  void unroll_for(const ast::Stmt& s, int64_t begin, int64_t end);
  void device_for(const ast::Stmt& s, const Val& begin, const Val& end, int loop_id);
  Val lower_fn_body(const ast::FnDecl& fn, ir::ValueId block_pred);
  std::vector<ir::ValueId> check_results(const ast::FnDecl& fn, const Val& ret,
                                         const std::vector<ir::Type>& declared);
  Span return_span_;
  Span expr_span_;  // the expression being lowered, for errors raised by helpers
  Val weight_path(const std::string& path, Span span);
  std::optional<std::vector<ir::Dim>> matmul_shape(const ir::Type& a, const ir::Type& b, Span span);
  // Elementwise binary op with literal adaptation and broadcasting (maximum, pow, ...).
  Val elementwise2(ir::Op op, const Val& a, const Val& b, Span span, const std::string& name);
  // Lowers a device loop: `cond0` decides the first trip; `body` lowers one iteration and returns
  // the next condition (`not broken` is added here). Every visible var and state is offered as a
  // carried value; those the body does not change are pruned. `extra` adds hidden slots.
  void device_loop(const ast::Stmt& s, ir::ValueId cond0, int64_t max_trips, const std::vector<size_t>& extra,
                   const std::function<ir::ValueId()>& body);
  void assign_slot(size_t slot, Val v, Span span);
  void bind(const std::string& name, Span span, Val v, bool is_mutable);
  std::optional<size_t> lookup_slot(const std::string& name) const;
  std::vector<size_t> carried_candidates() const;
  ir::ValueId pred_and(ir::ValueId p, ir::ValueId c, Span loc);  // p ∧ c, defined even if c is not when ¬p
  ir::ValueId pred_and_not(ir::ValueId p, ir::ValueId c, Span loc);
  ir::ValueId current_stmt_pred(ir::ValueId block_pred, std::pair<ir::ValueId, ir::ValueId> flags_at_start,
                                Span loc);
  Val materialize_for_var(const Val& v, Span span);

  friend class BuiltinLowering;
};

}  // namespace grape::frontend
