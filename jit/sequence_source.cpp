#include "jit/sequence_source.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

#include "jit/emit_context.h"
#include "jit/kernel_abi.h"
#include "jit/kernel_source.h"
#include "scheduler/launch.h"

namespace grape::jit {

static_assert(scheduler::kSequenceMaxKernels == GRAPE_SEQ_MAX_KERNELS &&
                  scheduler::kSequenceMaxCopies == GRAPE_SEQ_MAX_COPIES &&
                  scheduler::kSequenceMaxLoops == GRAPE_SEQ_MAX_LOOPS,
              "scheduler/sequence.h and jit/kernel_abi.h must agree on a sequence's slots");

namespace {

constexpr const char* kPredCheck = "  if (p->pred && !*p->pred) return;\n";

// A block-wide copy (16 bytes at a time where both ends are aligned), skipped when `pred` is
// false, as the executors' grape_copy.
constexpr const char* kCopyHelper = R"(struct alignas(16) GrapeSeqWord {
  unsigned long long lo, hi;
};
__device__ __noinline__ void grape_seq_copy(void* dst, const void* src, unsigned long long bytes,
                                            const unsigned char* pred) {
  if (pred && !*pred) return;
  unsigned char* d = (unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  unsigned long long done = 0;
  if ((((unsigned long long)d | (unsigned long long)s) & 15) == 0) {
    const unsigned long long words = bytes / 16;
    for (unsigned long long w = threadIdx.x; w < words; w += blockDim.x)
      ((GrapeSeqWord*)d)[w] = ((const GrapeSeqWord*)s)[w];
    done = words * 16;
  }
  for (unsigned long long b = done + threadIdx.x; b < bytes; b += blockDim.x) d[b] = s[b];
}
// An address of SeqParams: in the block's shared memory (`local` + offset) where the storage
// lives only inside the sequence, else where the host put it.
template <class T>
__device__ __forceinline__ T* grape_seq_at(T* global, int local_offset, unsigned char* local) {
  return local_offset < 0 ? global : (T*)(local + local_offset);
}
// The kernels' parameter blocks into shared memory (every step reads its block from there, not
// from L2 on its first touch), eight 16-byte words in flight per thread; then the fields of the
// storages kept in shared memory pointed there.
__device__ __forceinline__ void grape_seq_stage(const SeqParams& sp, KParams* kp, unsigned char* local, int nk) {
  constexpr int kWords = (int)(sizeof(KParams) / 16);
  const int words = nk * kWords;
  for (int base = 0; base < words; base += 8 * (int)blockDim.x) {
    uint4 w[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int i = base + u * (int)blockDim.x + (int)threadIdx.x;
      if (i < words) w[u] = ((const uint4*)sp.kernel[i / kWords])[i % kWords];
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int i = base + u * (int)blockDim.x + (int)threadIdx.x;
      if (i < words) ((uint4*)kp)[i] = w[u];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < sp.local_patches; i += blockDim.x) {
    const unsigned int x = sp.local_patch[i];
    KParams& k = kp[x >> 26];
    const unsigned int field = (x >> 21) & 31u;
    unsigned char* at = local + 16u * (x & 0x1fffffu);
    if (field == GRAPE_KMAX_BUFFERS) k.pred = at;
    else k.buf[field] = at;
  }
  __syncthreads();
}
)";

}  // namespace

std::string sequence_step_comment(const std::string& kernel_name) {
  // "<entry>_k<index>_<ops>": only <ops>. The entry and the index differ between entries that hold
  // the same run of kernels (gpt2's decode inside generate and beam_search), and a name in the
  // source would make identical sequences compile once per entry (131 builds for 31 sources).
  for (size_t k = kernel_name.find("_k"); k != std::string::npos; k = kernel_name.find("_k", k + 1)) {
    size_t i = k + 2;
    while (i < kernel_name.size() && std::isdigit(static_cast<unsigned char>(kernel_name[i]))) ++i;
    if (i > k + 2 && i < kernel_name.size() && kernel_name[i] == '_') return kernel_name.substr(i + 1);
  }
  return kernel_name;
}

std::string sequence_body(const std::string& glue, int threads) {
  if (threads != 128 && threads != 256) return "";
  const std::string header = detail::kernel_header(kKernelSymbol, std::to_string(threads));
  const size_t at = glue.find(header);
  if (at == std::string::npos || glue.find(header, at + 1) != std::string::npos) return "";
  // One entry point, no preprocessor lines, no loads on the read-only path other than the
  // prelude's grape_ldg_* (plain loads in a sequence: GRAPE_BLOCK_SEQUENCE).
  if (glue.find("__global__", at + header.size()) != std::string::npos || glue.find("__global__") < at ||
      glue.find('#') != std::string::npos || glue.find("__ldg") != std::string::npos ||
      glue.find(".nc") != std::string::npos)
    return "";
  const size_t pred = header.find(kPredCheck);
  if (pred == std::string::npos) throw std::logic_error("kernel_header lost its predicate check");
  std::string device =
      "__device__ __noinline__ void grape_body(const KParams* const p) {\n" + header.substr(pred);
  std::string body = glue.substr(0, at) + device + glue.substr(at + header.size());
  // A sequence is one block of `threads`: the glue's grid-stride loops become loops of constant
  // stride the compiler can count (a loop over a few items is then a compare, not a 64-bit trip
  // count divided by gridDim.x * blockDim.x at every step of a scan).
  for (const auto& [builtin, value] : {std::pair<std::string, std::string>{"blockIdx.x", "0u"},
                                       {"gridDim.x", "1u"},
                                       {"blockDim.x", std::to_string(threads) + "u"}})
    for (size_t i = body.find(builtin); i != std::string::npos; i = body.find(builtin, i + value.size()))
      body.replace(i, builtin.size(), value);
  return body;
}

std::vector<int> sequence_kernel_threads(const std::vector<KernelSpec>& specs) {
  std::vector<int> threads;
  for (const KernelSpec& k : specs) {
    bool fit = !k.sequence_body.empty() && scheduler::fits_block_sequence(k.launch);
    // Work of constant size is decided now: a kernel too large for any binding would keep its
    // whole sequence from running as one launch.
    bool constant = true;
    for (const ir::Dim& d : k.launch.items) constant = constant && d.is_const();
    if (fit && constant) fit = scheduler::small_for_block_sequence(k.launch, {});
    threads.push_back(fit ? k.launch.threads : 0);
  }
  return threads;
}

namespace {

struct SourceWriter {
  const scheduler::ExecPlan& plan;
  const scheduler::BlockSequence& seq;
  const std::vector<KernelSpec>& specs;
  std::map<std::string, size_t> body_ns;  // distinct sequence bodies -> namespace number
  std::vector<std::string> templates;
  std::string bodies, code;

  size_t slot_of(const std::vector<size_t>& v, size_t x) const {
    auto it = std::find(v.begin(), v.end(), x);
    if (it == v.end()) throw std::logic_error("block sequence: a step has no slot");
    return static_cast<size_t>(it - v.begin());
  }

  void body_of(size_t k) {
    const KernelSpec& s = specs.at(k);
    if (s.sequence_body.empty()) throw std::logic_error("block sequence: kernel " + s.name + " has no body");
    if (body_ns.count(s.sequence_body)) return;
    const size_t n = body_ns.size();
    body_ns.emplace(s.sequence_body, n);
    for (const std::string& t : s.templates)
      if (std::find(templates.begin(), templates.end(), t) == templates.end()) templates.push_back(t);
    bodies += "namespace grape_b" + std::to_string(n) + " {\n" + s.sequence_body + "}  // namespace grape_b" +
              std::to_string(n) + "\n\n";
  }

  void steps(const std::vector<scheduler::Step>& list, size_t begin, size_t end, const std::string& ind) {
    for (size_t i = begin; i < end; ++i) {
      const scheduler::Step& st = list[i];
      switch (st.kind) {
        case scheduler::Step::Kind::Launch: {
          body_of(st.index);
          code += ind + "grape_b" + std::to_string(body_ns.at(specs[st.index].sequence_body)) +
                  "::grape_body(&kp[" + std::to_string(slot_of(seq.kernels, st.index)) + "]);  // " +
                  sequence_step_comment(specs[st.index].name) + "\n" + ind + "__syncthreads();\n";
          break;
        }
        case scheduler::Step::Kind::Copy: {
          auto it = std::find(seq.copies.begin(), seq.copies.end(), &st);
          if (it == seq.copies.end()) throw std::logic_error("block sequence: a copy has no slot");
          const std::string c = std::to_string(it - seq.copies.begin());
          auto at = [&](const char* field) {
            return std::string("grape_seq_at(sp.") + field + "[" + c + "], sp." + field + "_local[" + c +
                   "], local)";
          };
          code += ind + "grape_seq_copy(" + at("copy_dst") + ", " + at("copy_src") + ", sp.copy_bytes[" + c +
                  "], " + at("copy_pred") + ");\n" + ind + "__syncthreads();\n";
          break;
        }
        case scheduler::Step::Kind::Loop: {
          const scheduler::LoopPlan& l = plan.loops[st.index];
          const std::string n = std::to_string(slot_of(seq.loops, st.index));
          const std::string max = std::to_string(l.max_trips) + "LL";
          // Every thread reads the condition before a barrier, and the body writes it only after
          // that barrier, so all threads see the same value.
          code += ind + "{  // a loop of at most " + std::to_string(l.max_trips) + " trips\n";
          code += ind + "  bool go" + n + " = " + max + " > 0 && *grape_seq_at(sp.loop_init[" + n +
                  "], sp.loop_init_local[" + n + "], local) != 0;\n";
          code += ind + "  __syncthreads();\n";
          code += ind + "  for (long long t" + n + " = 0; go" + n + ";) {\n";
          steps(l.body, 0, l.body.size(), ind + "    ");
          code += ind + "    go" + n + " = ++t" + n + " < " + max + " && *grape_seq_at(sp.loop_cond[" + n +
                  "], sp.loop_cond_local[" + n + "], local) != 0;\n";
          code += ind + "    __syncthreads();\n";
          code += ind + "  }\n" + ind + "}\n";
          break;
        }
      }
    }
  }
};

}  // namespace

std::string block_sequence_source(const scheduler::ExecPlan& plan, const scheduler::BlockSequence& s,
                                  const std::vector<KernelSpec>& specs) {
  SourceWriter w{plan, s, specs, {}, {}, {}, {}};
  w.steps(*s.list, s.begin, s.end, "  ");
  std::string glue = "// a block sequence of " + std::to_string(s.kernels.size()) + " kernel(s), " +
                     std::to_string(s.copies.size()) + " copy(ies), " + std::to_string(s.loops.size()) +
                     " loop(s)\n" + w.bodies + kCopyHelper;
  // Shared memory: the kernels' parameter blocks, then the storages that live only inside the
  // sequence (the launch gives sequence_shared_bytes). The blocks are written before the launch,
  // never by a predecessor, so they are staged before the grid wait.
  const std::string nk = std::to_string(s.kernels.size());
  glue += "\nextern __shared__ __align__(16) unsigned char grape_seq_shared[];\n";
  glue += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s.threads) + ") " +
          std::string(kKernelSymbol) + "(const __grid_constant__ SeqParams sp) {\n";
  glue +=
      "  KParams* const kp = (KParams*)grape_seq_shared;\n  unsigned char* const local = grape_seq_shared "
      "+ " +
      nk + " * sizeof(KParams);\n  grape_seq_stage(sp, kp, local, " + nk + ");\n  GRAPE_GRID_WAIT();\n";
  if (scheduler::launch_dependents_early()) glue += "  GRAPE_LAUNCH_DEPENDENTS();\n";
  glue += w.code + "}\n";
  // After the CUDA headers, not before: NVRTC's precompiled header covers only the includes at the
  // very start of a source, and a define ahead of them made each sequence parse the headers again.
  return assemble_kernel_source(w.templates, glue, "#define GRAPE_BLOCK_SEQUENCE 1\n");
}

std::vector<std::string> block_sequence_sources(const ir::Function& f, const scheduler::FusionPlan& fusion,
                                                const std::vector<KernelSpec>& specs) {
  if (!scheduler::block_sequences_enabled()) return {};
  std::vector<scheduler::KernelUse> uses;
  for (const auto& s : specs) uses.push_back({s.root, s.ops, s.buffers, s.num_inputs, s.aliases, s.pred});
  const scheduler::ExecPlan plan = scheduler::build_plan(f, fusion, uses);
  std::vector<std::string> out;
  for (const scheduler::BlockSequence& s :
       scheduler::plan_block_sequences(plan, sequence_kernel_threads(specs)))
    out.push_back(block_sequence_source(plan, s, specs));
  return out;
}

}  // namespace grape::jit
