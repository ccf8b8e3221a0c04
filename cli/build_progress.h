// The progress line of kernel builds on a terminal: "grape: building kernels 37/129  4.2 s" on
// standard error, shown once a build has run for a second (a warm start from the kernel cache
// shows nothing), redrawn four times a second and erased when the build ends. Nothing when
// standard error is not a terminal or with --quiet.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

namespace grape::cli {

class BuildProgressLine {
 public:
  // Installs itself as the process's build-progress callback (grp_set_build_progress) when
  // enabled and standard error is a terminal.
  explicit BuildProgressLine(bool enabled);
  ~BuildProgressLine();
  BuildProgressLine(const BuildProgressLine&) = delete;
  BuildProgressLine& operator=(const BuildProgressLine&) = delete;

 private:
  static void on_progress(void* self, size_t done, size_t total);
  void loop();
  void draw_or_clear();

  bool enabled_;
  std::chrono::milliseconds show_after_;
  std::mutex mu_;  // guards everything below, and the line on the terminal
  std::condition_variable cv_;
  bool stopping_ = false;
  bool building_ = false;  // a build is running
  bool shown_ = false;     // the line is on the terminal
  size_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

}  // namespace grape::cli
