// The presets of qconform's GPU kernels (backends/hip, docs/hip.md): each one at an input where it
// parts from its neighbours, with the expected value derived by hand in the comment beside it.
#include "oracles/dequantize.hpp"
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace qc {
namespace gpu_presets_test {  // named: a unity batch may also hold presets_test.cpp, whose helpers share these names

const char* const kGpuPresets[] = {"gpu-div", "gpu-recip", "gpu-f16", "gpu-fma", "gpu-nofma", "gpu-roundf"};

Spec gpu_preset(const std::string& n) {
  auto s = find_preset(n);
  EXPECT_TRUE(s.has_value()) << n;
  return s.value_or(Spec{});
}

std::int64_t quant(const std::string& p, double x, double s, std::int64_t zp, DType out, DType xt = DType::f32,
                   DType st = DType::f32) {
  return quantize_element(x, xt, s, st, zp, out, gpu_preset(p).quantize_for(xt)).q;
}

std::uint32_t dequant_f32_bits(const std::string& p, std::int64_t q, double s, std::int64_t zp) {
  return static_cast<std::uint32_t>(
      dequantize_element(q, DType::i8, s, DType::f32, zp, DType::f32, gpu_preset(p).dequantize).bits);
}

TEST(GpuPresets, ExistWithSourcesAndTheSharedIntegerStage) {
  for (const char* n : kGpuPresets) {
    const Spec s = gpu_preset(n);
    EXPECT_GE(s.sources.size(), 3u) << n;
    EXPECT_EQ(s.accumulation, Accumulation::int32_wrap) << n;
    EXPECT_EQ(s.zero_points, ZeroPointCorrection::compensate) << n;
    EXPECT_EQ(s.requantize.scheme, RequantizeScheme::float_multiplier) << n;
  }
}

TEST(GpuPresets, DivisionAgainstReciprocal) {
  // fl(1.55) = 13002342 * 2^-23 and fl(0.1) = 13421773 * 2^-27. The real quotient is 15.49999929..,
  // whose f32 rounding 15.499999 stays below the tie: 15. fl(1 / fl(0.1)) = 10 exactly, and
  // 1.55f * 10 = 130023420 * 2^-23 = 16252927.5 * 2^-20, a tie between two f32 neighbours (ulp
  // 2^-20 in [8, 16)) that rounds to the even 16252928 * 2^-20 = 15.5: ties to even give 16.
  const double x = static_cast<float>(1.55), s = static_cast<float>(0.1);
  EXPECT_EQ(quant("gpu-div", x, s, 0, DType::i8), 15);
  EXPECT_EQ(quant("gpu-recip", x, s, 0, DType::i8), 16);
}

TEST(GpuPresets, HalfArithmeticOnlyForHalfScales) {
  // f16 scale 1: x = 2049 becomes f16 first, a tie between 2048 and 2050 (ulp 2 in [2048, 4096))
  // that rounds to the even 2048. In f32 the quotient is 2049.
  EXPECT_EQ(quant("gpu-f16", 2049, 1, 0, DType::i16, DType::f32, DType::f16), 2048);
  EXPECT_EQ(quant("gpu-div", 2049, 1, 0, DType::i16, DType::f32, DType::f16), 2049);
  // An f32 scale keeps f32 arithmetic in the f16 variant too.
  EXPECT_EQ(quant("gpu-f16", 2049, 1, 0, DType::i16), 2049);
  // Dequantize with an f16 scale 0.1 (0x2E66 = 0.0999755859375): (q - zp) = 3 times it is
  // 0.2999267578125, which f16 (ulp 2^-12 in [0.25, 0.5)) rounds to 1228 * 2^-12 = 0.2998046875
  // (0.2999267578125 * 4096 = 1228.5 exactly, a tie to the even 1228). In f32 it is exact.
  const double s_half = 0.0999755859375;
  auto dq = [&](const std::string& p) {
    const auto bits =
        dequantize_element(4, DType::i8, s_half, DType::f16, 1, DType::f32, gpu_preset(p).dequantize).bits;
    return float_bits_to_double(DType::f32, bits);
  };
  EXPECT_EQ(dq("gpu-f16"), 0.2998046875);
  EXPECT_EQ(dq("gpu-div"), 0.2999267578125);
}

TEST(GpuPresets, HalfVariantStatesOrtCudasElementwiseRecipe) {
  // ORT CUDA divides in the scale's type and multiplies in the output type (RoundStd<half>,
  // DequantizeLinearKernel); gpu-f16 is the same recipe, with its own GEMM integer stage.
  EXPECT_EQ(gpu_preset("gpu-f16").quantize, gpu_preset("ort-cuda").quantize);
  EXPECT_EQ(gpu_preset("gpu-f16").dequantize, gpu_preset("ort-cuda").dequantize);
  EXPECT_EQ(gpu_preset("gpu-f16").requantize, gpu_preset("gpu-div").requantize);
}

TEST(GpuPresets, ContractionOnAgainstOff) {
  // s = 3: fl(1/3) = 11184811 * 2^-25 = 1/3 + 1/(3 * 2^25). x = -382.5 (exact), zp = 127:
  // x * fl(1/3) = -127.5 - 127.5 * 2^-25 exactly.
  //   off: fl(x * inv) = -127.5 (the excess 0.996 * 2^-18 is below half the ulp 2^-17), + 127 = -0.5,
  //        a tie that rounds to the even 0;
  //   on:  fma gives fl(-0.5 - 63.75 * 2^-24) = -0.5 - 2^-18 (ulp 2^-24 just past 0.5), which rounds to -1.
  EXPECT_EQ(quant("gpu-nofma", -382.5, 3, 127, DType::i8), 0);
  EXPECT_EQ(quant("gpu-fma", -382.5, 3, 127, DType::i8), -1);
  // The zero point added in integers after rounding: x / 3 = -127.5 exactly -> -128, + 127 = -1.
  EXPECT_EQ(quant("gpu-div", -382.5, 3, 127, DType::i8), -1);
  // Dequantize q = 3, zp = 1, s = fl(0.1) = 13421773 * 2^-27: zp * s = s exactly; 3s = 40265319 * 2^-27
  // rounds to 10066330 * 2^-25. off: 10066330 * 2^-25 - s = 26843547 * 2^-27, a tie (25 bits) to the
  // even 13421774 * 2^-26 (0x3E4CCCCE); on: 3s - s = 2s = 13421773 * 2^-26 exactly (0x3E4CCCCD =
  // 0.2f), which (q - zp) * s in f32 also gives.
  const double s = static_cast<float>(0.1);
  EXPECT_EQ(dequant_f32_bits("gpu-nofma", 3, s, 1), 0x3E4CCCCEu);
  EXPECT_EQ(dequant_f32_bits("gpu-fma", 3, s, 1), 0x3E4CCCCDu);
  EXPECT_EQ(dequant_f32_bits("gpu-div", 3, s, 1), 0x3E4CCCCDu);
}

TEST(GpuPresets, RoundfTiesAwayInQuantizeAndRequantize) {
  // x / s = 2.5 and -2.5 exactly: ties to even 2 and -2, ties away 3 and -3.
  EXPECT_EQ(quant("gpu-div", 2.5, 1, 0, DType::i8), 2);
  EXPECT_EQ(quant("gpu-roundf", 2.5, 1, 0, DType::i8), 3);
  EXPECT_EQ(quant("gpu-roundf", -2.5, 1, 0, DType::i8), -3);
  // Requantize acc = 5 with multiplier (1 * 1) / 2 = 0.5 in f32: 2.5 -> 2 (even) or 3 (away), + zp 1.
  auto rq = [](const std::string& p) {
    return requantize_element(5, RequantizeScales{1, 1, 2, DType::f32}, 1, DType::i8, gpu_preset(p).requantize).q;
  };
  EXPECT_EQ(rq("gpu-div"), 3);
  EXPECT_EQ(rq("gpu-roundf"), 4);
}

TEST(GpuPresets, NanRules) {
  // The kernels turn NaN into the integer 0: the zero point where it is added in integers
  // afterwards, 0 where it was added in float before the rounding.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(quant("gpu-div", nan, 1, 5, DType::i8), 5);
  EXPECT_EQ(quant("gpu-recip", nan, 1, 5, DType::i8), 5);
  EXPECT_EQ(quant("gpu-roundf", nan, 1, 5, DType::i8), 5);
  EXPECT_EQ(quant("gpu-fma", nan, 1, 5, DType::i8), 0);
  EXPECT_EQ(quant("gpu-nofma", nan, 1, 5, DType::i8), 0);
  // u8 with zp 128: 0 is in range, so the affine forms give 0, the others 128.
  EXPECT_EQ(quant("gpu-fma", nan, 1, 128, DType::u8), 0);
  EXPECT_EQ(quant("gpu-div", nan, 1, 128, DType::u8), 128);
}

TEST(GpuPresets, RequantizeEpilogueClampsInFloatBeforeRounding) {
  // acc = 1000, multiplier 0.25: 250 is clamped in float to 127 - zp = 117 before rounding, + zp 10 = 127.
  EXPECT_EQ(requantize_element(1000, RequantizeScales{0.5, 0.5, 1, DType::f32}, 10, DType::i8,
                               gpu_preset("gpu-div").requantize)
                .q,
            127);
  // The same below the range: acc = -1000 gives -250, clamped to -128 - 10 = -138, + 10 = -128.
  EXPECT_EQ(requantize_element(-1000, RequantizeScales{0.5, 0.5, 1, DType::f32}, 10, DType::i8,
                               gpu_preset("gpu-div").requantize)
                .q,
            -128);
}

}  // namespace gpu_presets_test
}  // namespace qc
