// Hand-derived vectors for quantize under the ONNX definition and its variants. Every
// expected value below is worked out from the definition in the comment next to it
// (y = saturate(round(x / s) + zp), onnx/onnx onnx/defs/quantization/defs.cc, QuantizeLinear;
// docs/numerics.md "Quantize in real implementations"), not taken from the code's output.
#include "oracles/quantize.hpp"
#include "oracles/presets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace qc {
namespace {

QuantizePolicy onnx() { return find_preset("onnx")->quantize; }

std::int64_t q(double x, double s, std::int64_t zp, DType out, const QuantizePolicy& p = onnx(), DType xt = DType::f32,
               DType st = DType::f32) {
  return quantize_element(x, xt, s, st, zp, out, p).q;
}

Label label(double x, double s, std::int64_t zp, DType out, const QuantizePolicy& p = onnx()) {
  return quantize_element(x, DType::f32, s, DType::f32, zp, out, p).label;
}

struct Vec {
  double x, s;
  std::int64_t zp;
  DType out;
  std::int64_t want;
};

// Ties at +-0.5, +-1.5, +-2.5 go to the even neighbour; one f32 ulp either side decides.
TEST(QuantizeOnnx, HandDerivedVectors) {
  const Vec vecs[] = {
      {0.5, 1, 0, DType::i8, 0},                     // tie between 0 and 1: even is 0
      {-0.5, 1, 0, DType::i8, 0},                    // tie between -1 and 0: even is 0
      {1.5, 1, 0, DType::i8, 2},                     // tie between 1 and 2: even is 2
      {-1.5, 1, 0, DType::i8, -2},                   // tie between -2 and -1: even is -2
      {2.5, 1, 0, DType::i8, 2},                     // tie between 2 and 3: even is 2
      {-2.5, 1, 0, DType::i8, -2},                   // even is -2
      {3.5, 1, 0, DType::i8, 4},                     // even is 4
      {0x1.fffffep-2, 1, 0, DType::i8, 0},           // 0.5 - 2^-25: below the tie
      {0x1.000002p-1, 1, 0, DType::i8, 1},           // 0.5 + 2^-24: above the tie
      {0x1.7ffffep+0, 1, 0, DType::i8, 1},           // 1.5 - 2^-23
      {0x1.800002p+0, 1, 0, DType::i8, 2},           // 1.5 + 2^-23
      {-0x1.3ffffep+1, 1, 0, DType::i8, -2},         // -(2.5 - 2^-22): magnitude below the tie
      {-0x1.400002p+1, 1, 0, DType::i8, -3},         // -(2.5 + 2^-22)
      {0.375, 0.25, 0, DType::i8, 2},                // 0.375 / 0.25 = 1.5 exactly: even is 2
      {0.625, 0.25, 0, DType::i8, 2},                // 2.5 exactly: even is 2
      {127.0, 1, 0, DType::i8, 127},                 // the top of int8
      {127.5, 1, 0, DType::i8, 127},                 // tie to 128, saturates to 127
      {128.0, 1, 0, DType::i8, 127},                 // saturates
      {-128.5, 1, 0, DType::i8, -128},               // tie between -129 and -128: even is -128
      {-129.5, 1, 0, DType::i8, -128},               // tie to -130, saturates to -128
      {-1e30, 1, 0, DType::i8, -128},                // far below
      {254.5, 1, 0, DType::u8, 254},                 // tie between 254 and 255: even is 254
      {255.5, 1, 0, DType::u8, 255},                 // tie to 256, saturates
      {-0.5, 1, 0, DType::u8, 0},                    // tie to 0
      {-0.6, 1, 0, DType::u8, 0},                    // -1 saturates to 0
      {-0.5, 1, -128, DType::i8, -128},              // round(-0.5) = 0, + zp = -128
      {-0.6, 1, -128, DType::i8, -128},              // round = -1, -129 saturates
      {0.6, 1, 127, DType::i8, 127},                 // round = 1, 128 saturates
      {-1.0, 1, 255, DType::u8, 254},                // 255 - 1
      {1.0, 1, 255, DType::u8, 255},                 // 256 saturates
      {0.75, 0.5, -100, DType::i8, -98},             // 0.75 / 0.5 = 1.5 -> 2, -100 + 2
      {-28.0, 0.5, -100, DType::i8, -128},           // -56 - 100 = -156 saturates
      {7.5, 1, 0, DType::i4, 7},                     // tie to 8, int4 saturates at 7
      {-8.5, 1, 0, DType::i4, -8},                   // tie between -9 and -8: even is -8
      {15.5, 1, 0, DType::u4, 15},                   // tie to 16, saturates
      {-32768.5, 1, 0, DType::i16, -32768},          // tie: even is -32768
      {32766.5, 1, 0, DType::i16, 32766},            // tie between 32766 and 32767: even is 32766
      {65535.5, 1, 0, DType::u16, 65535},            // tie to 65536, saturates
      {2147483520.0, 1, 0, DType::i32, 2147483520},  // an f32 value just below 2^31
      {3e9, 1, 0, DType::i32, 2147483647},           // saturates to INT32_MAX
  };
  for (const Vec& v : vecs) {
    EXPECT_EQ(q(v.x, v.s, v.zp, v.out), v.want)
        << "x=" << v.x << " s=" << v.s << " zp=" << v.zp << " out=" << name(v.out);
  }
}

TEST(QuantizeOnnx, NarrowRangeDropsMostNegative) {
  QuantizePolicy p = onnx();
  p.narrow_range = true;
  EXPECT_EQ(q(-1000, 1, 0, DType::i8, p), -127);  // [-127, 127]
  EXPECT_EQ(q(-127.4, 1, 0, DType::i8, p), -127);
  EXPECT_EQ(q(1000, 1, 0, DType::i8, p), 127);
}

TEST(QuantizeOnnx, ExplicitSubRangeClip) {
  // int4 carried in int8 with an explicit [-8, 7] clip.
  QuantizePolicy p = onnx();
  p.clip = std::pair<std::int64_t, std::int64_t>{-8, 7};
  EXPECT_EQ(q(9.0, 1, 0, DType::i8, p), 7);
  EXPECT_EQ(q(-8.6, 1, 0, DType::i8, p), -8);
  EXPECT_EQ(q(6.5, 1, 0, DType::i8, p), 6);  // tie: even 6
}

TEST(QuantizeOnnx, WrapInsteadOfSaturate) {
  // A plain cast: 200 in int8 wraps to 200 - 256 = -56; 128 wraps to -128.
  QuantizePolicy p = onnx();
  p.clamp = Clamp::wrap;
  EXPECT_EQ(q(200, 1, 0, DType::i8, p), -56);
  EXPECT_EQ(q(127.5, 1, 0, DType::i8, p), -128);  // tie -> 128 -> wraps
  EXPECT_EQ(q(-129, 1, 0, DType::i8, p), 127);
  EXPECT_EQ(q(256.5, 1, 0, DType::u8, p), 0);  // 256 (even) wraps to 0
  // A cast of an infinity has no meaning: infinities saturate under wrap too, +inf to the top
  // of the range and -inf to the bottom, whatever the zero point.
  EXPECT_EQ(q(INFINITY, 1, -3, DType::i8, p), 127);
  EXPECT_EQ(q(-INFINITY, 1, -3, DType::i8, p), -128);
  EXPECT_EQ(q(INFINITY, 1, 128, DType::u8, p), 255);
  EXPECT_EQ(q(-INFINITY, 1, 128, DType::u8, p), 0);
}

TEST(QuantizeRounding, EveryModeAtTiesAndOffTies) {
  // floor(x+0.5) is rhu, ceil(x-0.5) is rhd; rna goes away from zero.
  struct M {
    RoundingMode m;
    std::int64_t at_2_5, at_m2_5, at_2_2, at_m2_2, at_2_7, at_m2_7;
  };
  const M modes[] = {
      {RoundingMode::rne, 2, -2, 2, -2, 3, -3},  {RoundingMode::rna, 3, -3, 2, -2, 3, -3},
      {RoundingMode::rhu, 3, -2, 2, -2, 3, -3},  {RoundingMode::rhd, 2, -3, 2, -2, 3, -3},
      {RoundingMode::rtz, 2, -2, 2, -2, 2, -2},  {RoundingMode::floor, 2, -3, 2, -3, 2, -3},
      {RoundingMode::ceil, 3, -2, 3, -2, 3, -2},
  };
  for (const M& m : modes) {
    QuantizePolicy p = onnx();
    p.rounding = m.m;
    p.compute = {ComputeFormat::Kind::exact, 0};
    const std::string n(name(m.m));
    EXPECT_EQ(q(2.5, 1, 0, DType::i8, p), m.at_2_5) << n;
    EXPECT_EQ(q(-2.5, 1, 0, DType::i8, p), m.at_m2_5) << n;
    EXPECT_EQ(q(2.2, 1, 0, DType::i8, p), m.at_2_2) << n;
    EXPECT_EQ(q(-2.2, 1, 0, DType::i8, p), m.at_m2_2) << n;
    EXPECT_EQ(q(2.7, 1, 0, DType::i8, p), m.at_2_7) << n;
    EXPECT_EQ(q(-2.7, 1, 0, DType::i8, p), m.at_m2_7) << n;
  }
}

// docs/numerics.md "Pitfalls" (4, where the zero point is added): x/s = 0.5 - 2^-25 with zp = 1.
// Adding zp in f32 gives 1.5 - 2^-25, which needs 26 significant bits; the nearest f32 (ulp 2^-23
// in [1, 2)) is 1.5, a tie -> 2. Adding zp in integers: round(0.5 - 2^-25) = 0, + 1 = 1.
TEST(QuantizeOrder, ZeroPointBeforeRoundingInF32) {
  QuantizePolicy after = onnx();
  QuantizePolicy before = onnx();
  before.order = QuantizeOrder::div_add_float;
  const double x = 0x1.fffffep-2;  // 0.5 - 2^-25, exact in f32
  EXPECT_EQ(q(x, 1, 1, DType::i8, after), 1);
  EXPECT_EQ(q(x, 1, 1, DType::i8, before), 2);
  // In exact arithmetic the float add does not round: 1.5 - 2^-25 -> 1.
  before.compute = {ComputeFormat::Kind::exact, 0};
  EXPECT_EQ(q(x, 1, 1, DType::i8, before), 1);
}

// FBGEMM include/fbgemm/QuantUtils.h::Quantize comment: scale = 0.00214854861f, zp = 0,
// src = 0.273939937f: src * (1/scale) is 127.5 in f32 (-> 128), src / scale is 127.499992
// (-> 127).
TEST(QuantizeOrder, FbgemmReciprocalExample) {
  const double s = static_cast<float>(0.00214854861);
  const double x = static_cast<float>(0.273939937);
  QuantizePolicy div = onnx();
  QuantizePolicy recip = onnx();
  recip.order = QuantizeOrder::recip_then_add_int;
  EXPECT_EQ(q(x, s, 0, DType::i8, div), 127);
  EXPECT_EQ(q(x, s, 0, DType::u8, recip), 128);
  // The element is a near tie under division and an exact tie under the reciprocal.
  EXPECT_EQ(quantize_element(x, DType::f32, s, DType::f32, 0, DType::u8, div).label, Label::near_tie);
  EXPECT_EQ(quantize_element(x, DType::f32, s, DType::f32, 0, DType::u8, recip).label, Label::tie);
}

// The fma order rounds once: with x = 0x1.fffffep-2, 1/s = 1, zp = 1, fma gives
// 1.5 - 2^-25 -> f32 1.5 (same as the separate add here), while in f64 the sum is exact.
TEST(QuantizeOrder, FmaRoundsOnce) {
  QuantizePolicy p = onnx();
  p.order = QuantizeOrder::fma_recip;
  p.compute = {ComputeFormat::Kind::f32, 0};
  EXPECT_EQ(q(0x1.fffffep-2, 1, 1, DType::i8, p), 2);
  p.compute = {ComputeFormat::Kind::f64, 0};
  EXPECT_EQ(q(0x1.fffffep-2, 1, 1, DType::i8, p), 1);
}

// f16 compute: 1000 / 0.0999755859375 = 10002.44...; f16 has ulp 8 in [8192, 16384), so
// the quotient rounds to 10000 (10002.44 is nearer to 10000 than to 10008).
TEST(QuantizeCompute, F16DivisionRoundsTheQuotient) {
  const double s = 0.0999755859375;  // 0x2E66, the f16 nearest to 0.1
  QuantizePolicy p = onnx();         // scale_type: f16 scale -> f16 division
  EXPECT_EQ(q(1000.0, s, 0, DType::i16, p, DType::f16, DType::f16), 10000);
  p.compute = {ComputeFormat::Kind::f32, 0};
  EXPECT_EQ(q(1000.0, s, 0, DType::i16, p, DType::f16, DType::f16), 10002);
}

// An f16 quotient above 65504 overflows to inf and saturates.
TEST(QuantizeCompute, F16OverflowToInfinitySaturates) {
  const QuantizeElement e = quantize_element(60000.0, DType::f16, 0x1p-4, DType::f16, 0, DType::i32, onnx());
  EXPECT_EQ(e.q, 2147483647);
  EXPECT_EQ(e.label, Label::special);
}

// fixed64 with 1 fraction bit truncates x/s onto the 0.5 grid first: 0.7/1 -> 0.5 -> tie -> 0.
TEST(QuantizeCompute, FixedPointTruncatesIntermediate) {
  QuantizePolicy p = onnx();
  p.compute = {ComputeFormat::Kind::fixed64, 1};
  EXPECT_EQ(q(0.7, 1, 0, DType::i8, p), 0);
  EXPECT_EQ(q(1.7, 1, 0, DType::i8, p), 2);   // 1.5 -> tie -> 2
  EXPECT_EQ(q(-0.7, 1, 0, DType::i8, p), 0);  // truncates toward zero to -0.5 -> 0
}

TEST(QuantizeNan, RulesAndUnspecified) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  QuantizePolicy p = onnx();
  QuantizeElement e = quantize_element(nan, DType::f32, 1, DType::f32, 3, DType::i8, p);
  EXPECT_FALSE(e.specified);
  EXPECT_EQ(e.label, Label::special);
  p.nan = NanRule::to_qmin;
  EXPECT_EQ(q(nan, 1, 3, DType::i8, p), -128);
  p.nan = NanRule::to_qmax;
  EXPECT_EQ(q(nan, 1, 3, DType::i8, p), 127);
  p.nan = NanRule::to_zero_point;
  EXPECT_EQ(q(nan, 1, 3, DType::i8, p), 3);
  p.nan = NanRule::to_zero;
  EXPECT_EQ(q(nan, 1, 3, DType::u8, p), 0);
  // +-inf saturate whatever the NaN rule.
  EXPECT_EQ(q(INFINITY, 1, 3, DType::i8, p), 127);
  EXPECT_EQ(q(-INFINITY, 1, 3, DType::i8, p), -128);
}

TEST(QuantizeLabels, TieNearTieClearSaturated) {
  EXPECT_EQ(label(2.5, 1, 0, DType::i8), Label::tie);
  EXPECT_EQ(label(2.5 + 1.0 / 4096, 1, 0, DType::i8), Label::near_tie);  // within 2^-10
  EXPECT_EQ(label(2.5 + 1.0 / 512, 1, 0, DType::i8), Label::clear);      // 2^-9 away
  EXPECT_EQ(label(2.2, 1, 0, DType::i8), Label::clear);
  EXPECT_EQ(label(300, 1, 0, DType::i8), Label::saturated);
  EXPECT_EQ(label(0x1p-140, 1, 0, DType::i8), Label::special);  // an f32 subnormal input
}

TEST(QuantizeTensor, PerAxisAndBlockedParameters) {
  // Per axis 0 of [2, 3]: row 0 uses s = 0.5, zp = 1; row 1 s = 0.25, zp = -1.
  Tensor x(DType::f32, {2, 3});
  const float xs[] = {0.25f, 0.75f, -1.25f, 0.25f, 0.75f, -1.25f};
  for (int i = 0; i < 6; ++i) x.set_double(i, xs[i]);
  QuantParams p;
  p.scales = {0.5, 0.25};
  p.zero_points = {1, -1};
  p.axis = 0;
  QuantizeResult r = quantize(x, p, DType::i8, onnx());
  // row 0: 0.5 -> 0 (tie, even), 1.5 -> 2, -2.5 -> -2; +1 -> 1, 3, -1
  // row 1: 1 -> 1, 3 -> 3, -5 -> -5; -1 -> 0, 2, -6
  const std::int64_t want[] = {1, 3, -1, 0, 2, -6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r.q.get_int(i), want[i]) << i;

  // Blocked: [1, 5] with block 2 along axis 1 -> 3 blocks, the last one short.
  Tensor y(DType::f32, {1, 5});
  for (int i = 0; i < 5; ++i) y.set_double(i, 3.0);
  QuantParams b;
  b.scales = {1.0, 2.0, 4.0};
  b.axis = 1;
  b.block_size = 2;
  QuantizeResult rb = quantize(y, b, DType::i8, onnx());
  // 3/1 = 3, 3/2 = 1.5 -> 2, 3/4 = 0.75 -> 1
  const std::int64_t wantb[] = {3, 3, 2, 2, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rb.q.get_int(i), wantb[i]) << i;
}

TEST(QuantizeExplain, TraceNamesTheRoundingDecision) {
  const QuantizeElement e = quantize_element(2.5, DType::f32, 1, DType::f32, 0, DType::i8, onnx(), true);
  ASSERT_FALSE(e.steps.empty());
  bool found = false;
  for (const TraceStep& s : e.steps)
    if (s.note.find("exactly half-way (a tie)") != std::string::npos && s.note.find("gives 2") != std::string::npos)
      found = true;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace qc

namespace qc {
namespace {

// Every input class is decided without rationals under the common specs (the fast path's
// special-value rules, docs/numerics.md "Exact and fast"): NaN, infinities, subnormal inputs,
// quotients that overflow their format, integer casts of values that do not fit, and f16/bf16
// compute. The fast path must equal the slow path element for element, and leave nothing to it.
Tensor every_input_class() {
  // Every 7th f16 and bf16 bit pattern: each binade, subnormals, infinities and NaNs of both.
  std::vector<float> v;
  for (std::uint32_t b = 0; b < 65536; b += 7) v.push_back(static_cast<float>(float_bits_to_double(DType::f16, b)));
  for (std::uint32_t b = 0; b < 65536; b += 7) v.push_back(static_cast<float>(float_bits_to_double(DType::bf16, b)));
  for (float f : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0x1p-149f, -0x1p-140f, 0x1.fffffcp-127f,
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 0x1p62f, -0x1p63f, 0x1p64f})
    v.push_back(f);
  Tensor x(DType::f32, Shape{static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) x.set_double(static_cast<std::int64_t>(i), v[i]);
  return x;
}

TEST(QuantizeFastPath, DecidesEveryInputClass) {
  const Tensor x = every_input_class();
  struct Variant {
    const char* what;
    QuantizePolicy pol;
    DType scale_dtype;
    double scale;
  };
  std::vector<Variant> variants;
  variants.push_back({"onnx", onnx(), DType::f32, 0.0123});
  variants.push_back({"onnx, tiny scale (quotients overflow f32)", onnx(), DType::f32, 0x1p-120});
  variants.push_back({"onnx, f16 scale (f16 compute)", onnx(), DType::f16, 0.0999755859375});
  variants.push_back({"onnx, bf16 scale (bf16 compute)", onnx(), DType::bf16, 0.01171875});
  QuantizePolicy cast = onnx();
  cast.cast = IntCast::x86_int32;
  cast.nan = NanRule::to_qmin;
  variants.push_back({"int32 cast", cast, DType::f32, 0.0123});
  cast.cast = IntCast::x86_int64;
  cast.order = QuantizeOrder::recip_round_then_add_float;
  variants.push_back({"int64 cast, zero point added in float", cast, DType::f32, 0.0123});
  QuantizePolicy wrap = onnx();
  wrap.clamp = Clamp::wrap;
  wrap.nan = NanRule::to_zero_point;
  variants.push_back({"wrap", wrap, DType::f32, 0.0123});
  QuantizePolicy before = onnx();
  before.clamp = Clamp::float_before;
  before.order = QuantizeOrder::div_add_float;
  variants.push_back({"clamp in float before rounding", before, DType::f32, 0.0123});
  QuantizePolicy exact = onnx();
  exact.compute = {ComputeFormat::Kind::exact, 0};
  variants.push_back({"exact compute", exact, DType::f32, 0.0123});
  for (const Variant& v : variants) {
    for (const DType out : {DType::i8, DType::u16, DType::i32}) {
      QuantParams p;
      p.scales = {v.scale};
      p.scale_dtype = v.scale_dtype;
      p.zero_points = {out == DType::u16 ? 7 : -3};
      const QuantizeResult fast = quantize(x, p, out, v.pol, OraclePath::fast, true);
      const QuantizeResult slow = quantize(x, p, out, v.pol, OraclePath::slow, true);
      SCOPED_TRACE(std::string(v.what) + " into " + std::string(name(out)));
      EXPECT_EQ(fast.slow_elements, 0);
      for (std::int64_t i = 0; i < x.size(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        ASSERT_EQ(fast.q.get_int(i), slow.q.get_int(i)) << "x = " << x.get_double(i);
        ASSERT_EQ(fast.labels[u], slow.labels[u]) << "x = " << x.get_double(i);
        ASSERT_EQ(fast.specified[u], slow.specified[u]) << "x = " << x.get_double(i);
      }
    }
  }
}

// The special-value rules, by hand: an f32 subnormal quantizes like any small value (to the zero
// point) but is labelled special; a quotient that overflows f32 saturates and is special; under
// an x86 int32 cast NaN becomes INT32_MIN, + zp wraps in int32, then the clamp.
TEST(QuantizeFastPath, SpecialValuesByHand) {
  QuantParams p;
  p.zero_points = {3};
  Tensor x(DType::f32, Shape{4});
  x.set_double(0, 0x1p-140);
  x.set_double(1, 3e38);
  x.set_double(2, -3e38);
  x.set_double(3, std::numeric_limits<double>::quiet_NaN());
  p.scales = {0x1p-20};  // 3e38 / 2^-20 overflows f32
  QuantizePolicy pol = onnx();
  pol.cast = IntCast::x86_int32;
  const QuantizeResult r = quantize(x, p, DType::i8, pol);
  EXPECT_EQ(r.slow_elements, 0);
  EXPECT_EQ(r.q.get_int(0), 3);
  EXPECT_EQ(r.labels[0], Label::special);
  // inf cast to int32 is INT32_MIN; + 3 is -2147483645, which saturates to -128
  EXPECT_EQ(r.q.get_int(1), -128);
  EXPECT_EQ(r.q.get_int(2), -128);
  EXPECT_EQ(r.q.get_int(3), -128);
  pol.cast = IntCast::exact;
  pol.nan = NanRule::to_zero_point;
  const QuantizeResult e = quantize(x, p, DType::i8, pol);
  EXPECT_EQ(e.slow_elements, 0);
  EXPECT_EQ(e.q.get_int(1), 127);
  EXPECT_EQ(e.labels[1], Label::special);
  EXPECT_EQ(e.q.get_int(2), -128);
  EXPECT_EQ(e.q.get_int(3), 3);
}

}  // namespace
}  // namespace qc
