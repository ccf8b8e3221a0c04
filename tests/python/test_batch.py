#!/usr/bin/env python3
"""End-to-end tests of `grape batch` (docs/batch.md): results equal to `grape run` of each request
alone (bit for bit on the CPU backend), dynamic batching, shared --input values, errors per request
with their line numbers, shards, resuming (a truncated last line, kill -9 in the middle, Ctrl-C)
and the summary.

    python3 tests/python/test_batch.py PATH/TO/grape [NAME_SUBSTRING...]   (what ctest runs)
    GRAPE=PATH/TO/grape python3 -m pytest tests/python/test_batch.py -q

Exit 0 pass, 1 fail, 77 numpy missing."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

try:
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

from grape_cli import Grape  # noqa: E402
from pty_run import run_with_stderr_on_a_terminal  # noqa: E402

MLP = os.path.join(REPO, "examples", "mlp.grp")
GPT2 = os.path.join(REPO, "examples", "gpt2.grp")
MLP_D = dict(D=16, H=32, C=4)
GPT2_D = dict(L=2, E=64, NH=4, V=128, P=64, T=64, N=8)


def grape_exe():
    if os.environ.get("GRAPE"):
        return os.path.abspath(os.environ["GRAPE"])
    for build in ("build-batch", "build-rel", "build"):
        p = os.path.join(REPO, build, "grape")
        if os.path.exists(p):
            return p
    raise RuntimeError("set GRAPE to the grape executable")


_BASE = None


def tmpdir():
    global _BASE
    if _BASE is None:
        _BASE = tempfile.mkdtemp(prefix="grape_batch_")
    return tempfile.mkdtemp(dir=_BASE)


def defines(d):
    return [a for k, v in d.items() for a in ("-D", f"{k}={v}")]


def batch(*args, stdin=None, timeout=120):
    p = subprocess.run([grape_exe(), "batch"] + [str(a) for a in args], input=stdin, capture_output=True,
                       text=True, timeout=timeout)
    assert "internal error" not in p.stderr, p.stderr
    return p.returncode, p.stdout, p.stderr


def mlp_batch(req, out, *extra, **kw):
    return batch(MLP, "--entry", "main", *defines(MLP_D), "--random-weights", 7, "--backend", "cpu",
                 "--requests", req, "--output", out, *extra, **kw)


def write_requests(path, reqs):
    with open(path, "w") as f:
        for r in reqs:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def mlp_rows(n, seed=0, rows=lambda i: 1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((rows(i), MLP_D["D"])).astype(np.float16) for i in range(n)]


def results(out):
    """id -> result line (asserting one line per id)."""
    by_id = {}
    with open(os.path.join(out, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            assert r["id"] not in by_id, f"two results for {r['id']!r}"
            by_id[r["id"]] = r
    return by_id


def output(out, r, name="out0", dtype=np.float16):
    v = r["outputs"][name]
    if isinstance(v, dict):
        return np.load(os.path.join(out, v["npy"]))
    return np.array(v, dtype=dtype)


def stable(res):
    """What must not depend on batching or interruptions: status, outputs, error."""
    return {k: (r["line"], r["status"], r.get("outputs"), r.get("error")) for k, r in res.items()}


# ------------------------------------------------------------------------------------------------

def test_mlp_matches_grape_run_bit_for_bit():
    d = tmpdir()
    xs = mlp_rows(40, rows=lambda i: 3 if i % 5 == 0 else 1)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": f"r{i}", "inputs": {"x": x.astype(float).tolist()}} for i, x in enumerate(xs)])
    rc, out, err = mlp_batch(req, os.path.join(d, "out"), "--max-batch", 8)
    assert rc == 0, err
    res = results(os.path.join(d, "out"))
    assert len(res) == 40
    assert max(r["batch"] for r in res.values()) > 1, "nothing was batched"
    g = Grape(grape_exe())
    for i in (0, 1, 7, 39):
        (want,) = g.run(MLP, defines=MLP_D, random_weights=7, inputs={"x": xs[i]})
        got = output(os.path.join(d, "out"), res[f"r{i}"])
        assert got.shape == want.shape and np.array_equal(got.view(np.uint16), want.view(np.uint16)), i
    # Every request: the same bits as one call per request.
    rc, _, err = mlp_batch(req, os.path.join(d, "alone"), "--max-batch", 1)
    assert rc == 0, err
    assert stable(results(os.path.join(d, "alone"))) == stable(res)


def test_npy_outputs_and_inputs():
    d = tmpdir()
    xs = mlp_rows(6)
    np.save(os.path.join(d, "x0.npy"), xs[0])
    reqs = [{"id": "from-npy", "inputs": {"x": {"npy": "x0.npy"}}}]  # relative to the request file
    reqs += [{"id": f"r/{i}", "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)]
    req = write_requests(os.path.join(d, "req.jsonl"), reqs)
    out = os.path.join(d, "out")
    rc, _, err = mlp_batch(req, out, "--outputs", "npy")
    assert rc == 0, err
    res = results(out)
    for k, r in res.items():
        assert set(r["outputs"]["out0"]) == {"npy"}, r
        assert os.path.exists(os.path.join(out, r["outputs"]["out0"]["npy"]))
    assert np.array_equal(output(out, res["from-npy"]), output(out, res["r/0"]))
    assert not [f for f in os.listdir(os.path.join(out, "outputs")) if not f.endswith(".npy")]


def test_rows_of_a_shared_npy_file():
    d = tmpdir()
    xs = np.concatenate(mlp_rows(10))
    np.save(os.path.join(d, "all.npy"), xs)
    reqs = [{"id": f"rows{i}", "inputs": {"x": {"npy": "all.npy", "rows": [i, i + 1]}}} for i in range(10)]
    reqs.append({"id": "two", "inputs": {"x": {"npy": "all.npy", "rows": [3, 5]}}})
    reqs += [{"id": f"inline{i}", "inputs": {"x": [xs[i].tolist()]}} for i in range(10)]
    reqs.append({"id": "past-end", "inputs": {"x": {"npy": "all.npy", "rows": [9, 11]}}})
    reqs.append({"id": "one-bound", "inputs": {"x": {"npy": "all.npy", "rows": [1]}}})
    reqs.append({"id": "negative", "inputs": {"x": {"npy": "all.npy", "rows": [-1, 1]}}})
    req = write_requests(os.path.join(d, "req.jsonl"), reqs)
    out = os.path.join(d, "out")
    rc, _, err = mlp_batch(req, out)
    assert rc == 1, err
    res = results(out)
    for i in range(10):
        assert res[f"rows{i}"]["outputs"] == res[f"inline{i}"]["outputs"], i
    assert res["two"]["outputs"]["out0"] == res["rows3"]["outputs"]["out0"] + res["rows4"]["outputs"]["out0"]
    assert "rows [9, 11] of" in res["past-end"]["error"] and "which has 10 rows" in res["past-end"]["error"]
    assert '"rows": [FIRST, END]' in res["one-bound"]["error"], res["one-bound"]
    assert '"rows": [FIRST, END]' in res["negative"]["error"], res["negative"]


def test_shared_npy_file_truncated_during_the_run_stops_it_resumably():
    """Another process truncates a shared .npy file while the run reads rows of it (mapped): the run
    stops with an error naming the file and exit status 1, never SIGBUS; the results written before
    stand, and the same command, once the file is whole again, completes the run. The rows read
    next lie in a page that the truncation removed (SIGBUS before), or past the new end in the new
    last page, which the OS fills with zeros (outputs of zero rows before, status ok): a page in
    the middle of the file, or the file's last page."""
    d = tmpdir()
    xs = np.concatenate(mlp_rows(4096, seed=4))  # 32 bytes a row: 128 KB, 32 pages
    path = os.path.join(d, "all.npy")
    np.save(path, xs)
    header = os.path.getsize(path) - xs.nbytes

    def lines(rows):
        return "".join(json.dumps({"id": f"r{i}", "inputs": {"x": {"npy": path, "rows": [i, i + 1]}}}) + "\n"
                       for i in rows)
    # The request reader takes 1 MB windows and dispatches one once it has read the next: blank
    # lines push the first requests through while standard input stays open.
    push = (" " * (1 << 20) + "\n") * 3
    args = [grape_exe(), "batch", MLP, "--entry", "main", *defines(MLP_D), "--random-weights", "7",
            "--backend", "cpu", "--max-batch", "1", "--threads", "1"]
    # The first row read after the truncation, and the rows kept: page 15 of the file, gone; page
    # 0, cut after row 100; page 32, the last, cut after row 4092.
    for later, keep in ((2000, 100), (101, 100), (4093, 4092)):
        out = os.path.join(d, f"out{later}")
        np.save(path, xs)
        p = subprocess.Popen(args + ["--requests", "-", "--output", out], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            p.stdin.write(lines(range(10)) + push)
            p.stdin.flush()
            deadline = time.time() + 60
            while count_lines(os.path.join(out, "results.jsonl")) < 10:
                assert p.poll() is None and time.time() < deadline, "the first requests did not run"
                time.sleep(0.01)
            os.truncate(path, header + keep * xs.shape[1] * 2 + 16)
            _, err = p.communicate(lines(range(later, min(later + 10, len(xs)))), timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 1, (later, p.returncode, err)  # -7 was SIGBUS
        assert "internal error" not in err, err
        assert f"grape batch: error: {path} changed size while it was being read (truncated?)" in err, err
        assert "run the same command again to resume" in err, err
        res = results(out)
        assert set(res) == {f"r{i}" for i in range(10)}, sorted(res)
        assert all(r["status"] == "ok" for r in res.values()), res
        # Whole again: the same requests from a file resume the run and complete it.
        np.save(path, xs)
        req = os.path.join(d, f"req{later}.jsonl")
        with open(req, "w") as f:
            f.write(lines(range(10)) + lines(range(later, min(later + 10, len(xs)))))
        rc, s, err = mlp_batch(req, out, "--max-batch", 1, "--json")
        assert rc == 0, err
        s = json.loads(s)
        assert s["resumed"] == 10 and s["requests"] == s["ok"] == min(10, len(xs) - later), s
        rc, _, err = mlp_batch(req, os.path.join(d, f"ref{later}"), "--max-batch", 1)
        assert rc == 0, err
        assert stable(results(out)) == stable(results(os.path.join(d, f"ref{later}")))


def check_npy_rows(out, want, dtype=np.float16):
    """Every result of `out` names rows of an .npy file equal to the inline result in `want`; returns
    the files named, which must be all that outputs/ holds."""
    got = results(out)
    assert set(got) == set(want), (sorted(got), sorted(want))
    files = set()
    for k, r in got.items():
        assert r["status"] == "ok", r
        ref = r["outputs"]["out0"]
        a, b = ref["rows"]
        files.add(ref["npy"])
        rows = np.load(os.path.join(out, ref["npy"]))[a:b]
        assert rows.dtype == dtype and np.array_equal(rows, np.array(want[k]["outputs"]["out0"], dtype)), k
    assert sorted(os.listdir(os.path.join(out, "outputs"))) == sorted(os.path.basename(f) for f in files)
    return files


def test_npy_rows_outputs_files_of_many_calls():
    d = tmpdir()
    xs = mlp_rows(20, rows=lambda i: 2 if i % 4 == 0 else 1)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": f"r{i}", "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)])
    rc, _, err = mlp_batch(req, os.path.join(d, "inline"), "--outputs", "inline", "--max-batch", 8)
    assert rc == 0, err
    out = os.path.join(d, "rows")
    rc, _, err = mlp_batch(req, out, "--outputs", "npy-rows", "--max-batch", 8)
    assert rc == 0, err
    res = results(out)
    assert max(r["batch"] for r in res.values()) > 1, "nothing was batched"
    # The rows of calls that finish within half a second share a file: here, at most one per call
    # (25 rows in calls of at most 8), and nothing else in outputs/.
    files = check_npy_rows(out, results(os.path.join(d, "inline")))
    assert 1 <= len(files) <= 20, files
    # Each file is a plain .npy (header padded to 64 bytes, as np.save writes it).
    for f in files:
        with open(os.path.join(out, f), "rb") as fh:
            head = fh.read(10)
            hlen = int.from_bytes(head[8:10], "little")
        assert head[:8] == b"\x93NUMPY\x01\x00" and (10 + hlen) % 64 == 0, head


def test_npy_rows_of_a_bf16_output_are_float32():
    d = tmpdir()
    prog = os.path.join(d, "id.grp")
    with open(prog, "w") as f:
        f.write("fn main(x: bf16[B, 3]) -> bf16[B, 3] {\n  return x\n}\n")
    vals = [[0.5, -1.25, 3.0], [1e30, -0.0, 7.5], [2.0, 4.0, 8.0]]
    req = write_requests(os.path.join(d, "req.jsonl"), [{"id": i, "inputs": {"x": [v]}} for i, v in enumerate(vals)])
    rc, _, err = batch(prog, "--backend", "cpu", "--requests", req, "--output", os.path.join(d, "inline"),
                       "--outputs", "inline")
    assert rc == 0, err
    out = os.path.join(d, "rows")
    rc, _, err = batch(prog, "--backend", "cpu", "--requests", req, "--output", out, "--outputs", "npy-rows")
    assert rc == 0, err
    check_npy_rows(out, results(os.path.join(d, "inline")), np.float32)


def test_npy_rows_inputs_in_every_form_and_order():
    """The usual request form takes a fast path; other spellings of it, and rows that do not lie
    end to end, give the same results."""
    d = tmpdir()
    xs = np.concatenate(mlp_rows(24))
    np.save(os.path.join(d, "all.npy"), xs)
    os.mkdir(os.path.join(d, "sub"))
    np.save(os.path.join(d, "sub", "all.npy"), xs)
    # The same data behind a header np.save would not write (keys in another order): read whole.
    with open(os.path.join(d, "all.npy"), "rb") as f:
        raw = f.read()
    hlen = int.from_bytes(raw[8:10], "little")
    text = "{'shape': (24, 16), 'fortran_order': False, 'descr': '<f2'}"
    text += " " * (hlen - len(text) - 1) + "\n"
    with open(os.path.join(d, "odd.npy"), "wb") as f:
        f.write(raw[:10] + text.encode() + raw[10 + hlen:])
    lines = []
    for i in range(24):
        k = i % 6
        if k == 0:
            line = json.dumps({"id": f"r{i}", "inputs": {"x": {"npy": "all.npy", "rows": [i, i + 1]}}})
        elif k == 1:
            line = '{ "inputs" : { "x" : { "rows" : [ %d , %d ] , "npy" : "all.npy" } } , "id" : "r%d" }\r' % (
                i, i + 1, i)
        elif k == 2:
            line = '{"id":"r%d","inputs":{"x":{"npy":"sub\\/all.npy","rows":[%d,%d]}}}' % (i, i, i + 1)
        elif k == 3:
            line = '{"id": "r\\u0030%d", "inputs": {"x": {"npy": "odd.npy", "rows": [%d, %d]}}}' % (i, i, i + 1)
        elif k == 4:
            line = '{"id": %d, "inputs": {"x": {"npy": "%s", "rows": [%d, %d]}}}' % (
                1000 + i, os.path.join(d, "all.npy"), i, i + 1)
        else:
            line = '{"id": "r%d", "inputs": {"x": {"npy": "all.npy", "rows": [%d, %d]}}}' % (i, 23 - i, 24 - i)
        lines.append(line)
    req = write_requests(os.path.join(d, "req.jsonl"), lines)
    inline = write_requests(os.path.join(d, "inline.jsonl"), [
        {"id": json.loads(line)["id"], "inputs": {"x": [xs[23 - i if i % 6 == 5 else i].tolist()]}}
        for i, line in enumerate(lines)])
    want_dir = os.path.join(d, "want")
    rc, _, err = mlp_batch(inline, want_dir, "--outputs", "inline", "--max-batch", 1)
    assert rc == 0, err
    want = stable(results(want_dir))
    for mb in ("1", "5", "32"):
        out = os.path.join(d, "out" + mb)
        rc, _, err = mlp_batch(req, out, "--outputs", "inline", "--max-batch", mb)
        assert rc == 0, err
        assert stable(results(out)) == want, mb
    assert "r03" in want and 1004 in want, sorted(want, key=str)


def test_npy_rows_errors_are_those_of_the_general_reader():
    d = tmpdir()
    np.save(os.path.join(d, "all.npy"), np.concatenate(mlp_rows(4)))
    np.save(os.path.join(d, "wide.npy"), np.zeros((4, 17), np.float16))
    np.save(os.path.join(d, "f32.npy"), np.zeros((4, 16), np.float32))
    reqs = [
        '{"id": "past", "inputs": {"x": {"npy": "all.npy", "rows": [3, 5]}}}',
        '{"id": "wide", "inputs": {"x": {"npy": "wide.npy", "rows": [0, 1]}}}',
        '{"id": "f32", "inputs": {"x": {"npy": "f32.npy", "rows": [0, 1]}}}',
        '{"id": "absent", "inputs": {"x": {"npy": "absent.npy", "rows": [0, 1]}}}',
        '{"id": "extra", "inputs": {"x": {"npy": "all.npy", "rows": [0, 1]}}, "more": 1}',
        '{"id": "dup", "inputs": {"x": {"npy": "all.npy", "rows": [0, 1]}}}',
        '{"id": "dup", "inputs": {"x": {"npy": "all.npy", "rows": [1, 2]}}}',
        '{"id": "float", "inputs": {"x": {"npy": "all.npy", "rows": [0, 1.0]}}}',
        '{"id": "trailing", "inputs": {"x": {"npy": "all.npy", "rows": [0, 1]}}} x',
        '{"id": "ok", "inputs": {"x": {"npy": "all.npy", "rows": [0, 1]}}}',
    ]
    req = write_requests(os.path.join(d, "req.jsonl"), reqs)
    rc, _, err = mlp_batch(req, os.path.join(d, "out"))
    assert rc == 1, err
    res = {r["line"]: r for r in results_lines(os.path.join(d, "out"))}
    assert "rows [3, 5] of" in res[1]["error"] and "which has 4 rows" in res[1]["error"], res[1]
    assert "the entry declares f16[B, 16] (dim 1 must be 16)" in res[2]["error"], res[2]
    assert "is f32, the entry declares" in res[3]["error"], res[3]
    assert "absent.npy" in res[4]["error"], res[4]
    assert 'unknown field "more"' in res[5]["error"], res[5]
    assert res[6]["status"] == "ok" and "duplicate id" in res[7]["error"], res[7]
    assert '"rows": [FIRST, END]' in res[8]["error"], res[8]
    assert "not valid JSON" in res[9]["error"] and res[9]["id"] == "trailing", res[9]
    assert res[10]["status"] == "ok"


def results_lines(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_bad_requests_get_error_lines_and_the_rest_runs():
    d = tmpdir()
    x = mlp_rows(1)[0].tolist()
    np.save(os.path.join(d, "int.npy"), np.zeros((1, MLP_D["D"]), np.int32))
    lines = [
        {"id": "good1", "inputs": {"x": x}},
        "not json at all",
        {"id": "wrong-dim", "inputs": {"x": [[1.0, 2.0]]}},
        {"id": "unknown", "inputs": {"x": x, "y": 1}},
        {"inputs": {"x": x}},
        {"id": "ragged", "inputs": {"x": [x[0], x[0][:3]]}},
        {"id": "wrong-dtype", "inputs": {"x": {"npy": "int.npy"}}},
        {"id": "not-a-number", "inputs": {"x": [["a"] * MLP_D["D"]]}},
        {"id": "missing", "inputs": {}},
        {"id": "good1", "inputs": {"x": x}},
        {"id": "no-file", "inputs": {"x": {"npy": "absent.npy"}}},
        "",
        {"id": "good2", "inputs": {"x": x}},
    ]
    req = write_requests(os.path.join(d, "req.jsonl"), lines)
    rc, _, err = mlp_batch(req, os.path.join(d, "out"))
    assert rc == 1, err
    assert "10 requests failed" in err, err
    with open(os.path.join(d, "out", "results.jsonl")) as f:
        by_line = {r["line"]: r for r in map(json.loads, f)}
    expect = {
        2: "req.jsonl:2: not valid JSON",
        3: "the entry declares f16[B, 16] (dim 1 must be 16)",
        4: 'unknown input "y" (the entry takes x)',
        5: 'the request has no "id"',
        6: "not rectangular",
        7: "is i32, the entry declares f16[B, 16]",
        8: "element [0][0]: expected a number, found a string",
        9: "missing input 'x'",
        10: 'duplicate id "good1" (first at line 1)',
        11: "absent.npy",
    }
    for line, fragment in expect.items():
        assert by_line[line]["status"] == "error", by_line[line]
        assert fragment in by_line[line]["error"], (fragment, by_line[line])
        assert by_line[line]["error"].startswith(os.path.join(d, "req.jsonl") + f":{line}:"), by_line[line]
    assert by_line[1]["status"] == "ok" and by_line[13]["status"] == "ok"
    assert 12 not in by_line  # blank lines are not requests
    assert by_line[2]["id"] is None


def test_more_malformed_requests():
    d = tmpdir()
    x = [0.5] * MLP_D["D"]
    lines = [
        '{"unknown": 1, "id": "late-id", "inputs": {"x": [%s]}}' % json.dumps(x),
        {"id": {"a": 1}, "inputs": {}},
        {"id": "inputs-array", "inputs": [1, 2]},
        {"id": "deeper", "inputs": {"x": [[x]]}},
        {"id": "shallow", "inputs": {"x": x}},
        {"id": "scalar", "inputs": {"x": 1.5}},
        {"id": "mixed", "inputs": {"x": [x, 3]}},
        {"id": "npy-extra", "inputs": {"x": {"npy": "a.npy", "more": 1}}},
        {"id": "npy-number", "inputs": {"x": {"npy": 3}}},
        '{"id": "twice", "inputs": {"x": [%s], "x": [%s]}}' % (json.dumps(x), json.dumps(x)),
        '{"id": "truncated", "inputs": {"x": [[1, 2',
        "[1, 2]",
        {"id": "ok", "inputs": {"x": [x, x]}},
        {"id": "nan-is-allowed", "inputs": {"x": [["NaN"] + x[1:]]}},
        {"id": "long-field", "f" * 5000: 1, "inputs": {"x": [x]}},
        {"id": "long-input", "inputs": {"x": [x], "é" * 3000: 1}},
    ]
    req = write_requests(os.path.join(d, "req.jsonl"), lines)
    rc, _, err = mlp_batch(req, os.path.join(d, "out"))
    assert rc == 1, err
    with open(os.path.join(d, "out", "results.jsonl")) as f:
        by_line = {r["line"]: r for r in map(json.loads, f)}
    expect = {
        1: ("late-id", 'unknown field "unknown"'),
        2: (None, '"id" must be a string or an integer, found an object'),
        3: ("inputs-array", '"inputs" must be an object, found an array'),
        4: ("deeper", "is nested deeper than the entry's f16[B, 16] (rank 2)"),
        5: ("shallow", "input 'x' has rank 1, the entry declares f16[B, 16] (rank 2)"),
        6: ("scalar", "input 'x' has rank 0"),
        7: ("mixed", "not rectangular"),
        8: ("npy-extra", 'an object value must be {"npy": "PATH"}'),
        9: ("npy-number", 'an object value must be {"npy": "PATH"}'),
        10: ("twice", 'input "x" given twice'),
        11: ("truncated", "not valid JSON"),
        12: (None, "a request must be a JSON object, found an array"),
    }
    for line, (rid, fragment) in expect.items():
        r = by_line[line]
        assert r["status"] == "error" and fragment in r["error"] and r["id"] == rid, (fragment, r)
    assert by_line[13]["status"] == "ok" and len(by_line[13]["outputs"]["out0"]) == 2
    assert by_line[14]["status"] == "ok"
    # A 5000-character key is cut in the message (its first 32 bytes, on a UTF-8 boundary).
    long_field, long_input = by_line[15], by_line[16]
    assert 'unknown field "%s"... (5000 characters)' % ("f" * 32) in long_field["error"], long_field
    assert 'unknown input "%s"... (6000 characters)' % ("é" * 16) in long_input["error"], long_input
    assert len(long_field["error"]) < 300 and len(long_input["error"]) < 300


def test_examples_batch_run_sh():
    d = tmpdir()
    p = subprocess.run([os.path.join(REPO, "examples", "batch", "run.sh"), grape_exe(), d], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    mlp, gpt2 = results(os.path.join(d, "mlp")), results(os.path.join(d, "gpt2"))
    assert len(mlp) == 8 and all(r["status"] == "ok" for r in mlp.values())
    assert len(gpt2) == 4 and all(r["status"] == "ok" for r in gpt2.values())
    g = Grape(grape_exe())
    with open(os.path.join(REPO, "examples", "batch", "mlp_requests.jsonl")) as f:
        req = json.loads(f.readlines()[3])
    (want,) = g.run(MLP, defines=dict(D=8, H=16, C=4), random_weights=1,
                    inputs={"x": np.array(req["inputs"]["x"], np.float16)})
    assert np.array_equal(output(os.path.join(d, "mlp"), mlp[req["id"]]), want)
    with open(os.path.join(REPO, "examples", "batch", "gpt2_requests.jsonl")) as f:
        req = json.loads(f.readline())
    (want,) = g.run(GPT2, entry="generate", defines=GPT2_D, random_weights=1,
                    inputs={"prompt": np.array(req["inputs"]["prompt"], np.int32), "max_new": np.array(5, np.int32)})
    assert np.array_equal(output(os.path.join(d, "gpt2"), gpt2[req["id"]], dtype=np.int32), want)


# A program whose calls can fail at run time (S must agree across inputs) and that has a shared
# (non-stacked) scalar input.
SCALE = """\
model batch_test
fn main(x: f32[B, S], y: f32[B, S], k: f32[]) -> f32[B, S] {
  return (x + y) * k
}
fn total(x: f32[B, S]) -> f32[] {
  return sum(x)
}
"""


def scale_file(d):
    p = os.path.join(d, "scale.grp")
    with open(p, "w") as f:
        f.write(SCALE)
    return p


def test_run_time_error_fails_only_its_request_and_shared_inputs():
    d = tmpdir()
    grp = scale_file(d)
    np.save(os.path.join(d, "k.npy"), np.array(2.0, np.float32))
    reqs = [{"id": i, "inputs": {"x": [[i, 1.0]], "y": [[1.0, 2.0]]}} for i in range(5)]
    reqs.append({"id": "bad", "inputs": {"x": [[1.0, 1.0]], "y": [[1.0, 2.0, 3.0]]}})
    reqs.append({"id": "own-k", "inputs": {"x": [[1.0, 1.0]], "y": [[1.0, 2.0]], "k": 10}})
    req = write_requests(os.path.join(d, "req.jsonl"), reqs)
    out = os.path.join(d, "out")
    rc, _, err = batch(grp, "--requests", req, "--output", out, "--input", f"k={d}/k.npy", "--backend", "cpu")
    assert rc == 1, err
    res = results(out)
    for i in range(5):
        assert res[i]["status"] == "ok" and res[i]["outputs"]["out0"] == [[2 * (i + 1), 6]], res[i]
    assert res["bad"]["status"] == "error" and "req.jsonl:6:" in res["bad"]["error"], res["bad"]
    assert res["own-k"]["outputs"]["out0"] == [[20, 30]], res["own-k"]
    # The requests with k = 2 share calls; the one with its own k runs apart.
    assert res[0]["batch"] >= 2 and res["own-k"]["batch"] == 1


def test_entry_that_cannot_batch_runs_one_call_per_request():
    d = tmpdir()
    grp = scale_file(d)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": i, "inputs": {"x": [[i, 1.0], [2.0, 3.0]]}} for i in range(4)])
    rc, _, err = batch(grp, "--entry", "total", "--requests", req, "--output", os.path.join(d, "out"),
                       "--backend", "cpu")
    assert rc == 0, err
    assert "one call per request: output out0 has no symbolic leading dim" in err, err
    res = results(os.path.join(d, "out"))
    assert [res[i]["outputs"]["out0"] for i in range(4)] == [i + 6 for i in range(4)]
    assert all(r["batch"] == 1 for r in res.values())


def test_gpt2_generate_batched_matches_grape_run():
    d = tmpdir()
    rng = np.random.default_rng(3)
    prompts = [rng.integers(0, GPT2_D["V"], (1, 5)).astype(np.int32) for _ in range(4)]
    reqs = [{"id": f"p{i}", "inputs": {"prompt": p.tolist(), "max_new": 6}} for i, p in enumerate(prompts)]
    req = write_requests(os.path.join(d, "req.jsonl"), reqs)
    out = os.path.join(d, "out")
    rc, _, err = batch(GPT2, "--entry", "generate", *defines(GPT2_D), "--random-weights", 3, "--backend", "cpu",
                       "--requests", req, "--output", out)
    assert rc == 0, err
    res = results(out)
    assert res["p0"]["batch"] == 4
    g = Grape(grape_exe())
    for i in (0, 3):
        (want,) = g.run(GPT2, entry="generate", defines=GPT2_D, random_weights=3,
                        inputs={"prompt": prompts[i], "max_new": np.array(6, np.int32)})
        assert np.array_equal(output(out, res[f"p{i}"], dtype=np.int32), want), i


def fnv1a64(s):
    h = 14695981039346656037
    for b in s.encode():
        h = ((h ^ b) * 1099511628211) % (1 << 64)
    return h


def test_shards_split_by_fnv1a_and_merge_to_the_whole():
    d = tmpdir()
    xs = mlp_rows(30)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": f"q{i}", "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)])
    rc, _, err = mlp_batch(req, os.path.join(d, "all"))
    assert rc == 0, err
    whole = stable(results(os.path.join(d, "all")))
    merged = {}
    for i in range(3):
        rc, _, err = mlp_batch(req, os.path.join(d, f"s{i}"), "--shard", f"{i}/3")
        assert rc == 0, err
        part = stable(results(os.path.join(d, f"s{i}")))
        assert all(fnv1a64(k) % 3 == i for k in part), part.keys()
        assert not set(part) & set(merged)
        merged.update(part)
    assert merged == whole


def test_requests_on_stdin_and_json_summary():
    d = tmpdir()
    xs = mlp_rows(5)
    text = "".join(json.dumps({"id": i, "inputs": {"x": x.tolist()}}) + "\n" for i, x in enumerate(xs))
    rc, out, err = mlp_batch("-", os.path.join(d, "out"), "--json", stdin=text)
    assert rc == 0, err
    s = json.loads(out)
    assert s["requests"] == 5 and s["ok"] == 5 and s["failed"] == 0 and s["batches"] == 1, s
    assert s["backend"] == "cpu" and s["batch_p50_ms"] > 0
    assert "\r" not in err  # no progress line when stderr is not a terminal
    rc, out, err = mlp_batch("-", os.path.join(d, "out2"), "--quiet", stdin=text)
    assert rc == 0 and out == "" and err == "", err


def test_resume_skips_done_ids_and_drops_a_truncated_line():
    d = tmpdir()
    xs = mlp_rows(20)
    reqs = [{"id": f"r{i}", "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)]
    req_all = write_requests(os.path.join(d, "all.jsonl"), reqs)
    req_half = write_requests(os.path.join(d, "half.jsonl"), reqs[:10])
    rc, _, err = mlp_batch(req_all, os.path.join(d, "ref"))
    assert rc == 0, err
    out = os.path.join(d, "out")
    rc, _, err = mlp_batch(req_half, out)
    assert rc == 0, err
    # A run killed in the middle of a write: a last line without its newline.
    with open(os.path.join(out, "results.jsonl"), "a") as f:
        f.write('{"id":"r15","line":16,"status":"ok","outp')
    rc, s, err = mlp_batch(req_all, out, "--json")
    assert rc == 0, err
    assert "dropped the truncated last line" in err, err
    s = json.loads(s)
    assert s["resumed"] == 10 and s["requests"] == 10, s
    assert stable(results(out)) == stable(results(os.path.join(d, "ref")))
    # Nothing left to do; --overwrite starts over.
    rc, s, err = mlp_batch(req_all, out, "--json")
    assert rc == 0 and json.loads(s)["requests"] == 0, (s, err)
    rc, s, err = mlp_batch(req_all, out, "--json", "--overwrite")
    assert rc == 0 and json.loads(s)["requests"] == 20, (s, err)
    assert stable(results(out)) == stable(results(os.path.join(d, "ref")))


def slow_mlp_requests(d, n):
    """Requests for a bigger MLP, run one call each, so that a run lasts long enough to stop."""
    rng = np.random.default_rng(5)
    with open(os.path.join(d, "req.jsonl"), "w") as f:
        for i in range(n):
            x = rng.standard_normal((1, 64)).astype(np.float16)
            f.write(json.dumps({"id": f"k{i}", "inputs": {"x": x.tolist()}}) + "\n")
    return os.path.join(d, "req.jsonl")


def slow_args(req, out):
    return [grape_exe(), "batch", MLP, "-D", "D=64", "-D", "H=2048", "-D", "C=8", "--random-weights", "1",
            "--backend", "cpu", "--max-batch", "1", "--threads", "1", "--requests", req, "--output", out, "--quiet"]


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def stop_midway(args, sig, n, at_least=50):
    """Starts a run, sends `sig` once `at_least` results are written; returns (exit status, lines)."""
    out = args[args.index("--output") + 1]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while count_lines(os.path.join(out, "results.jsonl")) < at_least and p.poll() is None:
        assert time.time() < deadline, "the run wrote no results"
        time.sleep(0.005)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    lines = count_lines(os.path.join(out, "results.jsonl"))
    assert 0 < lines < n, f"the run was not stopped in the middle ({lines} of {n} results)"
    return p.returncode, err


def test_kill_9_then_rerun_gives_the_uninterrupted_results():
    d = tmpdir()
    # Enough requests that the kill lands in the middle (stop_midway checks it: 150 still to run
    # when 50 are written, against a 5 ms poll) in a Release build; few enough that the three runs
    # stay short in the sanitizer build CI uses (1500 took 72 s there, 400 took 52 s).
    n = 200
    req = slow_mlp_requests(d, n)
    rc = subprocess.run(slow_args(req, os.path.join(d, "ref")), capture_output=True).returncode
    assert rc == 0
    out = os.path.join(d, "out")
    rc, _ = stop_midway(slow_args(req, out), signal.SIGKILL, n)
    assert rc == -signal.SIGKILL
    p = subprocess.run(slow_args(req, out), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert stable(results(out)) == stable(results(os.path.join(d, "ref")))


def test_kill_9_with_npy_rows_then_rerun():
    """A run killed while it writes an npy-rows file leaves a temporary file, never a line naming a
    partial file; the rerun removes the temporary and its results equal an uninterrupted run's."""
    d = tmpdir()
    n = 200
    req = slow_mlp_requests(d, n)
    ref = os.path.join(d, "ref")
    rc = subprocess.run(slow_args(req, ref) + ["--outputs", "inline"], capture_output=True).returncode
    assert rc == 0
    out = os.path.join(d, "out")
    args = slow_args(req, out) + ["--outputs", "npy-rows"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60

    def temporaries():
        try:
            return [f for f in os.listdir(os.path.join(out, "outputs")) if ".npy.tmp." in f]
        except FileNotFoundError:
            return []
    while not temporaries() and p.poll() is None:
        assert time.time() < deadline, "the run wrote no output file"
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, "the run ended before the kill"
    assert temporaries()
    first = results_lines(out) if os.path.exists(os.path.join(out, "results.jsonl")) else []
    assert len(first) < n, len(first)
    for r in first:
        v = r["outputs"]["out0"]
        assert np.load(os.path.join(out, v["npy"])).shape[0] >= v["rows"][1], r
    p = subprocess.run(args, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    want = results(ref)
    got = results(out)
    assert set(got) == set(want)
    for k, r in got.items():
        v = r["outputs"]["out0"]
        rows = np.load(os.path.join(out, v["npy"]))[v["rows"][0]:v["rows"][1]]
        assert np.array_equal(rows, np.array(want[k]["outputs"]["out0"], np.float16)), k
    assert not [f for f in os.listdir(os.path.join(out, "outputs")) if not f.endswith(".npy")]


def test_ctrl_c_stops_cleanly_and_resumes():
    d = tmpdir()
    n = 200  # see test_kill_9_then_rerun_gives_the_uninterrupted_results
    req = slow_mlp_requests(d, n)
    out = os.path.join(d, "out")
    args = slow_args(req, out)
    args.remove("--quiet")
    rc, err = stop_midway(args, signal.SIGINT, n)
    assert rc == 1 and "interrupted (Ctrl-C)" in err and "to resume" in err, err
    with open(os.path.join(out, "results.jsonl"), "rb") as f:
        text = f.read()
    assert text.endswith(b"\n")  # only whole lines
    p = subprocess.run(slow_args(req, out), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    res = results(out)
    assert len(res) == n and all(r["status"] == "ok" for r in res.values())


def test_progress_line_on_a_terminal_only():
    d = tmpdir()
    # The line is drawn every 250 ms and once more at the end, so a short run shows it too (800
    # requests took 53 s in the sanitizer build).
    req = slow_mlp_requests(d, 60)
    rc, _, text = run_with_stderr_on_a_terminal(slow_args(req, os.path.join(d, "out"))[:-1],
                                                stdout=subprocess.DEVNULL, timeout=120)
    assert rc == 0, text[-500:]
    assert "\r\x1b[K" in text and "requests" in text and "req/s" in text, text[:500]
    assert "grape batch: 60/60 requests" in text, text[:500]  # done/total, the final draw
    assert "grape batch: 60 requests (60 ok, 0 failed)" in text, text[-500:]


def test_threads_share_the_queue():
    d = tmpdir()
    xs = mlp_rows(64)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": i, "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)])
    rc, s, err = mlp_batch(req, os.path.join(d, "one"), "--max-batch", 4, "--json")
    assert rc == 0, err
    rc, s, err = mlp_batch(req, os.path.join(d, "three"), "--max-batch", 4, "--threads", 3, "--json")
    assert rc == 0, err
    assert json.loads(s)["sessions"] == 3
    assert stable(results(os.path.join(d, "one"))) == stable(results(os.path.join(d, "three")))


def test_warmup_before_the_requests_changes_no_result():
    d = tmpdir()
    xs = mlp_rows(64)
    req = write_requests(os.path.join(d, "req.jsonl"),
                         [{"id": i, "inputs": {"x": x.tolist()}} for i, x in enumerate(xs)])
    rc, s, err = mlp_batch(req, os.path.join(d, "warm"), "--max-batch", 4, "--threads", 3, "--json")
    assert rc == 0, err
    warm = json.loads(s)
    assert warm["warmup_seconds"] is not None and 0 <= warm["warmup_seconds"] <= warm["startup_seconds"], warm
    rc, s, err = mlp_batch(req, os.path.join(d, "cold"), "--max-batch", 4, "--threads", 3, "--json", "--no-warmup")
    assert rc == 0, err
    assert json.loads(s)["warmup_seconds"] is None, s
    assert stable(results(os.path.join(d, "warm"))) == stable(results(os.path.join(d, "cold")))
    # A dim that only the requests fix (S): no warm-up, and the run is as before.
    grp = scale_file(d)
    np.save(os.path.join(d, "k.npy"), np.array(2.0, np.float32))
    req = write_requests(os.path.join(d, "req2.jsonl"),
                         [{"id": i, "inputs": {"x": [[i, 1.0]], "y": [[1.0, 2.0]]}} for i in range(3)])
    rc, s, err = batch(grp, "--entry", "main", "--requests", req, "--output", os.path.join(d, "scale"),
                       "--backend", "cpu", "--input", "k=" + os.path.join(d, "k.npy"), "--json")
    assert rc == 0, err
    assert json.loads(s)["warmup_seconds"] is None, s
    assert [results(os.path.join(d, "scale"))[i]["outputs"]["out0"] for i in range(3)] == \
        [[[2 * (i + 1), 6.0]] for i in range(3)]
    # Zeros of more than 1 GB (8 KB rows, --max-batch 1000000): no warm-up rather than 8 GB.
    req = write_requests(os.path.join(d, "req3.jsonl"), [{"id": 0, "inputs": {"x": [[0.5] * 4096]}}])
    rc, s, err = batch(os.path.join(REPO, "bench", "batch", "rows.grp"), "--entry", "main", "-D", "D=4096",
                       "--requests", req, "--output", os.path.join(d, "wide"), "--backend", "cpu",
                       "--max-batch", 1000000, "--json")
    assert rc == 0, err
    assert json.loads(s)["warmup_seconds"] is None, s


def test_usage_errors():
    d = tmpdir()
    req = write_requests(os.path.join(d, "req.jsonl"), [])
    for args, fragment in [
        ([], "batch needs --requests"),
        (["--requests", req], "batch needs --output DIR"),
        (["--requests", req, "--output", d, "--shard", "3/3"], "--shard I/N needs 0 <= I < N"),
        (["--requests", req, "--output", d, "--devices", "0,1"], "the CPU backend has one device"),
        (["--requests", req, "--output", d, "--outputs", "csv"], "--outputs must be auto, inline, npy or npy-rows"),
        (["--requests", req, "--output", d, "--max-batch", "0"], "--max-batch must be between"),
    ]:
        rc, _, err = batch(MLP, *defines(MLP_D), "--random-weights", 1, "--backend", "cpu", *args)
        assert rc == 2 and fragment in err, (args, rc, err)
    rc, _, err = batch(MLP, *defines(MLP_D), "--random-weights", 1, "--requests", os.path.join(d, "absent.jsonl"),
                       "--output", d)
    assert rc == 1 and "absent.jsonl" in err, err


# ------------------------------------------------------------------------------------------------

def main(argv):
    if len(argv) >= 2:
        os.environ["GRAPE"] = argv[1]
    filters = argv[2:]
    tests = [(k, v) for k, v in globals().items() if k.startswith("test_") and callable(v)]
    failed = []
    try:
        for name, fn in tests:
            if filters and not any(f in name for f in filters):
                continue
            t0 = time.time()
            try:
                fn()
                print(f"ok    {name} ({time.time() - t0:.1f} s)")
            except Exception:
                failed.append(name)
                print(f"FAIL  {name}")
                traceback.print_exc(file=sys.stdout)
    finally:
        if _BASE:
            shutil.rmtree(_BASE, ignore_errors=True)
    print(f"test_batch: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
