// Helpers for the runtime file-format tests: temporary folders, raw file I/O and running python3
// (numpy / safetensors) as an independent reference implementation.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"

namespace grape::testing {

// A fresh folder under the system temp dir, removed (with its content) at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "grape-rt-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct PyResult {
  int rc = -1;
  std::string output;
};

// Runs `script` with python3 in `dir` (the script is written to dir/script.py); stdout and stderr
// are captured together.
inline PyResult run_python(const TempDir& dir, const std::string& script) {
  std::string path = dir.file("script.py");
  {
    std::ofstream f(path);
    f << script;
  }
  std::string cmd = "cd '" + dir.path().string() + "' && python3 '" + path + "' 2>&1";
  PyResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Empty if python3 with numpy and safetensors is usable, else why not.
inline std::string python_unavailable_reason() {
  static const std::string reason = [] {
    FILE* p = ::popen("python3 -c 'import numpy, safetensors, safetensors.numpy' 2>&1", "r");
    if (!p) return std::string("cannot run python3");
    std::string out;
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int status = ::pclose(p);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::string();
    return "python3 with numpy and safetensors is not available: " + out;
  }();
  return reason;
}

#define GRAPE_REQUIRE_PYTHON()                                                          \
  do {                                                                                  \
    std::string why_ = ::grape::testing::python_unavailable_reason();                   \
    if (!why_.empty()) GTEST_SKIP() << "SKIPPED (python interop): " << why_;            \
  } while (0)

// Runs f, expects a grape::Error with `code` whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, grape::ErrorCode code, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected a grape::Error containing '" << (parts.empty() ? "" : parts[0]) << "'";
  } catch (const grape::Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\n  lacks: " << part;
  }
}

}  // namespace grape::testing
