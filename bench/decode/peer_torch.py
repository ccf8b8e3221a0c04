"""The decode workload's PyTorch peer: one GPT-2 small decode step (fp16, batch 5, past length 128,
KV cache of T positions) written exactly like examples/gpt2.grp's decode_step, on the same
safetensors weights and inputs. Writes the logits (for the correctness check against Grape) and
times eager, CUDA graph and torch.compile variants.

usage: peer_torch.py WEIGHTS.safetensors TOK.npy P OUT_LOGITS.npy OUT.json [--no-compile]"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import count_kernels, read_safetensors, time_cuda  # noqa: E402

L, E, NH, V, T = 12, 768, 12, 50257, 256
HD = E // NH


def load(path):
    return {k: torch.from_numpy(a).cuda() for k, a in read_safetensors(path).items()}


def main():
    wpath, tokpath, p, out_logits, out_json = sys.argv[1:6]
    compile_too = "--no-compile" not in sys.argv
    w = load(wpath)
    g = lambda n: w["transformer." + n]
    tok = torch.from_numpy(np.load(tokpath)).cuda().long()
    B = tok.shape[0]
    p = int(p)
    pos = torch.tensor([p], device="cuda")
    kc = torch.zeros(L, B, NH, T, HD, device="cuda", dtype=torch.float16)
    vc = torch.zeros_like(kc)
    mask = (torch.arange(T, device="cuda") <= p).view(1, 1, 1, T)
    scale = torch.rsqrt(torch.tensor(float(HD), dtype=torch.float16, device="cuda"))
    neg = torch.tensor(-10000.0, dtype=torch.float16, device="cuda")  # made before any graph capture

    def step():
        x = g("wte.weight")[tok].view(B, 1, E) + g("wpe.weight")[p]
        for l in range(L):
            h = f"h.{l}."
            a = F.layer_norm(x, (E,), g(h + "ln_1.weight"), g(h + "ln_1.bias"), 1e-5)
            qkv = a @ g(h + "attn.c_attn.weight") + g(h + "attn.c_attn.bias")
            q, k, v = qkv.split(E, -1)
            q, k, v = (t.view(B, 1, NH, HD).transpose(1, 2) for t in (q, k, v))
            kc[l].index_copy_(2, pos, k)
            vc[l].index_copy_(2, pos, v)
            att = (q @ kc[l].transpose(2, 3)) * scale
            att = torch.where(mask, att, neg)
            y = (att.softmax(-1) @ vc[l]).transpose(1, 2).reshape(B, 1, E)
            x = x + (y @ g(h + "attn.c_proj.weight") + g(h + "attn.c_proj.bias"))
            a = F.layer_norm(x, (E,), g(h + "ln_2.weight"), g(h + "ln_2.bias"), 1e-5)
            f = F.gelu(a @ g(h + "mlp.c_fc.weight") + g(h + "mlp.c_fc.bias"), approximate="tanh")
            x = x + (f @ g(h + "mlp.c_proj.weight") + g(h + "mlp.c_proj.bias"))
        x = F.layer_norm(x, (E,), g("ln_f.weight"), g("ln_f.bias"), 1e-5)
        return (x @ g("wte.weight").t())[:, 0, :]

    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    with torch.no_grad():
        logits = step()
        np.save(out_logits, logits.float().cpu().numpy())
        res["kernels_eager"] = count_kernels(torch, step)
        res["eager"] = time_cuda(torch, step, 200, 20)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        res["cuda_graph"] = time_cuda(torch, graph.replay, 200, 20)
        if compile_too:
            try:
                cstep = torch.compile(step, mode="reduce-overhead")
                res["torch_compile"] = time_cuda(torch, cstep, 200, 30)
            except Exception as e:  # report, do not hide
                res["torch_compile_error"] = str(e)[:300]
    with open(out_json, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
