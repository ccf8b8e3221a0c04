// The C API from C++: every function with NULL and invalid arguments, the error-path invariants
// (out-parameters untouched on failure, a session usable after a rejected call), zero-copy and
// bound inputs, bound outputs, state access, weights from memory and files, .npy round trips,
// ahead-of-time kernel compiles and the kernel cache.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "capi_err.h"
#include "grape.h"
#include "model_source.h"

namespace {

#define EXPECT_OK(call)                   \
  do {                                    \
    Err err_(call);                       \
    EXPECT_TRUE(err_.ok()) << err_.msg(); \
  } while (0)

#define EXPECT_ERR(call, want_code, fragment)                              \
  do {                                                                     \
    Err err_(call);                                                        \
    ASSERT_FALSE(err_.ok()) << #call " succeeded";                         \
    EXPECT_EQ(err_.code(), want_code) << err_.msg();                       \
    EXPECT_NE(err_.msg().find(fragment), std::string::npos) << err_.msg(); \
  } while (0)

grp_model* load(const char* src = kTestModel, bool weights = true) {
  grp_model* m = nullptr;
  Err e(grp_model_load_source(src, std::strlen(src), "capi_test.grp", nullptr, &m));
  EXPECT_TRUE(e.ok()) << e.msg();
  if (m && weights) EXPECT_OK(grp_model_set_random_weights(m, 1));
  return m;
}

grp_session* open(grp_model* m, const char* entry = nullptr, const char* backend = nullptr) {
  grp_session_options o = grp_session_default_options();
  o.entry = entry;
  if (backend) o.backend = backend;
  grp_session* s = nullptr;
  Err e(grp_session_create(m, &o, &s));
  EXPECT_TRUE(e.ok()) << e.msg();
  return s;
}

struct Fixture : ::testing::Test {
  grp_model* m = nullptr;
  grp_session* s = nullptr;
  const int64_t shape23[2] = {2, 3};
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const float scale = 2.0f;
  void SetUp() override {
    m = load();
    s = open(m);
    ASSERT_NE(s, nullptr);
  }
  void TearDown() override {
    grp_session_destroy(s);
    grp_model_destroy(m);
  }
  void set_all() {
    EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, shape23, 2, x, sizeof x));
    EXPECT_OK(grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &scale, sizeof scale));
  }
  std::vector<float> output(size_t i) {
    const void* data = nullptr;
    size_t nbytes = 0;
    Err e(grp_session_get_output(s, i, nullptr, nullptr, nullptr, &data, &nbytes));
    EXPECT_TRUE(e.ok()) << e.msg();
    if (!e.ok()) return {};
    const float* f = static_cast<const float*>(data);
    return std::vector<float>(f, f + nbytes / sizeof(float));
  }
};

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("grape_capi_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// The bytes of a safetensors file holding one f32 tensor.
std::vector<uint8_t> safetensors_f32(const std::string& name, const std::vector<float>& v) {
  std::string header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(v.size()) +
                       "],\"data_offsets\":[0," + std::to_string(v.size() * 4) + "]}}";
  while (header.size() % 8) header += ' ';
  // Sized once and filled in place: GCC 12 at -O2 reports a false -Warray-bounds in
  // vector::insert's reallocation path when growing an 8-byte vector.
  std::vector<uint8_t> out(8 + header.size() + v.size() * 4);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  if (!v.empty()) std::memcpy(out.data() + 8 + header.size(), v.data(), v.size() * 4);
  return out;
}

TEST(CapiVersion, Matches) {
  EXPECT_EQ(grp_version_number(), static_cast<uint32_t>(GRAPE_VERSION_NUMBER));
  EXPECT_STREQ(grp_version_string(), GRAPE_VERSION_STRING);
}

TEST(CapiErrors, NullErrorAccessors) {
  EXPECT_EQ(grp_error_code(nullptr), GRP_OK);
  EXPECT_STREQ(grp_error_message(nullptr), "");
  const char* file = "untouched";
  uint32_t line = 77, col = 78;
  EXPECT_EQ(grp_error_location(nullptr, &file, &line, &col), 0);
  EXPECT_STREQ(file, "untouched");
  EXPECT_EQ(line, 77u);
  grp_error_free(nullptr);
  grp_free(nullptr);
}

TEST(CapiErrors, LocationOfFirstDiagnostic) {
  grp_model* m = reinterpret_cast<grp_model*>(0x1);
  Err e(grp_model_load_source(kBadModel, std::strlen(kBadModel), "bad.grp", nullptr, &m));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.code(), GRP_ERR_TYPE);
  EXPECT_EQ(m, reinterpret_cast<grp_model*>(0x1));  // untouched
  const char* file = nullptr;
  uint32_t line = 0, col = 0;
  ASSERT_EQ(grp_error_location(e.e, &file, &line, &col), 1);
  EXPECT_STREQ(file, "bad.grp");
  EXPECT_EQ(line, 2u);
  EXPECT_EQ(col, 10u);
  EXPECT_NE(e.msg().find("bad.grp:2:10: error:"), std::string::npos);
  // Errors without a position leave the out-parameters alone.
  Err io(grp_model_load_file("/nonexistent.grp", nullptr, &m));
  line = 5;
  EXPECT_EQ(grp_error_location(io.e, nullptr, &line, nullptr), 0);
  EXPECT_EQ(line, 5u);
}

// A run-time error at an op's position reads `FILE:LINE:COL: error: ...`, as a compile error does,
// and has that position.
TEST(CapiErrors, RunTimeErrorHasTheLoopsLocation) {
  const char* src =
      "fn main(n: i32[]) -> i32[] {\n  var i = 0\n  while i < n {\n    i = i + 1\n  }\n  return i\n}\n";
  grp_model* m = nullptr;
  ASSERT_TRUE(Err(grp_model_load_source(src, std::strlen(src), "runaway.grp", nullptr, &m)).ok());
  grp_session_options o = grp_session_default_options();
  o.backend = "cpu";
  o.max_loop_trips = 20;
  grp_session* s = nullptr;
  ASSERT_TRUE(Err(grp_session_create(m, &o, &s)).ok());
  int32_t n = 1000;
  EXPECT_OK(grp_session_set_input(s, "n", GRP_I32, nullptr, 0, &n, sizeof n));
  Err e(grp_session_run(s));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.msg().rfind("runaway.grp:3:3: error: the loop has no `max` bound and ran 20 trips", 0), 0u)
      << e.msg();
  const char* file = nullptr;
  uint32_t line = 0, col = 0;
  ASSERT_EQ(grp_error_location(e.e, &file, &line, &col), 1);
  EXPECT_STREQ(file, "runaway.grp");
  EXPECT_EQ(line, 3u);
  EXPECT_EQ(col, 3u);
  grp_session_destroy(s);
  grp_model_destroy(m);
}

// Values outside the grp_dtype enum are tested from C (tests/capi/c_api_test.c): in C++ merely
// forming one is undefined.
TEST(CapiDtype, SizesAndNames) {
  EXPECT_EQ(grp_dtype_size(GRP_F32), 4u);
  EXPECT_EQ(grp_dtype_size(GRP_BF16), 2u);
  EXPECT_EQ(grp_dtype_size(GRP_I64), 8u);
  EXPECT_EQ(grp_dtype_size(GRP_BOOL), 1u);
  EXPECT_STREQ(grp_dtype_name(GRP_F16), "f16");
  EXPECT_EQ(grp_backend_available("cpu"), 1);
  EXPECT_EQ(grp_backend_available("auto"), 1);
  EXPECT_EQ(grp_backend_available("tpu"), 0);
  EXPECT_EQ(grp_backend_available(nullptr), 0);
}

TEST(CapiModel, NullArguments) {
  grp_model* m = reinterpret_cast<grp_model*>(0x1);
  EXPECT_ERR(grp_model_load_file(nullptr, nullptr, &m), GRP_ERR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_ERR(grp_model_load_file("x.grp", nullptr, nullptr), GRP_ERR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(grp_model_load_source(nullptr, 3, "n", nullptr, &m), GRP_ERR_INVALID_ARGUMENT, "src is NULL");
  EXPECT_ERR(grp_model_load_source(kTestModel, 3, "n", nullptr, nullptr), GRP_ERR_INVALID_ARGUMENT,
             "out is NULL");
  EXPECT_EQ(m, reinterpret_cast<grp_model*>(0x1));
  EXPECT_ERR(grp_model_set_weights_file(nullptr, "w"), GRP_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_ERR(grp_model_set_weights_memory(nullptr, "", 0, nullptr), GRP_ERR_INVALID_ARGUMENT,
             "model is NULL");
  EXPECT_ERR(grp_model_set_random_weights(nullptr, 0), GRP_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_ERR(grp_model_weight_info(nullptr, 0, nullptr, nullptr, nullptr), GRP_ERR_INVALID_ARGUMENT, "model");
  char* text = reinterpret_cast<char*>(0x1);
  EXPECT_ERR(grp_model_ir_text(nullptr, nullptr, &text), GRP_ERR_INVALID_ARGUMENT, "model");
  EXPECT_EQ(text, reinterpret_cast<char*>(0x1));
  grp_model_destroy(nullptr);
  EXPECT_EQ(grp_model_num_entries(nullptr), 0u);
  EXPECT_EQ(grp_model_entry_name(nullptr, 0), nullptr);
  EXPECT_EQ(grp_model_num_weights(nullptr), 0u);
  EXPECT_EQ(grp_model_weight_name(nullptr, 0), nullptr);
  EXPECT_EQ(grp_model_has_weights(nullptr), 0);
}

TEST(CapiModel, EmptySourceIsAProgramWithoutEntries) {
  grp_model* m = nullptr;
  EXPECT_OK(grp_model_load_source(nullptr, 0, nullptr, nullptr, &m));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(grp_model_num_entries(m), 0u);
  EXPECT_EQ(grp_model_has_weights(m), 1);
  grp_model_destroy(m);
}

TEST(CapiModel, Options) {
  grp_model_options o = grp_model_default_options();
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.no_optimize, 0);
  EXPECT_EQ(o.require_loop_bounds, 0);
  grp_model* m = nullptr;
  const char* defs[] = {"K=5", "K=4"};  // the later one wins
  o.defines = defs;
  o.num_defines = 2;
  EXPECT_OK(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m));
  const int64_t* shape = nullptr;
  EXPECT_OK(grp_model_weight_info(m, 0, nullptr, &shape, nullptr));
  EXPECT_EQ(shape[0], 4);
  grp_model_destroy(m);
  m = nullptr;

  o.num_defines = 3;
  o.defines = nullptr;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "defines is NULL");
  const char* nulls[] = {nullptr};
  o.defines = nulls;
  o.num_defines = 1;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "defines[0] is NULL");
  const char* bad_value[] = {"K=four"};
  o.defines = bad_value;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "expected an integer, got 'four'");
  const char* unknown[] = {"KK=4"};
  o.defines = unknown;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "did you mean 'K'");
  EXPECT_EQ(m, nullptr);

  // struct_size: the v1 core (struct_size, defines, num_defines) is the minimum; a zero tail
  // beyond what this library knows is accepted, a nonzero one refused.
  struct Core {
    size_t struct_size;
    const char* const* defines;
    size_t num_defines;
  } core = {sizeof(Core), nullptr, 0};
  EXPECT_OK(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t",
                                  reinterpret_cast<grp_model_options*>(&core), &m));
  grp_model_destroy(m);
  m = nullptr;
  core.struct_size = sizeof(Core) - 1;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t",
                                   reinterpret_cast<grp_model_options*>(&core), &m),
             GRP_ERR_INVALID_ARGUMENT, "struct_size");
  struct Bigger {
    grp_model_options o;
    int64_t future;
  } big{};
  big.o = grp_model_default_options();
  big.o.struct_size = sizeof big;
  EXPECT_OK(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &big.o, &m));
  grp_model_destroy(m);
  m = nullptr;
  big.future = 1;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &big.o, &m), GRP_ERR_UNSUPPORTED,
             "does not know");
  EXPECT_EQ(m, nullptr);
}

TEST(CapiModel, IrText) {
  grp_model* m = load();
  char* all = nullptr;
  EXPECT_OK(grp_model_ir_text(m, nullptr, &all));
  ASSERT_NE(all, nullptr);
  EXPECT_NE(std::string(all).find("accumulate"), std::string::npos);
  grp_free(all);
  char* one = nullptr;
  EXPECT_OK(grp_model_ir_text(m, "ident", &one));
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(std::string(one).find("accumulate"), std::string::npos);
  grp_free(one);
  char* none = reinterpret_cast<char*>(0x1);
  EXPECT_ERR(grp_model_ir_text(m, "idnet", &none), GRP_ERR_INVALID_ARGUMENT, "did you mean 'ident'");
  EXPECT_EQ(none, reinterpret_cast<char*>(0x1));
  EXPECT_ERR(grp_model_ir_text(m, nullptr, nullptr), GRP_ERR_INVALID_ARGUMENT, "out is NULL");
  grp_model_destroy(m);
}

TEST(CapiModel, WeightsFromMemoryAndFile) {
  grp_model* m = load(kTestModel, false);
  EXPECT_EQ(grp_model_has_weights(m), 0);
  grp_session* s = reinterpret_cast<grp_session*>(0x1);
  EXPECT_ERR(grp_session_create(m, nullptr, &s), GRP_ERR_INVALID_ARGUMENT, "none are loaded");
  EXPECT_EQ(s, reinterpret_cast<grp_session*>(0x1));

  auto bytes = safetensors_f32("w", {1, 10, 100});
  EXPECT_OK(grp_model_set_weights_memory(m, bytes.data(), bytes.size(), "mem.safetensors"));
  EXPECT_EQ(grp_model_has_weights(m), 1);
  auto wrong = safetensors_f32("w", {1, 2});
  EXPECT_ERR(grp_model_set_weights_memory(m, wrong.data(), wrong.size(), "bad.safetensors"), GRP_ERR_FORMAT,
             "bad.safetensors");
  EXPECT_ERR(grp_model_set_weights_memory(m, nullptr, 5, nullptr), GRP_ERR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERR(grp_model_set_weights_memory(m, "garbage", 7, nullptr), GRP_ERR_FORMAT, "<memory>");
  auto other = safetensors_f32("v", {1, 2, 3});
  EXPECT_ERR(grp_model_set_weights_memory(m, other.data(), other.size(), "o"), GRP_ERR_FORMAT,
             "missing tensor 'w'");

  // The failed calls kept the good weights.
  s = open(m, "main");
  ASSERT_NE(s, nullptr);
  const int64_t shape[2] = {1, 3};
  const float x[3] = {1, 1, 1}, one = 1;
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, shape, 2, x, sizeof x));
  EXPECT_OK(grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &one, 4));
  EXPECT_OK(grp_session_run(s));
  const void* data = nullptr;
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const float*>(data)[1], 10.0f);

  // From a file; a session created before keeps its snapshot.
  std::string path = temp_path("w.safetensors");
  auto file_bytes = safetensors_f32("w", {2, 20, 200});
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file_bytes.data()),
             static_cast<std::streamsize>(file_bytes.size()));
  EXPECT_OK(grp_model_set_weights_file(m, path.c_str()));
  EXPECT_ERR(grp_model_set_weights_file(m, "/nonexistent.safetensors"), GRP_ERR_IO,
             "/nonexistent.safetensors");
  EXPECT_ERR(grp_model_set_weights_file(m, nullptr), GRP_ERR_INVALID_ARGUMENT, "safetensors_path");
  EXPECT_OK(grp_session_run(s));
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const float*>(data)[1], 10.0f);
  grp_session* s2 = open(m, "main");
  EXPECT_OK(grp_session_set_input(s2, "x", GRP_F32, shape, 2, x, sizeof x));
  EXPECT_OK(grp_session_set_input(s2, "scale", GRP_F32, nullptr, 0, &one, 4));
  EXPECT_OK(grp_session_run(s2));
  EXPECT_OK(grp_session_get_output(s2, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const float*>(data)[1], 20.0f);
  grp_session_destroy(s2);
  grp_session_destroy(s);
  grp_model_destroy(m);
  std::filesystem::remove(path);
}

// A 100,000-character entry, state or dim name is cut in run-time messages (base/error.h), not
// echoed (issue 10).
TEST(CapiSession, LongNamesInRunTimeErrorsAreCut) {
  grp_model* m = load();
  const std::string name(100000, 'q');
  grp_session_options o = grp_session_default_options();
  o.entry = name.c_str();
  grp_session* s = nullptr;
  {
    Err e(grp_session_create(m, &o, &s));
    ASSERT_FALSE(e.ok());
    EXPECT_LT(e.msg().size(), 400u) << e.msg().substr(0, 400);
    EXPECT_NE(e.msg().find("(100000 characters)"), std::string::npos) << e.msg().substr(0, 400);
  }
  s = open(m, "accumulate");
  const int64_t shape[2] = {1, 3};
  const float v[3] = {1, 2, 3};
  {
    Err e(grp_session_set_state(s, name.c_str(), GRP_F32, shape, 2, v, sizeof v));
    ASSERT_FALSE(e.ok());
    EXPECT_LT(e.msg().size(), 400u) << e.msg().substr(0, 400);
    EXPECT_NE(e.msg().find("no state 'qqqq"), std::string::npos) << e.msg().substr(0, 400);
  }
  grp_session_destroy(s);
  grp_model_destroy(m);

  // A symbolic dim with a long name, in the shape a wrong input is told to have.
  const std::string dim(3000, 'D');
  const std::string src = "fn main(x: f32[" + dim + "]) -> f32[" + dim + "] { return x * 2.0 }\n";
  grp_model* lm = nullptr;
  ASSERT_TRUE(Err(grp_model_load_source(src.data(), src.size(), "long_dim.grp", nullptr, &lm)).ok());
  grp_session* ls = open(lm);
  const int64_t two[2] = {1, 3};
  {
    Err e(grp_session_set_input(ls, "x", GRP_F32, two, 2, v, sizeof v));
    ASSERT_FALSE(e.ok());
    EXPECT_LT(e.msg().size(), 400u) << e.msg().substr(0, 400);
    EXPECT_NE(e.msg().find("(3000 characters)"), std::string::npos) << e.msg().substr(0, 400);
  }
  grp_session_destroy(ls);
  grp_model_destroy(lm);
}

TEST(CapiSession, CreateErrors) {
  grp_model* m = load();
  grp_session* s = reinterpret_cast<grp_session*>(0x1);
  grp_session_options o = grp_session_default_options();
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_ERR(grp_session_create(nullptr, &o, &s), GRP_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_ERR(grp_session_create(m, &o, nullptr), GRP_ERR_INVALID_ARGUMENT, "out is NULL");
  o.entry = "nope";
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_INVALID_ARGUMENT, "no entry point 'nope'");
  o.entry = nullptr;
  if (!grp_backend_available("cuda")) {  // this machine has no GPU (CI)
    o.backend = "cuda";
    EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_NO_DEVICE, "no CUDA driver found");
  }
  o.backend = "tpu";
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_INVALID_ARGUMENT, "\"tpu\"");
  o.backend = "cpu";
  for (const char* ex : {"eager", "graph", "mono", "dataflow"}) {
    o.executor = ex;
    EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_UNSUPPORTED, ex);
  }
  o.executor = "fast";
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_INVALID_ARGUMENT, "\"fast\"");
  o.executor = nullptr;
  o.device = 1;
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_NO_DEVICE, "device 1");
  o.device = -1;
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_INVALID_ARGUMENT, "device -1");
  o.device = 0;
  o.struct_size = 8;
  EXPECT_ERR(grp_session_create(m, &o, &s), GRP_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_EQ(s, reinterpret_cast<grp_session*>(0x1));
  // NULL options, and explicit "cpu"/"auto".
  s = nullptr;
  EXPECT_OK(grp_session_create(m, nullptr, &s));
  grp_session_destroy(s);
  o = grp_session_default_options();
  o.backend = "cpu";
  s = nullptr;
  EXPECT_OK(grp_session_create(m, &o, &s));
  grp_session_destroy(s);
  grp_session_destroy(nullptr);
  grp_model_destroy(m);
}

TEST_F(Fixture, Introspection) {
  EXPECT_EQ(grp_session_num_inputs(s), 2u);
  EXPECT_EQ(grp_session_num_outputs(s), 2u);
  EXPECT_STREQ(grp_session_output_name(s, 1), "out1");
  EXPECT_EQ(grp_session_output_name(s, 2), nullptr);
  EXPECT_EQ(grp_session_num_inputs(nullptr), 0u);
  EXPECT_EQ(grp_session_input_name(nullptr, 0), nullptr);
  EXPECT_EQ(grp_session_num_outputs(nullptr), 0u);
  EXPECT_EQ(grp_session_output_name(nullptr, 0), nullptr);
  size_t idx = 99;
  EXPECT_OK(grp_session_input_index(s, "scale", &idx));
  EXPECT_EQ(idx, 1u);
  EXPECT_ERR(grp_session_input_index(s, "scael", &idx), GRP_ERR_INVALID_ARGUMENT, "did you mean 'scale'");
  EXPECT_ERR(grp_session_input_index(s, nullptr, &idx), GRP_ERR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERR(grp_session_input_index(s, "x", nullptr), GRP_ERR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(grp_session_input_index(nullptr, "x", &idx), GRP_ERR_INVALID_ARGUMENT, "session is NULL");
  EXPECT_EQ(idx, 1u);

  grp_dtype dt = GRP_BOOL;
  size_t rank = 0;
  const int64_t* dims = nullptr;
  const char* const* exprs = nullptr;
  EXPECT_OK(grp_session_input_info(s, 0, &dt, &rank, &dims, &exprs));
  EXPECT_EQ(dt, GRP_F32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], -1);
  EXPECT_EQ(dims[1], 3);
  EXPECT_STREQ(exprs[0], "B");
  EXPECT_STREQ(exprs[1], "3");
  EXPECT_OK(grp_session_output_info(s, 1, &dt, &rank, &dims, &exprs));
  EXPECT_EQ(rank, 1u);
  EXPECT_STREQ(exprs[0], "B");
  EXPECT_OK(grp_session_input_info(s, 1, nullptr, nullptr, nullptr, nullptr));
  rank = 42;
  EXPECT_ERR(grp_session_input_info(s, 2, &dt, &rank, &dims, &exprs), GRP_ERR_INVALID_ARGUMENT,
             "out of range");
  EXPECT_ERR(grp_session_output_info(s, 2, &dt, &rank, &dims, &exprs), GRP_ERR_INVALID_ARGUMENT,
             "out of range");
  EXPECT_ERR(grp_session_input_info(nullptr, 0, &dt, &rank, &dims, &exprs), GRP_ERR_INVALID_ARGUMENT,
             "session");
  EXPECT_ERR(grp_session_output_info(nullptr, 0, &dt, &rank, &dims, &exprs), GRP_ERR_INVALID_ARGUMENT,
             "session");
  EXPECT_EQ(rank, 42u);
}

TEST_F(Fixture, SetInputRejectsAndStaysUsable) {
  const int64_t bad_dim[2] = {2, 4};
  const int64_t negative[2] = {-2, 3};
  EXPECT_ERR(grp_session_set_input(nullptr, "x", GRP_F32, shape23, 2, x, sizeof x), GRP_ERR_INVALID_ARGUMENT,
             "session");
  EXPECT_ERR(grp_session_set_input(s, nullptr, GRP_F32, shape23, 2, x, sizeof x), GRP_ERR_INVALID_ARGUMENT,
             "name");
  EXPECT_ERR(grp_session_set_input(s, "y", GRP_F32, shape23, 2, x, sizeof x), GRP_ERR_INVALID_ARGUMENT,
             "unknown input 'y' for entry 'main'");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_I32, shape23, 2, x, sizeof x), GRP_ERR_TYPE,
             "input 'x': expected f32[B, 3], got i32[2, 3]");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, shape23, 1, x, 8), GRP_ERR_TYPE, "got f32[2]");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, bad_dim, 2, x, 32), GRP_ERR_TYPE,
             "dim 1 is 4, expected 3");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, negative, 2, x, sizeof x), GRP_ERR_INVALID_ARGUMENT,
             "shape[0] is -2");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, nullptr, 2, x, sizeof x), GRP_ERR_INVALID_ARGUMENT,
             "shape is NULL");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, shape23, 2, x, 20), GRP_ERR_INVALID_ARGUMENT,
             "20 bytes given, but f32[2, 3] needs 24");
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, shape23, 2, nullptr, 24), GRP_ERR_INVALID_ARGUMENT,
             "data is NULL");
  const int64_t huge[2] = {INT64_MAX / 2, 3};
  EXPECT_ERR(grp_session_set_input(s, "x", GRP_F32, huge, 2, x, 24), GRP_ERR_INVALID_ARGUMENT, "too large");
  // Symbolic dims disagreeing across inputs are caught by run, which changes nothing.
  set_all();
  EXPECT_OK(grp_session_run(s));
  auto before = output(0);
  const int64_t one_row[2] = {1, 3};
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, one_row, 2, x, 12));
  EXPECT_OK(grp_session_run(s));
  EXPECT_EQ(output(0).size(), 3u);
  set_all();
  EXPECT_OK(grp_session_run(s));
  EXPECT_EQ(output(0), before);
}

TEST_F(Fixture, RunErrorsKeepPreviousOutputs) {
  EXPECT_ERR(grp_session_run(nullptr), GRP_ERR_INVALID_ARGUMENT, "session is NULL");
  grp_dtype dt = GRP_BOOL;
  const int64_t* shape = reinterpret_cast<const int64_t*>(0x1);
  size_t rank = 7, nbytes = 7;
  const void* data = reinterpret_cast<const void*>(0x1);
  EXPECT_ERR(grp_session_get_output(s, 0, &dt, &shape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
             "no outputs yet");
  EXPECT_ERR(grp_session_run(s), GRP_ERR_INVALID_ARGUMENT, "missing input 'x'");
  EXPECT_EQ(dt, GRP_BOOL);
  EXPECT_EQ(rank, 7u);
  EXPECT_EQ(nbytes, 7u);
  EXPECT_EQ(data, reinterpret_cast<const void*>(0x1));
  set_all();
  EXPECT_OK(grp_session_run(s));
  auto first = output(0);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_ERR(grp_session_get_output(nullptr, 0, &dt, &shape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
             "session");
  EXPECT_ERR(grp_session_get_output(s, 5, &dt, &shape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
             "out of range");
  // reset_state forgets the outputs, keeps the inputs.
  EXPECT_OK(grp_session_reset_state(s));
  EXPECT_ERR(grp_session_get_output(s, 0, &dt, &shape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
             "no outputs yet");
  EXPECT_OK(grp_session_run(s));
  EXPECT_EQ(output(0), first);
}

TEST_F(Fixture, ZeroCopyInputBuffer) {
  void* buf = nullptr;
  size_t nbytes = 0;
  EXPECT_ERR(grp_session_input_buffer(s, "x", GRP_F32, shape23, 2, nullptr, &nbytes),
             GRP_ERR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERR(grp_session_input_buffer(s, "x", GRP_I64, shape23, 2, &buf, &nbytes), GRP_ERR_TYPE,
             "expected f32");
  EXPECT_ERR(grp_session_input_buffer(s, "q", GRP_F32, shape23, 2, &buf, &nbytes), GRP_ERR_INVALID_ARGUMENT,
             "unknown input 'q'");
  EXPECT_ERR(grp_session_input_buffer(nullptr, "x", GRP_F32, shape23, 2, &buf, &nbytes),
             GRP_ERR_INVALID_ARGUMENT, "session");
  EXPECT_EQ(buf, nullptr);
  EXPECT_OK(grp_session_input_buffer(s, "x", GRP_F32, shape23, 2, &buf, &nbytes));
  ASSERT_NE(buf, nullptr);
  ASSERT_EQ(nbytes, sizeof x);
  std::memcpy(buf, x, sizeof x);
  EXPECT_OK(grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &scale, sizeof scale));
  EXPECT_OK(grp_session_run(s));
  auto a = output(0);
  // Rewriting the buffer changes the next run, without another call.
  for (int i = 0; i < 6; ++i) static_cast<float*>(buf)[i] = 2 * x[i];
  EXPECT_OK(grp_session_run(s));
  auto b = output(0);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(b[i], 2 * a[i]);
  // An output that is the input itself does not alias the buffer.
  grp_session* id = open(m, "ident");
  void* ibuf = nullptr;
  EXPECT_OK(grp_session_input_buffer(id, "x", GRP_F32, shape23, 2, &ibuf, nullptr));
  std::memcpy(ibuf, x, sizeof x);
  EXPECT_OK(grp_session_run(id));
  const void* out = nullptr;
  EXPECT_OK(grp_session_get_output(id, 0, nullptr, nullptr, nullptr, &out, nullptr));
  EXPECT_NE(out, ibuf);
  static_cast<float*>(ibuf)[0] = 99;
  EXPECT_EQ(static_cast<const float*>(out)[0], 1.0f);
  grp_session_destroy(id);
}

TEST_F(Fixture, BoundInputIsNotCopied) {
  std::vector<float> mine(x, x + 6);
  EXPECT_ERR(grp_session_bind_input(s, "x", GRP_F32, shape23, 2, mine.data(), 4), GRP_ERR_INVALID_ARGUMENT,
             "4 bytes");
  EXPECT_ERR(grp_session_bind_input(s, "x", GRP_F32, shape23, 2, nullptr, 24), GRP_ERR_INVALID_ARGUMENT,
             "NULL");
  EXPECT_ERR(grp_session_bind_input(nullptr, "x", GRP_F32, shape23, 2, mine.data(), 24),
             GRP_ERR_INVALID_ARGUMENT, "session");
  EXPECT_ERR(grp_session_bind_input(s, "x", GRP_BF16, shape23, 2, mine.data(), 12), GRP_ERR_TYPE, "got bf16");
  EXPECT_OK(grp_session_bind_input(s, "x", GRP_F32, shape23, 2, mine.data(), 24));
  EXPECT_OK(grp_session_set_input(s, "scale", GRP_F32, nullptr, 0, &scale, sizeof scale));
  EXPECT_OK(grp_session_run(s));
  auto a = output(0);
  for (auto& v : mine) v *= 3;
  EXPECT_OK(grp_session_run(s));
  auto b = output(0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(b[i], 3 * a[i]);
  EXPECT_EQ(mine[0], 3.0f);  // never written
  // Setting the input again replaces the binding.
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, shape23, 2, x, sizeof x));
  mine.assign(6, -1.0f);
  EXPECT_OK(grp_session_run(s));
  EXPECT_EQ(output(0), a);
}

TEST_F(Fixture, BoundOutput) {
  set_all();
  std::vector<float> dst(6, -1.0f);
  std::vector<float> small(2, -1.0f);
  EXPECT_ERR(grp_session_bind_output(s, 2, dst.data(), 24), GRP_ERR_INVALID_ARGUMENT, "out of range");
  EXPECT_ERR(grp_session_bind_output(nullptr, 0, dst.data(), 24), GRP_ERR_INVALID_ARGUMENT, "session");
  EXPECT_ERR(grp_session_bind_output(s, 0, nullptr, 24), GRP_ERR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_OK(grp_session_bind_output(s, 0, small.data(), 8));
  EXPECT_ERR(grp_session_run(s), GRP_ERR_INVALID_ARGUMENT,
             "needs 24 bytes, but the memory bound to it holds 8");
  EXPECT_EQ(small[0], -1.0f);
  EXPECT_OK(grp_session_bind_output(s, 0, dst.data(), 24));
  EXPECT_OK(grp_session_run(s));
  const void* data = nullptr;
  size_t nbytes = 0;
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, &nbytes));
  EXPECT_EQ(data, dst.data());
  EXPECT_EQ(nbytes, 24u);
  EXPECT_NE(dst[0], -1.0f);
  auto bound = dst;
  EXPECT_OK(grp_session_bind_output(s, 0, nullptr, 0));  // unbind
  EXPECT_OK(grp_session_run(s));
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_NE(data, dst.data());
  EXPECT_EQ(output(0), bound);
}

// Device buffers are the CUDA backend's: a CPU session says so, and checks its arguments first.
// (The fixture's session has the default backend, CUDA on a machine with a GPU: this one is CPU.)
TEST_F(Fixture, DeviceInputBufferOnTheCpu) {
  grp_session_destroy(s);
  s = open(m, nullptr, "cpu");
  ASSERT_NE(s, nullptr);
  void* buf = nullptr;
  size_t nbytes = 0;
  EXPECT_ERR(grp_session_input_device_buffer(s, "x", GRP_F32, shape23, 2, nullptr, &nbytes),
             GRP_ERR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERR(grp_session_input_device_buffer(s, "q", GRP_F32, shape23, 2, &buf, &nbytes),
             GRP_ERR_INVALID_ARGUMENT, "unknown input 'q'");
  EXPECT_ERR(grp_session_input_device_buffer(s, "x", GRP_I64, shape23, 2, &buf, &nbytes), GRP_ERR_TYPE,
             "expected f32");
  EXPECT_ERR(grp_session_input_device_buffer(s, "x", GRP_F32, shape23, 2, &buf, &nbytes), GRP_ERR_UNSUPPORTED,
             "CUDA backend");
  EXPECT_ERR(grp_session_input_device_buffer(nullptr, "x", GRP_F32, shape23, 2, &buf, &nbytes),
             GRP_ERR_INVALID_ARGUMENT, "session");
  EXPECT_EQ(buf, nullptr);
  // The session stays usable.
  set_all();
  EXPECT_OK(grp_session_run(s));
}

// A CPU session takes only the null stream.
TEST_F(Fixture, StreamOnTheCpu) {
  grp_session_destroy(s);
  s = open(m, nullptr, "cpu");
  ASSERT_NE(s, nullptr);
  EXPECT_OK(grp_session_set_stream(s, nullptr));
  int fake_stream = 0;
  EXPECT_ERR(grp_session_set_stream(s, &fake_stream), GRP_ERR_UNSUPPORTED, "no streams");
  EXPECT_ERR(grp_session_set_stream(nullptr, nullptr), GRP_ERR_INVALID_ARGUMENT, "session");
  set_all();
  EXPECT_OK(grp_session_run(s));
}

TEST(CapiState, GetSetAndReset) {
  grp_model* m = load();
  grp_session* s = open(m, "accumulate");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(grp_session_num_states(s), 2u);
  EXPECT_STREQ(grp_session_state_name(s, 0), "acc");
  EXPECT_STREQ(grp_session_state_name(s, 1), "count");
  EXPECT_EQ(grp_session_state_name(s, 2), nullptr);
  EXPECT_EQ(grp_session_num_states(nullptr), 0u);
  EXPECT_EQ(grp_session_state_name(nullptr, 0), nullptr);
  const void* data = reinterpret_cast<const void*>(0x1);
  EXPECT_ERR(grp_session_get_state(s, "acc", nullptr, nullptr, nullptr, &data, nullptr),
             GRP_ERR_INVALID_ARGUMENT, "does not exist yet");
  EXPECT_ERR(grp_session_get_state(s, "acx", nullptr, nullptr, nullptr, &data, nullptr),
             GRP_ERR_INVALID_ARGUMENT, "did you mean 'acc'");
  EXPECT_ERR(grp_session_get_state(s, nullptr, nullptr, nullptr, nullptr, &data, nullptr),
             GRP_ERR_INVALID_ARGUMENT, "name");
  EXPECT_ERR(grp_session_get_state(nullptr, "acc", nullptr, nullptr, nullptr, &data, nullptr),
             GRP_ERR_INVALID_ARGUMENT, "session");
  EXPECT_EQ(data, reinterpret_cast<const void*>(0x1));

  const int64_t shape[2] = {1, 3};
  const float x[3] = {1, 2, 3};
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, shape, 2, x, sizeof x));
  EXPECT_OK(grp_session_run(s));
  EXPECT_OK(grp_session_run(s));
  grp_dtype dt;
  const int64_t* sh = nullptr;
  size_t rank = 0, nbytes = 0;
  EXPECT_OK(grp_session_get_state(s, "acc", &dt, &sh, &rank, &data, &nbytes));
  EXPECT_EQ(dt, GRP_F32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(sh[0], 1);
  EXPECT_EQ(nbytes, 12u);
  EXPECT_EQ(static_cast<const float*>(data)[2], 6.0f);

  const float preset[3] = {100, 200, 300};
  const int32_t count = 41;
  EXPECT_ERR(grp_session_set_state(s, "acc", GRP_I32, shape, 2, preset, 12), GRP_ERR_TYPE,
             "expected f32[M, 3]");
  const int64_t wrong[2] = {1, 4};
  EXPECT_ERR(grp_session_set_state(s, "acc", GRP_F32, wrong, 2, preset, 16), GRP_ERR_TYPE, "dim 1 is 4");
  EXPECT_ERR(grp_session_set_state(s, "acc", GRP_F32, shape, 2, preset, 11), GRP_ERR_INVALID_ARGUMENT,
             "11 bytes");
  EXPECT_ERR(grp_session_set_state(s, "nope", GRP_F32, shape, 2, preset, 12), GRP_ERR_INVALID_ARGUMENT,
             "no state");
  EXPECT_ERR(grp_session_set_state(nullptr, "acc", GRP_F32, shape, 2, preset, 12), GRP_ERR_INVALID_ARGUMENT,
             "session");
  EXPECT_OK(grp_session_set_state(s, "acc", GRP_F32, shape, 2, preset, sizeof preset));
  EXPECT_OK(grp_session_set_state(s, "count", GRP_I32, nullptr, 0, &count, sizeof count));
  EXPECT_OK(grp_session_run(s));
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const float*>(data)[0], 101.0f);
  EXPECT_OK(grp_session_get_output(s, 1, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(*static_cast<const int32_t*>(data), 42);

  // A state whose batch differs from the next run's is an error that changes nothing.
  const int64_t two[2] = {2, 3};
  const float x2[6] = {};
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, two, 2, x2, sizeof x2));
  EXPECT_ERR(grp_session_run(s), GRP_ERR_TYPE, "state 'acc'");
  EXPECT_OK(grp_session_get_state(s, "count", nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(*static_cast<const int32_t*>(data), 42);
  EXPECT_OK(grp_session_reset_state(s));
  EXPECT_OK(grp_session_run(s));
  EXPECT_OK(grp_session_get_output(s, 1, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(*static_cast<const int32_t*>(data), 1);
  grp_session_destroy(s);
  grp_model_destroy(m);
}

TEST(CapiState, StateNeverAliasesABoundInput) {
  // `acc = acc + x` on a fresh state (zeros) may be folded to `acc = x`; either way the state must
  // not change when the caller rewrites its memory.
  grp_model* m = load();
  grp_session* s = open(m, "accumulate");
  std::vector<float> mine = {1, 2, 3};
  const int64_t shape[2] = {1, 3};
  EXPECT_OK(grp_session_bind_input(s, "x", GRP_F32, shape, 2, mine.data(), 12));
  EXPECT_OK(grp_session_run(s));
  mine = {-5, -5, -5};
  const void* data = nullptr;
  EXPECT_OK(grp_session_get_state(s, "acc", nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const float*>(data)[0], 1.0f);
  grp_session_destroy(s);
  grp_model_destroy(m);
}

TEST(CapiState, OnlyEntriesUsingAStateBindItsDims) {
  // `main` binds B but does not use `cache`; changing B between its runs must work, and `cache`
  // is created by `push`, the entry that uses it.
  const char* src =
      "state cache: f32[B] = zeros\n"
      "fn main(x: f32[B]) -> f32[B] { return x + 1.0 }\n"
      "fn push(x: f32[B]) -> f32[B] {\n  cache = cache + x\n  return cache\n}\n";
  grp_model* m = load(src, false);
  grp_session* s = open(m, "main");
  const float v[3] = {1, 2, 3};
  for (int64_t n : {3, 2, 1}) {
    EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, &n, 1, v, static_cast<size_t>(n) * 4));
    EXPECT_OK(grp_session_run(s));
  }
  const void* data = nullptr;
  EXPECT_ERR(grp_session_get_state(s, "cache", nullptr, nullptr, nullptr, &data, nullptr),
             GRP_ERR_INVALID_ARGUMENT, "does not exist yet");
  grp_session_destroy(s);
  s = open(m, "push");
  int64_t n = 2;
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, &n, 1, v, 8));
  EXPECT_OK(grp_session_run(s));
  n = 3;
  EXPECT_OK(grp_session_set_input(s, "x", GRP_F32, &n, 1, v, 12));
  EXPECT_ERR(grp_session_run(s), GRP_ERR_TYPE, "state 'cache'");
  grp_session_destroy(s);
  grp_model_destroy(m);
}

TEST(CapiTensor, NpyRoundTrip) {
  const int64_t shape[2] = {2, 2};
  const int32_t v[4] = {1, -2, 3, -4};
  std::string path = temp_path("t.npy");
  EXPECT_OK(grp_npy_write(path.c_str(), GRP_I32, shape, 2, v, sizeof v));
  grp_tensor* t = nullptr;
  EXPECT_OK(grp_tensor_read_npy(path.c_str(), &t));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(grp_tensor_dtype(t), GRP_I32);
  ASSERT_EQ(grp_tensor_rank(t), 2u);
  EXPECT_EQ(grp_tensor_shape(t)[1], 2);
  ASSERT_EQ(grp_tensor_nbytes(t), sizeof v);
  EXPECT_EQ(std::memcmp(grp_tensor_data(t), v, sizeof v), 0);
  grp_tensor_destroy(t);

  // bf16 is written as f32.
  const uint16_t one_bf16 = 0x3f80;
  EXPECT_OK(grp_npy_write(path.c_str(), GRP_BF16, nullptr, 0, &one_bf16, 2));
  t = nullptr;
  EXPECT_OK(grp_tensor_read_npy(path.c_str(), &t));
  EXPECT_EQ(grp_tensor_dtype(t), GRP_F32);
  EXPECT_EQ(*static_cast<const float*>(grp_tensor_data(t)), 1.0f);
  grp_tensor_destroy(t);

  grp_tensor* untouched = reinterpret_cast<grp_tensor*>(0x1);
  EXPECT_ERR(grp_tensor_read_npy("/nonexistent.npy", &untouched), GRP_ERR_IO, "/nonexistent.npy");
  std::ofstream(path, std::ios::binary) << "not an npy file";
  EXPECT_ERR(grp_tensor_read_npy(path.c_str(), &untouched), GRP_ERR_FORMAT, path);
  EXPECT_ERR(grp_tensor_read_npy(nullptr, &untouched), GRP_ERR_INVALID_ARGUMENT, "path");
  EXPECT_ERR(grp_tensor_read_npy(path.c_str(), nullptr), GRP_ERR_INVALID_ARGUMENT, "out");
  EXPECT_EQ(untouched, reinterpret_cast<grp_tensor*>(0x1));
  EXPECT_ERR(grp_npy_write(nullptr, GRP_I32, shape, 2, v, sizeof v), GRP_ERR_INVALID_ARGUMENT, "path");
  EXPECT_ERR(grp_npy_write(path.c_str(), GRP_I32, shape, 2, v, 3), GRP_ERR_INVALID_ARGUMENT, "3 bytes");
  EXPECT_ERR(grp_npy_write("/nonexistent/dir/x.npy", GRP_I32, shape, 2, v, sizeof v), GRP_ERR_IO,
             "/nonexistent");
  std::filesystem::remove(path);
}

TEST(CapiTensor, CreateAndNullAccessors) {
  const int64_t shape[1] = {3};
  const uint8_t b[3] = {1, 0, 1};
  grp_tensor* t = nullptr;
  EXPECT_OK(grp_tensor_create(GRP_BOOL, shape, 1, b, 3, &t));
  EXPECT_EQ(grp_tensor_nbytes(t), 3u);
  EXPECT_EQ(std::memcmp(grp_tensor_data(t), b, 3), 0);
  grp_tensor_destroy(t);
  grp_tensor* empty = nullptr;
  const int64_t zero[1] = {0};
  EXPECT_OK(grp_tensor_create(GRP_F32, zero, 1, nullptr, 0, &empty));
  EXPECT_EQ(grp_tensor_nbytes(empty), 0u);
  grp_tensor_destroy(empty);
  grp_tensor* untouched = reinterpret_cast<grp_tensor*>(0x1);
  EXPECT_ERR(grp_tensor_create(GRP_BOOL, shape, 1, b, 2, &untouched), GRP_ERR_INVALID_ARGUMENT, "2 bytes");
  EXPECT_ERR(grp_tensor_create(GRP_BOOL, shape, 1, b, 3, nullptr), GRP_ERR_INVALID_ARGUMENT, "out");
  EXPECT_EQ(untouched, reinterpret_cast<grp_tensor*>(0x1));
  grp_tensor_destroy(nullptr);
  EXPECT_EQ(grp_tensor_dtype(nullptr), GRP_F32);
  EXPECT_EQ(grp_tensor_rank(nullptr), 0u);
  EXPECT_EQ(grp_tensor_shape(nullptr), nullptr);
  EXPECT_EQ(grp_tensor_data(nullptr), nullptr);
  EXPECT_EQ(grp_tensor_nbytes(nullptr), 0u);
}

TEST(CapiModel, NoWeightsModelRunsWithoutWeights) {
  grp_model* m = load(kNoWeightsModel, false);
  EXPECT_EQ(grp_model_has_weights(m), 1);
  EXPECT_EQ(grp_model_num_weights(m), 0u);
  grp_session* s = open(m);
  const int64_t shape[1] = {4};
  const int32_t v[4] = {1, 2, 3, 4};
  EXPECT_OK(grp_session_set_input(s, "x", GRP_I32, shape, 1, v, sizeof v));
  EXPECT_OK(grp_session_run(s));
  const void* data = nullptr;
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, &data, nullptr));
  EXPECT_EQ(static_cast<const int32_t*>(data)[3], 5);
  // An empty input.
  const int64_t zero[1] = {0};
  EXPECT_OK(grp_session_set_input(s, "x", GRP_I32, zero, 1, nullptr, 0));
  EXPECT_OK(grp_session_run(s));
  size_t nbytes = 1;
  EXPECT_OK(grp_session_get_output(s, 0, nullptr, nullptr, nullptr, nullptr, &nbytes));
  EXPECT_EQ(nbytes, 0u);
  grp_session_destroy(s);
  grp_model_destroy(m);
}

// Sets an environment variable for one test and restores it afterwards.
struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  ScopedEnv(const char* n, const std::string& value) : name(n) {
    if (const char* v = std::getenv(n)) {
      had = true;
      old = v;
    }
    setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

// grp_model_options.limits: "NAME=N" entries that win over $GRAPE_LIMITS; a bad entry is an
// invalid argument.
TEST(CapiModel, Limits) {
  grp_model_options o = grp_model_default_options();
  EXPECT_EQ(o.limits, nullptr);
  EXPECT_EQ(o.num_limits, 0u);
  grp_model* m = nullptr;
  const char* tight[] = {"max_ops=100000", "max_ops=3"};  // the later one wins
  o.limits = tight;
  o.num_limits = 2;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m), GRP_ERR_TYPE,
             "more than 3 operations (the max_ops limit)");
  EXPECT_EQ(m, nullptr);
  {
    ScopedEnv env("GRAPE_LIMITS", "max_ops=3");
    EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", nullptr, &m), GRP_ERR_TYPE,
               "the max_ops limit");
    const char* raise[] = {"max_ops=100000"};
    o.limits = raise;
    o.num_limits = 1;
    EXPECT_OK(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m));
    grp_model_destroy(m);
    m = nullptr;
  }
  const char* unknown[] = {"max_opz=5"};
  o.limits = unknown;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "unknown limit 'max_opz' (the limits are max_ops,");
  const char* negative[] = {"max_ops=-1"};
  o.limits = negative;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "limit 'max_ops=-1': expected NAME=N");
  const char* nulls[] = {nullptr};
  o.limits = nulls;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "limits[0] is NULL");
  o.limits = nullptr;
  EXPECT_ERR(grp_model_load_source(kTestModel, std::strlen(kTestModel), "t", &o, &m),
             GRP_ERR_INVALID_ARGUMENT, "limits is NULL but num_limits is 1");
  EXPECT_EQ(m, nullptr);
}

TEST(CapiCompile, NullArgumentsAndBadArchs) {
  grp_model* m = load(kTestModel, false);
  char* report = reinterpret_cast<char*>(0x1);
  EXPECT_ERR(grp_model_compile_kernels(nullptr, "sm_80", &report), GRP_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_ERR(grp_model_compile_kernels(m, nullptr, &report), GRP_ERR_INVALID_ARGUMENT, "archs is NULL");
  EXPECT_ERR(grp_model_compile_kernels(m, "sm_80", nullptr), GRP_ERR_INVALID_ARGUMENT, "report is NULL");
  // The form of the list is checked before NVRTC is loaded.
  EXPECT_ERR(grp_model_compile_kernels(m, "", &report), GRP_ERR_INVALID_ARGUMENT, "empty target name");
  EXPECT_ERR(grp_model_compile_kernels(m, "sm_80,", &report), GRP_ERR_INVALID_ARGUMENT, "empty target name");
  EXPECT_ERR(grp_model_compile_kernels(m, "sm80", &report), GRP_ERR_INVALID_ARGUMENT,
             "'sm80' is not a target name");
  EXPECT_ERR(grp_model_compile_kernels(m, "sm_80,gfx90a", &report), GRP_ERR_INVALID_ARGUMENT, "'gfx90a'");
  {
    Err e(grp_model_compile_kernels(m, "sm_1", &report));
    ASSERT_FALSE(e.ok());
    if (e.code() == GRP_ERR_NO_DEVICE) {
      EXPECT_NE(e.msg().find("cannot compile kernels"), std::string::npos) << e.msg();
    } else {
      EXPECT_EQ(e.code(), GRP_ERR_INVALID_ARGUMENT) << e.msg();
      EXPECT_NE(e.msg().find("cannot compile for 'sm_1'"), std::string::npos) << e.msg();
    }
  }
  EXPECT_EQ(report, reinterpret_cast<char*>(0x1));
  grp_model_destroy(m);
}

TEST(CapiCompile, BundleRowCountsAreCheckedBeforeAnythingIsCompiled) {
  grp_model* m = load(kTestModel, false);
  char* report = reinterpret_cast<char*>(0x1);
  const std::string out = ::testing::TempDir() + "capi_rows.grpkb";
  EXPECT_ERR(grp_kernel_bundle_write_rows(m, "sm_80", nullptr, out.c_str(), &report),
             GRP_ERR_INVALID_ARGUMENT, "rows is NULL");
  for (const char* bad : {"0", "17", "5,", ",5", "5;8", " 5", "1000"})
    EXPECT_ERR(grp_kernel_bundle_write_rows(m, "sm_80", bad, out.c_str(), &report), GRP_ERR_INVALID_ARGUMENT,
               "is not a row count from 1 to 16");
  EXPECT_EQ(report, reinterpret_cast<char*>(0x1));
  EXPECT_FALSE(std::filesystem::exists(out));
  grp_model_destroy(m);
}

TEST(CapiCompile, EveryKernelCompiles) {
  grp_model* m = load(kTestModel, false);  // weights are not needed to compile
  char* report = nullptr;
  Err e(grp_model_compile_kernels(m, " sm_80 , sm_90,sm_80", &report));
  if (e.code() == GRP_ERR_NO_DEVICE) {
    grp_model_destroy(m);
    GTEST_SKIP() << "NVRTC cannot be loaded: " << e.msg();
  }
  ASSERT_TRUE(e.ok()) << e.msg();
  ASSERT_NE(report, nullptr);
  std::string r = report;
  grp_free(report);
  EXPECT_NE(r.find("targets: sm_80, sm_90\n"), std::string::npos) << r;
  for (const char* entry : {"main: ", "accumulate: ", "ident: "})
    EXPECT_NE(r.find(entry), std::string::npos) << r;
  EXPECT_NE(r.find("no errors or warnings"), std::string::npos) << r;
  grp_model_destroy(m);
}

TEST(CapiCompile, CompileWorkerArgumentsAreChecked) {
  // Not a worker's arguments: status 2, nothing served.
  char arg0[] = "prog", other[] = "run", worker[] = GRP_COMPILE_WORKER_ARG, zero[] = "0";
  char* not_worker[] = {arg0, other, nullptr};
  EXPECT_EQ(grp_compile_worker_main(2, not_worker), 2);
  EXPECT_EQ(grp_compile_worker_main(0, nullptr), 2);
  char* no_channels[] = {arg0, worker, nullptr};
  EXPECT_EQ(grp_compile_worker_main(2, no_channels), 2);
  char* zero_channels[] = {arg0, worker, zero, nullptr};
  EXPECT_EQ(grp_compile_worker_main(3, zero_channels), 2);
  // A worker that cannot start leaves the build to this process: the same report.
  grp_model* m = load(kTestModel, false);
  char* threads = nullptr;
  Err e(grp_model_compile_kernels(m, "compute_80", &threads));
  if (e.code() == GRP_ERR_NO_DEVICE) {
    grp_model_destroy(m);
    GTEST_SKIP() << "NVRTC cannot be loaded: " << e.msg();
  }
  ASSERT_TRUE(e.ok()) << e.msg();
  grp_set_compile_worker("/nonexistent/grape");
  char* missing = nullptr;
  Err e2(grp_model_compile_kernels(m, "compute_80", &missing));
  grp_set_compile_worker(nullptr);
  grp_model_destroy(m);
  ASSERT_TRUE(e2.ok()) << e2.msg();
  EXPECT_STREQ(threads, missing);
  grp_free(threads);
  grp_free(missing);
}

void record_progress(void* user, size_t done, size_t total) {
  static_cast<std::vector<std::pair<size_t, size_t>>*>(user)->emplace_back(done, total);
}

TEST(CapiCompile, BuildProgressCountsEveryBuild) {
  grp_model* m = load(kTestModel, false);
  std::vector<std::pair<size_t, size_t>> seen;
  grp_set_build_progress(record_progress, &seen);
  char* report = nullptr;
  Err e(grp_model_compile_kernels(m, "compute_80,compute_90", &report));
  grp_set_build_progress(nullptr, nullptr);
  grp_model_destroy(m);
  if (e.code() == GRP_ERR_NO_DEVICE) GTEST_SKIP() << "NVRTC cannot be loaded: " << e.msg();
  ASSERT_TRUE(e.ok()) << e.msg();
  grp_free(report);
  // One build over both targets (one pool, jit/parallel_compile.h): it counts from 0 of N up to
  // N of N, N the distinct (kernel, target) pairs, as many for each target.
  ASSERT_FALSE(seen.empty());
  size_t total = seen[0].second, builds = 0;
  ASSERT_GT(total, 0u);
  EXPECT_EQ(total % 2, 0u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].second, total) << i;
    EXPECT_EQ(seen[i].first, i % (total + 1)) << i;
    builds += seen[i].first == total;
  }
  EXPECT_EQ(builds, 1u);
  EXPECT_EQ(seen.size(), total + 1);
  // Removed: a later build reports nothing.
  seen.clear();
  m = load(kTestModel, false);
  Err again(grp_model_compile_kernels(m, "compute_80", &report));
  ASSERT_TRUE(again.ok()) << again.msg();
  grp_free(report);
  grp_model_destroy(m);
  EXPECT_TRUE(seen.empty());
}

TEST(CapiCache, InfoAndClear) {
  EXPECT_ERR(grp_cache_info(nullptr), GRP_ERR_INVALID_ARGUMENT, "out is NULL");
  std::string dir =
      (std::filesystem::temp_directory_path() /
       ("grape_capi_cache_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
        std::to_string(reinterpret_cast<uintptr_t>(&dir))))
          .string();
  std::filesystem::remove_all(dir);
  {
    ScopedEnv env("GRAPE_CACHE_DIR", dir);
    char* text = nullptr;
    EXPECT_OK(grp_cache_info(&text));
    ASSERT_NE(text, nullptr);
    EXPECT_EQ(std::string(text), "directory: " + dir + "/kernels\nentries: 0\nbytes: 0\ntuning file: " + dir +
                                     "/tuning/tuning.txt\ntuning decisions: 0\n");
    grp_free(text);
    std::ofstream(dir + "/kernels/0123456789abcdef0123456789abcdef.grpk") << "12345";
    // An autotuner's file whose one line is damaged (its check does not match): no valid decision.
    std::filesystem::create_directories(dir + "/tuning");
    std::ofstream(dir + "/tuning/tuning.txt")
        << "grape-tuning 1\n"
        << "0123456789abcdef0123456789abcdef mma64 1.000 0000000000000000\n";
    text = nullptr;
    EXPECT_OK(grp_cache_info(&text));
    ASSERT_NE(text, nullptr);
    EXPECT_NE(std::string(text).find("entries: 1\nbytes: 5\n"), std::string::npos) << text;
    EXPECT_NE(std::string(text).find("tuning decisions: 0\n"), std::string::npos) << text;
    grp_free(text);
    EXPECT_OK(grp_cache_clear());
    EXPECT_FALSE(std::filesystem::exists(dir + "/kernels/0123456789abcdef0123456789abcdef.grpk"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/tuning/tuning.txt"));
    EXPECT_TRUE(std::filesystem::is_directory(dir + "/kernels"));
  }
  {
    // A file where the cache folder should be: an IO error naming it, out-parameter untouched.
    std::ofstream(dir + "/blocker") << "x";
    ScopedEnv env("GRAPE_CACHE_DIR", dir + "/blocker");
    char* text = reinterpret_cast<char*>(0x1);
    EXPECT_ERR(grp_cache_info(&text), GRP_ERR_IO, "blocker");
    EXPECT_EQ(text, reinterpret_cast<char*>(0x1));
    EXPECT_ERR(grp_cache_clear(), GRP_ERR_IO, "blocker");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// Kernel profiles are measured only by the CUDA eager executor: on the CPU backend turning them
// on fails with a message saying so, and the (empty) profile reads back as such.
TEST(CapiProfile, CpuBackendSaysItDoesNotProfile) {
  grp_model* m = load();
  grp_session_options o = grp_session_default_options();
  o.backend = "cpu";
  grp_session* s = nullptr;
  EXPECT_OK(grp_session_create(m, &o, &s));
  ASSERT_NE(s, nullptr);
  EXPECT_ERR(grp_session_set_profiling(s, 1), GRP_ERR_UNSUPPORTED, "CUDA backend");
  EXPECT_ERR(grp_session_set_profiling(nullptr, 1), GRP_ERR_INVALID_ARGUMENT, "session");
  int64_t runs = -1;
  size_t count = 99;
  EXPECT_OK(grp_session_kernel_profile(s, &runs, &count));
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(count, 0u);
  EXPECT_OK(grp_session_kernel_profile(s, nullptr, nullptr));
  grp_kernel_profile k;
  std::memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  EXPECT_ERR(grp_session_kernel_profile_at(s, 0, &k), GRP_ERR_INVALID_ARGUMENT, "out of range");
  k.struct_size = sizeof(size_t);
  EXPECT_ERR(grp_session_kernel_profile_at(s, 0, &k), GRP_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_ERR(grp_session_kernel_profile_at(s, 0, nullptr), GRP_ERR_INVALID_ARGUMENT, "out");
  grp_session_destroy(s);
  grp_model_destroy(m);
}

}  // namespace
