// The mono executor (runtime/cuda/mono_executor.h: a whole entry as one persistent kernel) against
// the CPU reference: the control-flow cases it accepts (those without device loops), the MLP with
// changing shapes, GPT-2's decode step writing its KV cache across calls; one launch and no host
// synchronisation per call; and clear refusals of entries with device loops or kernels of two
// block sizes. Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

// Compares with the CPU; each call must be one launch with no host synchronisation.
void compare_mono(const std::shared_ptr<Model>& m, const std::string& entry, const std::vector<Inputs>& calls,
                  const std::string& what) {
  compare_with_cpu(m, entry, calls, "mono", what, [](const RunStats& st, const std::string& at) {
    EXPECT_EQ(st.kernels, 1) << at;
    EXPECT_EQ(st.host_syncs, 0) << at;
  });
}

TEST(MonoExecutor, ControlFlowCasesWithoutDeviceLoops) {
  REQUIRE_GPU();
  int ran = 0, refused = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto m = Model::load_source(read_text(e.path().string()), e.path().string());
    try {
      Session probe(m, SessionOptions{"main", "cuda", "mono", 0});
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::Unsupported) << err.what();
      EXPECT_NE(std::string(err.what()).find("device loops"), std::string::npos) << err.what();
      ++refused;
      continue;
    }
    Session probe(m, "main");
    std::vector<Inputs> calls;
    for (uint32_t c = 0; c < 3; ++c) calls.push_back(sample_inputs(probe.inputs(), c, c == 1 ? 4 : 3));
    if (!probe.states().empty())
      for (auto& call : calls) call = calls[0];
    compare_mono(m, "main", calls, e.path().filename().string());
    ++ran;
  }
  std::cout << "mono: " << ran << " control-flow cases ran, " << refused << " refused (device loops)\n";
  // Most cases loop; those that do not (straight code, if/else) must run.
  EXPECT_GE(ran, 2);
}

TEST(MonoExecutor, MlpWithChangingRows) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  compare_mono(m, "main",
               {{{"x", sample(DType::F16, {3, 32}, 1)}},
                {{"x", sample(DType::F16, {7, 32}, 2)}},
                {{"x", sample(DType::F16, {3, 32}, 3)}}},
               "mlp");
}

// BERT's and GPT-2 prefill's attention kernels run 128-thread blocks beside 256-thread products:
// refused at the first run, naming the kernel (the executor runs one block size).
TEST(MonoExecutor, MixedBlockSizesAreRefusedWithTheKernelNamed) {
  REQUIRE_GPU();
  ModelOptions o;
  o.defines = {{"L", 2}, {"H", 64}, {"NH", 4}, {"I", 256}, {"V", 128}, {"P", 64}};
  auto m = Model::load_file(source_dir() + "/examples/bert.grp", o);
  m->set_random_weights(4);
  Tensor mask(DType::Bool, {2, 6});
  for (int64_t i = 0; i < 12; ++i) mask.set(i, i % 6 < 4 + (i / 6));
  Session s(m, SessionOptions{"forward", "cuda", "mono", 0});
  try {
    s.run({{"ids", sample(DType::I32, {2, 6}, 8, 128)}, {"mask", mask}});
    FAIL() << "a program of 128- and 256-thread kernels ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("one block size"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel forward_k"), std::string::npos) << msg;
  }
}

// decode_step writes the KV cache (states) in place on every call: later calls read what earlier
// ones wrote.
TEST(MonoExecutor, Gpt2DecodeSteps) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  compare_mono(m, "decode_step", decode_step_calls(), "gpt2 decode_step");
}

TEST(MonoExecutor, EntriesWithDeviceLoopsAreRefusedAtCreation) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  try {
    Session s(m, SessionOptions{"generate", "cuda", "mono", 0});
    FAIL() << "generate (a device loop) was accepted by the mono executor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("generate"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--executor graph"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace grape
