// The shape-bucket options of grp_session_options (buckets, graph_memory_bytes) and the graph
// statistics of grp_run_stats, on the CPU backend: a bad spec or budget is refused at session
// creation with a message naming it, a good one is accepted, and a CPU run reports no graphs.
// The graphs themselves are tested on the GPU (tests/gpu/graph_executor_test.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "grape.h"

namespace {

const char kSource[] = "fn main(x: f32[S]) -> f32[S] {\n  return x * 2.0\n}\n";

struct Model {
  grp_model* m = nullptr;
  Model() {
    grp_error* e = grp_model_load_source(kSource, std::strlen(kSource), "double.grp", nullptr, &m);
    EXPECT_EQ(e, nullptr) << grp_error_message(e);
  }
  ~Model() { grp_model_destroy(m); }
};

grp_session_options cpu_options() {
  grp_session_options o = grp_session_default_options();
  o.backend = "cpu";
  return o;
}

// The error code and message of creating a session with `o` (GRP_OK: created and destroyed).
grp_code create(const Model& model, const grp_session_options& o, std::string* message) {
  grp_session* s = nullptr;
  grp_error* e = grp_session_create(model.m, &o, &s);
  grp_code code = grp_error_code(e);
  *message = e ? grp_error_message(e) : "";
  grp_error_free(e);
  grp_session_destroy(s);
  return code;
}

TEST(CapiBuckets, BadSpecsAreRefusedNamingThem) {
  Model model;
  grp_session_options o = cpu_options();
  std::string msg;
  o.buckets = "S=64,16";
  EXPECT_EQ(create(model, o, &msg), GRP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("buckets \"S=64,16\": the edges of S must increase"), std::string::npos) << msg;
  o.buckets = "S";
  EXPECT_EQ(create(model, o, &msg), GRP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("expected NAME=pow2"), std::string::npos) << msg;
  o.buckets = nullptr;
  o.graph_memory_bytes = -1;
  EXPECT_EQ(create(model, o, &msg), GRP_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("graph memory budget -1 is negative"), std::string::npos) << msg;
}

TEST(CapiBuckets, GoodSpecsRunAndCpuRunsHoldNoGraphs) {
  Model model;
  grp_session_options o = cpu_options();
  o.buckets = "S=exact; B=16,64";
  o.graph_memory_bytes = 1 << 20;
  grp_session* s = nullptr;
  ASSERT_EQ(grp_session_create(model.m, &o, &s), nullptr);
  float x[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  ASSERT_EQ(grp_session_set_input(s, "x", GRP_F32, shape, 1, x, sizeof x), nullptr);
  ASSERT_EQ(grp_session_run(s), nullptr);
  grp_run_stats st;
  std::memset(&st, 0xff, sizeof st);
  st.struct_size = sizeof st;
  ASSERT_EQ(grp_session_last_run_stats(s, &st), nullptr);
  EXPECT_EQ(st.graphs, 0u);
  EXPECT_EQ(st.graph_bytes, 0u);
  EXPECT_EQ(st.graph_updates, 0);
  grp_session_destroy(s);
}

}  // namespace
