// Each preset against the behaviour its source documents, and at least one input where it
// parts from `onnx`. Every expected value is derived by hand in the comment beside it from the
// cited code (each preset's sources, listed in docs/numerics.md "Preset sources"), not taken from
// the oracle's output.
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace qc {
namespace {

Spec preset(const std::string& n) {
  auto s = find_preset(n);
  EXPECT_TRUE(s.has_value()) << n;
  return s.value_or(Spec{});
}

struct Q {
  double x, s;
  std::int64_t zp;
  DType out;
  DType xt = DType::f32, st = DType::f32;
};

std::int64_t quant(const std::string& p, const Q& q) {
  return quantize_element(q.x, q.xt, q.s, q.st, q.zp, q.out, preset(p).quantize_for(q.xt)).q;
}

std::int64_t requant(const std::string& p, std::int64_t acc, double s_in, double s_w, double s_out, std::int64_t zp = 0,
                     DType out = DType::i8) {
  return requantize_element(acc, RequantizeScales{s_in, s_w, s_out, DType::f32}, zp, out, preset(p).requantize).q;
}

// The inputs, each a documented point of disagreement:
const Q kTie{2.5, 1, 0, DType::i8};  // x/s = 2.5 exactly: ties to even 2, ties away 3
// FBGEMM QuantUtils.h::Quantize comment: src * (1/scale) = 127.5 (-> 128), src / scale = 127.499992 (-> 127).
const Q kFbgemm{static_cast<float>(0.273939937), static_cast<float>(0.00214854861), 0, DType::u8};
// x/s = 0.5 - 2^-25, zp = 1: the f32 add gives 1.5 (a tie -> 2), the integer add gives 0 + 1 = 1.
const Q kZpBefore{0x1.fffffep-2, 1, 1, DType::i8};
// f16 x = 1000, s = 0x2E66 (0.0999755859375): x/s = 10002.44..; in f16 (ulp 8) -> 10000; f32 -> 10002.
const Q kHalfDiv{1000.0, 0.0999755859375, 0, DType::i16, DType::f16, DType::f16};
// f32 x = 0x1.a3f6fap+3, s = 0x1.28fddcp-3: the f32 quotient is exactly 90.5 (-> 90, even) while the
// real quotient is 90.50000297991475 (f64 keeps it above the tie -> 91).
const Q kF64Div{0x1.a3f6fap+3, 0x1.28fddcp-3, 0, DType::i8};
const Q kNan{std::numeric_limits<double>::quiet_NaN(), 1, 5, DType::i8};

TEST(Presets, OnnxIsTheSpec) {
  EXPECT_EQ(quant("onnx", kTie), 2);
  EXPECT_EQ(quant("onnx", kFbgemm), 127);
  EXPECT_EQ(quant("onnx", kZpBefore), 1);
  EXPECT_EQ(quant("onnx", kHalfDiv), 10000);  // the scale's type (f16) sets the division
  EXPECT_EQ(quant("onnx", kF64Div), 90);
  EXPECT_FALSE(quantize_element(kNan.x, DType::f32, 1, DType::f32, 5, DType::i8, preset("onnx").quantize).specified);
  // Requantize is the exact value, ties to even: 5 * (1*1/10) = 0.5 -> 0; -6 * 0.25 = -1.5 -> -2.
  EXPECT_EQ(requant("onnx", 5, 1, 1, 10), 0);
  EXPECT_EQ(requant("onnx", -6, 1, 1, 4), -2);
  // 5 * 0.1f = 0.500000007.. exactly: above the tie -> 1.
  EXPECT_EQ(requant("onnx", 5, static_cast<float>(0.1), 1, 1), 1);
}

TEST(Presets, OnnxReference) {
  // NaN: astype(int32) gives INT_MIN on x86, clipped to qmin.
  EXPECT_EQ(quant("onnx-reference", kNan), -128);
  // rint(C * f32(a_s*b_s/y_s) + y_zp) with C*scale in f64: f32(0.1) = 0.100000001490116..,
  // 5 * that = 0.50000000745 exactly in f64 -> 1 (onnx: 0).
  EXPECT_EQ(requant("onnx-reference", 5, 1, 1, 10), 1);
}

TEST(Presets, OrtCpu) {
  EXPECT_EQ(quant("ort-cpu", kNan), -128);       // max_ps(NaN, m) returns m: NaN -> qmin
  EXPECT_EQ(quant("ort-cpu", kHalfDiv), 10002);  // f16 input divides in f32 (onnx: f16, 10000)
  // f32 multiplier 1.2f*0.5625/0.75 and f32 product at acc = -25 land on -22.5 -> -22; the exact
  // value -22.5000009 gives -23 (the helper-derived case in requantize_test.cpp).
  EXPECT_EQ(requant("ort-cpu", -25, static_cast<float>(1.2), 0.5625, 0.75), -22);
  EXPECT_EQ(requant("onnx", -25, static_cast<float>(1.2), 0.5625, 0.75), -23);
}

TEST(Presets, OrtCpuBeforeFp16RoundingFix) {
  // PR #32452: static_cast<int32_t>(x/s) truncated f16 inputs: 2.75 -> 2 (now 3).
  const Q q{2.75, 1, 0, DType::i8, DType::f16, DType::f16};
  EXPECT_EQ(quant("ort-cpu@pre-pr32452", q), 2);
  EXPECT_EQ(quant("ort-cpu", q), 3);
  EXPECT_EQ(quant("onnx", q), 3);
  EXPECT_EQ(quant("ort-cpu@pre-pr32452", kTie), 2);  // f32 inputs were never affected
}

TEST(Presets, OrtCuda) {
  EXPECT_EQ(quant("ort-cuda", kNan), 5);          // cvt.rni(NaN) = 0, + zp
  EXPECT_EQ(quant("ort-cuda", kHalfDiv), 10000);  // __half2int_rn(v / scale): half division
}

TEST(Presets, TfliteReferenceAndGemmlowp) {
  EXPECT_EQ(quant("tflite-reference", kTie), 3);  // TfLiteRound = std::round: ties away
  EXPECT_EQ(quant("tflite-reference", Q{-2.5, 1, 0, DType::i8}), -3);
  // QuantizeMultiplier(0.1) = (1717986918, -3); SRDHM(5, M) = (8589934590 + 2^30) / 2^31 = 4 (truncated);
  // RoundingDivideByPOT(4, 3): remainder 4 > threshold 3 -> 1 (onnx: 0).
  EXPECT_EQ(requant("tflite-reference", 5, 1, 1, 10), 1);
  EXPECT_EQ(requant("gemmlowp", 5, 1, 1, 10), 1);
  EXPECT_EQ(quant("gemmlowp", kTie), 3);
}

TEST(Presets, Tosa) {
  // multiplier = round(0.8 * 2^31) = 1717986918, shift = 34. SINGLE: (5M + 2^33) >> 34 = 0.
  // DOUBLE adds 2^30 for shift > 31: (8589934590 + 2^33 + 2^30) >> 34 = 1.
  EXPECT_EQ(requant("tosa-single", 5, 1, 1, 10), 0);
  EXPECT_EQ(requant("tosa-double", 5, 1, 1, 10), 1);
  // 0.25 -> M = 2^30, shift 32: (-6 * 2^30 + 2^31) >> 32 = -1 (ties up; onnx -2).
  EXPECT_EQ(requant("tosa-single", -6, 1, 1, 4), -1);
  EXPECT_EQ(quant("tosa-single", kTie), 2);  // CAST rounds to nearest even
}

TEST(Presets, StableHlo) {
  EXPECT_EQ(quant("stablehlo-spec", kZpBefore), 2);  // x/s + zp in float, then round
  // The lowering truncates f32(acc) * scale: 7 * 0.25 = 1.75 -> 1 (onnx: 2).
  EXPECT_EQ(requant("stablehlo-lowering", 7, 1, 1, 4), 1);
  EXPECT_EQ(requant("onnx", 7, 1, 1, 4), 2);
}

TEST(Presets, Xnnpack) {
  EXPECT_EQ(quant("xnnpack-fp32", kFbgemm), 128);  // x * (1/s)
  EXPECT_EQ(quant("xnnpack-rndnu", kFbgemm), 128);
  // rndnu: M24 = 2^23, s = 150 - 125 = 25: (-6 * 2^23 + 2^24) >> 25 = -1.
  EXPECT_EQ(requant("xnnpack-rndnu", -6, 1, 1, 4), -1);
  EXPECT_EQ(requant("xnnpack-fp32", -25, static_cast<float>(1.2), 0.5625, 0.75), -22);  // f32 product
}

TEST(Presets, OneDnn) {
  EXPECT_EQ(quant("onednn", kZpBefore), 2);  // x / scale + zp in f32
  // Per op in f32: (float)5 * 0.1f = 0.5 after rounding -> 0 (the exact 0.50000000745 gives 1).
  EXPECT_EQ(requant("onednn", 5, static_cast<float>(0.1), 1, 1), 0);
}

TEST(Presets, PyTorch) {
  EXPECT_EQ(quant("pytorch-cpu", kFbgemm), 128);  // nearbyint(src * (1.f/scale))
  EXPECT_EQ(quant("pytorch-cpu", kNan), 127);     // _mm256_min_ps(NaN, big) -> big -> qmax
  EXPECT_EQ(quant("pytorch-cuda", kF64Div), 91);  // f64 division keeps 90.500003 above the tie
  EXPECT_EQ(quant("pytorch-cuda", kFbgemm), 127);
}

// The versioned presets of the peers (docs/peers.md): each value below follows from the library
// source cited in the preset, worked by hand in the comment, and agrees with what the library gave.

TEST(Presets, OrtCpuHalfInputGoesThroughAnInt32Cast) {
  // static_cast<int32_t>(nearbyint(x / s)) + zp with x86's cvttss2si: NaN, +-inf and |v| >= 2^31 give
  // INT32_MIN (0x80000000); the int32 add of the zero point wraps; then the clamp.
  const auto half = [](double x, double s, std::int64_t zp, DType out) {
    return Q{x, s, zp, out, DType::f16, DType::f16};
  };
  EXPECT_EQ(quant("ort-cpu", half(INFINITY, 1, 0, DType::i8)), -128);   // INT32_MIN -> qmin
  EXPECT_EQ(quant("ort-cpu", half(-INFINITY, 1, -1, DType::i8)), 127);  // INT32_MIN - 1 wraps to INT32_MAX
  EXPECT_EQ(quant("ort-cpu", half(NAN, 1, -1, DType::i8)), 127);
  EXPECT_EQ(quant("ort-cpu", half(NAN, 1, 0, DType::i8)), -128);
  // 65504 / 2^-16 = 4292870144 >= 2^31: INT32_MIN + 5 is below 0 -> 0. f32 input clamps in float: 255.
  EXPECT_EQ(quant("ort-cpu", half(65504, 0x1p-16, 5, DType::u8)), 0);
  EXPECT_EQ(quant("ort-cpu", Q{65504, 0x1p-16, 5, DType::u8}), 255);
  EXPECT_EQ(quant("ort-cpu", half(-3.5, 1, 0, DType::i8)), -4);  // in range the cast is exact (ties to even)
}

TEST(Presets, OrtCpuOnX86WithoutVnniPairsTheRawBytes) {
  // MLAS's U8S8 kernels for AVX2 and AVX-512 without VNNI (platform.cpp) multiply the raw bytes with
  // vpmaddubsw and apply the zero points afterwards from row and column sums (qgemm.h
  // MlasGemmQuantOperation: the ZeroPointA/ZeroPointB terms); QLinearConv's ReorderFilter puts the
  // filter in [KH*KW, C, OC] order. Everything else is ort-cpu's.
  const Spec base = *find_preset("ort-cpu");
  const Spec s = *find_preset("ort-cpu@x86-vpmaddubsw");
  EXPECT_EQ(s.quantize, base.quantize);
  EXPECT_EQ(s.quantize_half_input, base.quantize_half_input);
  EXPECT_EQ(s.dequantize, base.dequantize);
  EXPECT_EQ(s.requantize, base.requantize);
  EXPECT_EQ(s.accumulation, Accumulation::int16_pair_saturate);
  EXPECT_EQ(s.zero_points, ZeroPointCorrection::compensate);
  EXPECT_EQ(s.conv_depth_order, ConvDepthOrder::kh_kw_c);
  EXPECT_EQ(base.conv_depth_order, ConvDepthOrder::c_kh_kw);
}

TEST(Presets, OneDnn26) {
  // fl(fl(x * fl(1/s)) + zp) in f32: 0x1.fffffep-2 + 1 = 1.5 - 2^-25 rounds to 1.5 in f32 (ulp 2^-23), a
  // tie -> 2; FBGEMM's example x * (1/s) = 127.5 -> 128 (3.x divides: 127.499992 -> 127).
  EXPECT_EQ(quant("onednn@2.6", kZpBefore), 2);
  EXPECT_EQ(quant("onednn@2.6", kFbgemm), 128);
  EXPECT_EQ(quant("onednn", kFbgemm), 127);
  // saturate_f32: min_ps(NaN, qmax) gives qmax for s8; u8 first takes max_ps(NaN, 0) = 0.
  EXPECT_EQ(quant("onednn@2.6", kNan), 127);
  EXPECT_EQ(quant("onednn@2.6", Q{NAN, 1, 5, DType::u8}), 0);
  // m = fl(fl(0.1f * 1) / 1) = 0.1f; fl(5 * 0.1f) = 0.5 -> 0 (the exact 0.50000000745 gives 1).
  EXPECT_EQ(requant("onednn@2.6", 5, static_cast<float>(0.1), 1, 1), 0);
}

TEST(Presets, XnnpackOnX86SendsNanToQmax) {
  // _mm512_min_ps(x * (1/s), qmax - zp) returns its second operand for NaN: qmax - zp, then + zp.
  EXPECT_EQ(quant("xnnpack-fp32@2022.02-x86", kNan), 127);
  EXPECT_FALSE(
      quantize_element(kNan.x, DType::f32, 1, DType::f32, 5, DType::i8, preset("xnnpack-fp32").quantize).specified);
}

TEST(Presets, GemmlowpShiftLeftSaturates) {
  // s_in * s_w / s_out = 100 = 0.78125 * 2^7: M = 0.78125 * 2^31 = 1677721600, left shift 7.
  // acc = 2^24: ShiftLeft gives 2^31, saturated to 2^31 - 1 in gemmlowp's scalar fixedpoint.h;
  // SRDHM(2^31 - 1, M) = round(M - M / 2^31) = round(1677721599.22) = 1677721599 -> i16 32767.
  // TFLite's x * (1 << 7) wraps to -2^31: SRDHM(-2^31, M) = -M -> i16 -32768.
  EXPECT_EQ(requant("gemmlowp", std::int64_t{1} << 24, 10, 10, 1, 0, DType::i16), 32767);
  EXPECT_EQ(requant("tflite-reference", std::int64_t{1} << 24, 10, 10, 1, 0, DType::i16), -32768);
}

TEST(Presets, PyTorch113WithoutFbgemm) {
  for (const char* p : {"pytorch-onednn@1.13", "pytorch-qnnpack@1.13"}) {
    // quantize_val: (int64)(zp +. nearbyint(x * (1.f/s))): the reciprocal (FBGEMM's example: 128) ...
    EXPECT_EQ(quant(p, kFbgemm), 128) << p;
    // ... NaN and +-inf through cvttss2si to INT64_MIN, clamped to qmin.
    EXPECT_EQ(quant(p, kNan), -128) << p;
    EXPECT_EQ(quant(p, Q{INFINITY, 1, 5, DType::i8}), -128) << p;
    EXPECT_EQ(quant(p, Q{NAN, 1, 128, DType::u8}), 0) << p;
    // ... and the zero point added in f32: 2^25 + 3 rounds to 2^25 + 4 (ulp 4), 2^25 + 1 to 2^25.
    EXPECT_EQ(quant(p, Q{0x1p25, 1, 3, DType::i32}), (1 << 25) + 4) << p;
    EXPECT_EQ(quant(p, Q{0x1p25, 1, 1, DType::i32}), 1 << 25) << p;
  }
  // s_in = 0.1f, s_w = s_out = 0.03f, output zp 7. onednn: m = fl(fl(1/s_out) / fl(fl(1/s_in) * fl(1/s_w)))
  // = 0x3DCCCCCC; 35 * m = 3.4999998, + 7 in f32 = 10.5 -> 10; 25 -> 9.5 -> 10.
  // qnnpack: m = fl(fl(s_w * s_in) * fl(1/s_out)) = 0x3DCCCCCE; 35 * m = 3.5000002 -> 4, + 7 = 11; 25 -> 3 + 7.
  // pytorch-cpu (FBGEMM): m = fl(fl(s_in * s_w) / s_out) = 0x3DCCCCCD; 3.5 -> 4 + 7 = 11; 2.5 -> 2 + 7 = 9.
  const double a = static_cast<float>(0.1), w = static_cast<float>(0.03);
  EXPECT_EQ(requant("pytorch-onednn@1.13", 35, a, w, w, 7), 10);
  EXPECT_EQ(requant("pytorch-onednn@1.13", 25, a, w, w, 7), 10);
  EXPECT_EQ(requant("pytorch-qnnpack@1.13", 35, a, w, w, 7), 11);
  EXPECT_EQ(requant("pytorch-qnnpack@1.13", 25, a, w, w, 7), 10);
  EXPECT_EQ(requant("pytorch-cpu", 35, a, w, w, 7), 11);
  EXPECT_EQ(requant("pytorch-cpu", 25, a, w, w, 7), 9);
}

TEST(Presets, MIGraphX) {
  EXPECT_EQ(quant("migraphx-ref", kTie), 2);                                // nearbyint
  EXPECT_EQ(quant("migraphx-ref@2023.10", kTie), 3);                        // std::round before late 2023
  EXPECT_EQ(requant("migraphx-ref", 5, static_cast<float>(0.1), 1, 1), 0);  // per op in f32 (onnx: 1)
  // GPU: round(2000 / 1) = 2000, + f16(1001) in f16: 3001 lies between 3000 and 3002 (ulp 2) -> even 3000.
  const Q q{2000, 1, 1001, DType::i16, DType::f16, DType::f16};
  EXPECT_EQ(quant("migraphx-gpu", q), 3000);
  EXPECT_EQ(quant("onnx", q), 3001);
}

TEST(Presets, MIGraphXLoweringsOfQuantizeLinear) {
  // rocMLIR's TOSA lowering multiplies by the reciprocal: FBGEMM's documented pair gives 127.5 -> 128
  // where the division (onnx, migraphx-gpu) gives 127.499992 -> 127.
  EXPECT_EQ(quant("rocmlir-tosa", kFbgemm), 128);
  EXPECT_EQ(quant("migraphx-gpu", kFbgemm), 127);
  EXPECT_EQ(quant("rocmlir-tosa", kTie), 2);  // tosa.cast rounds ties to even
  // The zero point is added in int32 after the cast: 2000 * (1/1) = 2000, + 1001 = 3001 exactly (the
  // GPU rewrite's f16 add gives 3000).
  EXPECT_EQ(quant("rocmlir-tosa", Q{2000, 1, 1001, DType::i16, DType::f16, DType::f16}), 3001);
  // Clip + Round + Convert from MIGraphX's ops: op::round is std::round, 2.5 -> 3 (the rewrite: 2).
  EXPECT_EQ(quant("migraphx-clip-round-convert", kTie), 3);
  EXPECT_EQ(quant("migraphx-clip-round-convert", Q{-2.5, 1, 0, DType::i8}), -3);
}

TEST(Presets, Tvm) {
  EXPECT_EQ(quant("tvm-upward", kTie), 2);          // tir.round is ties-to-even since PR #19368
  EXPECT_EQ(quant("tvm-upward@2026.03", kTie), 3);  // llvm.round before
  EXPECT_EQ(quant("tvm-tonearest@2026.03", Q{-2.5, 1, 0, DType::i8}), -3);
  EXPECT_EQ(requant("tvm-upward", -6, 1, 1, 4), -1);     // q_multiply_shift: ties up
  EXPECT_EQ(requant("tvm-tonearest", -2, 1, 1, 4), -1);  // ties away: -0.5 -> -1 (onnx: 0)
  EXPECT_EQ(requant("onnx", -2, 1, 1, 4), 0);
}

TEST(Presets, Glow) {
  EXPECT_EQ(quant("glow-interpreter", kZpBefore), 2);  // nearbyintf(input / scale + offset)
  EXPECT_EQ(quant("glow-cpu", kZpBefore), 2);
  EXPECT_EQ(requant("glow-interpreter", 2, 1, 1, 4), 1);  // std::round(0.5) = 1 (onnx: 0)
}

TEST(Presets, EveryPresetIsCitedDescribedAndDiffersFromOnnxSomewhere) {
  std::set<std::string> names;
  for (const Spec& s : presets()) {
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    EXPECT_FALSE(s.description.empty()) << s.name;
    EXPECT_FALSE(s.sources.empty()) << s.name;
    EXPECT_TRUE(find_preset(s.name).has_value());
  }
  for (const char* required :
       {"onnx",          "onnx-reference", "ort-cpu",       "ort-cuda",         "tflite-reference",
        "gemmlowp",      "tosa-single",    "tosa-double",   "stablehlo-spec",   "xnnpack-fp32",
        "xnnpack-rndnu", "onednn",         "pytorch-cpu",   "pytorch-cuda",     "migraphx-ref",
        "migraphx-gpu",  "tvm-upward",     "tvm-tonearest", "glow-interpreter", "glow-cpu"})
    EXPECT_TRUE(names.contains(required)) << required;
  EXPECT_FALSE(find_preset("no-such-preset").has_value());
}

}  // namespace
}  // namespace qc
