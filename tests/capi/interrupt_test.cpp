// grp_session_interrupt and the bounds in grp_session_options (max_loop_trips, timeout_seconds):
// a stopped run fails with its own code, changes nothing, and the session runs again.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "grape.h"

namespace {

const char kSource[] = R"(
state count: i32[] = zeros

fn main(n: i32[]) -> i32[] {
  count = count + 1
  var i = 0
  while i < n {
    i = i + 1
  }
  return i
}
)";

struct Fixture {
  grp_model* model = nullptr;
  grp_session* session = nullptr;
  explicit Fixture(const grp_session_options& o) {
    grp_error* e = grp_model_load_source(kSource, std::strlen(kSource), "bounded.grp", nullptr, &model);
    EXPECT_EQ(e, nullptr) << grp_error_message(e);
    e = grp_session_create(model, &o, &session);
    EXPECT_EQ(e, nullptr) << grp_error_message(e);
  }
  ~Fixture() {
    grp_session_destroy(session);
    grp_model_destroy(model);
  }
  // The run's error code (GRP_OK on success); on success *out is the result.
  grp_code run(int32_t n, int32_t* out = nullptr, std::string* message = nullptr) {
    int64_t none[1] = {0};
    grp_error* e = grp_session_set_input(session, "n", GRP_I32, none, 0, &n, sizeof n);
    EXPECT_EQ(e, nullptr) << grp_error_message(e);
    e = grp_session_run(session);
    grp_code code = grp_error_code(e);
    if (message) *message = grp_error_message(e);
    grp_error_free(e);
    if (code == GRP_OK && out) {
      const void* data = nullptr;
      EXPECT_EQ(grp_session_get_output(session, 0, nullptr, nullptr, nullptr, &data, nullptr), nullptr);
      std::memcpy(out, data, sizeof *out);
    }
    return code;
  }
  int32_t count() {
    const void* data = nullptr;
    grp_error* e = grp_session_get_state(session, "count", nullptr, nullptr, nullptr, &data, nullptr);
    if (e) {
      grp_error_free(e);
      return -1;
    }
    int32_t v;
    std::memcpy(&v, data, sizeof v);
    return v;
  }
};

grp_session_options cpu_options() {
  grp_session_options o = grp_session_default_options();
  o.backend = "cpu";
  return o;
}

TEST(CapiBounds, DefaultsAreZero) {
  grp_session_options o = grp_session_default_options();
  EXPECT_EQ(o.max_loop_trips, 0);
  EXPECT_EQ(o.timeout_seconds, 0.0);
  grp_session_interrupt(nullptr);  // a no-op
}

TEST(CapiBounds, TripCap) {
  grp_session_options o = cpu_options();
  o.max_loop_trips = 100;
  Fixture f(o);
  std::string msg;
  EXPECT_EQ(f.run(101, nullptr, &msg), GRP_ERR_TYPE);
  EXPECT_NE(msg.find("ran 100 trips"), std::string::npos) << msg;
  int32_t r = 0;
  EXPECT_EQ(f.run(100, &r), GRP_OK);
  EXPECT_EQ(r, 100);
  o.max_loop_trips = -5;
  grp_session* s = nullptr;
  grp_error* e = grp_session_create(f.model, &o, &s);
  EXPECT_EQ(grp_error_code(e), GRP_ERR_INVALID_ARGUMENT);
  grp_error_free(e);
}

TEST(CapiBounds, OldStructSizeGetsTheDefaults) {
  grp_session_options o = cpu_options();
  o.struct_size = offsetof(grp_session_options, device) + sizeof(int);
  o.max_loop_trips = 1;  // beyond struct_size: not read
  Fixture f(o);
  int32_t r = 0;
  EXPECT_EQ(f.run(10, &r), GRP_OK);
  EXPECT_EQ(r, 10);
}

TEST(CapiBounds, Timeout) {
  grp_session_options o = cpu_options();
  o.max_loop_trips = int64_t{1} << 40;
  o.timeout_seconds = 0.2;
  Fixture f(o);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.run(2'000'000'000), GRP_ERR_INTERRUPTED);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.2);
  EXPECT_EQ(f.count(), -1);  // no state committed
  EXPECT_EQ(f.run(3), GRP_OK);
  EXPECT_EQ(f.count(), 1);
}

TEST(CapiBounds, InterruptFromAnotherThread) {
  grp_session_options o = cpu_options();
  o.max_loop_trips = int64_t{1} << 40;
  Fixture f(o);
  int32_t r = 0;
  ASSERT_EQ(f.run(2, &r), GRP_OK);
  ASSERT_EQ(f.count(), 1);
  std::thread stopper([&f] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    grp_session_interrupt(f.session);
  });
  std::string msg;
  EXPECT_EQ(f.run(2'000'000'000, nullptr, &msg), GRP_ERR_INTERRUPTED);
  EXPECT_NE(msg.find("interrupted"), std::string::npos) << msg;
  stopper.join();
  EXPECT_EQ(f.count(), 1);
  EXPECT_EQ(f.run(7, &r), GRP_OK);
  EXPECT_EQ(r, 7);
  EXPECT_EQ(f.count(), 2);
}

}  // namespace
