// Hand-derived vectors for dequantize under each DequantizeOrder and compute format, and the
// fast path against the slow path. Each expected value is worked out in the comment next to it
// from the IEEE definitions (one rounding per operation, ties to even), not taken from the code.
//
// Useful facts: 0.1f = 13421773 * 2^-27 (0x3DCCCCCD); an f32 significand has 24 bits, so a
// product n * 2^e with n of 25 or 26 bits rounds n to a multiple of 2 or 4.
#include "oracles/dequantize.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace qc {
namespace {

using O = DequantizeOrder;
using K = ComputeFormat::Kind;

DequantizePolicy policy(O order, K compute) { return {order, ComputeFormat{compute, 0}}; }

std::uint64_t deq(std::int64_t q, std::int64_t zp, double s, DType out, const DequantizePolicy& p,
                  DType scale_dtype = DType::f32, DType q_dtype = DType::i32) {
  return dequantize_element(q, q_dtype, s, scale_dtype, zp, out, p).bits;
}

Label deq_label(std::int64_t q, std::int64_t zp, double s, DType out, const DequantizePolicy& p,
                DType scale_dtype = DType::f32) {
  return dequantize_element(q, DType::i32, s, scale_dtype, zp, out, p).label;
}

std::uint32_t f32_bits(float v) { return std::bit_cast<std::uint32_t>(v); }

const double kTenthF = static_cast<double>(0.1f);  // 13421773 * 2^-27

TEST(DequantizeOrders, MulThenSubDiffersFromIntegerSubtractionInF32) {
  // q = 3, zp = 1, s = 0.1f.
  // (q - zp) * s = 2 * 13421773 * 2^-27 = 13421773 * 2^-26: exact, 0x3E4CCCCD (= 0.2f).
  EXPECT_EQ(deq(3, 1, kTenthF, DType::f32, policy(O::sub_int_then_mul, K::f32)), 0x3E4CCCCDu);
  EXPECT_EQ(deq(3, 1, kTenthF, DType::f32, policy(O::sub_float_then_mul, K::f32)), 0x3E4CCCCDu);
  // q*s = 40265319 * 2^-27 (26 bits) -> 40265320 * 2^-27 (= 10066330 * 2^-25, 0.3f);
  // zp*s = 13421773 * 2^-27 exact; difference = 26843547 * 2^-27 (25 bits): 13421773.5 * 2^-26,
  // a tie, to even 13421774 * 2^-26 = 0x3E4CCCCE, one ulp above the exact 0.2f.
  EXPECT_EQ(deq(3, 1, kTenthF, DType::f32, policy(O::mul_then_sub, K::f32)), 0x3E4CCCCEu);
  // fma(3, s, -s) = RN(2s) = 2s exactly: 0x3E4CCCCD.
  EXPECT_EQ(deq(3, 1, kTenthF, DType::f32, policy(O::fma, K::f32)), 0x3E4CCCCDu);
  // The exact value 2s is an f32 value: clear.
  EXPECT_EQ(deq_label(3, 1, kTenthF, DType::f32, policy(O::mul_then_sub, K::f32)), Label::clear);
}

TEST(DequantizeOrders, FmaAndMulThenSubDifferFromIntegerSubtractionWhenZpTimesSRounds) {
  // q = 4, zp = 3, s = 0.1f. (q - zp) * s = s: 0x3DCCCCCD.
  EXPECT_EQ(deq(4, 3, kTenthF, DType::f32, policy(O::sub_int_then_mul, K::f32)), 0x3DCCCCCDu);
  // zp*s = RN(40265319 * 2^-27) = 40265320 * 2^-27 (rounded up by 2^-27).
  // fma: exact 4s - 40265320 * 2^-27 = (53687092 - 40265320) * 2^-27 = 13421772 * 2^-27,
  // 24 bits, exact: 0x3DCCCCCC.
  EXPECT_EQ(deq(4, 3, kTenthF, DType::f32, policy(O::fma, K::f32)), 0x3DCCCCCCu);
  // mul_then_sub: 4s is exact (a power-of-two multiple), so the same difference: 0x3DCCCCCC.
  EXPECT_EQ(deq(4, 3, kTenthF, DType::f32, policy(O::mul_then_sub, K::f32)), 0x3DCCCCCCu);
  // In f64 compute every step is exact here (products of 26 bits): s exactly, cast to f32.
  EXPECT_EQ(deq(4, 3, kTenthF, DType::f32, policy(O::mul_then_sub, K::f64)), 0x3DCCCCCDu);
}

TEST(DequantizeOrders, FloatSubtractionInF16RoundsTheOperands) {
  // f16 has 11 significant bits: between 2048 and 4096 the step is 2.
  // q = 2051, zp = 1, s = 1, f16 compute, f32 output.
  // Integer subtraction: 2050 exactly (even step), times 1: 2050.
  EXPECT_EQ(deq(2051, 1, 1.0, DType::f32, policy(O::sub_int_then_mul, K::f16)), f32_bits(2050.0f));
  // Float subtraction: f16(2051) is a tie between 2050 (fraction ...01, odd) and 2052 (even):
  // 2052; 2052 - 1 = 2051 again a tie: 2052.
  EXPECT_EQ(deq(2051, 1, 1.0, DType::f32, policy(O::sub_float_then_mul, K::f16)), f32_bits(2052.0f));
  // In f32 both are exact: 2050.
  EXPECT_EQ(deq(2051, 1, 1.0, DType::f32, policy(O::sub_float_then_mul, K::f32)), f32_bits(2050.0f));
}

TEST(DequantizeCompute, HalfComputeDiffersFromF32ComputeWithF16Output) {
  // ORT CUDA multiplies in half, ORT CPU in float then casts (docs/numerics.md "Dequantize in real
  // implementations": onnxruntime quantize_linear.cu::DequantizeLinearKernel, quantize_linear.cc).
  // q - zp = 2049, s = 0.75 (an f16 value), f16 output. Exact: 1536.75.
  // f16 compute: f16(2049) = 2048 (tie to even), 2048 * 0.75 = 1536 exactly: 0x6600
  //   (1536 = 1.5 * 2^10: exponent field 25 -> 0x6400, fraction 0x200).
  EXPECT_EQ(deq(2049, 0, 0.75, DType::f16, policy(O::sub_int_then_mul, K::f16), DType::f16), 0x6600u);
  // f32 compute: 1536.75 exact in f32, cast to f16 (step 1 in [1024, 2048)): 1537 = 0x6601.
  EXPECT_EQ(deq(2049, 0, 0.75, DType::f16, policy(O::sub_int_then_mul, K::f32), DType::f16), 0x6601u);
  // scale_type compute with an f16 scale is f16 arithmetic.
  EXPECT_EQ(deq(2049, 0, 0.75, DType::f16, policy(O::sub_int_then_mul, K::scale_type), DType::f16), 0x6600u);
}

TEST(DequantizeCompute, F32ComputeDoubleRoundsIntoF16) {
  // q - zp = 2^30 + 2^19 + 1, s = 2^-30: exact value 1 + 2^-11 + 2^-30, just above the f16
  // midpoint 1 + 2^-11 between 1.0 (0x3C00) and 1 + 2^-10 (0x3C01).
  const std::int64_t d = (std::int64_t{1} << 30) + (std::int64_t{1} << 19) + 1;
  const double s = 0x1p-30;
  // Exact or f64 compute: one rounding of the exact value: above the midpoint, 0x3C01.
  EXPECT_EQ(deq(d, 0, s, DType::f16, policy(O::sub_int_then_mul, K::exact)), 0x3C01u);
  EXPECT_EQ(deq(d, 0, s, DType::f16, policy(O::sub_int_then_mul, K::f64)), 0x3C01u);
  // f32 compute: f32(d) has step 2^7 at 2^30, so 2^19 + 1 -> 2^19 and the product is exactly
  // the midpoint 1 + 2^-11; the cast to f16 then ties to even 1.0: 0x3C00.
  EXPECT_EQ(deq(d, 0, s, DType::f16, policy(O::sub_int_then_mul, K::f32)), 0x3C00u);
  // The exact value is 2^-30 = 2^-20 f16 steps from the midpoint: a near tie.
  EXPECT_EQ(deq_label(d, 0, s, DType::f16, policy(O::sub_int_then_mul, K::f32)), Label::near_tie);
  // Without the +1 it is exactly the midpoint: a tie (and 1.0 by ties-to-even).
  EXPECT_EQ(deq_label(d - 1, 0, s, DType::f16, policy(O::sub_int_then_mul, K::exact)), Label::tie);
  EXPECT_EQ(deq(d - 1, 0, s, DType::f16, policy(O::sub_int_then_mul, K::exact)), 0x3C00u);
}

TEST(DequantizeLabels, TieOnAnF32Midpoint) {
  // s = 1 + 2^-23 (0x3F800001), q = 3: exact 3 + 3 * 2^-23 = 3 + 1.5 * 2^-22. In [2, 4) the f32
  // step is 2^-22, so this is the midpoint between 3 + 2^-22 (fraction 0x400001, odd) and
  // 3 + 2^-21 (0x400002, even): RNE gives 0x40400002.
  const double s = 1 + 0x1p-23;
  EXPECT_EQ(deq(3, 0, s, DType::f32, policy(O::sub_int_then_mul, K::f32)), 0x40400002u);
  EXPECT_EQ(deq(3, 0, s, DType::f32, policy(O::sub_int_then_mul, K::exact)), 0x40400002u);
  EXPECT_EQ(deq_label(3, 0, s, DType::f32, policy(O::sub_int_then_mul, K::f32)), Label::tie);
  // In f64 output the same value is exact: clear.
  EXPECT_EQ(deq_label(3, 0, s, DType::f64, policy(O::sub_int_then_mul, K::f64)), Label::clear);
}

TEST(DequantizeLabels, OverflowIsSaturated) {
  // 127 * 1024 = 130048 > f16 max 65504 (+ half step 16): +inf 0x7C00.
  const DequantizeElement e =
      dequantize_element(127, DType::i8, 1024, DType::f32, 0, DType::f16, policy(O::sub_int_then_mul, K::f32));
  EXPECT_EQ(e.bits, 0x7C00u);
  EXPECT_EQ(e.label, Label::saturated);
  // e4m3fn has no inf: 127 * 4 = 508 > 464 overflows to NaN (0x7F).
  EXPECT_EQ(deq(127, 0, 4, DType::f8e4m3fn, policy(O::sub_int_then_mul, K::f32)), 0x7Fu);
  // -127 * 1024 in f16 compute overflows inside the computation: -inf (0xFC00).
  EXPECT_EQ(deq(-127, 0, 1024, DType::f32, policy(O::sub_int_then_mul, K::f16)),
            f32_bits(-std::numeric_limits<float>::infinity()));
}

TEST(DequantizeZeros, EqualQAndZeroPoint) {
  for (O o : {O::sub_int_then_mul, O::sub_float_then_mul, O::mul_then_sub, O::fma}) {
    SCOPED_TRACE(std::string(name(o)));
    // q - zp = 0 with zp * s exact: +0 (an exact zero sum is +0 under ties-to-even, IEEE 754 §6.3).
    EXPECT_EQ(deq(-5, -5, 0.5, DType::f32, policy(o, K::f32)), 0u);
    EXPECT_EQ(deq(0, 0, kTenthF, DType::f16, policy(o, K::f32)), 0u);
  }
  // q = zp = -5, s = 0.1f: -5 * 13421773 = -(2^26 + 1), 27 bits, so zp * s rounds to -2^26 *
  // 2^-27 = -0.5. The other orders still give +0 (q*s rounds the same way), but fma keeps q*s
  // exact: -0.5 - 2^-27 + 0.5 = -2^-27, f32 0xB2000000 (sign, exponent field 127 - 27 = 0x64).
  EXPECT_EQ(deq(-5, -5, kTenthF, DType::f32, policy(O::sub_int_then_mul, K::f32)), 0u);
  EXPECT_EQ(deq(-5, -5, kTenthF, DType::f32, policy(O::mul_then_sub, K::f32)), 0u);
  EXPECT_EQ(deq(-5, -5, kTenthF, DType::f32, policy(O::fma, K::f32)), 0xB2000000u);
  // A tiny negative value rounds to -0 in the output format: -1 * 2^-149 (f32 min subnormal)
  // into f16 is far below half the f16 min subnormal 2^-24: -0 = 0x8000.
  EXPECT_EQ(deq(-1, 0, 0x1p-149, DType::f16, policy(O::sub_int_then_mul, K::f32)), 0x8000u);
}

TEST(DequantizeTensor, PerAxisHandDerived) {
  // q of shape [2, 3], axis 0: row 0 has s = 0.5, zp = 1; row 1 has s = 0.25, zp = -2.
  Tensor q(DType::i8, {2, 3});
  const std::int64_t vals[] = {1, 3, -1, -2, 0, 5};
  for (int i = 0; i < 6; ++i) q.set_int(i, vals[i]);
  QuantParams p;
  p.scales = {0.5, 0.25};
  p.zero_points = {1, -2};
  p.axis = 0;
  const DequantizeResult r = dequantize(q, p, DType::f32, policy(O::sub_int_then_mul, K::f32));
  // (1-1)*.5 = 0, (3-1)*.5 = 1, (-1-1)*.5 = -1; (-2+2)*.25 = 0, (0+2)*.25 = 0.5, (5+2)*.25 = 1.75.
  const double want[] = {0, 1, -1, 0, 0.5, 1.75};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.y.get_double(i), want[i]) << i;
  EXPECT_EQ(r.slow_elements, 0);
  ASSERT_EQ(r.labels.size(), 6u);
  for (Label l : r.labels) EXPECT_EQ(l, Label::clear);
}

TEST(DequantizeTensor, InputErrors) {
  Tensor qf(DType::f32, {2});
  QuantParams p;
  p.scales = {0.5};
  EXPECT_THROW(dequantize(qf, p, DType::f32, policy(O::sub_int_then_mul, K::f32)), InputError);
  Tensor q(DType::i8, {2});
  EXPECT_THROW(dequantize(q, p, DType::i32, policy(O::sub_int_then_mul, K::f32)), InputError);
  p.zero_points = {300};  // outside int8
  EXPECT_THROW(dequantize(q, p, DType::f32, policy(O::sub_int_then_mul, K::f32)), InputError);
}

TEST(DequantizeTrace, StepsEndWithTheCast) {
  const DequantizeElement e =
      dequantize_element(3, DType::i8, kTenthF, DType::f32, 1, DType::f16, policy(O::mul_then_sub, K::f32), true);
  ASSERT_GE(e.steps.size(), 5u);
  EXPECT_NE(e.steps.back().what.find("cast to f16"), std::string::npos);
  EXPECT_TRUE(e.exact.is_finite());
  EXPECT_EQ(e.exact.value, Rational(2) * Rational(kTenthF));
}

// The fast path must agree with the slow path bit for bit, label for label, in every order,
// compute format and output format, including i32 inputs, large zero points and f16 scales.
TEST(DequantizeFastPath, AgreesWithSlowPathOnRandomTensors) {
  std::mt19937_64 rng(99);
  const K computes[] = {K::f32, K::f64, K::exact, K::f16, K::bf16, K::scale_type};
  const DType outs[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
  const DType qtypes[] = {DType::i8, DType::u8, DType::i32, DType::i16};
  for (DType qt : qtypes) {
    for (DType st : {DType::f32, DType::f16}) {
      Tensor q(qt, {4, 64});
      std::uniform_int_distribution<std::int64_t> qd(int_min(qt), int_max(qt));
      for (std::int64_t i = 0; i < q.size(); ++i) q.set_int(i, qd(rng));
      QuantParams p;
      p.scale_dtype = st;
      p.axis = 0;
      // f16 scales stay in its normal range, so a 10-bit fraction is representable.
      std::uniform_int_distribution<int> ed(st == DType::f16 ? -14 : -60, st == DType::f16 ? 10 : 20);
      std::uniform_int_distribution<int> md(0, (1 << 10) - 1);
      for (int k = 0; k < 4; ++k) {
        // A scale with a 10-bit fraction: representable in f16 (within its range) and f32.
        p.scales.push_back(std::ldexp(1.0 + md(rng) / 1024.0, ed(rng)));
        p.zero_points.push_back(qd(rng));
      }
      for (O o : {O::sub_int_then_mul, O::sub_float_then_mul, O::mul_then_sub, O::fma}) {
        for (K c : computes) {
          for (DType out : outs) {
            SCOPED_TRACE(std::string(name(qt)) + " scale " + std::string(name(st)) + " " + std::string(name(o)) +
                         " compute " + to_string(ComputeFormat{c, 0}) + " out " + std::string(name(out)));
            const DequantizePolicy pol = policy(o, c);
            const DequantizeResult fast = dequantize(q, p, out, pol, OraclePath::fast);
            const DequantizeResult slow = dequantize(q, p, out, pol, OraclePath::slow);
            for (std::int64_t i = 0; i < q.size(); ++i) {
              ASSERT_EQ(fast.y.bits(i), slow.y.bits(i)) << "element " << i;
              ASSERT_EQ(fast.labels[static_cast<std::size_t>(i)], slow.labels[static_cast<std::size_t>(i)])
                  << "element " << i;
            }
          }
        }
      }
    }
  }
}

TEST(DequantizeFastPath, HandlesEveryElementForF32Compute) {
  Tensor q(DType::i8, {256});
  for (int i = 0; i < 256; ++i) q.set_int(i, i - 128);
  QuantParams p;
  p.scales = {kTenthF};
  p.zero_points = {3};
  for (DType out : {DType::f32, DType::f16}) {
    const DequantizeResult r = dequantize(q, p, out, policy(O::fma, K::f32));
    EXPECT_EQ(r.slow_elements, 0) << name(out);
  }
}

}  // namespace
}  // namespace qc
