// Many threads, each with its own session of one shared model, running concurrently; and weights
// replaced while sessions are being created and run (sessions keep the snapshot they started with).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "grape.h"
#include "model_source.h"

namespace {

// Runs main(x, scale) once; returns out1 (row sums) or an empty vector with `error` set.
std::vector<float> run_once(grp_session* s, const std::vector<float>& x, float scale, std::string& error) {
  const int64_t shape[2] = {static_cast<int64_t>(x.size() / 3), 3};
  grp_error* e = grp_session_set_input(s, "x", GRP_F32, shape, 2, x.data(), x.size() * sizeof(float));
  if (!e) e = grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &scale, sizeof scale);
  if (!e) e = grp_session_run(s);
  const void* data = nullptr;
  size_t nbytes = 0;
  if (!e) e = grp_session_get_output(s, 1, nullptr, nullptr, nullptr, &data, &nbytes);
  if (e) {
    error = grp_error_message(e);
    grp_error_free(e);
    return {};
  }
  const float* f = static_cast<const float*>(data);
  return std::vector<float>(f, f + nbytes / sizeof(float));
}

TEST(CapiThreads, ManySessionsOfOneModel) {
  grp_model* m = nullptr;
  ASSERT_EQ(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t.grp", nullptr, &m), nullptr);
  ASSERT_EQ(grp_model_set_random_weights(m, 3), nullptr);

  // The reference: one session, single-threaded.
  constexpr int kThreads = 8, kRuns = 40;
  auto input = [](int t, int r) {
    std::vector<float> x(static_cast<size_t>(3 * (1 + (t + r) % 4)));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(t) - static_cast<float>(r) * 0.5f + static_cast<float>(i);
    return x;
  };
  std::vector<std::vector<std::vector<float>>> expected(kThreads);
  {
    grp_session* s = nullptr;
    ASSERT_EQ(grp_session_create(m, nullptr, &s), nullptr);
    std::string err;
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < kRuns; ++r) expected[t].push_back(run_once(s, input(t, r), 1.0f + t, err));
    ASSERT_TRUE(err.empty()) << err;
    grp_session_destroy(s);
  }

  std::atomic<int> failures{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      grp_session* s = nullptr;
      grp_error* e = grp_session_create(m, nullptr, &s);
      if (e) {
        errors[t] = grp_error_message(e);
        grp_error_free(e);
        ++failures;
        return;
      }
      for (int r = 0; r < kRuns; ++r) {
        // Every few runs a rejected call, which must not disturb the session.
        if (r % 7 == 0) {
          grp_error* bad = grp_session_set_input(s, "nope", GRP_F32, nullptr, 0, nullptr, 0);
          if (grp_error_code(bad) != GRP_ERR_INVALID_ARGUMENT) ++failures;
          grp_error_free(bad);
        }
        auto got = run_once(s, input(t, r), 1.0f + t, errors[t]);
        if (got != expected[t][static_cast<size_t>(r)]) ++failures;
      }
      grp_session_destroy(s);
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) EXPECT_TRUE(e.empty()) << e;
  EXPECT_EQ(failures.load(), 0);
  grp_model_destroy(m);
}

TEST(CapiThreads, WeightsReplacedWhileSessionsRun) {
  grp_model* m = nullptr;
  ASSERT_EQ(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t.grp", nullptr, &m), nullptr);
  ASSERT_EQ(grp_model_set_random_weights(m, 0), nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread writer([&] {
    for (uint64_t seed = 1; !stop; ++seed) {
      grp_error* e = grp_model_set_random_weights(m, seed % 5);
      if (e) ++failures;
      grp_error_free(e);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      std::string err;
      for (int r = 0; r < 30; ++r) {
        grp_session* s = nullptr;
        grp_error* e = grp_session_create(m, nullptr, &s);
        if (e) {
          ++failures;
          grp_error_free(e);
          continue;
        }
        // One session, one snapshot: two runs agree even while the weights change.
        std::vector<float> x = {1, 2, 3};
        auto a = run_once(s, x, 1.0f, err), b = run_once(s, x, 1.0f, err);
        if (a.empty() || a != b) ++failures;
        grp_session_destroy(s);
      }
    });
  for (auto& th : readers) th.join();
  stop = true;
  writer.join();
  EXPECT_EQ(failures.load(), 0);
  grp_model_destroy(m);
}

}  // namespace
