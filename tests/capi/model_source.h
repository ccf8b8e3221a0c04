/* The .grp program the C API tests use: one weight, two states, three entries. */
#ifndef GRAPE_TESTS_CAPI_MODEL_SOURCE_H
#define GRAPE_TESTS_CAPI_MODEL_SOURCE_H

static const char kTestModel[] =
    "model capi_test\n"
    "const K = 3\n"
    "weights {\n"
    "  w: f32[K]\n"
    "}\n"
    "state acc: f32[M, K] = zeros\n"
    "state count: i32[] = zeros\n"
    "\n"
    "fn main(x: f32[B, K], scale: f32[]) -> (f32[B, K], f32[B]) {\n"
    "  let y = x * w * scale\n"
    "  return (y, sum(y, axis=1))\n"
    "}\n"
    "\n"
    "fn accumulate(x: f32[M, K]) -> (f32[M, K], i32[]) {\n"
    "  acc = acc + x\n"
    "  count = count + 1\n"
    "  return (acc, count)\n"
    "}\n"
    "\n"
    "fn ident(x: f32[B, K]) -> f32[B, K] {\n"
    "  return x\n"
    "}\n";

/* A program without weights. */
static const char kNoWeightsModel[] =
    "fn main(x: i32[N]) -> i32[N] {\n"
    "  return x + 1\n"
    "}\n";

/* A type error on line 2, column 10 ("return x + true": i32 + bool). */
static const char kBadModel[] =
    "fn main(x: i32[N]) -> i32[N] {\n"
    "  return x @ 1\n"
    "}\n";

#endif
