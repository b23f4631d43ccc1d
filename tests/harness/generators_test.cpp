// Input generators and sweeps: values derived by hand from the generators' stated definitions.
#include "cases/generators.hpp"
#include "cases/case.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace qc {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c) from state 0: the first outputs are
// 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F.
TEST(Generators, SplitMix64MatchesThePublishedSequence) {
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(r.next(), 0x06C45D188009454Full);
}

TEST(Generators, SameSeedSameBits) {
  Tensor a(DType::f32, {1000}), b(DType::f32, {1000}), c(DType::f32, {1000});
  fill_normal(a, 42, 0.0, 1.0);
  fill_normal(b, 42, 0.0, 1.0);
  fill_normal(c, 43, 0.0, 1.0);
  EXPECT_EQ(std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()), 0);
  EXPECT_NE(std::memcmp(a.bytes().data(), c.bytes().data(), a.bytes().size()), 0);
  // Irwin-Hall of 12 uniforms minus 6 lies in [-6, 6).
  for (std::int64_t i = 0; i < a.size(); ++i) EXPECT_LT(std::fabs(a.get_double(i)), 6.0);
}

TEST(Generators, ExhaustiveWalksEveryBitPattern) {
  Tensor h(DType::f16, {65536});
  fill_exhaustive(h);
  for (std::int64_t i = 0; i < h.size(); ++i) ASSERT_EQ(h.bits(i), static_cast<std::uint64_t>(i));
  Tensor s(DType::i8, {300});
  fill_exhaustive(s);
  EXPECT_EQ(s.get_int(0), 0);
  EXPECT_EQ(s.get_int(127), 127);
  EXPECT_EQ(s.get_int(128), -128);  // pattern 0x80
  EXPECT_EQ(s.get_int(255), -1);
  EXPECT_EQ(s.get_int(256), 0);  // wraps around
  Tensor f32(DType::f32, {4});
  EXPECT_THROW(fill_exhaustive(f32), InputError);
}

TEST(Generators, SpecialsOfF16) {
  Tensor t(DType::f16, {15});
  fill_specials(t);
  EXPECT_TRUE(std::isnan(t.get_double(0)));
  EXPECT_EQ(t.bits(1), 0x0000u);                      // +0
  EXPECT_EQ(t.bits(2), 0x8000u);                      // -0
  EXPECT_EQ(t.get_double(3), std::ldexp(1, -24));     // min subnormal 2^-24
  EXPECT_EQ(t.get_double(5), std::ldexp(1023, -24));  // max subnormal (2^10 - 1) * 2^-24
  EXPECT_EQ(t.get_double(7), std::ldexp(1, -14));     // min normal
  EXPECT_EQ(t.get_double(11), 65504.0);               // max finite
  EXPECT_TRUE(std::isinf(t.get_double(13)));
}

TEST(Generators, AccumulatorStressOverflowsInt16Pairs) {
  Tensor a(DType::u8, {64}), w(DType::i8, {64});
  fill_accumulator_stress(a, 1);
  fill_accumulator_stress(w, 2);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.get_int(i), 255);
    EXPECT_TRUE(w.get_int(i) == 127 || w.get_int(i) == -128);
  }
}

// TOSA data set 0: one operand of every product is zero. Operand 0's first value: s0 comes from
// sequence 0 (m = 0x705A5E75 = 1884970613, r = m + 1 < 2^31, so s0 > 0) and the value is s1 from
// sequence 1: m = 9 * 1884970613 mod 2^32 = 4079833629, r = 4079833630 (top bit set: negative),
// r & 0x7FFFFFFF = 1932349982 -> f32 1932349952 (ulp 128); 0x7FFFFFFF -> f32 2^31;
// quotient 1932349952 / 2^31 = 15096484 * 2^-24 = 0x1.ccb548p-1 (0.8998205661773681640625).
TEST(Generators, TosaSetZeroGivesZeroProducts) {
  Tensor a(DType::f32, {257}), b(DType::f32, {257});
  fill_tosa_dot_product(a, 0, 0, 257, 0, 18446742974197923840.0);
  fill_tosa_dot_product(b, 0, 1, 257, 0, 18446742974197923840.0);
  EXPECT_EQ(a.get_double(0), -0x1.ccb548p-1);
  EXPECT_EQ(b.get_double(0), 0.0);
  int nonzero = 0;
  for (std::int64_t k = 0; k < 257; ++k) {
    EXPECT_EQ(a.get_double(k) * b.get_double(k), 0.0) << k;
    nonzero += (a.get_double(k) != 0) + (b.get_double(k) != 0);
  }
  EXPECT_GT(nonzero, 200);  // the zeros alternate between the operands, not everywhere
}

// Set 2: the k = 0 element is 1 and every other lies in (-1/sqrt(KS), 1/sqrt(KS)).
TEST(Generators, TosaSetTwoSmallOntoLarge) {
  Tensor a(DType::f32, {4, 100});
  fill_tosa_dot_product(a, 2, 0, 100, 1, 18446742974197923840.0);
  for (std::int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(a.get_double(r * 100), 1.0);
    for (std::int64_t k = 1; k < 100; ++k) EXPECT_LE(std::fabs(a.get_double(r * 100 + k)), 0.1);
  }
}

TEST(Cases, SweepExpandsToTheProduct) {
  const auto f = std::filesystem::temp_directory_path() / ("qc_sweep_" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << R"({"suite": "s", "cases": [{"name": "c", "op": "quantize",
    "input": {"dtype": "f32", "shape": [4], "generator": {"kind": "uniform", "seed": 1}},
    "scale": 1.0, "output_dtype": "i8",
    "sweep": {"scale": [0.5, 0.25], "output_dtype": ["i8", "u8", "i16"]}}]})";
  const Suite s = load_suite(f);
  std::filesystem::remove(f);
  ASSERT_EQ(s.cases.size(), 6u);
  EXPECT_EQ(s.cases[0].name, "c[output_dtype=i8,scale=0.5]");
  EXPECT_EQ(s.cases[5].name, "c[output_dtype=i16,scale=0.25]");
  EXPECT_EQ(std::get<QuantizeOp>(s.cases[5].op).params.scales[0], 0.25);
  EXPECT_EQ(std::get<QuantizeOp>(s.cases[5].op).out, DType::i16);
}

}  // namespace
}  // namespace qc
