#include "jit/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace grape::jit {

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedLibrary SharedLibrary::open_first(const std::vector<std::string>& candidates, std::string* why) {
  std::string errors;
  for (const std::string& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      if (!errors.empty()) errors += "; ";
      errors += err ? err : name + ": cannot be loaded";
      continue;
    }
    SharedLibrary lib;
    lib.handle_ = handle;
    lib.path_ = name;
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
      lib.path_ = map->l_name;
    }
    return lib;
  }
  if (why) *why = errors;
  return {};
}

void* SharedLibrary::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

}  // namespace grape::jit
