"""conv2d (a float input convolved with float weights, or with integer weights dequantized) against
values derived independently: hand arithmetic, and plain loops on exact fractions."""

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import qconform

ROOT = Path(__file__).resolve().parents[2]

X = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
W = np.array([1, 0, -1, 2, 1, 0, 0.5, 0, 0.25], dtype=np.float32).reshape(1, 1, 3, 3)


def test_float_3x3_with_padding_by_hand():
    # Padding 1: output (0, 0) reads x[kh - 1][kw - 1], so only the taps kh, kw >= 1 are inside:
    #   1*w[1][1] + 2*w[1][2] + 4*w[2][1] + 5*w[2][2] = 1 + 0 + 0 + 1.25 = 2.25, + bias 0.5 = 2.75.
    # Centre: 1 - 3 + 8 + 5 + 3.5 + 2.25 = 16.75, + 0.5 = 17.25. Corner (2, 2): 5*1 + 8*2 + 9*1 = 30, + 0.5.
    y, exact = qconform.conv2d(X, W, bias=np.array([0.5], np.float32), padding=[1, 1, 1, 1], exact=True)
    assert y.shape == (1, 1, 3, 3)
    assert y[0, 0, 0, 0] == 2.75 and y[0, 0, 1, 1] == 17.25 and y[0, 0, 2, 2] == 30.5
    assert exact[0, 0, 0, 0] == Fraction(11, 4)


def test_weight_only_per_channel_dequantizes_exactly():
    # Weights i8 [2, 1, 1, 1] = [3, -5], scale per output channel [0.5, 0.25], zero points [1, 0]:
    # w = [(3 - 1) * 0.5, -5 * 0.25] = [1, -1.25]. A 1x1 conv of x = [2, -4] (NCHW [1, 1, 1, 2]):
    # channel 0 = [2, -4], channel 1 = [-2.5, 5].
    x = np.array([2, -4], np.float32).reshape(1, 1, 1, 2)
    w = qconform.Weights(np.array([3, -5], np.int8).reshape(2, 1, 1, 1), scale=[0.5, 0.25], zero_point=[1, 0], axis=0)
    assert qconform.conv2d(x, w).tolist() == [[[[2.0, -4.0]], [[-2.5, 5.0]]]]


def test_rounds_once_into_f16():
    # 2049 lies half-way between the f16 values 2048 and 2050: ties to even gives 2048.
    y, labels = qconform.conv2d(np.full((1, 1, 1, 1), 2049, np.float32), np.ones((1, 1, 1, 1), np.float32),
                                dtype="f16", labels=True)
    assert y.dtype == np.float16 and float(y[0, 0, 0, 0]) == 2048.0 and labels[0, 0, 0, 0] == "tie"


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="integer weights need their parameters"):
        qconform.conv2d(X, np.ones((1, 1, 3, 3), np.int8))
    with pytest.raises(ValueError, match="float tensor"):
        qconform.conv2d(np.ones((1, 1, 3, 3), np.int8), W)
    with pytest.raises(ValueError):  # weights with 2 input channels against 1
        qconform.conv2d(X, np.ones((1, 2, 3, 3), np.float32))


def test_the_op_runs_on_cpu_ref():
    op = qconform.Conv2dOp(X, W, bias=np.array([0.5], np.float32), padding=[1, 1, 1, 1])
    assert op.kind == "conv2d"
    out = qconform.backend("cpu-ref").run(op)
    assert np.asarray(out).tolist() == qconform.conv2d(X, W, bias=np.array([0.5], np.float32),
                                                       padding=[1, 1, 1, 1]).tolist()


# ---- the QDQ 3x3 chain of cases/pipelines.json, by plain loops -------------------------------------

def f32_round(v: Fraction) -> float:
    """v correctly rounded (ties to even) to float32; v within the normal range or 0."""
    if v == 0:
        return 0.0
    sign, a = (-1, -v) if v < 0 else (1, v)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2^e <= a < 2^(e+2)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    m = a / Fraction(2) ** (e - 23)  # in [2^23, 2^24)
    q, r = divmod(m.numerator, m.denominator)
    twice = 2 * r
    if twice > m.denominator or (twice == m.denominator and q % 2 == 1):
        q += 1
    return sign * float(Fraction(q) * Fraction(2) ** (e - 23))


def conv3x3_pad1(x, w, term):
    """Σ term(x[n, c, h, w], w[oc, c, kh, kw]) over the taps of a 3x3 conv, padding 1, stride 1."""
    _, C, H, Wd = x.shape
    OC = w.shape[0]
    out = {}
    for oc in range(OC):
        for oh in range(H):
            for ow in range(Wd):
                s = 0
                for c in range(C):
                    for kh in range(3):
                        for kw in range(3):
                            h, v = oh - 1 + kh, ow - 1 + kw
                            if 0 <= h < H and 0 <= v < Wd:
                                s += term(x[0, c, h, v], w[oc, c, kh, kw])
                out[(oc, oh, ow)] = s
    return out


def test_qdq_3x3_chain_parts_in_a_counted_number_of_elements():
    cases = {c.name: c for c in qconform.load_suite(ROOT / "cases" / "pipelines.json").cases}
    x = np.asarray(cases["qdq3x3_s005_input_quantize"].op.main_input, np.float32)
    qw = np.asarray(cases["qdq3x3_s005_weight_dequantize"].op.main_input).astype(np.int64)
    s_x, s_w = np.float32(0.05), Fraction(1, 32)
    # ONNX QuantizeLinear: x / s in f32, ties to even, + 128, saturated to u8.
    qx = np.clip(np.rint(x / s_x).astype(np.int64) + 128, 0, 255)
    # The float lowering: DequantizeLinear rounds (q - 128) * s to f32; the conv is the exact sum of
    # the products, rounded once to f32.
    x_dq = (qx - 128).astype(np.float32) * s_x
    float_path = conv3x3_pad1(x_dq, qw, lambda a, b: Fraction(float(a)) * b * s_w)
    # The quantized lowering: the integer sum of (q - 128) * q_w, times f32(s_x * 2^-5) in f32 (s_x * 2^-5 and
    # every accumulator below 2^24 are exact in f32, so this is one rounding of the exact value).
    acc = conv3x3_pad1(qx - 128, qw, lambda a, b: int(a) * int(b))
    scale = Fraction(float(s_x)) * s_w
    differ = sum(f32_round(float_path[k]) != f32_round(acc[k] * scale) for k in acc)
    assert len(acc) == 75
    assert differ == 33
    # The power-of-two chain agrees everywhere: every product is an integer times 2^-9 (see its description).
    x2 = np.asarray(cases["qdq3x3_input_quantize"].op.main_input, np.float32)
    q2 = np.clip(np.rint(x2 / np.float32(0.0625)).astype(np.int64) + 128, 0, 255)
    w2 = np.asarray(cases["qconv3x3_then_dequantize"].op.weight.values).astype(np.int64)
    a2 = conv3x3_pad1(q2 - 128, w2, lambda a, b: int(a) * int(b))
    f2 = conv3x3_pad1((q2 - 128) * Fraction(1, 16), w2, lambda a, b: a * b * Fraction(1, 32))
    assert all(f32_round(f2[k]) == f32_round(a2[k] * Fraction(1, 512)) for k in a2)
