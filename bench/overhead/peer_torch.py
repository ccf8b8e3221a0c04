"""The overhead workload's PyTorch peer: N chained softmaxes over [B, W] f32, eager and as one
CUDA graph. usage: peer_torch.py X.npy N OUT.npy OUT.json"""
import json
import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from common import count_kernels, time_cuda  # noqa: E402


def main():
    xpath, n, out_npy, out_json = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    x = torch.from_numpy(np.load(xpath)).cuda()

    def chain():
        y = x
        for _ in range(n):
            y = torch.softmax(y, dim=-1)
        return y

    res = {"device": torch.cuda.get_device_name(), "n": n}
    with torch.no_grad():
        np.save(out_npy, chain().cpu().numpy())
        res["kernels_eager"] = count_kernels(torch, chain)
        res["eager"] = time_cuda(torch, chain, 200, 20)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                chain()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            chain()
        res["cuda_graph"] = time_cuda(torch, g.replay, 200, 20)
    with open(out_json, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
