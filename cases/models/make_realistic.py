#!/usr/bin/python3
"""Make a statically quantized QDQ model of realistic layer sizes, plus the input to judge it on.

What it makes (in OUTDIR, argv[1], default: the current folder):
  realistic_qdq.onnx     QDQ format, laid out as ONNX Runtime's quantize_static(QuantFormat.QDQ)
                         writes it (same conventions as make_digits.py): input "image" float32
                         [1,3,224,224], output "tokens" float32 [1,49,768].
  realistic_input.npy    float32 [1,3,224,224], uniform [0,1) (numpy default_rng(2)).

The network: a ResNet-style convolution stack without residual adds, then the 7x7 positions as
49 tokens through a transformer-style projection and MLP:
  conv1  Conv 7x7 s2 p3   3->64   Relu   [1,64,112,112]
  pool1  MaxPool 3x3 s2 p1               [1,64,56,56]
  conv2  Conv 3x3 s1 p1  64->64   Relu   [1,64,56,56]
  conv3  Conv 3x3 s2 p1  64->128  Relu   [1,128,28,28]
  conv4  Conv 3x3 s1 p1 128->128  Relu   [1,128,28,28]
  conv5  Conv 3x3 s2 p1 128->256  Relu   [1,256,14,14]
  conv6  Conv 3x3 s2 p1 256->512  Relu   [1,512,7,7]
  Reshape [1,512,49] -> Transpose perm [0,2,1] -> [1,49,512]
  proj   MatMul 512->768  + bias         [1,49,768]
  fc1    MatMul 768->3072 + bias  Relu   [1,49,3072]
  fc2    MatMul 3072->768 + bias         [1,49,768]  -> QuantizeLinear -> DequantizeLinear "tokens"
Only ops qconform runs (models/model_plan.cpp supported_op_types, models/float_ops.cpp): QDQ around
Conv / MatMul (+ constant bias Add), Relu, MaxPool, Reshape, Transpose.

Quantization (as make_digits.py, whose helpers are copied here so the script stands alone):
uint8 asymmetric per-tensor activations from MinMax calibration, every activation between compute
nodes wrapped QuantizeLinear -> DequantizeLinear; int8 symmetric per-output-channel weights (Conv
axis 0, MatMul W[K,N] axis 1) stored quantized with a DequantizeLinear; int32 biases with scale
float32(s_x * s_w[c]) and zero point 0 through a DequantizeLinear (axis 0). MaxPool, Reshape and
Transpose are ORT's "direct 8-bit" ops: their output Q/DQ reuses their input's parameters. The
image's own parameters come from its range [0,1].

Weights: numpy default_rng(0), He-scaled (normal * sqrt(2 / fan_in)), biases normal * 0.05.
Calibration: min/max of every activation of the float network (a float32 numpy reference, im2col +
matmul) over 4 random images, uniform [0,1), default_rng(1).

How to run:
  /usr/bin/python3 cases/models/make_realistic.py [OUTDIR]
Needs numpy and onnx (1.12 is enough: opset 13, ir_version 7); no torch, no onnxruntime.

Deterministic: fixed seeds and a single-threaded BLAS (set below before numpy loads), so the
float32 calibration sums are formed in one order; two runs write byte-identical files on one host.
(A different BLAS build could round the float32 calibration sums differently, and an activation's
min/max, hence its scale, could then differ in its last bits.)

At the end it checks itself: a numpy integer reference of the first two quantized convolutions
(int64 accumulation, requantize in float64 with round half to even: the fused reading) against the
QDQ graph reading (dequantize, float32 conv, Relu, quantize), and a small numpy interpreter that
runs the written .onnx file node by node against the script's own QDQ reference.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_v] = "1"  # before numpy loads its BLAS: one thread, one summation order

import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRODUCER = "qconform cases/models/make_realistic.py"
N_CAL = 4
from ort_quantization import act_params, bias_int32, quantize_u8, rne, weight_params_per_channel  # noqa: E402

F32 = np.float32

# name, kind, (in, out), kernel, stride, pad, relu
CONVS = [
    ("conv1", 3, 64, 7, 2, 3),
    ("conv2", 64, 64, 3, 1, 1),
    ("conv3", 64, 128, 3, 2, 1),
    ("conv4", 128, 128, 3, 1, 1),
    ("conv5", 128, 256, 3, 2, 1),
    ("conv6", 256, 512, 3, 2, 1),
]
# name, K, N, relu
MATMULS = [
    ("proj", 512, 768, False),
    ("fc1", 768, 3072, True),
    ("fc2", 3072, 768, False),
]


# ----------------------------------------------------------------------------------------------
# Quantization parameters (ORT conventions; copied from make_digits.py)
# ----------------------------------------------------------------------------------------------

def dequantize(q, scale, zp):
    """ONNX DequantizeLinear of a per-tensor u8 value, in float32."""
    return ((q.astype(np.int32) - int(zp)).astype(F32) * F32(scale)).astype(F32)


# ----------------------------------------------------------------------------------------------
# Numpy building blocks: im2col convolution, max-pool
# ----------------------------------------------------------------------------------------------

def im2col(x, k, stride, pad):
    """x [N,C,H,W] -> columns [N*OH*OW, C*k*k] (C-major, then kh, kw: OIHW weights' order)."""
    n, c, h, w = x.shape
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    xp = np.zeros((n, c, h + 2 * pad, w + 2 * pad), x.dtype)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    cols = np.empty((n, oh, ow, c, k, k), x.dtype)
    for kh in range(k):
        for kw in range(k):
            win = xp[:, :, kh:kh + stride * (oh - 1) + 1:stride, kw:kw + stride * (ow - 1) + 1:stride]
            cols[:, :, :, :, kh, kw] = win.transpose(0, 2, 3, 1)
    return cols.reshape(n * oh * ow, c * k * k), (n, oh, ow)


def conv2d(x, w, stride, pad):
    """Cross-correlation of x [N,C,H,W] with w [O,C,k,k] via im2col + one matmul, in x's dtype
    (float32: BLAS sgemm; int64: exact integer accumulation)."""
    o, _, k, _ = w.shape
    cols, (n, oh, ow) = im2col(x, k, stride, pad)
    y = cols @ w.reshape(o, -1).T.astype(x.dtype)
    return np.ascontiguousarray(y.reshape(n, oh, ow, o).transpose(0, 3, 1, 2))


def maxpool(x, k=3, stride=2, pad=1):
    """ONNX MaxPool (padding never wins) on any dtype."""
    n, c, h, w = x.shape
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = np.full((n, c, h + 2 * pad, w + 2 * pad), low, x.dtype)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    out = None
    for kh in range(k):
        for kw in range(k):
            win = xp[:, :, kh:kh + stride * (oh - 1) + 1:stride, kw:kw + stride * (ow - 1) + 1:stride]
            out = win.copy() if out is None else np.maximum(out, win)
    return out


def to_tokens(x):
    """Reshape [N,512,7,7] -> [N,512,49], Transpose [0,2,1] -> [N,49,512]."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c, h * w).transpose(0, 2, 1))


# ----------------------------------------------------------------------------------------------
# Weights and the float reference
# ----------------------------------------------------------------------------------------------

def make_weights():
    rng = np.random.default_rng(0)
    W = {}
    for name, cin, cout, k, _, _ in CONVS:
        fan_in = cin * k * k
        W[name + ".w"] = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(F32)
        W[name + ".b"] = (rng.standard_normal(cout) * 0.05).astype(F32)
    for name, kdim, ndim, _ in MATMULS:
        W[name + ".w"] = (rng.standard_normal((kdim, ndim)) * np.sqrt(2.0 / kdim)).astype(F32)
        W[name + ".b"] = (rng.standard_normal(ndim) * 0.05).astype(F32)
    return W


def float_forward(W, x, taps=None):
    """The float network (float32 throughout). taps: name -> activation, for calibration."""
    t = taps if taps is not None else {}
    for name, _, _, _, stride, pad in CONVS:
        x = conv2d(x, W[name + ".w"], stride, pad) + W[name + ".b"][None, :, None, None]
        x = np.maximum(x, F32(0))
        t[name] = x
        if name == "conv1":
            x = maxpool(x)
            t["pool1"] = x
    x = to_tokens(x)
    for name, _, _, relu in MATMULS:
        x = (x @ W[name + ".w"] + W[name + ".b"]).astype(F32)
        if relu:
            x = np.maximum(x, F32(0))
        t[name] = x
    return x


def quantize_params(W, cal_images):
    """MinMax calibration over the float network, then ORT's static quantization parameters.
    P[key] = (scale, zp) for activations; weights/biases under '<layer>.wq/.ws/.wz/.bq/.bs'."""
    lo, hi = {}, {}
    for i in range(len(cal_images)):
        taps = {}
        float_forward(W, cal_images[i:i + 1], taps)
        for k, v in taps.items():
            lo[k] = min(lo.get(k, np.inf), float(v.min()))
            hi[k] = max(hi.get(k, -np.inf), float(v.max()))
    # The image's own parameters from its real range [0, 1].
    P = {"image": act_params(0.0, 1.0)}
    for name, _, _, _, _, _ in CONVS:
        P[name] = act_params(lo[name], hi[name])
    for name, _, _, _ in MATMULS:
        P[name] = act_params(lo[name], hi[name])
    # pool1 (MaxPool), Reshape and Transpose reuse their input's params (ORT direct 8-bit ops);
    # pool1's calibrated range equals conv1's (a max-pool keeps the max; its min stays 0 after Relu).
    in_key = "image"
    for name, _, _, _, _, _ in CONVS:
        wq, ws, wz = weight_params_per_channel(W[name + ".w"], axis=0)  # OIHW, per O
        bq, bs = bias_int32(W[name + ".b"], P[in_key][0], ws)
        P.update({name + ".wq": wq, name + ".ws": ws, name + ".wz": wz, name + ".bq": bq, name + ".bs": bs})
        in_key = name  # conv2's input is pool1, which carries conv1's params
    for name, _, _, _ in MATMULS:
        wq, ws, wz = weight_params_per_channel(W[name + ".w"], axis=1)  # W[K,N], per column
        bq, bs = bias_int32(W[name + ".b"], P[in_key][0], ws)
        P.update({name + ".wq": wq, name + ".ws": ws, name + ".wz": wz, name + ".bq": bq, name + ".bs": bs})
        in_key = name
    return P, lo, hi


def dq_weights(P, name):
    """Dequantized weights and bias in float32 (DequantizeLinear of the stored constants)."""
    wq, ws = P[name + ".wq"], P[name + ".ws"]
    shape = [1] * wq.ndim
    shape[0 if wq.ndim == 4 else 1] = -1
    w = (wq.astype(F32) * ws.reshape(shape)).astype(F32)
    b = (P[name + ".bq"].astype(F32) * P[name + ".bs"]).astype(F32)
    return w, b


def qdq_forward(P, image, upto=None):
    """The QDQ graph reading in float32: DQ -> float op -> Q at every layer. Returns a dict of the
    u8 values of each quantized activation and the float 'tokens' output."""
    out = {}
    q = quantize_u8(image, *P["image"])
    key = "image"
    out["image"] = q
    for name, _, _, _, stride, pad in CONVS:
        w, b = dq_weights(P, name)
        y = conv2d(dequantize(q, *P[key]), w, stride, pad) + b[None, :, None, None]
        q = quantize_u8(np.maximum(y, F32(0)), *P[name])
        out[name] = q
        key = name
        if name == "conv1":
            q = quantize_u8(maxpool(dequantize(q, *P[key])), *P[key])
            out["pool1"] = q
        if upto == name:
            return out
    q = quantize_u8(to_tokens(dequantize(q, *P[key])), *P[key])  # Reshape, Transpose: same params
    for name, _, _, relu in MATMULS:
        w, b = dq_weights(P, name)
        y = (dequantize(q, *P[key]) @ w + b).astype(F32)
        if relu:
            y = np.maximum(y, F32(0))
        q = quantize_u8(y, *P[name])
        out[name] = q
        key = name
    out["tokens"] = dequantize(q, *P[key])
    return out


def int_conv(P, q_in, in_key, name, stride, pad):
    """The fused (integer) reading of one quantized Conv + Relu: int64 accumulation of
    (x - zp_x) * w_q, + int32 bias, requantize in float64 (multiplier s_x * s_w / s_y, round half
    to even), + zp_y, clamped to [zp_y, 255] (the Relu) ."""
    sx, zx = P[in_key]
    sy, zy = P[name]
    acc = conv2d(q_in.astype(np.int64) - int(zx), P[name + ".wq"].astype(np.int64), stride, pad)
    acc = acc + P[name + ".bq"].astype(np.int64)[None, :, None, None]
    mult = (np.float64(sx) * P[name + ".ws"].astype(np.float64) / np.float64(sy))[None, :, None, None]
    q = rne(acc.astype(np.float64) * mult) + int(zy)
    return np.clip(q, int(zy), 255).astype(np.uint8)


def qdq_conv(P, q_in, in_key, name, stride, pad):
    """The graph reading of the same layer: dequantize, float32 conv + bias, Relu, quantize."""
    w, b = dq_weights(P, name)
    y = conv2d(dequantize(q_in, *P[in_key]), w, stride, pad) + b[None, :, None, None]
    return quantize_u8(np.maximum(y, F32(0)), *P[name])


# ----------------------------------------------------------------------------------------------
# ONNX graph (copied from make_digits.py, with static shapes)
# ----------------------------------------------------------------------------------------------

class Graph:
    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, output, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def model(self, graph_name):
        g = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 224, 224])],
            [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, 49, 768])],
            initializer=self.inits)
        m = helper.make_model(g, producer_name=PRODUCER, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7  # onnx 1.12's make_model would write 8; 7 is enough for opset 13
        return m


def build_qdq(P):
    """QDQ layout as qdq_quantizer.py writes it, with make_digits.py's departures (Relu kept
    between the compute node and its Q; MatMul's bias an int32 DequantizeLinear feeding Add)."""
    g = Graph()
    s, z = P["image"]
    x = g.node("QuantizeLinear", ["image", g.init("image_scale", s), g.init("image_zero_point", z)],
               "image_QuantizeLinear_Output", "image_QuantizeLinear")
    x = g.node("DequantizeLinear", [x, "image_scale", "image_zero_point"],
               "image_DequantizeLinear_Output", "image_DequantizeLinear")

    def qdq(t, key, tag, shared=None):
        s, z = P[key]
        if shared is None:
            sn, zn = g.init(tag + "_scale", s), g.init(tag + "_zero_point", z)
        else:
            sn, zn = shared + "_scale", shared + "_zero_point"
        t = g.node("QuantizeLinear", [t, sn, zn], tag + "_QuantizeLinear_Output", tag + "_QuantizeLinear")
        return g.node("DequantizeLinear", [t, sn, zn], tag + "_DequantizeLinear_Output",
                      tag + "_DequantizeLinear")

    def dq_const(tag, q, scale, zp, axis):
        ins = [g.init(tag + "_quantized", q), g.init(tag + "_scale", scale),
               g.init(tag + "_zero_point", zp)]
        return g.node("DequantizeLinear", ins, tag + "_DequantizeLinear_Output",
                      tag + "_DequantizeLinear", axis=axis)

    for name, _, _, k, stride, pad in CONVS:
        w = dq_const(name + "_weight", P[name + ".wq"], P[name + ".ws"], P[name + ".wz"], 0)
        b = dq_const(name + "_bias", P[name + ".bq"], P[name + ".bs"],
                     np.zeros(len(P[name + ".bq"]), np.int32), 0)
        y = g.node("Conv", [x, w, b], name + "_output", name + "_Conv",
                   kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])
        y = g.node("Relu", [y], name + "_relu_output", name + "_Relu")
        x = qdq(y, name, name + "_relu_output")
        if name == "conv1":
            y = g.node("MaxPool", [x], "pool1_output", "pool1_MaxPool",
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
            # MaxPool is a direct 8-bit op for ORT: its output Q/DQ reuses its input's params.
            x = qdq(y, "conv1", "pool1_output", shared="conv1_relu_output")

    y = g.node("Reshape", [x, g.init("tokens_shape", np.array([1, 512, 49], np.int64))],
               "reshape_output", "tokens_Reshape")
    x = qdq(y, "conv6", "reshape_output", shared="conv6_relu_output")
    y = g.node("Transpose", [x], "transpose_output", "tokens_Transpose", perm=[0, 2, 1])
    x = qdq(y, "conv6", "transpose_output", shared="conv6_relu_output")

    for name, _, ndim, relu in MATMULS:
        w = dq_const(name + "_weight", P[name + ".wq"], P[name + ".ws"], P[name + ".wz"], 1)
        y = g.node("MatMul", [x, w], name + "_matmul_output", name + "_MatMul")
        b = dq_const(name + "_bias", P[name + ".bq"], P[name + ".bs"], np.zeros(ndim, np.int32), 0)
        y = g.node("Add", [y, b], name + "_output", name + "_Add")
        if relu:
            y = g.node("Relu", [y], name + "_relu_output", name + "_Relu")
        if name != MATMULS[-1][0]:
            x = qdq(y, name, name + ("_relu_output" if relu else "_output"))
    s, z = P[MATMULS[-1][0]]
    sn, zn = g.init("tokens_scale", s), g.init("tokens_zero_point", z)
    y = g.node("QuantizeLinear", [y, sn, zn], "tokens_QuantizeLinear_Output", "tokens_QuantizeLinear")
    g.node("DequantizeLinear", [y, sn, zn], "tokens", "tokens_DequantizeLinear")
    return g.model("realistic_qdq")


def run_onnx(model, image):
    """Minimal interpreter for exactly the ops this file uses, reading the saved ModelProto (so the
    wiring, initializers and attributes are what is checked); QDQ nodes in their float meaning."""
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env["image"] = image

    def bshape(v, ndim, axis):
        if np.ndim(v) == 0:
            return v
        shp = [1] * ndim
        shp[axis] = -1
        return v.reshape(shp)

    for n in model.graph.node:
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        i = [env[k] for k in n.input]
        op = n.op_type
        if op == "QuantizeLinear":
            y = quantize_u8(i[0], i[1], i[2])
        elif op == "DequantizeLinear":
            ax = a.get("axis", 1)
            y = ((i[0].astype(np.int64) - bshape(i[2].astype(np.int64), i[0].ndim, ax)).astype(F32)
                 * bshape(i[1], i[0].ndim, ax)).astype(F32)
        elif op == "Conv":
            assert a["kernel_shape"][0] == a["kernel_shape"][1] == i[1].shape[2]
            y = (conv2d(i[0], i[1], a["strides"][0], a["pads"][0]) + i[2][None, :, None, None]).astype(F32)
        elif op == "Relu":
            y = np.maximum(i[0], F32(0))
        elif op == "MaxPool":
            y = maxpool(i[0], a["kernel_shape"][0], a["strides"][0], a["pads"][0])
        elif op == "Reshape":
            y = i[0].reshape(tuple(i[1]))
        elif op == "Transpose":
            y = np.ascontiguousarray(i[0].transpose(a["perm"]))
        elif op == "MatMul":
            y = (i[0] @ i[1]).astype(F32)
        elif op == "Add":
            y = (i[0] + i[1]).astype(F32)
        else:
            raise ValueError("unexpected op " + op)
        env[n.output[0]] = y
    return env["tokens"]


# ----------------------------------------------------------------------------------------------

def main():
    t0 = time.time()
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)

    W = make_weights()
    cal = np.random.default_rng(1).random((N_CAL, 3, 224, 224), dtype=F32)
    image = np.random.default_rng(2).random((1, 3, 224, 224), dtype=F32)

    P, lo, hi = quantize_params(W, cal)
    print("calibration: %d images, float32 reference, %.1f s" % (N_CAL, time.time() - t0))

    taps = {}
    f_tokens = float_forward(W, image, taps)
    print("%-6s %-28s %-18s %-22s %-13s %s" % ("layer", "op", "output shape", "calibrated range",
                                                  "scale", "zp"))
    print("%-6s %-28s %-18s %-22s %-13.6g %d" % ("image", "input", str(list(image.shape)), "[0, 1]",
                                                    P["image"][0], P["image"][1]))
    ops = {n: "Conv %dx%d s%d p%d %d->%d Relu" % (k, k, s, p, ci, co) for n, ci, co, k, s, p in CONVS}
    ops["pool1"] = "MaxPool 3x3 s2 p1"
    ops.update({n: "MatMul %d->%d +bias%s" % (kd, nd, " Relu" if r else "") for n, kd, nd, r in MATMULS})
    for key in ["conv1", "pool1"] + [c[0] for c in CONVS[1:]] + ["tokens"] + [m[0] for m in MATMULS]:
        if key == "tokens":
            print("%-6s %-28s %s" % ("tokens", "Reshape [1,512,49]", [1, 512, 49]))
            print("%-6s %-28s %s" % ("", "Transpose [0,2,1]", [1, 49, 512]))
            continue
        pk = "conv1" if key == "pool1" else key
        print("%-6s %-28s %-18s %-22s %-13.6g %d" % (
            key, ops[key], str(list(taps[key].shape)), "[%.4g, %.4g]" % (lo[key], hi[key]),
            P[pk][0], P[pk][1]))
    print("output \"tokens\" %s (after a final QuantizeLinear -> DequantizeLinear)" % list(f_tokens.shape))

    model = build_qdq(P)
    onnx.checker.check_model(model)
    files = {"realistic_qdq.onnx": None, "realistic_input.npy": None}
    with open(os.path.join(outdir, "realistic_qdq.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    np.save(os.path.join(outdir, "realistic_input.npy"), np.ascontiguousarray(image, F32))
    ops_used = sorted({n.op_type for n in model.graph.node})
    print("nodes: %d (%s), initializers: %d, onnx.checker: ok"
          % (len(model.graph.node), ", ".join(ops_used), len(model.graph.initializer)))

    # ---- Verification ------------------------------------------------------------------------
    # 1. The first two convolutions: integer (fused) reading vs QDQ graph reading.
    q_img = quantize_u8(image, *P["image"])
    i1 = int_conv(P, q_img, "image", "conv1", 2, 3)
    g1 = qdq_conv(P, q_img, "image", "conv1", 2, 3)
    p1 = maxpool(i1)  # u8 max-pool: the same as DQ -> MaxPool -> Q with shared params
    i2 = int_conv(P, p1, "conv1", "conv2", 1, 1)
    g2 = qdq_conv(P, p1, "conv1", "conv2", 1, 1)
    ref = qdq_forward(P, image)
    print("integer reference vs QDQ float reference (u8 outputs, same u8 inputs):")
    for name, a, b in (("conv1", i1, g1), ("conv2", i2, g2)):
        d = np.abs(a.astype(np.int32) - b.astype(np.int32))
        print("  %s: %d of %d values differ (max %d LSB)" % (name, (d != 0).sum(), d.size, d.max()))
    d = np.abs(i2.astype(np.int32) - ref["conv2"].astype(np.int32))
    print("  conv2 through the chain (integer conv1+pool1+conv2 vs QDQ reference from the image): "
          "%d of %d differ (max %d LSB)" % ((d != 0).sum(), d.size, d.max()))
    assert np.array_equal(maxpool(ref["conv1"]), ref["pool1"])

    # 2. The written file, interpreted node by node, against the script's QDQ reference.
    m = onnx.load(os.path.join(outdir, "realistic_qdq.onnx"))
    out = run_onnx(m, image)
    assert out.shape == (1, 49, 768), out.shape
    st = P[MATMULS[-1][0]][0]
    dl = np.rint(np.abs(out - ref["tokens"]) / st).astype(np.int64)
    print("realistic_qdq.onnx (interp) vs QDQ reference: %d of %d tokens differ, max %d LSB"
          % ((dl != 0).sum(), dl.size, dl.max()))
    err = np.abs(out - f_tokens)
    print("QDQ output vs float network: max |diff| %.4g, mean |diff| %.4g, float output std %.4g"
          % (err.max(), err.mean(), f_tokens.std()))

    for name in files:
        print("%-20s %9d bytes" % (name, os.path.getsize(os.path.join(outdir, name))))
    print("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
