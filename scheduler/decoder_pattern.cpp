#include "scheduler/decoder_pattern.h"

#include <map>
#include <unordered_map>
#include <utility>

#include "ir/printer.h"

namespace grape::scheduler {
namespace {

using ir::Dim;
using ir::Op;
using ir::Operation;
using ir::ValueId;

// Thrown at the first thing that does not fit; match_decoder_step turns it into `why`. The walk is
// deep, and an exception keeps each step's code a straight line of expectations.
struct Mismatch {
  std::string why;
};

ir::Type tensor(DType dtype, std::vector<Dim> shape) {
  ir::Type t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}
ir::Type f16(std::vector<Dim> shape) { return tensor(DType::F16, std::move(shape)); }
ir::Type i32(std::vector<Dim> shape) { return tensor(DType::I32, std::move(shape)); }
ir::Type boolean(std::vector<Dim> shape) { return tensor(DType::Bool, std::move(shape)); }

// Slice axes exactly as the front end writes them (frontend/expr.cpp, resolve_slice), so that the
// attribute comparison below needs no slice-specific rules.
ir::SliceAxis range(const Dim& start, const Dim& size) {
  ir::SliceAxis a;
  a.start = start;
  a.size = size;
  return a;
}
ir::SliceAxis whole(const Dim& size) { return range(Dim(0), size); }
ir::SliceAxis at(int64_t index) {
  ir::SliceAxis a = range(Dim(index), Dim(1));
  a.squeeze = true;
  return a;
}
// x[i] with i the op's operand number `operand` (the position).
ir::SliceAxis at_operand(int operand) {
  ir::SliceAxis a = at(0);
  a.dynamic = operand;
  return a;
}

ir::Attrs slices(std::vector<ir::SliceAxis> axes) {
  ir::Attrs a;
  a.slices = std::move(axes);
  return a;
}
ir::Attrs shape(std::vector<Dim> dims) {
  ir::Attrs a;
  a.shape = std::move(dims);
  return a;
}
ir::Attrs axes(std::vector<int64_t> order) {
  ir::Attrs a;
  a.axes = std::move(order);
  return a;
}
ir::Attrs axis(int64_t ax) {
  ir::Attrs a;
  a.axis = ax;
  return a;
}

std::string layer_role(size_t l, const std::string& what) {
  return "layer " + std::to_string(l) + "'s " + what;
}

struct Projection {  // x @ weight + bias
  ValueId input, weight, bias;
};

struct Norm {  // layer_norm(input, scale, shift, eps)
  const Operation* op;
  ValueId input, scale, shift;
  double eps;
};

// stream = residual + branch, one half of a block.
struct ResidualAdd {
  const Operation* op;
  ValueId residual, branch;
};

// A cache state through the layers: read once, updated by each layer in turn.
struct CacheChain {
  const Operation* read = nullptr;  // the state_read that layer 0 updates
  ValueId last = ir::kNoValue;      // the update of the last layer matched so far
};

// Sizes of the model: each is bound where it first appears and checked by every type after.
struct Dims {
  Dim batch;
  int64_t embed = 0, heads = 0, head_dim = 0, ffn = 0, vocab = 0, cache_len = 0, layers = 0;
};

class DecoderMatcher {
 public:
  explicit DecoderMatcher(const ir::Function& f) : f_(f), claimed_(f.body.ops.size(), false) {
    for (size_t i = 0; i < f.body.ops.size(); ++i)
      for (ValueId r : f.body.ops[i].results) def_[r] = i;
  }

  DecoderStepMatch run() {
    check_entry_form();
    ValueId stream = match_head(f_.body.yields[0]);
    std::vector<ResidualAdd> adds = residual_stream(stream);
    ValueId embedded = adds.empty() ? stream : adds.back().residual;
    match_embedding(embedded);
    match_layers(adds, embedded);
    match_state_writes();
    check_params();
    check_every_op_claimed();
    m_.embed = d_.embed;
    m_.heads = d_.heads;
    m_.head_dim = d_.head_dim;
    m_.ffn = d_.ffn;
    m_.vocab = d_.vocab;
    m_.cache_len = d_.cache_len;
    m_.scale = scale_.value_or(0);
    m_.masked_value = masked_value_.value_or(0);
    return m_;
  }

 private:
  const ir::Function& f_;
  std::vector<bool> claimed_;  // by op index: the op has a role in the pattern
  std::unordered_map<ValueId, size_t> def_;
  // `grape ir`'s value numbers, so that a user finds the op `why` names in that dump; made for
  // the first message only.
  mutable std::optional<std::map<ValueId, int>> numbers_;
  Dims d_;
  DecoderStepMatch m_;
  const Operation* position_read_ = nullptr;  // the position's state_read, if it is a state
  CacheChain k_, v_;
  std::optional<double> scale_, masked_value_;

  // ---- naming and failing ----

  std::string name(ValueId v) const {
    if (!numbers_) numbers_ = ir::printed_value_numbers(f_);
    auto it = numbers_->find(v);
    return it == numbers_->end() ? "%?" : "%" + std::to_string(it->second);
  }
  std::string describe(const Operation& op) const {
    std::string s = ir::op_name(op.op);
    if (!op.results.empty()) return s + " " + name(op.results[0]);
    return op.attrs.name.empty() ? s : s + " \"" + op.attrs.name + "\"";
  }
  [[noreturn]] void fail(const Operation& op, const std::string& why) const {
    throw Mismatch{describe(op) + ": " + why};
  }
  [[noreturn]] void fail_at(ValueId v, const std::string& why) const {
    if (const Operation* op = def(v)) fail(*op, why);
    for (const auto& p : f_.params)
      if (p.value == v) throw Mismatch{"parameter " + p.name + " " + name(v) + ": " + why};
    throw Mismatch{name(v) + ": " + why};
  }

  // ---- looking at values ----

  const Operation* def(ValueId v) const {
    auto it = def_.find(v);
    return it == def_.end() ? nullptr : &f_.body.ops[it->second];
  }
  bool made_by(ValueId v, Op op) const {
    const Operation* d = def(v);
    return d && d->op == op;
  }
  bool is_param(ValueId v) const {
    for (const auto& p : f_.params)
      if (p.value == v) return true;
    return false;
  }
  // x @ W + b, the form of every projection (and of no residual stream value).
  bool is_projection(ValueId v) const {
    const Operation* d = def(v);
    return d && d->op == Op::Add &&
           ((made_by(d->operands[0], Op::MatMul) && made_by(d->operands[1], Op::Weight)) ||
            (made_by(d->operands[0], Op::Weight) && made_by(d->operands[1], Op::MatMul)));
  }
  // take(wte, tokens) + wpe[position], where the residual stream starts.
  bool is_embedding_sum(ValueId v) const {
    const Operation* d = def(v);
    return d && d->op == Op::Add &&
           ((made_by(d->operands[0], Op::Take) && made_by(d->operands[1], Op::Slice)) ||
            (made_by(d->operands[0], Op::Slice) && made_by(d->operands[1], Op::Take)));
  }

  // ---- expectations: each claims the op it accepts ----

  const Operation& producer(ValueId v, Op want, const std::string& role) {
    const Operation* op = def(v);
    if (!op || op->op != want) fail_at(v, "expected " + role + " (" + ir::op_name(want) + ")");
    claimed_[static_cast<size_t>(op - f_.body.ops.data())] = true;
    return *op;
  }
  void expect_type(const Operation& op, const ir::Type& t, const std::string& role) const {
    const ir::Type& got = f_.type(op.results[0]);
    if (got != t) fail(op, "has type " + got.str() + " where " + role + " has " + t.str());
  }
  // The op, its operand count, result type and every attribute: nothing left unchecked can change
  // what it computes.
  const Operation& node(ValueId v, Op want, size_t operands, const ir::Type& t, const ir::Attrs& attrs,
                        const std::string& role) {
    const Operation& op = producer(v, want, role);
    if (op.operands.size() != operands)
      fail(op, "has " + std::to_string(op.operands.size()) + " operands where " + role + " has " +
                   std::to_string(operands));
    expect_type(op, t, role);
    if (!(op.attrs == attrs)) fail(op, "has other attributes than " + role);
    return op;
  }
  void expect_weight(ValueId v, std::vector<Dim> dims, const std::string& role) {
    expect_type(producer(v, Op::Weight, role), f16(std::move(dims)), role);
  }
  // The value of an f16 scalar constant, as the IR holds it.
  double f16_constant(ValueId v, const std::string& role) {
    const Operation& c = producer(v, Op::Constant, role);
    expect_type(c, f16({}), role);
    if (c.attrs.dtype != DType::F16) fail(c, "is not an f16 constant, as " + role + " is");
    return c.attrs.fvalue;
  }
  // One value shared by every layer: the match reports one scale and one fill value.
  void same_in_every_layer(std::optional<double>& seen, double value, ValueId v, const std::string& role) {
    if (seen && *seen != value) fail_at(v, role + " differs from layer 0's");
    seen = value;
  }
  // Binds a size from a value's type the first time it is met; every later type check uses it.
  void bind(int64_t& slot, ValueId v, size_t axis, const std::string& role) {
    if (slot != 0) return;
    const ir::Type& t = f_.type(v);
    if (t.rank() <= axis || !t.shape[axis].is_const() || t.shape[axis].const_value() <= 0)
      fail_at(v, "has type " + t.str() + ", with no constant " + role);
    slot = t.shape[axis].const_value();
  }
  // The operands of a commutative op as (the one `tagged`, the other): exactly one must be.
  template <class Tagged>
  std::pair<ValueId, ValueId> split(const Operation& op, Tagged tagged, const std::string& what) const {
    bool first = tagged(op.operands[0]), second = tagged(op.operands[1]);
    if (first == second) fail(op, std::string(first ? "both operands are " : "neither operand is ") + what);
    return first ? std::pair{op.operands[0], op.operands[1]} : std::pair{op.operands[1], op.operands[0]};
  }
  auto produced_by(Op op) const {
    return [this, op](ValueId v) { return made_by(v, op); };
  }

  // ---- the pattern, from the result back to the inputs ----

  void check_entry_form() const {
    for (const auto& op : f_.body.ops) {
      if (op.body || ir::is_loop(op.op)) fail(op, "is a loop; a decode step has none");
      if (op.pred != ir::kNoValue)
        fail(op, "is predicated (under an `if`); a decode step has no control flow");
    }
    const auto& results = f_.body.yields;
    if (results.empty()) throw Mismatch{"the entry returns nothing; a decode step returns its logits"};
    if (results.size() > 1) fail_at(results[1], "is a second result; a decode step returns only its logits");
  }

  // logits = (ln_f(x) @ head)[:, 0, :]; returns x, the residual stream after the last layer.
  ValueId match_head(ValueId logits) {
    const ir::Type& t = f_.type(logits);
    if (t.rank() != 2)
      fail_at(logits, "is returned with type " + t.str() + "; a decode step returns f16[B, V]");
    d_.batch = t.shape[0];
    bind(d_.vocab, logits, 1, "vocabulary size");
    const Dim b = d_.batch, v = d_.vocab;
    m_.logits = logits;
    const Operation& row = node(logits, Op::Slice, 1, f16({b, v}), slices({whole(b), at(0), whole(v)}),
                                "the logits of the one token (logits[:, 0, :])");
    ValueId head = row.operands[0];
    m_.head_transposed = made_by(head, Op::Linear);
    const std::string role = "the language-model head";
    const Operation& mm =
        node(head, m_.head_transposed ? Op::Linear : Op::MatMul, 2, f16({b, 1, v}), {}, role);
    m_.head_weight = mm.operands[1];
    bind(d_.embed, m_.head_weight, m_.head_transposed ? 1 : 0, "embedding width");
    const Dim e = d_.embed;
    expect_weight(m_.head_weight, m_.head_transposed ? std::vector<Dim>{v, e} : std::vector<Dim>{e, v},
                  role + "'s weight");
    Norm lnf = layer_norm(mm.operands[0], "the final layer norm (ln_f)");
    m_.lnf_scale = lnf.scale;
    m_.lnf_shift = lnf.shift;
    m_.lnf_eps = lnf.eps;
    return lnf.input;
  }

  // The residual adds from the last one down to the embeddings' sum.
  std::vector<ResidualAdd> residual_stream(ValueId x) {
    std::vector<ResidualAdd> adds;
    while (!is_embedding_sum(x)) {
      const Operation& add = node(x, Op::Add, 2, f16({d_.batch, 1, d_.embed}), {},
                                  "a residual add (x + a projection) or the embeddings' sum");
      auto [branch, residual] = split(
          add, [this](ValueId v) { return is_projection(v); }, "a biased projection (x @ W + b)");
      adds.push_back({&add, residual, branch});
      x = residual;
    }
    return adds;
  }

  // take(wte, reshape(tokens, (B, 1))) + wpe[position]
  void match_embedding(ValueId x0) {
    const Dim b = d_.batch, e = d_.embed;
    const Operation& sum = node(x0, Op::Add, 2, f16({b, 1, e}), {}, "the token and position embeddings' sum");
    auto [tok_emb, pos_emb] = split(sum, produced_by(Op::Take), "a take (the token embedding)");
    const Operation& take = node(tok_emb, Op::Take, 2, f16({b, 1, e}), axis(0), "the token embedding");
    m_.token_table = take.operands[0];
    expect_weight(m_.token_table, {d_.vocab, e}, "the token embedding table");
    const Operation& column =
        node(take.operands[1], Op::Reshape, 1, i32({b, 1}), shape({b, 1}), "the tokens as a column [B, 1]");
    m_.tokens = column.operands[0];
    if (!is_param(m_.tokens) || f_.type(m_.tokens) != i32({b}))
      fail_at(m_.tokens, "expected the tokens parameter, i32[" + b.str() + "]");

    const Operation& pos_row = node(pos_emb, Op::Slice, 2, f16({e}), slices({at_operand(1), whole(e)}),
                                    "the position embedding wpe[p]");
    m_.position_table = pos_row.operands[0];
    int64_t positions = 0;
    bind(positions, m_.position_table, 0, "number of positions");
    expect_weight(m_.position_table, {positions, e}, "the position embedding table");
    m_.position = pos_row.operands[1];
    if (f_.type(m_.position) != i32({})) fail_at(m_.position, "expected the position, an i32[] scalar");
    if (!is_param(m_.position))
      position_read_ = &producer(m_.position, Op::StateRead, "the position: a parameter or a state");
  }

  void match_layers(const std::vector<ResidualAdd>& adds, ValueId embedded) {
    if (adds.empty()) fail_at(embedded, "goes to ln_f through no decoder layer");
    if (adds.size() % 2 != 0)
      fail(*adds.front().op, "is a residual add without its pair: each layer adds attention, then an MLP");
    d_.layers = static_cast<int64_t>(adds.size() / 2);
    for (size_t l = 0; l < adds.size() / 2; ++l) {
      const ResidualAdd& attn = adds[adds.size() - 1 - 2 * l];
      const ResidualAdd& mlp = adds[adds.size() - 2 - 2 * l];
      DecoderLayerMatch layer;
      match_attention(l, attn, layer);
      match_mlp(l, mlp.branch, attn.op->results[0], layer);
      m_.layers.push_back(layer);
    }
    m_.k_cache = k_.read->attrs.name;
    m_.v_cache = v_.read->attrs.name;
    if (m_.k_cache == m_.v_cache) fail(*v_.read, "reads the key cache's state as the value cache");
  }

  // x @ W + b with W [in, out], b [out]; `in` is bound from W when still unknown.
  Projection projection(ValueId v, int64_t& in, int64_t out, const std::string& role) {
    const Dim b = d_.batch;
    const Operation& add = node(v, Op::Add, 2, f16({b, 1, out}), {}, role + " plus its bias");
    auto [product, bias] = split(add, produced_by(Op::MatMul), "a matmul");
    expect_weight(bias, {out}, role + "'s bias");
    const Operation& mm = node(product, Op::MatMul, 2, f16({b, 1, out}), {}, role);
    bind(in, mm.operands[1], 0, role + "'s input width");
    expect_weight(mm.operands[1], {in, out}, role + "'s weight");
    return {mm.operands[0], mm.operands[1], bias};
  }

  Norm layer_norm(ValueId v, const std::string& role) {
    // eps is reported, not required; every other attribute must be the default.
    const Operation* peek = def(v);
    ir::Attrs attrs;
    attrs.eps = peek ? peek->attrs.eps : 0;
    const Operation& ln = node(v, Op::LayerNorm, 3, f16({d_.batch, 1, d_.embed}), attrs, role);
    expect_weight(ln.operands[1], {d_.embed}, role + "'s scale");
    expect_weight(ln.operands[2], {d_.embed}, role + "'s shift");
    return {&ln, ln.operands[0], ln.operands[1], ln.operands[2], ln.attrs.eps};
  }

  // x + proj(merge_heads(softmax(where(mask, (q @ k^T) * scale, fill)) @ v)), where q, k, v come
  // from c_attn(ln_1(x)) and k, v are first written to cache layer l at the position.
  void match_attention(size_t l, const ResidualAdd& add, DecoderLayerMatch& layer) {
    const Dim b = d_.batch;
    Projection proj =
        projection(add.branch, d_.embed, d_.embed, layer_role(l, "attention projection (c_proj)"));
    layer.proj_weight = proj.weight;
    layer.proj_bias = proj.bias;
    const Operation& merged = node(proj.input, Op::Reshape, 1, f16({b, 1, d_.embed}), shape({b, 1, d_.embed}),
                                   layer_role(l, "merge of the heads"));
    bind(d_.heads, merged.operands[0], 2, "number of heads");
    bind(d_.head_dim, merged.operands[0], 3, "head width");
    if (d_.heads * d_.head_dim != d_.embed) fail(merged, "merges heads whose widths do not add up to E");
    const Dim nh = d_.heads, hd = d_.head_dim;
    const Operation& unpermuted = node(merged.operands[0], Op::Permute, 1, f16({b, 1, nh, hd}),
                                       axes({0, 2, 1, 3}), layer_role(l, "heads transposed back"));
    const Operation& ctx = node(unpermuted.operands[0], Op::MatMul, 2, f16({b, nh, 1, hd}), {},
                                layer_role(l, "attention-weighted values (probabilities @ v)"));
    bind(d_.cache_len, ctx.operands[0], 3, "cache length");
    const Dim t = d_.cache_len;
    const Operation& probs = node(ctx.operands[0], Op::Softmax, 1, f16({b, nh, 1, t}), axis(3),
                                  layer_role(l, "attention softmax"));
    const Operation& masked = node(probs.operands[0], Op::Where, 3, f16({b, nh, 1, t}), {},
                                   layer_role(l, "masked scores (where(mask, scores, fill))"));
    match_mask(masked.operands[0]);
    same_in_every_layer(masked_value_, f16_constant(masked.operands[2], "the masked scores' fill"),
                        masked.operands[2], "the masked scores' fill");
    const Operation& scaled =
        node(masked.operands[1], Op::Mul, 2, f16({b, nh, 1, t}), {}, layer_role(l, "scaled scores"));
    auto [scale, raw] = split(scaled, produced_by(Op::Constant), "a constant (the scale)");
    same_in_every_layer(scale_, f16_constant(scale, "the attention scale"), scale, "the attention scale");
    const Operation& scores =
        node(raw, Op::MatMul, 2, f16({b, nh, 1, t}), {}, layer_role(l, "attention scores (q @ k^T)"));
    ValueId qkv = heads_of(scores.operands[0], 0, ir::kNoValue, layer_role(l, "queries"));
    const Operation& keys_t = node(scores.operands[1], Op::Permute, 1, f16({b, nh, hd, t}),
                                   axes({0, 1, 3, 2}), layer_role(l, "keys transposed"));
    ValueId k_written = cache_view(keys_t.operands[0], l, "key");
    ValueId v_written = cache_view(ctx.operands[1], l, "value");
    cache_write(k_written, l, k_, qkv, d_.embed, "key");
    cache_write(v_written, l, v_, qkv, 2 * d_.embed, "value");

    Projection c_attn = projection(qkv, d_.embed, 3 * d_.embed, layer_role(l, "q, k, v projection (c_attn)"));
    layer.qkv_weight = c_attn.weight;
    layer.qkv_bias = c_attn.bias;
    Norm ln1 = layer_norm(c_attn.input, layer_role(l, "ln_1"));
    if (ln1.input != add.residual)
      fail(*ln1.op, "normalizes another value than the stream entering layer " + std::to_string(l));
    layer.ln1_scale = ln1.scale;
    layer.ln1_shift = ln1.shift;
    layer.ln1_eps = ln1.eps;
  }

  // reshape(arange(T, i32) <= position, (1, T))
  void match_mask(ValueId v) {
    const Dim t = d_.cache_len;
    const Operation& row =
        node(v, Op::Reshape, 1, boolean({1, t}), shape({1, t}), "the attention mask as a row");
    const Operation& le =
        node(row.operands[0], Op::Le, 2, boolean({t}), {}, "the mask arange(T) <= position");
    ir::Attrs arange = shape({t});
    arange.dtype = DType::I32;
    node(le.operands[0], Op::Arange, 0, i32({t}), arange, "the cache positions arange(T, i32)");
    if (le.operands[1] != m_.position)
      fail(le, "compares the cache positions with another value than the position");
  }

  // One of q, k, v split into heads: transpose(reshape(qkv[:, :, offset:offset+E], (B, 1, NH, HD)), 1, 2).
  // Returns the q, k, v projection sliced, which must be `same_as` when that is known.
  ValueId heads_of(ValueId v, int64_t offset, ValueId same_as, const std::string& role) {
    const Dim b = d_.batch, nh = d_.heads, hd = d_.head_dim, e = d_.embed;
    const Operation& perm =
        node(v, Op::Permute, 1, f16({b, nh, 1, hd}), axes({0, 2, 1, 3}), role + " in heads");
    const Operation& split_heads =
        node(perm.operands[0], Op::Reshape, 1, f16({b, 1, nh, hd}), shape({b, 1, nh, hd}), role + " split");
    const Operation& part = node(
        split_heads.operands[0], Op::Slice, 1, f16({b, 1, e}), slices({whole(b), whole(1), range(offset, e)}),
        role + " (columns " + std::to_string(offset) + ":+" + std::to_string(d_.embed) + " of c_attn)");
    if (same_as != ir::kNoValue && part.operands[0] != same_as)
      fail(part, "slices another value than the c_attn projection of the queries");
    return part.operands[0];
  }

  // cache[l], read after this layer's write; returns that write.
  ValueId cache_view(ValueId v, size_t l, const std::string& what) {
    const Dim b = d_.batch, nh = d_.heads, hd = d_.head_dim, t = d_.cache_len;
    const Operation& view =
        node(v, Op::Slice, 1, f16({b, nh, t, hd}),
             slices({at(static_cast<int64_t>(l)), whole(b), whole(nh), whole(t), whole(hd)}),
             layer_role(l, what + " cache (cache[" + std::to_string(l) + "])"));
    return view.operands[0];
  }

  // cache[l, :, :, position, :] = heads[:, :, 0, :], on the cache as the previous layer left it
  // (layer 0: as read from the state); the chain's last update becomes this one.
  void cache_write(ValueId written, size_t l, CacheChain& chain, ValueId qkv, int64_t offset,
                   const std::string& what) {
    const Dim b = d_.batch, nh = d_.heads, hd = d_.head_dim, t = d_.cache_len;
    const ir::Type cache = f16({d_.layers, b, nh, t, hd});
    const std::string role = layer_role(l, "write of its " + what + "s to the cache at the position");
    const Operation& update =
        node(written, Op::SliceUpdate, 3, cache,
             slices({at(static_cast<int64_t>(l)), whole(b), whole(nh), at_operand(2), whole(hd)}), role);
    if (update.operands[2] != m_.position)
      fail(update, "writes the cache at another position than the token's");
    if (l == 0) {
      chain.read = &producer(update.operands[0], Op::StateRead, "the " + what + " cache's state");
      expect_type(*chain.read, cache, "the " + what + " cache's state");
    } else if (update.operands[0] != chain.last) {
      fail(update,
           "updates another value than the " + what + " cache written by layer " + std::to_string(l - 1));
    }
    chain.last = written;
    const Operation& token =
        node(update.operands[1], Op::Slice, 1, f16({b, nh, hd}),
             slices({whole(b), whole(nh), at(0), whole(hd)}), layer_role(l, what + "s of the token"));
    heads_of(token.operands[0], offset, qkv, layer_role(l, what + "s"));
  }

  // The branch c_proj(gelu_tanh(c_fc(ln_2(x)))) of x + branch, x the stream after the attention
  // (which residual_stream found to be what the branch is added to).
  void match_mlp(size_t l, ValueId branch, ValueId attended, DecoderLayerMatch& layer) {
    Projection fc2 = projection(branch, d_.ffn, d_.embed, layer_role(l, "MLP output projection (c_proj)"));
    layer.fc2_weight = fc2.weight;
    layer.fc2_bias = fc2.bias;
    ir::Attrs tanh_form;
    tanh_form.approx_tanh = true;
    const Operation& act = node(fc2.input, Op::Gelu, 1, f16({d_.batch, 1, d_.ffn}), tanh_form,
                                layer_role(l, "MLP activation, gelu(approximate=\"tanh\")"));
    Projection fc =
        projection(act.operands[0], d_.embed, d_.ffn, layer_role(l, "MLP input projection (c_fc)"));
    layer.fc_weight = fc.weight;
    layer.fc_bias = fc.bias;
    Norm ln2 = layer_norm(fc.input, layer_role(l, "ln_2"));
    if (ln2.input != attended)
      fail(*ln2.op,
           "normalizes another value than the stream after layer " + std::to_string(l) + "'s attention");
    layer.ln2_scale = ln2.scale;
    layer.ln2_shift = ln2.shift;
    layer.ln2_eps = ln2.eps;
  }

  // Exactly: the last key and value caches written back to their states, and, for a position
  // read from a state, that state advanced by 1.
  void match_state_writes() {
    const Operation *k_write = nullptr, *v_write = nullptr, *pos_write = nullptr;
    if (position_read_) {
      m_.position_state = position_read_->attrs.name;
      if (m_.position_state == m_.k_cache || m_.position_state == m_.v_cache)
        fail(*position_read_, "reads the position from a cache's state");
    }
    for (const auto& op : f_.body.ops) {
      if (op.op != Op::StateWrite) continue;
      const std::string& state = op.attrs.name;
      if (!k_write && state == m_.k_cache && op.operands[0] == k_.last) {
        k_write = &op;
      } else if (!v_write && state == m_.v_cache && op.operands[0] == v_.last) {
        v_write = &op;
      } else if (!pos_write && position_read_ && state == m_.position_state) {
        match_advance(op.operands[0]);
        pos_write = &op;
      } else {
        fail(op, "writes a state the decode step does not write, or another value to it");
      }
      claimed_[static_cast<size_t>(&op - f_.body.ops.data())] = true;
    }
    if (!k_write) fail_at(k_.last, "is the final key cache, but not written back to state " + m_.k_cache);
    if (!v_write) fail_at(v_.last, "is the final value cache, but not written back to state " + m_.v_cache);
    if (position_read_ && !pos_write)
      fail(*position_read_,
           "reads the position from state " + m_.position_state + ", which the entry does not advance");
  }

  // position + 1
  void match_advance(ValueId v) {
    const Operation& add = node(v, Op::Add, 2, i32({}), {}, "the advanced position (position + 1)");
    auto [one, p] = split(add, produced_by(Op::Constant), "a constant");
    if (p != m_.position) fail(add, "advances another value than the position");
    const Operation& c = producer(one, Op::Constant, "the position's step");
    expect_type(c, i32({}), "the position's step");
    if (c.attrs.dtype != DType::I32 || c.attrs.ivalue != 1)
      fail(c, "is not 1: the position must advance by 1");
  }

  // Every parameter is an input of the pattern: the executor binds nothing else.
  void check_params() const {
    for (const auto& p : f_.params)
      if (p.value != m_.tokens && p.value != m_.position)
        throw Mismatch{"parameter " + p.name + " " + name(p.value) + ": is not an input of the decode step"};
  }

  void check_every_op_claimed() const {
    for (size_t i = 0; i < f_.body.ops.size(); ++i)
      if (!claimed_[i]) fail(f_.body.ops[i], "is not part of the decode step");
  }
};

}  // namespace

std::optional<DecoderStepMatch> match_decoder_step(const ir::Function& f, std::string& why) {
  try {
    DecoderStepMatch m = DecoderMatcher(f).run();
    why.clear();
    return m;
  } catch (const Mismatch& e) {
    why = e.why;
    return std::nullopt;
  }
}

}  // namespace grape::scheduler
