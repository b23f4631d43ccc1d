// accumulate_dot and accumulation_bound (oracles/int_accumulate.hpp): one dot product under each
// accumulator, against sums worked out by hand (vpmaddubsw's int16 pair saturation: 255 * 127 * 2 =
// 64770 > 32767; int32 wrap and saturation at 2^31; the K at which u8 x s8 sums can overflow int32).
#include "oracles/int_accumulate.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace qc {
namespace {

TEST(Accumulation, Int16PairSaturation) {
  // oneDNN doc/advanced_topics/int8_computations.md: u8 255 x s8 127 twice is 64770, but vpmaddubsw
  // saturates the pair sum to int16: 32767.
  const std::vector<std::int32_t> a = {255, 255}, b = {127, 127};
  DotProduct d = accumulate_dot(a, b, Accumulation::int16_pair_saturate);
  EXPECT_EQ(d.exact, 64770);
  EXPECT_EQ(d.value, 32767);
  EXPECT_TRUE(d.overflowed());
  // Pairs (0,1) and (2,3): 32767 and 255*(-128)*2 = -65280 -> -32768; total -1 (exact -510).
  d = accumulate_dot(std::vector<std::int32_t>{255, 255, 255, 255}, std::vector<std::int32_t>{127, 127, -128, -128},
                     Accumulation::int16_pair_saturate);
  EXPECT_EQ(d.value, -1);
  EXPECT_EQ(d.exact, -510);
  // Odd K: the last element pairs with a zero pad: 32767 + 255*127 = 32767 + 32385 = 65152 (exact 97155).
  d = accumulate_dot(std::vector<std::int32_t>{255, 255, 255}, std::vector<std::int32_t>{127, 127, 127},
                     Accumulation::int16_pair_saturate);
  EXPECT_EQ(d.value, 65152);
  EXPECT_EQ(d.exact, 97155);
  // 7-bit activations (PyTorch reduce_range) never saturate: 127*127*2 = 32258.
  d = accumulate_dot(std::vector<std::int32_t>{127, 127}, std::vector<std::int32_t>{127, 127},
                     Accumulation::int16_pair_saturate);
  EXPECT_FALSE(d.overflowed());
  EXPECT_THROW(
      accumulate_dot(std::vector<std::int32_t>{-1}, std::vector<std::int32_t>{1}, Accumulation::int16_pair_saturate),
      InputError);
  EXPECT_THROW(
      accumulate_dot(std::vector<std::int32_t>{1}, std::vector<std::int32_t>{128}, Accumulation::int16_pair_saturate),
      InputError);
}

TEST(Accumulation, Int32WrapSaturateAndInt64) {
  // 70000 products 255*127 = 32385: exact 2,266,950,000 > 2^31 - 1; int32 wrap: - 2^32 = -2,028,017,296;
  // int32 saturate: 2,147,483,647.
  const std::vector<std::int32_t> a(70000, 255), b(70000, 127);
  EXPECT_EQ(accumulate_dot(a, b, Accumulation::exact).value, BigInt(2266950000LL));
  EXPECT_EQ(accumulate_dot(a, b, Accumulation::int32_wrap).value, BigInt(-2028017296LL));
  EXPECT_EQ(accumulate_dot(a, b, Accumulation::int32_saturate).value, BigInt(2147483647LL));
  EXPECT_EQ(accumulate_dot(a, b, Accumulation::int64).value, BigInt(2266950000LL));
  // Saturation depends on the order: products 2^31, 2^31, -2^31 (exact 2^31). Saturating in index
  // order: 2^31 - 1, 2^31 - 1, then -1. Wrapping: 2^31 -> -2^31.
  const std::vector<std::int32_t> c = {65536, 65536, -65536}, d = {32768, 32768, 32768};
  EXPECT_EQ(accumulate_dot(c, d, Accumulation::int32_saturate).value, -1);
  EXPECT_EQ(accumulate_dot(c, d, Accumulation::int32_wrap).value, BigInt(-2147483648LL));
  // int64: three products INT_MIN * INT_MIN = 2^62: 3 * 2^62 - 2^64 = -2^62.
  const std::vector<std::int32_t> e(3, std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(accumulate_dot(e, e, Accumulation::int64).value, BigInt(-(std::int64_t{1} << 62)));
  EXPECT_THROW(accumulate_dot(std::vector<std::int32_t>{1, 2}, std::vector<std::int32_t>{1}, Accumulation::exact),
               InputError);
}

TEST(Accumulation, Int32BoundForU8TimesS8) {
  // Products of u8 [0, 255] and s8 [-128, 127] lie in [255*(-128), 255*127] = [-32640, 32385].
  // K * 32640 <= 2^31 holds up to K = 65793 (65793 * 32640 = 2,147,483,520) and fails at 65794
  // (2,147,516,160).
  const IntRange u8{0, 255}, s8{-128, 127};
  EXPECT_TRUE(int32_accumulation_is_exact(65793, u8, s8));
  EXPECT_FALSE(int32_accumulation_is_exact(65794, u8, s8));
  const AccumulationBound b = accumulation_bound(Accumulation::int32_wrap, 65794, u8, s8);
  EXPECT_EQ(b.lo, BigInt(-2147516160LL));
  EXPECT_EQ(b.hi, BigInt(std::int64_t{65794} * 32385));
  // int16 pairs: 2 * 255 * 127 = 64770 > 32767, never exact for K >= 2; 7-bit activations are.
  EXPECT_FALSE(accumulation_bound(Accumulation::int16_pair_saturate, 2, u8, s8).exact);
  EXPECT_TRUE(accumulation_bound(Accumulation::int16_pair_saturate, 64, IntRange{0, 127}, s8).exact);
  EXPECT_TRUE(accumulation_bound(Accumulation::int64, 1 << 30, u8, s8).exact);
  EXPECT_TRUE(accumulation_bound(Accumulation::exact, 1 << 30, u8, s8).exact);
}

}  // namespace
}  // namespace qc
