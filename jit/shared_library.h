// dlopen/dlsym with errors kept as text: libcuda and libnvrtc are loaded at run time, never linked,
// so a binary built here runs on a machine without a GPU and picks up the driver on one with a GPU.
#pragma once
#include <string>
#include <vector>

namespace grape::jit {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Tries each candidate (a bare soname searches the loader path; a path is opened as is) and keeps
  // the first that loads. On failure returns an empty library and sets *why to the dlerror() of
  // every attempt.
  static SharedLibrary open_first(const std::vector<std::string>& candidates, std::string* why);

  bool loaded() const { return handle_ != nullptr; }
  // The file actually loaded (resolved through the loader), for messages and for finding files
  // installed beside the library.
  const std::string& path() const { return path_; }
  // nullptr when absent.
  void* symbol(const char* name) const;

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace grape::jit
