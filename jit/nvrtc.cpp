#include "jit/nvrtc.h"

#include <glob.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "jit/shared_library.h"

namespace grape::jit {
namespace {

#define GRAPE_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)                \
  X(nvrtcGetErrorString)         \
  X(nvrtcGetNumSupportedArchs)   \
  X(nvrtcGetSupportedArchs)      \
  X(nvrtcCreateProgram)          \
  X(nvrtcDestroyProgram)         \
  X(nvrtcCompileProgram)         \
  X(nvrtcGetProgramLogSize)      \
  X(nvrtcGetProgramLog)          \
  X(nvrtcGetPTXSize)             \
  X(nvrtcGetPTX)                 \
  X(nvrtcGetCUBINSize)           \
  X(nvrtcGetCUBIN)

struct Nvrtc {
  SharedLibrary library;
#define GRAPE_NVRTC_MEMBER(function) decltype(&::function) function = nullptr;
  GRAPE_NVRTC_FUNCTIONS(GRAPE_NVRTC_MEMBER)
#undef GRAPE_NVRTC_MEMBER
  std::string version;
  std::vector<int> archs;
  std::string include_dir;
  bool pch = false;   // automatic precompiled headers (NVRTC 12.8+ and pch_wanted)
  std::string error;  // empty when loaded
};

const char* const kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

// Toolkit library directories, in search order, after the loader's own path.
std::vector<std::string> library_dirs() {
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const char* pattern : {"/usr/local/cuda-13*", "/usr/local/cuda-12*"}) {
    glob_t g{};
    if (glob(pattern, 0, nullptr, &g) == 0) {
      std::vector<std::string> found(g.gl_pathv, g.gl_pathv + g.gl_pathc);
      std::sort(found.rbegin(), found.rend());  // newest first
      roots.insert(roots.end(), found.begin(), found.end());
    }
    globfree(&g);
  }
  std::vector<std::string> dirs;
  for (const std::string& root : roots) {
    for (const char* sub : {"/lib64", "/lib", "/targets/x86_64-linux/lib"}) dirs.push_back(root + sub);
  }
  return dirs;
}

std::string find_include_dir(const std::string& library_path) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  std::error_code ec;
  fs::path lib = fs::canonical(library_path, ec);
  if (!ec) {
    fs::path dir = lib.parent_path();
    candidates.push_back(dir.parent_path() / "include");                // <root>/lib64 -> <root>/include
    candidates.push_back(dir.parent_path().parent_path() / "include");  // targets/<t>/lib -> <root>/include
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(fs::path(home) / "include");
  candidates.push_back("/usr/local/cuda/include");
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "cuda_fp16.h", ec)) return fs::canonical(c, ec).string();
  }
  return "";
}

std::unique_ptr<Nvrtc> load_nvrtc() {
  auto n = std::make_unique<Nvrtc>();
  std::vector<std::string> candidates(std::begin(kSonames), std::end(kSonames));
  for (const std::string& dir : library_dirs()) {
    for (const char* soname : kSonames) {
      std::error_code ec;
      if (std::filesystem::exists(dir + "/" + soname, ec)) candidates.push_back(dir + "/" + soname);
    }
  }
  std::string why;
  n->library = SharedLibrary::open_first(candidates, &why);
  if (!n->library.loaded()) {
    n->error = "no NVRTC library found (" + why + "); install the CUDA toolkit or set CUDA_HOME";
    return n;
  }
#define GRAPE_NVRTC_RESOLVE(function)                                                            \
  n->function = reinterpret_cast<decltype(n->function)>(n->library.symbol(#function));           \
  if (!n->function) {                                                                            \
    n->error = "the NVRTC library " + n->library.path() + " lacks " #function "; it is too old"; \
    return n;                                                                                    \
  }
  GRAPE_NVRTC_FUNCTIONS(GRAPE_NVRTC_RESOLVE)
#undef GRAPE_NVRTC_RESOLVE
  int major = 0, minor = 0;
  n->nvrtcVersion(&major, &minor);
  n->version = std::to_string(major) + "." + std::to_string(minor);
  int count = 0;
  if (n->nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    n->archs.resize(count);
    if (n->nvrtcGetSupportedArchs(n->archs.data()) != NVRTC_SUCCESS) n->archs.clear();
  }
  n->include_dir = find_include_dir(n->library.path());
  n->pch =
      n->library.symbol("nvrtcGetPCHCreateStatus") != nullptr && pch_wanted(std::getenv("GRAPE_NVRTC_PCH"));
  return n;
}

// Never unloaded: dlclose at exit would race other static destructors still compiling, and would
// hide NVRTC's own allocations from LeakSanitizer, which then reports them as leaks.
const Nvrtc& loaded_nvrtc() {
  static const Nvrtc* const loaded = load_nvrtc().release();
  return *loaded;
}

const Nvrtc& nvrtc() {
  const Nvrtc& n = loaded_nvrtc();
  if (!n.error.empty()) throw Error(ErrorCode::NoDevice, n.error);
  return n;
}

// "sm_90a" -> 90, "compute_80" -> 80; -1 when the text is no target name.
int arch_number(const std::string& arch, bool* real) {
  std::string digits;
  if (arch.rfind("sm_", 0) == 0) {
    *real = true;
    digits = arch.substr(3);
  } else if (arch.rfind("compute_", 0) == 0) {
    *real = false;
    digits = arch.substr(8);
  } else {
    return -1;
  }
  while (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return -1;
  return std::stoi(digits);
}

std::string trimmed_log(std::string log) {
  while (!log.empty() && (log.back() == '\0' || std::isspace(static_cast<unsigned char>(log.back())))) {
    log.pop_back();
  }
  return log;
}

class Program {
 public:
  Program(const Nvrtc& n, nvrtcProgram p) : n_(n), p_(p) {}
  ~Program() { n_.nvrtcDestroyProgram(&p_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }

 private:
  const Nvrtc& n_;
  nvrtcProgram p_;
};

}  // namespace

bool nvrtc_available(std::string* why) {
  const Nvrtc& n = loaded_nvrtc();
  if (why) *why = n.error;
  return n.error.empty();
}

std::string nvrtc_version() { return nvrtc().version; }
std::string nvrtc_library_path() { return nvrtc().library.path(); }
bool nvrtc_uses_pch() { return nvrtc().pch; }

bool pch_wanted(const char* env) { return !(env && std::string(env) == "0"); }
std::string cuda_include_dir() { return nvrtc().include_dir; }
std::vector<int> nvrtc_supported_archs() { return nvrtc().archs; }

std::vector<std::string> default_compile_options(const std::string& arch) {
  return {"-std=c++17", "--gpu-architecture=" + arch, "-default-device"};
}

std::string number_lines(const std::string& source) {
  std::size_t lines = std::count(source.begin(), source.end(), '\n') + 1;
  int width = static_cast<int>(std::to_string(lines).size());
  std::string out;
  std::size_t start = 0;
  for (std::size_t line = 1; start <= source.size(); ++line) {
    std::size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    if (end == source.size() && start == end && line > 1) break;  // no empty line after a final '\n'
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%*zu | ", width, line);
    out += prefix;
    out.append(source, start, end - start);
    out += '\n';
    start = end + 1;
  }
  return out;
}

CompileResult compile_cuda(const std::string& source, const std::string& name, const std::string& arch,
                           const std::vector<std::string>& options) {
  const Nvrtc& n = nvrtc();
  bool real = false;
  int number = arch_number(arch, &real);
  if (number < 0) {
    throw Error(ErrorCode::Unsupported, "cannot compile kernel " + name + ": \"" + arch +
                                            "\" is no CUDA target (use sm_90 or compute_90)");
  }
  if (!n.archs.empty() && std::find(n.archs.begin(), n.archs.end(), number) == n.archs.end()) {
    std::string supported;
    for (int a : n.archs) supported += (supported.empty() ? "sm_" : ", sm_") + std::to_string(a);
    throw Error(ErrorCode::Unsupported, "NVRTC " + n.version + " (" + n.library.path() +
                                            ") cannot compile kernel " + name + " for " + arch +
                                            " (it supports " + supported + ")");
  }

  std::vector<std::string> all = default_compile_options(arch);
  if (!n.include_dir.empty()) all.push_back("-I" + n.include_dir);
  // Every kernel starts with the same CUDA headers (jit/kernel_source.cpp); NVRTC parses them once
  // per process and reuses that: 15% less NVRTC time over GPT-2's 129 kernels (62.9 -> 53.3 s of
  // CPU, sm_90, NVRTC 13.0), the same PTX. Like -I, not part of the cache key: it changes nothing
  // the compile produces. Its messages would fill the log, which must stay empty.
  if (n.pch) all.insert(all.end(), {"-pch", "-pch-messages=false", "-pch-verbose=false"});
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());

  const std::string program_name = name + ".cu";
  nvrtcProgram raw = nullptr;
  nvrtcResult r = n.nvrtcCreateProgram(&raw, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    throw Error(r == NVRTC_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::Internal,
                "nvrtcCreateProgram failed for kernel " + name + ": " + n.nvrtcGetErrorString(r));
  }
  Program program(n, raw);
  nvrtcResult compiled = n.nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());

  std::size_t log_size = 0;
  std::string log;
  if (n.nvrtcGetProgramLogSize(program.get(), &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (n.nvrtcGetProgramLog(program.get(), log.data()) != NVRTC_SUCCESS) log.clear();
  }
  log = trimmed_log(std::move(log));

  if (compiled != NVRTC_SUCCESS) {
    std::string joined;
    for (const std::string& o : all) joined += (joined.empty() ? "" : " ") + o;
    if (compiled == NVRTC_ERROR_INVALID_OPTION) {
      throw Error(ErrorCode::Unsupported, "NVRTC " + n.version + " rejects the options for kernel " + name +
                                              " (" + joined + "): " + n.nvrtcGetErrorString(compiled) +
                                              (log.empty() ? "" : "\n" + log));
    }
    throw Error(compiled == NVRTC_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::Internal,
                "NVRTC " + n.version + " failed to compile kernel " + name + " for " + arch + ": " +
                    n.nvrtcGetErrorString(compiled) + "\n" + (log.empty() ? "(NVRTC left no log)" : log) +
                    "\noptions: " + joined + "\ngenerated source of kernel " + name + ":\n" +
                    number_lines(source));
  }

  CompileResult result;
  result.log = std::move(log);
  result.nvrtc_version = n.version;
  std::size_t size = 0;
  if (n.nvrtcGetPTXSize(program.get(), &size) == NVRTC_SUCCESS && size > 0) {
    result.ptx.resize(size);
    if (n.nvrtcGetPTX(program.get(), result.ptx.data()) != NVRTC_SUCCESS) result.ptx.clear();
    while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  }
  if (real) {
    size = 0;
    r = n.nvrtcGetCUBINSize(program.get(), &size);
    if (r == NVRTC_SUCCESS && size > 0) {
      result.cubin.resize(size);
      r = n.nvrtcGetCUBIN(program.get(), reinterpret_cast<char*>(result.cubin.data()));
    }
    if (r != NVRTC_SUCCESS || result.cubin.empty()) {
      throw Error(ErrorCode::Internal,
                  "NVRTC " + n.version + " compiled kernel " + name + " for " + arch +
                      " but returned no cubin" +
                      (r != NVRTC_SUCCESS ? std::string(": ") + n.nvrtcGetErrorString(r) : ""));
    }
  }
  return result;
}

}  // namespace grape::jit
