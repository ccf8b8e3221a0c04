#include "cli/build_progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "grape.h"

namespace grape::cli {
namespace {

constexpr std::chrono::milliseconds kRedraw{250};

// A build shorter than this shows no line at all: 1 s, or $GRAPE_PROGRESS_AFTER_MS (the tests
// set 0, so that a quick build shows the line too).
std::chrono::milliseconds show_after() {
  if (const char* v = std::getenv("GRAPE_PROGRESS_AFTER_MS"); v && *v) {
    char* end = nullptr;
    long ms = std::strtol(v, &end, 10);
    if (*end == '\0' && ms >= 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(1000);
}

}  // namespace

BuildProgressLine::BuildProgressLine(bool enabled)
    : enabled_(enabled && ::isatty(STDERR_FILENO)), show_after_(show_after()) {
  if (!enabled_) return;
  thread_ = std::thread([this] { loop(); });
  grp_set_build_progress(&BuildProgressLine::on_progress, this);
}

BuildProgressLine::~BuildProgressLine() {
  if (!enabled_) return;
  grp_set_build_progress(nullptr, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    building_ = false;
    draw_or_clear();
  }
  cv_.notify_all();
  thread_.join();
}

void BuildProgressLine::on_progress(void* self, size_t done, size_t total) {
  auto* line = static_cast<BuildProgressLine*>(self);
  std::lock_guard<std::mutex> lock(line->mu_);
  if (!line->building_ && done < total) line->start_ = std::chrono::steady_clock::now();
  line->building_ = done < total;
  line->done_ = done;
  line->total_ = total;
  line->draw_or_clear();  // at once: a new count, or the line erased when the build ends
}

void BuildProgressLine::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, kRedraw, [this] { return stopping_; })) draw_or_clear();
}

void BuildProgressLine::draw_or_clear() {
  auto elapsed = std::chrono::steady_clock::now() - start_;
  if (building_ && elapsed >= show_after_) {
    std::fprintf(stderr, "\r\033[Kgrape: building kernels %zu/%zu  %.1f s", done_, total_,
                 std::chrono::duration<double>(elapsed).count());
    std::fflush(stderr);
    shown_ = true;
  } else if (!building_ && shown_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }
}

}  // namespace grape::cli
