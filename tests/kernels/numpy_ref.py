#!/usr/bin/env python3
"""Independent NumPy references for the CPU kernel tests (numpy_ref_test.cpp).

Usage: numpy_ref.py DIR N. For each case i < N, reads DIR/case_i.txt (the op and its attributes,
one "key value..." per line) and the inputs DIR/case_i_in_J.bin, and writes the expected results
DIR/case_i_out_J.bin. Tensor files: one ASCII header line "GRPT <dtype> <rank> <dims...>", then
the raw little-endian C-order elements (bf16 as its 16-bit pattern, bool as one byte).

Float math is done in float64 from the exact inputs and rounded once to the result dtype, so the
reference does not share the kernels' f32 evaluation order.
"""
import math
import os
import sys

import numpy as np

STORE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i32": np.int32, "i64": np.int64,
         "bool": np.uint8}
FLOATS = ("f32", "f16", "bf16")
INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def read_tensor(path):
    with open(path, "rb") as f:
        header = f.readline().decode().split()
        assert header[0] == "GRPT", path
        dt, rank = header[1], int(header[2])
        shape = tuple(int(d) for d in header[3:3 + rank])
        raw = np.frombuffer(f.read(), dtype=STORE[dt]).reshape(shape)
    if dt == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64), dt
    if dt in FLOATS:
        return raw.astype(np.float64), dt
    if dt == "bool":
        return raw.astype(bool), dt
    return raw.astype(np.int64), dt


def to_bf16_bits(x):
    f = np.asarray(x, dtype=np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), ((b >> 16) | 0x40).astype(np.uint16), r)


def write_tensor(path, x, dt):
    x = np.asarray(x)
    if dt == "bf16":
        data = to_bf16_bits(x.astype(np.float64))
    elif dt == "bool":
        data = x.astype(bool).astype(np.uint8)
    elif dt in INT_RANGE:
        data = x.astype(np.int64).astype(STORE[dt])  # wraps modulo 2^32 for i32
    else:
        data = x.astype(STORE[dt])
    with open(path, "wb") as f:
        f.write(("GRPT %s %d %s\n" % (dt, x.ndim, " ".join(str(d) for d in x.shape))).encode())
        f.write(np.ascontiguousarray(data).tobytes())


def parse_case(path):
    attrs = {"slices": []}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            key, vals = parts[0], parts[1:]
            if key == "slice":
                attrs["slices"].append(tuple(int(v) for v in vals))
            elif key in ("axes", "shape"):
                attrs[key] = tuple(int(v) for v in vals)
            elif key in ("op", "dtype"):
                attrs[key] = vals[0]
            elif key in ("value", "eps"):
                attrs[key] = float(vals[0])
            else:
                attrs[key] = int(vals[0])
    return attrs


def wrap_int(x, dt):
    """Wraps Python ints / int64 arrays into dt's range (two's complement)."""
    lo, hi = INT_RANGE[dt]
    span = hi - lo + 1
    return np.array([((int(v) - lo) % span) + lo for v in np.ravel(x)], dtype=np.int64).reshape(np.shape(x))


def int_pow(a, b, dt):
    a, b = np.broadcast_arrays(a, b)
    out = []
    for x, e in zip(np.ravel(a).tolist(), np.ravel(b).tolist()):
        if e < 0:
            out.append(1 if x == 1 else (-1 if e % 2 else 1) if x == -1 else 0)
        else:
            out.append(x ** e)
    return wrap_int(np.array(out, dtype=object).reshape(a.shape), dt)


def py_mod(a, b):
    return np.where(b == 0, np.nan, np.mod(a, np.where(b == 0, 1, b)))


def clamp_idx(idx, dim):
    idx = np.where(idx < 0, idx + dim, idx)
    return np.clip(idx, 0, dim - 1)


def cast(x, src, dst):
    if dst == "bool":
        return x != 0
    if src in FLOATS and dst in INT_RANGE:
        lo, hi = INT_RANGE[dst]
        t = np.trunc(np.where(np.isnan(x), 0, x))
        out = np.array([lo if v <= lo else hi if v >= hi else int(v) for v in np.ravel(t)], dtype=object)
        return out.reshape(x.shape).astype(np.int64)
    if src in INT_RANGE and dst in INT_RANGE:
        return wrap_int(x, dst)
    return x.astype(np.float64) if dst in FLOATS else x.astype(np.int64)


def topk(x, k, axis):
    xm = np.moveaxis(x, axis, -1)
    vals = np.zeros(xm.shape[:-1] + (k,), dtype=xm.dtype)
    inds = np.zeros(xm.shape[:-1] + (k,), dtype=np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        row = xm[pos].tolist()
        key = lambda j: (0 if isinstance(row[j], float) and math.isnan(row[j]) else 1,
                         -row[j] if not (isinstance(row[j], float) and math.isnan(row[j])) else 0, j)
        order = sorted(range(len(row)), key=key)[:k]
        vals[pos] = [row[j] for j in order]
        inds[pos] = order
    return np.moveaxis(vals, -1, axis), np.moveaxis(inds, -1, axis)


def reference(a, ins, dts):
    op = a["op"]
    x, dt = (ins[0], dts[0]) if ins else (None, None)
    unary = {
        "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
        "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "relu": lambda v: np.maximum(v, 0), "silu": lambda v: v / (1 + np.exp(-v)), "sin": np.sin,
        "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign,
    }
    if op in unary:
        r = unary[op](x)
        return [(wrap_int(r, dt) if dt in INT_RANGE else r, dt)]
    if op == "gelu":
        if a.get("approx_tanh"):
            r = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        else:
            r = 0.5 * x * (1 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2)))
        return [(r, dt)]
    if op == "isnan":
        return [(np.isnan(x) if dt in FLOATS else np.zeros(x.shape, bool), "bool")]
    if op == "not":
        return [(~x, "bool")]
    if op == "cast":
        return [(cast(x, dt, a["dtype"]), a["dtype"])]
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
              "minimum": np.minimum}
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal, "and": np.logical_and, "or": np.logical_or}
    if op in compare:
        return [(compare[op](ins[0], ins[1]), "bool")]
    if op in binary or op in ("div", "mod", "pow"):
        y = ins[1]
        if dt in INT_RANGE:
            if op == "div":
                r = np.where(y == 0, 0, np.floor_divide(x, np.where(y == 0, 1, y)))
            elif op == "mod":
                r = np.where(y == 0, 0, np.mod(x, np.where(y == 0, 1, y)))
            elif op == "pow":
                r = int_pow(x, y, dt)
            else:
                r = binary[op](x, y)
            return [(wrap_int(r, dt), dt)]
        if op == "div":
            r = x / y
        elif op == "mod":
            r = py_mod(x, y)
        elif op == "pow":
            r = np.power(x, y)
        else:
            r = binary[op](x, y)
        return [(r, dt)]
    if op == "where":
        return [(np.where(ins[0], ins[1], ins[2]), dts[1])]
    if op in ("sum", "mean", "max", "min", "prod", "all", "any"):
        axes, keep = a.get("axes", ()), bool(a.get("keepdims"))
        fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
              "all": np.all, "any": np.any}[op]
        r = fn(x, axis=axes, keepdims=keep)
        return [(wrap_int(r, dt) if dt in INT_RANGE else r, dt)]
    if op in ("argmax", "argmin"):
        fn = np.argmax if op == "argmax" else np.argmin
        return [(fn(x, axis=a["axis"], keepdims=bool(a.get("keepdims"))), "i32")]
    if op in ("softmax", "log_softmax"):
        ax = a["axis"]
        z = x - np.max(x, axis=ax, keepdims=True)
        lse = np.log(np.sum(np.exp(z), axis=ax, keepdims=True))
        return [(np.exp(z - lse) if op == "softmax" else z - lse, dt)]
    if op == "layer_norm":
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return [((x - mu) / np.sqrt(var + a["eps"]) * ins[1] + ins[2], dt)]
    if op == "rms_norm":
        return [(x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + a["eps"]) * ins[1], dt)]
    if op == "matmul":
        r = np.matmul(x, ins[1])
        return [(wrap_int(r, dt) if dt in INT_RANGE else r, dt)]
    if op == "linear":
        r = x @ ins[1].T + (ins[2] if len(ins) > 2 else 0)
        return [(wrap_int(r, dt) if dt in INT_RANGE else r, dt)]
    if op == "permute":
        return [(np.transpose(x, a["axes"]), dt)]
    if op == "reshape":
        return [(x.reshape(a["shape"]), dt)]
    if op == "expand":
        return [(np.broadcast_to(x, a["shape"]), dt)]
    if op == "concat":
        return [(np.concatenate(ins, axis=a["axis"]), dt)]
    if op in ("slice", "slice_update"):
        index = tuple(s[0] if s[3] else slice(s[0], s[0] + s[1] * s[2], s[2]) if s[1] else slice(0, 0)
                      for s in a["slices"])
        if op == "slice":
            return [(x[index], dt)]
        out = x.copy()
        out[index] = ins[1]
        return [(out, dt)]
    if op == "take":
        return [(np.take(x, clamp_idx(ins[1], x.shape[a["axis"]]), axis=a["axis"]), dt)]
    if op == "take_along_axis":
        ax = a["axis"]
        idx = clamp_idx(ins[1], x.shape[ax])
        xs1, is1 = list(x.shape), list(idx.shape)
        xs1[ax] = is1[ax] = 1
        shape = list(np.broadcast_shapes(tuple(xs1), tuple(is1)))
        xs, ids = list(shape), list(shape)
        xs[ax], ids[ax] = x.shape[ax], idx.shape[ax]
        return [(np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, ids), axis=ax), dt)]
    if op == "topk":
        v, i = topk(x, a["k"], a["axis"])
        return [(v, dt), (i, "i32")]
    if op == "one_hot":
        k = a["k"]
        r = (x[..., None] == np.arange(k)) & (x[..., None] >= 0)
        return [(r.astype(np.float64) if a["dtype"] in FLOATS else r.astype(np.int64), a["dtype"])]
    if op == "cumsum":
        r = np.cumsum(x, axis=a["axis"])
        return [(wrap_int(r, dt) if dt in INT_RANGE else r, dt)]
    if op == "causal_mask":
        s, t = a["shape"]
        off = int(ins[0])
        return [(np.arange(t)[None, :] <= np.arange(s)[:, None] + off, "bool")]
    if op in ("constant", "full", "arange"):
        shape = () if op == "constant" else a["shape"]
        fill = a["value"] if a["dtype"] in FLOATS else a["ivalue"]
        r = np.arange(shape[0]) if op == "arange" else np.full(shape, fill)
        return [(r, a["dtype"])]
    raise SystemExit("numpy_ref.py: no reference for op " + op)


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    np.seterr(all="ignore")
    for i in range(n):
        a = parse_case(os.path.join(d, "case_%d.txt" % i))
        ins, dts = [], []
        for j in range(a.get("ninputs", 0)):
            t, dt = read_tensor(os.path.join(d, "case_%d_in_%d.bin" % (i, j)))
            ins.append(t)
            dts.append(dt)
        for j, (r, dt) in enumerate(reference(a, ins, dts)):
            write_tensor(os.path.join(d, "case_%d_out_%d.bin" % (i, j)), r, dt)


if __name__ == "__main__":
    main()
