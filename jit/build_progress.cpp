#include "jit/build_progress.h"

#include <mutex>

namespace grape::jit {
namespace {

struct Tracker {
  std::mutex mu;
  BuildObserver observer;
  size_t done = 0, total = 0, builds = 0;

  void report() {
    if (observer) observer(done, total);
  }
};

Tracker& tracker() {
  static Tracker t;
  return t;
}

}  // namespace

void set_build_observer(BuildObserver observer) {
  Tracker& t = tracker();
  std::lock_guard<std::mutex> lock(t.mu);
  t.observer = std::move(observer);
}

BuildTicket::BuildTicket(size_t kernels) : left_(kernels) {
  Tracker& t = tracker();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.builds;
  t.total += kernels;
  t.report();
}

void BuildTicket::finished_one() {
  Tracker& t = tracker();
  std::lock_guard<std::mutex> lock(t.mu);
  if (left_ == 0) return;
  --left_;
  ++t.done;
  t.report();
}

BuildTicket::~BuildTicket() {
  Tracker& t = tracker();
  std::lock_guard<std::mutex> lock(t.mu);
  t.done += left_;
  if (--t.builds == 0) {
    if (left_ > 0) t.report();  // the end, if the last finished_one did not already show it
    t.done = t.total = 0;
  }
}

}  // namespace grape::jit
