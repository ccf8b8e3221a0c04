"""An independent numpy BERT encoder (f16 storage, f32 compute), following Hugging Face's
BertModel: embeddings (word + token type + position, LayerNorm), then post-norm layers with exact
GELU and eps 1e-12; padding keys (mask False) get no attention."""
import numpy as np

from np_f16 import add, attention, gelu_exact, layer_norm, linear, merge_heads, split_heads

PREFIX = "bert."


def random_weights(rng, L, H, I, V, P, TV=2):
    def n(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float16)

    def ones_ish(shape):
        return (1.0 + n(shape, 0.1)).astype(np.float16)

    w = {"embeddings.word_embeddings.weight": n((V, H), 0.5),
         "embeddings.position_embeddings.weight": n((P, H), 0.2),
         "embeddings.token_type_embeddings.weight": n((TV, H), 0.2),
         "embeddings.LayerNorm.weight": ones_ish((H,)), "embeddings.LayerNorm.bias": n((H,), 0.1)}
    for l in range(L):
        p = f"encoder.layer.{l}."
        for m in ("query", "key", "value"):
            w[p + f"attention.self.{m}.weight"] = n((H, H), 0.2)
            w[p + f"attention.self.{m}.bias"] = n((H,), 0.05)
        w[p + "attention.output.dense.weight"] = n((H, H), 0.2)
        w[p + "attention.output.dense.bias"] = n((H,), 0.05)
        w[p + "attention.output.LayerNorm.weight"] = ones_ish((H,))
        w[p + "attention.output.LayerNorm.bias"] = n((H,), 0.1)
        w[p + "intermediate.dense.weight"] = n((I, H), 0.2)
        w[p + "intermediate.dense.bias"] = n((I,), 0.05)
        w[p + "output.dense.weight"] = n((H, I), 0.1)
        w[p + "output.dense.bias"] = n((H,), 0.05)
        w[p + "output.LayerNorm.weight"] = ones_ish((H,))
        w[p + "output.LayerNorm.bias"] = n((H,), 0.1)
    return {PREFIX + k: v for k, v in w.items()}


def forward(weights, L, NH, ids, mask, types=None):
    """ids, types [B, S] ints; mask [B, S] bool (True = real token). Returns f16 [B, S, H]."""
    w = {k[len(PREFIX):]: v for k, v in weights.items()}
    B, S = ids.shape
    if types is None:
        types = np.zeros_like(ids)
    emb = add(add(w["embeddings.word_embeddings.weight"][ids],
                  w["embeddings.token_type_embeddings.weight"][types]),
              w["embeddings.position_embeddings.weight"][:S])
    x = layer_norm(emb, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], 1e-12)
    keep = mask.reshape(B, 1, 1, S)
    for l in range(L):
        p = f"encoder.layer.{l}."
        q, k, v = (split_heads(linear(x, w[p + f"attention.self.{m}.weight"],
                                      w[p + f"attention.self.{m}.bias"]), NH)
                   for m in ("query", "key", "value"))
        ctx = merge_heads(attention(q, k, v, keep))
        y = linear(ctx, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        a = layer_norm(add(x, y), w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], 1e-12)
        f = gelu_exact(linear(a, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
        z = linear(f, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = layer_norm(add(a, z), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], 1e-12)
    return x
