// cpu-ref's own float rounding and int4 unpacking (backends/cpu_ref/formats.hpp), which keep it
// independent of the oracle's, against values derived by hand from the formats' definitions:
// binary16 (p = 11, normal exponents -14..15, largest 65504), bfloat16 (p = 8, f32's exponents),
// OCP FP8 E4M3 (p = 4, largest 448, no infinity) and E5M2 (p = 3, largest 57344), and the int4
// layouts of docs/numerics.md "Int4 packing".
#include "backends/cpu_ref/formats.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace qc::cpu_ref {
namespace {

TEST(CpuRefFormats, RoundsToNearestEvenInEachFormat) {
  // f16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to the even one, 1.
  EXPECT_EQ(round_to_format(DType::f16, 1 + 0x1p-11), 1.0);
  EXPECT_EQ(round_to_format(DType::f16, 1 + 3 * 0x1p-11), 1 + 0x1p-9);  // halfway, up to the even
  EXPECT_EQ(round_to_format(DType::f16, 0x1p-25), 0.0);                 // half the smallest subnormal
  EXPECT_EQ(round_to_format(DType::f16, 1.5 * 0x1p-25), 0x1p-24);
  EXPECT_EQ(round_to_format(DType::f16, 65519.0), 65504.0);  // below the halfway point 65520
  EXPECT_TRUE(std::isinf(round_to_format(DType::f16, 65520.0)));
  EXPECT_TRUE(std::signbit(round_to_format(DType::f16, -0x1p-30)));  // a signed zero
  // bf16: 1 + 2^-8 halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(round_to_format(DType::bf16, 1 + 0x1p-8), 1.0);
  EXPECT_EQ(round_to_format(DType::bf16, 1 + 3 * 0x1p-8), 1 + 0x1p-6);
  EXPECT_EQ(round_to_format(DType::bf16, 0x1p-133), 0x1p-133);  // the smallest subnormal
  // E4M3: 464 is halfway between 448 (1.75 * 2^8) and 480, which is NaN's pattern: ties to 448 (even).
  EXPECT_EQ(round_to_format(DType::f8e4m3fn, 464.0), 448.0);
  EXPECT_TRUE(std::isnan(round_to_format(DType::f8e4m3fn, 465.0)));
  EXPECT_TRUE(std::isnan(round_to_format(DType::f8e4m3fn, INFINITY)));
  // E5M2: 61440 halfway between 57344 (odd significand 1.11) and 65536: to 65536, past the largest.
  EXPECT_TRUE(std::isinf(round_to_format(DType::f8e5m2, 61440.0)));
  EXPECT_EQ(round_to_format(DType::f8e5m2, 61439.0), 57344.0);
  // f32 and f64: the hardware.
  EXPECT_EQ(round_to_format(DType::f32, 1 + 0x1p-24), 1.0);
  EXPECT_EQ(round_to_format(DType::f64, 1 + 0x1p-52), 1 + 0x1p-52);
}

TEST(CpuRefFormats, WritesEachFormatsBitPattern) {
  EXPECT_EQ(to_format_bits(DType::f16, 1.0), 0x3c00u);
  EXPECT_EQ(to_format_bits(DType::f16, -2.0), 0xc000u);
  EXPECT_EQ(to_format_bits(DType::f16, 0x1p-24), 0x0001u);  // smallest subnormal
  EXPECT_EQ(to_format_bits(DType::f16, 65504.0), 0x7bffu);
  EXPECT_EQ(to_format_bits(DType::f16, 1e6), 0x7c00u);  // +inf
  EXPECT_EQ(to_format_bits(DType::f16, -0.0), 0x8000u);
  EXPECT_EQ(to_format_bits(DType::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(to_format_bits(DType::bf16, -0x1.fep127), 0xff7fu);
  EXPECT_EQ(to_format_bits(DType::f8e4m3fn, 448.0), 0x7eu);
  EXPECT_EQ(to_format_bits(DType::f8e4m3fn, 0x1p-9), 0x01u);  // smallest subnormal 2^-6 * 2^-3
  EXPECT_EQ(to_format_bits(DType::f8e4m3fn, 1.0), 0x38u);     // exponent 7 (bias 7), significand 0
  EXPECT_EQ(to_format_bits(DType::f8e5m2, 57344.0), 0x7bu);
  EXPECT_EQ(to_format_bits(DType::f8e5m2, -INFINITY), 0xfcu);
  EXPECT_EQ(to_format_bits(DType::f32, 1.0), 0x3f800000u);
}

Tensor bytes(Shape s, std::initializer_list<int> v) {
  Tensor t(DType::u8, std::move(s));
  std::int64_t i = 0;
  for (int b : v) t.set_int(i++, b);
  return t;
}

std::vector<std::int64_t> values(const Tensor& t) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < t.size(); ++i) v.push_back(t.get_int(i));
  return v;
}

TEST(CpuRefFormats, UnpacksNibblesInEachLayout) {
  Int4Packing flat_low;  // ONNX: element 2k in the low nibble
  EXPECT_EQ(values(unpack_nibbles(bytes({2}, {0x21, 0x43}), DType::i4, {4}, flat_low)),
            (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values(unpack_nibbles(bytes({1}, {0xf8}), DType::i4, {2}, flat_low)), (std::vector<std::int64_t>{-8, -1}));
  EXPECT_EQ(values(unpack_nibbles(bytes({1}, {0xf8}), DType::u4, {2}, flat_low)), (std::vector<std::int64_t>{8, 15}));
  EXPECT_EQ(values(unpack_nibbles(bytes({2}, {0x21, 0x03}), DType::u4, {3}, flat_low)),  // odd: padded
            (std::vector<std::int64_t>{1, 2, 3}));
  Int4Packing flat_high = flat_low;  // torchao: element 0 in the high nibble
  flat_high.nibbles = NibbleOrder::high_first;
  EXPECT_EQ(values(unpack_nibbles(bytes({2}, {0x21, 0x43}), DType::u4, {4}, flat_high)),
            (std::vector<std::int64_t>{2, 1, 4, 3}));
  Int4Packing rows = flat_low;  // pairs along the last axis, each row on its own (padded)
  rows.axis = -1;
  EXPECT_EQ(values(unpack_nibbles(bytes({2, 2}, {0x21, 0x03, 0x54, 0x06}), DType::u4, {2, 3}, rows)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  Int4Packing columns = flat_low;  // pairs along axis 0 of a [2, 2]: byte j holds column j
  columns.axis = 0;
  EXPECT_EQ(values(unpack_nibbles(bytes({1, 2}, {0x31, 0x42}), DType::u4, {2, 2}, columns)),
            (std::vector<std::int64_t>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace qc::cpu_ref
