"""dequantize, requantize, qgemm, qconv2d, weight_only_gemm, pack_int4/unpack_int4 and
choose_qparams against values derived independently: numpy integer arithmetic, Python's exact
fractions, and Python transcriptions of the cited reference code."""

from fractions import Fraction

import numpy as np
import pytest

import qconform

F32_TENTH = Fraction(float(np.float32(0.1)))  # 0.1 rounded into f32, as scales are


# ---- dequantize ------------------------------------------------------------------------------


def test_dequantize_f32_is_the_exact_product_rounded_once():
    q = np.array([-128, -1, 0, 3, 127], dtype=np.int8)
    y, labels, exact = qconform.dequantize(q, 0.1, 3, labels=True, exact=True)
    assert y.dtype == np.float32
    for qi, yi, e in zip(q.tolist(), y.tolist(), exact):
        assert e == (qi - 3) * F32_TENTH
        # (q - zp) * s has at most 32 significant bits: exact in a double, then one rounding to f32.
        assert yi == np.float32(float(e))
    assert labels.tolist()[3] == "clear"  # exactly 0


def test_dequantize_to_half_formats():
    # ONNX: the product in the scale's format (f32), then cast to f16: two roundings, as numpy does.
    q = np.array([1, 7, -100], dtype=np.int8)
    y = qconform.dequantize(q, 0.1, 0, dtype="f16")
    assert y.dtype == np.float16
    assert y.tolist() == [np.float16(np.float32(qi) * np.float32(0.1)) for qi in q.tolist()]
    b = qconform.dequantize(q, 0.1, 0, dtype="bf16")
    assert b.dtype == np.uint16  # bf16 bits
    assert b.tolist() == qconform.float32_to_bf16(np.float32(q) * np.float32(0.1)).tolist()
    # A tie on the f16 grid: 1 + 2^-11 lies half-way between 1 and 1 + 2^-10.
    y, labels = qconform.dequantize(np.array([1], np.int8), 1 + 2**-11, dtype="f16", labels=True)
    assert y.tolist() == [1.0] and labels.tolist() == ["tie"]


def test_dequantize_int4_per_axis():
    q = np.array([[-8, 7], [1, -1]], dtype=np.int8)
    y = qconform.dequantize(q, [0.5, 0.25], [1, -2], axis=0, input_dtype="i4")
    assert y.tolist() == [[(-8 - 1) * 0.5, (7 - 1) * 0.5], [(1 + 2) * 0.25, (-1 + 2) * 0.25]]
    with pytest.raises(qconform.InputError, match="outside i4"):
        qconform.dequantize(np.array([9], np.int8), 1.0, input_dtype="i4")


# ---- requantize ------------------------------------------------------------------------------


def trunc_div(a, b):
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def gemmlowp_srdhm(a, b):
    """gemmlowp fixedpoint.h SaturatingRoundingDoublingHighMul, transcribed."""
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return trunc_div(ab + nudge, 1 << 31)


def test_requantize_ideal_and_gemmlowp():
    acc = np.array([5, -5, 3, 100, -7], dtype=np.int32)
    # s_in * s_w / s_out = 0.5 * 1 / 1 = 0.5 exactly.
    q, exact = qconform.requantize(acc, 0.5, 1.0, 1.0, 0, exact=True)
    assert list(exact) == [Fraction(int(a), 2) for a in acc]
    assert q.tolist() == [round(Fraction(int(a), 2)) for a in acc]  # ties to even: 2, -2, 2, 50, -4
    # gemmlowp: QuantizeMultiplier(0.5) = (2^30, shift 0); the result is SRDHM(acc, 2^30).
    g = qconform.requantize(acc, 0.5, 1.0, 1.0, 0, policy=qconform.Policy("onnx", requantize={"scheme": "gemmlowp_double"}))
    assert g.tolist() == [gemmlowp_srdhm(int(a), 1 << 30) for a in acc]
    assert g.tolist() != q.tolist()


def test_requantize_per_channel_zero_points_and_saturation():
    acc = np.array([[100, 100], [-1000, 1000]], dtype=np.int32)
    q, labels = qconform.requantize(acc, 1.0, [0.5, 0.25], 1.0, [10, -10], axis=1, labels=True)
    # column 0: 50 + 10, -500 + 10 -> -128; column 1: 25 - 10, 250 - 10 -> 127
    assert q.tolist() == [[60, 15], [-128, 127]]
    assert labels.tolist() == [["clear", "clear"], ["saturated", "saturated"]]


# ---- qgemm -----------------------------------------------------------------------------------

A = np.array([[130, 120, 128], [255, 0, 140]], dtype=np.uint8)  # [M=2, K=3], zero point 128
B = np.array([[1, -2], [3, 4], [-5, 6]], dtype=np.int8)  # [K=3, N=2]


def int_acc():
    return (A.astype(np.int64) - 128) @ B.astype(np.int64)


def test_qgemm_int32_is_the_integer_matmul():
    a = qconform.Activation(A, scale=0.5, zero_point=128)
    b = qconform.Weights(B, scale=[0.25, 0.125], axis=1)
    y = qconform.qgemm(a, b)
    assert y.dtype == np.int32
    assert y.tolist() == int_acc().tolist()
    # [N, K] weights give the same result.
    bt = qconform.Weights(np.ascontiguousarray(B.T), scale=[0.25, 0.125], axis=0)
    assert qconform.qgemm(a, bt, b_layout="n_by_k").tolist() == int_acc().tolist()


def test_qgemm_dequantized_per_channel_is_exact():
    a = qconform.Activation(A, scale=0.5, zero_point=128)
    b = qconform.Weights(B, scale=[0.25, 0.125], axis=1)
    y, exact = qconform.qgemm(a, b, output=qconform.Output.dequantized("f32"), exact=True)
    scales = [Fraction(1, 2) * Fraction(1, 4), Fraction(1, 2) * Fraction(1, 8)]
    want = [[scales[n] * int(v) for n, v in enumerate(row)] for row in int_acc().tolist()]
    assert exact.tolist() == want
    assert y.tolist() == [[float(v) for v in row] for row in want]  # dyadic: exact in f32


def test_qgemm_requantized_with_bias_and_relu():
    a = qconform.Activation(A, scale=0.5, zero_point=128)
    b = qconform.Weights(B, scale=[0.25, 0.125], axis=1)
    bias = np.array([3, -8], dtype=np.int32)
    out = qconform.Output.requantized("i8", scale=0.25, zero_point=-5, activation="relu")
    assert out.clamp == (-5, 127)  # relu: from the zero point (the real 0) up
    y = qconform.qgemm(a, b, bias=bias, output=out)
    s = [Fraction(1, 8), Fraction(1, 16)]
    expected = []
    for row in int_acc().tolist():
        expected.append([min(127, max(-5, round((v + int(bias[n])) * s[n] / Fraction(1, 4)) - 5)) for n, v in enumerate(row)])
    assert y.tolist() == expected


def test_qgemm_float_activations_and_packed_int4_blocked_weights():
    # f32 activations quantized to u8 with s = 0.25 (a power of two: x / s is exact), zp 128.
    x = np.array([[0.5, -1.25, 2.0]], dtype=np.float32)
    a_q = np.clip(np.rint(x / np.float32(0.25)) + 128, 0, 255).astype(np.int64)
    # i4 weights [K=3, N=2], blocked along K with block 2 (the last block is short), packed ONNX-style.
    w = np.array([[7, -8], [-3, 2], [5, 1]], dtype=np.int8)
    ws = [[0.5, 0.25], [1.0, 2.0]]  # [block, n]
    b = qconform.Weights(w, scale=np.array(ws), zero_point=0, axis=0, block_size=2, dtype="i4", packing="onnx")
    assert b.values.dtype == np.uint8 and b.values.shape == (3,)  # 6 nibbles in 3 bytes
    assert b.unpacked().tolist() == w.tolist()
    y, exact = qconform.qgemm(qconform.Activation(x, scale=0.25, zero_point=128), b,
                              output=qconform.Output.dequantized("f32"), exact=True)
    for n in range(2):
        v = Fraction(0)
        for blk, ks in enumerate([[0, 1], [2]]):
            acc = sum((int(a_q[0, k]) - 128) * int(w[k, n]) for k in ks)
            v += Fraction(1, 4) * Fraction(ws[blk][n]) * acc
        assert exact[0, n] == v
        assert y[0, n] == float(v)


def test_qgemm_dynamic_activation_uses_the_policy_rule():
    x = np.array([[-1.0, 0.5, 3.0]], dtype=np.float32)
    b = qconform.Weights(np.array([[1], [2], [3]], dtype=np.int8), scale=1.0)
    y = qconform.qgemm(qconform.Activation(x, quantize="dynamic_per_tensor"), b)
    scale, zp = onnx_dynamic_quantize_linear(x)
    a_q = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.int64)
    assert y.tolist() == ((a_q - zp) @ np.array([[1], [2], [3]])).tolist()


# ---- qconv2d ---------------------------------------------------------------------------------


def conv_reference(x, zx, w, pad, pad_value_is_zero_point):
    """A direct NCHW convolution of one channel in Python integers."""
    h, wd = x.shape
    kh, kw = w.shape
    xp = np.full((h + 2 * pad, wd + 2 * pad), zx if pad_value_is_zero_point else 0, dtype=np.int64)
    xp[pad:pad + h, pad:pad + wd] = x
    out = np.zeros((h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1), dtype=np.int64)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = int(((xp[i:i + kh, j:j + kw] - zx) * w).sum())
    return out


def test_qconv2d_padding_conventions():
    x = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]], dtype=np.uint8)
    w = np.array([[1, -1], [2, -2]], dtype=np.int8)
    act = qconform.Activation(x.reshape(1, 1, 3, 3), scale=1.0, zero_point=5)
    wt = qconform.Weights(w.reshape(1, 1, 2, 2), scale=1.0)
    y, labels, exact = qconform.qconv2d(act, wt, labels=True, exact=True)
    assert y.tolist() == [[conv_reference(x, 5, w, 0, True).tolist()]]
    assert exact.tolist() == y.tolist() and labels.tolist() == [[[["clear"] * 2] * 2]]  # int32: the sums themselves
    real = qconform.qconv2d(act, wt, padding=(1, 1, 1, 1))
    assert real.tolist() == [[conv_reference(x, 5, w, 1, True).tolist()]]
    quant = qconform.qconv2d(act, wt, padding=(1, 1, 1, 1), padding_value="quantized_zero")
    assert quant.tolist() == [[conv_reference(x, 5, w, 1, False).tolist()]]
    assert quant.tolist() != real.tolist()  # a padded tap is -5 * w instead of 0
    nhwc = qconform.qconv2d(qconform.Activation(x.reshape(1, 3, 3, 1), scale=1.0, zero_point=5), wt, layout="nhwc")
    assert nhwc.reshape(2, 2).tolist() == conv_reference(x, 5, w, 0, True).tolist()


# ---- weight-only GEMM ------------------------------------------------------------------------


def test_weight_only_gemm_is_the_exact_real_product():
    a = np.array([[0.5, -1.0, 0.1]], dtype=np.float32)
    w = np.array([[2, -4], [6, 8], [1, 1]], dtype=np.int8)
    b = qconform.Weights(w, scale=0.25, zero_point=1)
    bias = np.array([1.0, -0.5], dtype=np.float32)
    y, exact = qconform.weight_only_gemm(a, b, bias=bias, exact=True)
    for n in range(2):
        v = sum(Fraction(float(a[0, k])) * (int(w[k, n]) - 1) * Fraction(1, 4) for k in range(3))
        v += Fraction(float(bias[n]))
        assert exact[0, n] == v
        # Correctly rounded once into f32: a float64 holds v exactly here (few significant bits).
        assert y[0, n] == np.float32(float(v))


# ---- int4 packing ----------------------------------------------------------------------------


def test_pack_and_unpack_int4():
    # ONNX: element 0 in the low nibble; an odd count is padded with a 0 nibble.
    packed = qconform.pack_int4(np.array([1, -2, 3], dtype=np.int8))
    assert packed.dtype == np.uint8 and packed.tolist() == [0x01 | (0xE << 4), 0x03]
    assert qconform.unpack_int4(packed, [3]).tolist() == [1, -2, 3]
    # torchao: element 0 in the high nibble, u4.
    t = qconform.pack_int4(np.array([1, 2, 3, 4], dtype=np.uint8), packing="torchao")
    assert t.tolist() == [0x12, 0x34]
    assert qconform.unpack_int4(t, [4], dtype="u4", packing="torchao").tolist() == [1, 2, 3, 4]
    # MIGraphX: pairs along the last axis of each row.
    m = qconform.pack_int4(np.array([[1, 2], [3, 4]], dtype=np.int8), packing="migraphx")
    assert m.tolist() == [[0x21], [0x43]]
    # Out of range: ONNX rejects, ORT clips to 7.
    with pytest.raises(qconform.InputError):
        qconform.pack_int4(np.array([9, 0], dtype=np.int8))
    assert qconform.pack_int4(np.array([9, 0], dtype=np.int8), packing="ort").tolist() == [0x07]
    custom = qconform.Int4Packing(nibbles="high_first", odd="reject", out_of_range="wrap")
    assert qconform.pack_int4(np.array([17, 2], dtype=np.int16), packing=custom).tolist() == [0x12]
    with pytest.raises(qconform.InputError):
        qconform.pack_int4(np.array([1, 2, 3], dtype=np.int8), packing=custom)


# ---- parameter choice ------------------------------------------------------------------------


def onnx_dynamic_quantize_linear(x):
    """onnx/reference/ops/op_dynamic_quantize_linear.py, transcribed (u8)."""
    maxx = np.float32(np.maximum(0, np.max(x)))
    minx = np.float32(np.minimum(0, np.min(x)))
    scale = np.float32(1.0 if maxx == minx else (maxx - minx)) / np.float32(255)
    zp = np.float32(0) - minx / scale
    zp = max(np.float32(0), min(np.float32(255), zp))
    return scale, int(np.rint(zp))


def test_choose_qparams_matches_the_onnx_reference():
    for lo, hi in [(-1.0, 3.0), (0.25, 7.5), (-6.0, -0.5), (-0.1, 0.1)]:
        x = np.array([lo, hi], dtype=np.float32)
        scale, zp = onnx_dynamic_quantize_linear(x)
        c = qconform.choose_qparams(float(np.float32(lo)), float(np.float32(hi)))
        assert (c.scale, c.zero_point, c.qmin, c.qmax) == (float(scale), zp, 0, 255), (lo, hi)
        assert c.exact_scale == Fraction(float(scale))
        p = qconform.dynamic_qparams(x)
        assert p.scales == [float(scale)] and p.zero_points == [zp]
    assert "pytorch-dynamic" in qconform.qparams_presets
    with pytest.raises(qconform.InputError, match="unknown parameter-choice rule"):
        qconform.choose_qparams(0.0, 1.0, rule="nope")
