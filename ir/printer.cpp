#include "ir/printer.h"

#include <cstdio>
#include <map>

namespace grape::ir {
namespace {

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

class Printer {
 public:
  explicit Printer(const Function& f) : f_(f) {}

  std::string run() {
    out_ = "func @" + f_.name + "(";
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const auto& p = f_.params[i];
      out_ += (i ? ", " : "") + name(p.value) + " " + p.name + ": " + p.type.str();
    }
    out_ += ") -> (";
    for (size_t i = 0; i < f_.result_types.size(); ++i) out_ += (i ? ", " : "") + f_.result_types[i].str();
    out_ += ") {\n";
    block(f_.body, 1);
    out_ += "  return " + list(f_.body.yields) + "\n}\n";
    return out_;
  }
  const std::map<ValueId, int>& names() const { return names_; }

 private:
  const Function& f_;
  std::string out_;
  std::map<ValueId, int> names_;

  std::string name(ValueId v) {
    auto it = names_.find(v);
    if (it == names_.end()) it = names_.emplace(v, static_cast<int>(names_.size())).first;
    return "%" + std::to_string(it->second);
  }
  std::string list(const std::vector<ValueId>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + name(vs[i]);
    return s;
  }

  static std::string attrs(const Operation& op) {
    const Attrs& a = op.attrs;
    const Attrs d;
    std::vector<std::string> parts;
    if (!a.name.empty()) parts.push_back("\"" + a.name + "\"");
    if (op.op == Op::Param) parts.push_back("index=" + std::to_string(a.index));
    bool has_dtype = op.op == Op::Cast || op.op == Op::Full || op.op == Op::Constant || op.op == Op::Arange ||
                     op.op == Op::OneHot;
    if (has_dtype) parts.push_back(dtype_name(a.dtype));
    if (op.op == Op::Constant || op.op == Op::Full) {
      bool integral = a.dtype == DType::I32 || a.dtype == DType::I64 || a.dtype == DType::Bool;
      parts.push_back("value=" + (integral ? std::to_string(a.ivalue) : fmt_double(a.fvalue)));
    }
    if (!a.axes.empty()) {
      std::string s = "axes=(";
      for (size_t i = 0; i < a.axes.size(); ++i) s += (i ? ", " : "") + std::to_string(a.axes[i]);
      parts.push_back(s + ")");
    }
    if (a.axis != d.axis) parts.push_back("axis=" + std::to_string(a.axis));
    if (a.k != d.k) parts.push_back("k=" + std::to_string(a.k));
    if (a.keepdims) parts.push_back("keepdims");
    if (a.eps != d.eps) parts.push_back("eps=" + fmt_double(a.eps));
    if (a.approx_tanh) parts.push_back("approximate=tanh");
    if (!a.shape.empty() || op.op == Op::Full || op.op == Op::Reshape || op.op == Op::Expand)
      parts.push_back("shape=[" + dims_to_string(a.shape) + "]");
    if (!a.slices.empty()) {
      std::string s = "[";
      for (size_t i = 0; i < a.slices.size(); ++i) {
        const auto& sl = a.slices[i];
        s += i ? ", " : "";
        s += sl.dynamic >= 0 ? "$" + std::to_string(sl.dynamic) : sl.start.str();
        if (sl.squeeze) continue;
        s += ":+" + sl.size.str();
        if (sl.step != 1) s += ":" + std::to_string(sl.step);
      }
      parts.push_back(s + "]");
    }
    if (a.max_trips >= 0) parts.push_back("max=" + std::to_string(a.max_trips));
    if (parts.empty()) return "";
    std::string s = " {";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    return s + "}";
  }

  void block(const Block& b, int depth) {
    std::string ind(static_cast<size_t>(depth) * 2, ' ');
    for (const auto& op : b.ops) {
      out_ += ind;
      if (!op.results.empty()) out_ += list(op.results) + " = ";
      out_ += op_name(op.op);
      if (!op.operands.empty()) out_ += " " + list(op.operands);
      out_ += attrs(op);
      if (op.pred != kNoValue) out_ += " if " + name(op.pred);
      if (!op.results.empty()) {
        out_ += " : ";
        for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + f_.type(op.results[i]).str();
      }
      if (op.body) {
        out_ += " {\n" + ind + "^(" + list(op.body->params) + "):\n";
        block(*op.body, depth + 1);
        out_ += ind + "  yield " + list(op.body->yields) + "\n" + ind + "}";
      }
      out_ += "\n";
    }
  }
};

}  // namespace

std::string print_function(const Function& f) { return Printer(f).run(); }

std::map<ValueId, int> printed_value_numbers(const Function& f) {
  Printer p(f);
  p.run();
  return p.names();
}

std::string print_module(const Module& m) {
  std::string out = "module " + m.name + "\n";
  for (const auto& w : m.weights) {
    std::string shape;
    for (size_t i = 0; i < w.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(w.shape[i]);
    out += "weight \"" + w.name + "\": " + dtype_name(w.dtype) + "[" + shape + "]\n";
  }
  for (const auto& s : m.states) {
    out += "state " + s.name + ": " + s.type.str() + " = ";
    out += s.init == StateInfo::Init::Zeros ? "zeros" : s.init == StateInfo::Init::Ones ? "ones" : "full(" + fmt_double(s.fill) + ")";
    out += "\n";
  }
  for (const auto& f : m.functions) out += "\n" + print_function(f);
  return out;
}

}  // namespace grape::ir
