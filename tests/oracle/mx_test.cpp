// Hand-derived vectors for the OCP MX v1.0 and NVFP4 formats (oracles/mx.hpp), worked out in the
// comments from the OCP text (6.3: X = 2^(floor(log2 amax) - emax_elem), elements rounded to
// nearest even and clamped to the largest magnitude) and each rule's source, not from the code.
//
// E2M1 (MXFP4, NVFP4): magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}, emax 2; the even ones (fraction bit
// 0) are 0, 1, 2, 4 (and 0.5's neighbour 0). E4M3: emax 8, subnormal step 2^-9. INT8: k / 64.
#include "oracles/mx.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qc {
namespace mx_test {

// One block (the whole tensor, along its only axis) through mx_quantize; the f32 values.
std::vector<double> fake_quant(std::vector<double> x, MxFormat f, MxScaleRule rule = MxScaleRule::floor,
                               RoundingMode m = RoundingMode::rne, std::optional<double> global = std::nullopt,
                               std::int64_t block = 32) {
  MxQuantizeOp op;
  op.x = Tensor(DType::f32, {static_cast<std::int64_t>(x.size())});
  for (std::size_t i = 0; i < x.size(); ++i) op.x.set_double(static_cast<std::int64_t>(i), x[i]);
  op.blocking = {f, -1, block, global};
  op.scale_rule = rule;
  op.element_rounding = m;
  const MxQuantizeResult r = mx_quantize(op);
  std::vector<double> y;
  for (std::int64_t i = 0; i < r.y.size(); ++i) y.push_back(r.y.get_double(i));
  return y;
}

std::uint64_t scale_code(std::vector<double> x, MxFormat f, MxScaleRule rule = MxScaleRule::floor) {
  MxQuantizeOp op;
  op.x = Tensor(DType::f32, {static_cast<std::int64_t>(x.size())});
  for (std::size_t i = 0; i < x.size(); ++i) op.x.set_double(static_cast<std::int64_t>(i), x[i]);
  op.blocking = {f, -1, 32, std::nullopt};
  op.scale_rule = rule;
  return mx_quantize(op).scales.bits(0);
}

using V = std::vector<double>;

TEST(MxQuantize, Mxfp4TiesToEvenOrAway) {
  // amax 6: shared_exp = floor(log2 6) - 2 = 0, X = 1 (code 127). 5 lies half-way between 4 and 6:
  // ties to even 4, away 6. 2.5 between 2 and 3: 2 / 3. 0.25 between 0 and 0.5: 0 / 0.5. 1.75 between
  // 1.5 (odd) and 2: 2 either way (away from zero is 2 too).
  const V x{6, 5, 2.5, 0.25, -5, 1.75, 0};
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4), (V{6, 4, 2, 0, -4, 2, 0}));
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4, MxScaleRule::floor, RoundingMode::rna), (V{6, 6, 3, 0.5, -6, 2, 0}));
  EXPECT_EQ(scale_code(x, MxFormat::mxfp4), 127u);
}

TEST(MxQuantize, ScaleRulesPartWays) {
  // amax 7 (MXFP4). floor: 2 - 2 = 0, X = 1: 7 saturates to 6, 0.3 -> 0.5. ceil: ceil(log2 7) - 2 = 1,
  // X = 2: 3.5 ties to 4 -> 8, 0.15 -> 0. even: 7 = 1.75 * 4 and 1.75 >= 2 - 2^-2 carries: e = 1, as
  // ceil. rceil: 7 * f32(1/6) ~ 1.1667 in f32, rounded up to 2: X = 2, as ceil.
  const V x{7, 0.3};
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4, MxScaleRule::floor), (V{6, 0.5}));
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4, MxScaleRule::ceil), (V{8, 0}));
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4, MxScaleRule::even), (V{8, 0}));
  EXPECT_EQ(fake_quant(x, MxFormat::mxfp4, MxScaleRule::rceil), (V{8, 0}));
  // amax 5: 1.25 < 1.75, so even keeps floor's X = 1 (5 -> 4, 0.3 -> 0.5); ceil gives X = 2
  // (2.5 -> 2 -> 4, 0.15 -> 0); rceil: 5/6 < 1 rounds up to 1, X = 1.
  const V y{5, 0.3};
  EXPECT_EQ(fake_quant(y, MxFormat::mxfp4, MxScaleRule::even), (V{4, 0.5}));
  EXPECT_EQ(fake_quant(y, MxFormat::mxfp4, MxScaleRule::ceil), (V{4, 0}));
  EXPECT_EQ(fake_quant(y, MxFormat::mxfp4, MxScaleRule::rceil), (V{4, 0.5}));
  // MXFP8 E4M3, amax 300: floor 8 - 8 = 0 (X = 1); ceil 9 - 8 = 1 (X = 2); rceil 300/448 < 1 -> X = 1.
  // 300 on [256, 512) (step 32) -> 288 either way (X = 2: 150 -> 144). 3 * 2^-11 = 0.75 subnormal
  // steps -> 2^-9 at X = 1; at X = 2, 0.375 steps -> 0.
  const V z{300, 3 * std::ldexp(1.0, -11)};
  EXPECT_EQ(fake_quant(z, MxFormat::mxfp8_e4m3, MxScaleRule::floor), (V{288, std::ldexp(1.0, -9)}));
  EXPECT_EQ(fake_quant(z, MxFormat::mxfp8_e4m3, MxScaleRule::rceil), (V{288, std::ldexp(1.0, -9)}));
  EXPECT_EQ(fake_quant(z, MxFormat::mxfp8_e4m3, MxScaleRule::ceil), (V{288, 0}));
}

TEST(MxQuantize, E8M0RangeEnds) {
  // 2^-130 (an f32 subnormal) in MXFP8 E4M3: -130 - 8 = -138 is clamped to -127 (code 0); the
  // element 2^-130 / 2^-127 = 2^-3 is exact. 2^-140: element 2^-13, 1/16 of E4M3's least step -> 0.
  EXPECT_EQ(fake_quant({std::ldexp(1.0, -130)}, MxFormat::mxfp8_e4m3), (V{std::ldexp(1.0, -130)}));
  EXPECT_EQ(scale_code({std::ldexp(1.0, -130)}, MxFormat::mxfp8_e4m3), 0u);
  EXPECT_EQ(fake_quant({std::ldexp(1.0, -140)}, MxFormat::mxfp8_e4m3), (V{0}));
  // MXINT8 (emax 0), amax 1.5 * 2^127: e = 127 (code 254), element 1.5 = 96/64.
  EXPECT_EQ(fake_quant({1.5 * std::ldexp(1.0, 127)}, MxFormat::mxint8), (V{1.5 * std::ldexp(1.0, 127)}));
  EXPECT_EQ(scale_code({1.5 * std::ldexp(1.0, 127)}, MxFormat::mxint8), 254u);
  // A zero block: code 0 (2^-127), values 0.
  EXPECT_EQ(scale_code({0, 0}, MxFormat::mxfp6_e2m3), 0u);
  EXPECT_EQ(fake_quant({0, -0.0}, MxFormat::mxfp6_e2m3), (V{0, 0}));
}

TEST(MxQuantize, NanAndInfBlocksAreNan) {
  const double inf = std::numeric_limits<double>::infinity();
  const V y = fake_quant({inf, 1.0}, MxFormat::mxfp6_e3m2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_EQ(scale_code({inf, 1.0}, MxFormat::mxfp6_e3m2), 0xFFu);
  // Blocks of 2: only the block holding the NaN is NaN.
  const V z = fake_quant({std::nan(""), 1.0, 1.0, 2.0}, MxFormat::mxfp8_e5m2, MxScaleRule::floor, RoundingMode::rne,
                         std::nullopt, 2);
  EXPECT_TRUE(std::isnan(z[0]) && std::isnan(z[1]));
  EXPECT_EQ(z[2], 1.0);
  EXPECT_EQ(z[3], 2.0);
}

TEST(MxQuantize, Mxint8AndFp6Elements) {
  // MXINT8, amax 1: X = 1. 0.3 * 64 = 19.2 -> 19/64; 2.5/64 ties to 2/64 (even) or 3/64 (away);
  // 1.999 * 64 = 127.94 -> 128, clamped to 127: 127/64.
  EXPECT_EQ(fake_quant({1.0, 0.3, 2.5 / 64}, MxFormat::mxint8), (V{1.0, 19.0 / 64, 2.0 / 64}));
  EXPECT_EQ(fake_quant({1.0, 2.5 / 64}, MxFormat::mxint8, MxScaleRule::floor, RoundingMode::rna), (V{1.0, 3.0 / 64}));
  EXPECT_EQ(fake_quant({1.999}, MxFormat::mxint8), (V{127.0 / 64}));
  // FP6 E2M3 (emax 2, max 7.5, step 1/8 on [1, 2)), amax 7.9: X = 1, 7.9 saturates to 7.5; 1.0625
  // ties between 1.0 (even) and 1.125. Subnormals: step 1/8 below 1, so 0.0625 ties to 0.
  EXPECT_EQ(fake_quant({7.9, 1.0625, 0.0625}, MxFormat::mxfp6_e2m3), (V{7.5, 1.0, 0}));
  // FP6 E3M2 (emax 4, max 28), amax 20: floor(log2 20) = 4, X = 1; 18 on [16, 32) (step 4) ties
  // between 16 (even) and 20. 0.03125 is half E3M2's least step 2^-4: ties to 0.
  EXPECT_EQ(fake_quant({20, 18, 0.03125}, MxFormat::mxfp6_e3m2), (V{20, 16, 0}));
}

TEST(MxQuantize, Nvfp4TwoLevelScaling) {
  // Global scale 0.5, block amax 12: b = 12/6 = 2, s = b/g = 4 (E4M3 exact), t = g*s = 2. 10/2 = 5
  // ties to 4: 4 * 4 * 0.5 = 8; 12/2 = 6 -> 12; 1/2 = 0.5 -> 1.
  EXPECT_EQ(fake_quant({12, 10, 1}, MxFormat::nvfp4, MxScaleRule::floor, RoundingMode::rne, 0.5, 16), (V{12, 8, 1}));
  // Global 1, block amax 6.375: b = 1.0625, an E4M3 tie between 1.0 (even) and 1.125 -> s = 1. Then
  // 6.375 saturates to 6; 5.3125 lies above 5: 6; 1.0625 ties between 1 (even) and 1.5: 1.
  EXPECT_EQ(fake_quant({6.375, 5.3125, 1.0625}, MxFormat::nvfp4, MxScaleRule::floor, RoundingMode::rne, 1.0, 16),
            (V{6, 6, 1}));
  // The global scale from the tensor: amax 2688 / (448 * 6) = 1. Block 0 (amax 2688): s = 448, 2688/448 = 6.
  // Block 1 (amax 6): s = 1, 5 -> 4. A zero block: s clamps up to 2^-6, values 0.
  V x(48, 0.0);
  x[0] = 2688;
  x[16] = 6;
  x[17] = 5;
  const V y = fake_quant(x, MxFormat::nvfp4, MxScaleRule::floor, RoundingMode::rne, std::nullopt, 16);
  EXPECT_EQ(y[0], 2688);
  EXPECT_EQ(y[16], 6);
  EXPECT_EQ(y[17], 4);
  EXPECT_EQ(y[32], 0);
}

TEST(MxQuantize, RejectsWhatNoSourceDefines) {
  MxQuantizeOp op;
  op.x = Tensor(DType::f32, {4});
  op.blocking = {MxFormat::mxint8, -1, 32, std::nullopt};
  op.scale_rule = MxScaleRule::ceil;  // torchao defines CEIL for float elements only
  EXPECT_THROW(mx_quantize(op), InputError);
  op.scale_rule = MxScaleRule::floor;
  op.element_rounding = RoundingMode::floor;
  EXPECT_THROW(mx_quantize(op), InputError);
  op.element_rounding = RoundingMode::rne;
  op.blocking.axis = 3;
  EXPECT_THROW(mx_quantize(op), InputError);
}

TEST(MxDequantize, CodesTimesScales) {
  // MXFP4 codes: 0b0111 = (2+1) * 2^(3-1-1) = 6; 0b1001 = -0.5. MXFP6 E2M3 0b011111 = 15 * 2^-1 = 7.5;
  // E3M2 0b011111 = 7 * 2^2 = 28. MXINT8 0x80 = -128/64 = -2. Scale codes: 127 = 1, 128 = 2, 0xFF NaN.
  const auto run = [](MxFormat f, std::vector<std::uint64_t> codes, std::uint64_t scale,
                      std::optional<double> g = std::nullopt) {
    MxDequantizeOp op;
    op.elements = Tensor(DType::u8, {static_cast<std::int64_t>(codes.size())});
    for (std::size_t i = 0; i < codes.size(); ++i) op.elements.set_bits(static_cast<std::int64_t>(i), codes[i]);
    op.scales = Tensor(DType::u8, {1});
    op.scales.set_bits(0, scale);
    op.blocking = {f, -1, f == MxFormat::nvfp4 ? 16 : 32, g};
    const Tensor y = mx_dequantize(op);
    V out;
    for (std::int64_t i = 0; i < y.size(); ++i) out.push_back(y.get_double(i));
    return out;
  };
  EXPECT_EQ(run(MxFormat::mxfp4, {0b0111, 0b1001}, 128), (V{12, -1}));
  EXPECT_EQ(run(MxFormat::mxfp6_e2m3, {0b011111}, 127), (V{7.5}));
  EXPECT_EQ(run(MxFormat::mxfp6_e3m2, {0b011111}, 127), (V{28}));
  EXPECT_EQ(run(MxFormat::mxint8, {0x80}, 127), (V{-2}));
  EXPECT_TRUE(std::isnan(run(MxFormat::mxfp4, {0b0111}, 0xFF)[0]));
  // NVFP4: element 0b0101 = 3, E4M3 scale 0x38 = 1.0, global 0.5: 1.5.
  EXPECT_EQ(run(MxFormat::nvfp4, {0b0101}, 0x38, 0.5), (V{1.5}));
  EXPECT_THROW(run(MxFormat::mxfp4, {0x10}, 127), InputError);  // not a 4-bit code
}

}  // namespace mx_test
}  // namespace qc
