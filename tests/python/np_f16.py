"""f16 building blocks for the numpy references: every op computes in float32 from float16
inputs and rounds its result to float16, the storage contract of Grape's f16 tensors."""
import numpy as np

F16, F32 = np.float16, np.float32


def rnd(a):
    return np.asarray(a, dtype=F32).astype(F16)


def f32(a):
    return np.asarray(a).astype(F32)


def add(a, b):
    return rnd(f32(a) + f32(b))


def mul(a, b):
    return rnd(f32(a) * f32(b))


def matmul(a, b):
    return rnd(f32(a) @ f32(b))


def linear(x, w, b=None):
    """torch.nn.functional.linear: w is [out, in]; one op, one rounding."""
    y = f32(x) @ f32(w).T
    if b is not None:
        y = y + f32(b)
    return rnd(y)


def layer_norm(x, g, b, eps):
    x = f32(x)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return rnd((x - mu) / np.sqrt(var + eps) * f32(g) + f32(b))


def softmax(x):
    x = f32(x)
    e = np.exp(x - x.max(-1, keepdims=True))
    return rnd(e / e.sum(-1, keepdims=True))


def log_softmax32(x):
    x = f32(x)
    m = x.max(-1, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))).astype(F32)


def gelu_tanh(x):
    x = f32(x)
    return rnd(0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3))))


def gelu_exact(x):
    from math import erf, sqrt
    x = f32(x)
    verf = np.vectorize(erf, otypes=[np.float64])
    return rnd(0.5 * x * (1.0 + verf(x / sqrt(2.0))))


def split_heads(x, nh):
    b, s, e = x.shape
    return x.reshape(b, s, nh, e // nh).transpose(0, 2, 1, 3)


def merge_heads(x):
    b, nh, s, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, nh * hd)


def attention(q, k, v, allowed):
    """q [B,NH,S,HD], k/v [B,NH,K,HD], allowed broadcastable to [B,NH,S,K] (True = may attend)."""
    hd = q.shape[-1]
    att = mul(matmul(q, k.transpose(0, 1, 3, 2)), rnd(1.0 / np.sqrt(hd)))
    att = np.where(allowed, att, F16(-10000.0))
    return matmul(softmax(att), v)
