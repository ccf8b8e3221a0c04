"""The beam workload (issue 8 item 6): Grape's GPT-2 `beam_search` (one CUDA graph launch per call,
`--executor graph`) against its PyTorch peer (bench/beam/peer_torch.py: the decode step eager, and
captured in a CUDA graph, with the beam logic in a Python loop), same weights and prompt, tokens
compared before anything is timed. Target: Grape >= 2x faster per token than the graphed peer.

    python3 bench/beam/bench_beam.py --grape build/grape --out DIR          (the GPU machine)
    python3 bench/beam/bench_beam.py --grape build-gpu/grape --out DIR --tiny --backend cpu
                                                                            (a smoke run here)

Writes under DIR: gpt2.safetensors, tok.npy, p.npy (bench/decode/make_inputs.py), beam_prompt.npy
(64 seeded tokens), grape_beam/out0.npy (tokens) and out1.npy (scores), torch_beam_tokens.npy,
grape_beam_{graph,eager}.json, grape_decode_step_graph.json, grape_beam_logic_graph.json (the beam
logic alone: bench/beam/beam_logic.grp), torch_beam.json, beam_summary.json
and beam_results.md (the rows for bench/RESULTS.md). Exit status 0 even when tokens differ (fp16
rounding can flip a near-tie on the GPU): the comparison is printed loudly and recorded."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from common import write_safetensors  # noqa: E402

GPT2 = os.path.join(ROOT, "examples", "gpt2.grp")
TINY = {"L": 2, "E": 64, "NH": 4, "V": 128, "P": 64, "T": 64, "N": 8, "EOS": 127}
FULL = {"NB": 5, "N": 128, "EOS": 50256}  # gpt2.grp's own constants (TINY leaves NB as it is)
GRAPH_NODE_US = 0.95  # a kernel node in a CUDA graph replay (docs: performance.md, H200)


def tiny_weights(path, seed, style="gpt2init", eos_scale=None, L=2, E=64, V=128, P=64):
    """Seeded tiny GPT-2 weights (HF names, f16). gpt2init: std 0.02 and norm gains near 1, as
    bench/decode/make_inputs.py (nearly flat next-token distributions); peaked: the larger scales
    of tests/python/np_gpt2.py (confident distributions, clear decisions). eos_scale multiplies the
    embedding of token V-1 (the tiny EOS), so that it is often likely and searches end early."""
    rng = np.random.default_rng(seed)
    s = {"gpt2init": dict(wte=0.02, wpe=0.02, g=0.02, b=0.02, attn=0.02, bias=0.02, fc=0.02, proj=0.02),
         "peaked": dict(wte=0.5, wpe=1.0, g=0.1, b=0.1, attn=0.2, bias=0.05, fc=0.2, proj=0.1)}[style]
    n = lambda std, *shape: (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float16)
    one = lambda k: (1 + rng.standard_normal(k, dtype=np.float32) * s["g"]).astype(np.float16)
    w = {"wte.weight": n(s["wte"], V, E), "wpe.weight": n(s["wpe"], P, E), "ln_f.weight": one(E),
         "ln_f.bias": n(s["b"], E)}
    for l in range(L):
        h = f"h.{l}."
        w.update({h + "ln_1.weight": one(E), h + "ln_1.bias": n(s["b"], E),
                  h + "attn.c_attn.weight": n(s["attn"], E, 3 * E), h + "attn.c_attn.bias": n(s["bias"], 3 * E),
                  h + "attn.c_proj.weight": n(s["attn"], E, E), h + "attn.c_proj.bias": n(s["bias"], E),
                  h + "ln_2.weight": one(E), h + "ln_2.bias": n(s["b"], E),
                  h + "mlp.c_fc.weight": n(s["fc"], E, 4 * E), h + "mlp.c_fc.bias": n(s["bias"], 4 * E),
                  h + "mlp.c_proj.weight": n(s["proj"], 4 * E, E), h + "mlp.c_proj.bias": n(s["bias"], E)})
    if eos_scale:
        w["wte.weight"][V - 1] = (w["wte.weight"][V - 1].astype(np.float32) * eos_scale).astype(np.float16)
    write_safetensors(path, {"transformer." + k: v for k, v in w.items()})


def compare_tokens(want, got, want_scores=None, got_scores=None):
    """How far two [NB, N] token arrays agree: rows, tokens, the first divergence."""
    want, got = np.asarray(want), np.asarray(got)
    r = {"identical": bool(want.shape == got.shape and np.array_equal(want, got))}
    if want.shape != got.shape:
        r["shapes"] = [list(want.shape), list(got.shape)]
        return r
    eq = want == got
    r["beams_equal"] = int(eq.all(axis=1).sum())
    r["beams"] = int(want.shape[0])
    r["tokens_equal"] = int(eq.sum())
    r["tokens"] = int(eq.size)
    if not r["identical"]:
        first = None
        for t in range(want.shape[1]):  # earliest step at which any beam differs
            bad = np.nonzero(~eq[:, t])[0]
            if len(bad):
                first = {"beam": int(bad[0]), "step": t, "grape": int(want[bad[0], t]), "peer": int(got[bad[0], t])}
                break
        r["first_divergence"] = first
    if want_scores is not None and got_scores is not None:
        d = np.abs(np.asarray(want_scores, np.float64) - np.asarray(got_scores, np.float64))
        r["scores_max_abs_diff"] = float(d.max())
    return r


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def grape_bench(cmd, path):
    out = run(cmd + ["--json"], stdout=subprocess.PIPE, text=True).stdout
    js = [line for line in out.splitlines() if line.startswith("{")]
    if not js:
        raise SystemExit(f"no JSON from: {' '.join(cmd)}\n{out}")
    r = json.loads(js[-1])
    with open(path, "w") as f:
        json.dump(r, f, indent=1)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grape", default=os.path.join(ROOT, "build", "grape"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench-beam"))
    ap.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--tiny", action="store_true", help="the tiny model (examples/README.md), for a CPU smoke run")
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1, help="prompt seed")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--no-decode-step", action="store_true", help="skip the decode_step comparison")
    a = ap.parse_args()
    D = os.path.abspath(a.out)
    os.makedirs(D, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    cuda = a.backend == "cuda"

    # inputs: weights, decode_step's tok and p, the prompt
    W = os.path.join(D, "gpt2.safetensors")
    defines, peer_flags = [], []
    if a.tiny:
        tiny_weights(W, 0)
        V, T = TINY["V"], TINY["T"]
        for k, v in TINY.items():
            defines += ["-D", f"{k}={v}"]
        peer_flags = ["--tiny"]
        prompt_len = min(a.prompt_len, 16)
        np.save(os.path.join(D, "tok.npy"), np.arange(5, dtype=np.int32) * 7)
        np.save(os.path.join(D, "p.npy"), np.array(prompt_len + TINY["N"] // 2, dtype=np.int32))
    else:
        sys.path.insert(0, os.path.join(BENCH, "decode"))
        from make_inputs import main as make_inputs
        make_inputs(D)
        V, T, prompt_len = 50257, 256, a.prompt_len
    P = os.path.join(D, "beam_prompt.npy")
    np.save(P, np.random.default_rng(a.seed).integers(0, V - 1, (1, prompt_len)).astype(np.int32))
    os.environ.setdefault("GRAPE_CACHE_DIR", os.path.join(D, "kernel-cache"))

    base = [GPT2, *defines, "--weights", W, "--backend", a.backend]
    beam = [*base, "--entry", "beam_search", "--input", f"prompt={P}"]
    execf = (lambda e: ["--executor", e]) if cuda else (lambda e: [])
    peer = [sys.executable, os.path.join(HERE, "peer_torch.py"), W, P, os.path.join(D, "torch_beam_tokens.npy"),
            os.path.join(D, "torch_beam.json"), "--device", "cuda" if cuda else "cpu", *peer_flags]

    # 1. correctness first: Grape's tokens, the peer's (no timing), compared
    run([a.grape, "run", *beam, *execf("graph"), "--output", os.path.join(D, "grape_beam")])
    run([*peer, "--iters", "0"], stdout=subprocess.DEVNULL)
    g_tok = np.load(os.path.join(D, "grape_beam", "out0.npy"))
    g_sc = np.load(os.path.join(D, "grape_beam", "out1.npy"))
    p_tok = np.load(os.path.join(D, "torch_beam_tokens.npy"))
    p_sc = np.load(os.path.join(D, "torch_beam_tokens_scores.npy"))
    cmp = compare_tokens(g_tok, p_tok, g_sc, p_sc)
    if cmp["identical"]:
        print(f"tokens: identical ({cmp['beams']} beams x {g_tok.shape[1]} tokens); scores max |diff| "
              f"{cmp['scores_max_abs_diff']:.3g}")
    else:
        bar = "!" * 78
        print(f"{bar}\n!!! Grape and the PyTorch peer give DIFFERENT beam-search tokens: {json.dumps(cmp)}\n"
              f"!!! (fp16 differences can flip a near-tie; the timings below still compare the same work "
              f"only if the step counts agree)\n{bar}", flush=True)

    # 2. timings: Grape graph, Grape eager, the peer, decode_step graph
    bench = [a.grape, "bench", *beam, "--warmup", "1", "--iters", str(a.iters)]
    g_graph = grape_bench(bench + execf("graph"), os.path.join(D, "grape_beam_graph.json"))
    g_eager = grape_bench(bench + execf("eager"), os.path.join(D, "grape_beam_eager.json")) if cuda else None
    run([*peer, "--iters", str(a.iters)], stdout=subprocess.DEVNULL)
    pr = json.load(open(os.path.join(D, "torch_beam.json")))
    dec = None
    if not a.no_decode_step:
        dec = grape_bench([a.grape, "bench", *base, "--entry", "decode_step", "--input", f"tok={D}/tok.npy",
                           "--input", f"p={D}/p.npy", *execf("graph"), "--warmup", "20", "--iters", "200"],
                          os.path.join(D, "grape_decode_step_graph.json"))
        if cuda:  # a few eager calls for its kernel count (the beam logic's kernels are counted eagerly)
            dec["eager_kernels_per_call"] = grape_bench(
                [a.grape, "bench", *base, "--entry", "decode_step", "--input", f"tok={D}/tok.npy", "--input",
                 f"p={D}/p.npy", "--executor", "eager", "--warmup", "1", "--iters", "3"],
                os.path.join(D, "grape_decode_step_eager.json")).get("kernels_per_call")

    # The beam logic alone (bench/beam/beam_logic.grp: beam_search's loop without the model, logits
    # fixed, EOS never among the best so that it runs all N steps): issue 8's per-token target is
    # within 15% of a graphed decode_step plus the beam logic's own kernels.
    logic = None
    if not a.no_decode_step:
        consts = {**FULL, **TINY} if a.tiny else FULL
        lg = np.random.default_rng(a.seed).standard_normal((consts["NB"], V)).astype(np.float16)
        lg[:, consts["EOS"]] = np.float16(-60000.0)
        LG = os.path.join(D, "beam_logic_logits.npy")
        np.save(LG, lg)
        logic_cmd = [a.grape, "bench", os.path.join(HERE, "beam_logic.grp"), *defines, "--backend", a.backend,
                     "--entry", "beam_logic", "--input", f"prompt={P}", "--input", f"logits={LG}", *execf("graph"),
                     "--warmup", "1", "--iters", str(max(a.iters, 5))]
        logic = grape_bench(logic_cmd, os.path.join(D, "grape_beam_logic_graph.json"))
        logic_n = consts["N"]

    # 3. summary
    steps = pr["steps"]
    per = lambda ms: ms / max(steps, 1)
    s = {"device": pr["device"], "torch": pr["torch"], "config": pr["config"], "steps": steps,
         "stopped_early": pr["stopped_early"], "tokens_compare": cmp,
         "grape_graph": {"median_ms": g_graph["median_ms"], "ms_per_token": per(g_graph["median_ms"]),
                         "host_syncs_per_call": g_graph.get("host_syncs_per_call"),
                         "graph_launches_per_call": g_graph.get("graph_launches_per_call"),
                         "kernels_per_call": g_graph.get("kernels_per_call"),
                         "executor": g_graph.get("executor", "graph")}}
    if g_eager:
        s["grape_eager"] = {"median_ms": g_eager["median_ms"], "ms_per_token": per(g_eager["median_ms"]),
                            "host_syncs_per_call": g_eager.get("host_syncs_per_call"),
                            "kernels_per_call": g_eager.get("kernels_per_call")}
    for v in ("eager", "cuda_graph"):
        if v in pr:
            s["torch_" + v] = {k: pr[v][k] for k in ("median_ms", "ms_per_token", "host_syncs_per_call", "steps")}
    for k in ("prefill_eager", "step_eager", "step_graph_replay", "kernels_per_step_eager"):
        if k in pr:
            s["torch_" + k] = pr[k]
    gp = s["grape_graph"]["ms_per_token"]
    peer_key = "torch_cuda_graph" if "torch_cuda_graph" in s else "torch_eager"
    ratio = s[peer_key]["ms_per_token"] / gp
    s["target_2x"] = {"peer": peer_key, "speedup": ratio, "met": bool(ratio >= 2.0 and cmp["identical"]),
                      "note": "" if cmp["identical"] else "tokens differ: the speedup compares different searches"}
    if dec:
        d_ms = dec["median_ms"]
        extra = None
        if g_eager and dec.get("eager_kernels_per_call"):
            # kernels the beam logic adds per token, beyond one decode_step (eager counts; the
            # prefill's are spread over the tokens too)
            extra = g_eager["kernels_per_call"] / max(steps, 1) - dec["eager_kernels_per_call"]
        launch_ms = (extra or 0) * GRAPH_NODE_US / 1e3
        logic_ms = logic["median_ms"] / logic_n if logic else launch_ms
        s["decode_step_graph"] = {"median_ms": d_ms, "p": int(np.load(os.path.join(D, "p.npy"))),
                                  "executor": dec.get("executor", "graph"),
                                  "kernels_per_call": dec.get("kernels_per_call"),
                                  "eager_kernels_per_call": dec.get("eager_kernels_per_call"),
                                  "beam_per_token_over_decode_step": gp / d_ms,
                                  "beam_logic_kernels_per_token": extra,
                                  "beam_logic_launch_estimate_ms": launch_ms,
                                  "beam_logic_ms_per_token": logic_ms,
                                  "beam_logic_measured": logic is not None,
                                  "beam_per_token_over_decode_step_plus_logic": gp / (d_ms + logic_ms),
                                  "within_15pct": bool(gp <= 1.15 * (d_ms + logic_ms))}
        if logic:
            s["beam_logic_graph"] = {"median_ms": logic["median_ms"], "steps": logic_n,
                                     "ms_per_token": logic_ms, "kernels_per_call": logic.get("kernels_per_call"),
                                     "graph_launches_per_call": logic.get("graph_launches_per_call")}
    with open(os.path.join(D, "beam_summary.json"), "w") as f:
        json.dump(s, f, indent=1)

    md = markdown(s)
    with open(os.path.join(D, "beam_results.md"), "w") as f:
        f.write(md)
    print(json.dumps(s, indent=1))
    print(md)


def markdown(s):
    c = s["config"]
    f = lambda x: "—" if x is None else f"{x:.3f}"
    rows = [f"beam search: GPT-2 (L={c['L']}, E={c['E']}, V={c['V']}), {c['NB']} beams, prompt {c['S']}, "
            f"N={c['N']}, T={c['T']}, on {s['device']} (PyTorch {s['torch']}); {s['steps']} tokens per call "
            f"({'stopped early' if s['stopped_early'] else 'all steps'}); tokens Grape vs peer: "
            + ("identical" if s["tokens_compare"]["identical"] else
               f"**DIFFERENT** {json.dumps(s['tokens_compare'])}"), "",
            "| variant | ms / call (median) | ms / token | host syncs / call | kernels / call |",
            "|---|---|---|---|---|"]
    g = s["grape_graph"]
    rows.append(f"| Grape `beam_search`, {g['executor']} executor | {f(g['median_ms'])} | "
                f"**{f(g['ms_per_token'])}** | {g['host_syncs_per_call']} | {g['kernels_per_call']} "
                f"({g['graph_launches_per_call']} graph launches) |")
    if "grape_eager" in s:
        g = s["grape_eager"]
        rows.append(f"| Grape `beam_search`, eager executor | {f(g['median_ms'])} | {f(g['ms_per_token'])} | "
                    f"{g['host_syncs_per_call']} | {g['kernels_per_call']} |")
    kps = s.get("torch_kernels_per_step_eager")
    for v, name in (("torch_eager", "PyTorch eager step + Python beam loop"),
                    ("torch_cuda_graph", "PyTorch CUDA-graph step + Python beam loop")):
        if v in s:
            p = s[v]
            rows.append(f"| {name} | {f(p['median_ms'])} | {f(p['ms_per_token'])} | {p['host_syncs_per_call']} | "
                        f"{'—' if kps is None else f'{kps} per step'} |")
    if "decode_step_graph" in s:
        d = s["decode_step_graph"]
        rows.append(f"| Grape `decode_step` (B={c['NB']}, p={d['p']}), {d['executor']} executor | "
                    f"{f(d['median_ms'])} | — | — | {d['kernels_per_call']} |")
    t = s["target_2x"]
    rows += ["", f"- Target Grape ≥ 2× faster per token than the {t['peer']} peer: {t['speedup']:.2f}× — "
                 f"**{'met' if t['met'] else 'not met'}**{(' (' + t['note'] + ')') if t['note'] else ''}."]
    if "decode_step_graph" in s:
        d = s["decode_step_graph"]
        extra = d["beam_logic_kernels_per_token"]
        how = ("measured: bench/beam/beam_logic.grp, beam_search's loop without the model, graph executor, "
               f"{s['beam_logic_graph']['median_ms']:.3f} ms for {s['beam_logic_graph']['steps']} steps"
               if d["beam_logic_measured"] else f"estimated as its kernels x {GRAPH_NODE_US} µs per graph node")
        rows.append(f"- Per token vs a graphed `decode_step`: {d['beam_per_token_over_decode_step']:.2f}× its time; "
                    f"beam logic adds {'?' if extra is None else f'{extra:.1f}'} kernels per token (eager counts) "
                    f"and {1e3 * d['beam_logic_ms_per_token']:.0f} µs per token ({how}); per token "
                    f"{d['beam_per_token_over_decode_step_plus_logic']:.2f}× decode_step + the beam logic: within "
                    f"15%: **{'yes' if d['within_15pct'] else 'no'}**.")
    if "torch_step_graph_replay" in s:
        rows.append(f"- Peer's step alone (reorder + decode + top-k, no host round trip): graph replay "
                    f"{f(s['torch_step_graph_replay']['median_ms'])} ms, "
                    f"eager {f(s['torch_step_eager']['median_ms'])} ms; "
                    f"eager prefill {f(s['torch_prefill_eager']['median_ms'])} ms per call.")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    main()
