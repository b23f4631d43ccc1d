// Hand-derived parameter choices for each cited implementation (docs/numerics.md "Choosing
// quantization parameters"; each recipe's upstream source is cited in choose_qparams.cpp). Each
// expected value is worked out in the comment from the cited code's arithmetic: every float
// operation rounded once in the format the code uses. Ranges are picked so the steps are exact or
// the one rounding that matters is easy to follow; a few scales are written as the IEEE float
// expression they are by definition (e.g. 3.0f / 255.0f), evaluated by the hardware.
#include "oracles/choose_qparams.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace qc {
namespace {

QParamsRule qparams_preset(std::string_view n) {
  const std::optional<QParamsRule> r = find_qparams_preset(n);
  EXPECT_TRUE(r.has_value()) << n;
  return r.value_or(QParamsRule{});
}

struct Want {
  double scale;
  std::int64_t zp;
};

void expect_choice(std::string_view preset_name, float min, float max, DType q, Want want) {
  SCOPED_TRACE(std::string(preset_name) + " [" + std::to_string(min) + ", " + std::to_string(max) + "] " +
               std::string(name(q)));
  const ChosenQParams c = choose_qparams(min, max, q, qparams_preset(preset_name));
  EXPECT_EQ(c.scale, want.scale);
  EXPECT_EQ(c.zero_point, want.zp);
}

// u8, [-2.5, 252.5]: the range is 255, so every recipe's scale is exactly 1 and the zero point
// is exactly 2.5 (0 - (-2.5)/1, or 255 - 252.5/1): the nudge's tie rule decides.
TEST(ChooseQParams, ZeroPointTieSeparatesHalfEvenFromHalfAway) {
  // ONNX/ORT: RoundHalfToEven(2.5) = 2.
  expect_choice("onnx-dynamic-quantize-linear", -2.5f, 252.5f, DType::u8, {1.0, 2});
  // gemmlowp/TFLite: error_min = 0 + 2.5 < error_max = 255 + 252.5, so from_min = 2.5; round() is
  // half away: 3.
  expect_choice("tflite", -2.5f, 252.5f, DType::u8, {1.0, 3});
  // FBGEMM: the same choice, nearbyint: 2.
  expect_choice("fbgemm", -2.5f, 252.5f, DType::u8, {1.0, 2});
  // ATen: errors 0 - 2.5 = -2.5 < 255 - 252.5 = 2.5, from_min = 2.5, nearbyint: 2.
  expect_choice("pytorch-dynamic", -2.5f, 252.5f, DType::u8, {1.0, 2});
  // PyTorch observer: 0 - torch.round(-2.5) = 0 - (-2) = 2.
  expect_choice("pytorch-observer-affine", -2.5f, 252.5f, DType::u8, {1.0, 2});
  // XNNPACK qdu8: r = 255/255 = 1, zp = lrintf(2.5) = 2, scale = 1/r = 1.
  expect_choice("xnnpack-qd8", -2.5f, 252.5f, DType::u8, {1.0, 2});
  // Glow: from_min = 2.5 (|max + min| = 250 > FLT_EPSILON), round() half away: 3.
  expect_choice("glow-asymmetric", -2.5f, 252.5f, DType::u8, {1.0, 3});
}

// i8, [-130.5, 124.5]: range 255, scale 1; zero point 2.5 from either end.
TEST(ChooseQParams, Int8ZeroPointTie) {
  // ORT int8: -128 - (-130.5) = 2.5, half even: 2.
  expect_choice("ort-dynamic", -130.5f, 124.5f, DType::i8, {1.0, 2});
  // TFLite: error_min = 128 + 130.5 = 258.5 > error_max = 127 + 124.5 = 251.5, so from_max =
  // 127 - 124.5 = 2.5; half away: 3.
  expect_choice("tflite", -130.5f, 124.5f, DType::i8, {1.0, 3});
  expect_choice("glow-asymmetric", -130.5f, 124.5f, DType::i8, {1.0, 3});
  expect_choice("fbgemm", -130.5f, 124.5f, DType::i8, {1.0, 2});
  // XNNPACK qd8: (-128 - 130.5) + (127 + 124.5) = -7, not > 0, so qmax - dmax = 2.5: lrintf 2.
  expect_choice("xnnpack-qd8", -130.5f, 124.5f, DType::i8, {1.0, 2});
}

TEST(ChooseQParams, AllZeroRange) {
  // ONNX reference: max == min -> scale 1; zp = 0 - 0/1 = 0.
  expect_choice("onnx-dynamic-quantize-linear", 0.0f, 0.0f, DType::u8, {1.0, 0});
  // TFLite: rmin == rmax -> scale 0, zp 0 (and that scale cannot quantize).
  expect_choice("tflite", 0.0f, 0.0f, DType::u8, {0.0, 0});
  EXPECT_THROW(to_quant_params(choose_qparams(0.0f, 0.0f, DType::u8, qparams_preset("tflite"))), InputError);
  // FBGEMM: scale 0 -> 0.1 stored as float. u8: error_min = 0 < error_max = 255, zp = 0.
  expect_choice("fbgemm", 0.0f, 0.0f, DType::u8, {static_cast<double>(0.1f), 0});
  // i8: error_min = |-128| = 128 is not < error_max = 127, so from_max = 127 - 0 = 127.
  expect_choice("fbgemm", 0.0f, 0.0f, DType::i8, {static_cast<double>(0.1f), 127});
  // ATen keeps the double 0.1; i8 errors 128 - 0 vs 127 - 0: from_max, 127.
  expect_choice("pytorch-dynamic", 0.0f, 0.0f, DType::i8, {0.1, 127});
  // Glow: same 127 from the error rule, but |max + min| = 0 <= FLT_EPSILON forces 0.
  expect_choice("glow-asymmetric", 0.0f, 0.0f, DType::i8, {static_cast<double>(0.1f), 0});
  // PyTorch observer: scale 0 -> eps = 2^-23; zp = qmin - round(0) = qmin.
  expect_choice("pytorch-observer-affine", 0.0f, 0.0f, DType::u8, {0x1p-23, 0});
  expect_choice("pytorch-observer-affine", 0.0f, 0.0f, DType::i8, {0x1p-23, -128});
  // XNNPACK qd8: rmin == rmax -> r = 1; (-128 + 0) + (127 + 0) = -1 is not > 0, so zp =
  // qmax - 0 = 127.
  expect_choice("xnnpack-qd8", 0.0f, 0.0f, DType::i8, {1.0, 127});
}

TEST(ChooseQParams, OnnxDynamicQuantizeLinear) {
  // [-1, 2], u8. scale = 3/255 in f32: 2^30/85 = 12632256.75..., so 12632257 * 2^-30 =
  // 0x1.818182p-7 (= 3.0f / 255.0f). -1/scale = -2^30/12632257 = -84.9999983..., within half an
  // f32 step (2^-18) of -85, so -85; zp = 0 + 85 = 85.
  expect_choice("onnx-dynamic-quantize-linear", -1.0f, 2.0f, DType::u8, {0x1.818182p-7, 85});
  EXPECT_EQ(0x1.818182p-7, static_cast<double>(3.0f / 255.0f));
  // A range above 0 is extended to [0, max]: scale = 4/255 in f32, zp = 0.
  expect_choice("onnx-dynamic-quantize-linear", 1.0f, 4.0f, DType::u8, {static_cast<double>(4.0f / 255.0f), 0});
}

TEST(ChooseQParams, OrtInt8ReduceRangeAndSymmetric) {
  // ReduceRange: [-64, 64]; scale = 3/128 = 0.0234375 exactly. -1/scale = -128/3 rounds in f32
  // to -11184811 * 2^-18; -64 + that = -5592405 * 2^-18 = -21.3333321 (exact); half even: -21.
  expect_choice("ort-int8-reduce-range", -1.0f, 2.0f, DType::i8, {0.0234375, -21});
  // Symmetric: zp 0, scale = max(2, 1) / 127 in f32: 2^30/127 = 8454660.03..., so
  // 8454660 * 2^-29 = 0x1.020408p-6.
  expect_choice("ort-int8-symmetric", -1.0f, 2.0f, DType::i8, {0x1.020408p-6, 0});
  EXPECT_EQ(0x1.020408p-6, static_cast<double>(2.0f / 127.0f));
  EXPECT_EQ(qparams_range(DType::i8, qparams_preset("ort-int8-reduce-range")),
            std::make_pair(std::int64_t{-64}, std::int64_t{64}));
}

TEST(ChooseQParams, TfliteNarrowRange) {
  // narrow_range: qmin = -127. scale = 3/254 in double. from_min = -127 + 1/scale = -42.33...
  // with error 127 + 84.67 < 127 + 169.33, so from_min; round() half away: -42.
  const ChosenQParams c = choose_qparams(-1.0f, 2.0f, DType::i8, qparams_preset("tflite-narrow-range"));
  EXPECT_EQ(c.scale, 3.0 / 254.0);
  EXPECT_EQ(c.scale_dtype, DType::f64);
  EXPECT_EQ(c.zero_point, -42);
  EXPECT_EQ(c.qmin, -127);
}

TEST(ChooseQParams, XnnpackFormsTheReciprocalFirst) {
  // [-1, 2], qd8: r = 255/3 = 85 exactly; scale = 1/85 in f32. dmin = -85, dmax = 170;
  // (-128 - 85) + (127 + 170) = 84 > 0, so zp = -128 + 85 = -43.
  const ChosenQParams c = choose_qparams(-1.0f, 2.0f, DType::i8, qparams_preset("xnnpack-qd8"));
  EXPECT_EQ(c.scale, static_cast<double>(1.0f / 85.0f));
  EXPECT_EQ(c.quantize_multiplier, 85.0);
  EXPECT_EQ(c.zero_point, -43);
  // [0, 0.875], qdu8: r = RN(2040/7) = 9549385 * 2^-15 = 0x1.236db6p+8 (rounded down by 1/7 of a
  // step), so 1/r lies a relative 1.5e-8 above 7/2040 and rounds one f32 step above the direct
  // quotient 0.875f/255 = 0x1.c1c1c2p-9: scale 0x1.c1c1c4p-9. zp = lrintf(-0 * r) = 0.
  const ChosenQParams u = choose_qparams(0.0f, 0.875f, DType::u8, qparams_preset("xnnpack-qd8"));
  EXPECT_EQ(u.quantize_multiplier, 0x1.236db6p+8);
  EXPECT_EQ(u.scale, 0x1.c1c1c4p-9);
  EXPECT_EQ(u.zero_point, 0);
  expect_choice("onnx-dynamic-quantize-linear", 0.0f, 0.875f, DType::u8, {0x1.c1c1c2p-9, 0});
}

TEST(ChooseQParams, PytorchObservers) {
  // Symmetric qint8 [-1, 2]: scale = 2 / 127.5 in f32 = 4/255: 2^31/255 = 8421504.50..., so
  // 8421505 * 2^-29 = 0x1.010102p-6; zp 0 (qint8), 128 (quint8).
  expect_choice("pytorch-observer-symmetric", -1.0f, 2.0f, DType::i8, {0x1.010102p-6, 0});
  expect_choice("pytorch-observer-symmetric", -1.0f, 2.0f, DType::u8, {0x1.010102p-6, 128});
  // reduce_range: quint8 [0, 127], qint8 [-64, 63]. [-1, 126]: scale = 127/127 = 1;
  // zp = qmin - round(-1) = qmin + 1.
  expect_choice("pytorch-observer-affine-reduce-range", -1.0f, 126.0f, DType::u8, {1.0, 1});
  expect_choice("pytorch-observer-affine-reduce-range", -1.0f, 126.0f, DType::i8, {1.0, -63});
  // MinMaxObserver refuses reduce_range with symmetric quint8.
  QParamsRule r = qparams_preset("pytorch-observer-symmetric");
  r.reduce_range = ReduceRange::halve;
  EXPECT_THROW(choose_qparams(-1.0f, 2.0f, DType::u8, r), InputError);
}

TEST(ChooseQParams, FbgemmPowerOfTwoAndSparsity) {
  // Power of two, [-1, 2] u8: scale = float(3/255) < 1; log2(1/scale) = 6.41, floor 6: 1/64.
  // zp: from_min = 0 + 64 (error 64) beats from_max = 255 - 128 (error 383): 64.
  expect_choice("fbgemm-power-of-two", -1.0f, 2.0f, DType::u8, {0.015625, 64});
  // [0, 765]: scale = 3 >= 1; ceil(log2f(3)) = 2: 4. zp 0.
  expect_choice("fbgemm-power-of-two", 0.0f, 765.0f, DType::u8, {4.0, 0});
  // preserve_sparsity, [-1, 2] u8: symmetric_qmin = -(255/2 + 1) = -128, symmetric_qmax = 127;
  // max_scale = max(1/128, float(2/127) = 8454660 * 2^-29); min = -8454660 * 2^-22;
  // max = 8454660 * 127 * 2^-29 = 1073741820 * 2^-29, to float (step 64 in the integer): 2^30 *
  // 2^-29 = 2. scale = float((2 + 8454660 * 2^-22) / 255) = float(66052.031... * 2^-22) =
  // 8454660 * 2^-29. zp = (0 + 255) / 2 = 127.5, nearbyint: 128.
  expect_choice("fbgemm-preserve-sparsity", -1.0f, 2.0f, DType::u8, {0x1.020408p-6, 128});
}

TEST(ChooseQParams, FbgemmSmallScaleCutOff) {
  // [0, 0.001] u8: scale = 0.001/255 ~ 3.9e-6 < SMALL_SCALE_THRESHOLD: the scale becomes 6.1e-5f
  // and (min == 0) max becomes 6.1e-5f * 255; zp from min: 0.
  expect_choice("fbgemm", 0.0f, 0.001f, DType::u8, {static_cast<double>(6.1e-5f), 0});
  expect_choice("pytorch-dynamic", 0.0f, 0.001f, DType::u8, {static_cast<double>(6.1e-5f), 0});
}

TEST(ChooseQParams, GlowSchemas) {
  // Symmetric i8, [-2, 1]: rmin = -2/-128 = 2^-6 > rmax = 1/127, so max = 2^-6 * 127 = 1.984375;
  // scale = (1.984375 + 2) / 255 = (255/64) / 255 = 1/64; from_max = 127 - 127 = 0: zp 0.
  expect_choice("glow-symmetric", -2.0f, 1.0f, DType::i8, {0.015625, 0});
  // [-3, 1]: rmin = 3/128 > 1/127: max = 381/128; scale = (765/128) / 255 = 3/128; zp 0.
  expect_choice("glow-symmetric", -3.0f, 1.0f, DType::i8, {0.0234375, 0});
  // SymmetricWithPower2Scale: exp2(ceil(log2(3/128))) = exp2(ceil(-5.415)) = 2^-5.
  expect_choice("glow-power2", -3.0f, 1.0f, DType::i8, {0.03125, 0});
  // SymmetricWithUnsigned, a range >= 0 on u8: asymmetric with min 0: scale 255/255 = 1, zp 0.
  expect_choice("glow-symmetric-unsigned", 0.0f, 255.0f, DType::u8, {1.0, 0});
  // ... and with a negative min it falls back to Symmetric, which u8 cannot express.
  EXPECT_THROW(choose_qparams(-1.0f, 255.0f, DType::u8, qparams_preset("glow-symmetric-unsigned")), InputError);
  // int32 is reduced to int30 (getQuantizedRange: INT32_MIN >> 2, INT32_MAX >> 2).
  EXPECT_EQ(qparams_range(DType::i32, qparams_preset("glow-asymmetric")),
            std::make_pair(std::int64_t{-536870912}, std::int64_t{536870911}));
}

TEST(ChooseQParams, DynamicPerTensorAndPerRow) {
  Tensor x(DType::f32, {2, 3});
  const float vals[] = {-1.0f, 0.5f, 2.0f, 0.0f, 1.0f, 254.0f};
  for (int i = 0; i < 6; ++i) x.set_double(i, vals[i]);
  const QParamsRule onnx = qparams_preset("onnx-dynamic-quantize-linear");
  // Per tensor: [-1, 254], range 255: scale 1, zp 1.
  const DynamicQParams t = choose_dynamic_qparams(x, DType::u8, onnx);
  EXPECT_EQ(t.params.granularity(), Granularity::per_tensor);
  EXPECT_EQ(t.params.scales, std::vector<double>{1.0});
  EXPECT_EQ(t.params.zero_points, std::vector<std::int64_t>{1});
  // Per row (axis 0): row 0 [-1, 2] -> (3.0f/255.0f, 85); row 1 [0, 254] -> (254.0f/255.0f, 0).
  const DynamicQParams r = choose_dynamic_qparams(x, DType::u8, onnx, 0);
  EXPECT_EQ(r.params.granularity(), Granularity::per_axis);
  EXPECT_EQ(r.params.scales, (std::vector<double>{0x1.818182p-7, static_cast<double>(254.0f / 255.0f)}));
  EXPECT_EQ(r.params.zero_points, (std::vector<std::int64_t>{85, 0}));
  EXPECT_NO_THROW(validate(r.params, x.shape(), DType::u8, "test"));
  // Non-finite input is refused.
  x.set_double(4, std::numeric_limits<double>::quiet_NaN());
  EXPECT_THROW(choose_dynamic_qparams(x, DType::u8, onnx), InputError);
}

TEST(ChooseQParams, RulesTheCodeCannotExpressAreErrors) {
  EXPECT_THROW(choose_qparams(-1, 1, DType::u4, qparams_preset("xnnpack-qd8")), InputError);
  EXPECT_THROW(choose_qparams(-1, 1, DType::u8, qparams_preset("ort-int8-symmetric")), InputError);
  EXPECT_THROW(choose_qparams(-1, 1, DType::f32, qparams_preset("onnx-dynamic-quantize-linear")), InputError);
  QParamsRule r = qparams_preset("tflite");
  r.scale_floor = 1e-3;
  EXPECT_THROW(choose_qparams(-1, 1, DType::u8, r), InputError);
  r = qparams_preset("tflite");
  r.zero_point = ZeroPointChoice::from_min;
  EXPECT_THROW(choose_qparams(-1, 1, DType::u8, r), InputError);
  r = qparams_preset("onnx-dynamic-quantize-linear");
  r.arithmetic = DType::f16;
  EXPECT_THROW(choose_qparams(-1, 1, DType::u8, r), InputError);
  EXPECT_THROW(choose_qparams(2, 1, DType::u8, qparams_preset("tflite")), InputError);
  EXPECT_THROW(choose_qparams(-std::numeric_limits<float>::infinity(), 1, DType::u8, qparams_preset("tflite")),
               InputError);
  r = qparams_preset("tflite");
  r.include_zero = false;
  EXPECT_THROW(choose_qparams(1, 2, DType::u8, r), InputError);
}

TEST(ChooseQParams, EveryPresetIsNamedOnceAndRuns) {
  std::set<std::string_view> names;
  for (const QParamsPreset& p : qparams_presets()) {
    SCOPED_TRACE(std::string(p.name));
    EXPECT_TRUE(names.insert(p.name).second);
    EXPECT_FALSE(p.source.empty());
    const bool int8_only =
        p.name.find("int8") != std::string_view::npos || p.name.find("glow-sym") == 0 || p.name == "glow-power2";
    const DType q = int8_only ? DType::i8 : DType::u8;
    const ChosenQParams c = choose_qparams(-0.75f, 3.25f, q, p.rule);
    EXPECT_GT(c.scale, 0);
    EXPECT_GE(c.zero_point, c.qmin);
    EXPECT_LE(c.zero_point, c.qmax);
    EXPECT_NO_THROW(to_quant_params(c));
  }
  EXPECT_EQ(qparams_preset("tflite").nudge, RoundingMode::rna);
  EXPECT_EQ(qparams_preset("fbgemm").scale_floor, 6.1e-5);
  EXPECT_FALSE(find_qparams_preset("no-such-preset").has_value());
}

}  // namespace
}  // namespace qc
