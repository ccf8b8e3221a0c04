#include "runtime/model.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "frontend/compile.h"
#include "ir/ir.h"
#include "jit/cuda_driver.h"
#include "lang/parse.h"
#include "runtime/cpu/executor.h"
#include "runtime/cuda/executor.h"
#include "runtime/file_io.h"
#include "runtime/random_weights.h"
#include "runtime/run_control.h"
#include "runtime/safetensors.h"

namespace grape {

std::string TensorSignature::to_string() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + "]";
}

static TensorSignature signature_of(const std::string& name, const ir::Type& t) {
  TensorSignature s;
  s.name = name;
  s.dtype = t.dtype;
  for (const auto& d : t.shape) {
    s.dims.push_back(d.str());
    s.fixed.push_back(d.is_const() ? d.const_value() : -1);
  }
  return s;
}

struct Model::Impl {
  SourceManager sm;
  ir::Module module;
  mutable std::mutex weights_mu;  // guards `weights` (replaced whole, never mutated)
  std::shared_ptr<const std::map<std::string, Tensor>> weights;
  SourcePosition position(Span s) const {
    if (!s.valid() || static_cast<size_t>(s.file) >= sm.size()) return {};
    return {sm.file(s.file).path, s.begin.line, s.begin.column};
  }
  std::string locate(Span s) const {
    SourcePosition p = position(s);
    return p.file.empty() ? "" : p.file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
  }
};

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

std::string Model::locate(const Span& s) const { return impl_->locate(s); }
SourcePosition Model::position(const Span& s) const { return impl_->position(s); }

// Files larger than this are not .grp programs (and would only exhaust memory).
static constexpr size_t kMaxSourceBytes = 64u << 20;

std::shared_ptr<Model> Model::load_file(const std::string& path, const ModelOptions& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::IO, "cannot read '" + path + "': it is a directory, not a .grp file");
  // A regular file only (a FIFO would block), and the size is checked before reading.
  std::vector<uint8_t> bytes = read_file_bytes(path, kMaxSourceBytes);
  return load_source(std::string(bytes.begin(), bytes.end()), path, opts);
}

[[noreturn]] static void throw_source_error(ErrorCode code, const SourceManager& sm,
                                            const Diagnostics& diags) {
  std::string text = diags.render(sm);
  for (const auto& d : diags.all())
    if (d.severity == Severity::Error && d.span.valid() && static_cast<size_t>(d.span.file) < sm.size())
      throw SourceError(code, text, sm.file(d.span.file).path, d.span.begin.line, d.span.begin.column);
  throw Error(code, text);
}

// "NAME=N" with N a non-negative integer, or nullopt.
static std::optional<std::pair<std::string, int64_t>> parse_limit(const std::string& item) {
  auto eq = item.find('=');
  if (eq == std::string::npos) return std::nullopt;
  std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v < 0) return std::nullopt;
  return std::make_pair(key, static_cast<int64_t>(v));
}

// The compile limits of a load: ModelOptions::limits, then GRAPE_LIMITS=max_ops=N,max_weights=N,...
// (for every model the process loads; errors name the variable), then ModelOptions::limit_overrides
// (the CLI's --limit, grp_model_options.limits), so that one program can raise a limit the
// environment sets.
static CompileLimits effective_limits(const ModelOptions& opts) {
  CompileLimits limits = opts.limits;
  const char* env = std::getenv("GRAPE_LIMITS");
  std::string text = env ? env : "";
  size_t pos = 0;
  while (!text.empty() && pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    auto kv = parse_limit(item);
    if (!kv)
      throw Error(ErrorCode::InvalidArgument,
                  "GRAPE_LIMITS: '" + item + "' is not NAME=N with N a non-negative integer");
    if (!set_limit(limits, kv->first, kv->second))
      throw Error(ErrorCode::InvalidArgument,
                  "GRAPE_LIMITS: unknown limit '" + kv->first + "' (" + limit_names() + ")");
  }
  for (const std::string& item : opts.limit_overrides) {
    auto kv = parse_limit(item);
    if (!kv)
      throw Error(ErrorCode::InvalidArgument,
                  "limit '" + item + "': expected NAME=N with N a non-negative integer");
    if (!set_limit(limits, kv->first, kv->second))
      throw Error(ErrorCode::InvalidArgument,
                  "unknown limit '" + kv->first + "' (the limits are " + limit_names() + ")");
  }
  return limits;
}

std::shared_ptr<Model> Model::load_source(const std::string& source, const std::string& name,
                                          const ModelOptions& opts) {
  std::shared_ptr<Model> m(new Model());
  Impl& impl = *m->impl_;
  int file = impl.sm.add(name, source);
  Diagnostics diags;
  ast::Program program = parse_program(impl.sm, file, diags);
  if (diags.has_errors()) throw_source_error(ErrorCode::Syntax, impl.sm, diags);
  std::vector<std::string> consts;
  for (const auto& c : program.consts) consts.push_back(c.name);
  for (const auto& [k, v] : opts.defines) {
    if (std::find(consts.begin(), consts.end(), k) != consts.end()) continue;
    std::string best = closest_name(k, consts);
    throw Error(ErrorCode::InvalidArgument, "-D " + k + "=" + std::to_string(v) + ": " + name +
                                                " declares no const '" + k + "'" +
                                                (best.empty() ? "" : "; did you mean '" + best + "'?"));
  }
  CompileOptions copts;
  copts.defines = opts.defines;
  copts.optimize = opts.optimize;
  copts.require_loop_bounds = opts.require_loop_bounds;
  copts.limits = effective_limits(opts);
  auto module = compile_program(program, impl.sm, copts, diags);
  if (!module) throw_source_error(ErrorCode::Type, impl.sm, diags);
  impl.module = std::move(*module);
  return m;
}

const ir::Module& Model::module() const { return impl_->module; }

std::vector<std::string> Model::entry_names() const {
  std::vector<std::string> out;
  for (const auto& f : impl_->module.functions) out.push_back(f.name);
  return out;
}

std::vector<TensorSignature> Model::weight_signatures() const {
  std::vector<TensorSignature> out;
  for (const auto& w : impl_->module.weights) {
    TensorSignature s;
    s.name = w.name;
    s.dtype = w.dtype;
    for (int64_t d : w.shape) {
      s.dims.push_back(std::to_string(d));
      s.fixed.push_back(d);  // a weight's dims are all constants
    }
    out.push_back(s);
  }
  return out;
}

bool Model::has_weights() const { return weights() != nullptr || impl_->module.weights.empty(); }

std::shared_ptr<const std::map<std::string, Tensor>> Model::weights() const {
  std::lock_guard<std::mutex> lock(impl_->weights_mu);
  return impl_->weights;
}

void Model::set_weights(const std::map<std::string, Tensor>& given) {
  auto chosen = std::make_shared<std::map<std::string, Tensor>>();
  std::vector<std::string> problems, available;
  for (const auto& [n, t] : given) available.push_back(n);
  for (const auto& w : impl_->module.weights) {
    auto it = given.find(w.name);
    std::string decl = "(declared at " + impl_->locate(w.loc) + ")";
    if (it == given.end()) {
      std::string best = closest_name(w.name, available);
      problems.push_back("missing tensor '" + w.name + "' " + decl +
                         (best.empty() ? "" : "; the file has '" + best + "'"));
      continue;
    }
    const Tensor& t = it->second;
    if (t.dtype() != w.dtype) {
      problems.push_back("tensor '" + w.name + "' is " + dtype_name(t.dtype()) + " but the model declares " +
                         dtype_name(w.dtype) + " " + decl);
      continue;
    }
    if (t.shape() != w.shape) {
      problems.push_back("tensor '" + w.name + "' has shape " + shape_to_string(t.shape()) +
                         " but the model declares " + shape_to_string(w.shape) + " " + decl);
      continue;
    }
    (*chosen)[w.name] = t;
  }
  if (!problems.empty()) {
    std::string msg =
        std::to_string(problems.size()) + " weight problem" + (problems.size() > 1 ? "s" : "") + ":";
    for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  " + problems[i];
    if (problems.size() > 20) msg += "\n  ... and " + std::to_string(problems.size() - 20) + " more";
    throw Error(ErrorCode::Format, msg);
  }
  std::lock_guard<std::mutex> lock(impl_->weights_mu);
  impl_->weights = chosen;
}

void Model::set_weights_file(const std::string& path) {
  std::map<std::string, Tensor> tensors = read_safetensors(path);
  try {
    set_weights(tensors);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

void Model::set_weights_bytes(const uint8_t* data, size_t size, const std::string& name) {
  std::map<std::string, Tensor> tensors = read_safetensors_bytes(data, size, name);
  try {
    set_weights(tensors);
  } catch (const Error& e) {
    throw Error(e.code(), name + ": " + e.what());
  }
}

void Model::set_random_weights(uint64_t seed) {
  std::map<std::string, Tensor> tensors;
  for (const auto& w : impl_->module.weights) {
    try {
      tensors[w.name] = random_tensor(w.dtype, w.shape, seed, w.name);
    } catch (const std::bad_alloc&) {
      int64_t n = 1;
      for (int64_t d : w.shape) n *= d;  // within the compiler's element limit: no overflow
      throw Error(ErrorCode::OutOfMemory, "out of memory for the random weight '" + w.name + "' (" +
                                              dtype_name(w.dtype) + shape_to_string(w.shape) + ", " +
                                              std::to_string(n * static_cast<int64_t>(dtype_size(w.dtype))) +
                                              " bytes; declared at " + impl_->locate(w.loc) + ")");
    }
  }
  set_weights(tensors);
}

// ---------------------------------------------------------------------------------------------

struct Session::Impl {
  std::shared_ptr<const Model> model;
  const ir::Function* fn = nullptr;
  std::shared_ptr<const std::map<std::string, Tensor>> weights;
  std::map<std::string, Tensor> state;
  std::map<std::string, int64_t> state_dims;  // the symbol values the state was created with
  std::vector<TensorSignature> inputs, outputs, states;
  std::set<std::string> used_states;  // states the entry reads or writes (loop bodies included)
  std::string backend = "cpu";
  std::string fallback_reason;
  std::string executor = "cpu";
  // The CUDA backend: state lives on the device, in the executor (the host map above then only
  // holds values set with set_state that are not uploaded yet... they are uploaded at once).
  std::unique_ptr<RunControl> control;  // declared before `gpu`, which keeps a pointer to it
  std::unique_ptr<cuda::Executor> gpu;
  int device = -1;  // the CUDA backend's GPU
  RunStats stats;   // of the last run: kept here so that its strings stay put until the next run

  void refresh_stats();
};

void Session::Impl::refresh_stats() {
  RunStats& r = stats;
  r = RunStats{};
  r.backend = backend;
  r.executor = executor;
  if (!gpu) return;
  const cuda::RunStats& g = gpu->stats();
  r.backend = "cuda (" + gpu->device_name() + ")";
  r.kernels = g.kernels;
  r.host_syncs = g.host_syncs;
  r.device_ms = g.device_ms;
  r.device_bytes = g.device_bytes;
  r.compile_ms = g.compile_ms;
  r.kernels_compiled = g.kernels_compiled;
  r.kernels_from_cache = g.kernels_from_cache;
  r.kernels_tuned = g.kernels_tuned;
  r.kernels_retuned = g.kernels_retuned;
  r.row_variants = g.row_variants;
  r.tuning_ms = g.tuning_ms;
  r.plan = g.plan;
  r.graph_launches = g.graph_launches;
  r.graphs = g.graphs;
  r.graph_bytes = g.graph_bytes;
  r.graph_updates = g.graph_updates;
  r.param_uploads = g.param_uploads;
  r.executor = gpu->last_executor();
  r.auto_state = gpu->auto_state();
}

static void collect_states(const ir::Block& b, std::set<std::string>& out) {
  for (const auto& op : b.ops) {
    if (op.op == ir::Op::StateRead || op.op == ir::Op::StateWrite) out.insert(op.attrs.name);
    if (op.body) collect_states(*op.body, out);
  }
}

Session::Session(std::shared_ptr<const Model> model, const std::string& entry)
    : Session(std::move(model), SessionOptions{entry, "cpu", "auto", 0}) {}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::InvalidArgument, "session: model is null");
  const std::string& entry = options.entry;
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "cuda")
    throw Error(ErrorCode::InvalidArgument,
                "backend \"" + options.backend + "\" is not one of \"auto\", \"cpu\", \"cuda\"");
  if (options.executor != "auto" && options.executor != "eager" && options.executor != "graph" &&
      options.executor != "mono") {
    if (options.executor == "dataflow")
      throw Error(ErrorCode::Unsupported,
                  "executor \"" + options.executor +
                      "\" is not implemented yet; use \"eager\", \"graph\", \"mono\" or \"auto\"");
    throw Error(ErrorCode::InvalidArgument,
                "executor \"" + options.executor +
                    "\" is not one of \"auto\", \"eager\", \"graph\", \"mono\", \"dataflow\"");
  }
  if (options.device < 0)
    throw Error(ErrorCode::InvalidArgument, "device " + std::to_string(options.device) + " is negative");
  std::string name = entry.empty() ? "main" : entry;
  const ir::Function* fn = model->module().find(name);
  if (!fn) {
    std::string list;
    for (const auto& n : model->entry_names()) list += (list.empty() ? "" : ", ") + n;
    auto names = model->entry_names();
    std::string best = closest_name(name, names);
    throw Error(ErrorCode::InvalidArgument, "no entry point '" + name + "'" +
                                                (best.empty() ? "" : " (did you mean '" + best + "'?)") +
                                                "; entries: " + (list.empty() ? "(none)" : list));
  }
  if (!model->has_weights())
    throw Error(ErrorCode::InvalidArgument,
                "the model declares " + std::to_string(model->module().weights.size()) +
                    " weights but none are loaded; load a safetensors file or use random weights");
  impl_->control =
      std::make_unique<RunControl>(resolve_max_loop_trips(options.max_loop_trips), options.timeout_seconds);
  // Checked on every backend, so that a bad spec fails where it is written, not on a GPU machine.
  cuda::GraphOptions graph_options;
  graph_options.buckets = ShapeBuckets::parse(options.buckets);
  if (options.graph_memory_bytes < 0)
    throw Error(ErrorCode::InvalidArgument,
                "graph memory budget " + std::to_string(options.graph_memory_bytes) + " is negative");
  graph_options.memory_budget = static_cast<size_t>(options.graph_memory_bytes);
  impl_->model = model;
  impl_->fn = fn;
  impl_->weights = model->weights();
  for (const auto& st : model->module().states) impl_->states.push_back(signature_of(st.name, st.type));
  collect_states(fn->body, impl_->used_states);
  bool want_cuda = options.backend == "cuda";
  if (options.backend == "auto") {
    std::string why;
    if (jit::driver_available(&why) && jit::Device::count() > options.device)
      want_cuda = true;
    else
      impl_->fallback_reason = why.empty() ? "no CUDA device " + std::to_string(options.device) : why;
  }
  if (!want_cuda && options.executor != "auto")
    throw Error(ErrorCode::Unsupported, "executor \"" + options.executor +
                                            "\" runs on the CUDA backend; the CPU backend has only its "
                                            "reference executor (use \"auto\")");
  if (!want_cuda && options.device != 0)
    throw Error(ErrorCode::NoDevice,
                "device " + std::to_string(options.device) + ": the CPU backend has one device (0)");
  if (want_cuda) {
    jit::driver();  // throws NoDevice: "no CUDA driver found (...)"
    if (options.device >= jit::Device::count())
      throw Error(ErrorCode::NoDevice, "CUDA device " + std::to_string(options.device) + " does not exist (" +
                                           std::to_string(jit::Device::count()) + " found)");
    std::shared_ptr<const Model> model = impl_->model;
    impl_->gpu = cuda::make_executor(
        options.executor, *fn, *impl_->weights, options.device, *impl_->control,
        [model](const Span& s) { return model->position(s); }, graph_options);
    impl_->backend = "cuda";
    impl_->executor = impl_->gpu->name();
    impl_->device = options.device;
  }
  for (const auto& p : fn->params) impl_->inputs.push_back(signature_of(p.name, p.type));
  for (size_t i = 0; i < fn->result_types.size(); ++i)
    impl_->outputs.push_back(signature_of("out" + std::to_string(i), fn->result_types[i]));
  impl_->refresh_stats();
}

Session::~Session() = default;

void Session::interrupt() noexcept { impl_->control->interrupt(); }

const std::vector<TensorSignature>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorSignature>& Session::outputs() const { return impl_->outputs; }
const std::vector<TensorSignature>& Session::states() const { return impl_->states; }

void Session::reset_state() {
  impl_->state.clear();
  impl_->state_dims.clear();
  if (impl_->gpu) impl_->gpu->reset_state();
}

Tensor Session::state(const std::string& name) const {
  if (impl_->gpu && impl_->gpu->state_shape(name)) return impl_->gpu->state(name);
  auto it = impl_->state.find(name);
  return it == impl_->state.end() ? Tensor() : it->second;
}

const std::string& Session::backend() const { return impl_->backend; }
const std::string& Session::fallback_reason() const { return impl_->fallback_reason; }
const std::string& Session::executor() const { return impl_->executor; }

const RunStats& Session::last_run_stats() const { return impl_->stats; }

std::vector<AutoDecision> Session::auto_decisions() const {
  return impl_->gpu ? impl_->gpu->auto_decisions() : std::vector<AutoDecision>{};
}

void Session::set_profiling(bool on) {
  if (!impl_->gpu)
    throw Error(
        ErrorCode::Unsupported,
        "kernel profiles are measured on the CUDA backend (its eager executor); this session runs on the "
        "CPU backend");
  impl_->gpu->set_profiling(on);
}

int Session::device() const { return impl_->device; }

void Session::set_stream(void* stream) {
  if (!impl_->gpu) {
    if (stream != nullptr)
      throw Error(ErrorCode::Unsupported,
                  "set_stream: the CPU backend has no streams; only NULL is accepted");
    return;
  }
  impl_->gpu->set_stream(static_cast<CUstream>(stream));
}

Tensor Session::host_tensor(DType dtype, const Shape& shape) {
  return impl_->gpu ? impl_->gpu->host_tensor(dtype, shape) : Tensor(dtype, shape);
}

Tensor Session::device_tensor(DType dtype, const Shape& shape) {
  if (!impl_->gpu)
    throw Error(
        ErrorCode::Unsupported,
        "device memory is for sessions on the CUDA backend; this one runs on the CPU (use host memory)");
  return impl_->gpu->device_tensor(dtype, shape);
}

ProfileReport Session::kernel_profile() const { return impl_->gpu ? impl_->gpu->profile() : ProfileReport{}; }

void Session::set_state(const std::string& name, const Tensor& value) {
  const auto& states = impl_->model->module().states;
  auto it =
      std::find_if(states.begin(), states.end(), [&](const ir::StateInfo& s) { return s.name == name; });
  if (it == states.end()) {
    std::vector<std::string> names;
    for (const auto& s : states) names.push_back(s.name);
    std::string best = closest_name(name, names);
    throw Error(ErrorCode::InvalidArgument,
                "no state '" + name + "'" + (best.empty() ? "" : "; did you mean '" + best + "'?"));
  }
  if (!value.defined()) throw Error(ErrorCode::InvalidArgument, "state '" + name + "' has no data");
  const ir::Type& t = it->type;
  std::string where = impl_->model->locate(it->loc);
  std::string declared = "declared " + t.str() + (where.empty() ? "" : " at " + where);
  std::string got = std::string(dtype_name(value.dtype())) + shape_to_string(value.shape());
  if (value.dtype() != t.dtype || value.rank() != t.rank())
    throw Error(ErrorCode::Type,
                "state '" + name + "': expected " + t.str() + ", got " + got + " (" + declared + ")");
  for (size_t k = 0; k < t.rank(); ++k)
    if (t.shape[k].is_const() && t.shape[k].const_value() != value.dim(k))
      throw Error(ErrorCode::Type, "state '" + name + "': dim " + std::to_string(k) + " is " +
                                       std::to_string(value.dim(k)) + ", expected " + t.shape[k].str() +
                                       " (" + declared + ")");
  impl_->state[name] = value;
  if (impl_->gpu) impl_->gpu->set_state(name, value);
}

// `d` under the dims a run binds; an unbound symbol, an inexact division or an int64 overflow is
// the user's shape error, named after `what` (the input, state or result it is a dim of).
static int64_t eval_dim(const ir::Dim& d, const std::map<std::string, int64_t>& dims,
                        const std::string& what) {
  try {
    return d.eval(dims);
  } catch (const std::runtime_error& e) {
    throw Error(ErrorCode::Type, what + ": " + e.what());
  }
}

// Checks the given inputs against the entry's parameters; returns them in parameter order and the
// values of the symbolic dims they bind.
static std::pair<std::vector<Tensor>, std::map<std::string, int64_t>> bind_inputs(
    const ir::Function& f, const std::vector<std::pair<std::string, Tensor>>& given) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& input : given) {
    const std::string& n = input.first;
    const Tensor& t = input.second;
    bool known =
        std::any_of(f.params.begin(), f.params.end(), [&](const ir::Param& p) { return p.name == n; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& p : f.params) names.push_back(p.name);
      std::string best = closest_name(n, names);
      throw Error(ErrorCode::InvalidArgument, "unknown input '" + n + "' for entry '" + f.name + "'" +
                                                  (best.empty() ? "" : "; did you mean '" + best + "'?"));
    }
    if (!by_name.emplace(n, &t).second)
      throw Error(ErrorCode::InvalidArgument, "input '" + n + "' given twice");
    if (!t.defined()) throw Error(ErrorCode::InvalidArgument, "input '" + n + "' has no data");
  }
  std::vector<Tensor> inputs;
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::string> bound_by;
  for (const auto& p : f.params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw Error(ErrorCode::InvalidArgument,
                  "missing input '" + p.name + "' (" + p.type.str() + ") for entry '" + f.name + "'");
    const Tensor& t = *it->second;
    std::string got = std::string(dtype_name(t.dtype())) + shape_to_string(t.shape());
    if (t.dtype() != p.type.dtype || t.rank() != p.type.rank())
      throw Error(ErrorCode::Type, "input '" + p.name + "': expected " + p.type.str() + ", got " + got);
    for (size_t k = 0; k < t.rank(); ++k)
      for (const auto& s : f.symbols)
        if (p.type.shape[k] == ir::Dim::sym(s)) {
          auto [b, fresh] = dims.emplace(s, t.dim(k));
          if (!fresh && b->second != t.dim(k))
            throw Error(ErrorCode::Type, "input '" + p.name + "': dim " + std::to_string(k) + " is " +
                                             std::to_string(t.dim(k)) + ", but " + s + " = " +
                                             std::to_string(b->second) + " from input '" + bound_by[s] + "'");
          if (fresh) bound_by[s] = p.name;
        }
    inputs.push_back(t);
  }
  for (size_t i = 0; i < f.params.size(); ++i) {
    const auto& p = f.params[i];
    for (size_t k = 0; k < p.type.rank(); ++k) {
      int64_t want = eval_dim(p.type.shape[k], dims, "input '" + p.name + "'");
      if (want != inputs[i].dim(k))
        throw Error(ErrorCode::Type, "input '" + p.name + "': dim " + std::to_string(k) + " is " +
                                         std::to_string(inputs[i].dim(k)) + ", expected " +
                                         p.type.shape[k].str() + " = " + std::to_string(want) +
                                         " (declared " + p.type.str() + ")");
    }
  }
  return {std::move(inputs), std::move(dims)};
}

std::vector<Shape> Session::output_shapes(const std::vector<std::pair<std::string, Tensor>>& given) const {
  auto [inputs, dims] = bind_inputs(*impl_->fn, given);
  std::vector<Shape> out;
  for (const auto& t : impl_->fn->result_types) {
    Shape s;
    for (const auto& d : t.shape) s.push_back(eval_dim(d, dims, "result " + std::to_string(out.size())));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Tensor> Session::run(const std::vector<std::pair<std::string, Tensor>>& given) {
  const ir::Function& f = *impl_->fn;
  // Plain variables, not structured bindings: lambdas below capture them (clang 14 refuses that).
  auto bound = bind_inputs(f, given);
  std::vector<Tensor>& inputs = bound.first;
  std::map<std::string, int64_t>& dims = bound.second;
  // States this entry uses are created on first use with the shapes this call binds.
  std::map<std::string, Tensor> state = impl_->state;
  for (const auto& s : impl_->model->module().states) {
    // A state is bound (created, or checked against the shape it was created with) only by the
    // entries that use it: another entry's dims of the same name say nothing about it.
    if (!impl_->used_states.count(s.name)) continue;
    std::set<std::string> syms;
    for (const auto& d : s.type.shape) d.collect_symbols(syms);
    bool bound =
        std::all_of(syms.begin(), syms.end(), [&](const std::string& x) { return dims.count(x) > 0; });
    if (!bound) continue;
    // Errors here are the declaration's: they name the state and point at it.
    SourcePosition at = impl_->model->position(s.loc);
    std::string what = "state " + quote_name(s.name);
    Shape shape;
    for (const auto& d : s.type.shape) {
      try {
        shape.push_back(eval_dim(d, dims, what));
      } catch (const Error& e) {
        throw_at(e.code(), at, e.what());
      }
      if (shape.back() < 0)
        throw_at(ErrorCode::Type, at,
                 what + ": dim " + std::to_string(shape.size() - 1) + " is " + d.str() + " = " +
                     std::to_string(shape.back()) + ", negative (declared " + s.type.str() + ")");
    }
    auto it = state.find(s.name);
    std::optional<Shape> on_device = impl_->gpu ? impl_->gpu->state_shape(s.name) : std::nullopt;
    if (on_device || it != state.end()) {
      if ((on_device ? *on_device : it->second.shape()) != shape)
        throw_at(ErrorCode::Type, at,
                 what + " was created as " + s.type.str() + " = " +
                     shape_to_string(on_device ? *on_device : it->second.shape()) +
                     " by an earlier call; this call needs " + shape_to_string(shape) +
                     " (reset the session's state to change it)");
      continue;
    }
    Tensor t;
    try {
      t = Tensor(s.type.dtype, shape);
    } catch (const Error& e) {
      throw_at(e.code(), at, what + " (declared " + s.type.str() + "): " + e.what());
    }
    double fill = s.init == ir::StateInfo::Init::Zeros ? 0 : s.init == ir::StateInfo::Init::Ones ? 1 : s.fill;
    if (fill != 0)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, fill);
    state[s.name] = t;
    if (impl_->gpu) impl_->gpu->set_state(s.name, t);
  }
  impl_->control->begin_run();
  if (impl_->gpu) {
    // The device holds the state from here on; the host map keeps only what was created here.
    std::vector<Tensor> out;
    try {
      out = impl_->gpu->run(inputs, dims);
      impl_->gpu->write_timeline();
    } catch (...) {
      impl_->refresh_stats();
      throw;
    }
    impl_->refresh_stats();
    impl_->state = std::move(state);
    return out;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].on_device())
      throw Error(ErrorCode::InvalidArgument,
                  "input '" + f.params[i].name + "' is in GPU memory; the CPU backend reads host memory");
  cpu::ExecEnv env;
  env.weights = impl_->weights.get();
  env.state = &state;
  env.dims = dims;
  env.control = impl_->control.get();
  const Model::Impl& mi = impl_->model->impl();
  env.locate = [&mi](Span s) { return mi.position(s); };
  std::vector<Tensor> out = cpu::execute(f, inputs, env);
  // Inputs belong to the caller, who may change their memory after the call (zero-copy and bound
  // inputs of the C API): no state or result may keep aliasing one.
  auto aliases_input = [&inputs](const Tensor& t) {
    return t.defined() && std::any_of(inputs.begin(), inputs.end(),
                                      [&t](const Tensor& in) { return in.shares_storage_with(t); });
  };
  for (auto& entry : state)
    if (aliases_input(entry.second)) entry.second = entry.second.clone();
  for (auto& t : out)
    if (aliases_input(t)) t = t.clone();
  impl_->state = std::move(state);
  return out;
}

}  // namespace grape
