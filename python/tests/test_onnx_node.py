"""qconform.onnx_node: ONNX backend node tests of the quantized ops as a case file.

On the installed ONNX test data (Debian's libonnx-testdata), the importer must take every
single-node test of the seven ops, skip the multi-node _expanded variants with the reason, write a
file the schema and the loader accept, which cpu-ref passes, and whose oracle outputs equal the
tests' expected outputs (the case format has no field for a literal expected output, so this check
lives here and in `--check`). The values asserted by hand come from the ONNX operator docs
(onnx/defs/quantization/defs.cc, onnx/defs/math/defs.cc and the backend test generators
onnx/backend/test/case/node/*.py), not from the importer's output. Synthetic tests written here
cover auto_pad and the skip reasons."""

import contextlib
import glob
import importlib.util
import io
import json
import pathlib
import sys

import numpy as np
import pytest

import qconform

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_DATA = pathlib.Path("/usr/share/libonnx-testdata/data/node")
SCHEMA = ROOT / "cases" / "case.schema.json"


def _module():
    """qconform.onnx_node from the build tree, or from the source tree while the build does not
    copy it yet (python/CMakeLists.txt lists the package's pure-Python files)."""
    try:
        from qconform import onnx_node

        return onnx_node
    except ImportError:
        spec = importlib.util.spec_from_file_location("qconform.onnx_node",
                                                      ROOT / "python" / "qconform" / "onnx_node.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["qconform.onnx_node"] = mod
        spec.loader.exec_module(mod)
        return mod


onnx_node = _module()

needs_data = pytest.mark.skipif(not NODE_DATA.is_dir(), reason=f"no ONNX node test data at {NODE_DATA} "
                                "(Debian package libonnx-testdata)")

# The test folders of the seven ops in the onnx 1.12 data, listed by hand from
# onnx/backend/test/case/node/{quantizelinear,dequantizelinear,qlinearmatmul,qlinearconv,
# matmulinteger,convinteger,dynamicquantizelinear}.py.
SINGLE_NODE = {
    "test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear", "test_dequantizelinear_axis",
    "test_qlinearmatmul_2D", "test_qlinearmatmul_3D", "test_qlinearconv", "test_matmulinteger",
    "test_basic_convinteger", "test_convinteger_with_padding", "test_convinteger_without_padding",
    "test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted",
    "test_dynamicquantizelinear_min_adjusted",
}
EXPANDED = {"test_dynamicquantizelinear_expanded", "test_dynamicquantizelinear_max_adjusted_expanded",
            "test_dynamicquantizelinear_min_adjusted_expanded"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """(main's stdout, the written file's path, import_tests' Result) for the installed data."""
    if not NODE_DATA.is_dir():
        pytest.skip(f"no ONNX node test data at {NODE_DATA}")
    out = tmp_path_factory.mktemp("onnx_node") / "onnx_node.json"
    dirs = sorted(glob.glob(str(NODE_DATA / "test_*")))
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = onnx_node.main(dirs + ["-o", str(out)])
    assert rc == 0
    return buf.getvalue(), err.getvalue(), out, onnx_node.import_tests(dirs)


@needs_data
def test_summary_and_skips(imported):
    stdout, stderr, _, res = imported
    # 14 single-node tests, DynamicQuantizeLinear's 3 giving two cases each: 17 cases.
    assert stdout.startswith("onnx_node: 14 imported, 3 skipped (17 cases written to ")
    assert {i.test for i in res.imported} == SINGLE_NODE
    assert {name for name, _ in res.skipped} == EXPANDED
    for name, reason in res.skipped:
        assert "a graph of" in reason and "nodes" in reason
        assert f"skip {name}: " in stderr


@needs_data
def test_schema_loader_and_cpu_ref(imported):
    jsonschema = pytest.importorskip("jsonschema")
    _, _, path, _ = imported
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    cases = qconform.load_cases(str(path))
    assert len(cases) == 17
    report = qconform.run_cases(str(path), ["cpu-ref"])
    verdicts = {c.name: [str(b.verdict) for b in c.backends] for c in report.cases}
    assert len(verdicts) == 17
    assert all(v == ["PASS"] for v in verdicts.values()), verdicts
    assert report.exit_code == 0


@needs_data
def test_oracle_equals_the_tests_expected_outputs(imported):
    # The case format cannot hold the expected output: compare the onnx oracle with it here.
    _, _, _, res = imported
    assert onnx_node.check(res.imported, "onnx") == []
    assert onnx_node.check(res.imported) == []  # each case's own spec, which is onnx


def _case(res, name):
    (item,) = [i for i in res.imported if i.case["name"] == name]
    return item


@needs_data
def test_quantizelinear_by_hand(imported):
    # ONNX QuantizeLinear docs example: x = [0, 2, 3, 1000, -254, -1000], scale 2, zp 128 (uint8):
    # 0 -> 128; 1 -> 129; 1.5 ties to even 2 -> 130; 500 -> 628 saturates to 255; -127 -> 1;
    # -500 -> -372 saturates to 0.
    item = _case(imported[3], "test_quantizelinear")
    c = item.case
    assert (c["op"], c["spec"], c["output_dtype"]) == ("quantize", "onnx", "u8")
    assert c["input"]["data"] == [0.0, 2.0, 3.0, 1000.0, -254.0, -1000.0]
    assert (c["scale"], c["zero_point"]) == (2.0, 128)
    want = np.array([128, 129, 130, 255, 1, 0], np.uint8)
    assert np.array_equal(item.expected, want)
    assert np.array_equal(qconform.evaluate(qconform.case_from_json(c)).expected, want)


@needs_data
def test_quantizelinear_axis_by_hand(imported):
    # The docs' axis example: x [1, 3, 3, 2], scales [2, 4, 5] and zero points [84, 24, 196] along
    # axis 1 (the attribute's default); every quotient is an integer: -162 / 2 + 84 = 3, ...,
    # 245 / 5 + 196 = 245, -485 / 5 + 196 = 99.
    c = _case(imported[3], "test_quantizelinear_axis").case
    assert (c["scale"], c["zero_point"], c["axis"]) == ([2.0, 4.0, 5.0], [84, 24, 196], 1)
    assert c["input"]["data"] == [-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44,
                                  245, -485, -960, -270, -375, -470]
    y = qconform.evaluate(qconform.case_from_json(c)).expected
    assert y.dtype == np.uint8 and y.shape == (1, 3, 3, 2)
    assert y.reshape(-1).tolist() == [3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102]


@needs_data
def test_dequantizelinear_by_hand(imported):
    # Docs: x = [0, 3, 128, 255], scale 2, zp 128 -> (x - 128) * 2 = [-256, -250, 0, 254].
    c = _case(imported[3], "test_dequantizelinear").case
    y = qconform.evaluate(qconform.case_from_json(c)).expected
    assert y.dtype == np.float32
    assert y.tolist() == [-256.0, -250.0, 0.0, 254.0]


@needs_data
def test_matmulinteger_by_hand(imported):
    # Docs: A = [[11, 7, 3], [10, 6, 2], [9, 5, 1], [8, 4, 0]], a_zero_point 12, B = [[1, 4], [2, 5],
    # [3, 6]], b_zero_point 0. Row 0: (-1, -5, -9) . (1, 2, 3) = -38 and . (4, 5, 6) = -83; each
    # next row adds (1, 1, 1): +6 and +15.
    c = _case(imported[3], "test_matmulinteger").case
    assert c["a"]["zero_point"] == 12 and c["b"]["zero_point"] == 0 and c["output"] == {"kind": "int32"}
    y = qconform.evaluate(qconform.case_from_json(c)).expected
    assert y.tolist() == [[-38, -83], [-44, -98], [-50, -113], [-56, -128]]


@needs_data
def test_convinteger_with_padding_by_hand(imported):
    # Docs: x = 2..10 (3x3), x_zero_point 1 so x - zp = 1..9, w = 2x2 ones, pads 1 on every side:
    # each output is the sum of a 2x2 window of [[1, 2, 3], [4, 5, 6], [7, 8, 9]] padded with 0.
    c = _case(imported[3], "test_convinteger_with_padding").case
    assert c["padding"] == [1, 1, 1, 1] and c["input"]["zero_point"] == 1
    y = qconform.evaluate(qconform.case_from_json(c)).expected
    assert y.reshape(4, 4).tolist() == [[1, 3, 5, 3], [5, 12, 16, 9], [11, 24, 28, 15], [7, 15, 17, 9]]


@needs_data
def test_qlinearmatmul_3d_batches_collapse(imported):
    # Both batches of the test's b are the 2-D example's b, so b is written once as [4, 3] and the
    # output keeps A's batch: [2, 2, 3], both batches the docs' [[168, 115, 255], [1, 66, 151]].
    c = _case(imported[3], "test_qlinearmatmul_3D").case
    assert c["b"]["shape"] == [4, 3] and c["a"]["shape"] == [2, 2, 4]
    y = qconform.evaluate(qconform.case_from_json(c)).expected
    assert y.tolist() == [[[168, 115, 255], [1, 66, 151]]] * 2


@needs_data
def test_dynamicquantizelinear_qparams_by_hand(imported):
    # Docs: x = [0, 2, -3, -2.5, 1.34, 0.5]: x_min -3, x_max 2, y_scale = f32(5 / 255),
    # y_zero_point = round(3 / y_scale) = 153, y = [153, 255, 0, 26, 221, 179]. The qparams case's
    # output is (y - 153) * y_scale, one rounding to f32 of the exact product.
    item = _case(imported[3], "test_dynamicquantizelinear.qparams")
    assert item.case["a"]["quantize"] == "dynamic_per_tensor" and item.case["b"]["shape"] == [6, 6]
    s = np.float32(5.0) / np.float32(255.0)
    y = np.array([153, 255, 0, 26, 221, 179])
    want = ((y - 153).astype(np.float64) * np.float64(s)).astype(np.float32).reshape(1, 6)
    got = qconform.evaluate(qconform.case_from_json(item.case)).expected
    assert got.dtype == np.float32 and np.array_equal(got, want)
    direct = qconform.evaluate(qconform.case_from_json(_case(imported[3], "test_dynamicquantizelinear").case))
    assert direct.expected.tolist() == y.tolist()


# ---- synthetic tests: auto_pad and the skip reasons ----------------------------------------------


def _write_test(root, name, node, inputs, outputs, opset=13):
    """An ONNX backend node test folder: model.onnx and test_data_set_0/{input,output}_*.pb."""
    d = root / name
    (d / "test_data_set_0").mkdir(parents=True)

    def info(n, a):
        # onnx >= 1.13 has helper.np_dtype_to_tensor_dtype; 1.12 only the mapping table.
        to_elem = (getattr(helper, "np_dtype_to_tensor_dtype", None)
                   or onnx.mapping.NP_TYPE_TO_TENSOR_TYPE.__getitem__)
        return helper.make_tensor_value_info(n, to_elem(a.dtype), list(a.shape))

    graph = helper.make_graph([node], name, [info(n, a) for n, a in inputs.items()],
                              [info(n, a) for n, a in outputs.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, str(d / "model.onnx"))
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(tensors.items()):
            pb = numpy_helper.from_array(a, n).SerializeToString()
            (d / "test_data_set_0" / f"{kind}_{i}.pb").write_bytes(pb)
    return d


def test_auto_pad_same_upper_and_lower(tmp_path):
    # x - zp = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], w = 2x2 ones, stride 1: SAME keeps 3x3, so the
    # total padding is (3 - 1) + 2 - 3 = 1 per axis; SAME_UPPER puts it after (bottom, right),
    # SAME_LOWER before (top, left). Each output is a padded 2x2 window sum.
    x = np.arange(2, 11, dtype=np.uint8).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.uint8)
    zp = np.array(1, np.uint8)
    upper = np.array([[12, 16, 9], [24, 28, 15], [15, 17, 9]], np.int32).reshape(1, 1, 3, 3)
    lower = np.array([[1, 3, 5], [5, 12, 16], [11, 24, 28]], np.int32).reshape(1, 1, 3, 3)
    for mode, y in (("SAME_UPPER", upper), ("SAME_LOWER", lower)):
        node = helper.make_node("ConvInteger", ["x", "w", "x_zero_point"], ["y"], auto_pad=mode)
        _write_test(tmp_path, "test_" + mode.lower(), node, {"x": x, "w": w, "x_zero_point": zp}, {"y": y}, 10)
    res = onnx_node.import_tests([str(p) for p in tmp_path.iterdir()])
    assert not res.skipped and len(res.imported) == 2
    pads = {i.test: i.case["padding"] for i in res.imported}
    assert pads == {"test_same_upper": [0, 0, 1, 1], "test_same_lower": [1, 1, 0, 0]}
    assert onnx_node.check(res.imported) == []


def test_inexpressible_tests_are_skipped_with_reasons(tmp_path, capsys):
    # A 1-D ConvInteger (qconv2d is 2-D), a MatMulInteger whose batched B differs per batch (qgemm's
    # B is one matrix), an attribute the case format has no field for, and a test of another op.
    x1 = np.array([[[1, 2, 3]]], np.uint8)
    w1 = np.array([[[1]]], np.uint8)
    _write_test(tmp_path, "test_conv1d", helper.make_node("ConvInteger", ["x", "w"], ["y"]),
                {"x": x1, "w": w1}, {"y": x1.astype(np.int32)}, 10)
    a = np.ones((2, 1, 2), np.uint8)
    b = np.stack([np.eye(2, dtype=np.uint8), 2 * np.eye(2, dtype=np.uint8)])
    _write_test(tmp_path, "test_batched_b", helper.make_node("MatMulInteger", ["A", "B"], ["Y"]),
                {"A": a, "B": b}, {"Y": np.matmul(a.astype(np.int32), b.astype(np.int32))}, 10)
    xq = np.array([0.5], np.float32)
    _write_test(tmp_path, "test_quantize_saturate",
                helper.make_node("QuantizeLinear", ["x", "s"], ["y"], saturate=1),
                {"x": xq, "s": np.array(1.0, np.float32)}, {"y": np.array([0], np.uint8)})
    _write_test(tmp_path, "test_relu", helper.make_node("Relu", ["x"], ["y"]), {"x": xq}, {"y": xq})
    out = tmp_path / "out.json"
    assert onnx_node.main([str(p) for p in sorted(tmp_path.iterdir()) if p.is_dir()] + ["-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("onnx_node: 0 imported, 3 skipped (0 cases written to ")
    assert "1 tests of other ops ignored" in captured.out
    assert "skip test_conv1d: a 1-D convolution" in captured.err
    assert "skip test_batched_b: B: a batched B [2, 2, 2] with distinct batches" in captured.err
    assert "skip test_quantize_saturate: attribute(s) saturate of QuantizeLinear" in captured.err
    assert json.loads(out.read_text())["cases"] == []
