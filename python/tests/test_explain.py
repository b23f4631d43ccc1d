"""qconform.explain: one output element of a case, step by step, against values derived here from
the case file with Python's exact fractions."""

import json
import pathlib
from fractions import Fraction

import pytest

import qconform

ROOT = pathlib.Path(__file__).resolve().parents[2]
QGEMM = ROOT / "cases" / "qgemm.json"


def load_case(name):
    for c in qconform.load_suite(str(QGEMM)).cases:
        if c.name == name:
            return c
    raise AssertionError("no case " + name)


def round_half_even(v):
    floor = v.numerator // v.denominator
    rest = v - floor
    if rest != Fraction(1, 2):
        return floor + (1 if rest > Fraction(1, 2) else 0)
    return floor if floor % 2 == 0 else floor + 1


def spec_value(raw, row, col):
    """ONNX QLinearMatMul of one element, exactly: A quantized ties to even, the accumulator with its
    int32 bias, the exact multiplier, ties to even, + zp, the ReLU clamp at the zero point."""
    a, b = raw["a"], raw["b"]
    k = a["shape"][1]
    n = b["shape"][1]
    qa = [round_half_even(Fraction(x) / Fraction(a["scale"])) + a["zero_point"] for x in a["data"]]
    acc = sum((qa[row * k + p] - a["zero_point"]) * b["data"][p * n + col] for p in range(k))
    acc += raw["bias"]["data"][col]
    m = Fraction(a["scale"]) * Fraction(b["scale"][col]) / Fraction(raw["output"]["scale"])
    zp = raw["output"]["zero_point"]
    return acc, min(max(round_half_even(acc * m) + zp, zp), 127)


def test_explains_a_gemm_element_on_a_backend():
    name = "qlinear_matmul_per_channel_i8_relu"
    raw = next(c for c in json.loads(QGEMM.read_text())["cases"] if c["name"] == name)
    case = load_case(name)
    backend = qconform.backend("cpu-ref:tflite-reference")
    out = backend.run(case)
    acc, expected = spec_value(raw, 0, 0)
    r = qconform.explain(case, (0, 0), backend=backend)
    assert r["index"] == 0 and r["coords"] == [0, 0]
    assert r["spec"]["result"] == str(expected)
    assert r["backend"]["value"] == str(int(out[0, 0]))
    assert r["backend"]["matches_spec"] == (int(out[0, 0]) == expected)
    # acc = 53 (derived by hand in docs/oracle.md): 13.25 rounds once to 13 under the spec, while
    # gemmlowp rounds 26.5 up to 27 and then 13.5 away to 14: the backend's 14 + 3.
    assert acc == 53 and expected == 16 and int(out[0, 0]) == 17
    policy = r["backend_policy"]
    assert policy["reproduces_backend"] and policy["result"] == "17"
    assert policy["steps"][0]["exact"].startswith("52 ")  # the accumulator before the bias
    assert "'RoundingDivideByPOT' 13.5 -> 14" in r["parting"]
    assert "= the backend's value" in r["text"]


def test_explains_without_a_backend_and_by_flat_index():
    case = load_case("qlinear_matmul_per_channel_i8_relu")
    raw = next(c for c in json.loads(QGEMM.read_text())["cases"] if c["name"] == case.name)
    r = qconform.explain(case, 4)  # row 1, column 1 of [2, 3]
    assert r["coords"] == [1, 1]
    assert r["spec"]["result"] == str(spec_value(raw, 1, 1)[1])
    assert "backend" not in r


def test_an_index_outside_the_output_is_an_input_error():
    case = load_case("qlinear_matmul_per_channel_i8_relu")
    with pytest.raises(qconform.InputError, match="outside"):
        qconform.explain(case, 6)
    with pytest.raises(qconform.InputError, match="coordinates"):
        qconform.explain(case, (0, 0, 0))
