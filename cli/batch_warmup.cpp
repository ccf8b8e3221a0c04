#include "cli/batch_warmup.h"

#include <atomic>
#include <thread>

namespace grape::cli {

namespace {

// Whether the call succeeded; a failure is dropped (the warm-up reports only how many failed).
bool ok_or_free(grp_error* e) {
  if (!e) return true;
  grp_error_free(e);
  return false;
}

}  // namespace

std::string warmup_blocker(const Signature& sig, const std::vector<const HostTensor*>& shared,
                           int64_t max_batch) {
  if (sig.batch_dim.empty()) return "the entry is not batched (" + sig.why_not + ")";
  double bytes = 0;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const ParamInfo& p = sig.inputs[i];
    if (!p.stacked && shared[i]) continue;
    double n = static_cast<double>(grp_dtype_size(p.dtype));
    for (size_t d = 0; d < p.dims.size(); ++d) {
      if (p.stacked && d == 0) {
        n *= static_cast<double>(max_batch);
        continue;
      }
      if (p.dims[d] < 0)
        return "input '" + p.name + "' has the dim " + p.exprs[d] + ", which only requests fix";
      n *= static_cast<double>(p.dims[d]);
    }
    bytes += n;
  }
  if (bytes > static_cast<double>(kMaxWarmupBytes))
    return "its inputs at --max-batch rows would take " +
           std::to_string(static_cast<int64_t>(bytes / 1048576)) + " MB of zeros";
  return "";
}

size_t warm_up(const std::vector<SessionPtr>& sessions, const Signature& sig,
               const std::vector<const HostTensor*>& shared, int64_t max_batch) {
  // The zeros of every input that is not shared, one buffer for all sessions (set_input copies).
  std::vector<std::vector<int64_t>> shapes(sig.inputs.size());
  std::vector<std::vector<uint8_t>> zeros(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const ParamInfo& p = sig.inputs[i];
    if (!p.stacked && shared[i]) {
      shapes[i] = shared[i]->shape;
      continue;
    }
    shapes[i] = p.dims;
    if (p.stacked) shapes[i][0] = max_batch;
    size_t n = grp_dtype_size(p.dtype);
    for (int64_t d : shapes[i]) n *= static_cast<size_t>(d);
    zeros[i].assign(n, 0);
  }
  std::atomic<size_t> failed{0};
  auto one = [&](grp_session* s) {
    bool ok = true;
    for (size_t i = 0; i < sig.inputs.size() && ok; ++i) {
      const ParamInfo& p = sig.inputs[i];
      const bool given = !p.stacked && shared[i];
      const void* data = given ? shared[i]->data() : zeros[i].data();
      const size_t bytes = given ? shared[i]->nbytes() : zeros[i].size();
      ok = ok_or_free(grp_session_set_input(s, p.name.c_str(), given ? shared[i]->dtype : p.dtype,
                                            shapes[i].data(), shapes[i].size(), data, bytes));
    }
    ok = ok && ok_or_free(grp_session_run(s));
    // Every call starts from a fresh state; the warm-up's must not leak into the first one.
    if (sig.stateful) ok_or_free(grp_session_reset_state(s));
    if (!ok) failed += 1;
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < sessions.size(); ++k) threads.emplace_back(one, sessions[k].get());
  if (!sessions.empty()) one(sessions[0].get());
  for (auto& t : threads) t.join();
  return failed.load();
}

}  // namespace grape::cli
