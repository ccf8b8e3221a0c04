#include "ir/verifier.h"

#include <set>
#include <stdexcept>

namespace grape::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Function& f) : f_(f) {}

  std::vector<std::string> run() {
    std::set<ValueId> defined;
    for (const auto& p : f_.params) {
      check_id(p.value, "parameter " + p.name);
      defined.insert(p.value);
      if (valid(p.value) && f_.type(p.value) != p.type) fail("parameter " + p.name + " has a mismatched value type");
    }
    defined = block(f_.body, defined);
    if (f_.body.yields.size() != f_.result_types.size()) fail("function returns a different number of results than declared");
    for (size_t i = 0; i < f_.body.yields.size() && i < f_.result_types.size(); ++i) {
      use(f_.body.yields[i], defined, "return");
      if (valid(f_.body.yields[i]) && f_.type(f_.body.yields[i]) != f_.result_types[i])
        fail("result " + std::to_string(i) + " has type " + f_.type(f_.body.yields[i]).str() + ", declared " +
             f_.result_types[i].str());
    }
    return problems_;
  }

 private:
  const Function& f_;
  std::vector<std::string> problems_;
  std::set<ValueId> all_defined_;

  void fail(std::string msg) { problems_.push_back(std::move(msg)); }
  bool valid(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < f_.values.size(); }
  void check_id(ValueId v, const std::string& what) {
    if (!valid(v)) fail(what + ": invalid value id " + std::to_string(v));
    else if (!all_defined_.insert(v).second) fail(what + ": value %" + std::to_string(v) + " defined twice");
  }
  void use(ValueId v, const std::set<ValueId>& defined, const std::string& what) {
    if (!valid(v)) fail(what + ": invalid value id " + std::to_string(v));
    else if (!defined.count(v)) fail(what + ": uses %" + std::to_string(v) + " before its definition");
  }
  bool is_bool_scalar(ValueId v) const {
    return valid(v) && f_.type(v).dtype == DType::Bool && f_.type(v).rank() == 0;
  }

  std::set<ValueId> block(const Block& b, std::set<ValueId> defined) {
    for (ValueId p : b.params) {
      check_id(p, "block parameter");
      defined.insert(p);
    }
    for (const auto& op : b.ops) {
      const OpInfo& info = op_info(op.op);
      std::string what = std::string(info.name);
      int n = static_cast<int>(op.operands.size());
      if (n < info.min_operands || (info.max_operands >= 0 && n > info.max_operands))
        fail(what + ": " + std::to_string(n) + " operands");
      if (info.num_results >= 0 && static_cast<int>(op.results.size()) != info.num_results)
        fail(what + ": " + std::to_string(op.results.size()) + " results");
      for (ValueId v : op.operands) use(v, defined, what);
      if (op.pred != kNoValue) {
        use(op.pred, defined, what + " predicate");
        if (!is_bool_scalar(op.pred)) fail(what + ": predicate is not bool[]");
        if (op.op == Op::Select || op.op == Op::StateWrite || op.op == Op::Loop)
          fail(what + ": may not be predicated");
      }
      if (op.op == Op::Select && n == 3) {
        if (!is_bool_scalar(op.operands[0])) fail("select: condition is not bool[]");
        if (f_.type(op.operands[1]) != f_.type(op.operands[2])) fail("select: operand types differ");
      }
      if (op.op == Op::Loop) loop(op, defined);
      if ((op.body != nullptr) != (op.op == Op::Loop)) fail(what + ": body present on a non-loop op or missing");
      for (ValueId r : op.results) {
        check_id(r, what + " result");
        defined.insert(r);
      }
    }
    return defined;
  }

  void loop(const Operation& op, const std::set<ValueId>& defined) {
    if (!op.body || op.operands.empty()) return;
    size_t carried = op.operands.size() - 1;
    if (!is_bool_scalar(op.operands[0])) fail("loop: initial condition is not bool[]");
    if (op.body->params.size() != carried) fail("loop: body parameters do not match the carried values");
    if (op.body->yields.size() != carried + 1) fail("loop: body yields do not match the carried values");
    if (op.results.size() != carried) fail("loop: results do not match the carried values");
    block(*op.body, defined);
    std::set<ValueId> inner = defined;
    for (const auto& o : op.body->ops) inner.insert(o.results.begin(), o.results.end());
    inner.insert(op.body->params.begin(), op.body->params.end());
    for (ValueId y : op.body->yields) use(y, inner, "loop yield");
    if (!op.body->yields.empty() && !is_bool_scalar(op.body->yields[0])) fail("loop: continue condition is not bool[]");
    for (size_t i = 0; i < carried && i < op.body->params.size() && i + 1 < op.body->yields.size() &&
                       i < op.results.size();
         ++i) {
      const Type& t = f_.type(op.operands[i + 1]);
      if (f_.type(op.body->params[i]) != t || f_.type(op.body->yields[i + 1]) != t || f_.type(op.results[i]) != t)
        fail("loop: carried value " + std::to_string(i) + " changes type");
    }
  }
};

}  // namespace

std::vector<std::string> verify(const Function& f) { return Verifier(f).run(); }

void verify_or_throw(const Function& f, const std::string& after_pass) {
  auto problems = verify(f);
  if (problems.empty()) return;
  std::string msg = "internal error: IR of function '" + f.name + "' is malformed after " + after_pass + ":";
  for (const auto& p : problems) msg += "\n  " + p;
  throw std::logic_error(msg);
}

}  // namespace grape::ir
