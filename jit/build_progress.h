// Progress of the kernel builds of this process, for a person waiting on them (the CLI's progress
// line, grp_set_build_progress). Every compile_parallel call takes a BuildTicket for its distinct
// kernels; builds that run at the same time (sessions created on several threads) add up into one
// count, and when the last of them ends the observer sees done == total and the count restarts
// from zero.
#pragma once
#include <cstddef>
#include <functional>

namespace grape::jit {

// Called with the kernels finished and the kernels of all running builds, serialised (under a
// lock: it must return quickly and must not call set_build_observer). Kernels found in the
// kernel cache or a bundle count too; they finish at once.
using BuildObserver = std::function<void(size_t done, size_t total)>;

// Replaces the process's observer; an empty function removes it.
void set_build_observer(BuildObserver observer);

// One build's share of the count: added when made, reported done one kernel at a time, and
// withdrawn (whatever was not reported counts as done) when destroyed.
class BuildTicket {
 public:
  explicit BuildTicket(size_t kernels);
  ~BuildTicket();
  BuildTicket(const BuildTicket&) = delete;
  BuildTicket& operator=(const BuildTicket&) = delete;
  void finished_one();

 private:
  size_t left_;
};

}  // namespace grape::jit
