/* The C API from C99: the v1 core and its error paths, as a C caller sees them. Built with
 * -std=c99 -pedantic; exits 0 when every check passes, 1 otherwise (each failure is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape.h"
#include "model_source.h"

static int failures = 0;

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

/* Expects success; prints and frees the error otherwise. */
#define OK(call)                                                                              \
  do {                                                                                        \
    grp_error* e_ = (call);                                                                   \
    if (e_) {                                                                                 \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, grp_error_message(e_)); \
      grp_error_free(e_);                                                                     \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

/* Expects an error with `code` whose message contains `fragment`. */
static void expect_error(grp_error* e, grp_code code, const char* fragment, int line) {
  if (!e) {
    fprintf(stderr, "%s:%d: expected error %d, got success\n", __FILE__, line, (int)code);
    ++failures;
    return;
  }
  if (grp_error_code(e) != code || strstr(grp_error_message(e), fragment) == NULL) {
    fprintf(stderr, "%s:%d: expected error %d containing '%s', got %d: %s\n", __FILE__, line, (int)code, fragment,
            (int)grp_error_code(e), grp_error_message(e));
    ++failures;
  }
  grp_error_free(e);
}
#define EXPECT_ERROR(call, code, fragment) expect_error((call), (code), (fragment), __LINE__)

static grp_model* load_test_model(void) {
  grp_model* m = NULL;
  OK(grp_model_load_source(kTestModel, strlen(kTestModel), "capi_test.grp", NULL, &m));
  if (m) OK(grp_model_set_random_weights(m, 7));
  return m;
}

static void test_version(void) {
  CHECK(grp_version_number() == GRAPE_VERSION_NUMBER);
  CHECK(strcmp(grp_version_string(), GRAPE_VERSION_STRING) == 0);
  CHECK(GRAPE_VERSION_NUMBER == GRAPE_VERSION_MAJOR * 1000000 + GRAPE_VERSION_MINOR * 1000 + GRAPE_VERSION_PATCH);
}

static void test_errors(void) {
  grp_model* m = (grp_model*)&failures; /* a sentinel: must stay untouched */
  grp_error* e;
  const char* file = NULL;
  uint32_t line = 0, col = 0;
  CHECK(grp_error_code(NULL) == GRP_OK);
  CHECK(strcmp(grp_error_message(NULL), "") == 0);
  CHECK(grp_error_location(NULL, &file, &line, &col) == 0);
  grp_error_free(NULL);

  e = grp_model_load_source(kBadModel, strlen(kBadModel), "bad.grp", NULL, &m);
  CHECK(grp_error_code(e) == GRP_ERR_TYPE);
  CHECK(strstr(grp_error_message(e), "bad.grp:2:10: error:") != NULL);
  CHECK(grp_error_location(e, &file, &line, &col) == 1);
  CHECK(file && strcmp(file, "bad.grp") == 0);
  CHECK(line == 2 && col == 10);
  CHECK(m == (grp_model*)&failures);
  grp_error_free(e);

  e = grp_model_load_source("fn (", 4, "syntax.grp", NULL, &m);
  CHECK(grp_error_code(e) == GRP_ERR_SYNTAX);
  CHECK(grp_error_location(e, NULL, &line, NULL) == 1 && line == 1);
  CHECK(m == (grp_model*)&failures);
  grp_error_free(e);

  EXPECT_ERROR(grp_model_load_file("/nonexistent/x.grp", NULL, &m), GRP_ERR_IO, "/nonexistent/x.grp");
  EXPECT_ERROR(grp_model_load_file(NULL, NULL, &m), GRP_ERR_INVALID_ARGUMENT, "path");
  EXPECT_ERROR(grp_model_load_source(kTestModel, strlen(kTestModel), "t", NULL, NULL), GRP_ERR_INVALID_ARGUMENT, "out");
  CHECK(m == (grp_model*)&failures);
}

static void test_model(void) {
  grp_model* m = NULL;
  grp_model_options o = grp_model_default_options();
  const char* defines[] = {"K=4"};
  const char* bad_defines[] = {"Q=4"};
  const char* malformed[] = {"K"};
  grp_dtype dt = GRP_BOOL;
  const int64_t* shape = NULL;
  size_t rank = 99;

  CHECK(o.struct_size == sizeof(grp_model_options));
  CHECK(o.num_defines == 0 && o.defines == NULL);

  o.defines = defines;
  o.num_defines = 1;
  OK(grp_model_load_source(kTestModel, strlen(kTestModel), "t.grp", &o, &m));
  CHECK(grp_model_num_entries(m) == 3);
  CHECK(strcmp(grp_model_entry_name(m, 0), "main") == 0);
  CHECK(strcmp(grp_model_entry_name(m, 2), "ident") == 0);
  CHECK(grp_model_entry_name(m, 3) == NULL);
  CHECK(grp_model_num_weights(m) == 1);
  CHECK(strcmp(grp_model_weight_name(m, 0), "w") == 0);
  OK(grp_model_weight_info(m, 0, &dt, &shape, &rank));
  CHECK(dt == GRP_F32 && rank == 1 && shape[0] == 4);
  EXPECT_ERROR(grp_model_weight_info(m, 1, &dt, &shape, &rank), GRP_ERR_INVALID_ARGUMENT, "out of range");
  CHECK(grp_model_has_weights(m) == 0);
  grp_model_destroy(m);
  m = NULL;

  o.defines = bad_defines;
  EXPECT_ERROR(grp_model_load_source(kTestModel, strlen(kTestModel), "t.grp", &o, &m), GRP_ERR_INVALID_ARGUMENT,
               "no const 'Q'");
  o.defines = malformed;
  EXPECT_ERROR(grp_model_load_source(kTestModel, strlen(kTestModel), "t.grp", &o, &m), GRP_ERR_INVALID_ARGUMENT,
               "defines[0]");
  o.struct_size = 3;
  EXPECT_ERROR(grp_model_load_source(kTestModel, strlen(kTestModel), "t.grp", &o, &m), GRP_ERR_INVALID_ARGUMENT,
               "struct_size");
  CHECK(m == NULL);

  EXPECT_ERROR(grp_model_set_random_weights(NULL, 1), GRP_ERR_INVALID_ARGUMENT, "model");
  EXPECT_ERROR(grp_model_set_weights_file(NULL, "x"), GRP_ERR_INVALID_ARGUMENT, "model");
  grp_model_destroy(NULL);
  CHECK(grp_model_num_entries(NULL) == 0);
  CHECK(grp_model_entry_name(NULL, 0) == NULL);
}

/* A dtype outside the enum, as a C caller may pass one. */
static void test_bad_dtype(void) {
  grp_model* m = load_test_model();
  grp_session* s = NULL;
  grp_tensor* t = NULL;
  const int64_t shape[1] = {3};
  const float v[3] = {0, 0, 0};
  grp_dtype bad = (grp_dtype)17;
  CHECK(grp_dtype_size(bad) == 0);
  CHECK(strcmp(grp_dtype_name((grp_dtype)-1), "") == 0);
  EXPECT_ERROR(grp_tensor_create(bad, shape, 1, v, sizeof v, &t), GRP_ERR_INVALID_ARGUMENT, "not a grp_dtype");
  CHECK(t == NULL);
  OK(grp_session_create(m, NULL, &s));
  EXPECT_ERROR(grp_session_set_input(s, "scale", bad, NULL, 0, v, 4), GRP_ERR_INVALID_ARGUMENT, "not a grp_dtype");
  EXPECT_ERROR(grp_npy_write("/tmp/never.npy", bad, shape, 1, v, sizeof v), GRP_ERR_INVALID_ARGUMENT, "not a grp_dtype");
  grp_session_destroy(s);
  grp_model_destroy(m);
}

static void test_session_core(void) {
  grp_model* m = load_test_model();
  grp_session* s = NULL;
  grp_session_options so = grp_session_default_options();
  const int64_t shape[2] = {2, 3};
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const float scale = 2.0f;
  grp_dtype dt;
  const int64_t* oshape;
  size_t rank, nbytes, i;
  const void* data;
  const float* y;
  float w[3];

  CHECK(so.struct_size == sizeof(grp_session_options));
  CHECK(so.entry == NULL && so.device == 0);
  OK(grp_session_create(m, &so, &s));
  if (!s) {
    grp_model_destroy(m);
    return;
  }
  CHECK(grp_session_num_inputs(s) == 2);
  CHECK(strcmp(grp_session_input_name(s, 0), "x") == 0);
  CHECK(strcmp(grp_session_input_name(s, 1), "scale") == 0);
  CHECK(grp_session_input_name(s, 2) == NULL);
  CHECK(grp_session_num_outputs(s) == 2);

  /* Before a run there are no outputs. */
  EXPECT_ERROR(grp_session_get_output(s, 0, &dt, &oshape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
               "grp_session_run");
  /* A missing input is reported by run. */
  OK(grp_session_set_input(s, "x", GRP_F32, shape, 2, x, sizeof x));
  EXPECT_ERROR(grp_session_run(s), GRP_ERR_INVALID_ARGUMENT, "missing input 'scale'");
  /* Rejected inputs. */
  EXPECT_ERROR(grp_session_set_input(s, "scal", GRP_F32, NULL, 0, &scale, 4), GRP_ERR_INVALID_ARGUMENT,
               "unknown input 'scal'");
  EXPECT_ERROR(grp_session_set_input(s, "scale", GRP_I32, NULL, 0, &scale, 4), GRP_ERR_TYPE, "expected f32[]");
  EXPECT_ERROR(grp_session_set_input(s, "scale", GRP_F32, shape, 1, &scale, 4), GRP_ERR_TYPE, "expected f32[]");
  EXPECT_ERROR(grp_session_set_input(s, "scale", GRP_F32, NULL, 0, &scale, 8), GRP_ERR_INVALID_ARGUMENT, "8 bytes");
  EXPECT_ERROR(grp_session_set_input(s, "scale", GRP_F32, NULL, 0, NULL, 4), GRP_ERR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(grp_session_set_input(s, NULL, GRP_F32, NULL, 0, &scale, 4), GRP_ERR_INVALID_ARGUMENT, "name");
  EXPECT_ERROR(grp_session_set_input(NULL, "scale", GRP_F32, NULL, 0, &scale, 4), GRP_ERR_INVALID_ARGUMENT,
               "session");
  {
    const int64_t wrong[2] = {2, 4};
    EXPECT_ERROR(grp_session_set_input(s, "x", GRP_F32, wrong, 2, x, 32), GRP_ERR_TYPE, "dim 1 is 4");
  }
  /* The session is still usable. */
  OK(grp_session_set_input(s, "scale", GRP_F32, NULL, 0, &scale, sizeof scale));
  OK(grp_session_run(s));
  OK(grp_session_get_output(s, 0, &dt, &oshape, &rank, &data, &nbytes));
  CHECK(dt == GRP_F32 && rank == 2 && oshape[0] == 2 && oshape[1] == 3 && nbytes == 24);
  y = (const float*)data;
  /* y = x * w * scale: recover w from row 0 and check row 1 against it. */
  for (i = 0; i < 3; ++i) w[i] = y[i] / (x[i] * scale);
  for (i = 0; i < 3; ++i) CHECK(fabsf(y[3 + i] - x[3 + i] * w[i] * scale) < 1e-5f);
  OK(grp_session_get_output(s, 1, &dt, &oshape, &rank, &data, &nbytes));
  CHECK(dt == GRP_F32 && rank == 1 && oshape[0] == 2 && nbytes == 8);
  CHECK(fabsf(((const float*)data)[0] - (y[0] + y[1] + y[2])) < 1e-5f);
  EXPECT_ERROR(grp_session_get_output(s, 2, &dt, &oshape, &rank, &data, &nbytes), GRP_ERR_INVALID_ARGUMENT,
               "out of range");
  OK(grp_session_reset_state(s));
  EXPECT_ERROR(grp_session_reset_state(NULL), GRP_ERR_INVALID_ARGUMENT, "session");
  grp_session_destroy(s);
  grp_session_destroy(NULL);

  so.entry = "mian";
  s = NULL;
  EXPECT_ERROR(grp_session_create(m, &so, &s), GRP_ERR_INVALID_ARGUMENT, "did you mean 'main'");
  so.entry = NULL;
  if (!grp_backend_available("cuda")) { /* no GPU here */
    so.backend = "cuda";
    EXPECT_ERROR(grp_session_create(m, &so, &s), GRP_ERR_NO_DEVICE, "CUDA");
  }
  so.backend = "cpu";
  so.executor = "graph";
  EXPECT_ERROR(grp_session_create(m, &so, &s), GRP_ERR_UNSUPPORTED, "graph");
  CHECK(s == NULL);
  grp_model_destroy(m);
}

static void test_state(void) {
  grp_model* m = load_test_model();
  grp_session* s = NULL;
  grp_session_options so = grp_session_default_options();
  const int64_t shape[2] = {1, 3};
  const float x[3] = {1, 2, 3};
  const void* data;
  size_t nbytes;
  int run;
  so.entry = "accumulate";
  OK(grp_session_create(m, &so, &s));
  grp_model_destroy(m); /* the session keeps what it needs */
  if (!s) return;
  OK(grp_session_set_input(s, "x", GRP_F32, shape, 2, x, sizeof x));
  for (run = 1; run <= 3; ++run) OK(grp_session_run(s));
  OK(grp_session_get_output(s, 0, NULL, NULL, NULL, &data, &nbytes));
  CHECK(nbytes == 12 && ((const float*)data)[2] == 9.0f);
  OK(grp_session_get_output(s, 1, NULL, NULL, NULL, &data, NULL));
  CHECK(*(const int32_t*)data == 3);
  OK(grp_session_reset_state(s));
  OK(grp_session_run(s));
  OK(grp_session_get_output(s, 1, NULL, NULL, NULL, &data, NULL));
  CHECK(*(const int32_t*)data == 1);
  grp_session_destroy(s);
}

int main(void) {
  test_version();
  test_errors();
  test_model();
  test_bad_dtype();
  test_session_core();
  test_state();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
