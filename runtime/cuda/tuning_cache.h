// The autotuner's decisions on disk (issue 7 item 6): for each (kernel, shape bucket, device) key,
// the name of the launch configuration that measured fastest (scheduler::LaunchCandidate) and its
// time. A session that finds its key here launches that configuration without measuring, so runs
// are deterministic given the file.
//
// One text file, `<cache root>/tuning/tuning.txt` by default (beside the kernel cache's folder):
//
//   grape-tuning 1
//   <key: 32 hex digits> <candidate name> <microseconds> <check: 16 hex digits>
//   ...
//
// The check is XXH64 of "<key> <name> <microseconds>", so a damaged line is detected; it is
// reported once per process and file, ignored (the kernel is measured again) and dropped at the
// next save. A file of another format version is ignored as a whole (reported the same way).
// save() merges: it reads the file again, adds this cache's new entries (they replace older ones
// of the same key), writes a temporary file beside it and renames it into place, so readers see a
// whole file and concurrent sessions lose at most each other's newest entries, never the file.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "jit/hash.h"

namespace grape::cuda {

struct TuningEntry {
  std::string choice;  // a scheduler::LaunchCandidate name
  double us = 0;       // its measured time per launch
};

class TuningCache {
 public:
  static constexpr int kFormatVersion = 1;
  // Called with the file and what is wrong with it; the default prints
  // "grape: warning: tuning cache: <path>: <problem>" to stderr, once per process and path.
  using Reporter = std::function<void(const std::string& path, const std::string& problem)>;

  // `path` empty: in memory only (no cache directory). Reads the file when it exists.
  explicit TuningCache(std::string path, Reporter reporter = {});
  // default_cache_dir() + "/tuning/tuning.txt", or "" when there is no cache directory.
  static std::string default_path();

  const std::string& path() const { return path_; }
  std::optional<TuningEntry> lookup(const jit::Hash128& key) const;
  void record(const jit::Hash128& key, const TuningEntry& entry);
  // Writes the new entries (see above); nothing when there are none or no path. Throws Error(IO)
  // naming the file when it cannot be written.
  void save();
  // Lines of the file that were ignored when it was read (damaged, or another version's).
  size_t ignored_lines() const { return ignored_; }
  size_t size() const { return entries_.size(); }
  // Deletes the file at `path` and temporary files of unfinished saves beside it (grape cache
  // clear); a missing file is no error. Throws Error(IO) naming what cannot be deleted.
  static void remove(const std::string& path);

  // The line format, for tests: parse_line returns nullopt for a damaged line.
  static std::string format_line(const jit::Hash128& key, const TuningEntry& entry);
  static std::optional<std::pair<jit::Hash128, TuningEntry>> parse_line(const std::string& line);

 private:
  // Reads `path_` into `into`; counts and reports what it ignores when `report`.
  void read_file(std::map<std::string, TuningEntry>& into, bool report);

  std::string path_;
  Reporter reporter_;
  std::map<std::string, TuningEntry> entries_;  // key hex -> entry
  std::map<std::string, TuningEntry> fresh_;    // recorded since the last save
  size_t ignored_ = 0;
};

}  // namespace grape::cuda
