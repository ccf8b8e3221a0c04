#include "jit/kernel_source.h"

#include <map>
#include <set>
#include <stdexcept>

namespace grape::jit {

const std::string& embedded_file(const std::string& name) {
  static const std::map<std::string, std::string> files = [] {
    std::map<std::string, std::string> m;
    for (size_t i = 0; i < kNumEmbeddedFiles; ++i) m.emplace(kEmbeddedFiles[i].name, kEmbeddedFiles[i].text);
    return m;
  }();
  auto it = files.find(name);
  if (it == files.end()) throw std::logic_error("no embedded kernel file '" + name + "'");
  return it->second;
}

namespace {
// Every kernel source starts with these (NVRTC's precompiled header covers them).
constexpr const char* kCudaHeaders = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>\n";

// `define` after the CUDA headers, as assemble_kernel_source puts defines.
std::string with_define(const std::string& source, const std::string& define) {
  const std::string headers = kCudaHeaders;
  if (source.compare(0, headers.size(), headers) == 0)
    return headers + define + source.substr(headers.size());
  return define + source;
}
}  // namespace

std::string wide_variant_source(const std::string& source) {
  return with_define(source, "#define " + std::string(kWideDefine) + " 1\n");
}

std::string rows_variant_source(const std::string& source, long long rows) {
  return with_define(source, "#define " + std::string(kRowsDefine) + " " + std::to_string(rows) + "LL\n");
}

std::string decoder_kernel_source(int rows, int layers, long long cache_len, long long vocab, int fc_cols,
                                  unsigned ring_bytes, DecoderSwitches switches) {
  const std::string defines =
      "#define GRAPE_DEC_ROWS " + std::to_string(rows) + "\n#define GRAPE_DEC_LAYERS " +
      std::to_string(layers) + "\n#define GRAPE_DEC_T " + std::to_string(cache_len) +
      "\n#define GRAPE_DEC_VOCAB " + std::to_string(vocab) + "\n#define GRAPE_DEC_FC_COLS " +
      std::to_string(fc_cols) + "\n#define GRAPE_DEC_RING " + std::to_string(ring_bytes) +
      "\n#define GRAPE_DEC_LM_CLAIM " + (switches.lm_claim ? "1" : "0") +
      "\n#define GRAPE_DEC_PREFETCH_NEXT " + (switches.prefetch_next ? "1" : "0") +
      "\n#define GRAPE_DEC_ONE_POLLER " + (switches.one_poller ? "1" : "0") +
      "\n#define GRAPE_DEC_KV_EVICT_FIRST " + (switches.kv_evict_first ? "1" : "0") +
      "\n#define GRAPE_DEC_LM_LATE " + std::to_string(switches.lm_claim ? switches.lm_late : 0) + "\n";
  return assemble_kernel_source({"decoder_abi.h", "decoder_step.cuh"}, "", defines);
}

std::string assemble_kernel_source(const std::vector<std::string>& templates, const std::string& glue,
                                   const std::string& defines) {
  std::string s = kCudaHeaders + defines;
  std::set<std::string> added;
  auto add = [&](const std::string& name) {
    if (!added.insert(name).second) return;
    s += "#line 1 \"" + name + "\"\n" + embedded_file(name);
    if (s.back() != '\n') s += '\n';
  };
  add("kernel_abi.h");
  add("grid_dependency.cuh");
  add("prelude.cuh");
  for (const auto& t : templates) add(t);
  s += "#line 1 \"generated\"\n" + glue;
  return s;
}

}  // namespace grape::jit
