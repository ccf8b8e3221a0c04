// Every example and snippet of the language reference (design/language.md) parses.
#include <gtest/gtest.h>

#include "tests/lang/parse_helpers.h"

namespace grape::testing {
namespace {

TEST(LanguageExamples, FirstExample) {
  auto p = parse(R"(model mlp

const D = 784
const H = 4096

weights {
  fc1.weight: f16[H, D]
  fc1.bias:   f16[H]
  fc2.weight: f16[10, H]
  fc2.bias:   f16[10]
}

fn main(x: f16[B, D]) -> f16[B, 10] {
  let h = gelu(linear(x, fc1.weight, fc1.bias))
  return linear(h, fc2.weight, fc2.bias)
}
)");
  ASSERT_EQ(p->errors(), "");
  EXPECT_EQ(dump(p->program), R"(model mlp
const D = 784
const H = 4096
weights {fc1.weight: f16[H, D]; fc1.bias: f16[H]; fc2.weight: f16[10, H]; fc2.bias: f16[10]}
fn main(x: f16[B, D]) -> f16[B, 10] {(let h = (call gelu (call linear x (. fc1 weight) (. fc1 bias)))); (return (call linear h (. fc2 weight) (. fc2 bias)))}
)");
}

TEST(LanguageExamples, GreedyGeneration) {
  auto p = parse(R"(
fn generate(prompt: i32[B, S], max_new: i32[]) -> i32[B, N] {
  var out = full((B, N), PAD, i32)
  var done = zeros((B), bool)
  var tok = prompt[:, S-1]
  var t = 0
  while t < max_new max N {
    let logits = decode_step(tok)            # updates the state KV cache
    let next = argmax(logits, axis=-1)
    out[:, t] = where(done, PAD, next)
    done = done or (next == EOS)
    if all(done) { break }
    tok = next
    t = t + 1
  }
  return out
}
)");
  ASSERT_EQ(p->errors(), "");
  EXPECT_EQ(dump(p->program.fns.at(0).body),
            "{(var out = (call full (tuple B N) PAD i32)); (var done = (call zeros B bool)); "
            "(var tok = (index prompt (: _ _) (- S 1))); (var t = 0); "
            "(while (< t max_new) max N {(let logits = (call decode_step tok)); "
            "(let next = (call argmax logits axis=(- 1))); (assign (index out (: _ _) t) (call where done PAD next)); "
            "(assign done (or done (== next EOS))); (if (call all done) {(break)}); (assign tok next); "
            "(assign t (+ t 1))}); (return out)}");
}

TEST(LanguageExamples, Snippets) {
  auto p = parse(R"(
const L = 2
weights prefix "transformer." {
  h[L] { ln_1.weight: f16[E] }
  h.3.attn.c_attn.bias: f16[3*E]
}
state kc: f16[L, B, NH, T, E/NH] = zeros
state counter: i32[] = full(0)
state flags: bool[S+1] = ones
fn f(x: f16[B, 768], i: int) -> (f16[B, 3072], f32[]) {
  let a = h[i].ln_1.weight
  let a, b, c = split(x, 3, axis=-1)
  var v: f16[B, 768] = x
  var w = x * 2
  w = cast(x, f32)
  kc[:, :, t, :] = k
  if c { w = 1 } else if d { w = 2 } else { w = 3 }
  for i in 0..4 { continue }
  while c { break }
  while c max N { }
  let y = x[i] + x[:, -1, :] + x[a:b] + x[..., 0]
  let z = zeros(N, f32) + zeros((N), f32) + zeros((B, N), f32)
  let g = gelu(x, approximate="tanh") + gelu(x, approximate="none")
  let s = sum(x, axis=(0, 1), keepdims=true) + mean(x) + max(x, axis=0)
  let m = softmax(x, axis=-1) + layer_norm(x, g, b, eps=1e-5) + rms_norm(x, g, eps=1e-6)
  let mm = x @ transpose(y, 0, 1) + permute(x, (1, 0)) + reshape(x, (-1, 4))
  let cc = concat((a, b), axis=0)
  let vals, idx = topk(x, k, axis=-1)
  let mask = causal_mask(S, T, offset) and not isnan(x) or x % 2 == 0
  let e = take(x, idx, axis=0) * .5 + 1.0 - 1e-5
  return (e, s)
}
)");
  EXPECT_EQ(p->errors(), "");
  EXPECT_EQ(p->program.fns.at(0).body->stmts.size(), 21u);
}

}  // namespace
}  // namespace grape::testing

#include <filesystem>
#include <fstream>
#include <sstream>

namespace grape::testing {
namespace {

TEST(LanguageExamples, ExampleModelsParse) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(GRAPE_SOURCE_DIR) / "examples";
  if (!fs::exists(dir)) GTEST_SKIP() << "no examples/";
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".grp") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto p = parse(text.str());
    EXPECT_EQ(p->errors(), "") << entry.path();
    EXPECT_FALSE(p->program.fns.empty()) << entry.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace grape::testing
