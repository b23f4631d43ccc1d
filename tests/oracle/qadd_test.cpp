// qadd (oracles/qadd.hpp): each scheme on elements worked by hand from its source's arithmetic.
#include "oracles/qadd.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace qadd_test {

QAddParams params(double sa, double sb, double sc, std::int64_t za = 0, std::int64_t zb = 0, std::int64_t zc = 0) {
  QAddParams p;
  p.a_scale = sa;
  p.b_scale = sb;
  p.out_scale = sc;
  p.a_zero_point = za;
  p.b_zero_point = zb;
  p.out_zero_point = zc;
  return p;
}

constexpr AddPolicy kIdeal{AddScheme::ideal, RoundingMode::rne};
constexpr AddPolicy kOrt{AddScheme::ort_mlas_avx2, RoundingMode::rne};
constexpr AddPolicy kXnnpack{AddScheme::xnnpack_vadd, RoundingMode::rne};

// sA = 0.5, sB = 0.25, sC = 1, zero points 0: C = round(a/2 + b/4).
TEST(QAdd, IdealRoundsTheExactSumOnce) {
  const QAddParams p = params(0.5, 0.25, 1);
  EXPECT_EQ(qadd_element(3, 2, p, DType::i8, kIdeal).q, 2);          // 1.5 + 0.5 = 2
  EXPECT_EQ(qadd_element(5, -1, p, DType::i8, kIdeal).q, 2);         // 2.5 - 0.25 = 2.25
  const QAddElement tie = qadd_element(1, 0, p, DType::i8, kIdeal);  // 0.5: ties to even give 0
  EXPECT_EQ(tie.q, 0);
  EXPECT_EQ(tie.label, Label::tie);
  EXPECT_EQ(qadd_element(1, 0, p, DType::i8, AddPolicy{AddScheme::ideal, RoundingMode::rna}).q, 1);
  // sC = 0.25: (63.5 + 31.75) / 0.25 = 381, saturated to 127.
  const QAddElement sat = qadd_element(127, 127, params(0.5, 0.25, 0.25), DType::i8, kIdeal);
  EXPECT_EQ(sat.q, 127);
  EXPECT_EQ(sat.label, Label::saturated);
  // u8 output, zero point 128: -64 - 32 + 128 = 32.
  EXPECT_EQ(qadd_element(-128, -128, params(0.5, 0.25, 1, 0, 0, 128), DType::u8, kIdeal).q, 32);
  // An int32 B (a quantized bias at scale 2^-8): (0.5·2 + 2^-8·1000) / 0.25 = (1 + 3.90625) · 4 = 19.625 -> 20.
  EXPECT_EQ(qadd_element(2, 1000, params(0.5, 0x1p-8, 0.25), DType::i8, kIdeal).q, 20);
}

// sA = 1, sB = 6, sC = 6: rA = fl32(1/6) = 11184811·2^-26 (0x3E2AAAAB, 1/6 + 1/(3·2^26)), rB = 1.
// zA = -127, a = -124, b = 0: the exact value (-124 + 127) / 6 = 0.5 rounds to even: 0.
// MLAS: fl(rA·zA) = fl(-127·11184811·2^-26) = fl(-1420470997·2^-26); in [16, 32) the f32 step is
// 2^-19 = 128·2^-26 and -1420470997 / 128 = -11097429.66, so -11097430·2^-19, and
// F = fl(0 - fl(-11097430·2^-19 + 0)) = 11097430·2^-19. Then
// t = fma(-124, rA, fma(0, 1, F)) = (-124·11184811 + 11097430·128)·2^-26 = 33554476·2^-26
//   = 0.5 + 11·2^-24, an f32 (its step at 0.5 is 2^-24): cvtps2dq gives 1. The zero point folded
// into one f32 constant carried F's rounding (0.34 of 2^-19) into the sum.
TEST(QAdd, OrtMlasFoldsTheZeroPointsIntoOneF32Constant) {
  const QAddParams p = params(1, 6, 6, -127, 0, 0);
  EXPECT_EQ(qadd_element(-124, 0, p, DType::i8, kIdeal).q, 0);
  EXPECT_EQ(qadd_element(-124, 0, p, DType::i8, kOrt).q, 1);
  // Where every step is exact the two agree: sA = 0.5, sB = 0.25, sC = 1 gives rA = 0.5, rB = 0.25,
  // F = 0, t = 3·0.5 + 2·0.25 = 2.
  EXPECT_EQ(qadd_element(3, 2, params(0.5, 0.25, 1), DType::i8, kOrt).q, 2);
}

// sA = 2^25, sB = sC = 1: t = fma(127, 2^25, 0) = 127·2^25 = 4261412864 >= 2^31, so cvtps2dq
// returns the integer indefinite INT32_MIN and the saturating packs give -128, where the exact
// value saturates to 127. (The AVX2 kernel checks no ratio range.)
TEST(QAdd, OrtMlasOutOfInt32RangeIsTheIntegerIndefinite) {
  const QAddParams p = params(0x1p25, 1, 1);
  EXPECT_EQ(qadd_element(127, 0, p, DType::i8, kIdeal).q, 127);
  EXPECT_EQ(qadd_element(127, 0, p, DType::i8, kOrt).q, -128);
}

// A one-element B: F' = fl(F + fl(b·rB)), t = fma(a, rA, F'). sA = 0.5, sB = 0.25, sC = 1,
// zC = 3: F = 3, F' = fl(3 + 0.25·(-4)) = 2, t = fma(5, 0.5, 2) = 4.5 -> 4 (ties to even).
TEST(QAdd, OrtMlasFoldsAOneElementB) {
  Tensor a(DType::i8, {2, 2}), b(DType::i8, {1});
  a.set_int(0, 5);
  a.set_int(1, 1);
  a.set_int(2, -1);
  a.set_int(3, 0);
  b.set_int(0, -4);
  const QAddResult r = qadd(a, b, params(0.5, 0.25, 1, 0, 0, 3), DType::i8, kOrt);
  // 2.5 - 1 + 3 = 4.5 -> 4; 0.5 - 1 + 3 = 2.5 -> 2; -0.5 - 1 + 3 = 1.5 -> 2; 0 - 1 + 3 = 2.
  EXPECT_EQ(r.q.get_int(0), 4);
  EXPECT_EQ(r.q.get_int(1), 2);
  EXPECT_EQ(r.q.get_int(2), 2);
  EXPECT_EQ(r.q.get_int(3), 2);
}

// sA = 1, sB = 6, sC = 6: rA = 11184811·2^-26, rB = 1, so max |r| = 1 (exponent 0) and
// shift = 20; mA = lrintf(11184811·2^-26·2^20) = lrintf(174762.671875) = 174763, mB = 2^20,
// bias = 2^19. a = 3, b = 0: (2^19 + 3·174763) >> 20 = 1048577 >> 20 = 1, where the exact 0.5
// rounds to even (0); a = -3: (524288 - 524289) >> 20 = -1 (an arithmetic shift floors), exact -0.5 -> 0.
TEST(QAdd, XnnpackRoundsWithTwentyOneBitMultipliersAndAShift) {
  const QAddParams p = params(1, 6, 6);
  EXPECT_EQ(qadd_element(3, 0, p, DType::i8, kXnnpack).q, 1);
  EXPECT_EQ(qadd_element(3, 0, p, DType::i8, kIdeal).q, 0);
  EXPECT_EQ(qadd_element(-3, 0, p, DType::i8, kXnnpack).q, -1);
  // zA = 3 moves the bias: 2^19 - 3·174763 = -1, and a = 6 gives (-1 + 6·174763) >> 20 = 1 as above.
  EXPECT_EQ(qadd_element(6, 0, params(1, 6, 6, 3), DType::i8, kXnnpack).q, 1);
  // a = 2, b = 1: 2^19 + 2·174763 + 2^20 = 1922390, >> 20 = 1 (exact 4/3 -> 1).
  EXPECT_EQ(qadd_element(2, 1, p, DType::i8, kXnnpack).q, 1);
}

TEST(QAdd, XnnpackDefinesRatiosInItsRangeAndEightBitOperandsOnly) {
  // 1 / 2048 = 2^-11 < 2^-10 (xnn_init_qs8_add_minmax_scalar_params asserts the range).
  EXPECT_THROW(qadd_element(1, 1, params(1, 1, 2048), DType::i8, kXnnpack), InputError);
  Tensor a(DType::i8, {2}), b(DType::i32, {2});
  EXPECT_THROW(qadd(a, b, params(1, 1, 1), DType::i8, kXnnpack), InputError);
}

// B [N] over A [M, N]: element (m, n) reads B[n]; B [M, 1] reads B[m].
TEST(QAdd, BroadcastsBOverA) {
  EXPECT_EQ(qadd_broadcast_index({2, 3}, {3}), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(qadd_broadcast_index({2, 3}, {2, 1}), (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(qadd_broadcast_index({2, 3}, {1}), (std::vector<std::int64_t>(6, 0)));
  try {
    (void)qadd_broadcast_index({2, 3}, {2});
    FAIL() << "B [2] over A [2, 3] was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not broadcast"), std::string::npos) << e.what();
  }
}

TEST(QAdd, BadParametersNameWhatIsWrong) {
  try {
    (void)qadd_element(0, 0, params(1, 1, 1, 0, 0, 200), DType::i8, kIdeal);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("output zero point 200 is outside i8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qadd_element(0, 0, params(0, 1, 1), DType::i8, kIdeal), InputError);
  EXPECT_THROW(qadd_element(0, 0, params(1, 1, 1), DType::i32, kIdeal), InputError);
}

}  // namespace qadd_test
}  // namespace qc
