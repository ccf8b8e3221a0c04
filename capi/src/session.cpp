// grp_session_*: creation, introspection, inputs (copied, zero-copy, bound), runs, outputs, state.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "capi/src/internal.h"
#include "capi/src/options.h"
#include "jit/cuda_driver.h"
#include "lang/diagnostics.h"

using namespace grape;
using namespace grape::capi;

namespace {

// Per declared tensor: the arrays grp_session_*_info hands out.
struct Info {
  std::vector<int64_t> dims;
  std::vector<const char*> exprs;
};

Info info_of(const TensorSignature& s) {
  Info i;
  i.dims = s.fixed;
  for (const auto& d : s.dims) i.exprs.push_back(d.c_str());
  return i;
}

}  // namespace

struct grp_session {
  std::unique_ptr<Session> session;
  std::string entry;
  std::vector<Info> input_info, output_info;
  std::vector<Tensor> inputs;  // undefined: not set
  // Per input: its memory is the session's (set_input, input_buffer), so a later set_input of the
  // same type and shape may copy into it instead of allocating (pinned memory on CUDA is costly to
  // allocate); not a caller's bound memory, which the session never writes.
  std::vector<bool> input_owned;
  std::vector<Tensor> outputs;  // of the last successful run
  bool has_outputs = false;
  std::vector<void*> out_bound;  // caller memory per output (NULL: none)
  std::vector<size_t> out_capacity;
  std::vector<const void*> out_delivered;     // where the last run put each output
  std::map<std::string, Tensor> state_views;  // keeps what grp_session_get_state handed out alive
  ProfileReport profile;                      // the last grp_session_kernel_profile snapshot
  std::vector<AutoDecision> decisions;        // the last grp_session_auto_decisions snapshot
};

namespace {

size_t input_index(const grp_session* s, const char* name) {
  require(name, "name");
  const auto& ins = s->session->inputs();
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].name == name) return i;
  std::vector<std::string> names;
  for (const auto& p : ins) names.push_back(p.name);
  std::string best = closest_name(name, names);
  invalid(std::string("unknown input '") + name + "' for entry '" + s->entry + "'" +
          (best.empty() ? "" : "; did you mean '" + best + "'?"));
}

// Validates (name, dtype, shape, nbytes) against the declaration of an input or a state; returns
// the shape. Messages match the ones grape::Session reports at run time.
Shape check_tensor(const char* kind, const TensorSignature& sig, const grp_dtype* dtype, const int64_t* shape,
                   size_t rank) {
  std::string what = std::string(kind) + " '" + sig.name + "'";
  DType dt = to_dtype(dtype, what + ": dtype");
  Shape sh = to_shape(shape, rank, dt, what);
  std::string declared = sig.to_string();
  if (dt != sig.dtype || rank != sig.dims.size())
    throw Error(ErrorCode::Type,
                what + ": expected " + declared + ", got " + dtype_name(dt) + shape_to_string(sh));
  for (size_t k = 0; k < rank; ++k)
    if (sig.fixed[k] >= 0 && sig.fixed[k] != sh[k])
      throw Error(ErrorCode::Type, what + ": dim " + std::to_string(k) + " is " + std::to_string(sh[k]) +
                                       ", expected " + sig.dims[k] + " = " + std::to_string(sig.fixed[k]) +
                                       " (declared " + declared + ")");
  return sh;
}

grp_session_options library_defaults() {
  grp_session_options o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.entry = nullptr;
  o.backend = "auto";
  o.executor = "auto";
  o.device = 0;
  return o;
}

grp_session_options session_options(const grp_session_options* given) {
  return read_options(given, library_defaults(), offsetof(grp_session_options, device) + sizeof(int),
                      "grp_session_options");
}

void check_output_index(const grp_session* s, size_t i) {
  if (i >= s->session->outputs().size())
    invalid("output index " + std::to_string(i) + " is out of range (entry '" + s->entry + "' has " +
            std::to_string(s->session->outputs().size()) + " outputs)");
}

void check_input_index(const grp_session* s, size_t i) {
  if (i >= s->session->inputs().size())
    invalid("input index " + std::to_string(i) + " is out of range (entry '" + s->entry + "' has " +
            std::to_string(s->session->inputs().size()) + " inputs)");
}

const TensorSignature& state_signature(const grp_session* s, const char* name) {
  require(name, "name");
  const auto& states = s->session->states();
  for (const auto& st : states)
    if (st.name == name) return st;
  std::vector<std::string> names;
  for (const auto& st : states) names.push_back(st.name);
  std::string best = closest_name(name, names);
  invalid(std::string("no state '") + name + "'" + (best.empty() ? "" : "; did you mean '" + best + "'?"));
}

void fill_info(const TensorSignature& sig, const Info& info, grp_dtype* dtype, size_t* rank,
               const int64_t** dims, const char* const** exprs) {
  if (dtype) *dtype = from_dtype(sig.dtype);
  if (rank) *rank = sig.dims.size();
  if (dims) *dims = info.dims.data();
  if (exprs) *exprs = info.exprs.data();
}

void fill_tensor(const Tensor& t, const void* data, grp_dtype* dtype, const int64_t** shape, size_t* rank,
                 const void** out_data, size_t* nbytes) {
  if (dtype) *dtype = from_dtype(t.dtype());
  if (shape) *shape = t.shape().data();
  if (rank) *rank = t.rank();
  if (out_data) *out_data = data;
  if (nbytes) *nbytes = t.nbytes();
}

}  // namespace

extern "C" {

grp_session_options grp_session_default_options(void) { return library_defaults(); }

void grp_session_options_init(grp_session_options* opts, size_t struct_size) {
  init_options(opts, struct_size, library_defaults());
}

grp_error* grp_session_create(grp_model* m, const grp_session_options* opts, grp_session** out) {
  return guard([&] {
    require(m, "model");
    require(out, "out");
    grp_session_options o = session_options(opts);
    SessionOptions so;
    so.entry = o.entry ? o.entry : "";
    so.backend = o.backend ? o.backend : "auto";
    so.executor = o.executor ? o.executor : "auto";
    so.device = o.device;
    so.max_loop_trips = o.max_loop_trips;
    so.timeout_seconds = o.timeout_seconds;
    so.buckets = o.buckets ? o.buckets : "";
    so.graph_memory_bytes = o.graph_memory_bytes;
    auto s = std::make_unique<grp_session>();
    s->session = std::make_unique<Session>(m->model, so);
    s->entry = o.entry && *o.entry ? o.entry : "main";
    for (const auto& sig : s->session->inputs()) s->input_info.push_back(info_of(sig));
    for (const auto& sig : s->session->outputs()) s->output_info.push_back(info_of(sig));
    s->inputs.resize(s->session->inputs().size());
    s->input_owned.assign(s->inputs.size(), false);
    size_t n = s->session->outputs().size();
    s->out_bound.assign(n, nullptr);
    s->out_capacity.assign(n, 0);
    s->out_delivered.assign(n, nullptr);
    *out = s.release();
  });
}

void grp_session_destroy(grp_session* s) { delete s; }

size_t grp_session_num_inputs(const grp_session* s) { return s ? s->session->inputs().size() : 0; }

const char* grp_session_input_name(const grp_session* s, size_t i) {
  return s && i < s->session->inputs().size() ? s->session->inputs()[i].name.c_str() : nullptr;
}

size_t grp_session_num_outputs(const grp_session* s) { return s ? s->session->outputs().size() : 0; }

const char* grp_session_output_name(const grp_session* s, size_t i) {
  return s && i < s->session->outputs().size() ? s->session->outputs()[i].name.c_str() : nullptr;
}

grp_error* grp_session_input_index(const grp_session* s, const char* name, size_t* out) {
  return guard([&] {
    require(s, "session");
    require(out, "out");
    *out = input_index(s, name);
  });
}

grp_error* grp_session_input_info(const grp_session* s, size_t i, grp_dtype* dtype, size_t* rank,
                                  const int64_t** dims, const char* const** dim_exprs) {
  return guard([&] {
    require(s, "session");
    check_input_index(s, i);
    fill_info(s->session->inputs()[i], s->input_info[i], dtype, rank, dims, dim_exprs);
  });
}

grp_error* grp_session_output_info(const grp_session* s, size_t i, grp_dtype* dtype, size_t* rank,
                                   const int64_t** dims, const char* const** dim_exprs) {
  return guard([&] {
    require(s, "session");
    check_output_index(s, i);
    fill_info(s->session->outputs()[i], s->output_info[i], dtype, rank, dims, dim_exprs);
  });
}

grp_error* grp_session_set_input(grp_session* s, const char* name, grp_dtype dtype, const int64_t* shape,
                                 size_t rank, const void* data, size_t nbytes) {
  return guard([&] {
    require(s, "session");
    size_t i = input_index(s, name);
    const TensorSignature& sig = s->session->inputs()[i];
    Shape sh = check_tensor("input", sig, &dtype, shape, rank);
    check_bytes(sig.dtype, sh, data, nbytes, "input '" + sig.name + "'");
    if (nbytes && jit::device_of_pointer(data) >= 0)
      invalid("input '" + sig.name +
              "': data is GPU memory, which grp_session_set_input would read on the host; bind it with "
              "grp_session_bind_input");
    Tensor& cur = s->inputs[i];
    const bool reuse = s->input_owned[i] && cur.defined() && !cur.on_device() && cur.dtype() == sig.dtype &&
                       cur.shape() == sh && cur.use_count() == 1;
    Tensor t = reuse ? cur : s->session->host_tensor(sig.dtype, sh);
    if (nbytes) std::memcpy(t.raw(), data, nbytes);
    s->inputs[i] = std::move(t);
    s->input_owned[i] = true;
  });
}

// The session allocates input `name` (host memory, pinned on CUDA; or device memory) and hands it out.
static grp_error* allocate_input(grp_session* s, const char* name, grp_dtype dtype, const int64_t* shape,
                                 size_t rank, void** data, size_t* nbytes, bool device) {
  return guard([&] {
    require(s, "session");
    require(data, "data");
    size_t i = input_index(s, name);
    const TensorSignature& sig = s->session->inputs()[i];
    Shape sh = check_tensor("input", sig, &dtype, shape, rank);
    Tensor t = device ? s->session->device_tensor(sig.dtype, sh) : s->session->host_tensor(sig.dtype, sh);
    *data = t.raw();
    if (nbytes) *nbytes = t.nbytes();
    s->inputs[i] = std::move(t);
    s->input_owned[i] = !device;  // set_input may copy into host memory the session owns
  });
}

grp_error* grp_session_input_buffer(grp_session* s, const char* name, grp_dtype dtype, const int64_t* shape,
                                    size_t rank, void** data, size_t* nbytes) {
  return allocate_input(s, name, dtype, shape, rank, data, nbytes, false);
}

grp_error* grp_session_bind_input(grp_session* s, const char* name, grp_dtype dtype, const int64_t* shape,
                                  size_t rank, const void* data, size_t nbytes) {
  return guard([&] {
    require(s, "session");
    size_t i = input_index(s, name);
    const TensorSignature& sig = s->session->inputs()[i];
    Shape sh = check_tensor("input", sig, &dtype, shape, rank);
    check_bytes(sig.dtype, sh, data, nbytes, "input '" + sig.name + "'");
    // The session never writes to its inputs (grape::Session detaches states and results that
    // would alias them; the CUDA executors copy a device input the plan would update in place), so
    // dropping const here is safe. The caller keeps the memory alive.
    const int gpu = nbytes ? jit::device_of_pointer(data) : -1;
    s->input_owned[i] = false;
    if (gpu < 0) {
      s->inputs[i] = Tensor::wrap(sig.dtype, sh, const_cast<void*>(data), nullptr);
      return;
    }
    if (s->session->backend() != "cuda")
      invalid("input '" + sig.name + "': data is memory of GPU " + std::to_string(gpu) +
              "; this session runs on the CPU backend, which reads host memory");
    if (gpu != s->session->device())
      invalid("input '" + sig.name + "': data is memory of GPU " + std::to_string(gpu) +
              "; this session runs on GPU " + std::to_string(s->session->device()));
    s->inputs[i] = Tensor::wrap_device(sig.dtype, sh, const_cast<void*>(data), nullptr);
  });
}

grp_error* grp_session_input_device_buffer(grp_session* s, const char* name, grp_dtype dtype,
                                           const int64_t* shape, size_t rank, void** data, size_t* nbytes) {
  return allocate_input(s, name, dtype, shape, rank, data, nbytes, true);
}

grp_error* grp_session_bind_output(grp_session* s, size_t i, void* data, size_t capacity) {
  return guard([&] {
    require(s, "session");
    check_output_index(s, i);
    if (data == nullptr && capacity > 0) invalid("data is NULL but capacity is " + std::to_string(capacity));
    s->out_bound[i] = data;
    s->out_capacity[i] = data ? capacity : 0;
  });
}

grp_error* grp_session_set_stream(grp_session* s, void* stream) {
  return guard([&] {
    require(s, "session");
    s->session->set_stream(stream);
  });
}

const char* grp_session_backend(const grp_session* s) { return s ? s->session->backend().c_str() : ""; }

const char* grp_session_fallback_reason(const grp_session* s) {
  return s ? s->session->fallback_reason().c_str() : "";
}

// grp_run_stats.executor stays valid while the session lives: a string literal, not the stats'.
static const char* executor_name(const std::string& e) {
  for (const char* known : {"eager", "graph", "mono", "auto", "cpu"})
    if (e == known) return known;
  return "";
}

grp_error* grp_session_last_run_stats(const grp_session* s, grp_run_stats* out) {
  return guard([&] {
    require(s, "session");
    require(out, "out");
    if (out->struct_size < offsetof(grp_run_stats, compile_ms) + sizeof(double))
      invalid("grp_run_stats.struct_size " + std::to_string(out->struct_size) +
              " is smaller than the v1 struct");
    const RunStats& r = s->session->last_run_stats();
    out->kernels = r.kernels;
    out->host_syncs = r.host_syncs;
    out->device_ms = r.device_ms;
    out->device_bytes = r.device_bytes;
    out->compile_ms = r.compile_ms;
    auto covers = [&](size_t offset, size_t size) { return out->struct_size >= offset + size; };
    if (covers(offsetof(grp_run_stats, executor), sizeof(const char*)))
      out->executor = executor_name(r.executor);
    if (covers(offsetof(grp_run_stats, graph_launches), sizeof(int64_t)))
      out->graph_launches = r.graph_launches;
    if (covers(offsetof(grp_run_stats, graphs), sizeof(size_t))) out->graphs = r.graphs;
    if (covers(offsetof(grp_run_stats, param_uploads), sizeof(int64_t))) out->param_uploads = r.param_uploads;
    // The session keeps the last run's statistics until its next run.
    if (covers(offsetof(grp_run_stats, auto_state), sizeof(const char*)))
      out->auto_state = r.auto_state.c_str();
    if (covers(offsetof(grp_run_stats, graph_bytes), sizeof(size_t))) out->graph_bytes = r.graph_bytes;
    if (covers(offsetof(grp_run_stats, graph_updates), sizeof(int64_t))) out->graph_updates = r.graph_updates;
    if (covers(offsetof(grp_run_stats, kernels_tuned), sizeof(size_t))) out->kernels_tuned = r.kernels_tuned;
    if (covers(offsetof(grp_run_stats, kernels_retuned), sizeof(size_t)))
      out->kernels_retuned = r.kernels_retuned;
    if (covers(offsetof(grp_run_stats, tuning_ms), sizeof(double))) out->tuning_ms = r.tuning_ms;
    if (covers(offsetof(grp_run_stats, plan), sizeof(const char*))) out->plan = r.plan.c_str();
  });
}

grp_error* grp_session_auto_decisions(grp_session* s, size_t* count) {
  return guard([&] {
    require(s, "session");
    s->decisions = s->session->auto_decisions();
    if (count) *count = s->decisions.size();
  });
}

grp_error* grp_session_auto_decision_at(const grp_session* s, size_t i, grp_auto_decision* out) {
  return guard([&] {
    require(s, "session");
    require(out, "out");
    if (out->struct_size < offsetof(grp_auto_decision, graph_median_ms) + sizeof(double))
      invalid("grp_auto_decision.struct_size " + std::to_string(out->struct_size) +
              " is smaller than the first version's struct");
    if (i >= s->decisions.size())
      invalid("auto decision index " + std::to_string(i) + " is out of range (the last snapshot has " +
              std::to_string(s->decisions.size()) + " buckets)");
    const AutoDecision& d = s->decisions[i];
    out->bucket = d.bucket.c_str();
    out->executor = d.executor.c_str();
    out->reason = d.reason.c_str();
    out->calls = d.calls;
    out->measured_calls = d.measured_calls;
    out->calls_to_decide = d.calls_to_decide;
    out->eager_ms = d.eager_ms.data();
    out->eager_count = d.eager_ms.size();
    out->graph_ms = d.graph_ms.data();
    out->graph_count = d.graph_ms.size();
    out->eager_median_ms = d.eager_median_ms;
    out->graph_median_ms = d.graph_median_ms;
  });
}

grp_error* grp_session_set_profiling(grp_session* s, int on) {
  return guard([&] {
    require(s, "session");
    s->session->set_profiling(on != 0);
  });
}

grp_error* grp_session_kernel_profile(grp_session* s, int64_t* runs, size_t* count) {
  return guard([&] {
    require(s, "session");
    s->profile = s->session->kernel_profile();
    if (runs) *runs = s->profile.runs;
    if (count) *count = s->profile.kernels.size();
  });
}

grp_error* grp_session_kernel_profile_at(const grp_session* s, size_t i, grp_kernel_profile* out) {
  return guard([&] {
    require(s, "session");
    require(out, "out");
    if (out->struct_size < offsetof(grp_kernel_profile, flops) + sizeof(double))
      invalid("grp_kernel_profile.struct_size " + std::to_string(out->struct_size) +
              " is smaller than the first version's struct");
    if (i >= s->profile.kernels.size())
      invalid("kernel profile index " + std::to_string(i) + " is out of range (the last snapshot has " +
              std::to_string(s->profile.kernels.size()) + " kernels)");
    const KernelProfile& k = s->profile.kernels[i];
    out->name = k.name.c_str();
    out->op = k.op.c_str();
    out->where = k.where.c_str();
    out->grid = k.grid;
    out->block = k.block;
    out->launches = k.launches;
    out->total_ms = k.total_ms;
    out->bytes = k.bytes;
    out->flops = k.flops;
  });
}

grp_error* grp_session_run(grp_session* s) {
  return guard([&] {
    require(s, "session");
    std::vector<std::pair<std::string, Tensor>> given;
    for (size_t i = 0; i < s->inputs.size(); ++i)
      if (s->inputs[i].defined()) given.emplace_back(s->session->inputs()[i].name, s->inputs[i]);
    bool any_bound =
        std::any_of(s->out_bound.begin(), s->out_bound.end(), [](void* p) { return p != nullptr; });
    if (any_bound) {
      std::vector<Shape> shapes = s->session->output_shapes(given);
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!s->out_bound[i]) continue;
        const TensorSignature& sig = s->session->outputs()[i];
        size_t need = static_cast<size_t>(num_elements(shapes[i])) * dtype_size(sig.dtype);
        if (need > s->out_capacity[i])
          invalid("output '" + sig.name + "' (" + dtype_name(sig.dtype) + shape_to_string(shapes[i]) +
                  ") needs " + std::to_string(need) + " bytes, but the memory bound to it holds " +
                  std::to_string(s->out_capacity[i]));
      }
    }
    std::vector<Tensor> outs = s->session->run(given);
    // Nothing below can fail: the run is committed.
    for (size_t i = 0; i < outs.size(); ++i) {
      if (s->out_bound[i] && outs[i].nbytes() <= s->out_capacity[i]) {
        std::memcpy(s->out_bound[i], outs[i].raw(), outs[i].nbytes());
        s->out_delivered[i] = s->out_bound[i];
      } else {
        s->out_delivered[i] = outs[i].raw();
      }
    }
    s->outputs = std::move(outs);
    s->has_outputs = true;
    s->state_views.clear();
  });
}

void grp_session_interrupt(grp_session* s) {
  if (s && s->session) s->session->interrupt();
}

grp_error* grp_session_get_output(grp_session* s, size_t i, grp_dtype* dtype, const int64_t** shape,
                                  size_t* rank, const void** data, size_t* nbytes) {
  return guard([&] {
    require(s, "session");
    check_output_index(s, i);
    if (!s->has_outputs)
      invalid("output " + std::to_string(i) + ": no outputs yet; call grp_session_run first");
    fill_tensor(s->outputs[i], s->out_delivered[i], dtype, shape, rank, data, nbytes);
  });
}

grp_error* grp_session_reset_state(grp_session* s) {
  return guard([&] {
    require(s, "session");
    s->session->reset_state();
    s->outputs.clear();
    s->has_outputs = false;
    s->state_views.clear();
  });
}

size_t grp_session_num_states(const grp_session* s) { return s ? s->session->states().size() : 0; }

const char* grp_session_state_name(const grp_session* s, size_t i) {
  return s && i < s->session->states().size() ? s->session->states()[i].name.c_str() : nullptr;
}

grp_error* grp_session_get_state(grp_session* s, const char* name, grp_dtype* dtype, const int64_t** shape,
                                 size_t* rank, const void** data, size_t* nbytes) {
  return guard([&] {
    require(s, "session");
    const TensorSignature& sig = state_signature(s, name);
    Tensor t = s->session->state(sig.name);
    if (!t.defined())
      invalid("state '" + sig.name + "' (" + sig.to_string() +
              ") does not exist yet: the first run that binds its dims creates it");
    Tensor& kept = s->state_views[sig.name];
    kept = t;
    fill_tensor(kept, kept.raw(), dtype, shape, rank, data, nbytes);
  });
}

grp_error* grp_session_set_state(grp_session* s, const char* name, grp_dtype dtype, const int64_t* shape,
                                 size_t rank, const void* data, size_t nbytes) {
  return guard([&] {
    require(s, "session");
    const TensorSignature& sig = state_signature(s, name);
    Shape sh = check_tensor("state", sig, &dtype, shape, rank);
    check_bytes(sig.dtype, sh, data, nbytes, "state '" + sig.name + "'");
    Tensor t(sig.dtype, sh);
    if (nbytes) std::memcpy(t.raw(), data, nbytes);
    s->session->set_state(sig.name, t);
    s->state_views.erase(sig.name);
  });
}

}  // extern "C"
