"""choose_qparams from Python: parameters from a profile under a named rule, and a case chain that binds
them into a GEMM's output. Expected pairs are worked out by hand from the cited code."""

import numpy as np
import pytest

import qconform


def test_onnx_rule_on_a_profile():
    # ONNX DynamicQuantizeLinear, u8: scale = (3 - (-1)) / 255 in f32, zp = round(1 / scale) = round(63.75) = 64.
    op = qconform.ChooseQParamsOp(np.array([0.5, -1, 3, 2], dtype=np.float32), "u8")
    assert op.kind == "choose_qparams"
    want = [float(np.float32(4) / np.float32(255)), 64.0]
    assert qconform.evaluate(op, "onnx").expected.tolist() == want
    assert qconform.backend("cpu-ref").run(op).tolist() == want


def test_glow_symmetric_per_axis():
    # Glow Symmetric on i8, row 0 = [-1, 127]: min becomes -128 * (127 / 127), scale 255 / 255 = 1, zp 0;
    # row 1 = [-2, 254]: scale 2, zp 0.
    op = qconform.ChooseQParamsOp(np.array([[-1, 127], [-2, 254]], dtype=np.float32), "i8", "glow-symmetric", axis=0)
    assert qconform.evaluate(op, "onnx").expected.tolist() == [[1.0, 0.0], [2.0, 0.0]]


def test_unknown_rule_is_an_input_error():
    with pytest.raises(qconform.InputError, match="no-such-rule"):
        qconform.ChooseQParamsOp(np.array([0.0, 1.0], dtype=np.float32), "u8", "no-such-rule")


def test_params_from_in_a_case_file(tmp_path):
    # glow-asymmetric on [-1, 3], i8: scale = 4 / 255 (double, stored as f32), zp from min = -128 + 63.75 = -64.25,
    # rounded half away: -64. acc = 2 * 4 = 8 at scale 0.5 * 1 is 4.0, over 4 / 255 = 255 -> 255 - 64 = 191 -> 127.
    text = """{"suite": "p", "cases": [
      {"name": "prof", "op": "choose_qparams", "input": {"dtype": "f32", "shape": [2], "data": [-1.0, 3.0]},
       "rule": "glow-asymmetric", "output_dtype": "i8"},
      {"name": "g", "op": "qgemm", "a": {"dtype": "i8", "shape": [1, 1], "data": [2], "scale": 0.5},
       "b": {"dtype": "i8", "shape": [1, 1], "data": [4], "scale": 1.0},
       "output": {"kind": "requantized", "dtype": "i8", "params_from": "prof"}}]}"""
    path = tmp_path / "p.json"
    path.write_text(text)
    cases = qconform.load_cases(str(path))
    assert cases[1].operands_from == {"output.params": "prof"}
    report = qconform.run_cases(str(path), ["cpu-ref"])
    assert [c.backends[0].verdict for c in report.cases] == [qconform.Verdict.PASS] * 2
