// Block sequences (scheduler/sequence.h, jit/sequence_source.h) on the CPU: which steps form
// them, the invariants every sequence keeps, and the source that runs them. No GPU needed; the
// sources compile with NVRTC in compile.examples and CodegenNvrtc.DifftestCases (grape compile
// builds every sequence), and run in tests/gpu/block_sequence_test.cpp.
#include "scheduler/sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "jit/codegen.h"
#include "jit/emit_context.h"
#include "jit/kernel_source.h"
#include "jit/sequence_source.h"
#include "scheduler/fusion.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"
#include "tests/jit_codegen/static_loop_program.h"

namespace grape {
namespace {

namespace fs = std::filesystem;
using namespace codegen_test;
using scheduler::Step;

struct Sequenced : Planned {
  std::vector<scheduler::BlockSequence> sequences;
};

Sequenced plan_of(const ir::Function& f) {
  Sequenced p;
  static_cast<Planned&>(p) = codegen_test::plan_of(f);
  p.sequences = scheduler::plan_block_sequences(p.plan, jit::sequence_kernel_threads(p.specs));
  return p;
}

// Kernels, copies and loops of steps [begin, end) of `list`, loop bodies included, in order.
void collect(const scheduler::ExecPlan& plan, const std::vector<Step>& list, size_t begin, size_t end,
             scheduler::BlockSequence& into) {
  for (size_t i = begin; i < end; ++i) {
    const Step& s = list[i];
    if (s.kind == Step::Kind::Launch) into.kernels.push_back(s.index);
    if (s.kind == Step::Kind::Copy) into.copies.push_back(&s);
    if (s.kind == Step::Kind::Loop) {
      into.loops.push_back(s.index);
      collect(plan, plan.loops[s.index].body, 0, plan.loops[s.index].body.size(), into);
    }
  }
}

void check_sequences(const Sequenced& pl, const std::string& what) {
  const scheduler::ExecPlan& plan = pl.plan;
  const std::vector<int> threads = jit::sequence_kernel_threads(pl.specs);
  std::set<std::pair<const std::vector<Step>*, size_t>> covered;
  for (const scheduler::BlockSequence& q : pl.sequences) {
    SCOPED_TRACE(what + ": sequence at step " + std::to_string(q.begin));
    ASSERT_NE(q.list, nullptr);
    ASSERT_LT(q.begin, q.end);
    ASSERT_LE(q.end, q.list->size());
    EXPECT_TRUE(q.end - q.begin >= 2 || (*q.list)[q.begin].kind == Step::Kind::Loop);
    if (q.list == &plan.steps) {  // never across the start of the commit phase
      EXPECT_FALSE(q.begin < plan.first_state_write && plan.first_state_write < q.end);
    }
    scheduler::BlockSequence want;
    collect(plan, *q.list, q.begin, q.end, want);
    EXPECT_EQ(q.kernels, want.kernels);
    EXPECT_EQ(q.copies, want.copies);
    EXPECT_EQ(q.loops, want.loops);
    EXPECT_LE(q.kernels.size(), scheduler::kSequenceMaxKernels);
    EXPECT_LE(q.copies.size(), scheduler::kSequenceMaxCopies);
    EXPECT_LE(q.loops.size(), scheduler::kSequenceMaxLoops);
    for (size_t k : q.kernels) {
      EXPECT_EQ(threads.at(k), q.threads) << pl.specs[k].name << ": one block size per sequence";
      EXPECT_EQ(pl.specs[k].launch.threads, q.threads) << pl.specs[k].name;
      EXPECT_FALSE(pl.specs[k].sequence_body.empty()) << pl.specs[k].name;
    }
    for (size_t l : q.loops) EXPECT_GE(plan.loops[l].max_trips, 0) << "loop " << l;
    for (size_t i = q.begin; i < q.end; ++i) {
      EXPECT_EQ(plan.step_pred((*q.list)[i]), q.pred) << "step " << i;
      EXPECT_TRUE(covered.insert({q.list, i}).second) << "step " << i << " is in two sequences";
    }
    // The source names every kernel's ops in its slot, and every loop's bound; never the entry (the
    // same run of kernels in two entries must be one source, built once).
    const std::string src = jit::block_sequence_source(plan, q, pl.specs);
    for (size_t i = 0; i < q.kernels.size(); ++i)
      EXPECT_NE(src.find("::grape_body(&kp[" + std::to_string(i) + "]);  // " +
                         jit::sequence_step_comment(pl.specs[q.kernels[i]].name) + "\n"),
                std::string::npos)
          << pl.specs[q.kernels[i]].name;
    for (size_t l : q.loops)
      EXPECT_NE(src.find("at most " + std::to_string(plan.loops[l].max_trips) + " trips"), std::string::npos);
    for (size_t k : q.kernels)
      EXPECT_EQ(src.find(pl.specs[k].name), std::string::npos)
          << "a kernel's full name in a sequence's source";
  }
}

const std::map<std::string, int64_t> kTiny = {{"L", 2},  {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64},
                                              {"T", 64}, {"N", 8},  {"H", 64}, {"I", 256}, {"D", 32}};

TEST(BlockSequences, InvariantsOnEveryExampleAndControlFlowCase) {
  for (const char* file : {"examples/gpt2.grp", "examples/bert.grp", "examples/mlp.grp"}) {
    auto c = compile_file(file, kTiny);
    ASSERT_TRUE(c->mod);
    for (const auto& f : c->mod->functions) check_sequences(plan_of(f), std::string(file) + " " + f.name);
  }
  for (const auto& e : fs::directory_iterator(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    auto c = compile_text(e.path().string(), read(e.path()));
    if (!c->mod) continue;
    for (const auto& f : c->mod->functions) check_sequences(plan_of(f), e.path().filename().string());
  }
}

// GPT-2 beam search at its real size: the scan over the 2 x NB candidates (a device loop of 21
// small kernels and 10 copies, `for j in 0..2*NB`) runs whole inside one sequence.
TEST(BlockSequences, BeamSearchScanIsOneSequence) {
  auto c = compile_file("examples/gpt2.grp");
  ASSERT_TRUE(c->mod);
  const ir::Function* beam = nullptr;
  for (const auto& f : c->mod->functions)
    if (f.name == "beam_search") beam = &f;
  ASSERT_NE(beam, nullptr);
  const Sequenced pl = plan_of(*beam);
  const scheduler::BlockSequence* scan = nullptr;
  for (const auto& q : pl.sequences)
    if (!q.loops.empty() && pl.plan.loops[q.loops[0]].max_trips == 10) scan = &q;
  ASSERT_NE(scan, nullptr) << "no sequence holds the scan (a loop of 10 trips)";
  ASSERT_EQ(scan->loops.size(), 1u);
  const scheduler::LoopPlan& l = pl.plan.loops[scan->loops[0]];
  EXPECT_EQ(l.max_trips, 10);
  EXPECT_GE(scan->kernels.size(), 20u);
  EXPECT_GE(scan->copies.size(), 10u);
  // With its initial values: `zeros` is never predicated, so none of those copies carries the
  // predicate after `if S + t > T { break }` (a copy under another predicate ends a sequence).
  size_t inits = 0;
  for (size_t i = scan->begin; i < scan->end; ++i) {
    const Step& st = (*scan->list)[i];
    if (st.kind != Step::Kind::Copy) continue;
    if (std::find(l.carried.begin(), l.carried.end(), st.dst) != l.carried.end()) ++inits;
  }
  EXPECT_EQ(inits, l.carried.size()) << "every carried value's initial copy is in the scan's sequence";
  // The loop after the search (`for b in 0..NB`) runs in one too.
  bool finalize = false;
  for (const auto& q : pl.sequences)
    for (size_t l : q.loops) finalize = finalize || pl.plan.loops[l].max_trips == 5;
  EXPECT_TRUE(finalize);
  // The decode step's matrix products, attention and the cache reorder (large) are in none.
  for (const auto& q : pl.sequences)
    for (size_t k : q.kernels) {
      const jit::LaunchRule& r = pl.specs[k].launch;
      EXPECT_NE(r.kind, jit::LaunchRule::MatrixProduct) << pl.specs[k].name;
      EXPECT_NE(r.kind, jit::LaunchRule::Attention) << pl.specs[k].name;
    }
}

// The program of GPU test BlockSequences.StaticLoopWithBreakRunsInsideOneLaunch: its loop (a
// static bound, a `break`, an update at a dynamic index) is inside a sequence, and a run of the
// plan launches at most three kernels or sequences.
TEST(BlockSequences, StaticLoopWithBreakIsInsideASequence) {
  auto c = compile_text("static_loop.grp", test_programs::kStaticLoop);
  ASSERT_TRUE(c->mod);
  const Sequenced pl = plan_of(c->mod->functions.at(0));
  check_sequences(pl, "static_loop");
  size_t units = 0;
  for (size_t i = 0; i < pl.plan.steps.size(); ++i) {
    const scheduler::BlockSequence* in = nullptr;
    for (const auto& q : pl.sequences)
      if (q.list == &pl.plan.steps && q.begin == i) in = &q;
    ASSERT_TRUE(in || pl.plan.steps[i].kind != Step::Kind::Loop) << pl.plan.str();
    ++units;
    if (in) i = in->end - 1;
  }
  EXPECT_LE(units, 3u) << pl.plan.str();
}

TEST(BlockSequences, WhichKernelsFitAndWhenTheyAreSmallEnough) {
  jit::LaunchRule r;
  r.kind = jit::LaunchRule::Elementwise;
  r.items = {ir::Dim::sym("B"), ir::Dim(256)};
  EXPECT_TRUE(scheduler::fits_block_sequence(r));
  EXPECT_TRUE(scheduler::small_for_block_sequence(r, {{"B", 4}}));   // 1024 elements: 4 blocks alone
  EXPECT_FALSE(scheduler::small_for_block_sequence(r, {{"B", 5}}));  // 5 blocks alone
  r.threads = 1024;
  EXPECT_FALSE(scheduler::fits_block_sequence(r));
  r.threads = 128;
  EXPECT_TRUE(scheduler::fits_block_sequence(r));
  r.threads = 256;
  r.kind = jit::LaunchRule::Rows;
  r.items = {ir::Dim(3)};
  EXPECT_TRUE(scheduler::small_for_block_sequence(r, {}));
  r.topk_k = 4;  // a top-k may split its rows over blocks (scratch)
  EXPECT_FALSE(scheduler::fits_block_sequence(r));
  r.topk_k = 0;
  r.kind = jit::LaunchRule::MatrixProduct;
  EXPECT_FALSE(scheduler::fits_block_sequence(r));
}

// bench/overhead's chain of softmax kernels (rows of a runtime count, a warp per row: 128-thread
// blocks): sequences of at most 64 kernels, small enough for 8 rows, not for 1024.
TEST(BlockSequences, ChainOfRuntimeSizedKernelsIsDecidedAtTheBinding) {
  auto c = compile_file("bench/overhead/overhead.grp");
  ASSERT_TRUE(c->mod);
  const Sequenced pl = plan_of(c->mod->functions.back());
  check_sequences(pl, "overhead");
  ASSERT_FALSE(pl.sequences.empty());
  std::vector<jit::LaunchRule> rules;
  for (const auto& k : pl.specs) rules.push_back(k.launch);
  size_t kernels = 0;
  for (const auto& q : pl.sequences) {
    EXPECT_EQ(q.threads, 128);
    kernels += q.kernels.size();
    EXPECT_TRUE(scheduler::sequence_small_enough(pl.plan, q, rules, {{"B", 8}}));
    EXPECT_FALSE(scheduler::sequence_small_enough(pl.plan, q, rules, {{"B", 1024}}));
  }
  EXPECT_EQ(kernels, pl.specs.size()) << "every softmax is in a sequence";
  EXPECT_LE(pl.sequences.size(), 2u);
}

TEST(BlockSequences, BodyIsTheGlueAsADeviceFunction) {
  const std::string header = jit::detail::kernel_header(jit::kKernelSymbol);
  const std::string glue = "// add, 1 op(s)\nstruct Ops {};\n" + header + "  const long long n = 4LL;\n}\n";
  const std::string body = jit::sequence_body(glue, 256);
  EXPECT_NE(body.find("__device__ __noinline__ void grape_body(const KParams* const p) {\n"
                      "  if (p->pred && !*p->pred) return;\n  const long long n = 4LL;\n}\n"),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("__global__"), std::string::npos);
  EXPECT_EQ(body.find("GRAPE_GRID_WAIT"), std::string::npos) << "the sequence waits once, at its start";
  EXPECT_EQ(body.find("struct Ops {};"), glue.find("struct Ops {};"));
  EXPECT_EQ(jit::sequence_body(glue, 128), "") << "the header says 256 threads";
  const std::string glue128 =
      "struct Ops {};\n" + jit::detail::kernel_header(jit::kKernelSymbol, "128") + "}\n";
  EXPECT_NE(jit::sequence_body(glue128, 128), "");
  EXPECT_EQ(jit::sequence_body(glue128, 512), "") << "only 128 and 256 threads";
  EXPECT_NE(jit::sequence_body(glue + "// grape_ldg_f32(p->buf[0], 0)\n", 256), "")
      << "the prelude's read-only loads are plain loads in a sequence";
  EXPECT_EQ(jit::sequence_body(glue + "// __ldg\n", 256), "") << "a read-only load of its own";
  EXPECT_EQ(jit::sequence_body(glue + header + "}\n", 256), "") << "two entry points";
  EXPECT_EQ(jit::sequence_body("#define X 1\n" + glue, 256), "");
  EXPECT_EQ(jit::sequence_body("struct Ops {};\n", 256), "") << "no entry point";
  // One block of `threads`: the grid-stride loop's stride and start are constants.
  const std::string loop =
      "  for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n;"
      " gi += (long long)gridDim.x * blockDim.x) {}\n";
  const std::string strided = jit::sequence_body(glue.substr(0, glue.size() - 2) + loop + "}\n", 256);
  const std::string want =
      "for (long long gi = (long long)0u * 256u + threadIdx.x; gi < n; gi += (long long)1u * 256u)";
  EXPECT_NE(strided.find(want), std::string::npos) << strided;
  for (const char* builtin : {"blockIdx", "gridDim", "blockDim"})
    EXPECT_EQ(strided.find(builtin), std::string::npos) << builtin << " in\n" << strided;
  const std::string strided128 = jit::sequence_body(
      "struct Ops {};\n" + jit::detail::kernel_header(jit::kKernelSymbol, "128") + loop + "}\n", 128);
  EXPECT_NE(strided128.find("gi += (long long)1u * 128u)"), std::string::npos) << strided128;
}

// The same run of kernels in two entries is one source: gpt2's decode step inside generate and
// beam_search, its prefill inside both. Sources that named their entry's kernels were 131
// distinct NVRTC builds for 31 different programs (cold build 6.9 -> 14.2 s on 16 cores, run 125).
TEST(BlockSequences, SameRunInTwoEntriesIsOneSource) {
  auto c = compile_file("examples/gpt2.grp");
  ASSERT_TRUE(c->mod);
  std::set<std::string> distinct;
  size_t total = 0;
  for (const auto& f : c->mod->functions) {
    const Sequenced pl = plan_of(f);
    for (const scheduler::BlockSequence& q : pl.sequences) {
      distinct.insert(jit::block_sequence_source(pl.plan, q, pl.specs));
      ++total;
    }
  }
  // 69: 93 since the cache writes of a layer are one kernel (sibling updates), 24 fewer since
  // beam_decode's and generate's new cache rows are views read by the update itself (their
  // per-layer permutes were sequences of their own, twelve alike in each entry).
  EXPECT_GT(total, 60u);
  EXPECT_LT(distinct.size() * 2, total) << distinct.size() << " distinct sources of " << total;
  // Every source starts with the same CUDA headers, nothing before them: NVRTC's precompiled
  // header covers only that prefix (a define ahead of it made each sequence parse the headers
  // again).
  const std::string headers = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>\n";
  for (const std::string& src : distinct) EXPECT_EQ(src.compare(0, headers.size(), headers), 0);
  const std::string kernel = jit::assemble_kernel_source({}, "// glue\n");
  EXPECT_EQ(kernel.compare(0, headers.size(), headers), 0);
  EXPECT_EQ(jit::wide_variant_source(kernel).compare(0, headers.size(), headers), 0);
  EXPECT_NE(jit::wide_variant_source(kernel).find(std::string("#define ") + jit::kWideDefine),
            std::string::npos);
  EXPECT_EQ(jit::sequence_step_comment("beam_search_k12_add_select"), "add_select");
  EXPECT_EQ(jit::sequence_step_comment("my_kernel_entry_k3_topk"), "topk");
  EXPECT_EQ(jit::sequence_step_comment("odd"), "odd");
}

// Storages each kernel's buffers and predicate use (what DeviceProgram gives sequence_locals).
std::vector<std::vector<int>> kernel_storages(const Sequenced& pl) {
  std::vector<std::vector<int>> out(pl.specs.size());
  for (size_t k = 0; k < pl.specs.size(); ++k) {
    for (ir::ValueId v : pl.specs[k].buffers) out[k].push_back(pl.plan.storage(v));
    if (pl.plan.kernel_pred[k] != ir::kNoValue) out[k].push_back(pl.plan.storage(pl.plan.kernel_pred[k]));
  }
  return out;
}

// Every storage a step list uses, loop bodies included, counted per storage; steps [skip_begin,
// skip_end) of `skip_list` left out.
void count_uses(const Sequenced& pl, const std::vector<std::vector<int>>& ks, const std::vector<Step>& list,
                const std::vector<Step>* skip_list, size_t skip_begin, size_t skip_end,
                std::map<int, int>& n) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (&list == skip_list && i >= skip_begin && i < skip_end) continue;
    const Step& s = list[i];
    if (s.kind == Step::Kind::Launch)
      for (int st : ks[s.index]) ++n[st];
    if (s.kind == Step::Kind::Copy) {
      ++n[s.dst];
      ++n[s.src];
      if (s.pred != ir::kNoValue) ++n[pl.plan.storage(s.pred)];
    }
    if (s.kind == Step::Kind::Loop) {
      const scheduler::LoopPlan& l = pl.plan.loops[s.index];
      ++n[l.init_cond];
      ++n[l.cond];
      for (int c : l.carried) ++n[c];
      count_uses(pl, ks, l.body, skip_list, skip_begin, skip_end, n);
    }
  }
}

// A sequence's locals are arena intermediates that nothing outside it uses, never an entry's
// input or result; the overhead chain keeps every softmax's result but the last in shared memory,
// in a few slots (each lives two steps).
TEST(BlockSequences, LocalsLiveOnlyInsideTheirSequence) {
  size_t with_locals = 0;
  // (Sequences point into their plan: each program is checked where plan_of left it.)
  auto check = [&](const Sequenced& pl, const std::string& what) {
    const auto ks = kernel_storages(pl);
    for (const scheduler::BlockSequence& q : pl.sequences) {
      const std::vector<scheduler::SequenceLocal> locals = scheduler::sequence_locals(pl.plan, q, ks);
      with_locals += !locals.empty();
      std::map<int, int> outside;
      count_uses(pl, ks, pl.plan.steps, q.list, q.begin, q.end, outside);
      for (const scheduler::SequenceLocal& l : locals) {
        SCOPED_TRACE(what + ", storage " + std::to_string(l.storage));
        const scheduler::Storage& st = pl.plan.storages.at(static_cast<size_t>(l.storage));
        EXPECT_EQ(st.kind, scheduler::StorageKind::Arena);
        EXPECT_LT(st.input, 0);
        EXPECT_EQ(std::count(pl.plan.outputs.begin(), pl.plan.outputs.end(), l.storage), 0);
        EXPECT_EQ(outside[l.storage], 0) << "used outside the sequence";
        EXPECT_LE(l.first, l.last);
      }
    }
  };
  for (const char* file : {"examples/gpt2.grp", "bench/overhead/overhead.grp"}) {
    auto c = compile_file(file);
    ASSERT_TRUE(c->mod);
    for (const auto& f : c->mod->functions) check(plan_of(f), std::string(file) + " " + f.name);
  }
  for (const auto& e : fs::directory_iterator(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    auto c = compile_text(e.path().string(), read(e.path()));
    if (!c->mod) continue;
    for (const auto& f : c->mod->functions) check(plan_of(f), e.path().filename().string());
  }
  EXPECT_GT(with_locals, 10u);

  auto c = compile_file("bench/overhead/overhead.grp");
  const Sequenced pl = plan_of(c->mod->functions.back());
  const auto ks = kernel_storages(pl);
  size_t locals = 0;
  for (const scheduler::BlockSequence& q : pl.sequences) {
    const auto l = scheduler::sequence_locals(pl.plan, q, ks);
    locals += l.size();
    for (const auto& x : l) EXPECT_LE(x.last - x.first, 1u) << "written by one step, read by the next";
    size_t total = 0;
    const auto offsets =
        scheduler::place_sequence_locals(l, std::vector<size_t>(l.size(), 2048), 32768, &total);
    EXPECT_LE(total, 2u * 2048) << "two slots, used in turn";
    EXPECT_EQ(std::count(offsets.begin(), offsets.end(), SIZE_MAX), 0);
  }
  // 100 softmaxes in two sequences: the input, the last result and the one between the
  // sequences are not local.
  EXPECT_EQ(locals, 98u);
}

TEST(BlockSequences, LocalsShareSharedMemoryOnlyWhenTheirLivesDoNotOverlap) {
  using scheduler::SequenceLocal;
  const std::vector<SequenceLocal> l = {{1, 0, 2}, {2, 1, 3}, {3, 3, 5}, {4, 4, 4}, {5, 6, 6}};
  size_t total = 0;
  const auto off = scheduler::place_sequence_locals(l, {100, 40, 16, 1, 5000}, 4096, &total);
  EXPECT_EQ(off[0], 0u);
  EXPECT_EQ(off[1], 112u) << "overlaps the first (steps 1-2); 100 bytes round to 112";
  EXPECT_EQ(off[2], 0u) << "the first is dead from step 3";
  EXPECT_EQ(off[3], 16u) << "beside the third, clear of the second (1-3)";
  EXPECT_EQ(off[4], SIZE_MAX) << "over the budget: stays in global memory";
  EXPECT_EQ(total, 160u);
  for (size_t o : off) EXPECT_TRUE(o == SIZE_MAX || o % 16 == 0) << o;
}

TEST(BlockSequences, OffSwitch) {
  auto c = compile_file("examples/gpt2.grp", kTiny);
  ASSERT_TRUE(c->mod);
  const ir::Function* beam = nullptr;
  for (const auto& f : c->mod->functions)
    if (f.name == "beam_search") beam = &f;
  ASSERT_NE(beam, nullptr);
  const scheduler::FusionPlan fusion = scheduler::plan_fusion(*beam);
  const auto specs = jit::emit_kernels(*beam, fusion, beam->name);
  EXPECT_FALSE(jit::block_sequence_sources(*beam, fusion, specs).empty());
  setenv("GRAPE_SEQUENCES", "0", 1);
  EXPECT_FALSE(scheduler::block_sequences_enabled());
  EXPECT_TRUE(jit::block_sequence_sources(*beam, fusion, specs).empty());
  unsetenv("GRAPE_SEQUENCES");
  EXPECT_TRUE(scheduler::block_sequences_enabled());
}

}  // namespace
}  // namespace grape
