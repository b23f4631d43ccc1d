"""The ONNX Runtime peer (peers/ort/runner.js) spoken to directly through the exec protocol
(docs/integrate.md, "Protocol reference (exec, version 1)"), with values derived by hand from ORT's
source, not from the runner's output:

- f32 QuantizeLinear: onnxruntime/core/mlas/lib/quantize.cpp::MlasQuantizeLinearVector divides,
  clamps in float to [qmin - zp, qmax - zp] with maxps/minps (a NaN takes the bound), converts with
  cvtps2dq (ties to even) and adds the zero point.
- f16 QuantizeLinear: onnxruntime/core/util/qmath.h::ParQuantizeLinearStd(const MLFloat16*) (after
  PR #32452) computes static_cast<int32_t>(std::nearbyint(x.ToFloat() / scale.ToFloat())) + zp and
  clamps: the cast of an out-of-range value or NaN is cvttss2si's "integer indefinite" INT_MIN on
  x86-64, and INT_MIN + zp wraps for a negative zp.
- QLinearMatMul: the output scale fl(fl(a_scale * b_scale) / y_scale) in f32
  (qlinearmatmul.cc, as QGemm's ComputeOutputScale), then MlasRequantizeOutput: float(acc) * scale,
  clamp, round to nearest even, + y_zero_point.

Skips with the reason when node or onnxruntime-node (QCONFORM_ORT_NODE_MODULES or normal require
resolution) is missing.
"""

import json
import os
import pathlib
import platform
import shutil
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNER = ROOT / "peers" / "ort" / "runner.js"
NODE = shutil.which("node")
# Where scripts/setup.sh installs onnxruntime-node, unless the environment names another folder.
os.environ.setdefault("QCONFORM_ORT_NODE_MODULES", str(ROOT / ".deps" / "node_modules"))


def _ort_available():
    if NODE is None:
        return False, "node is not installed"
    probe = subprocess.run(
        [NODE, "-e", "const p = process.env.QCONFORM_ORT_NODE_MODULES;"
                     "try { require(require('path').join(p || '', 'onnxruntime-node')); }"
                     "catch (e) { require('onnxruntime-node'); }"],
        capture_output=True, text=True, cwd=str(RUNNER.parent), timeout=120)
    if probe.returncode != 0:
        return False, ("onnxruntime-node is not installed (set QCONFORM_ORT_NODE_MODULES to a node_modules "
                       "folder holding onnxruntime-node@1.30.0)")
    return True, ""


AVAILABLE, WHY = _ort_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)

PARAMS_DEFAULT = {"axis": None, "block_size": 0}
RULE = {"recipe": "onnx_ort", "scheme": "asymmetric", "include_zero": True, "zero_point": "from_min",
        "nudge": "rne", "reduce_range": "none", "narrow_range": False, "scale_floor": 0.0, "arithmetic": "f32"}
NPY_DTYPE = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "u8": np.uint8, "i32": np.int32}


class Runner:
    """One runner process; requests and replies are JSON lines."""

    def __init__(self, tmp_path):
        self.proc = subprocess.Popen([NODE, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.tmp = tmp_path
        self.n = 0

    def ask(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def request(self, kind, op, arrays):
        self.n += 1
        d = self.tmp / ("req%d" % self.n)
        d.mkdir()
        for i, a in enumerate(arrays):
            np.save(d / ("t%d.npy" % i), a)
        return d, self.ask({"type": kind, "op": op, "dir": str(d)})

    def run(self, op, arrays):
        d, r = self.request("run", op, arrays)
        assert r.get("ok"), r
        return np.load(d / r["output"])

    def close(self):
        self.proc.stdin.write(json.dumps({"type": "bye"}) + "\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture
def runner(tmp_path):
    r = Runner(tmp_path)
    hello = r.ask({"qconform": "exec", "version": 1, "type": "hello"})
    assert hello["available"], hello["reason"]
    yield r
    r.close()


def ref(i, dtype, shape):
    return {"tensor": i, "dtype": dtype, "shape": list(shape)}


def quantize_op(x, dtype, scale, zp, out, scale_dtype=None):
    params = dict(PARAMS_DEFAULT, scale_dtype=scale_dtype or dtype, scales=[scale], zero_points=[zp])
    return {"op": "quantize", "x": ref(0, dtype, x.shape), "params": params, "out": out}


def test_hello_reports_version_isa_and_claim(tmp_path):
    r = Runner(tmp_path)
    hello = r.ask({"qconform": "exec", "version": 1, "type": "hello"})
    r.close()
    assert hello["version"] == 1
    assert hello["claim"] == "ort-cpu"
    assert hello["available"] is True
    facts = hello["facts"]
    assert facts["version"].startswith("1.30")
    assert facts["node"].startswith("v")
    if platform.machine() == "x86_64":
        flags = pathlib.Path("/proc/cpuinfo").read_text()
        expect = "avx512_vnni" if "avx512_vnni" in flags else None
        if expect:
            assert facts["isa"] == expect
            assert facts["u8s8_int16_pair_saturation"] == "no"


def test_missing_package_is_unavailable_with_a_reason(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NODE_PATH"}
    env["QCONFORM_ORT_NODE_MODULES"] = str(tmp_path / "nowhere")
    # A copy of the runner outside any node_modules tree, so normal resolution finds nothing either.
    for f in ("runner.js", "npy.js", "onnx_proto.js"):
        shutil.copy(RUNNER.parent / f, tmp_path / f)
    p = subprocess.run([NODE, str(tmp_path / "runner.js")], input='{"type": "hello"}\n{"type": "bye"}\n',
                       capture_output=True, text=True, env=env, timeout=60)
    hello = json.loads(p.stdout.splitlines()[0])
    assert hello["available"] is False
    assert "QCONFORM_ORT_NODE_MODULES" in hello["reason"] and "onnxruntime-node" in hello["reason"]


def test_f32_ties_to_even_and_saturation(runner):
    # x / 1: cvtps2dq rounds halves to even; 1000 and -1000 clamp in float to [-128, 127].
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0], np.float32)
    y = runner.run(quantize_op(x, "f32", 1.0, 0, "i8"), [x])
    assert y.dtype == np.int8
    assert y.tolist() == [0, 2, 2, 0, -2, -2, 127, -128]
    # u8 with zp 255: the float clamp is [0 - 255, 255 - 255] = [-255, 0], so 1.0 / 0.5 = 2 -> 0 -> 255;
    # -127.5 / 0.5 = -255 -> 0; -128 / 0.5 = -256 clamps to -255 -> 0.
    x = np.array([1.0, -127.5, -128.0, -0.25], np.float32)
    y = runner.run(quantize_op(x, "f32", 0.5, 255, "u8"), [x])
    assert y.tolist() == [255, 0, 0, 255]


def test_f32_nan_takes_the_lower_bound(runner):
    # maxps(NaN, qmin - zp) returns the second operand: NaN -> qmin - zp, + zp = qmin.
    x = np.array([np.nan, np.inf, -np.inf], np.float32)
    y = runner.run(quantize_op(x, "f32", 0.5, 128, "u8"), [x])
    assert y.tolist() == [0, 255, 0]


def test_f16_ties_to_even(runner):
    # (k + 1/2) * 0.25 / 0.25 in f32 is an exact tie; std::nearbyint rounds it to even.
    x = np.array([0.125, 0.375, 0.625, -0.375], np.float16)
    y = runner.run(quantize_op(x, "f16", 0.25, 0, "i8"), [x])
    assert y.tolist() == [0, 2, 2, -2]


@pytest.mark.parametrize("zp,expected", [
    # INT_MIN + 0 clamps to -128 for +inf, -inf, NaN and 65504 / 2^-16 = 2^32 - 2^21 (>= 2^31).
    (0, [-128, -128, -128, -128, 2]),
    # INT_MIN + (-1) wraps to INT_MAX: all four clamp to 127; 1.5 -> 2, 2 - 1 = 1.
    (-1, [127, 127, 127, 127, 1]),
    # INT_MIN + 127 is still below -128.
    (127, [-128, -128, -128, -128, 127]),
])
def test_f16_out_of_range_goes_through_int_min_and_zero_point_wraps(runner, zp, expected):
    x = np.array([np.inf, -np.inf, np.nan, 65504.0, 1.5], np.float16)
    scale = 2.0 ** -16  # an f16 subnormal; 1.5 / 2^-16 would be 98304, so 1.5 uses its own request
    big = runner.run(quantize_op(x[:4], "f16", scale, zp, "i8"), [x[:4]])
    one = runner.run(quantize_op(x[4:], "f16", 1.0, zp, "i8"), [x[4:]])
    assert big.tolist() + one.tolist() == expected


def test_f16_specials_into_u8_saturate_at_zero(runner):
    # INT_MIN + zp < 0 for every u8 zero point: +inf, -inf and NaN all give 0.
    x = np.array([np.inf, -np.inf, np.nan], np.float16)
    y = runner.run(quantize_op(x, "f16", 1.0, 255, "u8"), [x])
    assert y.tolist() == [0, 0, 0]


def test_f32_scale_with_f16_input_is_refused_with_the_type_rule(runner):
    x = np.array([1.0], np.float16)
    _, r = runner.request("supports", quantize_op(x, "f16", 1.0, 0, "i8", scale_dtype="f32"), [x])
    assert r["available"] is False
    assert "y_scale" in r["reason"] and "T1" in r["reason"]


def qgemm_requant_op(a, b, a_s, a_zp, b_s, b_zp, y_s, y_zp, out):
    return {
        "op": "qgemm",
        "a": {"values": ref(0, "u8", a.shape), "format": "u8",
              "params": dict(PARAMS_DEFAULT, scale_dtype="f32", scales=[a_s], zero_points=[a_zp]),
              "quantization": "static", "rule": RULE},
        "b": {"values": ref(1, "u8", b.shape), "format": "u8", "packing": None, "shape": list(b.shape),
              "params": dict(PARAMS_DEFAULT, scale_dtype="f32", scales=[b_s], zero_points=[b_zp])},
        "b_layout": "k_by_n", "bias": None,
        "output": {"kind": "requantized", "format": out, "scale": y_s, "zero_point": y_zp, "clamp": None},
    }


def test_qlinear_matmul_elements_by_hand(runner):
    a = np.array([[129, 132]], np.uint8)          # a - 128 = [1, 4]
    b = np.array([[129, 131, 228], [129, 129, 28]], np.uint8)  # b - 128 = [[1, 3, 100], [1, 1, -100]]
    # Exact multiplier 0.5 * 0.25 / 0.25 = 0.5. Column 0: acc = 1 + 4 = 5 -> 2.5 -> 2 (even) + 10 = 12.
    # Column 1: acc = 3 + 4 = 7 -> 3.5 -> 4 + 10 = 14. Column 2: acc = 100 - 400 = -300 -> -150 + 10 = -140,
    # below u8: the float clamp [0 - 10, 255 - 10] gives -10 -> 0.
    y = runner.run(qgemm_requant_op(a, b, 0.5, 128, 0.25, 128, 0.25, 10, "u8"), [a, b])
    assert y.tolist() == [[12, 14, 0]]
    # An inexact multiplier: fl32(fl32(0.1 * 0.2) / 0.3), then fl32(248 * M), ties to even, + 10.
    a = np.array([[130, 120]], np.uint8)
    b = np.array([[140], [100]], np.uint8)
    acc = (130 - 128) * (140 - 128) + (120 - 128) * (100 - 128)
    assert acc == 248
    m = np.float32(np.float32(0.1) * np.float32(0.2)) / np.float32(0.3)
    v = np.float32(np.float32(acc) * np.float32(m))
    want = int(np.rint(v)) + 10
    assert want == 27  # by hand: 248 * 0.02 / 0.3 = 16.53 -> 17, + 10
    y = runner.run(qgemm_requant_op(a, b, 0.1, 128, 0.2, 128, 0.3, 10, "u8"), [a, b])
    assert y.tolist() == [[want]]
