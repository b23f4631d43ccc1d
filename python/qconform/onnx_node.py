"""Turn ONNX backend node tests into a qconform case file.

    python3 -m qconform.onnx_node DIR... -o OUT.json [--suite NAME] [--check]

Each DIR is one ONNX backend node test (onnx/backend/test/data/node/test_*: model.onnx and
test_data_set_*/input_*.pb, output_*.pb). A test whose graph is a single node of QuantizeLinear,
DequantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger or DynamicQuantizeLinear
becomes one case per data set (DynamicQuantizeLinear: two, see `_dynamic_quantize_linear`), under
the `onnx` preset with an exact expectation. Tests of other ops are ignored; a multi-node graph
that uses one of these ops (the `_expanded` variants) and a test whose attributes or inputs the
case format cannot express are skipped with the reason. The summary line says how many tests were
imported and skipped.

The case format (cases/case.schema.json) has no field for a literal expected output: a case holds
inputs, parameters and a spec, and the oracle computes the expected values. The test's own expected
outputs are therefore kept beside each case (`Imported.expected`) and `check()` (`--check`)
compares the oracle's result under each case's spec to them element by element.

The importer itself needs only onnx and numpy. When the compiled qconform package is importable,
every case is also read back through the case loader (qconform.case_from_json), so a case the
loader refuses is skipped with the loader's message instead of written.
"""

import argparse
import dataclasses
import glob
import json
import math
import os
import sys

import numpy as np

# The ops the case format models (docs/cases.md) and the op kind each becomes.
QUANTIZED_OPS = (
    "QuantizeLinear",
    "DequantizeLinear",
    "QLinearMatMul",
    "QLinearConv",
    "MatMulInteger",
    "ConvInteger",
    "DynamicQuantizeLinear",
)

# numpy dtype -> the case format's dtype name.
_DTYPES = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint16): "u16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
}


class Skip(Exception):
    """A test the case format cannot express; the message is the reason."""


@dataclasses.dataclass
class Imported:
    """One case of the case format and the ONNX test's expected output for it.

    `expected` is what the case's output must equal (an array of the case's output format and
    shape); `expected_note` says how it comes from the test's output_*.pb files."""

    test: str
    case: dict
    expected: np.ndarray
    expected_note: str


@dataclasses.dataclass
class Result:
    imported: list  # of Imported
    skipped: list  # of (test name, reason)
    ignored: int  # tests of other ops


# ---- reading a test ------------------------------------------------------------------------------


def _onnx():
    import onnx  # noqa: F401  (imported late: --help works without onnx)
    from onnx import numpy_helper

    return onnx, numpy_helper


def _read_tensor(path):
    onnx, numpy_helper = _onnx()
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def _data_sets(test_dir, graph):
    """[(inputs, outputs)] per test_data_set_*: dicts name -> array. input_i.pb is the i-th graph
    input that is not an initializer, output_i.pb the i-th graph output (the ONNX backend test
    runner's convention, onnx/backend/test/runner/__init__.py: _load_proto)."""
    _, numpy_helper = _onnx()
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in inits]
    outputs = [o.name for o in graph.output]
    sets = []
    for d in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        ins = dict(inits)
        n_in = len(glob.glob(os.path.join(d, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(d, "output_*.pb")))
        if n_in > len(inputs) or n_out != len(outputs):
            raise Skip(f"{os.path.basename(d)} has {n_in} inputs and {n_out} outputs for a graph of "
                       f"{len(inputs)} inputs and {len(outputs)} outputs")
        for i in range(n_in):
            ins[inputs[i]] = _read_tensor(os.path.join(d, f"input_{i}.pb"))
        outs = {outputs[i]: _read_tensor(os.path.join(d, f"output_{i}.pb")) for i in range(n_out)}
        sets.append((os.path.basename(d), ins, outs))
    if not sets:
        raise Skip("no test_data_set_* folder")
    return sets


# ---- values in the case format -------------------------------------------------------------------


def _dtype(a, what):
    try:
        return _DTYPES[a.dtype]
    except KeyError:
        raise Skip(f"{what} has element type {a.dtype}, which the case format has no name for")


def _number(v):
    """A float as the case format writes it: the shortest decimal that reads back as the same
    double (exact for every f16/f32 value), or nan/inf strings. A NaN's payload is not kept."""
    v = float(v)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _data(a):
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind == "f":
        return [_number(v) for v in flat]
    return [int(v) for v in flat]


def _tensor(a, what):
    a = np.asarray(a)
    if a.ndim == 0:
        raise Skip(f"{what} is a scalar; the case format's tensors have at least one dimension")
    if a.size == 0:
        raise Skip(f"{what} is empty")
    return {"dtype": _dtype(a, what), "shape": [int(d) for d in a.shape], "data": _data(a)}


def _scale_dtype(s, what):
    d = _dtype(np.asarray(s), what)
    if d not in ("f32", "f16", "f64"):
        raise Skip(f"{what} has element type {np.asarray(s).dtype}; scales are floats")
    return d


def _params(scale, zero_point, shape, axis, what, allow_per_axis=True):
    """(scale, zero_point, axis) in the case format: one value per tensor, or one per index of
    `axis` (ONNX: a 1-D scale of the axis' length; a 1-element 1-D scale is per tensor)."""
    s = np.asarray(scale).reshape(-1)
    z = None if zero_point is None else np.asarray(zero_point).reshape(-1)
    if z is not None and z.size not in (1, s.size) and s.size != 1:
        raise Skip(f"{what}: {s.size} scales but {z.size} zero points")
    n = max(s.size, 1 if z is None else z.size)
    if n == 1:
        return _number(s[0]), (0 if z is None else int(z[0])), None
    if not allow_per_axis:
        raise Skip(f"{what}: per-axis parameters ({n}) where ONNX allows one per tensor")
    if axis is None or not (-len(shape) <= axis < len(shape)):
        raise Skip(f"{what}: {n} per-axis parameters but no valid axis for shape {list(shape)}")
    axis %= len(shape)
    if shape[axis] != n:
        raise Skip(f"{what}: {n} per-axis parameters for axis {axis} of length {shape[axis]}")
    scales = [_number(v) for v in (s if s.size == n else np.repeat(s, n))]
    zps = [0] * n if z is None else [int(v) for v in (z if z.size == n else np.repeat(z, n))]
    return scales, zps, axis


def _attrs(node):
    onnx, _ = _onnx()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _check_attrs(node, allowed):
    extra = sorted(set(_attrs(node)) - set(allowed))
    if extra:
        raise Skip(f"attribute(s) {', '.join(extra)} of {node.op_type} have no field in the case format")


def _inputs(node, values, n):
    """The node's first n inputs (None where absent: an empty name or beyond the list)."""
    names = list(node.input) + [""] * (n - len(node.input))
    missing = [nm for nm in names[:n] if nm and nm not in values]
    if missing:
        raise Skip(f"input(s) {', '.join(missing)} have no value in the test data or the initializers")
    return [values[nm] if nm else None for nm in names[:n]]


# ---- one converter per op ------------------------------------------------------------------------
# Each returns a list of _Out for one data set; the caller adds the name, spec and description.


@dataclasses.dataclass
class _Out:
    fields: dict  # the case's fields from "op" on
    expected: np.ndarray  # what the case's output must equal
    note: str  # how `expected` comes from the test's outputs
    extra: str = ""  # more description
    suffix: str = ""  # appended to the case name


def _unit_scales(zp):
    """Scale 1 per tensor, or one per zero point (integer operands of MatMulInteger/ConvInteger)."""
    n = 1 if zp is None else np.asarray(zp).size
    return np.float32(1.0) if n == 1 else np.ones(n, np.float32)


def _affine(node, ins, outs, op, params):
    """QuantizeLinear / DequantizeLinear: one input, its scale and zero point along `axis` (default
    1), one output; the case's op is `op`, `params` names the scale/zero-point pair in messages."""
    _check_attrs(node, ("axis",))
    x, s, zp = _inputs(node, ins, 3)
    y = outs[node.output[0]]
    axis = _attrs(node).get("axis", 1)
    scale, zero_point, ax = _params(s, zp, x.shape, axis, params)
    case = {"op": op, "input": _tensor(x, "x"), "scale": scale,
            "scale_dtype": _scale_dtype(s, params.split("/")[0]), "zero_point": zero_point}
    if ax is not None:
        case["axis"] = ax
    case["output_dtype"] = _dtype(y, "y")
    return [_Out(case, y, "y (output_0)")]


def _quantize_linear(node, ins, outs):
    # onnx/defs/quantization/defs.cc QuantizeLinear (opset 10, 13): y = saturate(round(x / y_scale)
    # + y_zero_point), axis default 1; no zero point means uint8 with zero point 0.
    return _affine(node, ins, outs, "quantize", "y_scale/y_zero_point")


def _dequantize_linear(node, ins, outs):
    # defs.cc DequantizeLinear (opset 10, 13): y = (x - x_zero_point) * x_scale, axis default 1.
    return _affine(node, ins, outs, "dequantize", "x_scale/x_zero_point")


def _gemm_b(b, a_ndim, what):
    """B as the [K, N] the case format takes. ONNX MatMul broadcasts like numpy.matmul, so a
    batched B whose batches are all equal (and that adds no batch dimension A lacks) is the same
    product as its one [K, N] matrix; any other batched or 1-D B is not expressible."""
    if b.ndim < 2 or a_ndim < 2:
        raise Skip(f"{what}: a 1-D operand of MatMul (numpy.matmul's vector case) has no qgemm form")
    if b.ndim == 2:
        return b, ""
    flat = b.reshape(-1, b.shape[-2], b.shape[-1])
    if b.ndim > a_ndim or not all(np.array_equal(flat[0], m) for m in flat[1:]):
        raise Skip(f"{what}: a batched B {list(b.shape)} with distinct batches (qgemm's B is one [K, N] matrix)")
    return flat[0], f" B {list(b.shape)} repeats one [K, N] matrix in every batch, written once."


def _matmul_operand(v, s, zp, row_axis, col_axis, what, is_a):
    s = _unit_scales(zp) if s is None else s
    scale, zero_point, ax = _params(s, zp, v.shape, row_axis if is_a else col_axis, what)
    op = _tensor(v, what.split("/")[0])
    op["scale"] = scale
    op["zero_point"] = zero_point
    if ax is not None:
        op["axis"] = ax
    return op


def _matmul_integer(node, ins, outs):
    # defs.cc MatMulInteger (opset 10): (A - a_zero_point) x (B - b_zero_point) into int32;
    # a_zero_point per tensor or per row of A, b_zero_point per tensor or per column of B.
    _check_attrs(node, ())
    a, b, azp, bzp = _inputs(node, ins, 4)
    y = outs[node.output[0]]
    b2, note = _gemm_b(b, a.ndim, "B")
    case = {"op": "qgemm",
            "a": _matmul_operand(a, None, azp, a.ndim - 2, None, "A/a_zero_point", True),
            "b": _matmul_operand(b2, None, bzp, None, 1, "B/b_zero_point", False),
            "output": {"kind": "int32"}}
    return [_Out(case, y, "Y (output_0)", note)]


def _qlinear_matmul(node, ins, outs):
    # defs.cc QLinearMatMul (opset 10): the real product of the dequantized A and B, requantized
    # with y_scale and y_zero_point (round half to even, saturate).
    _check_attrs(node, ())
    a, sa, za, b, sb, zb, sy, zy = _inputs(node, ins, 8)
    y = outs[node.output[0]]
    b2, note = _gemm_b(b, a.ndim, "b")
    for s, what in ((sa, "a_scale"), (sb, "b_scale"), (sy, "y_scale")):
        if _scale_dtype(s, what) != "f32":
            raise Skip(f"{what} is {np.asarray(s).dtype}; QLinearMatMul scales are f32")
    out_scale, out_zp, _ = _params(sy, zy, y.shape, None, "y_scale/y_zero_point", allow_per_axis=False)
    case = {"op": "qgemm",
            "a": _matmul_operand(a, sa, za, a.ndim - 2, None, "a/a_scale/a_zero_point", True),
            "b": _matmul_operand(b2, sb, zb, None, 1, "b/b_scale/b_zero_point", False),
            "output": {"kind": "requantized", "dtype": _dtype(y, "y"), "scale": out_scale,
                       "zero_point": out_zp}}
    return [_Out(case, y, "y (output_0)", note)]


def _conv_geometry(node, x, w):
    """stride, padding [top, left, bottom, right], dilation, groups from the Conv attributes
    (onnx/defs/nn/defs.cc conv_attributes_doc: pads [x1_begin, x2_begin, x1_end, x2_end];
    auto_pad SAME_UPPER puts the odd padding at the end, SAME_LOWER at the beginning)."""
    _check_attrs(node, ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
    if x.ndim != 4 or w.ndim != 4:
        raise Skip(f"a {x.ndim - 2}-D convolution; qconv2d is 2-D (NCHW input, OIHW weights)")
    at = _attrs(node)
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    if kernel != list(w.shape[2:]):
        raise Skip(f"kernel_shape {kernel} differs from the weights' {list(w.shape[2:])}")
    if auto_pad == "NOTSET":
        pads = list(at.get("pads", [0, 0, 0, 0]))
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0, 0, 0, 0]
        for i in range(2):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size)
            small, large = total // 2, total - total // 2
            pads[i], pads[i + 2] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    else:
        raise Skip(f"auto_pad {auto_pad!r}")
    geom = {"stride": strides, "padding": pads, "dilation": dil, "groups": int(at.get("group", 1))}
    if any(p < 0 for p in pads):
        raise Skip(f"negative pads {pads}")
    return geom


def _conv_weight(w, s, zp, what):
    s = _unit_scales(zp) if s is None else s
    scale, zero_point, ax = _params(s, zp, w.shape, 0, what)
    op = _tensor(w, what.split("/")[0])
    op["scale"] = scale
    op["zero_point"] = zero_point
    if ax is not None:
        op["axis"] = ax
    return op


def _conv_integer(node, ins, outs):
    # defs.cc ConvInteger (opset 10): Conv of (x - x_zero_point) and (w - w_zero_point) into
    # int32; x_zero_point per tensor, w_zero_point per tensor or per output channel.
    x, w, xzp, wzp = _inputs(node, ins, 4)
    y = outs[node.output[0]]
    geom = _conv_geometry(node, x, w)
    xs, xz, _ = _params(np.float32(1.0), xzp, x.shape, None, "x_zero_point", allow_per_axis=False)
    inp = _tensor(x, "x")
    inp.update({"scale": xs, "zero_point": xz, "layout": "nchw"})
    case = {"op": "qconv2d", "input": inp, "weight": _conv_weight(w, None, wzp, "w/w_zero_point"),
            **geom, "output": {"kind": "int32"}}
    return [_Out(case, y, "y (output_0)")]


def _qlinear_conv(node, ins, outs):
    # defs.cc QLinearConv (opset 10): Conv of the dequantized x and w (+ the int32 bias B at
    # scale x_scale * w_scale), requantized with y_scale and y_zero_point; padding is the real
    # value 0 (x_zero_point), the case format's default padding_value real_zero.
    x, sx, zx, w, sw, zw, sy, zy, bias = _inputs(node, ins, 9)
    y = outs[node.output[0]]
    geom = _conv_geometry(node, x, w)
    xs, xz, _ = _params(sx, zx, x.shape, None, "x_scale/x_zero_point", allow_per_axis=False)
    inp = _tensor(x, "x")
    inp.update({"scale": xs, "zero_point": xz, "layout": "nchw"})
    ys, yz, _ = _params(sy, zy, y.shape, None, "y_scale/y_zero_point", allow_per_axis=False)
    case = {"op": "qconv2d", "input": inp, "weight": _conv_weight(w, sw, zw, "w/w_scale/w_zero_point")}
    if bias is not None:
        case["bias"] = _tensor(bias, "B")
    case.update(geom)
    case["output"] = {"kind": "requantized", "dtype": _dtype(y, "y"), "scale": ys, "zero_point": yz}
    return [_Out(case, y, "y (output_0)")]


def _dynamic_quantize_linear(node, ins, outs):
    # defs.cc DynamicQuantizeLinear (opset 11): y_scale = (max(0, x_max) - min(0, x_min)) / 255,
    # y_zero_point = saturate(round(0 - x_min / y_scale)), y = saturate(round(x / y_scale) +
    # y_zero_point), uint8. The case format has no op with three outputs, so the node becomes:
    #  (1) a quantize case of x with the test's expected y_scale and y_zero_point as parameters,
    #      whose output is y: checks the quantization given the parameters;
    #  (2) a qgemm case: x as a dynamic_per_tensor activation (the spec's qparams rule, ONNX's for
    #      the onnx preset) times the i8 identity at scale 1, dequantized to f32: its output is
    #      (y - y_zero_point) * y_scale, so it checks the parameters the path chooses.
    _check_attrs(node, ())
    (x,) = _inputs(node, ins, 1)
    y, ys, yz = (outs[n] for n in node.output[:3])
    if _dtype(x, "x") != "f32":
        raise Skip(f"x is {x.dtype}; DynamicQuantizeLinear takes f32")
    s, z, _ = _params(ys, yz, y.shape, None, "y_scale/y_zero_point", allow_per_axis=False)
    direct = {"op": "quantize", "input": _tensor(x, "x"), "scale": s, "scale_dtype": "f32",
              "zero_point": z, "output_dtype": _dtype(y, "y")}
    k = int(x.shape[-1]) if x.ndim else 1
    a = x.reshape(-1, k)
    dynamic = {"op": "qgemm",
               "a": {**_tensor(a, "x"), "format": "u8", "quantize": "dynamic_per_tensor"},
               "b": {"dtype": "i8", "shape": [k, k], "data": _data(np.eye(k, dtype=np.int8)), "scale": 1.0},
               "output": {"kind": "dequantized", "dtype": "f32"}}
    # (y - zp) * scale: |y - zp| <= 255 and the scale has 24 bits, so the f64 product is exact and
    # its one rounding to f32 is the correctly rounded value the dequantized output stage gives.
    deq = ((y.astype(np.int64) - int(np.asarray(yz).reshape(-1)[0])).astype(np.float64)
           * np.float64(np.asarray(ys).reshape(-1)[0])).astype(np.float32).reshape(a.shape[0], k)
    shape_note = "" if x.ndim == 2 else f" x {list(x.shape)} is written as its [{a.shape[0]}, {k}] view."
    return [
        _Out(direct, y, "y (output_0)",
         " Quantizes x with the test's expected y_scale and y_zero_point (output_1, output_2) as the "
         "parameters: checks y given them.", ""),
        _Out(dynamic, deq, "(y - y_zero_point) * y_scale from output_0..2, in f32",
         " x as a dynamic per-tensor activation (ONNX's scale and zero point rule) times the int8 "
         "identity at scale 1, dequantized: the output is (y - y_zero_point) * y_scale, which checks "
         "the parameters the path chooses." + shape_note, ".qparams"),
    ]


_CONVERTERS = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearConv": _qlinear_conv,
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
    "DynamicQuantizeLinear": _dynamic_quantize_linear,
}


# ---- driver --------------------------------------------------------------------------------------


def _loader():
    """qconform.case_from_json when the compiled package is importable, else None."""
    try:
        import qconform

        return qconform.case_from_json
    except ImportError:
        return None


def convert_test(test_dir, load=None):
    """The Imported cases of one test folder. Raises Skip with the reason, or returns None for a
    test of another op."""
    onnx, _ = _onnx()
    name = os.path.basename(os.path.normpath(test_dir))
    model_path = os.path.join(test_dir, "model.onnx")
    if not os.path.isfile(model_path):
        return None
    model = onnx.load(model_path)
    graph = model.graph
    ops = [n.op_type for n in graph.node if n.domain in ("", "ai.onnx")]
    ours = [op for op in ops if op in QUANTIZED_OPS]
    if not ours:
        return None
    if len(graph.node) != 1:
        raise Skip(f"a graph of {len(graph.node)} nodes ({', '.join(sorted(set(n.op_type for n in graph.node)))});"
                   " a case holds one op (the _expanded variants are the function body of the op)")
    node = graph.node[0]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    out = []
    for set_name, ins, outs in _data_sets(test_dir, graph):
        for o in _CONVERTERS[node.op_type](node, ins, outs):
            case_name = name + o.suffix + ("" if set_name == "test_data_set_0" else ":" + set_name)
            desc = (f"ONNX backend node test {name} ({set_name}, {node.op_type}, opset {opset}), imported "
                    f"by qconform.onnx_node; the test's expected output is {o.note}.{o.extra}")
            fields = dict(o.fields)
            case = {"name": case_name, "description": desc, "op": fields.pop("op"), "spec": "onnx", **fields}
            if load is not None:
                try:
                    load(case)
                except ValueError as e:  # qconform.InputError: the loader's message
                    raise Skip(f"the case loader refuses the case: {e}")
            out.append(Imported(name, case, np.asarray(o.expected), o.note))
    return out


def import_tests(dirs, load="auto"):
    """Convert every test folder of `dirs` (a Result). `load`: a case_from_json to read each case
    back through ("auto": qconform's when importable), or None."""
    if load == "auto":
        load = _loader()
    res = Result([], [], 0)
    for d in sorted(dirs, key=lambda p: os.path.basename(os.path.normpath(p))):
        name = os.path.basename(os.path.normpath(d))
        try:
            cases = convert_test(d, load)
        except Skip as e:
            res.skipped.append((name, str(e)))
            continue
        if cases is None:
            res.ignored += 1
        else:
            res.imported.extend(cases)
    return res


def case_file(imported, suite="onnx_node", description=None):
    """The case file's JSON object."""
    import onnx

    return {
        "$schema": "./case.schema.json",
        "suite": suite,
        "description": description or (
            "ONNX backend node tests (onnx " + onnx.__version__ + " test data) of the quantized ops, imported by "
            "qconform.onnx_node: each case holds a test's inputs under the onnx preset, exact. The case format "
            "has no literal expected output; the tests' expected outputs are compared with the oracle by "
            "qconform.onnx_node --check and python/tests/test_onnx_node.py."),
        "expect": {"*": "exact"},
        "cases": [i.case for i in imported],
    }


def dump(obj):
    """JSON text in the layout of cases/*.json: one line per field of a case, data arrays inline."""
    head = {k: v for k, v in obj.items() if k != "cases"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "cases": [')
    for i, case in enumerate(obj["cases"]):
        fields = [f"      {json.dumps(k)}: {json.dumps(v)}" for k, v in case.items()]
        lines.append("    {\n" + ",\n".join(fields) + "\n    }" + ("," if i + 1 < len(obj["cases"]) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def check(imported, spec=None, *, policy=None):
    """Compare the oracle's output of each case (under its spec, or `spec`) with the test's
    expected output, element by element: integers equal, floats bit for bit (any NaN equals any
    NaN). Returns [(case name, message)] for each case that differs. (`policy`: the older name of
    `spec`.)"""
    import qconform

    given = {"spec": spec} if spec is not None else {}
    if policy is not None:
        given["policy"] = policy
    spec = qconform._spec_keyword(given).get("spec")
    bad = []
    for item in imported:
        try:
            case = qconform.case_from_json(item.case)
            ref = qconform.evaluate(case, spec) if spec is not None else qconform.evaluate(case)
        except ValueError as e:  # qconform.InputError: a spec that cannot evaluate the case
            bad.append((item.case["name"], f"the oracle refuses it: {e}"))
            continue
        got = np.asarray(ref.expected)
        want = item.expected
        if got.shape != want.shape:
            bad.append((item.case["name"], f"shape {list(got.shape)}, the test's {list(want.shape)}"))
            continue
        if want.dtype.kind == "f":
            g = got.astype(want.dtype)
            same = (g.view(f"u{want.itemsize}") == want.view(f"u{want.itemsize}")) | (np.isnan(g) & np.isnan(want))
        else:
            same = got.astype(np.int64) == want.astype(np.int64)
        if not same.all():
            idx = np.flatnonzero(~same.reshape(-1))
            bad.append((item.case["name"],
                        f"{idx.size} of {same.size} elements differ from the test's {item.expected_note}; first at "
                        f"{int(idx[0])}: oracle {got.reshape(-1)[idx[0]]!r}, test {want.reshape(-1)[idx[0]]!r}"))
    return bad


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m qconform.onnx_node", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="ONNX backend node test folders (test_*)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json", help="the case file to write")
    p.add_argument("--suite", default="onnx_node", help="the suite name (default onnx_node)")
    p.add_argument("--check", action="store_true",
                   help="compare the oracle's output of each case with the test's expected output (needs qconform)")
    args = p.parse_args(argv)

    res = import_tests(args.dirs)
    for name, reason in res.skipped:
        print(f"skip {name}: {reason}", file=sys.stderr)
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    with open(args.output, "w") as f:
        f.write(dump(case_file(res.imported, args.suite)))
    tests = len({i.test for i in res.imported})
    print(f"onnx_node: {tests} imported, {len(res.skipped)} skipped "
          f"({len(res.imported)} cases written to {args.output}; {res.ignored} tests of other ops ignored)")
    if args.check:
        bad = check(res.imported)
        for name, msg in bad:
            print(f"check {name}: {msg}", file=sys.stderr)
        print(f"onnx_node: check: {len(res.imported) - len(bad)} of {len(res.imported)} cases give the test's "
              f"expected output under their spec")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
