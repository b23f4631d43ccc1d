// Hand-derived vectors for the block-scaled GEMM (oracles/mx_gemm.hpp), each worked out in the
// comments from the OCP MX v1.0 text: 6.3's scale X = 2^(floor(log2 amax) - emax_elem) and elements
// P_i = V_i / X rounded to nearest even, clamped to the largest magnitude; 6.2's
// Dot(A, B) = X(A) X(B) sum_i P_i(A) P_i(B) per block pair, the block dots summed. NVFP4 follows
// torchao's _nvfp4_quantize steps in f32 (b = amax / 6, s = b / g, s8 = e4m3(s), t = g s8,
// P = e2m1(clamp(V / t))). E2M1: {0, 0.5, 1, 1.5, 2, 3, 4, 6}, emax 2; E4M3: emax 8.
#include "oracles/mx_gemm.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace qc {
namespace mx_gemm_test {

using V = std::vector<double>;

Tensor f32(const Shape& shape, const V& v) {
  Tensor t(DType::f32, shape);
  for (std::size_t i = 0; i < v.size(); ++i) t.set_double(static_cast<std::int64_t>(i), v[i]);
  return t;
}

// v followed by zeros up to n values.
V padded(V v, std::size_t n) {
  v.resize(n, 0.0);
  return v;
}

MxGemmOp gemm(Tensor a, MxFormat fa, Tensor b, MxFormat fb, std::int64_t block = 32) {
  MxGemmOp op;
  op.a = {std::move(a), fa, std::nullopt};
  op.b = {std::move(b), fb, std::nullopt};
  op.block_size = block;
  return op;
}

// The 1 x 32 . 32 x 1 MXFP4 dot of the comments below.
MxGemmOp mxfp4_dot() {
  // A: amax 48, floor(log2 48) = 5, X(A) = 2^(5 - 2) = 8. V / X = 6, 3, 2.5, 1.5, 0.5, 0.125 ->
  // P(A) = 6, 3, 2 (2.5 ties to even: 2 = 1.0 x 2^1 has a zero fraction bit), 1.5, 0.5, 0 (0.125
  // is below 0.25, half of the smallest step 0.5), then zeros.
  const V a = padded({48, 24, 20, 12, 4, 1}, 32);
  // B: amax 0.75, floor(log2 0.75) = -1, X(B) = 2^(-1 - 2) = 1/8. V / X = 6, -4, 2, 1.5, then 27 values
  // 0.0625 * 8 = 0.5 -> P(B) = 6, -4, 2, 1.5, 0.5 x 28.
  V b{0.75, -0.5, 0.25, 0.1875};
  b.resize(32, 0.0625);
  return gemm(f32({1, 32}, a), MxFormat::mxfp4, f32({32, 1}, b), MxFormat::mxfp4);
}

TEST(MxGemm, Mxfp4DotOfOneBlockPair) {
  // X(A) X(B) = 8 / 8 = 1; sum P(A) P(B) = 36 - 12 + 4 + 2.25 + 0.5 * 0.5 = 30.5 (P(A) is 0 from k = 5).
  const MxGemmResult r = mx_gemm(mxfp4_dot());
  EXPECT_EQ(r.y.get_double(0), 30.5);
  EXPECT_EQ(r.exact[0], Rational(61, 2));
  // The TOSA bound's sum of |a||b|: 36 + 12 + 4 + 2.25 + 0.25 = 54.5.
  EXPECT_EQ(r.bound[0], 54.5);
  EXPECT_EQ(r.a.quantized.scales.bits(0), 127u + 3);  // E8M0 code of 2^3
  EXPECT_EQ(r.b.quantized.scales.bits(0), 127u - 3);
}

TEST(MxGemm, Mxfp4DotTiesAwayAndBias) {
  // Ties away (microxcaling): 2.5 -> 3, so sum = 36 - 12 + 6 + 2.25 + 0.25 = 32.5; + bias 0.25 = 32.75.
  MxGemmOp op = mxfp4_dot();
  op.element_rounding = RoundingMode::rna;
  op.bias = f32({1}, {0.25});
  const MxGemmResult r = mx_gemm(op);
  EXPECT_EQ(r.y.get_double(0), 32.75);
  EXPECT_TRUE(r.nonzero_bias);
  // The bound: A's third value is now 3 * 8 = 24 (was 16), |a2 b2| = 24 * 0.25 = 6 (was 4), + |bias|.
  EXPECT_EQ(r.bound[0], 54.5 + 2 + 0.25);
}

TEST(MxGemm, BlockPairsWithTheirOwnScalesAndOneRoundingAtTheEnd) {
  // MXFP8 E4M3, K = 64, B given [N, K]. A's block 0: 32 values 2^19, amax 2^19: X = 2^(19 - 8) = 2^11,
  // P = 256. A's block 1: 1 then zeros: X = 2^(0 - 8), P = 256 then 0. B: all 1: X = 2^-8, P = 256.
  // Block dots: 2^11 2^-8 (32 * 256 * 256) = 2^24 and 2^-16 (256 * 256) = 1; the sum 2^24 + 1 lies
  // half-way between f32's 2^24 and 2^24 + 2 and rounds to even: 2^24 (a tie).
  V a(32, std::ldexp(1.0, 19));
  a.push_back(1);
  a.resize(64, 0.0);
  MxGemmOp op = gemm(f32({1, 64}, a), MxFormat::mxfp8_e4m3, f32({1, 64}, V(64, 1.0)), MxFormat::mxfp8_e4m3);
  op.b_layout = WeightLayout::n_by_k;
  const MxGemmResult r = mx_gemm(op);
  EXPECT_EQ(r.exact[0], Rational(BigInt(16777217)));
  EXPECT_EQ(r.y.get_double(0), 16777216.0);
  EXPECT_EQ(r.labels[0], Label::tie);
  EXPECT_EQ(mx_gemm_block_dot(r, 0, 0, 0).dot, Rational(BigInt(16777216)));
  EXPECT_EQ(mx_gemm_block_dot(r, 0, 0, 1).dot, Rational(1));
  EXPECT_EQ(mx_gemm_block_dot(r, 0, 0, 1).a_scale_code, 127u - 8);
}

TEST(MxGemm, NanScaleMakesRowAndColumnNan) {
  // A row 1 holds a NaN and B column 1 an inf: their blocks take the NaN scale (E8M0 0xFF), and OCP 6.2
  // makes a Dot with a NaN scale NaN. Y[0, 0] = 32 * (1 * 0.5) = 16 (X(A) = 2^-2, P = 4; X(B) = 2^-3,
  // P = 4: 2^-5 * 32 * 16 = 16); Y[2, 0]: A = 2 gives X = 2^-1, P = 4: 32.
  V a(96, 1.0);
  a[32] = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t k = 64; k < 96; ++k) a[k] = 2;
  V b;
  for (int k = 0; k < 32; ++k) b.insert(b.end(), {0.5, k == 5 ? std::numeric_limits<double>::infinity() : 1.0});
  const MxGemmResult r = mx_gemm(gemm(f32({3, 32}, a), MxFormat::mxfp4, f32({32, 2}, b), MxFormat::mxfp4));
  EXPECT_EQ(r.a.quantized.scales.bits(1), 0xFFu);
  EXPECT_EQ(r.b.quantized.scales.bits(1), 0xFFu);
  EXPECT_EQ(r.y.get_double(0), 16);
  EXPECT_EQ(r.y.get_double(4), 32);
  for (const std::int64_t i : {1, 2, 3, 5}) {
    EXPECT_TRUE(std::isnan(r.y.get_double(i))) << i;
    EXPECT_TRUE(r.nan[static_cast<std::size_t>(i)]);
    EXPECT_EQ(r.labels[static_cast<std::size_t>(i)], Label::special);
  }
}

TEST(MxGemm, ZeroBlocksAndSaturationFeedingTheProduct) {
  // A block of zeros: X = 2^-127 (code 0), every P 0, its block dot 0; A's other block (3's): amax 3,
  // X = 2^(1 - 8), P = 384; B all 1 (X = 2^-8, P = 256): 2^-15 * 32 * 384 * 256 = 96.
  V a(32, 0.0);
  a.resize(64, 3.0);
  MxGemmResult r = mx_gemm(gemm(f32({1, 64}, a), MxFormat::mxfp8_e4m3, f32({64, 1}, V(64, 1.0)), MxFormat::mxfp8_e4m3));
  EXPECT_EQ(r.a.quantized.scales.bits(0), 0u);
  EXPECT_EQ(r.y.get_double(0), 96);
  // MXFP4 A with amax 7.5: floor(log2 7.5) - 2 = 0, X = 1, and 7.5 saturates to 6. B in MXFP8 E4M3
  // (formats may differ): all 1, values 1. Y = 6 + 31 * 1 = 37, where an unsaturated 7.5 would give 38.5.
  V s{7.5};
  s.resize(32, 1.0);
  r = mx_gemm(gemm(f32({1, 32}, s), MxFormat::mxfp4, f32({32, 1}, V(32, 1.0)), MxFormat::mxfp8_e4m3));
  EXPECT_EQ(r.y.get_double(0), 37);
  EXPECT_EQ(r.a.quantized.labels[0], Label::saturated);
}

TEST(MxGemm, Nvfp4WithGlobalScales) {
  // A = [5, 1, 0...] (16 values), g_A = 0.5: b = f32(5 / 6) = 0.833333313..., s = b / 0.5 = 1.6666666...;
  // E4M3 near it: 1.625 and 1.75, nearer 1.625 = s8. t = 0.5 * 1.625 = 0.8125. 5 / t = 6.15 clamps to 6;
  // 1 / t = 1.23 -> 1 (1.5 is 0.27 away). B = [1, 1, 0...], g_B = 0.25: b = f32(1 / 6), s = 4b =
  // 0.6666667; E4M3 near it: 0.625 and 0.6875, nearer 0.6875 = s8. t = 0.171875, 1 / t = 5.82 -> 6.
  // X(A) X(B) = 0.8125 * 0.171875; sum P(A) P(B) = 6 * 6 + 1 * 6 = 42; Y = 5.865234375.
  MxGemmOp op =
      gemm(f32({1, 16}, padded({5, 1}, 16)), MxFormat::nvfp4, f32({16, 1}, padded({1, 1}, 16)), MxFormat::nvfp4, 16);
  op.a.global_scale = 0.5;
  op.b.global_scale = 0.25;
  const MxGemmResult r = mx_gemm(op);
  EXPECT_EQ(r.exact[0], Rational(6006, 1024));
  EXPECT_EQ(r.y.get_double(0), 5.865234375);
  EXPECT_EQ(r.a.quantized.scales.bits(0), 0x3Du);  // E4M3 1.625: exponent field 7 (bias 7), fraction 5
  EXPECT_EQ(r.b.quantized.scales.bits(0), 0x33u);  // 0.6875 = 1.375 * 2^-1: field 6, fraction 3
}

TEST(MxGemm, F16OutputRoundsTheExactSumOnce) {
  // The 30.5 of Mxfp4DotOfOneBlockPair is exact in f16 and bf16 too.
  MxGemmOp op = mxfp4_dot();
  op.out = DType::bf16;
  EXPECT_EQ(mx_gemm(op).y.get_double(0), 30.5);
  // 2^24 + 1 (BlockPairs...) in f16 overflows (largest 65504): inf, labelled saturated.
  V a(32, std::ldexp(1.0, 19));
  op = gemm(f32({1, 32}, a), MxFormat::mxfp8_e4m3, f32({32, 1}, V(32, 1.0)), MxFormat::mxfp8_e4m3);
  op.out = DType::f16;
  const MxGemmResult r = mx_gemm(op);
  EXPECT_TRUE(std::isinf(r.y.get_double(0)));
  EXPECT_EQ(r.labels[0], Label::saturated);
}

TEST(MxGemm, BadRequestsNameTheField) {
  const auto message = [](const MxGemmOp& op) {
    try {
      (void)mx_gemm(op);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  MxGemmOp op = mxfp4_dot();
  op.b.values = f32({31, 1}, V(31, 1.0));
  EXPECT_NE(message(op).find("'b.shape'"), std::string::npos) << message(op);
  op = mxfp4_dot();
  op.a.global_scale = 0.5;
  EXPECT_NE(message(op).find("'a.global_scale'"), std::string::npos) << message(op);
  op = mxfp4_dot();
  op.b.format = MxFormat::mxint8;
  op.scale_rule = MxScaleRule::ceil;
  EXPECT_NE(message(op).find("'scale_rule'"), std::string::npos) << message(op);
  op = mxfp4_dot();
  op.bias = f32({2}, {1, 2});
  EXPECT_NE(message(op).find("'bias.shape'"), std::string::npos) << message(op);
  op = mxfp4_dot();
  op.out = DType::i32;
  EXPECT_NE(message(op).find("'output_dtype'"), std::string::npos) << message(op);
}

}  // namespace mx_gemm_test
}  // namespace qc
