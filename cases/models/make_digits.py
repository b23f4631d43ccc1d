#!/usr/bin/python3
"""Make two small statically quantized ONNX models of a digits CNN, plus test data.

What it makes (in OUTDIR, default: the folder this script lives in):
  digits_cnn_qdq.onnx      QDQ format (QuantizeLinear/DequantizeLinear around float ops),
                           laid out the way ONNX Runtime's quantize_static(QuantFormat.QDQ) writes it.
  digits_cnn_qop.onnx      QOperator format (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd).
  digits_test_images.npy   float32 [360,1,8,8], held-out images in [0,1], as the models take them.
  digits_test_labels.npy   int32 [360], their labels (qconform model --labels).

From which data: scikit-learn's bundled "digits" set (sklearn.datasets.load_digits: 1,797 8x8
images, pixel values 0..16), shipped offline by Debian's python3-sklearn. No network access.
The last 360 images in the dataset's own order are the held-out test set; the first 1,437 train
the float CNN and calibrate the activation ranges.

How to run:
  /usr/bin/python3 cases/models/make_digits.py [OUTDIR]
Needs torch, numpy, onnx (1.12 is enough: opset 13, ir_version 7) and sklearn; no onnxruntime.

Deterministic: torch.manual_seed(0), numpy seed 0, one torch thread, deterministic torch
algorithms, a seeded generator for batch order. Two runs write byte-identical files.

The quantization is written here by hand, following ONNX Runtime's static quantizer
(onnxruntime/python/tools/quantization/: quant_utils.py compute_scale_zp and quantize_nparray,
onnx_quantizer.py quantize_bias_static, qdq_quantizer.py, operators/conv.py, operators/matmul.py,
operators/binary_op.py); where it departs from what quantize_static would write, a comment says so.
At the end the script checks itself twice: an integer numpy reference of the quantized network, and
a small numpy interpreter that executes the two written .onnx files node by node.
"""

import os
import sys

import numpy as np
import onnx
import sklearn.datasets
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

PRODUCER = "qconform cases/models/make_digits.py"
N_TEST = 360
EPOCHS = 40
BATCH = 16
LR = 5e-3

from ort_quantization import act_params, bias_int32, quantize_u8, rne, weight_params_per_channel  # noqa: E402

F32 = np.float32


# ----------------------------------------------------------------------------------------------
# Data and float model
# ----------------------------------------------------------------------------------------------

def load_data():
    d = sklearn.datasets.load_digits()
    x = (d.data.astype(np.float64) / 16.0).astype(F32).reshape(-1, 1, 8, 8)  # x/16 -> [0,1]
    y = d.target.astype(np.int64)
    # Fixed split in the dataset's own order: no shuffling, so it cannot depend on any RNG.
    return x[:-N_TEST], y[:-N_TEST], x[-N_TEST:], y[-N_TEST:]


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x, taps=None):
        r1 = F.relu(self.conv1(x))          # [N,8,8,8]
        p1 = F.max_pool2d(r1, 2)            # [N,8,4,4]
        r2 = F.relu(self.conv2(p1))         # [N,16,4,4]
        p2 = F.max_pool2d(r2, 2)            # [N,16,2,2]
        flat = p2.reshape(-1, 64)           # C,H,W order, same as ONNX Reshape on NCHW
        mm = flat @ self.fc.weight.t()      # the MatMul alone (ONNX layout W[K=64,N=10])
        logits = mm + self.fc.bias
        if taps is not None:
            taps.update(relu1=r1, pool1=p1, relu2=r2, pool2=p2, fc_matmul=mm, logits=logits)
        return logits


def train(xtr, ytr):
    model = DigitsCNN()  # default init draws from torch's global RNG, seeded in main()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(0)  # batch order: its own seeded generator
    X, Y = torch.from_numpy(xtr), torch.from_numpy(ytr)
    for _ in range(EPOCHS):
        perm = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            F.cross_entropy(model(X[idx]), Y[idx]).backward()
            opt.step()
    model.eval()
    return model


# ----------------------------------------------------------------------------------------------
# Quantization parameters (ORT conventions)
# ----------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------------------------
# ONNX graph building helpers
# ----------------------------------------------------------------------------------------------

class Graph:
    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, output, name, domain=None, **attrs):
        kw = dict(attrs)
        if domain is not None:
            kw["domain"] = domain
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **kw))
        return output

    def model(self, graph_name, opsets):
        g = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 8, 8])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
            initializer=self.inits)
        m = helper.make_model(g, producer_name=PRODUCER,
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
        m.ir_version = 7  # onnx 1.12's make_model would write 8; 7 is enough for opset 13
        return m


def build_qdq(P):
    """QDQ layout as qdq_quantizer.py writes it: each quantized activation gets a
    QuantizeLinear -> DequantizeLinear pair; weights are stored quantized (int8) with only a
    DequantizeLinear; biases are stored as int32 with a DequantizeLinear (scale s_x*s_w).
    Departures from what quantize_static (default options) would write for the float graph
    Conv/Relu/MaxPool/Reshape/MatMul/Add, kept on purpose because they were asked for:
      * Relu is kept between Conv and its Q/DQ (newer ORT drops it as a "removable activation"
        and quantizes the Conv output with the Relu's range; the values are the same);
      * MatMul feeds Add directly in float and the bias is an int32 DequantizeLinear (ORT does
        this for a Gemm; for MatMul+Add it would put Q/DQ on the MatMul output and quantize the
        Add's B like another tensor)."""
    g = Graph()
    s, z = P["image"]
    x = g.node("QuantizeLinear", ["image", g.init("image_scale", s), g.init("image_zero_point", z)],
               "image_QuantizeLinear_Output", "image_QuantizeLinear")
    x = g.node("DequantizeLinear", [x, "image_scale", "image_zero_point"],
               "image_DequantizeLinear_Output", "image_DequantizeLinear")

    def qdq(t, key, tag):
        s, z = P[key]
        sn, zn = g.init(tag + "_scale", s), g.init(tag + "_zero_point", z)
        t = g.node("QuantizeLinear", [t, sn, zn], tag + "_QuantizeLinear_Output", tag + "_QuantizeLinear")
        return g.node("DequantizeLinear", [t, sn, zn], tag + "_DequantizeLinear_Output",
                      tag + "_DequantizeLinear")

    def dq_const(tag, q, scale, zp, axis):
        ins = [g.init(tag + "_quantized", q), g.init(tag + "_scale", scale),
               g.init(tag + "_zero_point", zp)]
        return g.node("DequantizeLinear", ins, tag + "_DequantizeLinear_Output",
                      tag + "_DequantizeLinear", axis=axis)

    for i, (inkey, conv) in enumerate([("image", "conv1"), ("pool1", "conv2")], start=1):
        w = dq_const(conv + "_weight", P[conv + ".wq"], P[conv + ".ws"], P[conv + ".wz"], 0)
        b = dq_const(conv + "_bias", P[conv + ".bq"], P[conv + ".bs"],
                     np.zeros(len(P[conv + ".bq"]), np.int32), 0)
        y = g.node("Conv", [x, w, b], conv + "_output", conv + "_Conv",
                   kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        y = g.node("Relu", [y], "relu%d_output" % i, "relu%d_Relu" % i)
        y = qdq(y, "relu%d" % i, "relu%d_output" % i)
        y = g.node("MaxPool", [y], "pool%d_output" % i, "pool%d_MaxPool" % i,
                   kernel_shape=[2, 2], strides=[2, 2])
        # MaxPool is a "direct 8-bit" op for ORT: its output Q/DQ reuses its input's params.
        x = qdq(y, "relu%d" % i, "pool%d_output" % i)

    y = g.node("Reshape", [x, g.init("flatten_shape", np.array([-1, 64], np.int64))],
               "flatten_output", "flatten_Reshape")
    x = qdq(y, "relu2", "flatten_output")  # Reshape: direct 8-bit too, same params as pool2
    w = dq_const("fc_weight", P["fc.wq"], P["fc.ws"], P["fc.wz"], 1)  # per column of W[64,10]
    y = g.node("MatMul", [x, w], "fc_matmul_output", "fc_MatMul")
    b = dq_const("fc_bias", P["fc.bq"], P["fc.bs"], np.zeros(10, np.int32), 0)
    y = g.node("Add", [y, b], "logits_QuantizeLinear_Input", "fc_Add")
    s, z = P["logits"]
    sn, zn = g.init("logits_scale", s), g.init("logits_zero_point", z)
    y = g.node("QuantizeLinear", [y, sn, zn], "logits_QuantizeLinear_Output", "logits_QuantizeLinear")
    g.node("DequantizeLinear", [y, sn, zn], "logits", "logits_DequantizeLinear")
    return g.model("digits_cnn_qdq", [("", 13)])


def build_qop(P):
    """QOperator layout as onnx_quantizer.py writes it (operators/conv.py QLinearConv,
    operators/matmul.py QLinearMatMul, operators/binary_op.py QLinearAdd): the Relu after each
    Conv is folded away by giving QLinearConv the Relu output's range (zero point 0, so the
    uint8 saturation at 0 is the Relu); MaxPool and Reshape run directly on uint8."""
    g = Graph()
    s, z = P["image"]
    x = g.node("QuantizeLinear", ["image", g.init("image_scale", s), g.init("image_zero_point", z)],
               "image_quantized", "image_QuantizeLinear")
    xs, xz = "image_scale", "image_zero_point"
    for i, conv in enumerate(["conv1", "conv2"], start=1):
        s, z = P["relu%d" % i]
        ys, yz = g.init("relu%d_output_scale" % i, s), g.init("relu%d_output_zero_point" % i, z)
        ins = [x, xs, xz,
               g.init(conv + "_weight_quantized", P[conv + ".wq"]),
               g.init(conv + "_weight_scale", P[conv + ".ws"]),
               g.init(conv + "_weight_zero_point", P[conv + ".wz"]),
               ys, yz,
               g.init(conv + "_bias_quantized", P[conv + ".bq"])]
        y = g.node("QLinearConv", ins, "relu%d_output_quantized" % i, conv + "_QLinearConv",
                   kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        x = g.node("MaxPool", [y], "pool%d_output_quantized" % i, "pool%d_MaxPool" % i,
                   kernel_shape=[2, 2], strides=[2, 2])
        xs, xz = ys, yz  # pool output keeps its input's params
    x = g.node("Reshape", [x, g.init("flatten_shape", np.array([-1, 64], np.int64))],
               "flatten_output_quantized", "flatten_Reshape")
    s, z = P["fc_matmul"]
    ms, mz = g.init("fc_matmul_output_scale", s), g.init("fc_matmul_output_zero_point", z)
    ins = [x, xs, xz,
           g.init("fc_weight_quantized", P["fc.wq"]), g.init("fc_weight_scale", P["fc.ws"]),
           g.init("fc_weight_zero_point", P["fc.wz"]), ms, mz]
    y = g.node("QLinearMatMul", ins, "fc_matmul_output_quantized", "fc_QLinearMatMul")
    s, z = P["logits"]
    ls, lz = g.init("logits_scale", s), g.init("logits_zero_point", z)
    ins = [y, ms, mz,
           g.init("fc_bias_quantized", P["fc.bq_u8"]), g.init("fc_bias_scale", P["fc.bs_u8"]),
           g.init("fc_bias_zero_point", P["fc.bz_u8"]), ls, lz]
    y = g.node("QLinearAdd", ins, "logits_quantized", "fc_QLinearAdd", domain="com.microsoft")
    g.node("DequantizeLinear", [y, ls, lz], "logits", "logits_DequantizeLinear")
    return g.model("digits_cnn_qop", [("", 13), ("com.microsoft", 1)])


# ----------------------------------------------------------------------------------------------
# Numpy references
# ----------------------------------------------------------------------------------------------

def conv3x3(x, w):
    """Cross-correlation, stride 1, pad 1. Integer inputs accumulate exactly in int64."""
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2), x.dtype)
    xp[:, :, 1:-1, 1:-1] = x
    out = 0
    for kh in range(3):
        for kw in range(3):
            out = out + np.einsum("nchw,oc->nohw", xp[:, :, kh:kh + h, kw:kw + wd], w[:, :, kh, kw])
    return out


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def requant(acc, mult, zp):
    """Integer accumulator -> uint8 the way ORT's QLinearConv/QLinearMatMul kernels do it:
    float32(acc) * float32 multiplier, round half even, + zp, saturate."""
    return np.clip(rne(acc.astype(F32) * mult) + F32(zp), 0, 255).astype(np.uint8)


def reference_int(P, x, qop):
    """Plain integer simulation. qop=False: the QDQ model (fc bias int32 inside the accumulator,
    one requantization to the logits params). qop=True: the QOperator model (requantize to
    fc_matmul params, then QLinearAdd with the uint8 bias). Returns dequantized logits."""
    s, z = P["image"]
    q = quantize_u8(x, s, z).astype(np.int64)
    xs, xz = s, z
    for i, conv in enumerate(["conv1", "conv2"], start=1):
        ys, yz = P["relu%d" % i]
        acc = conv3x3(q - int(xz), P[conv + ".wq"].astype(np.int64))
        acc = acc + P[conv + ".bq"].astype(np.int64)[None, :, None, None]
        mult = (F32(xs) * P[conv + ".ws"] / F32(ys)).astype(F32)[None, :, None, None]
        q = maxpool2(requant(acc, mult, yz)).astype(np.int64)  # Relu: zp 0 + saturation at 0
        xs, xz = ys, yz
    q = q.reshape(-1, 64)
    acc = (q - int(xz)) @ P["fc.wq"].astype(np.int64)
    ls, lz = P["logits"]
    if not qop:
        acc = acc + P["fc.bq"].astype(np.int64)
        ql = requant(acc, (F32(xs) * P["fc.ws"] / F32(ls)).astype(F32), lz)
    else:
        ms, mz = P["fc_matmul"]
        qm = requant(acc, (F32(xs) * P["fc.ws"] / F32(ms)).astype(F32), mz)
        ql = qlinear_add(qm, ms, mz, P["fc.bq_u8"], P["fc.bs_u8"], P["fc.bz_u8"], ls, lz)
    return (ql.astype(F32) - F32(lz)) * F32(ls)


def qlinear_add(a, as_, az, b, bs, bz, cs, cz):
    """com.microsoft QLinearAdd: c = saturate(rne((a-az)*as/cs + (b-bz)*bs/cs) + cz), float32."""
    v = ((a.astype(F32) - F32(az)) * F32(F32(as_) / F32(cs))
         + (b.astype(F32) - F32(bz)) * F32(F32(bs) / F32(cs)))
    return np.clip(rne(v) + F32(cz), 0, 255).astype(np.uint8)


def run_onnx(model, image):
    """Minimal interpreter for exactly the ops these two files use, reading the saved
    ModelProto (so wiring, initializers and attributes are what is being checked). QDQ nodes
    execute with their literal float semantics (DequantizeLinear then float Conv/MatMul/Add)."""
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
            y = (conv3x3(i[0], i[1]) + i[2][None, :, None, None]).astype(F32)
        elif op == "Relu":
            y = np.maximum(i[0], 0)
        elif op == "MaxPool":
            y = maxpool2(i[0])
        elif op == "Reshape":
            y = i[0].reshape(tuple(i[1]))
        elif op == "MatMul":
            y = (i[0] @ i[1]).astype(F32)
        elif op == "Add":
            y = (i[0] + i[1]).astype(F32)
        elif op == "QLinearConv":
            x, xs, xz, w, ws, wz, ys, yz, b = i
            acc = conv3x3(x.astype(np.int64) - int(xz),
                          w.astype(np.int64) - wz.astype(np.int64)[:, None, None, None])
            acc = acc + b.astype(np.int64)[None, :, None, None]
            y = requant(acc, (F32(xs) * ws / F32(ys)).astype(F32)[None, :, None, None], yz)
        elif op == "QLinearMatMul":
            x, xs, xz, w, ws, wz, ys, yz = i
            acc = (x.astype(np.int64) - int(xz)) @ (w.astype(np.int64) - wz.astype(np.int64))
            y = requant(acc, (F32(xs) * ws / F32(ys)).astype(F32), yz)
        elif op == "QLinearAdd":
            y = qlinear_add(*i)
        else:
            raise ValueError("unexpected op " + op)
        env[n.output[0]] = y
    return env["logits"]


# ----------------------------------------------------------------------------------------------

def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    np.random.seed(0)  # nothing below draws from numpy's RNG; seeded in case that changes
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    xtr, ytr, xte, yte = load_data()
    model = train(xtr, ytr)
    with torch.no_grad():
        taps = {}
        model(torch.from_numpy(xtr), taps)                     # calibration pass: TRAIN set
        cal = {k: v.numpy() for k, v in taps.items()}
        f_logits = model(torch.from_numpy(xte)).numpy()
    f_pred = f_logits.argmax(1)
    print("float test accuracy:      %.4f (%d/%d)" % ((f_pred == yte).mean(), (f_pred == yte).sum(), N_TEST))

    # Activation params: MinMax calibration (ORT's default CalibrationMethod.MinMax), one
    # min/max over the whole train set per tensor. pool1/pool2/flatten reuse relu1/relu2.
    P = {"image": act_params(xtr.min(), xtr.max())}
    for k in ("relu1", "relu2", "fc_matmul", "logits"):
        P[k] = act_params(cal[k].min(), cal[k].max())

    sd = {k: v.detach().numpy().astype(F32) for k, v in model.state_dict().items()}
    in_scale = {"conv1": P["image"][0], "conv2": P["relu1"][0]}
    for conv in ("conv1", "conv2"):
        wq, ws, wz = weight_params_per_channel(sd[conv + ".weight"], axis=0)  # OIHW, per O
        bq, bs = bias_int32(sd[conv + ".bias"], in_scale[conv], ws)
        P.update({conv + ".wq": wq, conv + ".ws": ws, conv + ".wz": wz,
                  conv + ".bq": bq, conv + ".bs": bs})
    wfc = np.ascontiguousarray(sd["fc.weight"].T)  # torch [10,64] -> ONNX MatMul W[K=64,N=10]
    wq, ws, wz = weight_params_per_channel(wfc, axis=1)
    bq, bs = bias_int32(sd["fc.bias"], P["relu2"][0], ws)
    P.update({"fc.wq": wq, "fc.ws": ws, "fc.wz": wz, "fc.bq": bq, "fc.bs": bs})
    # QOperator QLinearAdd's B: the float bias as a uint8 per-tensor tensor, own asymmetric params.
    bs8, bz8 = act_params(sd["fc.bias"].min(), sd["fc.bias"].max())
    P.update({"fc.bq_u8": quantize_u8(sd["fc.bias"], bs8, bz8), "fc.bs_u8": bs8, "fc.bz_u8": bz8})

    for k in ("image", "relu1", "relu2", "fc_matmul", "logits"):
        print("act %-10s scale=%.9g zero_point=%d" % (k, P[k][0], P[k][1]))
    print("fc bias u8 (QOperator)   scale=%.9g zero_point=%d" % (bs8, bz8))

    qdq, qop = build_qdq(P), build_qop(P)
    onnx.checker.check_model(qdq)
    # The onnx 1.12 checker skips schema checks for ops of domains it does not know (such as
    # com.microsoft's QLinearAdd) and checks the rest, so it runs on the QOperator model too.
    onnx.checker.check_model(qop)

    files = {"digits_cnn_qdq.onnx": qdq, "digits_cnn_qop.onnx": qop}
    for name, m in files.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(m.SerializeToString())
    np.save(os.path.join(outdir, "digits_test_images.npy"), np.ascontiguousarray(xte, F32))
    np.save(os.path.join(outdir, "digits_test_labels.npy"), yte.astype(np.int32))

    # Verification.
    def report(label, logits):
        p = logits.argmax(1)
        print("%-25s accuracy %.4f (%d/%d), top-1 agreement with float %.4f (%d/%d)"
              % (label, (p == yte).mean(), (p == yte).sum(), N_TEST,
                 (p == f_pred).mean(), (p == f_pred).sum(), N_TEST))
        return logits

    r_qdq = report("QDQ integer reference:", reference_int(P, xte, qop=False))
    r_qop = report("QOp integer reference:", reference_int(P, xte, qop=True))
    for name, ref in (("digits_cnn_qdq.onnx", r_qdq), ("digits_cnn_qop.onnx", r_qop)):
        m = onnx.load(os.path.join(outdir, name))
        out = report(name + " (interp):", run_onnx(m, xte))
        ls = P["logits"][0]
        diff = np.rint(np.abs(out - ref) / ls).astype(np.int64)  # in logits LSBs
        print("  vs integer reference: %d of %d logits differ, max %d LSB"
              % ((diff != 0).sum(), diff.size, diff.max()))

    for name in list(files) + ["digits_test_images.npy", "digits_test_labels.npy"]:
        size = os.path.getsize(os.path.join(outdir, name))
        assert size < 200 * 1024, name
        print("%-24s %7d bytes" % (name, size))


if __name__ == "__main__":
    main()
