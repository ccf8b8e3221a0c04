"""The BERT workload's PyTorch peer: BERT-base `forward` (fp16, sequence 128) written like
examples/bert.grp on the same safetensors weights and inputs. Writes the last hidden states (for
the correctness check against Grape) and times, per call, eager and CUDA graph replays of the
same code ("graph"), and a CUDA graph of the variant with scaled_dot_product_attention
("graph_sdpa", the faster PyTorch form).

usage: peer_torch.py WEIGHTS.safetensors IDS.npy MASK.npy OUT_HIDDEN.npy OUT.json"""
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import count_kernels, cuda_graph_replay, read_safetensors, time_cuda  # noqa: E402

L, H, NH = 12, 768, 12
HD = H // NH


def main():
    wpath, idspath, maskpath, out_hidden, out_json = sys.argv[1:6]
    w = {k: torch.from_numpy(a).cuda() for k, a in read_safetensors(wpath).items()}
    g = lambda n: w["bert." + n]
    ids = torch.from_numpy(np.load(idspath)).cuda().long()
    keep = torch.from_numpy(np.load(maskpath)).cuda().view(ids.shape[0], 1, 1, ids.shape[1])
    B, S = ids.shape
    scale = torch.rsqrt(torch.tensor(float(HD), dtype=torch.float16, device="cuda"))
    neg = torch.tensor(-10000.0, dtype=torch.float16, device="cuda")  # made before any graph capture
    bias = torch.where(keep, torch.zeros((), dtype=torch.float16, device="cuda"), neg)

    def forward(sdpa):
        x = (g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[:S]
             + g("embeddings.token_type_embeddings.weight")[0])
        x = F.layer_norm(x, (H,), g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), 1e-12)
        for l in range(L):
            p = f"encoder.layer.{l}."
            lin = lambda t, n: F.linear(t, g(p + n + ".weight"), g(p + n + ".bias"))
            heads = lambda t: t.view(B, S, NH, HD).transpose(1, 2)
            q, k, v = (heads(lin(x, "attention.self." + n)) for n in ("query", "key", "value"))
            if sdpa:
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0 / HD ** 0.5)
            else:
                att = torch.where(keep, (q @ k.transpose(2, 3)) * scale, neg)
                ctx = att.softmax(-1) @ v
            y = lin(ctx.transpose(1, 2).reshape(B, S, H), "attention.output.dense")
            a = F.layer_norm(x + y, (H,), g(p + "attention.output.LayerNorm.weight"),
                             g(p + "attention.output.LayerNorm.bias"), 1e-12)
            f = F.gelu(lin(a, "intermediate.dense"))
            x = F.layer_norm(a + lin(f, "output.dense"), (H,), g(p + "output.LayerNorm.weight"),
                             g(p + "output.LayerNorm.bias"), 1e-12)
        return x

    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "batch": B}
    with torch.no_grad():
        np.save(out_hidden, forward(False).float().cpu().numpy())
        res["kernels_eager"] = count_kernels(torch, lambda: forward(False))
        res["eager"] = time_cuda(torch, lambda: forward(False), 100, 10)
        res["graph"] = time_cuda(torch, cuda_graph_replay(torch, lambda: forward(False)), 200, 20)
        res["graph_sdpa"] = time_cuda(torch, cuda_graph_replay(torch, lambda: forward(True)), 200, 20)
    json.dump(res, open(out_json, "w"), indent=1)
    print(json.dumps({k: (v["median_ms"] if isinstance(v, dict) else v) for k, v in res.items()}))


if __name__ == "__main__":
    main()
