# PyTorch peer of bench/beam_logic/beam_logic.grp: log_softmax of 5 x 50257 fp16 logits in fp32,
# plus each beam's score, top 10 of the 251285 candidates. CUDA-graph replay, device time per call
# (CUDA events around 1000 replays), and the kernels alone (eager, torch.profiler-free: events).
import sys, numpy as np, torch
logits = torch.from_numpy(np.load(sys.argv[1])).cuda()
scores = torch.from_numpy(np.load(sys.argv[2])).cuda()
def step():
    cand = torch.log_softmax(logits.float(), dim=-1) + scores.view(5, 1)
    return torch.topk(cand.view(-1), 10)
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3): step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g): v, i = step()
for _ in range(20): g.replay()
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for r in range(3):
    a.record()
    for _ in range(1000): g.replay()
    b.record(); torch.cuda.synchronize()
    print(f"peer (PyTorch graph) log_softmax + add + topk: {a.elapsed_time(b):.1f} us per call (round {r + 1})")
print("peer values", v.cpu().numpy(), "indices", i.cpu().numpy())
