"""Seeded GPT-2 small weights (HF names and layouts, fp16, std 0.02 like GPT-2's init; norm gains
near 1) and the decode inputs: 5 tokens and the cache position 128. Both sides load these files."""
import os
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import write_safetensors  # noqa: E402

L, E, V, P = 12, 768, 50257, 1024


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)  # scripts call it with a fresh directory (bench/run.sh, GPU runs)
    rng = np.random.default_rng(0)
    r = lambda *s: (rng.standard_normal(s, dtype=np.float32) * 0.02).astype(np.float16)
    one = lambda n: (1 + rng.standard_normal(n, dtype=np.float32) * 0.02).astype(np.float16)
    w = {"wte.weight": r(V, E), "wpe.weight": r(P, E), "ln_f.weight": one(E), "ln_f.bias": r(E)}
    for l in range(L):
        h = f"h.{l}."
        w.update({h + "ln_1.weight": one(E), h + "ln_1.bias": r(E), h + "attn.c_attn.weight": r(E, 3 * E),
                  h + "attn.c_attn.bias": r(3 * E), h + "attn.c_proj.weight": r(E, E), h + "attn.c_proj.bias": r(E),
                  h + "ln_2.weight": one(E), h + "ln_2.bias": r(E), h + "mlp.c_fc.weight": r(E, 4 * E),
                  h + "mlp.c_fc.bias": r(4 * E), h + "mlp.c_proj.weight": r(4 * E, E), h + "mlp.c_proj.bias": r(E)})
    write_safetensors(f"{out_dir}/gpt2.safetensors", {"transformer." + k: v for k, v in w.items()})
    np.save(f"{out_dir}/tok.npy", rng.integers(0, V, 5).astype(np.int32))
    np.save(f"{out_dir}/p.npy", np.array(128, dtype=np.int32))


if __name__ == "__main__":
    main(sys.argv[1])
