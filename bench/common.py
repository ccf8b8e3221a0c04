"""Shared helpers of the benchmark peers: a dependency-free safetensors reader and writer (the GPU machine has
PyTorch but perhaps not the safetensors package), .npy I/O, and CUDA-event timing."""
import json
import struct

import numpy as np

_DT = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.tobytes()
        header[name] = {"dtype": _DT[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """The tensors of a safetensors file as {name: numpy array} (F16, F32, I32)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dt = {"F16": np.float16, "F32": np.float32, "I32": np.int32}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(data[b:e], dtype=dt[v["dtype"]]).reshape(v["shape"]).copy()
    return out


def time_cuda(torch, fn, iters, warmup):
    """Per-call device time (ms) with CUDA events: min, median, p90, p99, mean."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    t = np.sort(np.array(times))
    pick = lambda q: float(t[min(len(t) - 1, int(q * (len(t) - 1) + 0.5))])
    return {"min_ms": float(t[0]), "median_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99),
            "mean_ms": float(t.mean())}


def cuda_graph_replay(torch, fn):
    """fn captured in a CUDA graph (after three warm-up calls on a side stream, as PyTorch's docs
    ask); returns the graph's replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def count_kernels(torch, fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
