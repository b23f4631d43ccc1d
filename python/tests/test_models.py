"""qconform model: a planted fault in one layer is found as that node with that cause, in isolated mode
(the node's case on the oracle chain's inputs) and in propagated mode (the backend driven through the
graph), docs/models.md.

The model is made here with onnx.helper: two QDQ convolutions whose scales are powers of two, so that
their requantize multipliers are powers of two too and many accumulators land exactly on a tie (conv1:
acc * 2^-7, a tie every 128 values; conv2: acc * 2^-6). The backend computes every op as the ONNX spec
says (the oracle under 'onnx'), except the requantize of conv2 (the convolution with 8 input channels),
where ties go away from zero: a planted fault whose elements are exactly conv2's ties. conv2's output
zero point is 128, so negative ties are not clamped away and ties away from zero (rna) is told apart from
ties upward (rhu).
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import qconform  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("QCONFORM_CLI", ROOT / "build" / "cli" / "qconform"))


def _qdq_conv(nodes, inits, x, name, w, b, s_x, s_w, s_y, relu, zp_y=0):
    """DQ(x) -> Conv(DQ(w), DQ(b)) [-> Relu] -> Q(s_y) ; returns the Q's output name."""
    inits += [numpy_helper.from_array(w.astype(np.int8), name + "_w"),
              numpy_helper.from_array(np.array(s_w, np.float32), name + "_w_scale"),
              numpy_helper.from_array(np.array(0, np.int8), name + "_w_zp"),
              numpy_helper.from_array(b.astype(np.int32), name + "_b"),
              numpy_helper.from_array(np.array(s_x * s_w, np.float32), name + "_b_scale"),
              numpy_helper.from_array(np.array(0, np.int32), name + "_b_zp"),
              numpy_helper.from_array(np.array(s_y, np.float32), name + "_y_scale"),
              numpy_helper.from_array(np.array(zp_y, np.uint8), name + "_y_zp")]
    nodes += [helper.make_node("DequantizeLinear", [x, x + "_scale", x + "_zp"], [x + "_dq"], name=x + "_dq"),
              helper.make_node("DequantizeLinear", [name + "_w", name + "_w_scale", name + "_w_zp"], [name + "_wf"],
                               name=name + "_w_dq"),
              helper.make_node("DequantizeLinear", [name + "_b", name + "_b_scale", name + "_b_zp"], [name + "_bf"],
                               name=name + "_b_dq"),
              helper.make_node("Conv", [x + "_dq", name + "_wf", name + "_bf"], [name + "_out"], name=name,
                               pads=[1, 1, 1, 1])]
    out = name + "_out"
    if relu:
        nodes.append(helper.make_node("Relu", [out], [name + "_relu"], name=name + "_relu"))
        out = name + "_relu"
    y = name + "_q"
    nodes.append(helper.make_node("QuantizeLinear", [out, name + "_y_scale", name + "_y_zp"], [y], name=y))
    inits += [numpy_helper.from_array(np.array(s_y, np.float32), y + "_scale"),
              numpy_helper.from_array(np.array(zp_y, np.uint8), y + "_zp")]
    return y


def make_ties_model(path):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    inits += [numpy_helper.from_array(np.array(2.0 ** -4, np.float32), "image_scale"),
              numpy_helper.from_array(np.array(0, np.uint8), "image_zp")]
    nodes.append(helper.make_node("QuantizeLinear", ["image", "image_scale", "image_zp"], ["x"], name="x"))
    inits += [numpy_helper.from_array(np.array(2.0 ** -4, np.float32), "x_scale"),
              numpy_helper.from_array(np.array(0, np.uint8), "x_zp")]
    y1 = _qdq_conv(nodes, inits, "x", "conv1", rng.integers(-40, 41, (8, 4, 3, 3)), rng.integers(-200, 201, 8),
                   2.0 ** -4, 2.0 ** -5, 2.0 ** -2, relu=True)
    y2 = _qdq_conv(nodes, inits, y1, "conv2", rng.integers(-40, 41, (8, 8, 3, 3)), rng.integers(-200, 201, 8),
                   2.0 ** -2, 2.0 ** -5, 2.0 ** -1, relu=False, zp_y=128)
    nodes.append(helper.make_node("DequantizeLinear", [y2, y2 + "_scale", y2 + "_zp"], ["out"], name="out_dq"))
    graph = helper.make_graph(nodes, "ties", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [8, 4, 8, 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [8, 8, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="qconform test")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


PLANTED = textwrap.dedent("""
    import qconform

    class Planted(qconform.Backend):
        '''The ONNX spec everywhere, except ties away from zero in conv2's requantize (8 input channels).'''
        def name(self):
            return "planted"
        def description(self):
            return "onnx, with ties away from zero in one convolution's requantize"
        def claim(self):
            return "onnx"
        def supports(self, op):
            return op.kind in ("quantize", "dequantize", "qconv2d", "conv2d")
        def run(self, op):
            spec = qconform.Spec("onnx")
            if op.kind == "qconv2d" and op.weight.values.shape[1] == 8:
                spec = spec.with_(requantize={"rounding": "rna"})
            return qconform.evaluate(op, spec).expected
""")


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    if not CLI.exists():
        pytest.skip(f"{CLI} is not built")
    d = tmp_path_factory.mktemp("planted")
    make_ties_model(d / "ties.onnx")
    (d / "planted.py").write_text(PLANTED)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(d), str(ROOT / "build" / "python"), env.get("PYTHONPATH", "")])
    got = subprocess.run([str(CLI), "model", str(d / "ties.onnx"), "--backend", "py:planted:Planted", "--backend",
                          "cpu-ref", "--no-peers", "-q", "-o", str(d / "out")], env=env, capture_output=True, text=True)
    assert got.returncode == 1, got.stdout + got.stderr  # the planted fault is a FAIL
    return json.loads((d / "out" / "report.json").read_text())


def test_isolated_mode_names_the_node_and_the_cause(planted_run):
    failing = {(c["name"], b["backend"]): b for c in planted_run["cases"] for b in c["backends"]
               if b["verdict"] == "FAIL"}
    assert list(failing) == [("conv2.fused", "planted")]
    b = failing[("conv2.fused", "planted")]
    mismatches = b["metrics"]["mismatches"]
    # Every mismatch is a tie of the requantize, and ties away from zero explains all of them and breaks
    # no match; ties upward does not (the negative ties). Other whole schemes that round ties away (gemmlowp's
    # rounding divide, TFLite's) explain them equally: the report lists them all, best first.
    labels = b["metrics"]["labels"]
    assert labels["tie"]["mismatched"] == mismatches > 0
    causes = {k["cause"]: k for k in b["causes"]}
    assert causes["requantize.rounding=rna"]["count"] == mismatches
    assert causes["requantize.rounding=rna"]["matches_broken"] == 0
    assert "requantize.rounding=rhu" not in causes or causes["requantize.rounding=rhu"]["count"] < mismatches
    assert b["causes"][0]["count"] == mismatches and b["causes"][0]["matches_broken"] == 0


def test_propagated_mode_finds_the_first_divergent_node(planted_run):
    [model] = planted_run["models"]
    runs = {r["name"]: r for r in model["runs"]}
    planted = runs["planted (fused)"]
    assert planted["status"] == "ok"
    assert planted["first_divergent"] == "conv2.fused"
    assert planted["first_divergent_cause"]  # the case's leading cause (see the isolated test)
    assert planted["output"]["differing"] > 0
    # The same backend's other convolution, and the reference backend everywhere, agree with the oracle.
    steps = {s["name"]: s for s in model["steps"]}
    conv1 = {r["run"]: r for r in steps["conv1.fused"]["runs"]}
    assert conv1["planted (fused)"]["differing"] == 0
    assert runs["cpu-ref (fused)"]["first_divergent"] == ""


def test_the_report_validates_against_the_schema(planted_run):
    jsonschema = pytest.importorskip("jsonschema")
    with open(ROOT / "reports" / "report.schema.json") as f:
        jsonschema.validate(planted_run, json.load(f))


def test_python_model_gives_the_cli_view(tmp_path):
    """qconform.model on the shipped QOperator digits model, with the inputs as a numpy array: the same
    node cases and runs as the CLI, and the oracle's top-1 over the test set as the generator's own numpy
    reference of the quantized network gives it (make_digits.py: 341 of 360 correct)."""
    models = ROOT / "cases" / "models"
    images = np.load(models / "digits_test_images.npy")
    result = qconform.model(models / "digits_cnn_qop.onnx", inputs={"image": images},
                            labels=models / "digits_test_labels.npy", backends=["cpu-ref"])
    report, view = result
    assert [c.name for c in report.cases] == ["image_QuantizeLinear", "conv1_QLinearConv", "conv2_QLinearConv",
                                              "fc_QLinearMatMul", "fc_QLinearAdd", "logits_DequantizeLinear"]
    assert {str(b.verdict) for c in report.cases for b in c.backends} == {"PASS"}
    assert view["format"] == "QOperator"
    assert view["oracle_top1"] == {"rows": 360, "correct": 341}
    [run] = view["runs"]
    assert run["name"] == "cpu-ref (graph)" and run["first_divergent"] == "" and run["output"]["differing"] == 0


def test_python_model_refuses_a_bad_input(tmp_path):
    models = ROOT / "cases" / "models"
    with pytest.raises(qconform.InputError, match="image"):
        qconform.model(models / "digits_cnn_qop.onnx", inputs={"image": np.zeros((2, 8, 8), np.float32)},
                       backends=["cpu-ref"])
