#include "runtime/cuda/tuning_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "jit/kernel_cache.h"

namespace grape::cuda {
namespace fs = std::filesystem;

namespace {

constexpr const char* kHeader = "grape-tuning ";

void report_once(const std::string& path, const std::string& problem) {
  static std::mutex mutex;
  static std::set<std::string> reported;
  std::lock_guard<std::mutex> lock(mutex);
  if (!reported.insert(path).second) return;
  std::cerr << "grape: warning: tuning cache: " << path << ": " << problem << "\n";
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool parse_hex(const std::string& s, size_t digits, uint64_t* out) {
  if (s.size() != digits) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

// "<key> <name> <us> <check>": the check is XXH64 of what precedes it.
std::string line_of(const std::string& key_hex, const TuningEntry& e) {
  char us[32];
  std::snprintf(us, sizeof us, "%.3f", e.us);
  const std::string body = key_hex + " " + e.choice + " " + us;
  return body + " " + hex16(jit::xxh64(body.data(), body.size()));
}

}  // namespace

TuningCache::TuningCache(std::string path, Reporter reporter)
    : path_(std::move(path)), reporter_(reporter ? std::move(reporter) : Reporter(report_once)) {
  if (!path_.empty()) read_file(entries_, true);
}

std::string TuningCache::default_path() {
  try {
    return jit::default_cache_dir() + "/tuning/tuning.txt";
  } catch (const Error&) {
    return "";  // no cache directory: decisions last as long as the session
  }
}

std::string TuningCache::format_line(const jit::Hash128& key, const TuningEntry& entry) {
  return line_of(key.hex(), entry);
}

std::optional<std::pair<jit::Hash128, TuningEntry>> TuningCache::parse_line(const std::string& line) {
  std::istringstream in(line);
  std::string key_hex, name, us_text, check_text, extra;
  if (!(in >> key_hex >> name >> us_text >> check_text) || (in >> extra)) return std::nullopt;
  jit::Hash128 key;
  uint64_t check = 0;
  if (key_hex.size() != 32 || !parse_hex(key_hex.substr(0, 16), 16, &key.high) ||
      !parse_hex(key_hex.substr(16), 16, &key.low) || !parse_hex(check_text, 16, &check) || !valid_name(name))
    return std::nullopt;
  char* end = nullptr;
  const double us = std::strtod(us_text.c_str(), &end);
  if (*end != '\0' || !(us >= 0) || us > 1e12) return std::nullopt;
  const std::string b = key_hex + " " + name + " " + us_text;
  if (jit::xxh64(b.data(), b.size()) != check) return std::nullopt;
  return std::make_pair(key, TuningEntry{name, us});
}

void TuningCache::read_file(std::map<std::string, TuningEntry>& into, bool report) {
  std::ifstream in(path_);
  if (!in) return;  // no file yet
  std::string line;
  size_t bad = 0;
  bool other_version = false;
  if (!std::getline(in, line) || line != kHeader + std::to_string(kFormatVersion)) {
    other_version = true;
  } else {
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto parsed = parse_line(line);
      if (!parsed) {
        ++bad;
        continue;
      }
      into[parsed->first.hex()] = parsed->second;
    }
  }
  if (!report) return;
  if (other_version) {
    ignored_ = 1;
    reporter_(path_,
              "not a version " + std::to_string(kFormatVersion) +
                  " tuning file; ignored, its kernels will be measured again and it will be rewritten");
  } else if (bad) {
    ignored_ = bad;
    reporter_(path_, std::to_string(bad) + " damaged line" + (bad == 1 ? "" : "s") +
                         " ignored; those kernels will be measured again");
  }
}

std::optional<TuningEntry> TuningCache::lookup(const jit::Hash128& key) const {
  auto it = entries_.find(key.hex());
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TuningCache::record(const jit::Hash128& key, const TuningEntry& entry) {
  if (!valid_name(entry.choice))
    throw Error(ErrorCode::Internal, "tuning cache: bad candidate name '" + entry.choice + "'");
  entries_[key.hex()] = entry;
  fresh_[key.hex()] = entry;
}

void TuningCache::save() {
  if (path_.empty() || fresh_.empty()) return;
  const fs::path file(path_);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec)
    throw Error(ErrorCode::IO, "cannot create the tuning cache directory " + file.parent_path().string() +
                                   ": " + ec.message());
  std::map<std::string, TuningEntry> merged;
  read_file(merged, false);  // what other sessions wrote meanwhile
  for (const auto& [k, e] : fresh_) merged[k] = e;
  std::string text = kHeader + std::to_string(kFormatVersion) + "\n";
  for (const auto& [k, e] : merged) text += line_of(k, e) + "\n";
  std::string temp = path_ + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    throw Error(ErrorCode::IO, "cannot write the tuning cache " + path_ + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  int err = done == text.size() ? 0 : (errno ? errno : EIO);
  if (::close(fd) != 0 && !err) err = errno;
  if (err || ::rename(temp.c_str(), path_.c_str()) != 0) {
    if (!err) err = errno;
    ::unlink(temp.c_str());
    throw Error(ErrorCode::IO, "cannot write the tuning cache " + path_ + ": " + std::strerror(err));
  }
  for (const auto& [k, e] : merged) entries_.emplace(k, e);  // ours stay; add the others'
  fresh_.clear();
}

void TuningCache::remove(const std::string& path) {
  if (path.empty()) return;
  const fs::path file(path);
  std::error_code ec;
  std::vector<fs::path> doomed;
  if (fs::exists(file, ec)) doomed.push_back(file);
  const std::string temp_prefix = file.filename().string() + ".tmp.";
  for (const fs::directory_entry& e : fs::directory_iterator(file.parent_path(), ec))
    if (e.path().filename().string().rfind(temp_prefix, 0) == 0) doomed.push_back(e.path());
  for (const fs::path& f : doomed)
    if (!fs::remove(f, ec) && ec)
      throw Error(ErrorCode::IO, "cannot delete the tuning cache file " + f.string() + ": " + ec.message());
}

}  // namespace grape::cuda
