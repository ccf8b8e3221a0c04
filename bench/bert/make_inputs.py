"""Seeded BERT-base weights (HF names and layouts under "bert.", fp16, std 0.02 like BERT's init;
norm gains near 1) and the inputs of batch 1 and 16 at sequence 128: token ids and an all-true
mask. Grape (examples/bert.grp) and the PyTorch peer (peer_torch.py) load the same files."""
import os
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import write_safetensors  # noqa: E402

L, H, I, V, P, TV, S = 12, 768, 3072, 30522, 512, 2, 128


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    r = lambda *s: (rng.standard_normal(s, dtype=np.float32) * 0.02).astype(np.float16)
    one = lambda n: (1 + rng.standard_normal(n, dtype=np.float32) * 0.02).astype(np.float16)
    w = {"embeddings.word_embeddings.weight": r(V, H), "embeddings.position_embeddings.weight": r(P, H),
         "embeddings.token_type_embeddings.weight": r(TV, H), "embeddings.LayerNorm.weight": one(H),
         "embeddings.LayerNorm.bias": r(H)}
    for l in range(L):
        p = f"encoder.layer.{l}."
        for n in ("query", "key", "value"):
            w[p + f"attention.self.{n}.weight"] = r(H, H)
            w[p + f"attention.self.{n}.bias"] = r(H)
        w.update({p + "attention.output.dense.weight": r(H, H), p + "attention.output.dense.bias": r(H),
                  p + "attention.output.LayerNorm.weight": one(H), p + "attention.output.LayerNorm.bias": r(H),
                  p + "intermediate.dense.weight": r(I, H), p + "intermediate.dense.bias": r(I),
                  p + "output.dense.weight": r(H, I), p + "output.dense.bias": r(H),
                  p + "output.LayerNorm.weight": one(H), p + "output.LayerNorm.bias": r(H)})
    write_safetensors(f"{out_dir}/bert.safetensors", {"bert." + k: v for k, v in w.items()})
    for b in (1, 16):
        np.save(f"{out_dir}/ids{b}.npy", rng.integers(0, V, (b, S)).astype(np.int32))
        np.save(f"{out_dir}/mask{b}.npy", np.ones((b, S), bool))


if __name__ == "__main__":
    main(sys.argv[1])
