#include "runtime/cpu/executor.h"

#include <cstdlib>

#include "runtime/cpu/kernels.h"
#include "base/error.h"

namespace grape::cpu {
namespace {

class Executor {
 public:
  Executor(const ir::Function& f, ExecEnv& env)
      : f_(f), env_(env), vals_(f.values.size()), control_(env.control ? *env.control : default_control_) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    for (size_t i = 0; i < f_.params.size(); ++i)
      vals_[static_cast<size_t>(f_.params[i].value)] = inputs.at(i);
    state_ = *env_.state;
    run_block(f_.body);
    std::vector<Tensor> out;
    for (ir::ValueId y : f_.body.yields) out.push_back(get(y, f_.loc, "return"));
    *env_.state = std::move(state_);  // commit only after the whole run succeeded
    return out;
  }

 private:
  const ir::Function& f_;
  ExecEnv& env_;
  std::vector<Tensor> vals_;
  std::map<std::string, Tensor> state_;
  RunControl default_control_{resolve_max_loop_trips(0), 0};
  const RunControl& control_;

  SourcePosition at(Span loc) const {
    return env_.locate && loc.valid() ? env_.locate(loc) : SourcePosition{};
  }

  // `FILE:LINE:COL: error: msg` where the op has a position.
  [[noreturn]] void fail(ErrorCode code, Span loc, const std::string& msg) const {
    throw_at(code, at(loc), msg);
  }

  [[noreturn]] void internal(Span loc, const std::string& msg) const {
    SourcePosition p = at(loc);
    throw_at(ErrorCode::Internal, p, p.file.empty() ? "internal error: " + msg : msg);
  }

  const Tensor& get(ir::ValueId v, Span loc, const char* what) const {
    const Tensor& t = vals_[static_cast<size_t>(v)];
    if (!t.defined()) internal(loc, std::string(what) + " reads a value that was never computed");
    return t;
  }

  int64_t eval(const ir::Dim& d, Span loc) const {
    try {
      return d.eval(env_.dims);
    } catch (const std::exception& e) {
      fail(ErrorCode::Type, loc, e.what());
    }
  }

  Shape eval_shape(const std::vector<ir::Dim>& dims, Span loc) const {
    Shape s;
    for (const auto& d : dims) s.push_back(eval(d, loc));
    return s;
  }

  void check_result(const ir::Operation& op, size_t i, const Tensor& t) const {
    const ir::Type& want = f_.type(op.results[i]);
    Shape shape = eval_shape(want.shape, op.loc);
    if (t.dtype() != want.dtype || t.shape() != shape)
      internal(op.loc, std::string(ir::op_name(op.op)) + " produced " + dtype_name(t.dtype()) +
                           shape_to_string(t.shape()) + ", but its type is " + want.str() + " = " +
                           shape_to_string(shape));
  }

  KernelAttrs kernel_attrs(const ir::Operation& op) const {
    const ir::Attrs& a = op.attrs;
    KernelAttrs k;
    k.dtype = a.dtype;
    k.value = a.fvalue;
    k.ivalue = a.ivalue;
    k.axes = a.axes;
    k.axis = a.axis;
    k.k = a.k;
    k.keepdims = a.keepdims;
    k.eps = a.eps;
    k.approx_tanh = a.approx_tanh;
    k.shape = eval_shape(a.shape, op.loc);
    if (!a.slices.empty()) {
      const Tensor& x = get(op.operands[0], op.loc, "slice");
      for (size_t i = 0; i < a.slices.size(); ++i) {
        const ir::SliceAxis& s = a.slices[i];
        SliceSpec spec;
        spec.size = eval(s.size, op.loc);
        spec.step = s.step;
        spec.squeeze = s.squeeze;
        if (s.dynamic >= 0) {
          const Tensor& idx = get(op.operands[static_cast<size_t>(s.dynamic)], op.loc, "slice index");
          try {
            spec.start = resolve_dynamic_start(idx.get_int(0), x.dim(i), spec.size);
          } catch (const KernelError& e) {
            fail(ErrorCode::Type, op.loc, e.what());
          }
        } else {
          spec.start = eval(s.start, op.loc);
        }
        if (spec.start < 0 || spec.size < 0 ||
            (spec.size > 0 && spec.start + (spec.size - 1) * spec.step >= x.dim(i)))
          fail(ErrorCode::Type, op.loc,
               "slice out of range: axis " + std::to_string(i) + " of " + shape_to_string(x.shape()) +
                   " starting at " + std::to_string(spec.start) + ", " + std::to_string(spec.size) +
                   " elements");
        k.slices.push_back(spec);
      }
    }
    return k;
  }

  void run_loop(const ir::Operation& op) {
    const ir::Block& body = *op.body;
    bool go = get(op.operands[0], op.loc, "loop condition").get(0) != 0;
    std::vector<Tensor> carried;
    for (size_t i = 1; i < op.operands.size(); ++i)
      carried.push_back(vals_[static_cast<size_t>(op.operands[i])]);
    int64_t trips = 0;
    int64_t limit = op.attrs.max_trips >= 0 ? op.attrs.max_trips : control_.max_loop_trips();
    while (go && trips < limit) {
      control_.check();
      for (size_t i = 0; i < carried.size(); ++i) vals_[static_cast<size_t>(body.params[i])] = carried[i];
      run_block(body);
      go = get(body.yields[0], op.loc, "loop condition").get(0) != 0;
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = vals_[static_cast<size_t>(body.yields[i + 1])];
      ++trips;
    }
    if (go && op.attrs.max_trips < 0) fail(ErrorCode::Type, op.loc, control_.loop_cap_message("the loop"));
    for (size_t i = 0; i < carried.size(); ++i) vals_[static_cast<size_t>(op.results[i])] = carried[i];
  }

  void run_block(const ir::Block& b) {
    for (const auto& op : b.ops) {
      control_.check();
      if (op.pred != ir::kNoValue && get(op.pred, op.loc, "predicate").get(0) == 0) {
        for (ir::ValueId r : op.results) vals_[static_cast<size_t>(r)] = Tensor();
        continue;
      }
      switch (op.op) {
        case ir::Op::Weight: {
          if (!env_.weights) internal(op.loc, "no weights are loaded");
          auto it = env_.weights->find(op.attrs.name);
          if (it == env_.weights->end()) internal(op.loc, "weight '" + op.attrs.name + "' is not loaded");
          set(op, 0, it->second);
          continue;
        }
        case ir::Op::StateRead: {
          auto it = state_.find(op.attrs.name);
          if (it == state_.end()) internal(op.loc, "state '" + op.attrs.name + "' does not exist");
          set(op, 0, it->second);
          continue;
        }
        case ir::Op::StateWrite: state_[op.attrs.name] = get(op.operands[0], op.loc, "state write"); continue;
        case ir::Op::DimValue: {
          int64_t v = eval(op.attrs.shape.at(0), op.loc);
          set(op, 0, Tensor::scalar_i32(static_cast<int32_t>(v)));
          continue;
        }
        case ir::Op::Select: {
          bool p = get(op.operands[0], op.loc, "select").get(0) != 0;
          vals_[static_cast<size_t>(op.results[0])] = vals_[static_cast<size_t>(op.operands[p ? 1 : 2])];
          continue;
        }
        case ir::Op::Loop: run_loop(op); continue;
        case ir::Op::Param: internal(op.loc, "param ops are not used");
        default: break;
      }
      KernelAttrs attrs = kernel_attrs(op);
      size_t n_inputs = op.op == ir::Op::Slice ? 1 : op.op == ir::Op::SliceUpdate ? 2 : op.operands.size();
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < n_inputs; ++i) inputs.push_back(get(op.operands[i], op.loc, ir::op_name(op.op)));
      std::vector<Tensor> out;
      try {
        out = run_kernel(op.op, inputs, attrs);
      } catch (const KernelError& e) {
        // Kernel errors usually name their op already ("topk: k = ..."): one prefix, not two.
        std::string msg = e.what(), prefix = std::string(ir::op_name(op.op)) + ": ";
        if (msg.rfind(prefix, 0) != 0) msg = prefix + msg;
        fail(ErrorCode::Type, op.loc, msg);
      } catch (const std::bad_alloc&) {
        fail(ErrorCode::OutOfMemory, op.loc, std::string(ir::op_name(op.op)) + ": out of memory");
      }
      if (out.size() != op.results.size()) internal(op.loc, "kernel returned the wrong number of results");
      for (size_t i = 0; i < out.size(); ++i) set(op, i, std::move(out[i]));
    }
  }

  void set(const ir::Operation& op, size_t i, Tensor t) {
    check_result(op, i, t);
    vals_[static_cast<size_t>(op.results[i])] = std::move(t);
  }
};

}  // namespace

std::vector<Tensor> execute(const ir::Function& f, const std::vector<Tensor>& inputs, ExecEnv& env) {
  return Executor(f, env).run(inputs);
}

}  // namespace grape::cpu
