// Hand-derived vectors for QuantizeLinear to float8 and DequantizeLinear from float8 (ONNX opset 19+),
// worked out in the comments from the OCP 8-bit floating point definitions and ONNX Cast's float8
// table, not taken from the code.
//
// E4M3FN: bias 7, 3 fraction bits, no inf; S.1111.111 = NaN; largest 1.110b * 2^8 = 448 (0x7E);
//   smallest normal 2^-6 (0x08); subnormals k * 2^-9 (0x01..0x07). 1.0 = 0 0111 000 = 0x38.
// E5M2: bias 15, 2 fraction bits, IEEE inf (0x7C) and NaN; largest 1.11b * 2^15 = 57344 (0x7B);
//   subnormals k * 2^-16.
#include "oracles/fp8.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qc {
namespace fp8_test {

using K = ComputeFormat::Kind;

QuantizePolicy quotient_in(K compute) {
  QuantizePolicy p;
  p.compute = ComputeFormat{compute, 0};
  return p;
}

std::uint64_t q8(double x, double s, DType out, bool saturate = true, K compute = K::exact) {
  return quantize_to_float8_element(x, DType::f32, s, DType::f32, out, saturate, quotient_in(compute)).bits;
}

Label q8_label(double x, double s, DType out, bool saturate = true) {
  return quantize_to_float8_element(x, DType::f32, s, DType::f32, out, saturate, quotient_in(K::exact)).label;
}

bool is_nan_code(DType t, std::uint64_t bits) { return std::isnan(float_bits_to_double(t, bits)); }

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Float8Quantize, TiesGoToEven) {
  // [1, 2) in E4M3 has step 1/8. 1.0625 lies half-way between 1.0 (fraction 000, even) and 1.125
  // (001): 1.0 = 0x38. 1.1875 lies half-way between 1.125 (001) and 1.25 (010, even): 0x3A.
  EXPECT_EQ(q8(1.0625, 1.0, DType::f8e4m3fn), 0x38u);
  EXPECT_EQ(q8(1.1875, 1.0, DType::f8e4m3fn), 0x3Au);
  EXPECT_EQ(q8_label(1.0625, 1.0, DType::f8e4m3fn), Label::tie);
  // x / s with s = 2: 2.125 / 2 = 1.0625, the same tie.
  EXPECT_EQ(q8(2.125, 2.0, DType::f8e4m3fn), 0x38u);
  // E5M2, step 1/4 on [1, 2): 1.125 is half-way between 1.0 (00, even) = 0x3C and 1.25 (01).
  EXPECT_EQ(q8(1.125, 1.0, DType::f8e5m2), 0x3Cu);
}

TEST(Float8Quantize, Subnormals) {
  // E4M3 subnormal quantum 2^-9. 3 * 2^-10 = 1.5 quanta: a tie between 1 (odd) and 2 (even) -> 2 = 0x02.
  EXPECT_EQ(q8(3 * std::ldexp(1.0, -10), 1.0, DType::f8e4m3fn), 0x02u);
  // 2^-10 = half a quantum: a tie between 0 (even) and 1 -> 0; the negative one keeps its sign: -0 = 0x80.
  EXPECT_EQ(q8(std::ldexp(1.0, -10), 1.0, DType::f8e4m3fn), 0x00u);
  EXPECT_EQ(q8(-std::ldexp(1.0, -10), 1.0, DType::f8e4m3fn), 0x80u);
  // 7 * 2^-9 is the largest subnormal, 0x07; 2^-6 the smallest normal, 0x08.
  EXPECT_EQ(q8(7 * std::ldexp(1.0, -9), 1.0, DType::f8e4m3fn), 0x07u);
  EXPECT_EQ(q8(std::ldexp(1.0, -6), 1.0, DType::f8e4m3fn), 0x08u);
  // E5M2: 2^-16 (0x01) from 2^-14 / 4.
  EXPECT_EQ(q8(std::ldexp(1.0, -14), 4.0, DType::f8e5m2), 0x01u);
}

TEST(Float8Quantize, OverflowSaturatesOrGoesToNanOrInf) {
  // E4M3 on [256, 512) has step 32: 448 (1.110b) and 480 (1.111b, whose code is NaN). 464 is half-way
  // and ties to the even 448 in both modes (no overflow); 465 rounds to 480 > 448: saturate -> 448
  // (0x7E), no saturation -> NaN (ONNX Cast: e4m3fn has no inf).
  EXPECT_EQ(q8(464, 1.0, DType::f8e4m3fn, true), 0x7Eu);
  EXPECT_EQ(q8(464, 1.0, DType::f8e4m3fn, false), 0x7Eu);
  EXPECT_EQ(q8(465, 1.0, DType::f8e4m3fn, true), 0x7Eu);
  EXPECT_TRUE(is_nan_code(DType::f8e4m3fn, q8(465, 1.0, DType::f8e4m3fn, false)));
  EXPECT_EQ(q8(-465, 1.0, DType::f8e4m3fn, true), 0xFEu);
  EXPECT_EQ(q8_label(465, 1.0, DType::f8e4m3fn), Label::saturated);
  // E5M2: 57344 (1.11b * 2^15, fraction 11, odd) and 65536 (2^16, even, past the largest). 61440 is
  // half-way and ties to 65536: saturate -> 57344 (0x7B), no saturation -> +inf (0x7C). 61439 stays 57344.
  EXPECT_EQ(q8(61440, 1.0, DType::f8e5m2, true), 0x7Bu);
  EXPECT_EQ(q8(61440, 1.0, DType::f8e5m2, false), 0x7Cu);
  EXPECT_EQ(q8(-61440, 1.0, DType::f8e5m2, false), 0xFCu);
  EXPECT_EQ(q8(61439, 1.0, DType::f8e5m2, false), 0x7Bu);
}

TEST(Float8Quantize, SpecialsFollowOnnxCastTable) {
  // inf: saturate -> +-max; no saturation -> NaN (e4m3fn) or inf (e5m2). NaN -> NaN in every mode.
  EXPECT_EQ(q8(kInf, 1.0, DType::f8e4m3fn, true), 0x7Eu);
  EXPECT_EQ(q8(-kInf, 1.0, DType::f8e4m3fn, true), 0xFEu);
  EXPECT_TRUE(is_nan_code(DType::f8e4m3fn, q8(kInf, 1.0, DType::f8e4m3fn, false)));
  EXPECT_EQ(q8(kInf, 1.0, DType::f8e5m2, true), 0x7Bu);
  EXPECT_EQ(q8(-kInf, 1.0, DType::f8e5m2, false), 0xFCu);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const DType t : {DType::f8e4m3fn, DType::f8e5m2})
    for (const bool sat : {true, false}) EXPECT_TRUE(is_nan_code(t, q8(nan, 1.0, t, sat)));
  EXPECT_EQ(q8_label(nan, 1.0, DType::f8e4m3fn), Label::special);
}

TEST(Float8Quantize, F32QuotientRoundsTwice) {
  // x = 1.0625 + 9u, s = 1 + 8u with u = 2^-23 (both f32). x/s = 1.0625 + 0.5u/s: just above
  // E4M3's tie at 1.0625, so the exact quotient rounds once to 1.125 (0x39). In f32 (the ONNX
  // reference divides f32 arrays) 0.5u/s < u/2 rounds to 1.0625 exactly, which then ties to
  // even: 1.0 (0x38).
  const double u = std::ldexp(1.0, -23);
  const double x = 1.0625 + 9 * u, s = 1 + 8 * u;
  EXPECT_EQ(q8(x, s, DType::f8e4m3fn, true, K::exact), 0x39u);
  EXPECT_EQ(q8(x, s, DType::f8e4m3fn, true, K::f32), 0x38u);
  EXPECT_EQ(q8(x, s, DType::f8e4m3fn, true, K::scale_type), 0x38u);  // f32 scales: f32 division
  EXPECT_EQ(q8_label(x, s, DType::f8e4m3fn), Label::near_tie);
}

TEST(Float8Quantize, ZeroPointMustBeZero) {
  Tensor x(DType::f32, {2});
  x.set_double(0, 1.0);
  x.set_double(1, 2.0);
  QuantParams p;
  p.scales = {1.0};
  p.zero_points = {1};
  EXPECT_THROW(quantize_to_float8(x, p, DType::f8e4m3fn, true, QuantizePolicy{}), InputError);
  p.zero_points = {0};
  const QuantizeResult r = quantize_to_float8(x, p, DType::f8e4m3fn, true, QuantizePolicy{});
  EXPECT_EQ(r.q.bits(0), 0x38u);  // 1.0
  EXPECT_EQ(r.q.bits(1), 0x40u);  // 2.0 = 0 1000 000
}

DequantizePolicy product_in(K compute) { return {DequantizeOrder::sub_int_then_mul, ComputeFormat{compute, 0}}; }

TEST(Float8Dequantize, OnnxExampleVector) {
  // ONNX's test_dequantizelinear_e4m3fn_zero_point: x = [0, 0.5, 1, 448, -104], scale 2 ->
  // [0, 1, 2, 896, -208]. Codes: 0.5 = 0 0110 000 = 0x30, 1 = 0x38, 448 = 0x7E, -104 = -1.101b * 2^6
  // = 1 1101 101 = 0xED.
  const std::uint64_t codes[] = {0x00, 0x30, 0x38, 0x7E, 0xED};
  const double want[] = {0, 1, 2, 896, -208};
  for (int i = 0; i < 5; ++i) {
    const DequantizeElement e =
        dequantize_from_float8_element(codes[i], DType::f8e4m3fn, 2.0, DType::f32, DType::f32, product_in(K::f32));
    EXPECT_EQ(e.bits, std::bit_cast<std::uint32_t>(static_cast<float>(want[i]))) << i;
  }
}

TEST(Float8Dequantize, SpecialsAndSubnormals) {
  const DequantizePolicy p = product_in(K::f32);
  // E5M2 0x7C = +inf stays inf; E4M3 0x7F is NaN.
  EXPECT_EQ(dequantize_from_float8_element(0x7C, DType::f8e5m2, 1.0, DType::f32, DType::f32, p).bits, 0x7F800000u);
  EXPECT_TRUE(std::isnan(float_bits_to_double(
      DType::f32, dequantize_from_float8_element(0x7F, DType::f8e4m3fn, 1.0, DType::f32, DType::f32, p).bits)));
  EXPECT_EQ(dequantize_from_float8_element(0x7F, DType::f8e4m3fn, 1.0, DType::f32, DType::f32, p).label,
            Label::special);
  // E4M3 0x01 = 2^-9, times 0.5 = 2^-10.
  EXPECT_EQ(dequantize_from_float8_element(0x01, DType::f8e4m3fn, 0.5, DType::f32, DType::f32, p).bits,
            std::bit_cast<std::uint32_t>(std::ldexp(1.0f, -10)));
  // -0 (0x80) times 3 is -0.
  EXPECT_EQ(dequantize_from_float8_element(0x80, DType::f8e4m3fn, 3.0, DType::f32, DType::f32, p).bits, 0x80000000u);
}

TEST(Float8Dequantize, F32ProductThenF16RoundsTwice) {
  // q = 1.125 (E4M3 0x39), s = 14920363 * 2^-24 (an f32 in [0.5, 1)). q*s = 16785408.375 * 2^-24 =
  // 1 + 2^-11 + 0.375 * 2^-24: in f32 (step 2^-23 on [1, 2)) that is 1 + 2^-11 exactly, the midpoint
  // of f16's 1.0 and 1 + 2^-10, which ties to even: 1.0 = 0x3C00. Rounded once, the exact product is
  // above the midpoint: 1 + 2^-10 = 0x3C01.
  const double s = 14920363 * std::ldexp(1.0, -24);
  EXPECT_EQ(dequantize_from_float8_element(0x39, DType::f8e4m3fn, s, DType::f32, DType::f16, product_in(K::f32)).bits,
            0x3C00u);
  EXPECT_EQ(dequantize_from_float8_element(0x39, DType::f8e4m3fn, s, DType::f32, DType::f16, product_in(K::exact)).bits,
            0x3C01u);
}

}  // namespace fp8_test
}  // namespace qc
