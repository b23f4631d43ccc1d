"""The oracle's quantize from Python, checked against hand-derived values (ONNX
QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point)) and against Python's
fractions module, which computes the exact quotient independently of the C++ rationals."""

from fractions import Fraction

import numpy as np
import pytest

import qconform


def test_version_is_exposed():
    assert qconform.__version__.count(".") == 2


def test_onnx_preset_is_listed():
    assert "onnx" in qconform.presets


def test_ties_go_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], dtype=np.float32)
    q = qconform.quantize(x, [1.0], [0], dtype="i8")
    assert q.dtype == np.int8
    assert q.tolist() == [-2, -2, 0, 0, 2, 2]


def test_saturation_and_zero_point():
    # 127.5 -> 128 (even) -> saturates at 127; -1 + 255 = 254; 1 + 255 saturates.
    x = np.array([127.5, -1.0, 1.0], dtype=np.float32)
    assert qconform.quantize(x[:1], [1.0], [0]).tolist() == [127]
    assert qconform.quantize(x[1:], [1.0], [255], dtype="u8").tolist() == [254, 255]


def test_per_axis_matches_hand_values():
    x = np.array([[0.25, 0.75, -1.25], [0.25, 0.75, -1.25]], dtype=np.float32)
    q = qconform.quantize(x, [0.5, 0.25], [1, -1], axis=0)
    # row 0: 0.5->0, 1.5->2, -2.5->-2, +1; row 1: 1, 3, -5, -1
    assert q.tolist() == [[1, 3, -1], [0, 2, -6]]


def test_blocked_with_a_short_last_block():
    # Blocks of 2 along the last axis of length 5: scales 1, 0.5, 0.25 for columns {0,1}, {2,3}, {4}.
    x = np.array([[1.5, 2.5, 1.5, 2.5, 1.5]], dtype=np.float32)
    q = qconform.quantize(x, [1.0, 0.5, 0.25], 0, axis=1, block_size=2)
    # 1.5 -> 2, 2.5 -> 2, 3 -> 3, 5 -> 5, 6 -> 6
    assert q.tolist() == [[2, 2, 3, 5, 6]]


def test_labels():
    x = np.array([2.5, 2.2, 300.0], dtype=np.float32)
    q, labels = qconform.quantize(x, [1.0], [0], labels=True)
    assert labels.tolist() == ["tie", "clear", "saturated"]
    assert labels.shape == q.shape


def test_exact_values_are_the_quotient_in_the_scale_format():
    # ONNX divides in the scale's format (f32): the exact value handed to the rounding is
    # f32(x / s), which Fraction computes as the exact quotient rounded to f32 by numpy.
    x = np.array([1.0, 2.0, 0.3, -7.0], dtype=np.float32)
    s = np.float32(0.1)  # 0.1 is rounded into f32 as a case file would
    q, exact = qconform.quantize(x, 0.1, 0, exact=True)
    for xi, e, qi in zip(x, exact, q):
        quotient = np.float32(xi) / s  # one IEEE f32 division, exactly what the policy does
        assert e == Fraction(float(quotient))
        assert qi == round(Fraction(float(quotient)))  # Python's round is ties-to-even
    # The exact policy has no intermediate rounding: the exact rational x / s.
    _, exact = qconform.quantize(x, 0.1, 0, policy=qconform.Policy("onnx", compute="exact"), exact=True)
    assert list(exact) == [Fraction(float(xi)) / Fraction(float(s)) for xi in x]


def test_exact_values_as_text():
    _, exact = qconform.quantize(np.array([0.75, 3.0], dtype=np.float32), 0.5, 0, exact="str")
    assert exact.tolist() == ["1.5", "6"]


def test_policies_change_the_rounding_and_order():
    x = np.array([-2.5, -0.5, 0.5, 2.5], dtype=np.float32)
    assert qconform.quantize(x, 1.0, policy=qconform.Policy("onnx", rounding="rna")).tolist() == [-3, -1, 1, 3]
    assert qconform.quantize(x, 1.0, policy={"preset": "onnx", "rounding": "rtz"}).tolist() == [-2, 0, 0, 2]
    # Adding the zero point before rounding in the scale's format: round(x/s + zp) with zp = 1:
    # -2.5 + 1 = -1.5 -> -2; -0.5 + 1 = 0.5 -> 0; 1.5 -> 2; 3.5 -> 4.
    p = qconform.Policy("onnx", order="div_add_float")
    assert qconform.quantize(x, 1.0, 1, policy=p).tolist() == [-2, 0, 2, 4]
    # ...while ONNX adds it after: -2 + 1, 0 + 1, 0 + 1, 2 + 1.
    assert qconform.quantize(x, 1.0, 1).tolist() == [-1, 1, 1, 3]


def test_half_and_bfloat16_inputs():
    h = np.array([0.5, 1.5, -2.5, 65504.0], dtype=np.float16)
    assert qconform.quantize(h, 1.0, dtype="i16").tolist() == [0, 2, -2, 32767]
    # bf16 is carried as uint16 bits: 0x3FC0 = 1.5, 0xC020 = -2.5, 0x4120 = 10.
    b = np.array([0x3FC0, 0xC020, 0x4120], dtype=np.uint16)
    assert qconform.quantize(b, 1.0, input_dtype="bf16").tolist() == [2, -2, 10]
    # The documented helper makes the bits from float values.
    assert qconform.float32_to_bf16(np.array([1.5, -2.5, 10.0], np.float32)).tolist() == b.tolist()


def test_int4_outputs_are_int8_arrays():
    q = qconform.quantize(np.array([7.4, 8.0, -8.6, -9.0], dtype=np.float32), 1.0, dtype="i4")
    assert q.dtype == np.int8
    assert q.tolist() == [7, 7, -8, -8]
    u = qconform.quantize(np.array([15.0, 16.0, -1.0], dtype=np.float32), 1.0, dtype="u4")
    assert u.dtype == np.uint8 and u.tolist() == [15, 15, 0]


def test_outputs_own_their_memory_without_a_copy():
    q = qconform.quantize(np.zeros(8, dtype=np.float32), 1.0)
    assert q.base is not None  # a view of the result tensor, kept alive by its capsule
    q[0] = 5  # and writable: the array is the caller's
    assert q[0] == 5


def test_bad_input_raises_with_message():
    with pytest.raises(qconform.InputError, match="positive"):
        qconform.quantize(np.zeros(2, dtype=np.float32), [0.0], [0])
    with pytest.raises(qconform.InputError, match="outside i8"):
        qconform.quantize(np.zeros(2, dtype=np.float32), [1.0], [300])
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        qconform.quantize(np.zeros(2, dtype=np.float32), 1.0, policy="nope")
    with pytest.raises(qconform.InputError, match="not a value of bf16"):
        qconform.quantize(np.array([1.1], np.float32), 1.0, input_dtype="bf16")
    with pytest.raises(qconform.InputError, match="has no qconform format"):
        qconform.quantize(np.array([1, 2], dtype=np.int64), 1.0)


def test_sweep_quantize_equals_quantizing_every_value():
    # Every f16 bit pattern, materialized here and quantized by qconform.quantize, summed by numpy:
    # the streamed sweep must report the same counts, range and differences.
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    q, labels = qconform.quantize(x, 0.05, 3, "i8", spec="onnx", labels=True)
    q_ort = qconform.quantize(x, 0.05, 3, "i8", spec="ort-cpu")
    r = qconform.sweep_quantize(0.05, 3, "i8", spec="onnx", input_dtype="f16", vs="ort-cpu")
    assert r["inputs"] == 65536
    assert r["slow_path_elements"] == 0
    names, counts = np.unique(labels, return_counts=True)
    assert {k: v for k, v in r["labels"].items() if v} == dict(zip(names.tolist(), counts.tolist()))
    nan = np.isnan(x)  # open under onnx (NaN is unspecified there)
    assert r["open"] == int(nan.sum())
    assert r["output_range"] == (int(q[~nan].min()), int(q[~nan].max()))
    differ = np.flatnonzero((q != q_ort) & ~nan)
    assert r["vs"]["differ"] == len(differ)
    assert [d["bits"] for d in r["vs"]["first"]] == differ[:10].tolist()
    assert r["digest"] == qconform.sweep_quantize(0.05, 3, "i8", input_dtype="f16", threads=1)["digest"]


def test_sweep_quantize_refuses_what_it_cannot_sweep():
    with pytest.raises(qconform.InputError, match="sweep"):
        qconform.sweep_quantize(1.0, input_dtype="f64")
    with pytest.raises(qconform.InputError):
        qconform.sweep_quantize([1.0, 2.0], input_dtype="f16")


def test_labels_as_codes():
    # 0.5 and 1.5 are ties, 300 saturates i8, 0.25 is clear, NaN is special (ONNX leaves it open).
    x = np.array([0.5, 1.5, 300.0, 0.25, np.nan], dtype=np.float32)
    q, names = qconform.quantize(x, 1.0, 0, "i8", labels=True)
    q2, codes = qconform.quantize(x, 1.0, 0, "i8", labels="codes")
    assert names.tolist() == ["tie", "tie", "saturated", "clear", "special"]
    assert codes.dtype == np.uint8
    assert codes.tolist() == [int(qconform.Label.tie), int(qconform.Label.tie), int(qconform.Label.saturated),
                              int(qconform.Label.clear), int(qconform.Label.special)]
    assert [str(qconform.Label(c)) for c in codes.tolist()] == names.tolist()
    assert q.tolist()[:4] == q2.tolist()[:4]
    with pytest.raises(qconform.InputError, match="labels"):
        qconform.quantize(x, 1.0, 0, "i8", labels="colours")
