"""PyTorch 1.13 (Debian python3-torch, no FBGEMM) as peer backends: the exact recipes torch follows.

Each recipe below is re-implemented in numpy from the library's source, operation by operation in
float32 (numpy float32 arithmetic rounds each operation to nearest even, as SSE does), and compared
bit for bit with torch on >= 10^5 discriminating elements per op, and with values derived by hand.
The backends (python/qconform/peers/torch_quant.py) only call torch; nothing here is copied from
their output.

Sources (pytorch/pytorch v1.13.1, intel/ideep tag pytorch-rls-v2.6.0 = 02b17c57, the ideep torch
1.13 builds with):
  quantize   aten/src/ATen/native/quantized/AffineQuantizerBase.cpp::quantize_val (the non-FBGEMM
             branch; QuantizedOpKernels.cpp::quantize_tensor_per_tensor_affine_cpu and the
             per-channel kernel call it per element on x86 without FBGEMM):
               float inv_scale = 1.0f / static_cast<float>(scale);
               qvalue = static_cast<int64_t>(zero_point + Round(value * inv_scale));  // Round = nearbyint
               qvalue = max(qvalue, qmin); qvalue = min(qvalue, qmax);
             `zero_point + float` is a float addition; the int64 cast of NaN, +-inf or |t| >= 2^63 is
             cvttss2si's "integer indefinite" 0x8000000000000000, which the max() turns into qmin.
  dequantize AffineQuantizerBase.cpp::dequantize_val (non-FBGEMM branch):
               return static_cast<float>(scale) * (value.val_ - static_cast<int32_t>(zero_point));
             an int32 subtraction (wraps), its conversion to float (rounds above 2^24), an f32 multiply.
             (Older releases computed (static_cast<float>(q) - zero_point) * scale; measurement refutes
             that for 1.13: q = 16777217, zp = 1 gives 16777216, not 16777215.)
  linear     onednn: aten/src/ATen/native/quantized/cpu/qlinear.cpp::PackedLinearWeightsOnednn::
             apply_impl passes ideep the reciprocal scales 1.0/input_scale, 1.0/output_scale and (from
             qlinear_prepack.cpp) 1.0/weight scale, each stored as float; ideep matmul.hpp::do_prepare
             forms op_scale = dst_scale / (src_scale * weights_scale) and bias_scale = src_scale *
             weights_scale in float; oneDNN 2.6 int8 matmul: (float(acc) + bias*bias_scale) *
             op_scale + dst_zp in f32, saturate in float, round to nearest even.
             qnnpack: aten/src/ATen/native/quantized/cpu/qnnpack_utils.h::
             generate_requantization_scales: (weight_scale * input_scale) * (1.f / output_scale) in
             float; the q8gemm SSE2 kernel: _mm_cvtps_epi32(float(acc) * scale) (RNE; a product >= 2^31
             gives INT32_MIN), packs to int16 with saturation, + zero point (saturating), packus to
             u8, clamp. The float bias is quantize_per_tensor(bias, weight_scale * input_scale, 0,
             qint32) (qlinear.cpp::PackedLinearWeightsQnnp::apply_impl), i.e. quantize_val above.
  conv2d     the same output stages (ideep conv.hpp uses utils::compute_scales, the same formulas;
             qconv.cpp's qnnpack path uses generate_requantization_scales).
"""

import os
import pathlib
import subprocess
from fractions import Fraction

import numpy as np
import pytest

import qconform

torch = pytest.importorskip("torch")

from qconform.peers.torch_quant import TorchOnednn, TorchQnnpack  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
f32 = np.float32
ENGINES = [e for e in ("onednn", "qnnpack") if e in torch.backends.quantized.supported_engines]
RANGES = {"u8": (0, 255), "i8": (-128, 127), "i32": (-(2**31), 2**31 - 1)}
TORCH_Q = {"u8": torch.quint8, "i8": torch.qint8, "i32": torch.qint32}
INT64_MIN = np.iinfo(np.int64).min


# ---- The recipes, in numpy ------------------------------------------------------------------------


def cvtt_int64(t):
    """static_cast<int64_t>(float) on x86-64 (cvttss2si): truncation, and 0x8000000000000000 for
    NaN, +-inf and anything outside [-2^63, 2^63)."""
    t = np.asarray(t, dtype=f32)
    ok = np.isfinite(t) & (t < f32(2.0**63)) & (t >= f32(-(2.0**63)))
    out = np.full(t.shape, INT64_MIN, dtype=np.int64)
    out[ok] = np.trunc(t[ok]).astype(np.int64)
    return out


def recipe_quantize(x, scale, zero_point, dtype):
    """quantize_val: clamp(int64(f32(zp) + nearbyintf(x * (1.0f / s))), qmin, qmax)."""
    x = np.asarray(x, dtype=f32)
    inv = f32(1) / np.asarray(scale, dtype=f32)  # 1.0f / static_cast<float>(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        product = (x * inv).astype(f32)  # value * inv_scale, one f32 rounding
        rounded = np.rint(product)  # std::nearbyint, ties to even
        t = (np.asarray(zero_point, dtype=np.int64).astype(f32) + rounded).astype(f32)  # int64 + float -> float
    lo, hi = RANGES[dtype]
    return np.clip(cvtt_int64(t), lo, hi)


def recipe_dequantize(q, scale, zero_point):
    """dequantize_val: static_cast<float>(scale) * (value.val_ - static_cast<int32_t>(zero_point)):
    an int32 subtraction (wrapping), the difference converted to float, one f32 multiply."""
    d = (np.asarray(q).astype(np.int64) - np.asarray(zero_point, dtype=np.int64)).astype(np.int32)  # wraps
    return (np.asarray(scale, dtype=f32) * d.astype(f32)).astype(f32)


def recipe_dequantize_per_channel(q, scale, zero_point):
    """QuantizedOpKernels.cpp::dequantize_per_channel_affine_kernel:
    (static_cast<float>(q) - zero_point) * scale: float(q) and float(zp) (each rounded), an f32
    subtraction, then the product with the double scale (exact), returned as float."""
    d = (np.asarray(q).astype(f32) - np.asarray(zero_point, dtype=np.int64).astype(f32)).astype(f32)
    return (d.astype(np.float64) * np.asarray(scale, dtype=np.float64)).astype(f32)


def onednn_multipliers(s_in, s_w, s_out):
    """ideep do_prepare with torch's reciprocal scales: (op_scale, bias_scale) per channel."""
    r_in = f32(1.0 / np.float64(s_in))  # ideep::scale_t(1, 1.0/input_scale): double division, stored as float
    r_w = (1.0 / np.asarray(s_w, dtype=np.float64)).astype(f32)
    r_out = f32(1.0 / np.float64(s_out))
    bias_scale = (r_in * r_w).astype(f32)
    return (r_out / bias_scale).astype(f32), bias_scale


def recipe_requant_onednn(acc, s_in, s_w, s_out, zo, bias=None, relu=False):
    """oneDNN 2.6 int8 epilogue: v = (f32(acc) + f32(b * bias_scale)) * op_scale; relu; + zp in f32;
    saturate in float to [0, 255]; round to nearest even."""
    m, bias_scale = onednn_multipliers(s_in, s_w, s_out)
    v = np.asarray(acc).astype(f32)
    if bias is not None:
        v = (v + (np.asarray(bias, dtype=f32) * bias_scale).astype(f32)).astype(f32)
    v = (v * m).astype(f32)
    if relu:
        v = np.maximum(v, f32(0))
    v = (v + f32(zo)).astype(f32)
    return np.rint(np.clip(v, f32(0), f32(255))).astype(np.int64)


def qnnpack_multiplier(s_in, s_w, s_out):
    """generate_requantization_scales: (weight_scale * input_scale) * (1.f / output_scale) in float."""
    return ((np.asarray(s_w, dtype=f32) * f32(s_in)).astype(f32) * (f32(1) / f32(s_out))).astype(f32)


def qnnpack_bias(bias, s_in, s_w):
    """quantize_per_tensor / per_channel(bias, s_w * s_in, 0, qint32): the scale is a double
    product, rounded to float inside quantize_val."""
    scale = (np.asarray(s_w, dtype=np.float64) * np.float64(s_in)).astype(f32)
    return recipe_quantize(bias, scale, 0, "i32")


def recipe_requant_qnnpack(acc, s_in, s_w, s_out, zo, bias=None, relu=False):
    """QNNPACK fp32 requantization: cvtps2dq(f32(acc) * scale) (RNE; INT32_MIN when the product is
    >= 2^31), int16 saturation, + zp, u8 saturation, clamp to [zp, 255] for ReLU."""
    acc = np.asarray(acc, dtype=np.int64)
    if bias is not None:
        acc = (acc + qnnpack_bias(bias, s_in, s_w)).astype(np.int32).astype(np.int64)  # int32 add
    p = (acc.astype(f32) * qnnpack_multiplier(s_in, s_w, s_out)).astype(f32)
    inrange = (p < f32(2.0**31)) & (p >= f32(-(2.0**31)))
    v = np.where(inrange, np.rint(np.where(inrange, p, 0)), -(2.0**31)).astype(np.int64)
    v = np.clip(np.clip(v, -32768, 32767) + zo, -32768, 32767)  # packs_epi32, adds_epi16
    return np.clip(v, zo if relu else 0, 255)  # packus_epi16, then min/max with output_min/max


RECIPES = {"onednn": recipe_requant_onednn, "qnnpack": recipe_requant_qnnpack}


# ---- Alternatives the recipes must be told apart from ---------------------------------------------


def alt_requant(acc, s_in, s_w, s_out, zo, multiplier, zp_float):
    """A float-multiplier requantize with a given multiplier and zero-point placement."""
    v = (np.asarray(acc).astype(f32) * multiplier).astype(f32)
    if zp_float:
        return np.rint(np.clip((v + f32(zo)).astype(f32), f32(0), f32(255))).astype(np.int64)
    return np.clip(np.rint(v).astype(np.int64) + zo, 0, 255)


def alternatives(s_in, s_w, s_out, zo):
    """Each candidate rule that a preset expresses today, as acc -> output."""
    s_in, s_w, s_out = f32(s_in), np.asarray(s_w, dtype=f32), f32(s_out)
    ltr = ((s_in * s_w).astype(f32) / s_out).astype(f32)  # pytorch-cpu: (s_in*s_w)/s_out in f32
    recip = onednn_multipliers(s_in, s_w, s_out)[0]
    qnnp = qnnpack_multiplier(s_in, s_w, s_out)

    def per_op(acc):  # the onednn preset: ((f(acc) * s_in) * s_w) / s_out + zp in f32
        v = (np.asarray(acc).astype(f32) * s_in).astype(f32)
        v = ((v * s_w).astype(f32) / s_out).astype(f32)
        return np.rint(np.clip((v + f32(zo)).astype(f32), f32(0), f32(255))).astype(np.int64)

    return {
        "pytorch-cpu (left_to_right, zp int)": lambda a: alt_requant(a, s_in, s_w, s_out, zo, ltr, False),
        "left_to_right, zp float": lambda a: alt_requant(a, s_in, s_w, s_out, zo, ltr, True),
        "onednn preset (per_op, zp float)": per_op,
        "reciprocal multiplier, zp int": lambda a: alt_requant(a, s_in, s_w, s_out, zo, recip, False),
        "qnnpack multiplier, zp float": lambda a: alt_requant(a, s_in, s_w, s_out, zo, qnnp, True),
    }


# ---- Torch calls (direct, independent of the backend classes) -------------------------------------


def torch_linear(engine, a_u8, za, s_in, w_nk, s_w, zw, s_out, zo, bias=None, relu=False):
    torch.backends.quantized.engine = engine
    qa = torch._make_per_tensor_quantized_tensor(torch.from_numpy(a_u8), float(s_in), int(za))
    if np.ndim(s_w) == 0:
        qw = torch._make_per_tensor_quantized_tensor(torch.from_numpy(w_nk), float(s_w), int(zw))
    else:
        qw = torch._make_per_channel_quantized_tensor(
            torch.from_numpy(w_nk),
            torch.tensor(np.asarray(s_w, dtype=np.float64)),
            torch.tensor(np.broadcast_to(zw, np.shape(s_w)).astype(np.int64)),
            0,
        )
    packed = torch.ops.quantized.linear_prepack(qw, None if bias is None else torch.from_numpy(bias))
    fn = torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear
    return fn(qa, packed, float(s_out), int(zo)).int_repr().numpy().astype(np.int64)


# ---- Inputs ---------------------------------------------------------------------------------------


def f32_scale(rng, lo, hi):
    return f32(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def quantize_inputs(rng, scale, zp, dtype, n_random=2000):
    """Ties k + 1/2 of x * (1/s) and of x / s, one ulp either side, random values, the range ends,
    and specials (NaN, +-inf, +-0, subnormals, huge values)."""
    lo, hi = RANGES[dtype]
    span = min(hi - lo, 4000)
    k = rng.integers(lo - zp - 3, lo - zp + span + 3, size=600).astype(np.float64) + 0.5
    inv = np.float64(f32(1) / f32(scale))
    ties = np.concatenate([(k / inv).astype(f32), (k * np.float64(scale)).astype(f32)])
    near = np.concatenate([np.nextafter(ties, f32(np.inf)), np.nextafter(ties, f32(-np.inf))])
    rand = (rng.uniform(lo - zp - 10, hi - zp + 10, n_random) * np.float64(scale)).astype(f32)
    specials = np.array(
        [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-39, -1e-39, 3e38, -3e38, 1e19, -1e19,
         9e18, -9e18, 2.0**63, 2.0**62, 2.0**31, -(2.0**31), 2.0**24 + 2, 2.0**25, 3.0e9],
        dtype=f32,
    )
    huge = (specials[10:] * f32(scale)).astype(f32)  # x * (1/s) lands on the huge values
    return np.concatenate([ties, near, rand, specials, huge]).astype(f32)


def discriminating_accs(column_rules, rows, rng, acc_lo, acc_hi):
    """Per column, accumulators where the column's recipe and some alternative disagree, the range
    ends, then random fill. column_rules[n] = (recipe, alternatives, multiplier, zero point).
    Every rule computes the real acc * m (below 2^9 here) with at most eight f32 roundings,
    multipliers included, so within 8 * 2^-24 * 2^9 = 2^-12 of it: two rules' outputs can differ
    only where acc * m lies within 2^-12 of a half-integer k + 1/2 - zo (the saturation edges are
    such points too). The search visits every accumulator within 2^-10 / m + 2 of those points,
    four times that distance, instead of the whole unsaturated range."""
    out = np.empty((rows, len(column_rules)), dtype=np.int64)
    for n, (recipe, alts, m, zo) in enumerate(column_rules):
        lo = max(acc_lo, int(np.floor((-zo - 2) / float(m))))
        hi = min(acc_hi, int(np.ceil((258 - zo) / float(m))))
        reach = int(np.ceil(2.0**-10 / float(m))) + 2
        centers = np.round((np.arange(-zo - 2, 259 - zo) + 0.5) / float(m)).astype(np.int64)
        cand = np.unique(np.clip(centers[:, None] + np.arange(-reach, reach + 1), lo, hi))
        mine = recipe(cand)
        differs = np.zeros(len(cand), dtype=bool)
        for alt in alts:
            differs |= mine != alt(cand)
        picked = rng.permutation(cand[differs])[: rows // 2]
        pool = np.concatenate([picked, [acc_lo, acc_hi, 0, 1, -1]])
        fill = rng.integers(lo, hi + 1, size=rows - len(pool))
        out[:, n] = np.concatenate([pool, fill])
    return out


SPREAD = 32  # inputs with weight 127 per column: accumulators up to ~127 * 32 * 255 (about 2^20)


def acc_range(za):
    """The accumulators rows_for_accs can reach with activation zero point za."""
    return -(127 * SPREAD + 1) * za, (127 * SPREAD + 1) * (255 - za)


def rows_for_accs(accs, za):
    """Activations and block-diagonal weights whose int32 accumulators are `accs`: column n reads
    SPREAD inputs with weight 127 and one with weight 1, acc = 127 * sum(d_j) + e, d = a - za."""
    rows, n_cols = accs.shape
    lo, hi = -za, 255 - za
    width = SPREAD + 1
    big = np.clip(np.round(accs / 127.0), SPREAD * lo, SPREAD * hi).astype(np.int64)
    e = accs - 127 * big
    big = np.where(e > hi, big + 1, np.where(e < lo, big - 1, big))
    big = np.clip(big, SPREAD * lo, SPREAD * hi)
    e = accs - 127 * big
    ok = (e >= lo) & (e <= hi)
    e = np.clip(e, lo, hi)
    # Spread `big` over SPREAD inputs in [lo, hi]: q each, and the remainder one by one.
    base = np.floor_divide(big, SPREAD)
    rem = big - base * SPREAD
    d = np.repeat(base[..., None], SPREAD, axis=-1) + (np.arange(SPREAD) < rem[..., None])
    a = np.empty((rows, n_cols, width), dtype=np.int64)
    a[..., :SPREAD] = d + za
    a[..., SPREAD] = e + za
    w = np.zeros((n_cols, n_cols * width), dtype=np.int8)
    for n in range(n_cols):
        w[n, n * width:n * width + SPREAD] = 127
        w[n, n * width + SPREAD] = 1
    return a.reshape(rows, n_cols * width).astype(np.uint8), w, ok


# ---- Hand-derived values --------------------------------------------------------------------------


def test_quantize_hand_derived():
    q = lambda x, s, zp, dt: torch.quantize_per_tensor(  # noqa: E731
        torch.tensor([x], dtype=torch.float32), s, zp, TORCH_Q[dt]).int_repr().item()
    # fl(1/0.1f) = 10 exactly (1/0.1f = 9.99999985, within half an ulp 2^-21 of 10); 0.35f * 10 =
    # 3.49999994 rounds in f32 to 3.5 (half ulp 2^-23 = 1.2e-7 > 6e-8); nearbyint(3.5) = 4. The
    # ONNX division 0.35f / 0.1f = 3.4999999 rounds to 3.
    assert q(0.35, 0.1, 0, "i8") == 4
    assert q(2.5, 1.0, 0, "i8") == 2 and q(3.5, 1.0, 0, "i8") == 4  # ties to even
    # NaN, +inf, -inf: the int64 cast yields INT64_MIN, then max(qmin): qmin (the preset says qmax).
    for dt in ("u8", "i8", "i32"):
        for x in (float("nan"), float("inf"), float("-inf")):
            assert q(x, 1.0, 0, dt) == RANGES[dt][0]
    # 1e19f = 9999999980506447872 >= 2^63: qmin; 9e18f < 2^63: saturates to qmax.
    assert q(1e19, 1.0, 0, "i32") == -(2**31) and q(9e18, 1.0, 0, "i32") == 2**31 - 1
    # qint32: the zero point is added in float: 2^25 + 1 -> 2^25 (ulp 4, tie to even), 2^25 + 3 -> 2^25 + 4.
    assert q(2.0**25, 1.0, 1, "i32") == 2**25 and q(2.0**25, 1.0, 3, "i32") == 2**25 + 4


def test_dequantize_hand_derived():
    def dq(v, s, zp):
        t = torch._make_per_tensor_quantized_tensor(torch.tensor([v], dtype=torch.int32), s, zp)
        return t.dequantize().item()

    # 16777217 - 0 converts to float 16777216 (ties to even), times 3 = 50331648 exactly (the exact
    # product 50331651 would round to 50331652).
    assert dq(16777217, 3.0, 0) == 50331648.0
    # The float subtraction of older releases would give 16777216 - 1 = 16777215; the int one 16777216.
    assert dq(16777217, 1.0, 1) == 16777216.0
    # int32 wrap: -2^31 - 1 wraps to 2^31 - 1, converted to float 2^31.
    assert dq(-(2**31), 1.0, 1) == 2.0**31
    # (3 - 1) * 0.1f: 0.2000000030 rounds to f32 0.2f.
    assert dq(3, 0.1, 1) == float(f32(0.2))


def rne_f32(v):
    """A positive normal rational rounded to float32 (24-bit significand, ties to even), exactly."""
    v = Fraction(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    unit = Fraction(2) ** (e - 23)
    q, r = divmod(v / unit, 1)
    q = int(q) + (1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and int(q) % 2) else 0)
    return q * unit


def f32_bits(v):
    return int(np.asarray(float(v), dtype=f32).view(np.uint32))


@pytest.mark.parametrize("engine", ENGINES)
def test_linear_hand_derived(engine):
    # s_in = 0.1f, s_w = 0.03f, s_out = 0.03f: the ideal multiplier is s_in = 0.1f, and the three
    # float recipes form it one ulp apart.
    s_in, s_w, s_out = (Fraction(float(f32(v))) for v in (0.1, 0.03, 0.03))
    ltr = rne_f32(rne_f32(s_in * s_w) / s_out)  # pytorch-cpu: (s_in*s_w)/s_out
    r_in, r_w, r_out = rne_f32(1 / s_in), rne_f32(1 / s_w), rne_f32(1 / s_out)
    onednn = rne_f32(r_out / rne_f32(r_in * r_w))  # ideep: dst_scale / (src_scale * weights_scale)
    qnnp = rne_f32(rne_f32(s_w * s_in) * r_out)  # (weight_scale * input_scale) * (1.f / output_scale)
    assert (f32_bits(ltr), f32_bits(onednn), f32_bits(qnnp)) == (0x3DCCCCCD, 0x3DCCCCCC, 0x3DCCCCCE)
    # Output zero point 7. acc = 35 (ideal 3.5 + 7):
    #   pytorch-cpu  35 * 0x3DCCCCCD = 3.5000000522 -> f32 3.5 (within 1.2e-7) -> rint 4, + 7 = 11
    #   onednn       35 * 0x3DCCCCCC = 3.4999998659 -> f32 3.49999976; + 7 in f32 = 10.49999976 -> 10.5
    #                (f32 spacing 9.5e-7 there) -> rint 10
    #   qnnpack      35 * 0x3DCCCCCE = 3.5000003 -> rint 4, + 7 = 11
    # acc = 25 (ideal 2.5 + 7): pytorch-cpu 2.5 -> 2, + 7 = 9; onednn 2.49999988 + 7 -> 9.5 -> 10;
    #   qnnpack 2.5000002 -> 3, + 7 = 10.
    want = {"onednn": {35: 10, 25: 10}, "qnnpack": {35: 11, 25: 10}}[engine]
    preset = {35: 11, 25: 9}
    for acc, q in want.items():
        if engine == "onednn":  # zero point added in f32 before the rounding
            assert round(rne_f32(rne_f32(acc * onednn) + 7)) == q  # Fraction round(): ties to even
        else:
            assert round(rne_f32(acc * qnnp)) + 7 == q
        assert round(rne_f32(acc * ltr)) + 7 == preset[acc]
        a = np.array([[acc]], np.uint8)
        w = np.array([[1]], np.int8)
        got = torch_linear(engine, a, 0, float(f32(0.1)), w, float(f32(0.03)), 0, float(f32(0.03)), 7)
        assert got[0, 0] == q
        pol = qconform.qgemm(qconform.Activation(a, scale=0.1, zero_point=0), qconform.Weights(w.T.copy(), scale=0.03),
                             output=qconform.Output.requantized("u8", 0.03, 7), policy="pytorch-cpu")
        assert int(pol[0, 0]) == preset[acc]


@pytest.mark.skipif("qnnpack" not in ENGINES, reason="no qnnpack engine")
def test_qnnpack_product_overflow_hand_derived():
    # acc = 255 * 127 * 2 = 64770, multiplier 1e5: 6.5e9 >= 2^31, cvtps2dq gives INT32_MIN, the
    # int16 pack -32768, + 0, packus 0 -- where every preset (and onednn) saturates to 255.
    a = np.array([[255, 255]], np.uint8)
    w = np.array([[127, 127]], np.int8)
    assert torch_linear("qnnpack", a, 0, 1.0, w, 1.0, 0, 1e-5, 0)[0, 0] == 0
    if "onednn" in ENGINES:
        assert torch_linear("onednn", a, 0, 1.0, w, 1.0, 0, 1e-5, 0)[0, 0] == 255


# ---- Recipes against torch at scale --------------------------------------------------------------


def test_quantize_recipe_matches_torch():
    rng = np.random.default_rng(14)
    total = 0
    preset_mismatch_reasons = set()
    scales = [f32(0.1), f32(0.3), f32(3.0), f32(7.0), f32(1 / 3), f32(2**-7), f32(1e-3), f32(6.1e-5), f32(1e-40)]
    scales += [f32_scale(rng, 1e-4, 1e2) for _ in range(12)]
    for dt in ("u8", "i8", "i32"):
        lo, hi = RANGES[dt]
        for s in scales:
            for zp in {lo, hi, 0 if lo < 0 else 128, int(rng.integers(max(lo, -1000), min(hi, 1000)))}:
                x = quantize_inputs(rng, s, zp, dt)
                got = torch.quantize_per_tensor(torch.from_numpy(x), float(s), zp, TORCH_Q[dt]).int_repr().numpy()
                want = recipe_quantize(x, s, zp, dt)
                bad = np.flatnonzero(got.astype(np.int64) != want)
                assert len(bad) == 0, (
                    f"{dt} s={s!r} zp={zp}: x={x[bad[:5]]} torch={got[bad[:5]]} recipe={want[bad[:5]]}")
                total += x.size
                # Where the pytorch-cpu preset differs from torch: only NaN / inf / overflow elements
                # (and, for qint32, the float zero-point addition).
                pre = qconform.quantize(x, scale=float(s), zero_point=zp, dtype=dt, policy="pytorch-cpu")
                diff = np.flatnonzero(pre.astype(np.int64) != want)
                for i in diff:
                    t = f32(f32(zp) + np.rint(f32(x[i] * (f32(1) / s))))
                    if not np.isfinite(t) or abs(float(t)) >= 2.0**63:
                        preset_mismatch_reasons.add("nan/inf/2^63 -> qmin")
                    else:
                        assert dt == "i32", f"{dt} s={s} zp={zp} x={x[i]!r}: preset {pre[i]} torch {want[i]}"
                        preset_mismatch_reasons.add("i32 float zero-point add")
    # Per channel: the same quantize_val per element with the channel's (double) scale.
    for dt in ("u8", "i8", "i32"):
        lo, hi = RANGES[dt]
        s = np.array([f32_scale(rng, 1e-3, 10) for _ in range(8)], dtype=f32)
        zp = np.array([lo, hi] + list(rng.integers(max(lo, -500), min(hi, 500), 6)), dtype=np.int64)
        x = np.stack([quantize_inputs(rng, s[c], int(zp[c]), dt, n_random=500)[:3000] for c in range(8)], axis=1)
        got = torch.quantize_per_channel(
            torch.from_numpy(x), torch.tensor(s.astype(np.float64)), torch.tensor(zp), 1, TORCH_Q[dt]
        ).int_repr().numpy()
        assert np.array_equal(got.astype(np.int64), recipe_quantize(x, s[None, :], zp[None, :], dt))
        total += x.size
    assert total >= 100_000, total
    assert preset_mismatch_reasons == {"nan/inf/2^63 -> qmin", "i32 float zero-point add"}


def test_dequantize_recipe_matches_torch():
    rng = np.random.default_rng(15)
    total = 0
    i32_diff_from_preset = 0
    for dt, np_t in (("u8", np.uint8), ("i8", np.int8), ("i32", np.int32)):
        lo, hi = RANGES[dt]
        for _ in range(12):
            s = f32_scale(rng, 1e-6, 1e3)
            zp = int(rng.choice([lo, hi, 0 if lo < 0 else 128, int(rng.integers(max(lo, -10**6), min(hi, 10**6)))]))
            if dt == "i32":  # values where float(q) and float(q) - zp round: around 2^24..2^31
                big = rng.integers(-(2**31), 2**31 - 1, 6000)
                mid = (2 ** rng.integers(24, 31, 6000)) + rng.integers(-8, 8, 6000)
                q = np.concatenate([big, mid, -mid, np.arange(-3000, 3000)]).clip(lo, hi).astype(np_t)
            else:
                q = np.tile(np.arange(lo, hi + 1), 40).astype(np_t)
            t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), float(s), zp)
            got = t.dequantize().numpy()
            want = recipe_dequantize(q, s, zp)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (dt, s, zp)
            pre = qconform.dequantize(q, scale=float(s), zero_point=zp, dtype="f32", policy="pytorch-cpu")
            if dt == "i32":
                # The preset (q - zp exact, converted to f32, times s in f32) parts from torch only
                # where the int32 subtraction wraps.
                differs = pre.view(np.uint32) != want.view(np.uint32)
                wraps = np.abs(q.astype(np.int64) - zp) > 2**31 - 1
                assert np.array_equal(differs, wraps & (q.astype(np.int64) - zp != -(2**31))), (s, zp)
                i32_diff_from_preset += int(differs.sum())
            else:
                assert np.array_equal(pre.view(np.uint32), want.view(np.uint32))
            total += q.size
    # Per channel (dequantize_per_channel_affine_kernel): another formula, float subtraction.
    for np_t, lo, hi in ((np.int8, -128, 127), (np.int32, -(2**31), 2**31 - 1)):
        s = np.array([f32_scale(rng, 1e-3, 10) for _ in range(16)], dtype=f32)
        zp = rng.integers(max(lo, -(10**6)), min(hi, 10**6), 16)
        q = rng.integers(lo, hi, (4000, 16), endpoint=True).astype(np_t)
        t = torch._make_per_channel_quantized_tensor(torch.from_numpy(q), torch.tensor(s.astype(np.float64)),
                                                     torch.tensor(zp), 1)
        want = recipe_dequantize_per_channel(q, s[None, :], zp[None, :])
        assert np.array_equal(t.dequantize().numpy().view(np.uint32), want.view(np.uint32)), np_t
        # The existing order sub_float_then_mul (f32) reproduces it; the preset's sub_int_then_mul
        # parts from it where float(q) or float(q) - float(zp) rounds (int32 only).
        pol = qconform.Policy("pytorch-cpu", dequantize={"order": "sub_float_then_mul", "compute": "f32"})
        alt = qconform.dequantize(q, scale=s, zero_point=zp, axis=1, dtype="f32", policy=pol)
        assert np.array_equal(alt.view(np.uint32), want.view(np.uint32)), np_t
        pre = qconform.dequantize(q, scale=s, zero_point=zp, axis=1, dtype="f32", policy="pytorch-cpu")
        assert (int((pre.view(np.uint32) != want.view(np.uint32)).sum()) > 0) == (np_t is np.int32)
        total += q.size
    assert total >= 100_000 and i32_diff_from_preset > 0


def linear_configs(rng, n):
    """Scales whose three float multipliers (pytorch-cpu's, onednn's, qnnpack's) differ pairwise in
    every column, so that the accumulators can tell the recipes apart. Few random draws qualify, so
    each config is the first of a batch of draws that does."""
    batch, n_cols = 4096, 4
    for i in range(n):
        per_channel = i % 3 == 1
        while True:
            s_in = np.exp(rng.uniform(np.log(1e-3), np.log(1.0), size=(batch, 1))).astype(f32)
            s_w = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), size=(batch, n_cols if per_channel else 1)))
            s_w = np.broadcast_to(s_w.astype(f32), (batch, n_cols))
            # Unsaturated accumulators up to about 2^20: m around 255 / 2^20 .. 255 / 2^17.
            spread = np.exp(rng.uniform(np.log(2.0**12), np.log(2.0**14), size=(batch, 1)))
            s_out = (s_in.astype(np.float64) * s_w.max(axis=1, keepdims=True) * spread).astype(f32)
            ltr = ((s_in * s_w).astype(f32) / s_out).astype(f32)
            on, qn = onednn_multipliers(s_in, s_w, s_out)[0], qnnpack_multiplier(s_in, s_w, s_out)
            good = np.flatnonzero(np.all((ltr != on) & (ltr != qn) & (on != qn), axis=1))
            if len(good):
                k = good[0]
                break
        za, zo = int(rng.integers(0, 256)), int(rng.integers(0, 256))
        yield per_channel, n_cols, f32(s_in[k, 0]), np.array(s_w[k], f32), f32(s_out[k, 0]), za, zo


@pytest.mark.parametrize("engine", ENGINES)
def test_linear_recipe_matches_torch(engine):
    rng = np.random.default_rng(16 if engine == "onednn" else 17)
    recipe = RECIPES[engine]
    total, discriminating = 0, {}
    for per_channel, n_cols, s_in, s_w, s_out, za, zo in linear_configs(rng, 50):
        rules = []
        for n in range(n_cols):
            alts = alternatives(s_in, s_w[n], s_out, zo)
            rules.append((lambda a, sw=s_w[n]: recipe(a, s_in, sw, s_out, zo), list(alts.values()),
                          ((s_in * s_w[n]).astype(f32) / s_out), zo))
        accs = discriminating_accs(rules, 512, rng, *acc_range(za))
        a, w, ok = rows_for_accs(accs, za)
        w_scale = s_w if per_channel else s_w[0]
        got = torch_linear(engine, a, za, s_in, w, w_scale, 0, s_out, zo)
        acc = (a.astype(np.int64) - za) @ w.astype(np.int64).T
        assert np.array_equal(acc[ok], accs[ok])
        want = recipe(acc, s_in, s_w, s_out, zo)
        bad = np.argwhere(got != want)
        assert len(bad) == 0, (
            f"s={s_in!r},{s_w!r},{s_out!r} zo={zo}: acc={acc[tuple(bad[0])]} torch={got[tuple(bad[0])]} "
            f"recipe={want[tuple(bad[0])]}")
        total += got.size
        for name, alt in alternatives(s_in, s_w, s_out, zo).items():
            discriminating[name] = discriminating.get(name, 0) + int((alt(acc) != got).sum())
    assert total >= 100_000, total
    # Every alternative a preset expresses today is refuted on many elements.
    assert min(discriminating.values()) >= 100, discriminating
    print(engine, total, discriminating)


@pytest.mark.parametrize("engine", ENGINES)
def test_linear_bias_relu_and_weight_zero_points(engine):
    rng = np.random.default_rng(18)
    recipe = RECIPES[engine]
    total = 0
    for i in range(60):
        per_channel = i % 2 == 1
        M, K, N = 128, 16, 16
        s_in = f32_scale(rng, 1e-3, 1.0)
        s_w = np.array([f32_scale(rng, 1e-3, 0.1) for _ in range(N)], f32) if per_channel else f32_scale(rng, 1e-3, 0.1)
        s_out = f32(float(s_in) * float(np.max(s_w)) * np.exp(rng.uniform(np.log(100), np.log(3000))))
        za, zo = int(rng.integers(0, 256)), int(rng.integers(0, 256))
        zw = 0 if engine == "onednn" else int(rng.integers(-20, 21))  # onednn rejects weight zero points
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        w = rng.integers(-128 + 20, 128 - 20, (N, K)).astype(np.int8)
        bias = (rng.standard_normal(N) * float(s_out) * 60).astype(f32) if i % 3 else None
        relu = i % 4 == 0
        got = torch_linear(engine, a, za, s_in, w, s_w, zw, s_out, zo, bias=bias, relu=relu)
        acc = (a.astype(np.int64) - za) @ (w.astype(np.int64) - zw).T
        want = recipe(acc, s_in, s_w, s_out, zo, bias=bias, relu=relu)
        assert np.array_equal(got, want), (i, np.argwhere(got != want)[:3])
        total += got.size
    assert total >= 100_000


@pytest.mark.parametrize("engine", ENGINES)
def test_conv2d_recipe_matches_torch(engine):
    rng = np.random.default_rng(19)
    recipe = RECIPES[engine]
    total = 0
    for i in range(12):
        n, c, h, wd, oc, kh = 2, 8, 12, 12, 8, 3
        groups = 2 if i % 3 == 2 else 1
        stride, pad, dil = (1 + i % 2), (i % 2), 1
        s_in = f32_scale(rng, 1e-3, 1.0)
        s_w = np.array([f32_scale(rng, 1e-3, 0.1) for _ in range(oc)], f32) if i % 2 else f32_scale(rng, 1e-3, 0.1)
        s_out = f32(float(s_in) * float(np.max(s_w)) * np.exp(rng.uniform(np.log(100), np.log(3000))))
        za, zo = int(rng.integers(0, 256)), int(rng.integers(0, 256))
        x = rng.integers(0, 256, (n, c, h, wd)).astype(np.uint8)
        w = rng.integers(-128, 128, (oc, c // groups, kh, kh)).astype(np.int8)
        bias = (rng.standard_normal(oc) * float(s_out) * 60).astype(f32) if i % 3 else None
        torch.backends.quantized.engine = engine
        qx = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), float(s_in), za)
        if np.ndim(s_w):
            qw = torch._make_per_channel_quantized_tensor(torch.from_numpy(w), torch.tensor(s_w.astype(np.float64)),
                                                          torch.zeros(oc, dtype=torch.int64), 0)
        else:
            qw = torch._make_per_tensor_quantized_tensor(torch.from_numpy(w), float(s_w), 0)
        packed = torch.ops.quantized.conv2d_prepack(qw, None if bias is None else torch.from_numpy(bias),
                                                    [stride, stride], [pad, pad], [dil, dil], groups)
        got = torch.ops.quantized.conv2d(qx, packed, float(s_out), zo).int_repr().numpy().astype(np.int64)
        # Exact accumulators: padding holds the input zero point (real zero), so pad (x - za) with 0.
        xd = np.pad(x.astype(np.int64) - za, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh = (h + 2 * pad - kh) // stride + 1
        acc = np.zeros((n, oc, oh, oh), np.int64)
        cg, og = c // groups, oc // groups
        for o in range(oc):
            g = o // og
            for ky in range(kh):
                for kx in range(kh):
                    patch = xd[:, g * cg:(g + 1) * cg, ky:ky + stride * oh:stride, kx:kx + stride * oh:stride]
                    acc[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, ky, kx].astype(np.int64))
        sw_b = s_w[None, :, None, None] if np.ndim(s_w) else s_w
        b_b = None if bias is None else bias[None, :, None, None]
        want = recipe(acc, s_in, sw_b, s_out, zo, bias=b_b)
        assert np.array_equal(got, want), (i, np.argwhere(got != want)[:3])
        total += got.size
    assert total >= 10_000


# ---- The backends ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [TorchOnednn, TorchQnnpack])
def test_backend_facts_and_reasons(cls):
    b = cls()
    if not b.availability():
        pytest.skip(str(b.availability()))
    facts = b.facts()
    assert facts["version"] == torch.__version__ and facts["engine"] == cls.ENGINE
    assert facts["isa"] in ("avx512_vnni", "avx_vnni", "avx2", "none", "unknown")
    x16 = qconform.QuantizeOp(np.zeros(4, np.float16), scale=1.0, dtype="i8")
    ok, reason = b.supports(x16)
    assert not ok and "float32" in reason
    a = qconform.Activation(np.zeros((2, 3), np.uint8), scale=0.5, zero_point=3)
    w = qconform.Weights(np.ones((3, 2), np.int8), scale=0.25)
    op = qconform.QGemmOp(a, w, bias=np.array([1, 2], np.int32), output=qconform.Output.requantized("u8", 0.5, 10))
    ok, reason = b.supports(op)
    assert not ok and "float32 bias" in reason


@pytest.mark.parametrize("cls", [TorchOnednn, TorchQnnpack])
def test_backend_runs_match_recipes(cls):
    b = cls()
    if not b.availability():
        pytest.skip(str(b.availability()))
    rng = np.random.default_rng(20)
    x = quantize_inputs(rng, f32(0.1), 3, "i8")
    op = qconform.QuantizeOp(x, scale=0.1, zero_point=3, dtype="i8")
    assert np.array_equal(b.run(op).astype(np.int64), recipe_quantize(x, f32(0.1), 3, "i8"))
    # qgemm, k_by_n weights per output channel, float bias, through the backend.
    a = rng.integers(0, 256, (16, 8)).astype(np.uint8)
    w = rng.integers(-100, 100, (8, 4)).astype(np.int8)
    s_w = np.array([0.01, 0.02, 0.03, 0.04], f32)
    bias = np.array([0.5, -1.25, 2.0, 0.0], f32)
    op = qconform.QGemmOp(qconform.Activation(a, scale=0.05, zero_point=100),
                          qconform.Weights(w, scale=s_w, axis=1), bias=bias,
                          output=qconform.Output.requantized("u8", 0.2, 120))
    assert b.supports(op) is True or b.supports(op) == (True, "") or bool(b.supports(op))
    acc = (a.astype(np.int64) - 100) @ w.astype(np.int64)
    want = RECIPES[cls.ENGINE](acc, f32(0.05), s_w, f32(0.2), 120, bias=bias)
    assert np.array_equal(b.run(op).astype(np.int64), want)


def test_cli_py_route():
    """`--backend py:qconform.peers.torch_quant:CLASS` through the CLI, when the build tree holds the
    peers package."""
    build_py = ROOT / "build" / "python"
    if not (build_py / "qconform" / "peers" / "torch_quant.py").exists():
        pytest.skip("the build tree's qconform package has no peers/torch_quant.py (rebuild)")
    env = dict(os.environ, PYTHONPATH=f"{build_py}:{ROOT / 'python'}")
    r = subprocess.run(
        [str(ROOT / "build" / "cli" / "qconform"), "run", "--backend", "cpu-ref",
         "--backend", "py:qconform.peers.torch_quant:TorchOnednn", str(ROOT / "cases" / "dequantize_linear.json"),
         "-q", "-o", "/tmp/qconform-torch-cli"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif("onednn" not in ENGINES, reason="no onednn engine")
def test_onednn_primitive_cache_ignores_zero_points():
    """ideep 2.6's primitive cache key omits the zero points: torch itself answers a repeated
    call with another zero point from the first call's primitive; the backend runs such a call in a
    fresh process and gets the recipe's answer."""
    rng = np.random.default_rng(21)
    a = rng.integers(0, 256, (8, 16)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 16)).astype(np.int8)
    s_in, s_w, s_out = f32(0.0173), f32(0.0091), f32(0.0611)  # scales no other test uses
    acc = (a.astype(np.int64) - 100) @ w.astype(np.int64).T
    first = torch_linear("onednn", a, 100, s_in, w, s_w, 0, s_out, 0)
    assert np.array_equal(first, recipe_requant_onednn(acc, s_in, s_w, s_out, 0))
    stale = torch_linear("onednn", a, 100, s_in, w, s_w, 0, s_out, 200)  # same key, zero point 200
    assert np.array_equal(stale, first)  # the library's bug: zero point 0 again
    b = TorchOnednn()
    for zo in (0, 200, 37):
        op = qconform.QGemmOp(qconform.Activation(a, scale=float(s_in), zero_point=100),
                              qconform.Weights(w, scale=float(s_w)), b_layout="n_by_k",
                              output=qconform.Output.requantized("u8", float(s_out), zo))
        assert np.array_equal(b.run(op).astype(np.int64), recipe_requant_onednn(acc, s_in, s_w, s_out, zo)), zo
