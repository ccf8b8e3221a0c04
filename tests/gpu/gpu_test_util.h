// Helpers shared by the GPU tests (tests/gpu/*_test.cpp): where the repository is, whether a GPU
// is here (tests skip with a message when not), seeded sample tensors, and the comparison of a GPU
// result with the CPU reference (relative L2 <= 1e-4 for f32, <= 1e-2 for f16/bf16, exact for
// integers and bools; NaN where the CPU has NaN, the same infinity where it has one).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "jit/cuda_driver.h"
#include "runtime/model.h"

namespace grape::gpu_test {

// The whole text of a file ("" when it cannot be read): the control-flow cases' sources.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The repository root: $GRAPE_SOURCE_DIR when the binary runs away from where it was built (the
// lent GPU machine), else the build's source tree.
inline std::string source_dir() {
  const char* env = std::getenv("GRAPE_SOURCE_DIR");
  return env ? env : GRAPE_SOURCE_DIR;
}

inline bool have_gpu(std::string* why) {
  if (!jit::driver_available(why)) return false;
  if (jit::Device::count() == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

#define REQUIRE_GPU()                                                                      \
  do {                                                                                     \
    std::string why;                                                                       \
    if (!::grape::gpu_test::have_gpu(&why)) GTEST_SKIP() << "no GPU here (" << why << ")"; \
  } while (0)

// Small seeded values: integers for int dtypes, k/8 for floats (exact in every float dtype),
// random for bool.
inline Tensor sample(DType t, const Shape& shape, uint32_t seed, int64_t int_range = 4) {
  Tensor x(t, shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t r = static_cast<int64_t>(rng() % 17) - 8;
    if (t == DType::Bool)
      x.set(i, (rng() % 2) != 0);
    else if (is_int(t))
      x.set_int(i, std::abs(r) % int_range);
    else
      x.set(i, r / 8.0);
  }
  return x;
}

inline void expect_close(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  if (!is_float(cpu.dtype())) {
    for (int64_t i = 0; i < cpu.numel(); ++i)
      ASSERT_EQ(cpu.get_int(i), gpu.get_int(i)) << what << " element " << i;
    return;
  }
  double num = 0, den = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double a = cpu.get(i), b = gpu.get(i);
    if (std::isnan(a) || std::isnan(b)) {
      ASSERT_EQ(std::isnan(a), std::isnan(b)) << what << " element " << i;
      continue;
    }
    // Infinities must match exactly (inf - inf would make the L2 error NaN: log_softmax of -inf).
    if (std::isinf(a) || std::isinf(b)) {
      ASSERT_EQ(a, b) << what << " element " << i;
      continue;
    }
    num += (a - b) * (a - b);
    den += a * a;
  }
  double rel = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  double tol = cpu.dtype() == DType::F32 ? 1e-4 : 1e-2;
  EXPECT_LE(rel, tol) << what << ": relative L2 error " << rel;
}

using Inputs = std::vector<std::pair<std::string, Tensor>>;

// examples/gpt2.grp at the tiny sizes of examples/README.md, random weights (seed 3).
inline std::shared_ptr<Model> tiny_gpt2() {
  ModelOptions o;
  o.defines = {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}};
  auto m = Model::load_file(source_dir() + "/examples/gpt2.grp", o);
  m->set_random_weights(3);
  return m;
}

// decode_step of tiny_gpt2() at batch 5: one call's inputs, and three calls at cache positions 0,
// 1, 2 (each writes the KV cache where the next reads it).
inline Inputs decode_step_call(uint32_t seed, int32_t p) {
  return {{"tok", sample(DType::I32, {5}, seed, 128)}, {"p", Tensor::scalar_i32(p)}};
}
inline std::vector<Inputs> decode_step_calls() {
  return {decode_step_call(3, 0), decode_step_call(4, 1), decode_step_call(5, 2)};
}

// examples/mlp.grp at D = 32, H = 64, random weights (seed 1).
inline std::shared_ptr<Model> tiny_mlp() {
  ModelOptions o;
  o.defines = {{"D", 32}, {"H", 64}};
  auto m = Model::load_file(source_dir() + "/examples/mlp.grp", o);
  m->set_random_weights(1);
  return m;
}

// Inputs for call `call` of an entry with the given signature: constant dims as declared, every
// symbolic dim `symbolic`, values from sample() seeded by the call and the parameter.
inline Inputs sample_inputs(const std::vector<TensorSignature>& sigs, uint32_t call, int64_t symbolic) {
  Inputs in;
  for (const auto& sig : sigs) {
    Shape shape;
    for (const auto& d : sig.dims)
      shape.push_back(std::isdigit(static_cast<unsigned char>(d[0])) ? std::stoll(d) : symbolic);
    in.emplace_back(sig.name, sample(sig.dtype, shape, 100 * call + static_cast<uint32_t>(in.size()), 6));
  }
  return in;
}

// Runs `calls` on a CPU session and a CUDA session with `executor`; compares every output and, at
// the end, every state. `after_call(stats, at)` checks each CUDA run's statistics (`at` names the
// call in messages).
inline void compare_with_cpu(
    const std::shared_ptr<Model>& m, const std::string& entry, const std::vector<Inputs>& calls,
    const std::string& executor, const std::string& what,
    const std::function<void(const RunStats&, const std::string&)>& after_call = {}) {
  Session cpu(m, SessionOptions{entry, "cpu", "auto", 0});
  Session gpu(m, SessionOptions{entry, "cuda", executor, 0});
  ASSERT_EQ(gpu.executor(), executor);
  for (size_t c = 0; c < calls.size(); ++c) {
    const std::string at = what + " (" + executor + ") call " + std::to_string(c);
    auto a = cpu.run(calls[c]);
    auto b = gpu.run(calls[c]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], at + " out" + std::to_string(i));
    if (after_call) after_call(gpu.last_run_stats(), at);
  }
  for (const auto& s : cpu.states()) {
    Tensor a = cpu.state(s.name), b = gpu.state(s.name);
    if (a.defined() || b.defined()) expect_close(a, b, what + " (" + executor + ") state " + s.name);
  }
}

}  // namespace grape::gpu_test
