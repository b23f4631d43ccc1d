"""Formats, rounding modes, exact encode/decode, and policies built from presets and keyword
choices. Bit patterns are derived by hand from the IEEE layouts; rounding results from the
definitions of the modes."""

from fractions import Fraction

import numpy as np
import pytest

import qconform


def test_formats_describe_themselves():
    assert set(qconform.formats) >= {"f64", "f32", "f16", "bf16", "f8e4m3fn", "f8e5m2", "i32", "i8", "u8", "i4", "u4"}
    bf16 = qconform.format_info("bfloat16")
    assert (bf16.name, bf16.bits, bf16.exponent_bits, bf16.mantissa_bits, bf16.exponent_bias) == ("bf16", 16, 8, 7, 127)
    assert bf16.numpy_dtype == np.uint16
    assert qconform.format_info("i4").int_min == -8 and qconform.format_info("u4").int_max == 15
    assert qconform.format_info(np.float16).max_finite == 65504
    # e4m3fn: no inf, largest finite 448 = 1.75 * 2^8.
    e4 = qconform.format_info("f8e4m3fn")
    assert not e4.has_inf and e4.max_finite == 448
    assert str(qconform.DType.bf16) == "bf16"


def test_round_to_integer_under_every_mode():
    # (value, rne, rna, rhu, rhd, rtz, floor, ceil)
    table = [
        ("2.5", 2, 3, 3, 2, 2, 2, 3),
        ("-2.5", -2, -3, -2, -3, -2, -3, -2),
        ("3.5", 4, 4, 4, 3, 3, 3, 4),
        ("-0.4", 0, 0, 0, 0, 0, -1, 0),
        ("7/3", 2, 2, 2, 2, 2, 2, 3),
    ]
    modes = ["rne", "rna", "rhu", "rhd", "rtz", "floor", "ceil"]
    for value, *expected in table:
        assert [qconform.round_to_integer(Fraction(value), m) for m in modes] == expected, value
    assert [str(m) for m in qconform.rounding_modes] == modes


def test_encode_and_decode_are_exact():
    # f16 1 + 2^-10 is 0x3C01; 1 + 2^-11 is a tie between 0x3C00 and 0x3C01: even is 0x3C00.
    assert qconform.encode_float("f16", Fraction(1) + Fraction(1, 2**11)) == 0x3C00
    assert qconform.encode_float("f16", Fraction(1) + Fraction(1, 2**11), rounding="rna") == 0x3C01
    assert qconform.encode_float("f16", 70000) == 0x7C00  # overflow to inf
    assert qconform.encode_float("f16", 70000, saturate=True) == 0x7BFF  # 65504
    assert qconform.decode_float("f16", 0x0001) == Fraction(1, 2**24)  # smallest subnormal
    assert qconform.decode_float("bf16", 0x3F80) == 1
    assert qconform.decode_float("f32", 0x3DCCCCCD) == Fraction(13421773, 2**27)  # f32(0.1)
    assert qconform.decode_float("f32", 0x3DCCCCCD, exact="str") == "0.100000001490116119384765625"
    assert np.isnan(qconform.decode_float("f16", 0x7E00))
    assert qconform.decode_float("f16", 0xFC00) == float("-inf")


def test_bfloat16_helpers_round_once_to_nearest_even():
    # 1 + 2^-8 lies half-way between bf16 1 (0x3F80) and 1 + 2^-7 (0x3F81): to even, 0x3F80.
    # 1 + 3*2^-8 lies half-way between 0x3F81 and 0x3F82: to even, 0x3F82.
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -0.0, np.inf, 3.0], dtype=np.float32)
    bits = qconform.float32_to_bf16(x)
    assert bits.dtype == np.uint16
    assert bits.tolist() == [0x3F80, 0x3F82, 0x8000, 0x7F80, 0x4040]
    back = qconform.bf16_to_float32(bits)
    assert back.dtype == np.float32
    assert back.tolist()[:2] == [1.0, 1 + 2**-6]
    # f8 e4m3fn bits: 1.0 = 0x38, 448 = 0x7E.
    assert qconform.float_to_bits(np.array([1.0, 448.0]), "f8e4m3fn").tolist() == [0x38, 0x7E]


def test_spec_is_the_one_name_and_policy_its_older_spelling():
    assert qconform.Policy is qconform.Spec
    x = np.array([0.5, 1.5, 2.5], np.float32)
    # ties away (rna): 0.5 -> 1, 1.5 -> 2, 2.5 -> 3; the onnx default (ties to even) gives 0, 2, 2.
    rna = {"preset": "onnx", "rounding": "rna"}
    assert qconform.quantize(x, 1.0, spec=rna).tolist() == [1, 2, 3]
    assert qconform.quantize(x, 1.0, policy=rna).tolist() == [1, 2, 3]
    assert qconform.quantize(x, 1.0).tolist() == [0, 2, 2]
    with pytest.raises(TypeError, match="not both"):
        qconform.quantize(x, 1.0, spec="onnx", policy="onnx")
    op = qconform.QuantizeOp(x, scale=1.0, dtype="i8")
    case = qconform.Case("c", op, policy=rna)
    assert case.spec == case.policy == qconform.Spec("onnx", rounding="rna")
    assert qconform.Case("c", op, spec=rna).spec == case.spec


def test_presets_are_policies():
    onnx = qconform.presets["onnx"]
    assert isinstance(onnx, qconform.Policy)
    assert onnx.name == "onnx" and onnx.sources
    assert onnx.quantize.rounding == qconform.RoundingMode.rne
    assert str(onnx.quantize.order) == "div_then_add_int"
    assert str(onnx.quantize.compute) == "scale_type"
    assert onnx.accumulation == qconform.Accumulation.int32_wrap
    assert onnx.to_json() == "onnx"
    # ORT's CPU kernel takes another path for f16 inputs (an f32 division).
    ort = qconform.presets["ort-cpu"]
    assert ort.quantize_half_input is not None
    assert ort.quantize_for("f16") == ort.quantize_half_input
    assert ort.quantize_for("f32") == ort.quantize
    # On x86 without VNNI, MLAS pairs the raw u8 x s8 bytes, along (kh, kw, c) in convolutions.
    pairs = qconform.presets["ort-cpu@x86-vpmaddubsw"]
    assert pairs.accumulation == qconform.Accumulation.int16_pair_saturate
    assert pairs.zero_points == qconform.ZeroPointCorrection.compensate
    assert pairs.conv_depth_order == qconform.ConvDepthOrder.kh_kw_c
    assert ort.conv_depth_order == qconform.ConvDepthOrder.c_kh_kw
    assert pairs.to_json() == "ort-cpu@x86-vpmaddubsw" and pairs != ort
    assert pairs.pair_rule == qconform.PairRule.u8s8_whole_k and pairs.conv_accumulation is None
    # oneDNN 2.6 without VNNI: its GEMM driver's pairs (K blocks per ISA); convolutions exact.
    avx2 = qconform.presets["onednn@2.6-x86-avx2"]
    assert avx2.pair_rule == qconform.PairRule.x8s8_avx2_k_blocks
    assert avx2.accumulation == qconform.Accumulation.int16_pair_saturate
    assert avx2.conv_accumulation == qconform.Accumulation.int32_wrap
    assert qconform.presets["onednn@2.6-x86-avx512-core"].pair_rule == qconform.PairRule.x8s8_avx512_k_blocks


def test_policies_from_keyword_choices():
    p = qconform.Policy("onnx", rounding="rna", clamp=qconform.Clamp.float_before, narrow_range=True)
    assert p.quantize.rounding == qconform.RoundingMode.rna
    assert p.quantize.clamp == qconform.Clamp.float_before
    assert p.quantize.narrow_range
    assert p.name == "onnx+custom"
    assert p.to_json() == {"preset": "onnx", "rounding": "rna", "clamp": "float_before", "narrow_range": True}
    assert p != qconform.presets["onnx"]
    assert p == qconform.Policy(**p.to_json())

    q = p.with_(rounding="rne", requantize={"scheme": "gemmlowp_double"})
    assert q.quantize.rounding == qconform.RoundingMode.rne
    assert q.quantize.clamp == qconform.Clamp.float_before  # kept
    assert q.requantize.scheme == qconform.RequantizeScheme.gemmlowp_double
    # A scheme brings its source's defaults: gemmlowp forms the multiplier in f64.
    assert str(q.requantize.multiplier_format) == "f64"
    r = q.with_(requantize={"rounding": "rna"})  # merges into the requantize choices
    assert r.requantize.scheme == qconform.RequantizeScheme.gemmlowp_double
    assert r.requantize.rounding == qconform.RoundingMode.rna
    assert p.with_() == p

    d = qconform.Policy("onnx", dequantize={"order": "sub_float_then_mul", "compute": "f64"}, accumulation="int64")
    assert d.dequantize.order == qconform.DequantizeOrder.sub_float_then_mul
    assert d.dequantize.compute == "f64"
    assert d.accumulation == qconform.Accumulation.int64


def test_bad_policies_raise_input_errors():
    with pytest.raises(qconform.InputError, match="unknown preset 'nope'"):
        qconform.Policy("nope")
    with pytest.raises(qconform.InputError, match="spec.rounding': unknown value 'sideways'"):
        qconform.Policy("onnx", rounding="sideways")
    with pytest.raises(qconform.InputError, match="unknown field"):
        qconform.Policy("onnx", roundng="rne")
