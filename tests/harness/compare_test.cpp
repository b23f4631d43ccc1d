// ulp_delta (harness/compare.hpp): the distance in ULP that every float comparison reports, against
// positions counted by hand in each format's ordered sequence of values (+0 and -0 share one;
// an infinity is one step past the largest finite value; NaN is at 0 from NaN, infinitely far
// from anything else). Bit patterns from IEEE 754 binary16/32/64, bfloat16 and OCP FP8.
#include "harness/compare.hpp"

#include <gtest/gtest.h>

namespace qc {
namespace {

TEST(UlpDelta, NeighboursZerosAndSubnormalsInF32) {
  EXPECT_EQ(ulp_delta(DType::f32, 0x3f800000, 0x3f800001), 1);   // 1 -> next float up
  EXPECT_EQ(ulp_delta(DType::f32, 0x3f800001, 0x3f800000), -1);  // signed: actual - expected
  EXPECT_EQ(ulp_delta(DType::f32, 0x00000000, 0x80000000), 0);   // +0 against -0
  EXPECT_EQ(ulp_delta(DType::f32, 0x80000001, 0x00000001), 2);   // -2^-149, (0), +2^-149
  EXPECT_EQ(ulp_delta(DType::f32, 0x007fffff, 0x00800000), 1);   // largest subnormal -> smallest normal
  EXPECT_EQ(ulp_delta(DType::f32, 0x3f7fffff, 0x3f800000), 1);   // across a binade
}

TEST(UlpDelta, Infinities) {
  EXPECT_EQ(ulp_delta(DType::f32, 0x7f7fffff, 0x7f800000), 1);  // largest finite -> +inf
  EXPECT_EQ(ulp_delta(DType::f32, 0xff800000, 0x7f800000), 2 * std::int64_t{0x7f800000});
  EXPECT_EQ(ulp_delta(DType::f16, 0x7bff, 0x7c00), 1);  // 65504 -> +inf
  EXPECT_EQ(ulp_delta(DType::f8e5m2, 0x7b, 0x7c), 1);   // 57344 -> +inf
}

TEST(UlpDelta, NaNIsAtZeroFromNaNAndInfinitelyFarFromNumbers) {
  EXPECT_EQ(ulp_delta(DType::f32, 0x7fc00000, 0xffc00001), 0);  // any NaN equals any NaN
  EXPECT_EQ(ulp_delta(DType::f32, 0x7fc00000, 0x3f800000), kUlpInfinite);
  EXPECT_EQ(ulp_delta(DType::f32, 0x3f800000, 0x7fc00000), kUlpInfinite);
  EXPECT_EQ(ulp_delta(DType::f32, 0x7f800000, 0x7fc00000), kUlpInfinite);  // inf is not NaN
  EXPECT_EQ(ulp_delta(DType::f16, 0x7e00, 0x7c01), 0);                     // f16 NaNs
  EXPECT_EQ(ulp_delta(DType::f8e4m3fn, 0x7f, 0xff), 0);                    // E4M3's two NaNs
  EXPECT_EQ(ulp_delta(DType::f8e4m3fn, 0x7e, 0x7f), kUlpInfinite);         // 448 against NaN
  EXPECT_EQ(ulp_delta(DType::f8e5m2, 0x7e, 0x7d), 0);                      // E5M2 NaNs
}

TEST(UlpDelta, BinadesOfTheNarrowFormats) {
  EXPECT_EQ(ulp_delta(DType::f16, 0x3c00, 0x4000), 1024);   // 1 -> 2: 2^10 values in a binade
  EXPECT_EQ(ulp_delta(DType::bf16, 0x3f80, 0x4000), 128);   // 1 -> 2: 2^7 values
  EXPECT_EQ(ulp_delta(DType::f8e4m3fn, 0x38, 0xb8), -112);  // 1 -> -1: 56 positions each side of 0
  EXPECT_EQ(ulp_delta(DType::f8e5m2, 0x3c, 0x40), 4);       // 1 -> 2: 2^2 values
  EXPECT_EQ(ulp_delta(DType::f64, 0x3ff0000000000000, 0x3ff0000000000001), 1);
}

}  // namespace
}  // namespace qc
