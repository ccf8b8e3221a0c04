// What bounds one run of a session: the trip cap of device loops without `max`, an optional
// wall-clock deadline, and an interrupt flag that another thread or a signal handler may set.
// A Session owns one; its executors call check() between ops, kernel launches and loop trips.
// docs/execution.md ("Bounded runs") documents the options.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace grape {

// The trip cap of a device loop without `max` when neither the session nor $GRAPE_MAX_LOOP_TRIPS
// sets one: a small loop body reaches it in well under a second in a Release build (~7 s under
// the sanitizers of the test build).
constexpr int64_t kDefaultMaxLoopTrips = 100'000;

// The cap a session uses: `option` when positive, else $GRAPE_MAX_LOOP_TRIPS when set (a positive
// integer, else InvalidArgument), else kDefaultMaxLoopTrips.
int64_t resolve_max_loop_trips(int64_t option);

class RunControl {
 public:
  RunControl(int64_t max_loop_trips, double timeout_seconds);

  int64_t max_loop_trips() const { return max_loop_trips_; }
  double timeout_seconds() const { return timeout_seconds_; }

  // Async-signal-safe and thread-safe: only stores to a lock-free atomic. Stops the run in
  // progress at its next check; with no run in progress it has no effect.
  void interrupt() noexcept { interrupted_.store(true, std::memory_order_relaxed); }

  // Called as a run starts: clears an earlier interrupt and starts the deadline.
  void begin_run();
  // Throws Error(ErrorCode::Interrupted) when the run was interrupted or its deadline passed.
  void check() const {
    if (interrupted_.load(std::memory_order_relaxed) || (has_deadline_ && Clock::now() >= deadline_)) stop();
  }
  // The message of a loop without `max` that reached the cap (`where`: "the loop", the position
  // in front as `f.grp:3:5: error: ` (throw_at); or "the loop while at line 3").
  std::string loop_cap_message(const std::string& where) const;

 private:
  using Clock = std::chrono::steady_clock;
  [[noreturn]] void stop() const;

  int64_t max_loop_trips_;
  double timeout_seconds_;
  bool has_deadline_ = false;
  Clock::time_point deadline_{};
  std::atomic<bool> interrupted_{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "interrupt() must be async-signal-safe");
};

}  // namespace grape
