#include "cli/api.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

namespace grape::cli {

void check(grp_error* e, const std::string& prefix) {
  if (!e) return;
  ApiError err{grp_error_code(e), prefix + grp_error_message(e)};
  err.rendered = prefix.empty() && grp_error_location(e, nullptr, nullptr, nullptr) != 0;
  grp_error_free(e);
  throw err;
}

std::string json_string(const std::string& s) {
  // nlohmann-json's escaping (as for the request files); bytes that are not UTF-8 become U+FFFD so
  // the output stays valid JSON.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ModelPtr load(const std::string& file, const Options& o) {
  std::vector<std::string> defines;
  for (const auto& [k, v] : o.defines) defines.push_back(k + "=" + std::to_string(v));
  std::vector<const char*> ptrs;
  for (const auto& d : defines) ptrs.push_back(d.c_str());
  grp_model_options mo = grp_model_default_options();
  mo.defines = ptrs.data();
  mo.num_defines = ptrs.size();
  std::vector<const char*> limits;
  for (const auto& l : o.limits) limits.push_back(l.c_str());
  mo.limits = limits.data();
  mo.num_limits = limits.size();
  mo.no_optimize = o.no_optimize;
  mo.require_loop_bounds = o.require_loop_bounds;
  grp_model* m = nullptr;
  check(grp_model_load_file(file.c_str(), &mo, &m));
  return ModelPtr(m);
}

ModelPtr load_with_weights(const Options& o, const char* cmd) {
  if (o.files.size() != 1) throw UsageError(std::string(cmd) + " needs exactly one FILE");
  ModelPtr model = load(o.files[0], o);
  if (!o.weights.empty())
    check(grp_model_set_weights_file(model.get(), o.weights.c_str()));
  else if (o.random_weights)
    check(grp_model_set_random_weights(model.get(), o.seed));
  else if (grp_model_num_weights(model.get()) > 0)
    throw UsageError(o.files[0] + " declares " + std::to_string(grp_model_num_weights(model.get())) +
                     " weights: pass --weights F.safetensors or --random-weights SEED");
  return model;
}

SessionPtr open_session(grp_model* model, const Options& o, int device, bool announce) {
  // --bundle: kernels from the file before the cache or NVRTC (once per process; repeats are no-ops).
  if (!o.bundle.empty()) check(grp_kernel_bundle_use(o.bundle.c_str()));
  grp_session_options so = grp_session_default_options();
  so.entry = o.entry.empty() ? nullptr : o.entry.c_str();
  so.backend = o.backend.c_str();
  so.executor = o.executor.c_str();
  so.device = device;
  so.max_loop_trips = o.max_loop_trips;
  so.timeout_seconds = o.timeout;
  so.buckets = o.buckets.c_str();
  so.graph_memory_bytes = o.graph_memory_mb * (int64_t{1} << 20);
  grp_session* raw = nullptr;
  check(grp_session_create(model, &so, &raw));
  SessionPtr session(raw);
  if (announce && o.backend_given && *grp_session_fallback_reason(raw))
    std::cerr << "grape: --backend auto: " << grp_session_fallback_reason(raw) << "; running on the CPU\n";
  return session;
}

std::vector<std::pair<size_t, TensorPtr>> read_named_inputs(grp_session* s, const Options& o) {
  std::vector<std::pair<size_t, TensorPtr>> out;
  for (const auto& [name, path] : o.inputs) {
    grp_tensor* t = nullptr;
    check(grp_tensor_read_npy(path.c_str(), &t), "--input " + name + "=" + path + ": ");
    out.emplace_back(0, TensorPtr(t));
  }
  // Names are checked after every file was read, in the order given (as `run` always did).
  std::vector<bool> given(grp_session_num_inputs(s), false);
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const std::string& name = o.inputs[k].first;
    size_t index = 0;
    check(grp_session_input_index(s, name.c_str(), &index));
    if (given[index]) throw ApiError{GRP_ERR_INVALID_ARGUMENT, "input '" + name + "' given twice"};
    given[index] = true;
    out[k].first = index;
  }
  return out;
}

}  // namespace grape::cli
