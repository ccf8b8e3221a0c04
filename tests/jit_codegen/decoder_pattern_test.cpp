// The decode-step recognizer (scheduler/decoder_pattern.h): it finds examples/gpt2.grp's one-token
// steps, and nothing else. A false match would let a specialised executor compute the wrong thing,
// so most cases here are programs that differ from the pattern in one detail, each of which must be
// rejected with a `why` that names the op where it differs, as `grape ir` prints it.
#include "scheduler/decoder_pattern.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/printer.h"
#include "tests/jit_codegen/codegen_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

const std::map<std::string, int64_t> kTinyGpt2 = {{"L", 2},  {"E", 64}, {"NH", 4}, {"V", 128},
                                                  {"P", 64}, {"T", 64}, {"N", 8}};

std::string weight_name(const ir::Function& f, ir::ValueId v) {
  for (const auto& op : f.body.ops)
    if (op.op == ir::Op::Weight && op.results[0] == v) return op.attrs.name;
  return "(not a weight)";
}

std::string state_read_name(const ir::Function& f, ir::ValueId v) {
  for (const auto& op : f.body.ops)
    if (op.op == ir::Op::StateRead && op.results[0] == v) return op.attrs.name;
  return "(not a state_read)";
}

// The match of `entry`, which must exist (why is the failure message).
scheduler::DecoderStepMatch expect_match(const ir::Function& f) {
  std::string why;
  auto m = scheduler::match_decoder_step(f, why);
  EXPECT_TRUE(m.has_value()) << f.name << ": " << why << "\n" << ir::print_function(f);
  EXPECT_EQ(why, "");
  return m.value_or(scheduler::DecoderStepMatch{});
}

// `f` must not match, and `why` must start with the op where it differs: "op %N: ..." where
// `grape ir` prints "%N = op", or `state_write "state": ...` for a state_write (it has no result).
void expect_rejected_at(const ir::Function& f, const std::string& op) {
  std::string why;
  EXPECT_FALSE(scheduler::match_decoder_step(f, why).has_value()) << f.name;
  if (op == "state_write") {
    EXPECT_EQ(why.rfind("state_write \"", 0), 0u) << why;
    return;
  }
  std::string named = op + " %";
  ASSERT_EQ(why.rfind(named, 0), 0u) << "why does not start with a " << op << ": " << why;
  std::string number = why.substr(named.size(), why.find(':') - named.size());
  ASSERT_FALSE(number.empty()) << why;
  EXPECT_NE(ir::print_function(f).find("  %" + number + " = " + op + " "), std::string::npos)
      << "why names %" << number << ", which is not a " << op << " in the dump: " << why << "\n"
      << ir::print_function(f);
}

void expect_gpt2_layers(const ir::Function& f, const scheduler::DecoderStepMatch& m) {
  ASSERT_EQ(m.layers.size(), 2u);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const auto& layer = m.layers[l];
    std::string h = "transformer.h." + std::to_string(l) + ".";
    EXPECT_EQ(weight_name(f, layer.ln1_scale), h + "ln_1.weight");
    EXPECT_EQ(weight_name(f, layer.ln1_shift), h + "ln_1.bias");
    EXPECT_EQ(weight_name(f, layer.qkv_weight), h + "attn.c_attn.weight");
    EXPECT_EQ(weight_name(f, layer.qkv_bias), h + "attn.c_attn.bias");
    EXPECT_EQ(weight_name(f, layer.proj_weight), h + "attn.c_proj.weight");
    EXPECT_EQ(weight_name(f, layer.proj_bias), h + "attn.c_proj.bias");
    EXPECT_EQ(weight_name(f, layer.ln2_scale), h + "ln_2.weight");
    EXPECT_EQ(weight_name(f, layer.ln2_shift), h + "ln_2.bias");
    EXPECT_EQ(weight_name(f, layer.fc_weight), h + "mlp.c_fc.weight");
    EXPECT_EQ(weight_name(f, layer.fc_bias), h + "mlp.c_fc.bias");
    EXPECT_EQ(weight_name(f, layer.fc2_weight), h + "mlp.c_proj.weight");
    EXPECT_EQ(weight_name(f, layer.fc2_bias), h + "mlp.c_proj.bias");
    EXPECT_DOUBLE_EQ(layer.ln1_eps, 1e-5);
    EXPECT_DOUBLE_EQ(layer.ln2_eps, 1e-5);
  }
  EXPECT_EQ(weight_name(f, m.token_table), "transformer.wte.weight");
  EXPECT_EQ(weight_name(f, m.position_table), "transformer.wpe.weight");
  EXPECT_EQ(weight_name(f, m.lnf_scale), "transformer.ln_f.weight");
  EXPECT_EQ(weight_name(f, m.lnf_shift), "transformer.ln_f.bias");
  EXPECT_DOUBLE_EQ(m.lnf_eps, 1e-5);
  EXPECT_EQ(m.head_weight, m.token_table);  // lm_head is tied to wte
  EXPECT_TRUE(m.head_transposed);
  ASSERT_EQ(f.body.yields.size(), 1u);
  EXPECT_EQ(m.logits, f.body.yields[0]);
  EXPECT_EQ(m.embed, 64);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.head_dim, 16);
  EXPECT_EQ(m.ffn, 256);
  EXPECT_EQ(m.vocab, 128);
  EXPECT_EQ(m.cache_len, 64);
  EXPECT_NEAR(m.scale, 1.0 / std::sqrt(16.0), 1e-3);
  EXPECT_DOUBLE_EQ(m.masked_value, -10000.0);
}

TEST(DecoderPattern, MatchesDecodeStep) {
  auto c = compile_file("examples/gpt2.grp", kTinyGpt2);
  ASSERT_TRUE(c->mod);
  const ir::Function& f = *c->mod->find("decode_step");
  scheduler::DecoderStepMatch m = expect_match(f);
  expect_gpt2_layers(f, m);
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(m.tokens, f.params[0].value);
  EXPECT_EQ(m.position, f.params[1].value);
  EXPECT_EQ(m.position_state, "");
  EXPECT_EQ(m.k_cache, "kc");
  EXPECT_EQ(m.v_cache, "vc");
}

TEST(DecoderPattern, MatchesDecodeWithItsPositionState) {
  auto c = compile_file("examples/gpt2.grp", kTinyGpt2);
  ASSERT_TRUE(c->mod);
  const ir::Function& f = *c->mod->find("decode");
  scheduler::DecoderStepMatch m = expect_match(f);
  expect_gpt2_layers(f, m);
  ASSERT_EQ(f.params.size(), 1u);
  EXPECT_EQ(m.tokens, f.params[0].value);
  EXPECT_EQ(m.position_state, "pos");
  EXPECT_EQ(state_read_name(f, m.position), "pos");
  EXPECT_EQ(m.k_cache, "kc");
  EXPECT_EQ(m.v_cache, "vc");
}

TEST(DecoderPattern, MatchesBeamDecodeOnTheBeamCache) {
  auto c = compile_file("examples/gpt2.grp", kTinyGpt2);
  ASSERT_TRUE(c->mod);
  const ir::Function& f = *c->mod->find("beam_decode");
  scheduler::DecoderStepMatch m = expect_match(f);
  expect_gpt2_layers(f, m);
  EXPECT_EQ(m.k_cache, "bkc");
  EXPECT_EQ(m.v_cache, "bvc");
  EXPECT_EQ(m.position_state, "bpos");
  EXPECT_EQ(state_read_name(f, m.position), "bpos");
}

// The layer count is the cache's first dim, whatever it is.
TEST(DecoderPattern, CountsTheLayers) {
  std::map<std::string, int64_t> defines = kTinyGpt2;
  defines["L"] = 3;
  auto c = compile_file("examples/gpt2.grp", defines);
  ASSERT_TRUE(c->mod);
  EXPECT_EQ(expect_match(*c->mod->find("decode_step")).layers.size(), 3u);
}

TEST(DecoderPattern, RejectsTheOtherGpt2Entries) {
  auto c = compile_file("examples/gpt2.grp", kTinyGpt2);
  ASSERT_TRUE(c->mod);
  for (const char* entry : {"forward", "prefill", "generate", "beam_prefill", "beam_search"}) {
    const ir::Function* f = c->mod->find(entry);
    ASSERT_NE(f, nullptr) << entry;
    std::string why;
    EXPECT_FALSE(scheduler::match_decoder_step(*f, why).has_value()) << entry;
    EXPECT_NE(why, "") << entry;
  }
}

// gpt2.grp's decode path, cut down to what decode_step needs: each test below changes one detail.
constexpr const char* kTinyDecoder = R"(
model tiny
const L = 1
const E = 16
const NH = 2
const HD = E / NH
const V = 32
const P = 16
const T = 16

weights prefix "transformer." {
  wte.weight: f16[V, E]
  wpe.weight: f16[P, E]
  h[L] {
    ln_1.weight: f16[E]
    ln_1.bias:   f16[E]
    attn.c_attn.weight: f16[E, 3*E]
    attn.c_attn.bias:   f16[3*E]
    attn.c_proj.weight: f16[E, E]
    attn.c_proj.bias:   f16[E]
    ln_2.weight: f16[E]
    ln_2.bias:   f16[E]
    mlp.c_fc.weight:   f16[E, 4*E]
    mlp.c_fc.bias:     f16[4*E]
    mlp.c_proj.weight: f16[4*E, E]
    mlp.c_proj.bias:   f16[E]
  }
  ln_f.weight: f16[E]
  ln_f.bias:   f16[E]
}

state kc: f16[L, B, NH, T, HD] = zeros
state vc: f16[L, B, NH, T, HD] = zeros
state pos: i32[] = zeros

fn conv1d(x: f16[B, S, I], w: f16[I, O], b: f16[O]) -> f16[B, S, O] {
  return x @ w + b
}

fn heads(x: f16[B, S, E]) -> f16[B, NH, S, HD] {
  return transpose(reshape(x, (B, S, NH, HD)), 1, 2)
}

fn merge_heads(x: f16[B, NH, S, HD]) -> f16[B, S, E] {
  return reshape(transpose(x, 1, 2), (B, S, E))
}

fn qkv(x: f16[B, S, E], l: int) -> (f16[B, NH, S, HD], f16[B, NH, S, HD], f16[B, NH, S, HD]) {
  let a = layer_norm(x, h[l].ln_1.weight, h[l].ln_1.bias, eps=1e-5)
  let q, k, v = split(conv1d(a, h[l].attn.c_attn.weight, h[l].attn.c_attn.bias), 3, axis=-1)
  return (heads(q), heads(k), heads(v))
}

fn attend(q: f16[B, NH, S, HD], k: f16[B, NH, K, HD], v: f16[B, NH, K, HD],
          mask: bool[S, K]) -> f16[B, NH, S, HD] {
  let att = (q @ transpose(k, 2, 3)) * rsqrt(cast(HD, f16))
  return softmax(where(mask, att, -10000.0), axis=-1) @ v
}

fn attn_proj(x: f16[B, S, E], y: f16[B, NH, S, HD], l: int) -> f16[B, S, E] {
  return x + conv1d(merge_heads(y), h[l].attn.c_proj.weight, h[l].attn.c_proj.bias)
}

fn ffn(x: f16[B, S, E], l: int) -> f16[B, S, E] {
  let a = layer_norm(x, h[l].ln_2.weight, h[l].ln_2.bias, eps=1e-5)
  let f = gelu(conv1d(a, h[l].mlp.c_fc.weight, h[l].mlp.c_fc.bias), approximate="tanh")
  return x + conv1d(f, h[l].mlp.c_proj.weight, h[l].mlp.c_proj.bias)
}

fn lm_head(x: f16[B, S, E]) -> f16[B, S, V] {
  return linear(layer_norm(x, ln_f.weight, ln_f.bias, eps=1e-5), wte.weight)
}

fn decode_step(tok: i32[B], p: i32[]) -> f16[B, V] {
  var x = take(wte.weight, reshape(tok, (B, 1)), axis=0) + wpe.weight[p]
  let mask = reshape(arange(T, i32) <= p, (1, T))
  for l in 0..L {
    let q, k, v = qkv(x, l)
    kc[l, :, :, p, :] = k[:, :, 0, :]
    vc[l, :, :, p, :] = v[:, :, 0, :]
    x = ffn(attn_proj(x, attend(q, kc[l], vc[l], mask), l), l)
  }
  let logits = lm_head(x)
  return logits[:, 0, :]
}

fn decode(tok: i32[B]) -> f16[B, V] {
  let logits = decode_step(tok, pos)
  pos = pos + 1
  return logits
}
)";

// kTinyDecoder with each edit's `from` (which must occur exactly once) replaced by its `to`.
using Edits = std::vector<std::pair<std::string, std::string>>;

std::unique_ptr<Compiled> tiny_decoder_with(const Edits& edits, int64_t layers = 1) {
  std::string text = kTinyDecoder;
  for (const auto& [from, to] : edits) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return compile_text("tiny_decoder.grp", text, {{"L", layers}});
}

// The control: the unchanged program matches, so each rejection below is the change's doing.
TEST(DecoderPattern, MatchesTheTinyDecoder) {
  for (int64_t layers : {1, 2}) {
    auto c = tiny_decoder_with({}, layers);
    ASSERT_TRUE(c->mod);
    scheduler::DecoderStepMatch m = expect_match(*c->mod->find("decode_step"));
    EXPECT_EQ(m.layers.size(), static_cast<size_t>(layers));
    EXPECT_EQ(m.embed, 16);
    EXPECT_EQ(m.heads, 2);
    EXPECT_EQ(m.head_dim, 8);
    EXPECT_EQ(m.ffn, 64);
    EXPECT_EQ(m.vocab, 32);
    EXPECT_EQ(m.cache_len, 16);
  }
  auto c = tiny_decoder_with({});
  ASSERT_TRUE(c->mod);
  EXPECT_EQ(expect_match(*c->mod->find("decode")).position_state, "pos");
}

// An lm_head of its own, [E, V], applied with a matmul rather than wte's `linear`.
TEST(DecoderPattern, MatchesAnUntiedHead) {
  auto c =
      tiny_decoder_with({{"  ln_f.bias:   f16[E]\n", "  ln_f.bias:   f16[E]\n  head.weight: f16[E, V]\n"},
                         {"linear(layer_norm(x, ln_f.weight, ln_f.bias, eps=1e-5), wte.weight)",
                          "layer_norm(x, ln_f.weight, ln_f.bias, eps=1e-5) @ head.weight"}});
  ASSERT_TRUE(c->mod);
  const ir::Function& f = *c->mod->find("decode_step");
  scheduler::DecoderStepMatch m = expect_match(f);
  EXPECT_FALSE(m.head_transposed);
  EXPECT_EQ(weight_name(f, m.head_weight), "transformer.head.weight");
  EXPECT_EQ(weight_name(f, m.token_table), "transformer.wte.weight");
}

// An input the decode step does not use would be left unbound by an executor of the pattern.
TEST(DecoderPattern, RejectsAnExtraParameter) {
  auto c = tiny_decoder_with(
      {{"fn decode_step(tok: i32[B], p: i32[])", "fn decode_step(tok: i32[B], p: i32[], extra: i32[])"},
       {"decode_step(tok, pos)", "decode_step(tok, pos, pos)"}});
  ASSERT_TRUE(c->mod);
  std::string why;
  EXPECT_FALSE(scheduler::match_decoder_step(*c->mod->find("decode_step"), why).has_value());
  EXPECT_NE(why.find("parameter extra %2"), std::string::npos) << why;
}

struct Variant {
  const char* name;
  Edits edits;
  const char* rejected_at;  // the op `why` must name
  int64_t layers = 1;
  const char* entry = "decode_step";
};

TEST(DecoderPattern, RejectsEveryVariant) {
  const std::string write_k = "    kc[l, :, :, p, :] = k[:, :, 0, :]\n";
  const std::string attend = "attend(q, kc[l], vc[l], mask)";
  const Variant variants[] = {
      {"relu instead of gelu",
       {{"gelu(conv1d(a, h[l].mlp.c_fc.weight, h[l].mlp.c_fc.bias), approximate=\"tanh\")",
         "relu(conv1d(a, h[l].mlp.c_fc.weight, h[l].mlp.c_fc.bias))"}},
       "relu"},
      {"the exact gelu", {{", approximate=\"tanh\")", ")"}}, "gelu"},
      {"no residual around the MLP", {{"return x + conv1d(f,", "return conv1d(f,"}}, "add"},
      {"no residual around the attention",
       {{"return x + conv1d(merge_heads(y)", "return conv1d(merge_heads(y)"}},
       "add"},
      {"the key cache written at p + 1", {{"kc[l, :, :, p, :]", "kc[l, :, :, p + 1, :]"}}, "slice_update"},
      {"the scale applied twice",
       {{"* rsqrt(cast(HD, f16))", "* rsqrt(cast(HD, f16)) * rsqrt(cast(HD, f16))"}},
       "mul"},
      {"a mask of positions < p", {{"arange(T, i32) <= p", "arange(T, i32) < p"}}, "lt"},
      {"where's operands swapped", {{"where(mask, att, -10000.0)", "where(mask, -10000.0, att)"}}, "mul"},
      {"keys and values swapped", {{attend, "attend(q, vc[l], kc[l], mask)"}}, "slice"},
      {"the key cache as it was before this layer's write",
       {{write_k, "    let old = kc[l]\n" + write_k}, {attend, "attend(q, old, vc[l], mask)"}},
       "state_read"},
      {"the query written as the key", {{"k[:, :, 0, :]", "q[:, :, 0, :]"}}, "slice"},
      {"the position embedding of p + 1", {{"wpe.weight[p]", "wpe.weight[p + 1]"}}, "add"},
      {"the layers writing the cache in reverse order",
       {{"kc[l, :, :, p, :]", "kc[L - 1 - l, :, :, p, :]"},
        {"vc[l, :, :, p, :]", "vc[L - 1 - l, :, :, p, :]"},
        {attend, "attend(q, kc[L - 1 - l], vc[L - 1 - l], mask)"}},
       "slice",
       2},
      {"an extra output",
       {{"fn decode_step(tok: i32[B], p: i32[]) -> f16[B, V] {",
         "fn decode_step(tok: i32[B], p: i32[]) -> (f16[B, V], f16[B, 1, E]) {"},
        {"return logits[:, 0, :]\n}", "return (logits[:, 0, :], x)\n}"},
        {"let logits = decode_step(tok, pos)", "let logits, stream = decode_step(tok, pos)"}},
       "add"},
      {"a cache with more layers than the program has",
       {{"state kc: f16[L, B", "state kc: f16[L + 1, B"}},
       "slice_update"},
      {"the position advanced by 2", {{"pos = pos + 1", "pos = pos + 2"}}, "constant", 1, "decode"},
      {"the position not advanced", {{"  pos = pos + 1\n", ""}}, "state_read", 1, "decode"},
      {"another state written",
       {{"state pos: i32[] = zeros\n", "state pos: i32[] = zeros\nstate calls: i32[] = zeros\n"},
        {"  pos = pos + 1\n", "  pos = pos + 1\n  calls = calls + 1\n"}},
       "state_write",
       1,
       "decode"},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    auto c = tiny_decoder_with(v.edits, v.layers);
    ASSERT_TRUE(c->mod);
    expect_rejected_at(*c->mod->find(v.entry), v.rejected_at);
  }
}

}  // namespace
}  // namespace grape
