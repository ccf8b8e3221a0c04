// grp_model_compile_kernels (every kernel of a model through NVRTC, ahead of time), grp_kernel_bundle_*
// (the same kernels in one file a session loads with no NVRTC), grp_cache_* (the on-disk kernel cache)
// and the compile worker processes (grp_set_compile_worker, grp_compile_worker_main).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "capi/src/internal.h"
#include "jit/build_progress.h"
#include "jit/codegen.h"
#include "jit/compile_workers.h"
#include "jit/kernel_bundle.h"
#include "jit/kernel_cache.h"
#include "jit/nvrtc.h"
#include "lang/source.h"
#include "runtime/cuda/control_kernels.h"
#include "runtime/cuda/tuning_cache.h"
#include "scheduler/launch.h"

using namespace grape;
using namespace grape::capi;

namespace {

// "sm_90a" -> 90, "compute_80" -> 80; -1 when the text is no target name.
int arch_number(const std::string& arch) {
  std::string digits;
  if (arch.rfind("sm_", 0) == 0)
    digits = arch.substr(3);
  else if (arch.rfind("compute_", 0) == 0)
    digits = arch.substr(8);
  else
    return -1;
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return -1;
  return std::stoi(digits);
}

// The targets of a comma-separated list (spaces around names ignored, repeats dropped), checked
// for their form only.
std::vector<std::string> parse_archs(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string a = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    a.erase(0, a.find_first_not_of(" \t"));
    a.erase(a.find_last_not_of(" \t") + 1);
    if (a.empty()) invalid("archs: empty target name in '" + list + "' (expected e.g. \"sm_80,sm_90\")");
    if (arch_number(a) < 0)
      invalid("archs: '" + a + "' is not a target name (expected sm_NN or compute_NN, e.g. sm_80)");
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// "1,5,8": row counts of the GEMV path (1..kGemvMaxRows), each once, in order; "" is none.
std::vector<int64_t> parse_rows(const std::string& list) {
  std::vector<int64_t> out;
  if (list.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string r = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v = 0;
    const bool digits = !r.empty() && r.size() <= 3 && r.find_first_not_of("0123456789") == std::string::npos;
    if (digits) v = std::stoll(r);
    if (!digits || v < 1 || v > scheduler::kGemvMaxRows)
      invalid("rows: '" + r + "' in '" + list + "' is not a row count from 1 to " +
              std::to_string(scheduler::kGemvMaxRows));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Checks `archs` against NVRTC, compiles every kernel of the model (and, with `bundle`, collects
// them, the executors' own kernels and the row-count variants for `rows`) and returns the report
// text.
std::string compile_all(const grp_model* m, const char* archs, std::vector<jit::BundledKernel>* bundle,
                        const std::vector<int64_t>& rows = {}) {
  require(m, "model");
  require(archs, "archs");
  std::vector<std::string> targets = parse_archs(archs);
  std::string why;
  if (!jit::nvrtc_available(&why)) throw Error(ErrorCode::NoDevice, "cannot compile kernels: " + why);
  std::vector<int> supported = jit::nvrtc_supported_archs();
  for (const auto& a : targets) {
    if (std::find(supported.begin(), supported.end(), arch_number(a)) != supported.end()) continue;
    std::string list;
    for (int n : supported) list += (list.empty() ? "" : ", ") + ("sm_" + std::to_string(n));
    invalid("archs: NVRTC " + jit::nvrtc_version() + " cannot compile for '" + a + "'; it supports " +
            (list.empty() ? "(none reported)" : list));
  }

  const Model& model = *m->model;
  std::vector<std::string> extra;
  if (bundle) extra.push_back(cuda::control_kernels_source());
  jit::CompileReport rep = jit::compile_module(
      model.module(), targets, [&model](Span s) { return model.locate(s); }, bundle, extra, rows);

  std::string target_list;
  for (const auto& a : targets) target_list += (target_list.empty() ? "" : ", ") + a;
  size_t kernels = 0;
  for (const auto& e : rep.entries) kernels += e.kernels;
  if (!rep.ok()) {
    std::string msg = "kernel compilation failed for " + target_list + ": " +
                      std::to_string(rep.errors.size()) + " error" + (rep.errors.size() == 1 ? "" : "s") +
                      " (" + std::to_string(rep.compiled) + " compiles clean)\n";
    for (const auto& e : rep.errors) msg += e + (e.empty() || e.back() != '\n' ? "\n" : "");
    throw Error(ErrorCode::Internal, msg);
  }
  std::string text = "targets: " + target_list + "\n";
  for (const auto& e : rep.entries)
    text +=
        "  " + e.name + ": " + std::to_string(e.kernels) + " kernel" + (e.kernels == 1 ? "" : "s") +
        (e.sequences ? ", " + std::to_string(e.sequences) + " block sequence" + (e.sequences == 1 ? "" : "s")
                     : std::string()) +
        "\n";
  text += "total: " + std::to_string(kernels) + " kernel" + (kernels == 1 ? "" : "s") + " in " +
          std::to_string(rep.entries.size()) + " entr" + (rep.entries.size() == 1 ? "y" : "ies") + ", " +
          std::to_string(rep.compiled) + " kernel/target pairs compiled" +
          (rep.wide_compiled
               ? " (and " + std::to_string(rep.wide_compiled) + " wide-tile variants for the bundle)"
               : std::string()) +
          (rep.rows_compiled
               ? " (and " + std::to_string(rep.rows_compiled) + " row-count variants for the bundle)"
               : std::string()) +
          ", no errors or warnings\n";
  return text;
}

}  // namespace

extern "C" {

grp_error* grp_model_compile_kernels(const grp_model* m, const char* archs, char** report) {
  return guard([&] {
    require(report, "report");
    *report = dup_string(compile_all(m, archs, nullptr));
  });
}

grp_error* grp_kernel_bundle_write(const grp_model* m, const char* archs, const char* path, char** report) {
  return grp_kernel_bundle_write_rows(m, archs, "", path, report);
}

grp_error* grp_kernel_bundle_write_rows(const grp_model* m, const char* archs, const char* rows,
                                        const char* path, char** report) {
  return guard([&] {
    require(rows, "rows");
    require(path, "path");
    require(report, "report");
    if (!*path) invalid("path: empty");
    const std::vector<int64_t> counts = parse_rows(rows);
    std::vector<jit::BundledKernel> bundle;
    std::string text = compile_all(m, archs, &bundle, counts);
    jit::write_bundle(path, bundle, jit::nvrtc_version());
    text += "bundle: " + std::string(path) + " (" + std::to_string(bundle.size()) + " kernels)\n";
    *report = dup_string(text);
  });
}

grp_error* grp_kernel_bundle_use(const char* path) {
  return guard([&] {
    require(path, "path");
    if (!*path) invalid("path: empty");
    jit::use_bundle(jit::KernelBundle::load(path));
  });
}

void grp_set_build_progress(grp_build_progress_fn fn, void* user) {
  if (!fn) {
    jit::set_build_observer(nullptr);
    return;
  }
  try {
    jit::set_build_observer([fn, user](size_t done, size_t total) { fn(user, done, total); });
  } catch (...) {  // std::function's allocation: no progress reports is the only consequence
  }
}

void grp_set_compile_worker(const char* executable) {
  try {
    jit::set_compile_worker_executable(executable ? executable : "");
  } catch (...) {  // the string's allocation: builds then compile in their own threads
  }
}

int grp_compile_worker_main(int argc, char** argv) {
  if (argc < 2 || !argv || !argv[1] || std::string(argv[1]) != GRP_COMPILE_WORKER_ARG) return 2;
  try {
    return jit::compile_worker_main(argc, argv);
  } catch (...) {
    return 1;
  }
}

grp_error* grp_cache_info(char** out) {
  return guard([&] {
    require(out, "out");
    jit::CacheInfo info = jit::KernelCache::open_default().info();
    const std::string tuning = cuda::TuningCache::default_path();
    const size_t decisions = cuda::TuningCache(tuning, [](const std::string&, const std::string&) {}).size();
    *out = dup_string("directory: " + info.dir + "\nentries: " + std::to_string(info.entries) +
                      "\nbytes: " + std::to_string(info.bytes) + "\ntuning file: " + tuning +
                      "\ntuning decisions: " + std::to_string(decisions) + "\n");
  });
}

grp_error* grp_cache_clear(void) {
  return guard([&] {
    jit::KernelCache::open_default().clear();
    cuda::TuningCache::remove(cuda::TuningCache::default_path());
  });
}

}  // extern "C"
