"""QuantizeLinear to float8 and DequantizeLinear from float8 (ONNX opset 19+) from Python: hand-derived
codes (OCP 8-bit floating point: E4M3 bias 7, 3 fraction bits, no inf, 448 = 0x7E, S.1111.111 NaN;
E5M2 bias 15, 2 fraction bits, inf 0x7C, 57344 = 0x7B), and a nearest-code search over exact
fractions written here, independent of the C++ rationals."""

import math
from fractions import Fraction

import numpy as np
import pytest

import qconform

LAYOUT = {"f8e4m3fn": (3, 7), "f8e5m2": (2, 15)}  # fraction bits, bias


def decode(fmt, code):
    """The value of a float8 code by the OCP formulas (None for NaN and inf)."""
    m, bias = LAYOUT[fmt]
    e, f = (code >> m) & ((1 << (7 - m)) - 1), code & ((1 << m) - 1)
    if fmt == "f8e4m3fn" and code & 0x7F == 0x7F or fmt == "f8e5m2" and e == 31:
        return None
    mag = Fraction(f, 1 << m) * Fraction(2) ** (1 - bias) if e == 0 else (1 + Fraction(f, 1 << m)) * Fraction(2) ** (e - bias)
    return -mag if code & 0x80 else mag


def nearest_code(fmt, v):
    """The finite code nearest to the fraction v, ties to the even fraction (in range only)."""
    best = None
    for code in range(256):
        d = decode(fmt, code)
        if d is None or (d == 0 and (code & 0x80) != (0x80 if v < 0 else 0)):
            continue
        key = (abs(d - v), code & 1)
        if best is None or key < best[0]:
            best = (key, code)
    return best[1]


def test_ties_subnormals_and_saturation_by_hand():
    # 1.0625: tie between 1.0 (0x38, even) and 1.125; 1.1875 -> 1.25 (0x3A); 3 * 2^-10 = 1.5 subnormal
    # quanta (2^-9) -> 2 quanta (0x02); 465 rounds past 448: saturate -> 0x7E, else NaN (0x7F).
    x = np.array([1.0625, 1.1875, 3 * 2.0**-10, 465.0, -math.inf], dtype=np.float32)
    q = qconform.quantize(x, 1.0, dtype="f8e4m3fn")
    assert q.dtype == np.uint8
    assert q.tolist() == [0x38, 0x3A, 0x02, 0x7E, 0xFE]
    nosat = qconform.quantize(x, 1.0, dtype="f8e4m3fn", saturate=False)
    assert nosat.tolist()[:3] == [0x38, 0x3A, 0x02]
    assert nosat[3] & 0x7F == 0x7F and nosat[4] & 0x7F == 0x7F  # NaN: e4m3fn has no inf


def test_e5m2_overflow_goes_to_inf_without_saturation():
    # 61440 is half-way between 57344 (fraction 11) and 2^16 (even, past the largest): inf unless saturated.
    x = np.array([61440.0, -61440.0, 61439.0], dtype=np.float32)
    assert qconform.quantize(x, 1.0, dtype="f8e5m2", saturate=False).tolist() == [0x7C, 0xFC, 0x7B]
    assert qconform.quantize(x, 1.0, dtype="f8e5m2").tolist() == [0x7B, 0xFB, 0x7B]


def test_f32_quotient_rounds_twice_under_onnx_but_once_exactly():
    # x = 1.0625 + 9 * 2^-23, s = 1 + 2^-20: x / s is just above the tie at 1.0625 (exactly: 1.125 =
    # 0x39), but its f32 quotient is 1.0625, which ties to 1.0 (0x38).
    x = np.array([1.0625 + 9 * 2.0**-23], dtype=np.float32)
    s = 1 + 2.0**-20
    assert qconform.quantize(x, s, dtype="f8e4m3fn").tolist() == [0x38]
    exact = qconform.quantize(x, s, dtype="f8e4m3fn", spec={"preset": "onnx", "compute": "exact"}, labels=True)
    assert exact[0].tolist() == [0x39]
    assert exact[1].tolist() == ["near_tie"]


def test_float8_zero_point_must_be_zero():
    with pytest.raises(ValueError, match="zero point must be 0"):
        qconform.quantize(np.ones(2, np.float32), 1.0, 1, dtype="f8e4m3fn")


@pytest.mark.parametrize("fmt", ["f8e4m3fn", "f8e5m2"])
def test_in_range_values_match_a_nearest_code_search(fmt):
    # Under onnx the quotient is x / s in f32 (numpy computes the same f32 division), then rounded to
    # the nearest float8 value.
    rng = np.random.default_rng(16)
    x = (rng.standard_normal(512) * 30).astype(np.float32)
    s = np.float32(0.37)
    ours = qconform.quantize(x, float(s), dtype=fmt)
    quotients = x / s
    assert ours.tolist() == [nearest_code(fmt, Fraction(float(v))) for v in quotients]


def test_dequantize_e4m3fn_codes():
    # ONNX's example: codes of [0, 0.5, 1, 448, -104] times 2 -> [0, 1, 2, 896, -208].
    codes = np.array([0x00, 0x30, 0x38, 0x7E, 0xED], dtype=np.uint8)
    y = qconform.dequantize(codes, 2.0, input_dtype="f8e4m3fn")
    assert y.tolist() == [0.0, 1.0, 2.0, 896.0, -208.0]
    # Every code times 0.5 (exact in f32); NaN codes stay NaN, e5m2's infinities stay infinite.
    for fmt in LAYOUT:
        every = np.arange(256, dtype=np.uint8)
        got = qconform.dequantize(every, 0.5, input_dtype=fmt)
        for code in range(256):
            d = decode(fmt, code)
            if d is None:
                assert math.isnan(got[code]) or math.isinf(got[code])
            else:
                assert Fraction(float(got[code])) == d / 2, (fmt, code)


def test_quantize_op_carries_saturate():
    op = qconform.QuantizeOp(np.array([500.0], np.float32), 1.0, dtype="f8e4m3fn", saturate=False)
    assert op.saturate is False


def test_the_docs_example():
    # docs/python.md "The oracle": 1.0625 ties to 1.0 (0x38), 465 saturates to 448 (0x7E); times 2.
    q = qconform.quantize(np.array([1.0625, 465.0], np.float32), 1.0, dtype="f8e4m3fn")
    assert q.tolist() == [0x38, 0x7E]
    assert qconform.dequantize(q, 2.0, input_dtype="f8e4m3fn").tolist() == [2.0, 896.0]
