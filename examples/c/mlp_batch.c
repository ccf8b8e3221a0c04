/* Loads examples/mlp.grp, shrinks it with const overrides, gives it random weights, runs one
 * batch and prints each row's scores and its argmax. Uses only grape.h (C99).
 *
 *   mlp_batch [PATH/TO/mlp.grp]      (default: examples/mlp.grp)
 *
 * The input goes straight into the buffer the session hands out (no copy); the model computes
 * in f16, so the example converts to and from half precision. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape.h"

enum { BATCH = 4, D = 8, C = 4 };

/* Float to IEEE half for the values this example uses (normal range, rounded to nearest). */
static uint16_t to_half(float f) {
  uint32_t bits, sign, exp, man;
  memcpy(&bits, &f, sizeof bits);
  sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) == 0) return (uint16_t)sign;
  exp = ((bits >> 23) & 0xffu) - 127 + 15;
  man = (bits & 0x7fffffu) + 0x1000u; /* round to nearest */
  if (man & 0x800000u) {
    man = 0;
    ++exp;
  }
  return (uint16_t)(sign | (exp << 10) | (man >> 13));
}

static float from_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  float f;
  if (exp == 0 && man == 0) bits = sign;
  else if (exp == 0) return (sign ? -1.0f : 1.0f) * (float)man / 16777216.0f; /* subnormal: man * 2^-24 */
  else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Prints and frees an error; returns 1 if there was one. */
static int failed(grp_error* e, const char* what) {
  if (!e) return 0;
  fprintf(stderr, "%s: %s\n", what, grp_error_message(e));
  grp_error_free(e);
  return 1;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "examples/mlp.grp";
  const char* defines[] = {"D=8", "H=16", "C=4"};
  grp_model_options mopts = grp_model_default_options();
  grp_session_options sopts = grp_session_default_options();
  grp_model* model = NULL;
  grp_session* session = NULL;
  const int64_t shape[2] = {BATCH, D};
  void* buffer = NULL;
  size_t nbytes = 0, rank = 0, i, j;
  const int64_t* out_shape = NULL;
  const void* out = NULL;
  grp_dtype dtype;
  int status = 1;

  if (grp_version_number() < GRAPE_VERSION_NUMBER) {
    fprintf(stderr, "libgrape %s is older than this program's grape.h %s\n", grp_version_string(), GRAPE_VERSION_STRING);
    return 1;
  }
  mopts.defines = defines;
  mopts.num_defines = 3;
  if (failed(grp_model_load_file(path, &mopts, &model), "load")) goto done;
  if (failed(grp_model_set_random_weights(model, 0), "weights")) goto done;
  if (failed(grp_session_create(model, &sopts, &session), "session")) goto done;

  if (failed(grp_session_input_buffer(session, "x", GRP_F16, shape, 2, &buffer, &nbytes), "input")) goto done;
  for (i = 0; i < BATCH * D; ++i) ((uint16_t*)buffer)[i] = to_half((float)((int)(i % 17) - 8) / 8.0f);

  if (failed(grp_session_run(session), "run")) goto done;
  if (failed(grp_session_get_output(session, 0, &dtype, &out_shape, &rank, &out, &nbytes), "output")) goto done;
  printf("grape %s: %s output %s[%lld, %lld]\n", grp_version_string(), path, grp_dtype_name(dtype),
         (long long)out_shape[0], (long long)out_shape[1]);
  for (i = 0; i < (size_t)out_shape[0]; ++i) {
    size_t best = 0;
    const uint16_t* row = (const uint16_t*)out + i * C;
    printf("row %lu:", (unsigned long)i);
    for (j = 0; j < C; ++j) {
      printf(" %+.4f", from_half(row[j]));
      if (from_half(row[j]) > from_half(row[best])) best = j;
    }
    printf("  argmax %lu\n", (unsigned long)best);
  }
  status = 0;
done:
  grp_session_destroy(session);
  grp_model_destroy(model);
  return status;
}
