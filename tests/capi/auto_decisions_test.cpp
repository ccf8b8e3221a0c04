// The C API's view of executor "auto" where no GPU is needed: grp_run_stats.executor and
// .auto_state on the CPU backend, struct_size handling of the appended field, and
// grp_session_auto_decisions / _at with their argument errors (the CPU backend has no decisions).
// What auto decides on a GPU is tested in tests/gpu/auto_executor_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "capi_err.h"
#include "grape.h"
#include "model_source.h"

namespace {

grp_session* cpu_session(grp_model** m) {
  *m = nullptr;
  Err load(grp_model_load_source(kTestModel, std::strlen(kTestModel), "auto_test.grp", nullptr, m));
  EXPECT_TRUE(load.ok()) << load.msg();
  Err weights(grp_model_set_random_weights(*m, 1));
  EXPECT_TRUE(weights.ok()) << weights.msg();
  grp_session_options o = grp_session_default_options();
  o.backend = "cpu";
  grp_session* s = nullptr;
  Err create(grp_session_create(*m, &o, &s));
  EXPECT_TRUE(create.ok()) << create.msg();
  return s;
}

void run_once(grp_session* s) {
  float x[6] = {1, 2, 3, 4, 5, 6}, scale = 2;
  int64_t shape[2] = {2, 3};
  Err a(grp_session_set_input(s, "x", GRP_F32, shape, 2, x, sizeof x));
  ASSERT_TRUE(a.ok()) << a.msg();
  Err b(grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &scale, sizeof scale));
  ASSERT_TRUE(b.ok()) << b.msg();
  Err r(grp_session_run(s));
  ASSERT_TRUE(r.ok()) << r.msg();
}

TEST(CapiAuto, RunStatsOnTheCpuBackend) {
  grp_model* m = nullptr;
  grp_session* s = cpu_session(&m);
  ASSERT_NE(s, nullptr);
  run_once(s);
  grp_run_stats st;
  std::memset(&st, 0xff, sizeof st);
  st.struct_size = sizeof st;
  Err e(grp_session_last_run_stats(s, &st));
  ASSERT_TRUE(e.ok()) << e.msg();
  EXPECT_STREQ(st.executor, "cpu");
  ASSERT_NE(st.auto_state, nullptr);
  EXPECT_STREQ(st.auto_state, "");
  // A caller built before auto_state existed: the field is not written.
  grp_run_stats old;
  std::memset(&old, 0xab, sizeof old);
  old.struct_size = offsetof(grp_run_stats, auto_state);
  Err e2(grp_session_last_run_stats(s, &old));
  ASSERT_TRUE(e2.ok()) << e2.msg();
  EXPECT_STREQ(old.executor, "cpu");
  const char* untouched;
  std::memset(&untouched, 0xab, sizeof untouched);
  EXPECT_EQ(old.auto_state, untouched);
  grp_session_destroy(s);
  grp_model_destroy(m);
}

TEST(CapiAuto, NoDecisionsOnTheCpuBackend) {
  grp_model* m = nullptr;
  grp_session* s = cpu_session(&m);
  ASSERT_NE(s, nullptr);
  run_once(s);
  size_t count = 99;
  {
    Err e(grp_session_auto_decisions(s, &count));
    ASSERT_TRUE(e.ok()) << e.msg();
  }
  EXPECT_EQ(count, 0u);
  {
    Err e(grp_session_auto_decisions(s, nullptr));
    EXPECT_TRUE(e.ok()) << e.msg();
  }
  grp_auto_decision d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  {
    Err e(grp_session_auto_decision_at(s, 0, &d));
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(grp_error_code(e.e), GRP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(e.msg().find("out of range"), std::string::npos) << e.msg();
  }
  d.struct_size = sizeof(size_t);
  {
    Err e(grp_session_auto_decision_at(s, 0, &d));
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.msg().find("struct_size"), std::string::npos) << e.msg();
  }
  {
    Err e(grp_session_auto_decision_at(s, 0, nullptr));
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(grp_error_code(e.e), GRP_ERR_INVALID_ARGUMENT);
  }
  {
    Err e(grp_session_auto_decisions(nullptr, &count));
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.msg().find("session"), std::string::npos) << e.msg();
  }
  {
    Err e(grp_session_auto_decision_at(nullptr, 0, &d));
    EXPECT_FALSE(e.ok());
  }
  grp_session_destroy(s);
  grp_model_destroy(m);
}

}  // namespace
