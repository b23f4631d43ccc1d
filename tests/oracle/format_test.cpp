// oracles/format.cpp against the format definitions. Every expected value below is derived by
// hand from the layout (IEEE 754-2019 §3.4 for binary64/32/16, bfloat16 = the top 16 bits of
// binary32, OCP 8-bit Floating Point spec v1.0 for E4M3FN and E5M2) and from the rounding-mode
// definitions in rounding.hpp; the derivation is in the comment next to each value. Nothing is
// copied from the code's output.
//
// Notation: m = stored fraction bits, emin = 1 - bias, ulp(1) = 2^-m.
//   min subnormal = 2^(emin - m), max subnormal = (2^m - 1) * 2^(emin - m), min normal = 2^emin.
#include "oracles/format.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace qc {
namespace {

using R = RoundingMode;

Rational p2(int e) { return pow2(e); }
Rational integer(std::int64_t v) { return Rational(BigInt(v)); }
ExactFloat exact(const Rational& v) { return ExactFloat::finite(v); }
ExactFloat neg_zero() { return ExactFloat::finite(0, true); }

// Hand-written facts of one float format.
struct Facts {
  DType t;
  int m;                  // stored fraction bits
  int emin;               // 1 - bias
  std::uint64_t one;      // pattern of 1.0
  std::uint64_t sign;     // the sign bit
  std::uint64_t max_pat;  // pattern of the largest finite value
  Rational max_value;     // its value
  int max_exp;            // exponent of the top binade (ulp there is 2^(max_exp - m))
  bool has_inf;
  std::uint64_t inf_pat;  // +inf (only when has_inf)
  std::uint64_t nan_pat;  // one NaN pattern
};

std::vector<Facts> all_facts() {
  return {
      // binary64: bias 1023, m = 52. 1.0 = 0x3FF << 52. max = (2 - 2^-52) * 2^1023 = (2^53 - 1) * 2^971.
      {DType::f64, 52, -1022, 0x3FF0000000000000ULL, 0x8000000000000000ULL, 0x7FEFFFFFFFFFFFFFULL,
       Rational(BigInt((std::int64_t{1} << 53) - 1)) * p2(971), 1023, true, 0x7FF0000000000000ULL,
       0x7FF8000000000000ULL},
      // binary32: bias 127, m = 23. max = (2^24 - 1) * 2^104 (= 3.4028234664e38).
      {DType::f32, 23, -126, 0x3F800000, 0x80000000, 0x7F7FFFFF, integer((1 << 24) - 1) * p2(104), 127, true,
       0x7F800000, 0x7FC00000},
      // binary16: bias 15, m = 10. max = (2^11 - 1) * 2^5 = 65504.
      {DType::f16, 10, -14, 0x3C00, 0x8000, 0x7BFF, integer(65504), 15, true, 0x7C00, 0x7E00},
      // bfloat16: bias 127, m = 7. max = (2^8 - 1) * 2^120.
      {DType::bf16, 7, -126, 0x3F80, 0x8000, 0x7F7F, integer(255) * p2(120), 127, true, 0x7F80, 0x7FC0},
      // E4M3FN: bias 7, m = 3, no infinities; S.1111.111 is NaN, so the largest finite value is
      // S.1111.110 = 1.75 * 2^8 = 448 (OCP spec table 1).
      {DType::f8e4m3fn, 3, -6, 0x38, 0x80, 0x7E, integer(448), 8, false, 0, 0x7F},
      // E5M2: bias 15, m = 2, IEEE-like. max = 1.75 * 2^15 = 57344.
      {DType::f8e5m2, 2, -14, 0x3C, 0x80, 0x7B, integer(57344), 15, true, 0x7C, 0x7E},
  };
}

std::string fmt_name(const Facts& f) { return std::string(name(f.t)); }

// ---------------------------------------------------------------------------------------------
// Decode

TEST(FormatDecode, BoundaryPatternsOfEveryFormat) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    const Rational min_sub = p2(f.emin - f.m);
    // pattern 1 is the smallest subnormal; 2^m - 1 the largest; 2^m (exponent field 1) min normal.
    const std::uint64_t max_sub_pat = (std::uint64_t{1} << f.m) - 1;
    EXPECT_EQ(decode_float(f.t, 1).value, min_sub);
    EXPECT_EQ(decode_float(f.t, max_sub_pat).value, Rational(BigInt(max_sub_pat)) * min_sub);
    EXPECT_EQ(decode_float(f.t, max_sub_pat + 1).value, p2(f.emin));
    EXPECT_EQ(decode_float(f.t, f.max_pat).value, f.max_value);
    EXPECT_EQ(decode_float(f.t, f.one).value, Rational(1));
    EXPECT_EQ(decode_float(f.t, f.sign | f.one).value, Rational(-1));
    EXPECT_EQ(decode_float(f.t, f.sign | f.max_pat).value, Rational(-f.max_value));
    EXPECT_EQ(min_subnormal(f.t), min_sub);
    EXPECT_EQ(max_finite(f.t), f.max_value);
    // +0 and -0: value 0, the sign kept.
    const ExactFloat pz = decode_float(f.t, 0), nz = decode_float(f.t, f.sign);
    EXPECT_TRUE(pz.is_finite() && pz.value == 0 && !pz.negative);
    EXPECT_TRUE(nz.is_finite() && nz.value == 0 && nz.negative);
    EXPECT_TRUE(decode_float(f.t, f.nan_pat).is_nan());
    EXPECT_TRUE(decode_float(f.t, f.sign | f.nan_pat).is_nan());
    if (f.has_inf) {
      const ExactFloat pinf = decode_float(f.t, f.inf_pat), ninf = decode_float(f.t, f.sign | f.inf_pat);
      EXPECT_TRUE(pinf.is_inf() && !pinf.negative);
      EXPECT_TRUE(ninf.is_inf() && ninf.negative);
      // Every nonzero fraction under the all-ones exponent is a NaN (IEEE 754 §3.4).
      EXPECT_TRUE(decode_float(f.t, f.inf_pat | 1).is_nan());
      EXPECT_TRUE(decode_float(f.t, f.inf_pat | max_sub_pat).is_nan());
    }
  }
}

TEST(FormatDecode, E4M3FNAllOnesExponentIsFiniteExceptS1111111) {
  // OCP: with exponent field 1111 the values 0x78..0x7E are finite: 1.mmm * 2^(15 - 7).
  EXPECT_EQ(decode_float(DType::f8e4m3fn, 0x78).value, Rational(256));  // 1.000 * 2^8
  EXPECT_EQ(decode_float(DType::f8e4m3fn, 0x7D).value, Rational(416));  // 1.101 * 2^8 = 13 * 32
  EXPECT_EQ(decode_float(DType::f8e4m3fn, 0xFE).value, Rational(-448));
  EXPECT_TRUE(decode_float(DType::f8e4m3fn, 0x7F).is_nan());
  EXPECT_TRUE(decode_float(DType::f8e4m3fn, 0xFF).is_nan());
  // E5M2 is IEEE-like: 0x7C is +inf, 0x7D..0x7F are NaN.
  EXPECT_TRUE(decode_float(DType::f8e5m2, 0x7C).is_inf());
  EXPECT_TRUE(decode_float(DType::f8e5m2, 0x7D).is_nan());
  EXPECT_TRUE(decode_float(DType::f8e5m2, 0xFF).is_nan());
}

TEST(FormatDecode, FastDecodeMatchesExactDecodeOnEverySmallPattern) {
  for (DType t : {DType::f16, DType::bf16, DType::f8e4m3fn, DType::f8e5m2}) {
    SCOPED_TRACE(std::string(name(t)));
    const std::uint64_t n = std::uint64_t{1} << info(t).bits;
    for (std::uint64_t p = 0; p < n; ++p) {
      const ExactFloat e = decode_float(t, p);
      const double d = float_bits_to_double(t, p);
      if (e.is_nan()) {
        ASSERT_TRUE(std::isnan(d)) << p;
      } else if (e.is_inf()) {
        ASSERT_TRUE(std::isinf(d) && (d < 0) == e.negative) << p;
      } else {
        ASSERT_EQ(Rational(d), e.value) << p;
        ASSERT_EQ(std::signbit(d), e.negative) << p;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Encode under each rounding mode

struct ModeCase {
  RoundingMode m;
  bool up;  // true: the upper neighbour (larger magnitude for positive values) is chosen
};

// Encodes v and returns the pattern; the expected pattern is `lo` or `hi` per mode.
void expect_modes(DType t, const Rational& v, std::uint64_t lo, std::uint64_t hi, std::initializer_list<ModeCase> cases,
                  const std::string& what) {
  for (const ModeCase& c : cases) {
    SCOPED_TRACE(what + " under " + std::string(name(c.m)));
    EXPECT_EQ(encode_float(t, exact(v), c.m), c.up ? hi : lo);
  }
}

// A tie whose lower neighbour is even: rne and rhd and the toward-zero/-inf modes keep it; rna,
// rhu and ceil take the upper neighbour. (rne: the even neighbour; rna: away from zero; rhu:
// toward +inf; rhd: toward -inf.)
constexpr std::initializer_list<ModeCase> kTieLowerEvenPositive = {{R::rne, false}, {R::rna, true},  {R::rhu, true},
                                                                   {R::rhd, false}, {R::rtz, false}, {R::floor, false},
                                                                   {R::ceil, true}};

TEST(FormatEncode, TiesAndOneStepEitherSideUnderEveryMode) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    const Rational ulp = p2(-f.m);      // the step just above 1.0
    const Rational eps = p2(-f.m - 6);  // far smaller than a step, still exact in a rational
    const std::uint64_t p1 = f.one, p1u = f.one + 1, p1uu = f.one + 2;  // 1, 1 + ulp, 1 + 2 ulp

    // 1 + ulp/2: between 1 (fraction 0, even) and 1 + ulp (fraction 1, odd).
    expect_modes(f.t, 1 + ulp / 2, p1, p1u, kTieLowerEvenPositive, "1 + ulp/2");
    // Just above the tie every nearest mode goes up; rtz/floor still truncate; ceil goes up.
    expect_modes(f.t, 1 + ulp / 2 + eps, p1, p1u,
                 {{R::rne, true},
                  {R::rna, true},
                  {R::rhu, true},
                  {R::rhd, true},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "1 + ulp/2 + eps");
    // Just below the tie every nearest mode goes down; ceil still goes up.
    expect_modes(f.t, 1 + ulp / 2 - eps, p1, p1u,
                 {{R::rne, false},
                  {R::rna, false},
                  {R::rhu, false},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "1 + ulp/2 - eps");
    // 1 + 3ulp/2: between 1 + ulp (odd) and 1 + 2ulp (even): rne now goes up, rhd stays down.
    expect_modes(f.t, 1 + 3 * ulp / 2, p1u, p1uu,
                 {{R::rne, true},
                  {R::rna, true},
                  {R::rhu, true},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "1 + 3ulp/2");
    // Negative tie -(1 + ulp/2): "up" here means the larger magnitude -(1 + ulp).
    // rne: even -1; rna: away, -(1+ulp); rhu: toward +inf, -1; rhd: toward -inf, -(1+ulp);
    // rtz: -1; floor: -(1+ulp); ceil: -1.
    expect_modes(f.t, -(1 + ulp / 2), f.sign | p1, f.sign | p1u,
                 {{R::rne, false},
                  {R::rna, true},
                  {R::rhu, false},
                  {R::rhd, true},
                  {R::rtz, false},
                  {R::floor, true},
                  {R::ceil, false}},
                 "-(1 + ulp/2)");
    // Representable values encode exactly under every mode.
    for (RoundingMode m : kAllRoundingModes) {
      EXPECT_EQ(encode_float(f.t, exact(1 + ulp), m), p1u) << name(m);
      EXPECT_EQ(encode_float(f.t, exact(-(1 + 2 * ulp)), m), f.sign | p1uu) << name(m);
    }
  }
}

TEST(FormatEncode, SubnormalBoundaryUnderEveryMode) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    const Rational min_sub = p2(f.emin - f.m);
    // Half the smallest subnormal: a tie between 0 (even) and min_sub (fraction 1, odd).
    // rne -> 0, rna -> min_sub, rhu -> min_sub, rhd -> 0, rtz -> 0, floor -> 0, ceil -> min_sub.
    expect_modes(f.t, min_sub / 2, 0, 1, kTieLowerEvenPositive, "min_sub/2");
    // Its negative: the zero results keep the sign (-0 = the sign bit).
    expect_modes(f.t, -min_sub / 2, f.sign, f.sign | 1,
                 {{R::rne, false},
                  {R::rna, true},
                  {R::rhu, false},
                  {R::rhd, true},
                  {R::rtz, false},
                  {R::floor, true},
                  {R::ceil, false}},
                 "-min_sub/2");
    // A quarter of min_sub: below every tie, so only ceil leaves zero.
    expect_modes(f.t, min_sub / 4, 0, 1,
                 {{R::rne, false},
                  {R::rna, false},
                  {R::rhu, false},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "min_sub/4");
    // Between the largest subnormal (fraction all ones, odd) and the smallest normal (even):
    // (2^m - 1/2) * min_sub ties; rne goes up to the normal.
    const std::uint64_t max_sub_pat = (std::uint64_t{1} << f.m) - 1;
    expect_modes(f.t, (Rational(BigInt(max_sub_pat)) + Rational(1, 2)) * min_sub, max_sub_pat, max_sub_pat + 1,
                 {{R::rne, true},
                  {R::rna, true},
                  {R::rhu, true},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "max_sub + min_sub/2");
    // 1.5 * min_sub: between min_sub (odd) and 2 min_sub (even): rne up.
    EXPECT_EQ(encode_float(f.t, exact(3 * min_sub / 2), R::rne), 2u);
  }
}

TEST(FormatEncode, OverflowBoundaryFollowsIeee754Section7_4) {
  for (const Facts& f : all_facts()) {
    if (!f.has_inf) continue;
    SCOPED_TRACE(fmt_name(f));
    const Rational top_ulp = p2(f.max_exp - f.m);
    // max + ulp/2 is a tie between max (fraction all ones, odd) and 2^(emax+1) (even): the
    // nearest modes that pick the upper neighbour overflow to inf. rhd (toward -inf) and the
    // toward-zero / toward -inf modes keep max; ceil overflows (IEEE 7.4: roundTowardPositive
    // carries positive overflow to +inf).
    expect_modes(f.t, f.max_value + top_ulp / 2, f.max_pat, f.inf_pat,
                 {{R::rne, true},
                  {R::rna, true},
                  {R::rhu, true},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "max + ulp/2");
    // Just below that tie: nearest modes keep max; ceil still leaves the range.
    expect_modes(f.t, f.max_value + top_ulp / 4, f.max_pat, f.inf_pat,
                 {{R::rne, false},
                  {R::rna, false},
                  {R::rhu, false},
                  {R::rhd, false},
                  {R::rtz, false},
                  {R::floor, false},
                  {R::ceil, true}},
                 "max + ulp/4");
    // Negative side: -(max + ulp/2). rne/rna: -inf; rhu (toward +inf): -max; rhd: -inf;
    // rtz: -max; floor (roundTowardNegative): -inf; ceil: -max.
    expect_modes(f.t, -(f.max_value + top_ulp / 2), f.sign | f.max_pat, f.sign | f.inf_pat,
                 {{R::rne, true},
                  {R::rna, true},
                  {R::rhu, false},
                  {R::rhd, true},
                  {R::rtz, false},
                  {R::floor, true},
                  {R::ceil, false}},
                 "-(max + ulp/2)");
    // Saturate: every overflow gives max finite, and so does an infinite input.
    for (RoundingMode m : kAllRoundingModes) {
      EXPECT_EQ(encode_float(f.t, exact(2 * f.max_value), m, Overflow::saturate), f.max_pat) << name(m);
      EXPECT_EQ(encode_float(f.t, exact(-2 * f.max_value), m, Overflow::saturate), f.sign | f.max_pat) << name(m);
    }
    EXPECT_EQ(encode_float(f.t, ExactFloat::inf(false)), f.inf_pat);
    EXPECT_EQ(encode_float(f.t, ExactFloat::inf(true)), f.sign | f.inf_pat);
    EXPECT_EQ(encode_float(f.t, ExactFloat::inf(false), R::rne, Overflow::saturate), f.max_pat);
  }
}

TEST(FormatEncode, E4M3FNOverflowIsNaNUnderIeeeAnd448UnderSaturate) {
  const DType t = DType::f8e4m3fn;
  // Top binade 2^8, step 2^(8-3) = 32: ... 416, 448, [480 would be S.1111.111 = NaN].
  // 464 is the tie between 448 (fraction 110, even) and 480 (fraction 111, odd): with unbounded
  // exponent range rne gives 448, so no overflow; rna rounds away to 480, which overflows.
  EXPECT_EQ(encode_float(t, exact(464), R::rne), 0x7Eu);
  EXPECT_TRUE(decode_float(t, encode_float(t, exact(464), R::rna)).is_nan());
  EXPECT_EQ(encode_float(t, exact(464), R::rna, Overflow::saturate), 0x7Eu);
  // 465 is above the tie: rne rounds to 480 > 448, overflow: NaN under ieee (no inf to go to,
  // ONNX Cast saturate=0), 448 under saturate.
  EXPECT_TRUE(decode_float(t, encode_float(t, exact(465), R::rne)).is_nan());
  EXPECT_EQ(encode_float(t, exact(465), R::rne, Overflow::saturate), 0x7Eu);
  EXPECT_TRUE(decode_float(t, encode_float(t, exact(-1000), R::rne)).is_nan());
  EXPECT_EQ(encode_float(t, exact(-1000), R::rne, Overflow::saturate), 0xFEu);
  // Directed modes that round toward zero never overflow (IEEE 7.4): rtz of 1000 is 448.
  EXPECT_EQ(encode_float(t, exact(1000), R::rtz), 0x7Eu);
  EXPECT_EQ(encode_float(t, exact(1000), R::floor), 0x7Eu);
  EXPECT_TRUE(decode_float(t, encode_float(t, exact(449), R::ceil)).is_nan());
  // An infinite input: NaN under ieee, 448 under saturate (ONNX Cast table for E4M3FN).
  EXPECT_TRUE(decode_float(t, encode_float(t, ExactFloat::inf(false))).is_nan());
  EXPECT_EQ(encode_float(t, ExactFloat::inf(true), R::rne, Overflow::saturate), 0xFEu);
  // 256 (exponent field 1111, fraction 000) is an ordinary finite value.
  EXPECT_EQ(encode_float(t, exact(256)), 0x78u);
}

TEST(FormatEncode, E5M2OverflowGoesToInf) {
  const DType t = DType::f8e5m2;
  // Top binade 2^15, step 2^13 = 8192: 57344 + 4096 = 61440 ties between 57344 (odd fraction 11)
  // and 65536 (even): rne -> +inf (0x7C); rtz -> 57344 (0x7B).
  EXPECT_EQ(encode_float(t, exact(61440), R::rne), 0x7Cu);
  EXPECT_EQ(encode_float(t, exact(61440), R::rtz), 0x7Bu);
  EXPECT_EQ(encode_float(t, exact(61439), R::rne), 0x7Bu);
  EXPECT_EQ(encode_float(t, exact(61440), R::rne, Overflow::saturate), 0x7Bu);
}

TEST(FormatEncode, NaNEncodesToANaN) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    for (Overflow o : {Overflow::ieee, Overflow::saturate})
      EXPECT_TRUE(decode_float(f.t, encode_float(f.t, ExactFloat::nan(), R::rne, o)).is_nan());
  }
}

TEST(FormatEncode, TinyNegativeValuesRoundToNegativeZero) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    // -min_sub/4 rounds to zero under rne and keeps its sign (IEEE 754 §6.3): -0 = the sign bit.
    EXPECT_EQ(encode_float(f.t, exact(-p2(f.emin - f.m - 2)), R::rne), f.sign);
  }
}

TEST(FormatEncode, NegativeZeroKeepsItsSign) {
  for (const Facts& f : all_facts()) {
    SCOPED_TRACE(fmt_name(f));
    for (RoundingMode m : kAllRoundingModes) EXPECT_EQ(encode_float(f.t, neg_zero(), m), f.sign) << name(m);
    EXPECT_EQ(encode_float(f.t, ExactFloat::finite(0)), 0u);
    EXPECT_EQ(double_to_float_bits(f.t, -0.0), f.sign);
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips over every pattern of the small formats

TEST(FormatRoundTrip, EveryPatternOfF16Bf16AndF8UnderEveryMode) {
  for (DType t : {DType::f16, DType::bf16, DType::f8e4m3fn, DType::f8e5m2}) {
    SCOPED_TRACE(std::string(name(t)));
    const std::uint64_t n = std::uint64_t{1} << info(t).bits;
    const std::uint64_t sign = n >> 1;
    for (std::uint64_t p = 0; p < n; ++p) {
      const ExactFloat e = decode_float(t, p);
      if (e.is_nan()) {
        ASSERT_TRUE(decode_float(t, encode_float(t, e)).is_nan()) << p;
        continue;
      }
      if (p == sign) continue;  // -0: see NegativeZeroKeepsItsSign (skipped: known bug)
      // A representable value is exact under every mode and either overflow rule.
      for (RoundingMode m : kAllRoundingModes) ASSERT_EQ(encode_float(t, e, m), p) << p << " " << name(m);
      if (!e.is_inf()) {
        ASSERT_EQ(encode_float(t, e, R::rne, Overflow::saturate), p) << p;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Encode against the hardware (IEEE binary32 conversion from binary64 is correctly rounded, ties
// to even, in the default environment)

std::uint32_t hw_f32(double v) { return std::bit_cast<std::uint32_t>(static_cast<float>(v)); }

TEST(FormatEncode, F32EncodeMatchesTheHardwareCastOnRandomDoubles) {
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int> exp_dist(-160, 135);  // f32 subnormals through overflow
  std::uniform_int_distribution<std::uint64_t> mant(0, (std::uint64_t{1} << 52) - 1);
  std::uniform_int_distribution<std::uint32_t> f32_bits(0, 0x7F7FFFFE);  // b = next up stays finite
  std::uniform_int_distribution<int> offset(-3, 3);
  constexpr int kCount = 2'000'000;
  int mismatches = 0;
  for (int i = 0; i < kCount; ++i) {
    double v;
    if (i % 2 == 0) {
      // A random double spread over the whole f32 exponent range.
      v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant(rng)), -52), exp_dist(rng));
    } else {
      // Near an f32 midpoint: an f32 value plus half its step, moved by a few f64 ulps (which hits
      // the tie itself, 1/7 of the time).
      const float a = std::bit_cast<float>(f32_bits(rng));
      const float b = std::nextafter(a, std::numeric_limits<float>::infinity());
      double mid = (static_cast<double>(a) + static_cast<double>(b)) / 2;  // exact in f64
      for (int k = offset(rng); k != 0; k += k > 0 ? -1 : 1) mid = std::nextafter(mid, k > 0 ? 2 * mid + 1 : -1.0);
      v = mid;
    }
    if (i % 3 == 0) v = -v;
    const std::uint64_t want = hw_f32(v);
    const std::uint64_t got = encode_float(DType::f32, ExactFloat::finite(Rational(v), std::signbit(v)), R::rne);
    if (got != want && ++mismatches <= 5)
      ADD_FAILURE() << "v = " << std::hexfloat << v << ": encode " << std::hex << got << ", hardware " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(FormatEncode, DoubleToFloatBitsMatchesEncodeForF16AndF8) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> exp_dist(-30, 20);
  std::uniform_int_distribution<std::uint64_t> mant(0, (std::uint64_t{1} << 52) - 1);
  for (DType t : {DType::f16, DType::f8e4m3fn, DType::f8e5m2}) {
    SCOPED_TRACE(std::string(name(t)));
    for (int i = 0; i < 20000; ++i) {
      double v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant(rng)), -52), exp_dist(rng));
      if (i % 2) v = -v;
      ASSERT_EQ(double_to_float_bits(t, v), encode_float(t, exact(Rational(v)))) << std::hexfloat << v;
    }
  }
}

TEST(FormatEncode, DoubleToFloatBitsRoundsBf16ToNearestEven) {
  EXPECT_EQ(double_to_float_bits(DType::bf16, 1 + 0x1p-8 + 0x1p-10), 0x3F81u);
  EXPECT_EQ(double_to_float_bits(DType::bf16, 1 + 0x1p-8 + 0x1p-40), 0x3F81u);
  EXPECT_EQ(double_to_float_bits(DType::bf16, 3.4e38), 0x7F80u);
  EXPECT_EQ(double_to_float_bits(DType::bf16, -(1 + 0x1p-8 + 0x1p-10)), 0xBF81u);
}

// The exact encoder itself gets the bf16 cases above right.
TEST(FormatEncode, Bf16EncodeRoundsToNearestEven) {
  EXPECT_EQ(encode_float(DType::bf16, exact(1 + p2(-8) + p2(-10))), 0x3F81u);
  EXPECT_EQ(encode_float(DType::bf16, exact(1 + p2(-8) + p2(-40))), 0x3F81u);
  EXPECT_EQ(encode_float(DType::bf16, exact(1 + p2(-8))), 0x3F80u);  // the tie: even 1.0
  EXPECT_EQ(encode_float(DType::bf16, exact(Rational(BigInt(34) * boost::multiprecision::pow(BigInt(10), 37)))),
            0x7F80u);  // 3.4e38 = 34 * 10^37 > 255.5 * 2^120 ~ 3.3961e38
}

// ---------------------------------------------------------------------------------------------
// Integer conversion

TEST(FormatIntConvert, SaturateWrapAndNarrowRange) {
  struct Case {
    DType t;
    std::int64_t v;
    IntOverflow o;
    bool narrow;
    std::int64_t want;
  };
  const Case cases[] = {
      {DType::i8, 300, IntOverflow::saturate, false, 127},
      {DType::i8, -300, IntOverflow::saturate, false, -128},
      {DType::i8, -128, IntOverflow::saturate, true, -127},  // narrow range: [-127, 127]
      {DType::i8, -127, IntOverflow::saturate, true, -127},
      {DType::i8, 127, IntOverflow::saturate, true, 127},
      {DType::u8, -1, IntOverflow::saturate, false, 0},
      {DType::u8, 256, IntOverflow::saturate, false, 255},
      {DType::u8, 0, IntOverflow::saturate, true, 0},  // narrow range leaves unsigned types alone
      {DType::i4, 8, IntOverflow::saturate, false, 7},
      {DType::i4, -9, IntOverflow::saturate, false, -8},
      {DType::i4, -8, IntOverflow::saturate, true, -7},
      {DType::u4, 16, IntOverflow::saturate, false, 15},
      {DType::i16, 40000, IntOverflow::saturate, false, 32767},
      {DType::u16, 70000, IntOverflow::saturate, false, 65535},
      {DType::i32, std::int64_t{1} << 40, IntOverflow::saturate, false, 2147483647},
      {DType::i32, -(std::int64_t{1} << 40), IntOverflow::saturate, false, -2147483648LL},
      // Wrap: two's complement modulo 2^bits, as a cast of the low bits.
      {DType::i8, 200, IntOverflow::wrap, false, -56},   // 200 - 256
      {DType::i8, -129, IntOverflow::wrap, false, 127},  // -129 + 256
      {DType::i8, 128, IntOverflow::wrap, false, -128},
      {DType::u8, -1, IntOverflow::wrap, false, 255},
      {DType::u8, 256 + 17, IntOverflow::wrap, false, 17},
      {DType::i4, 8, IntOverflow::wrap, false, -8},  // 8 - 16
      {DType::i4, -9, IntOverflow::wrap, false, 7},  // -9 + 16
      {DType::u4, 16, IntOverflow::wrap, false, 0},
      {DType::u4, -1, IntOverflow::wrap, false, 15},
      {DType::i16, 40000, IntOverflow::wrap, false, -25536},  // 40000 - 65536
      {DType::u16, -2, IntOverflow::wrap, false, 65534},
      {DType::i32, std::int64_t{1} << 31, IntOverflow::wrap, false, -2147483648LL},
      {DType::i32, (std::int64_t{1} << 32) + 5, IntOverflow::wrap, false, 5},
  };
  for (const Case& c : cases)
    EXPECT_EQ(int_convert(c.t, BigInt(c.v), c.o, c.narrow), c.want)
        << name(c.t) << " " << c.v << (c.o == IntOverflow::wrap ? " wrap" : " saturate") << (c.narrow ? " narrow" : "");
  // Far outside int64: 2^70 saturates to the top, and wraps to 0 (a multiple of 2^8).
  const BigInt huge = BigInt(1) << 70;
  EXPECT_EQ(int_convert(DType::i8, huge, IntOverflow::saturate), 127);
  EXPECT_EQ(int_convert(DType::i8, -huge, IntOverflow::saturate), -128);
  EXPECT_EQ(int_convert(DType::i8, huge, IntOverflow::wrap), 0);
  EXPECT_EQ(int_convert(DType::u8, huge + 3, IntOverflow::wrap), 3);
  // The ranges.
  EXPECT_EQ(int_min(DType::i8), -128);
  EXPECT_EQ(int_min(DType::i8, true), -127);
  EXPECT_EQ(int_min(DType::u8, true), 0);
  EXPECT_EQ(int_max(DType::u4), 15);
  EXPECT_EQ(int_min(DType::i4), -8);
  EXPECT_EQ(int_max(DType::i32), 2147483647);
}

TEST(FormatNames, ParseShortAndOnnxSpellings) {
  EXPECT_EQ(parse_dtype("f8e4m3fn"), DType::f8e4m3fn);
  EXPECT_EQ(parse_dtype("float8e5m2"), DType::f8e5m2);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("uint4"), DType::u4);
  EXPECT_FALSE(parse_dtype("float7").has_value());
}

}  // namespace
}  // namespace qc

// The core's double_to_float_bits (plain integer arithmetic, qconform/dtype.hpp) against the
// oracle's exact encode (rationals): one correct rounding, ties to even, IEEE overflow. Values: every
// rounding boundary near each binade edge of each narrow format (the exact midpoints between
// neighbours, and one double either side of them), subnormals, the overflow threshold, and random
// doubles over the whole range.
namespace qc::core_narrowing {

std::uint64_t slow(DType t, double v) {
  if (std::isnan(v)) return encode_float(t, ExactFloat::nan());
  if (std::isinf(v)) return encode_float(t, ExactFloat::inf(v < 0));
  return encode_float(t, ExactFloat::finite(Rational(v), std::signbit(v)));
}

TEST(CoreNarrowing, MatchesTheExactEncodeAtEveryMidpointAndRandomly) {
  std::mt19937_64 rng(20261124);
  for (DType t : {DType::f16, DType::bf16, DType::f8e4m3fn, DType::f8e5m2}) {
    std::vector<double> values = {0.0,
                                  -0.0,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::denorm_min(),
                                  std::numeric_limits<double>::max()};
    // Every pair of neighbouring finite values of the format: both, their midpoint (a tie), and the
    // doubles just beside the midpoint.
    const std::uint64_t count = std::uint64_t{1} << info(t).bits;
    for (std::uint64_t bits = 0; bits < count; ++bits) {
      const double a = float_bits_to_double(t, bits);
      const double b = float_bits_to_double(t, bits + 1 < count ? bits + 1 : bits);
      if (!std::isfinite(a)) continue;
      values.push_back(a);
      if (std::isfinite(b) && std::abs(b) > std::abs(a)) {
        const double mid = a + (b - a) / 2;  // exact: both are short dyadic rationals
        values.insert(values.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 2 * mid)});
      }
    }
    // Past the largest finite value: the overflow threshold (max + ulp/2) and beyond.
    const double maxf = max_finite(t).convert_to<double>();
    values.insert(values.end(), {maxf * 1.0625, maxf * 1.125, maxf * 2, -maxf * 1.0625});
    std::uniform_int_distribution<std::uint64_t> any;
    for (int i = 0; i < 40000; ++i) values.push_back(std::bit_cast<double>(any(rng)));
    std::uniform_real_distribution<double> near(-4 * maxf, 4 * maxf);
    for (int i = 0; i < 40000; ++i) values.push_back(near(rng));
    for (double v : values) {
      for (double s : {v, -v}) {
        const std::uint64_t want = slow(t, s);
        ASSERT_EQ(double_to_float_bits(t, s), want) << name(t) << " at " << s;
      }
    }
  }
}

}  // namespace qc::core_narrowing
