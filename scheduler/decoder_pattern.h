// Recognizes a GPT-2-style pre-LN decoder's one-token decode step in an entry point's predicated IR
// (examples/gpt2.grp's decode_step, decode and beam_decode), so that an executor made for exactly
// that computation can run it instead of the general plan.
//
// The match is exact and conservative: every op of the function must be one of the pattern's, in
// its role, with its attributes, operand order (either order only where the op commutes) and
// result type. A program that differs in any semantic detail is not matched, and `why` names the
// first op that did not fit. What the executor still has to reproduce is the IR's own semantics,
// e.g. that a dynamic slice start (the position) wraps once and is clamped to the axis
// (cpu::resolve_dynamic_start), and that take's token indices are those of the `take` op.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace grape::scheduler {

// One block: x += proj(attn(ln_1(x))); x += fc2(gelu_tanh(fc(ln_2(x)))). Every ValueId is the
// result of a `weight` op.
struct DecoderLayerMatch {
  ir::ValueId ln1_scale = ir::kNoValue, ln1_shift = ir::kNoValue;
  double ln1_eps = 0;
  ir::ValueId qkv_weight = ir::kNoValue, qkv_bias = ir::kNoValue;    // [E, 3E], [3E]: q, k, v at 0, E, 2E
  ir::ValueId proj_weight = ir::kNoValue, proj_bias = ir::kNoValue;  // [E, E], [E]
  ir::ValueId ln2_scale = ir::kNoValue, ln2_shift = ir::kNoValue;
  double ln2_eps = 0;
  ir::ValueId fc_weight = ir::kNoValue, fc_bias = ir::kNoValue;    // [E, F], [F]
  ir::ValueId fc2_weight = ir::kNoValue, fc2_bias = ir::kNoValue;  // [F, E], [E]
};

struct DecoderStepMatch {
  ir::ValueId tokens = ir::kNoValue;  // the i32[B] parameter (B symbolic or constant)
  // The i32[] position: a parameter, or the state_read of position_state.
  ir::ValueId position = ir::kNoValue;
  // The state holding the position, which the entry advances by 1 (the `decode` form); empty
  // exactly when `position` is a parameter.
  std::string position_state;
  ir::ValueId token_table = ir::kNoValue, position_table = ir::kNoValue;  // weights [V, E], [P, E]
  // States f16[L, B, NH, T, HD]; layer l writes k and v of its token at [l, :, :, position, :]
  // and then attends over the whole of [l] (positions > position are masked).
  std::string k_cache, v_cache;
  std::vector<DecoderLayerMatch> layers;  // L of them, in cache-layer order 0..L-1
  ir::ValueId lnf_scale = ir::kNoValue, lnf_shift = ir::kNoValue;
  double lnf_eps = 0;
  ir::ValueId head_weight = ir::kNoValue;
  // true: `linear` (x @ W^T, W is [V, E]); false: `matmul` (W is [E, V]).
  bool head_transposed = false;
  ir::ValueId logits = ir::kNoValue;  // the returned f16[B, V] value
  int64_t embed = 0, heads = 0, head_dim = 0, ffn = 0, vocab = 0, cache_len = 0;  // E, NH, HD, F, V, T
  // The f16 constants of the attention, as the IR holds them (a double, not rounded to f16):
  // scores are multiplied by `scale`, and masked scores replaced by `masked_value`.
  double scale = 0, masked_value = 0;
};

// The decode step, if `f` is exactly one: every op of f belongs to the pattern (no other op, no
// predicate, no loop), f has one result, all weights and activations are f16, gelu is
// approximate=tanh and the mask is `arange(T) <= position`. Otherwise nullopt, and `why` says the
// first thing that did not fit, naming the op by its name and result as `grape ir` prints them
// (e.g. "relu %73: ..."), for a user-facing "not used because ..." message.
std::optional<DecoderStepMatch> match_decoder_step(const ir::Function& f, std::string& why);

}  // namespace grape::scheduler
