#include "runtime/run_control.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace grape {

int64_t resolve_max_loop_trips(int64_t option) {
  if (option < 0)
    throw Error(ErrorCode::InvalidArgument,
                "the loop trip cap must be positive (0: the default), got " + std::to_string(option));
  if (option > 0) return option;
  const char* env = std::getenv("GRAPE_MAX_LOOP_TRIPS");
  if (!env || !*env) return kDefaultMaxLoopTrips;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(env, &end, 10);
  if (*end != '\0' || errno != 0 || v <= 0)
    throw Error(ErrorCode::InvalidArgument,
                std::string("GRAPE_MAX_LOOP_TRIPS must be a positive integer, got '") + env + "'");
  return v;
}

RunControl::RunControl(int64_t max_loop_trips, double timeout_seconds)
    : max_loop_trips_(max_loop_trips), timeout_seconds_(timeout_seconds) {
  if (max_loop_trips <= 0)
    throw Error(ErrorCode::InvalidArgument,
                "the loop trip cap must be positive, got " + std::to_string(max_loop_trips));
  if (!(timeout_seconds >= 0) || std::isinf(timeout_seconds))
    throw Error(ErrorCode::InvalidArgument,
                "the run timeout must be a finite number of seconds >= 0 (0: none), got " +
                    std::to_string(timeout_seconds));
}

void RunControl::begin_run() {
  interrupted_.store(false, std::memory_order_relaxed);
  has_deadline_ = timeout_seconds_ > 0;
  if (has_deadline_)
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(std::min(timeout_seconds_, 1e9)));
}

void RunControl::stop() const {
  if (interrupted_.load(std::memory_order_relaxed))
    throw Error(ErrorCode::Interrupted, "the run was interrupted; the session's state is as before it");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", timeout_seconds_);
  throw Error(ErrorCode::Interrupted, std::string("the run took longer than its timeout of ") + buf +
                                          " s and was stopped; the session's state is as before it");
}

std::string RunControl::loop_cap_message(const std::string& where) const {
  return where + " has no `max` bound and ran " + std::to_string(max_loop_trips_) +
         " trips without stopping; give it a bound (`while ... max N`) or raise the session's loop trip "
         "cap (--max-loop-trips, max_loop_trips)";
}

}  // namespace grape
