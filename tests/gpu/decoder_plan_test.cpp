// The mono executor's decoder plan (runtime/cuda/decoder_plan.h: a GPT-2 small decode step as one
// kernel of two cluster-partitioned stages a layer) against the CPU reference: examples/gpt2.grp at
// GPT-2 small's widths (2 layers, a 1000-token vocabulary, a 64-position cache, random weights),
// decode_step at 1, 5 and 8 rows over positions that reach the end of the cache, every run taking
// the plan, and the `decode` and `beam_decode` forms (the position a state the plan reads and
// advances); runs it does not take (9 rows, a position outside the cache, other widths) run the
// general kernel, say why, and leave the cache the plan's next run reads. Every
// run's logits and, at the end, the caches are compared with the CPU's. Without a GPU of compute
// capability 9.0 every test skips with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

constexpr int64_t kVocab = 1000, kCache = 64;

std::shared_ptr<Model> small_width_gpt2(int64_t cache = kCache, int64_t vocab = kVocab) {
  ModelOptions o;
  o.defines = {{"L", 2}, {"V", vocab}, {"P", cache}, {"T", cache}, {"N", 8}};
  auto m = Model::load_file(source_dir() + "/examples/gpt2.grp", o);
  m->set_random_weights(7);
  return m;
}

Inputs step(int64_t rows, uint32_t seed, int32_t p, int64_t vocab = kVocab) {
  return {{"tok", sample(DType::I32, {rows}, seed, vocab)}, {"p", Tensor::scalar_i32(p)}};
}

// Sets an environment variable for its lifetime, then restores what was there (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// Runs `calls` of `entry` on the CPU and on `executor` (mono or auto); each CUDA run's plan must
// start with the matching `plans` entry ("decoder", "general (9 rows"; "" for auto's eager and
// graph runs, which auto must use exactly where the plan is not "decoder"). Outputs must be finite
// and close to the CPU's; so must every state at the end. `states` are set on both sessions first.
void compare_plans(const std::shared_ptr<Model>& m, const std::string& entry,
                   const std::vector<Inputs>& calls, const std::vector<std::string>& plans,
                   const std::string& what, const std::string& executor = "mono",
                   const std::map<std::string, Tensor>& states = {}) {
  ASSERT_EQ(calls.size(), plans.size());
  Session cpu(m, SessionOptions{entry, "cpu", "auto", 0});
  Session gpu(m, SessionOptions{entry, "cuda", executor, 0});
  for (const auto& [name, value] : states) {
    cpu.set_state(name, value);
    gpu.set_state(name, value);
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    const std::string at = what + " call " + std::to_string(c);
    auto a = cpu.run(calls[c]);
    auto b = gpu.run(calls[c]);
    const RunStats& st = gpu.last_run_stats();
    EXPECT_EQ(st.plan.rfind(plans[c], 0), 0u)
        << at << ": plan '" << st.plan << "', expected '" << plans[c] << "'";
    if (executor == "mono" || plans[c] == "decoder") {
      EXPECT_EQ(st.kernels, 1) << at;
    }
    if (executor == "auto") {
      EXPECT_EQ(st.executor == "mono", plans[c] == "decoder") << at << ": executor " << st.executor;
    }
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      for (int64_t e = 0; e < b[i].numel(); ++e)
        ASSERT_TRUE(std::isfinite(b[i].get(e))) << at << " element " << e;
      expect_close(a[i], b[i], at);
    }
  }
  for (const auto& s : cpu.states()) {
    Tensor a = cpu.state(s.name), b = gpu.state(s.name);
    if (a.defined() || b.defined()) expect_close(a, b, what + " state " + s.name);
  }
}

// The plan needs thread-block clusters: compute capability 9.0.
#define REQUIRE_CLUSTERS()                                                                          \
  do {                                                                                              \
    REQUIRE_GPU();                                                                                  \
    auto probe = small_width_gpt2();                                                                \
    Session s(probe, SessionOptions{"decode_step", "cuda", "mono", 0});                             \
    s.run(step(5, 1, 0));                                                                           \
    if (s.last_run_stats().plan.find("compute capability") != std::string::npos)                    \
      GTEST_SKIP() << "the decoder plan needs compute capability 9.0: " << s.last_run_stats().plan; \
  } while (0)

TEST(DecoderPlan, FiveRowsOverTheWholeCache) {
  REQUIRE_CLUSTERS();
  std::vector<Inputs> calls;
  std::vector<std::string> plans;
  for (int32_t p : {0, 1, 2, 3, 17, 33, 62, 63}) {
    calls.push_back(step(5, 10 + static_cast<uint32_t>(p), p));
    plans.push_back("decoder");
  }
  compare_plans(small_width_gpt2(), "decode_step", calls, plans, "5 rows");
}

// Past keys and values read from global memory (where they do not fit the ring beside the items:
// long caches, many rows) rather than from the ring: GRAPE_DECODER_KV_RING=0 forces that path.
TEST(DecoderPlan, PastKeysAndValuesFromGlobalMemory) {
  REQUIRE_CLUSTERS();
  ScopedEnv kv_ring("GRAPE_DECODER_KV_RING", "0");
  std::vector<Inputs> calls;
  for (int32_t p : {0, 1, 2, 40, 63}) calls.push_back(step(5, 30 + static_cast<uint32_t>(p), p));
  compare_plans(small_width_gpt2(), "decode_step", calls,
                {"decoder", "decoder", "decoder", "decoder", "decoder"},
                "keys and values from global memory");
}

// A layer step's rows come to a cluster's blocks as one multicast copy; GRAPE_DECODER_MULTICAST=0
// makes every block load them from L2 itself (the path lm_head's rows always take).
TEST(DecoderPlan, RowsLoadedByEveryBlockItself) {
  REQUIRE_CLUSTERS();
  ScopedEnv multicast("GRAPE_DECODER_MULTICAST", "0");
  std::vector<Inputs> calls;
  for (int32_t p : {0, 1, 40}) calls.push_back(step(5, 90 + static_cast<uint32_t>(p), p));
  compare_plans(small_width_gpt2(), "decode_step", calls, {"decoder", "decoder", "decoder"},
                "rows loaded by every block");
}

// Caches full of distinct keys and values (every position, every row and head), so that a key
// weighted as another, or a value read from the wrong position or dimension, shows (the other
// tests' caches hold only what their calls wrote): positions that fill the warps' 16-key slices,
// leave the last ragged, take a second pass of 128 keys, fill the ring (155 at 5 rows) and go past
// it (L2), and all from L2 (GRAPE_DECODER_KV_RING=0).
TEST(DecoderPlan, CachesFullOfDistinctKeys) {
  REQUIRE_CLUSTERS();
  auto m = small_width_gpt2(256);
  const std::map<std::string, Tensor> caches = {{"kc", sample(DType::F16, {2, 5, 12, 256, 64}, 501)},
                                                {"vc", sample(DType::F16, {2, 5, 12, 256, 64}, 502)}};
  for (const char* kv_ring : {"1", "0"}) {
    ScopedEnv ring("GRAPE_DECODER_KV_RING", kv_ring);
    for (int32_t p : {16, 17, 100, 129, 155, 156}) {
      compare_plans(m, "decode_step", {step(5, 40 + static_cast<uint32_t>(p), p)}, {"decoder"},
                    "full caches, position " + std::to_string(p) + ", kv_ring " + kv_ring, "mono", caches);
    }
  }
}

// A 256-position cache: the attention's warps take several passes of 128 keys (their running
// maxima rescaled between passes), the keys and values come from the ring up to kKvRing (155 at 5
// rows) and from L2 past it. Only the positions the calls write are in the cache; the others are
// zero on both sides.
TEST(DecoderPlan, ALongCacheOverSeveralPassesOfKeys) {
  REQUIRE_CLUSTERS();
  std::vector<Inputs> calls;
  std::vector<std::string> plans;
  for (int32_t p : {0, 1, 127, 128, 129, 155, 156, 200, 255}) {
    calls.push_back(step(5, 50 + static_cast<uint32_t>(p), p));
    plans.push_back("decoder");
  }
  compare_plans(small_width_gpt2(256), "decode_step", calls, plans, "a 256-position cache");
}

// lm_head's items split with the lm_head-only blocks taking more (GRAPE_DECODER_LM_EXTRA; at 157
// items over the grid, most blocks take one or none, so blocks with no lm_head item, or with
// only lm_head items, occur), and lm_head's items put into L2 a piece at a time
// (GRAPE_DECODER_LM_SPREAD): the same logits as the CPU's.
TEST(DecoderPlan, LmHeadSplitsAndPiecewisePrefetches) {
  REQUIRE_CLUSTERS();
  auto m = small_width_gpt2(kCache, 5000);
  for (const char* extra : {"-1", "0", "3"})
    for (const char* spread : {"0", "1"}) {
      ScopedEnv e("GRAPE_DECODER_LM_EXTRA", extra), sp("GRAPE_DECODER_LM_SPREAD", spread);
      compare_plans(m, "decode_step", {step(5, 70, 0), step(5, 71, 1), step(5, 72, 40)},
                    {"decoder", "decoder", "decoder"},
                    std::string("lm_head extra ") + extra + ", spread " + spread);
    }
}

// lm_head's items past each block's first F rounds claimed at run time (GRAPE_DECODER_LM_CLAIM):
// at 157 items over the grid, F = 0 leaves every item to the claims (lm_head-only blocks then
// start with an empty list, and their first claimed tile brings ln_f), F = 1 lists the first round
// and claims the rest, F = 2 lists them all (no item left to claim), -1 claims none (the kernel
// without the claims' code); a vocabulary of 40 (2 items) leaves most blocks none. The same logits as the
// CPU's, and the plan's next run starts from the other claim counter (each launch zeroes it).
TEST(DecoderPlan, LmHeadItemsClaimedAtRunTime) {
  REQUIRE_CLUSTERS();
  for (int64_t vocab : {5000, 40}) {
    auto m = small_width_gpt2(kCache, vocab);
    for (const char* rounds : {"-1", "0", "1", "2"}) {
      ScopedEnv e("GRAPE_DECODER_LM_CLAIM", rounds);
      compare_plans(
          m, "decode_step",
          {step(5, 70, 0, vocab), step(5, 71, 1, vocab), step(5, 72, 40, vocab), step(5, 73, 41, vocab)},
          {"decoder", "decoder", "decoder", "decoder"},
          "lm_head claimed past " + std::string(rounds) + " rounds, vocabulary " + std::to_string(vocab));
    }
  }
}

// Each block putting the next launch's step-0 item (and its row's past keys and values one position
// on) into L2 at its end (GRAPE_DECODER_PREFETCH_NEXT): nothing it reads changes, and the
// prefetches stay inside the weights and the caches (at the cache's last position too).
TEST(DecoderPlan, NextLaunchsFirstItemPrefetched) {
  REQUIRE_CLUSTERS();
  ScopedEnv e("GRAPE_DECODER_PREFETCH_NEXT", "1");
  compare_plans(small_width_gpt2(), "decode_step",
                {step(5, 80, 0), step(5, 81, 1), step(5, 82, 2), step(5, 83, kCache - 1)},
                {"decoder", "decoder", "decoder", "decoder"}, "next launch prefetched");
}

// A layer step's counter polled by each cluster's rank 0 alone, which copies the whole rows to the
// cluster (GRAPE_DECODER_ONE_POLLER), at 1, 5 and 8 rows (the copy's size) and with the rows loaded
// per block (multicast off: the switch then changes nothing).
TEST(DecoderPlan, OnePollerACluster) {
  REQUIRE_CLUSTERS();
  ScopedEnv e("GRAPE_DECODER_ONE_POLLER", "1");
  for (int64_t rows : {1, 5, 8})
    compare_plans(small_width_gpt2(), "decode_step",
                  {step(rows, 90, 0), step(rows, 91, 1), step(rows, 92, 40)},
                  {"decoder", "decoder", "decoder"}, "one poller, " + std::to_string(rows) + " rows");
  ScopedEnv m("GRAPE_DECODER_MULTICAST", "0");
  compare_plans(small_width_gpt2(), "decode_step", {step(5, 93, 3), step(5, 94, 4)}, {"decoder", "decoder"},
                "one poller, multicast off");
}

// The past keys and values copied into the ring with the L2 evict_first policy
// (GRAPE_DECODER_KV_EVICT_FIRST): the same results, the caches read as they are.
TEST(DecoderPlan, PastKeysAndValuesEvictedFirst) {
  REQUIRE_CLUSTERS();
  ScopedEnv e("GRAPE_DECODER_KV_EVICT_FIRST", "1");
  compare_plans(small_width_gpt2(), "decode_step", {step(5, 95, 0), step(5, 96, 1), step(5, 97, 30)},
                {"decoder", "decoder", "decoder"}, "keys and values evicted first");
}

// The first claimed lm_head items put into L2 as each layer block's last layer item is copied
// (GRAPE_DECODER_LM_LATE): at 157 items, with every item claimed (F = 0: the prefetches reach
// past the last item, which they must skip) and with one listed round (F = 1: items 120-156).
// The same logits as the CPU's: a prefetch moves no data a block reads.
TEST(DecoderPlan, ClaimedItemsIntoL2Late) {
  REQUIRE_CLUSTERS();
  ScopedEnv late("GRAPE_DECODER_LM_LATE", "2");
  auto m = small_width_gpt2(kCache, 5000);
  for (const char* rounds : {"0", "1"}) {
    ScopedEnv e("GRAPE_DECODER_LM_CLAIM", rounds);
    compare_plans(m, "decode_step", {step(5, 98, 0, 5000), step(5, 99, 1, 5000), step(5, 100, 40, 5000)},
                  {"decoder", "decoder", "decoder"},
                  "late lm_head prefetches, " + std::string(rounds) + " rounds");
  }
}

TEST(DecoderPlan, OneAndEightRows) {
  REQUIRE_CLUSTERS();
  for (int64_t rows : {1, 8}) {
    std::vector<Inputs> calls;
    for (int32_t p = 0; p < 4; ++p) calls.push_back(step(rows, 20 + static_cast<uint32_t>(p), p));
    compare_plans(small_width_gpt2(), "decode_step", calls, {"decoder", "decoder", "decoder", "decoder"},
                  std::to_string(rows) + " rows");
  }
}

// A position outside the cache runs the general kernel (the program clamps it); the plan's next run
// reads what that one wrote.
TEST(DecoderPlan, PositionsOutsideTheCacheTakeTheGeneralKernel) {
  REQUIRE_CLUSTERS();
  compare_plans(small_width_gpt2(), "decode_step", {step(5, 1, 0), step(5, 2, kCache + 3), step(5, 3, 1)},
                {"decoder", "general (position 67 is outside the cache", "decoder"}, "positions");
}

TEST(DecoderPlan, NineRowsTakeTheGeneralKernel) {
  REQUIRE_CLUSTERS();
  compare_plans(small_width_gpt2(), "decode_step", {step(9, 1, 0), step(9, 2, 1)},
                {"general (9 rows", "general (9 rows"}, "9 rows");
}

// `decode` keeps its position in a state: the plan reads it before the run and advances it after
// (the state must end equal to the CPU's). Once the state reaches the end of the cache the general
// kernel runs (the program clamps the position).
TEST(DecoderPlan, TheDecodeFormAdvancesItsPositionState) {
  REQUIRE_CLUSTERS();
  auto m = small_width_gpt2();
  auto tok = [](uint32_t seed) { return Inputs{{"tok", sample(DType::I32, {5}, seed, kVocab)}}; };
  compare_plans(m, "decode", {tok(1), tok(2), tok(3)}, {"decoder", "decoder", "decoder"}, "decode from 0");
  compare_plans(m, "decode", {tok(4), tok(5), tok(6), tok(7), tok(8)},
                {"decoder", "decoder", "decoder", "general (position 64 is outside the cache",
                 "general (position 65 is outside the cache"},
                "decode to the end of the cache", "mono", {{"pos", Tensor::scalar_i32(kCache - 3)}});
  compare_plans(m, "decode", {tok(9), tok(10)}, {"decoder", "decoder"}, "decode under auto", "auto",
                {{"pos", Tensor::scalar_i32(20)}});
}

// beam_decode: its rows are the NB beams, its position the state bpos.
TEST(DecoderPlan, BeamDecodeTakesIt) {
  REQUIRE_CLUSTERS();
  auto tok = [](uint32_t seed) { return Inputs{{"tok", sample(DType::I32, {5}, seed, kVocab)}}; };
  compare_plans(small_width_gpt2(), "beam_decode", {tok(1), tok(2), tok(3)},
                {"decoder", "decoder", "decoder"}, "beam_decode", "mono", {{"bpos", Tensor::scalar_i32(40)}});
}

TEST(DecoderPlan, OtherWidthsTakeTheGeneralKernel) {
  REQUIRE_CLUSTERS();
  compare_plans(tiny_gpt2(), "decode_step", {decode_step_call(3, 0), decode_step_call(4, 1)},
                {"general (the decoder kernel is written for GPT-2 small's widths",
                 "general (the decoder kernel is written for GPT-2 small's widths"},
                "tiny widths");
}

// The pace is measured at the first run (a fresh cache directory: nothing tuned yet) with the
// caches, logits and position pointed at scratch memory: after that run the caches hold exactly
// what the CPU's do (position 0 written, the rest zero, while measuring ran at position 63). The
// choice is one of the candidates, and a second session reads it from the tuning cache.
TEST(DecoderPlan, ThePaceIsTunedWithoutTouchingTheRun) {
  REQUIRE_CLUSTERS();
  char tmpl[] = "/tmp/grape-decoder-pace-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  ScopedEnv cache_dir("GRAPE_CACHE_DIR", tmpl);
  auto m = small_width_gpt2();
  std::string first;
  for (int session = 0; session < 2; ++session) {
    Session cpu(m, SessionOptions{"decode_step", "cpu", "auto", 0});
    Session gpu(m, SessionOptions{"decode_step", "cuda", "mono", 0});
    const Inputs call = step(5, 11, 0);
    auto a = cpu.run(call);
    auto b = gpu.run(call);
    expect_close(a[0], b[0], "pace session " + std::to_string(session));
    for (const char* state : {"kc", "vc"}) expect_close(cpu.state(state), gpu.state(state), state);
    const std::string plan = gpu.last_run_stats().plan;
    EXPECT_TRUE(plan == "decoder (pace 250 ns)" || plan == "decoder (pace 0 ns)" ||
                plan == "decoder (pace 150 ns)" || plan == "decoder (pace 400 ns)")
        << plan;
    if (session == 0) first = plan;
    EXPECT_EQ(plan, first) << "the second session did not take the cached pace";
  }
  std::filesystem::remove_all(tmpl);
}

// GRAPE_DECODER_PACE sets the pace without tuning.
TEST(DecoderPlan, APaceFromTheEnvironment) {
  REQUIRE_CLUSTERS();
  ScopedEnv pace("GRAPE_DECODER_PACE", "333");
  compare_plans(small_width_gpt2(), "decode_step", {step(5, 1, 0), step(5, 2, 1)},
                {"decoder (pace 333 ns)", "decoder (pace 333 ns)"}, "pace 333");
}

// Executor auto runs the calls the decoder plan takes on it, the others on eager or graph.
TEST(DecoderPlan, AutoTakesItWhereItApplies) {
  REQUIRE_CLUSTERS();
  compare_plans(small_width_gpt2(), "decode_step",
                {step(5, 1, 0), step(5, 2, 1), step(5, 3, kCache + 1), step(5, 4, 2)},
                {"decoder", "decoder", "", "decoder"}, "auto", "auto");
}

// GRAPE_MONO_TRACE=FILE under the decoder plan: after a run FILE holds one line a step (the 2 L
// layer steps, then lm_head) in order, each with its span and the medians of its phases, the
// stage's inner phases (A with the attention's split, B), the item's split, and a total that is
// the spans' sum; the logits match the CPU's as without it. An unwritable FILE is reported once on
// stderr and the run goes on.
TEST(DecoderPlan, TheTraceWritesAStepALine) {
  REQUIRE_CLUSTERS();
  char tmpl[] = "/tmp/grape-decoder-trace-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string file = std::string(tmpl) + "/trace.txt", stamps_file = std::string(tmpl) + "/stamps.txt";
  auto m = small_width_gpt2();
  Session cpu(m, SessionOptions{"decode_step", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"decode_step", "cuda", "mono", 0});
  {
    ScopedEnv trace("GRAPE_MONO_TRACE", file), stamps("GRAPE_MONO_TRACE_STAMPS", stamps_file);
    const Inputs in = step(5, 3, 20);
    auto a = cpu.run(in);
    auto b = gpu.run(in);
    ASSERT_EQ(gpu.last_run_stats().plan.rfind("decoder", 0), 0u) << gpu.last_run_stats().plan;
    expect_close(a.at(0), b.at(0), "traced run");
  }
  std::ifstream in(file);
  ASSERT_TRUE(in) << file << " was not written";
  std::string line;
  int next_step = 0;
  double spans = 0, total = -1;
  while (std::getline(in, line)) {
    if (line.rfind("# total ", 0) == 0) {
      total = std::stod(line.substr(8));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    int st = -1;
    double span = -1, wake = -1, item = -1, rows = -1, work = -1, work_max = -1;
    f >> st >> span >> wake >> item >> rows >> work >> work_max;
    ASSERT_FALSE(f.fail()) << line;
    EXPECT_EQ(st, next_step++) << line;
    EXPECT_GT(span, 0.0) << line;
    EXPECT_GE(wake, 0.0) << line;
    EXPECT_GE(item, 0.0) << line;
    EXPECT_GE(rows, 0.0) << line;
    EXPECT_GE(work_max, work) << line;
    EXPECT_NE(line.find("| item "), std::string::npos) << line;
    const bool lm_head = st == 4, stage_a = st % 2 == 0 && !lm_head;
    EXPECT_EQ(line.find("| A ") != std::string::npos, stage_a) << line;
    EXPECT_EQ(line.find("| attend ") != std::string::npos, stage_a) << line;
    EXPECT_EQ(line.find("| B ") != std::string::npos, !stage_a && !lm_head) << line;
    spans += span;
  }
  EXPECT_EQ(next_step, 5) << "2 layers: 4 layer steps and lm_head";
  EXPECT_GT(total, 0.0);
  EXPECT_NEAR(total, spans, 0.01 * total + 0.01);

  // GRAPE_MONO_TRACE_STAMPS: a line an item, its block, index and step, then its 13 stamps; every
  // item starts and ends, its end after its start, and the latest end of lm_head's items is the
  // trace's total.
  std::ifstream raw(stamps_file);
  ASSERT_TRUE(raw) << stamps_file << " was not written";
  int items = 0;
  long long last_end = 0;
  while (std::getline(raw, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    int block = -1, index = -1, st = -1;
    long long s[13];
    f >> block >> index >> st;
    for (long long& v : s) f >> v;
    ASSERT_FALSE(f.fail()) << line;
    std::string extra;
    EXPECT_FALSE(f >> extra) << "more than 13 stamps: " << line;
    EXPECT_GE(block, 0) << line;
    EXPECT_GE(index, 0) << line;
    EXPECT_TRUE(st >= 0 && st <= 4) << line;
    EXPECT_GT(s[4], 0) << line;
    EXPECT_GE(s[4], s[0]) << line;
    if (st == 4) last_end = std::max(last_end, s[4]);
    ++items;
  }
  EXPECT_GT(items, 4 * 8 * 12) << "every block of the 12 attention clusters has 4 layer items";
  EXPECT_NEAR(last_end / 1e3, total, 0.01 * total + 0.01);

  const std::string unwritable = std::string(tmpl) + "/no-such-directory/trace.txt";
  {
    ScopedEnv trace("GRAPE_MONO_TRACE", unwritable);
    testing::internal::CaptureStderr();
    const Inputs in = step(5, 4, 21);
    auto a = cpu.run(in);
    auto b = gpu.run(in);
    const std::string err = testing::internal::GetCapturedStderr();
    expect_close(a.at(0), b.at(0), "a run with an unwritable trace");
    EXPECT_NE(err.find("GRAPE_MONO_TRACE: cannot write '" + unwritable + "'"), std::string::npos) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(unwritable));
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace grape
