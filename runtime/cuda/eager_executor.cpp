#include "runtime/cuda/eager_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "jit/codegen.h"
#include "jit/cuda_driver.h"
#include "jit/kernel_cache.h"
#include "jit/kernel_source.h"
#include "jit/kernel_spec.h"
#include "jit/parallel_compile.h"
#include "runtime/error.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"

namespace grape::cuda {
namespace {

size_t round_up(size_t n) { return (std::max<size_t>(n, 1) + 255) & ~size_t{255}; }

// Device buffers recycled by size: values release their buffer after their last use and the
// next value of a similar size takes it, so a run's peak is about its live set, and repeated runs
// allocate nothing.
class BufferPool {
 public:
  explicit BufferPool(const jit::Device& dev) : dev_(dev) {}
  CUdeviceptr take(size_t bytes) {
    bytes = round_up(bytes);
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      CUdeviceptr p = it->second;
      free_.erase(it);
      return p;
    }
    owned_.emplace_back(dev_, bytes, "an intermediate tensor");
    sizes_[owned_.back().ptr()] = bytes;
    total_ += bytes;
    return owned_.back().ptr();
  }
  void give(CUdeviceptr p) { free_.emplace(sizes_.at(p), p); }
  size_t size_of(CUdeviceptr p) const { return sizes_.at(p); }
  size_t total() const { return total_; }

 private:
  const jit::Device& dev_;
  std::vector<jit::DeviceBuffer> owned_;
  std::map<CUdeviceptr, size_t> sizes_;
  std::multimap<size_t, CUdeviceptr> free_;
  size_t total_ = 0;
};

struct StateBuffer {
  jit::DeviceBuffer buf;
  DType dtype = DType::F32;
  Shape shape;
};

}  // namespace

struct EagerExecutor::Impl {
  const ir::Function& f;
  jit::Device dev;
  jit::Stream stream;
  jit::Event start, stop;
  scheduler::FusionPlan plan;
  std::vector<jit::KernelSpec> specs;
  std::vector<jit::Module> modules;
  std::vector<CUfunction> funcs;
  std::vector<CUfunction> tc_funcs;  // matrix products' tensor-core entry points (else null)
  std::unordered_map<const ir::Operation*, size_t> kernel_of_root;
  std::vector<jit::DeviceBuffer> scratch;  // per kernel, zero-initialised (matrix products' split-K)
  jit::DeviceBuffer params_dev;   // one KParams slot per kernel
  jit::PinnedBuffer params_host;  // staging for the slots, and for small scalars
  std::map<std::string, jit::DeviceBuffer> weights;
  std::map<std::string, StateBuffer> state;
  BufferPool pool;
  RunStats stats;

  // Per run: the device pointer of each value and, for pooled buffers, how many values share it.
  std::vector<CUdeviceptr> ptr;
  std::unordered_map<CUdeviceptr, int> refs;
  std::map<std::string, int64_t> dims;
  // Per block: the last op index (in that block) that uses each value, nested bodies included.
  std::unordered_map<const ir::Block*, std::unordered_map<ir::ValueId, size_t>> last_use;
  std::unordered_map<const ir::Block*, std::set<ir::ValueId>> defined_in;

  Impl(const ir::Function& fn, int device)
      : f(fn), dev(device), stream(dev), start(dev), stop(dev), pool(dev) {}

  std::string where(const ir::Operation& op) const {
    return std::string(ir::op_name(op.op)) + " at line " + std::to_string(op.loc.begin.line);
  }

  size_t bytes_of(ir::ValueId v) const {
    const ir::Type& t = f.type(v);
    int64_t n = 1;
    for (const auto& d : t.shape) n *= d.eval(dims);
    return static_cast<size_t>(n) * dtype_size(t.dtype);
  }

  // Operands of ops computed inside a kernel are read when the kernel runs, at its root.
  std::unordered_map<const ir::Operation*, const ir::Operation*> owner_root;

  void analyse(const ir::Block& b) {
    auto& lu = last_use[&b];
    auto& def = defined_in[&b];
    def.insert(b.params.begin(), b.params.end());
    std::unordered_map<const ir::Operation*, size_t> index_of;
    for (size_t i = 0; i < b.ops.size(); ++i) index_of[&b.ops[i]] = i;
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const ir::Operation& op = b.ops[i];
      size_t at = i;
      auto owner = owner_root.find(&op);
      if (owner != owner_root.end() && index_of.count(owner->second)) at = std::max(i, index_of.at(owner->second));
      auto use = [&](ir::ValueId v) {
        auto it = lu.find(v);
        if (it == lu.end() || it->second < at) lu[v] = at;
      };
      for (ir::ValueId v : op.operands) use(v);
      if (op.pred != ir::kNoValue) use(op.pred);
      if (op.body) {
        ir::for_each_op(*op.body, [&](const ir::Operation& o) {
          for (ir::ValueId v : o.operands) use(v);
          if (o.pred != ir::kNoValue) use(o.pred);
        });
        std::function<void(const ir::Block&)> yields = [&](const ir::Block& bb) {
          for (ir::ValueId v : bb.yields) use(v);
          for (const auto& o : bb.ops)
            if (o.body) yields(*o.body);
        };
        yields(*op.body);
        analyse(*op.body);
      }
      def.insert(op.results.begin(), op.results.end());
    }
  }

  bool live_after(const ir::Block& b, ir::ValueId v, size_t i) const {
    if (!defined_in.at(&b).count(v)) return true;  // from an enclosing block: needed again later
    if (std::find(b.yields.begin(), b.yields.end(), v) != b.yields.end()) return true;
    const auto& lu = last_use.at(&b);
    auto it = lu.find(v);
    return it != lu.end() && it->second > i;
  }

  void bind(ir::ValueId v, CUdeviceptr p) {
    release(v);
    ptr[static_cast<size_t>(v)] = p;
    auto it = refs.find(p);
    if (it != refs.end()) ++it->second;
  }
  CUdeviceptr fresh(ir::ValueId v) {
    CUdeviceptr p = pool.take(bytes_of(v));
    refs[p] = 0;
    bind(v, p);
    return p;
  }
  void release(ir::ValueId v) {
    CUdeviceptr& p = ptr[static_cast<size_t>(v)];
    if (!p) return;
    auto it = refs.find(p);
    if (it != refs.end() && --it->second == 0) {
      refs.erase(it);
      pool.give(p);
    }
    p = 0;
  }
  CUdeviceptr get(ir::ValueId v, const ir::Operation& op) const { return get(v, where(op)); }
  CUdeviceptr get(ir::ValueId v, const std::string& what) const {
    CUdeviceptr p = ptr[static_cast<size_t>(v)];
    if (!p) throw Error(ErrorCode::Internal, "cuda: " + what + " reads a value that has no device buffer");
    return p;
  }

  void copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, const char* what) {
    if (dst == src || bytes == 0) return;
    jit::check(jit::driver().cuMemcpyDtoDAsync(dst, src, bytes, stream.handle()), "cuMemcpyDtoDAsync", what);
    ++stats.copies;
  }

  bool read_bool(ir::ValueId v, const ir::Operation& op) {
    auto* host = static_cast<unsigned char*>(params_host.data()) + specs.size() * sizeof(jit::KParams);
    jit::check(jit::driver().cuMemcpyDtoHAsync(host, get(v, op), 1, stream.handle()), "cuMemcpyDtoHAsync",
               "a loop condition");
    stream.synchronize();
    ++stats.host_syncs;
    return *host != 0;
  }

  void launch(size_t k, const ir::Block& b, size_t index) {
    const jit::KernelSpec& spec = specs[k];
    // Outputs: fresh buffers, or the aliased input's buffer for in-place updates.
    for (size_t j = spec.num_inputs; j < spec.buffers.size(); ++j) {
      ir::ValueId v = spec.buffers[j];
      auto alias = std::find_if(spec.aliases.begin(), spec.aliases.end(), [&](auto& a) { return a.first == j; });
      if (alias == spec.aliases.end()) {
        fresh(v);
        continue;
      }
      ir::ValueId in = spec.buffers[alias->second];
      CUdeviceptr src = ptr[static_cast<size_t>(in)];
      bool shared = live_after(b, in, index) || !refs.count(src) || refs.at(src) > 1;
      bool is_state = std::any_of(state.begin(), state.end(), [&](auto& s) { return s.second.buf.ptr() == src; });
      if (is_state && !live_after(b, in, index)) shared = false;  // the KV cache is updated in place
      if (shared) {
        CUdeviceptr dst = fresh(v);
        copy(dst, src, bytes_of(in), "a copy before an in-place update");
      } else {
        bind(v, src);
      }
    }
    auto* slot = static_cast<jit::KParams*>(params_host.data()) + k;
    std::memset(slot, 0, sizeof(jit::KParams));
    slot->pred = spec.pred == ir::kNoValue ? nullptr
                                           : reinterpret_cast<const unsigned char*>(get(spec.pred, *spec.root));
    for (size_t j = 0; j < spec.buffers.size(); ++j) {
      ir::ValueId v = spec.buffers[j];
      slot->buf[j] = reinterpret_cast<void*>(get(v, *spec.root));
      const ir::Type& t = f.type(v);
      for (size_t d = 0; d < t.rank(); ++d) slot->shape[j][d] = t.shape[d].eval(dims);
    }
    for (size_t e = 0; e < spec.extra.size(); ++e) slot->extra[e] = spec.extra[e].eval(dims);
    scheduler::LaunchDims ld = scheduler::launch_dims(spec.launch, dims, dev.sm_count());
    slot->splits = ld.splits;
    slot->kchunk = ld.kchunk;
    if (ld.scratch_bytes > scratch[k].size()) {
      // Grows only: the kernels leave their counters at zero, so the area stays valid across runs.
      scratch[k] = jit::DeviceBuffer(dev, ld.scratch_bytes, "the scratch area of kernel " + spec.name);
      jit::check(jit::driver().cuMemsetD8Async(scratch[k].ptr(), 0, ld.scratch_bytes, stream.handle()), "cuMemsetD8Async",
                 "the scratch area of kernel " + spec.name);
    }
    slot->scratch = reinterpret_cast<void*>(scratch[k].ptr());
    CUdeviceptr dev_slot = params_dev.ptr() + k * sizeof(jit::KParams);
    jit::check(jit::driver().cuMemcpyHtoDAsync(dev_slot, slot, sizeof(jit::KParams), stream.handle()),
               "cuMemcpyHtoDAsync", "the parameter block of kernel " + spec.name);
    void* args[] = {&dev_slot};
    jit::launch(ld.tensor_cores ? tc_funcs[k] : funcs[k], jit::Dim3{ld.grid, 1, 1}, jit::Dim3{ld.block, 1, 1}, ld.shared_bytes, stream.handle(), args,
                "kernel " + spec.name + " (" + where(*spec.root) + ")");
    ++stats.kernels;
  }

  void run_loop(const ir::Operation& op) {
    const ir::Block& body = *op.body;
    size_t n = body.params.size();
    bool go = read_bool(op.operands[0], op);
    if (!go) {  // zero trips: the results are the initial values
      for (size_t i = 0; i < n; ++i) bind(op.results[i], ptr[static_cast<size_t>(op.operands[i + 1])]);
      return;
    }
    // The carried values live in buffers of their own (held by the loop: one reference), because
    // a yield's buffer is rewritten by the next iteration.
    std::vector<CUdeviceptr> carried(n);
    for (size_t i = 0; i < n; ++i) {
      carried[i] = pool.take(bytes_of(body.params[i]));
      refs[carried[i]] = 1;
      copy(carried[i], get(op.operands[i + 1], op), bytes_of(body.params[i]), "a loop's initial value");
    }
    int64_t trips = 0;
    while (go && (op.attrs.max_trips < 0 || trips < op.attrs.max_trips)) {
      for (size_t i = 0; i < n; ++i) bind(body.params[i], carried[i]);
      run_block(body, false);
      go = read_bool(body.yields[0], op);
      for (size_t i = 0; i < n; ++i)
        copy(carried[i], get(body.yields[i + 1], op), bytes_of(body.params[i]), "a loop-carried value");
      // Nothing defined in the body outlives the iteration (the yields were copied out).
      for (ir::ValueId v : defined_in.at(&body)) release(v);
      ++trips;
    }
    for (size_t i = 0; i < n; ++i) {
      bind(op.results[i], carried[i]);
      if (--refs.at(carried[i]) == 0) {  // cannot happen: the result holds a reference
        refs.erase(carried[i]);
        pool.give(carried[i]);
      }
    }
  }

  void run_executor_op(const ir::Operation& op) {
    switch (op.op) {
      case ir::Op::Weight: {
        auto it = weights.find(op.attrs.name);
        if (it == weights.end()) throw Error(ErrorCode::Internal, "cuda: weight '" + op.attrs.name + "' is not loaded");
        bind(op.results[0], it->second.ptr());
        return;
      }
      case ir::Op::StateRead: {
        auto it = state.find(op.attrs.name);
        if (it == state.end()) throw Error(ErrorCode::Internal, "cuda: state '" + op.attrs.name + "' does not exist");
        bind(op.results[0], it->second.buf.ptr());
        return;
      }
      case ir::Op::StateWrite: {
        StateBuffer& s = state.at(op.attrs.name);
        copy(s.buf.ptr(), get(op.operands[0], op), s.buf.size(), "a state update");
        return;
      }
      case ir::Op::DimValue: {
        CUdeviceptr p = fresh(op.results[0]);
        int32_t v = static_cast<int32_t>(op.attrs.shape.at(0).eval(dims));
        // A pageable source: the copy completes before the call returns.
        jit::check(jit::driver().cuMemcpyHtoDAsync(p, &v, sizeof v, stream.handle()), "cuMemcpyHtoDAsync",
                   "a dimension value");
        stream.synchronize();
        return;
      }
      case ir::Op::Loop: run_loop(op); return;
      default:
        throw Error(ErrorCode::Internal, std::string("cuda: no executor handling for ") + ir::op_name(op.op));
    }
  }

  void run_block(const ir::Block& b, bool release_dead) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const ir::Operation& op = b.ops[i];
      auto role_it = plan.roles.find(&op);
      scheduler::OpRole role = role_it == plan.roles.end() ? scheduler::OpRole::Executor : role_it->second;
      auto k = kernel_of_root.find(&op);
      if (k != kernel_of_root.end()) {
        launch(k->second, b, i);
      } else if (role == scheduler::OpRole::Alias) {
        bind(op.results[0], get(op.operands[0], op));
      } else if (role == scheduler::OpRole::Executor) {
        run_executor_op(op);
      }
      if (release_dead) {
        for (ir::ValueId v : op.operands)
          if (!live_after(b, v, i)) release(v);
        for (ir::ValueId v : op.results)
          if (!live_after(b, v, i)) release(v);
      }
    }
  }
};

EagerExecutor::EagerExecutor(const ir::Function& f, const std::map<std::string, Tensor>& weights, int device)
    : impl_(std::make_unique<Impl>(f, device)) {
  Impl& m = *impl_;
  auto t0 = std::chrono::steady_clock::now();
  m.plan = scheduler::plan_fusion(f);
  m.specs = jit::emit_kernels(f, m.plan, f.name);
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileJob> jobs;
  for (const auto& spec : m.specs) jobs.push_back({spec.source, spec.name});
  std::vector<jit::CompileOutcome> built = jit::compile_parallel(jobs, m.dev.arch(), &cache);
  for (size_t k = 0; k < m.specs.size(); ++k) {
    const jit::KernelSpec& s = m.specs[k];
    if (built[k].failure) std::rethrow_exception(built[k].failure);
    const jit::CompileResult& r = built[k].result;
    ++(r.from_cache ? m.stats.kernels_from_cache : m.stats.kernels_compiled);
    const void* image = r.cubin.empty() ? static_cast<const void*>(r.ptx.c_str()) : r.cubin.data();
    m.modules.emplace_back(m.dev, image, "kernel " + s.name);
    m.funcs.push_back(m.modules.back().function(jit::kKernelSymbol));
    m.tc_funcs.push_back(nullptr);
    if (s.launch.kind == jit::LaunchRule::MatrixProduct) {
      m.tc_funcs.back() = m.modules.back().function((std::string(jit::kKernelSymbol) + jit::kTensorCoreSuffix).c_str());
      for (CUfunction fn : {m.funcs.back(), m.tc_funcs.back()})
        jit::check(jit::driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(scheduler::kMatrixProductMaxSharedBytes)),
                   "cuFuncSetAttribute", "kernel " + s.name);
    }
    m.kernel_of_root[s.root] = k;
  }
  m.scratch.resize(m.specs.size());
  m.stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  size_t slots = std::max<size_t>(1, m.specs.size()) + 1;
  m.params_dev = jit::DeviceBuffer(m.dev, slots * sizeof(jit::KParams), "kernel parameter blocks");
  m.params_host = jit::PinnedBuffer(m.dev, slots * sizeof(jit::KParams), "kernel parameter staging");
  std::set<std::string> used;
  ir::for_each_op(f.body, [&](const ir::Operation& op) {
    if (op.op == ir::Op::Weight) used.insert(op.attrs.name);
  });
  for (const auto& name : used) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error(ErrorCode::Internal, "cuda: weight '" + name + "' is not loaded");
    jit::DeviceBuffer buf(m.dev, std::max<size_t>(1, it->second.nbytes()), "weight " + name);
    buf.copy_from_host(it->second.raw(), it->second.nbytes(), m.stream.handle());
    m.weights.emplace(name, std::move(buf));
  }
  m.stream.synchronize();
  for (const auto& spec : m.specs)
    for (const ir::Operation* op : spec.ops) m.owner_root[op] = spec.root;
  m.analyse(f.body);
}

EagerExecutor::~EagerExecutor() = default;

std::vector<Tensor> EagerExecutor::run(const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims) {
  Impl& m = *impl_;
  m.dev.make_current();
  m.dims = dims;
  m.ptr.assign(m.f.values.size(), 0);
  m.refs.clear();
  m.stats.kernels = m.stats.host_syncs = m.stats.copies = 0;
  m.start.record(m.stream.handle());
  for (size_t i = 0; i < m.f.params.size(); ++i) {
    const Tensor& t = inputs.at(i);
    CUdeviceptr p = m.fresh(m.f.params[i].value);
    if (t.nbytes())
      jit::check(jit::driver().cuMemcpyHtoDAsync(p, t.raw(), t.nbytes(), m.stream.handle()), "cuMemcpyHtoDAsync",
                 "input " + m.f.params[i].name);
  }
  std::vector<Tensor> out;
  try {
    m.run_block(m.f.body, true);
    for (ir::ValueId y : m.f.body.yields) {
      const ir::Type& t = m.f.type(y);
      Shape shape;
      for (const auto& d : t.shape) shape.push_back(d.eval(dims));
      Tensor host(t.dtype, shape);
      if (host.nbytes())
        jit::check(jit::driver().cuMemcpyDtoHAsync(host.raw(), m.get(y, std::string("an output")), host.nbytes(),
                                                   m.stream.handle()),
                   "cuMemcpyDtoHAsync", "an output");
      out.push_back(host);
    }
    m.stop.record(m.stream.handle());
    m.stream.synchronize();
  } catch (...) {
    // Leave the pool consistent for the next run.
    for (size_t v = 0; v < m.ptr.size(); ++v) m.release(static_cast<ir::ValueId>(v));
    throw;
  }
  m.stats.device_ms = m.stop.elapsed_ms_since(m.start);
  for (size_t v = 0; v < m.ptr.size(); ++v) m.release(static_cast<ir::ValueId>(v));
  size_t held = m.pool.total() + m.params_dev.size();
  for (const auto& [n, w] : m.weights) held += w.size();
  for (const auto& [n, s] : m.state) held += s.buf.size();
  m.stats.device_bytes = held;
  return out;
}

void EagerExecutor::set_state(const std::string& name, const Tensor& value) {
  Impl& m = *impl_;
  m.dev.make_current();
  StateBuffer s;
  s.buf = jit::DeviceBuffer(m.dev, std::max<size_t>(1, value.nbytes()), "state " + name);
  s.buf.copy_from_host(value.raw(), value.nbytes(), m.stream.handle());
  s.dtype = value.dtype();
  s.shape = value.shape();
  m.stream.synchronize();
  m.state[name] = std::move(s);
}

std::optional<Shape> EagerExecutor::state_shape(const std::string& name) const {
  auto it = impl_->state.find(name);
  if (it == impl_->state.end()) return std::nullopt;
  return it->second.shape;
}

Tensor EagerExecutor::state(const std::string& name) const {
  auto it = impl_->state.find(name);
  if (it == impl_->state.end()) return {};
  Tensor t(it->second.dtype, it->second.shape);
  it->second.buf.copy_to_host(t.raw(), t.nbytes(), impl_->stream.handle());
  impl_->stream.synchronize();
  return t;
}

void EagerExecutor::reset_state() { impl_->state.clear(); }

const RunStats& EagerExecutor::stats() const { return impl_->stats; }

std::string EagerExecutor::device_name() const { return impl_->dev.label(); }

}  // namespace grape::cuda
