// The element numerics of the hip kernels (backends/hip/numerics.hpp), run on the host, against the
// oracle under each variant's claimed preset: every quantize, dequantize and requantize element,
// the f16 rounding, the parameter indexing, the int4 nibbles and the zero-point compensation.
// The kernels call these same functions, so this is the numerics of every variant without a GPU.
#include "backends/hip/numerics.hpp"
#include "backends/hip/backend.hpp"
#include "backends/hip/gemm_tile.hpp"
#include "backends/hip/plan.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/int4.hpp"
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"
#include "tests/hip/cases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace qc::gpu {
namespace {

using test::Rng;

float f32_from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

Spec claim_of(HipVariant v) { return *find_preset(hip_variant_claim(v)); }

// ---- binary16 ---------------------------------------------------------------------------------

// Every f16 value, the midpoints between neighbours and one f32 ulp either side of them, the
// overflow threshold, and random f32 bit patterns: the software rounding equals the oracle's
// correctly rounded encoder (ties to even, overflow to infinity).
TEST(HipNumerics, RoundToF16IsCorrectlyRounded) {
  std::vector<float> xs;
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const auto v = static_cast<float>(float_bits_to_double(DType::f16, h));
    const auto next = static_cast<float>(float_bits_to_double(DType::f16, h + 1));
    const float mid = v + (next - v) / 2;  // exact: the midpoint has one more bit than f16
    for (float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (float x : {65504.0f, 65519.99f, 65520.0f, 1e30f, INFINITY, 0x1p-25f, 0x1.8p-25f, 0x1p-26f})
    xs.insert(xs.end(), {x, -x});
  Rng r(1);
  for (int i = 0; i < 200000; ++i) {
    const float x = f32_from_bits(static_cast<std::uint32_t>(r.next()));
    if (!std::isnan(x)) xs.push_back(x);
  }
  std::int64_t bad = 0;
  for (float x : xs) {
    const std::uint64_t want = double_to_float_bits(DType::f16, x);
    const float got = round_to_f16(x);
    if (double_to_float_bits(DType::f16, got) != want || f16_bits(x) != want) {
      if (++bad <= 5)
        ADD_FAILURE() << "x = " << x << " (0x" << std::hex << bits_of(x) << "): got 0x" << f16_bits(x) << ", want 0x"
                      << want << std::dec;
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(std::isnan(round_to_f16(NAN)));
  EXPECT_EQ(f16_bits(NAN) & 0x7C00u, 0x7C00u);
}

// ---- Rounding helpers -------------------------------------------------------------------------

TEST(HipNumerics, RoundingHelpers) {
  // Ties: even for __float2int_rn, away for roundf. 8388607.5 = 2^23 - 1/2 is the largest f32 tie.
  const struct {
    float x;
    std::int32_t even, away;
  } ties[] = {{0.5f, 0, 1},
              {1.5f, 2, 2},
              {2.5f, 2, 3},
              {-0.5f, 0, -1},
              {-1.5f, -2, -2},
              {-2.5f, -2, -3},
              {8388607.5f, 8388608, 8388608}};
  for (const auto& t : ties) {
    EXPECT_EQ(round_to_int32(t.x, Rounding::float2int_rn), t.even) << t.x;
    EXPECT_EQ(round_to_int32(t.x, Rounding::roundf), t.away) << t.x;
  }
  // NaN -> 0 and saturation at the int32 bounds (2^31 is the first float past INT32_MAX).
  for (Rounding r : {Rounding::float2int_rn, Rounding::roundf}) {
    EXPECT_EQ(round_to_int32(NAN, r), 0);
    EXPECT_EQ(round_to_int32(2147483648.0f, r), 2147483647);
    EXPECT_EQ(round_to_int32(INFINITY, r), 2147483647);
    EXPECT_EQ(round_to_int32(-2147483648.0f, r), -2147483647 - 1);
    EXPECT_EQ(round_to_int32(-INFINITY, r), -2147483647 - 1);
    EXPECT_EQ(round_to_int32(2147483520.0f, r), 2147483520);  // the largest float below 2^31
  }
}

TEST(HipNumerics, ParamIndexIsTheOraclesIndexer) {
  Rng r(3);
  for (int trial = 0; trial < 200; ++trial) {
    Shape shape;
    const auto rank = static_cast<int>(r.uniform(1, 4));
    for (int d = 0; d < rank; ++d) shape.push_back(r.uniform(1, 7));
    QuantParams p;
    const auto kind = r.uniform(0, 2);
    if (kind > 0) {
      p.axis = static_cast<int>(r.uniform(-rank, rank - 1));
      if (kind == 2) p.block_size = r.uniform(1, 4);
    }
    const ParamIndexer oracle(p, shape);
    const ParamLayout l = plan::layout_of(p, shape);
    for (std::int64_t i = 0; i < numel(shape); ++i) ASSERT_EQ(param_index(i, l), oracle(i)) << trial << " " << i;
  }
}

// ---- Quantize ---------------------------------------------------------------------------------

struct QuantizeSet {
  Tensor x;
  QuantParams p;
  DType out;
};

// f32 inputs around the ties of a scale, specials, and every f16 value as an f16 input.
std::vector<QuantizeSet> quantize_sets() {
  std::vector<QuantizeSet> sets;
  Rng r(4);
  const std::vector<std::pair<double, DType>> scales = {{1.0, DType::f32},
                                                        {static_cast<float>(0.1), DType::f32},
                                                        {3.0, DType::f32},
                                                        {0.0078125, DType::f32},
                                                        {static_cast<float>(0.0217), DType::f32},
                                                        {0.0999755859375, DType::f16},
                                                        {2.5, DType::f16},
                                                        {float_bits_to_double(DType::f16, 0x211F), DType::f16}};
  const std::vector<std::pair<DType, std::int64_t>> outs = {
      {DType::i8, 0}, {DType::i8, -7}, {DType::u8, 128}, {DType::i4, 3}, {DType::u16, 1000}};
  for (const auto& [s, st] : scales)
    for (const auto& [out, zp] : outs) {
      QuantizeSet q;
      q.p.scale_dtype = st;
      q.p.scales = {s};
      q.p.zero_points = {zp};
      q.out = out;
      q.x = Tensor(DType::f32, {4000});
      for (std::int64_t i = 0; i < 4000; ++i) {
        const double k = static_cast<double>(r.uniform(-300, 300)) + 0.5;
        float v = static_cast<float>(k * s);
        if (i % 4 == 1) v = std::nextafter(v, INFINITY);
        if (i % 4 == 2) v = std::nextafter(v, -INFINITY);
        if (i % 4 == 3) v = static_cast<float>((r.unit() * 2 - 1) * 400 * s);
        q.x.set_double(i, v);
      }
      const double specials[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 0.0, -0.0, 1e-40, 3e38};
      for (int i = 0; i < 9; ++i) q.x.set_double(i, specials[i]);
      sets.push_back(q);
      // Every f16 value as an f16 input, for four of the scales and the two 8-bit outputs.
      const bool exhaustive = (s == 3.0 || s == 0.0999755859375 || s == 2.5 || s == static_cast<float>(0.1)) &&
                              (out == DType::i8 || out == DType::u8) && zp != -7;
      if (!exhaustive) continue;
      QuantizeSet h = q;
      h.x = Tensor(DType::f16, {65536});
      for (std::int64_t i = 0; i < 65536; ++i) h.x.set_bits(i, static_cast<std::uint64_t>(i));
      sets.push_back(h);
    }
  return sets;
}

TEST(HipNumerics, QuantizeElementMatchesEachClaim) {
  const std::vector<QuantizeSet> sets = quantize_sets();
  for (HipVariant v : all_hip_variants()) {
    const Recipe recipe = hip_recipe(v);
    const Spec spec = claim_of(v);
    std::int64_t compared = 0, ties = 0;
    for (const QuantizeSet& s : sets) {
      const QuantizeResult want = quantize(s.x, s.p, s.out, spec.quantize_for(s.x.dtype()));
      const auto scale = static_cast<float>(s.p.scales[0]);
      const auto zp = static_cast<std::int32_t>(s.p.zero_points[0]);
      for (std::int64_t i = 0; i < s.x.size(); ++i) {
        if (!want.specified[static_cast<std::size_t>(i)]) continue;
        const auto x = static_cast<float>(s.x.get_double(i));
        const std::int32_t got =
            quantize_element(x, scale, zp, static_cast<std::int32_t>(int_min(s.out)),
                             static_cast<std::int32_t>(int_max(s.out)), recipe, s.p.scale_dtype == DType::f16);
        ASSERT_EQ(got, want.q.get_int(i))
            << hip_variant_name(v) << ": x = " << x << " (" << name(s.x.dtype()) << "), s = " << scale << " ("
            << name(s.p.scale_dtype) << "), zp = " << zp << ", out " << name(s.out);
        ++compared;
        ties += want.labels[static_cast<std::size_t>(i)] == Label::tie;
      }
    }
    EXPECT_GT(compared, 500000) << hip_variant_name(v);
    EXPECT_GT(ties, 10000) << hip_variant_name(v) << ": the sets must exercise the tie rules";
  }
}

// ---- Dequantize -------------------------------------------------------------------------------

TEST(HipNumerics, DequantizeElementMatchesEachClaim) {
  struct Set {
    DType q;
    std::int64_t lo, hi;
  };
  const Set qs[] = {{DType::i8, -128, 127}, {DType::u8, 0, 255}, {DType::i4, -8, 7}, {DType::i16, -32768, 32767}};
  const std::vector<std::pair<double, DType>> scales = {{static_cast<float>(0.1), DType::f32},
                                                        {static_cast<float>(0.0217), DType::f32},
                                                        {1e-3, DType::f16},
                                                        {0.0999755859375, DType::f16},
                                                        {3.0, DType::f16}};
  for (HipVariant v : all_hip_variants()) {
    const Recipe recipe = hip_recipe(v);
    const Spec spec = claim_of(v);
    for (const Set& set : qs)
      for (auto [s, st] : scales)
        for (std::int64_t zp : {std::int64_t{0}, set.lo + 3, (set.lo + set.hi) / 2 + 1})
          for (DType out : {DType::f32, DType::f16}) {
            if (st == DType::f16) s = float_bits_to_double(DType::f16, double_to_float_bits(DType::f16, s));
            // Every value of the 4- and 8-bit formats; every 37th of i16 and its extremes.
            const std::int64_t step = set.hi - set.lo > 255 ? 37 : 1;
            Tensor q(set.q, {(set.hi - set.lo) / step + 2});
            for (std::int64_t i = 0; i < q.size(); ++i) q.set_int(i, std::min(set.lo + i * step, set.hi));
            QuantParams p;
            p.scale_dtype = st;
            p.scales = {s};
            p.zero_points = {zp};
            const DequantizeResult want = dequantize(q, p, out, spec.dequantize);
            for (std::int64_t i = 0; i < q.size(); ++i) {
              const float y = dequantize_element(q.get_int(i), static_cast<float>(s), zp, recipe, st == DType::f16);
              const std::uint64_t got = out == DType::f16 ? f16_bits(y) : bits_of(y);
              ASSERT_EQ(got, want.y.bits(i)) << hip_variant_name(v) << ": q = " << q.get_int(i) << ", zp = " << zp
                                             << ", s = " << s << " (" << name(st) << "), out " << name(out);
            }
          }
  }
}

// ---- Requantize -------------------------------------------------------------------------------

TEST(HipNumerics, RequantizeElementMatchesEachClaim) {
  struct Scales {
    double in, w, out;
  };
  const Scales scales[] = {{0.25, 0.5, 0.75},
                           {static_cast<float>(0.02), static_cast<float>(0.005), static_cast<float>(0.05)},
                           {static_cast<float>(0.1), static_cast<float>(0.1), static_cast<float>(0.1)},
                           {1.0, 1.0, 3.0},
                           {static_cast<float>(0.0173), static_cast<float>(0.0091), static_cast<float>(0.37)}};
  Rng r(5);
  for (HipVariant v : all_hip_variants()) {
    const Recipe recipe = hip_recipe(v);
    const Spec spec = claim_of(v);
    std::int64_t ties = 0;
    for (const Scales& sc : scales)
      for (DType out : {DType::i8, DType::u8, DType::i16})
        for (std::int64_t zp : {std::int64_t{0}, int_min(out) + 5, int_max(out) - 5}) {
          const float m =
              requantize_multiplier(static_cast<float>(sc.in), static_cast<float>(sc.w), static_cast<float>(sc.out));
          Tensor acc(DType::i32, {3000});
          for (std::int64_t i = 0; i < acc.size(); ++i) {
            std::int64_t a;
            if (i % 3 == 0) {  // near the ties of the f32 multiplier: (k + 1/2) / m and neighbours
              const double k = static_cast<double>(r.uniform(-400, 400)) + 0.5;
              a = static_cast<std::int64_t>(std::llround(k / m)) + r.uniform(-1, 1);
            } else if (i % 3 == 1) {
              a = r.uniform(-100000, 100000);
            } else {
              a = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.next()));
            }
            acc.set_int(i, std::clamp<std::int64_t>(a, INT32_MIN, INT32_MAX));
          }
          acc.set_int(0, INT32_MIN);
          acc.set_int(1, INT32_MAX);
          RequantizeParams p;
          p.input_scale = sc.in;
          p.weight_scales = {sc.w};
          p.output_scale = sc.out;
          p.output_zero_points = {zp};
          const RequantizeResult want = requantize(acc, p, out, spec.requantize);
          for (std::int64_t i = 0; i < acc.size(); ++i) {
            const std::int32_t got = requantize_element(
                static_cast<std::int32_t>(acc.get_int(i)), m, static_cast<std::int32_t>(zp),
                static_cast<std::int32_t>(int_min(out)), static_cast<std::int32_t>(int_max(out)), recipe.rounding);
            ASSERT_EQ(got, want.q.get_int(i)) << hip_variant_name(v) << ": acc = " << acc.get_int(i) << ", scales "
                                              << sc.in << " " << sc.w << " " << sc.out << ", zp = " << zp;
          }
          // Ties of the f32 product: f32(acc) * m lands on k + 1/2 (the oracle's labels are against
          // the exact multiplier, so count them directly).
          for (std::int64_t i = 0; i < acc.size(); ++i) {
            const float pr = mul_rn(to_float(acc.get_int(i)), m);
            ties += pr == std::floor(pr) + 0.5f;
          }
        }
    EXPECT_GT(ties, 100) << hip_variant_name(v);
  }
}

// ---- int4 and the compensation ----------------------------------------------------------------

TEST(HipNumerics, Int4NibblesMatchTheOracle) {
  Rng r(6);
  for (const Int4Packing& packing :
       {onnx_int4_packing(), torchao_uint4_packing(), migraphx_int4_packing(0), migraphx_int4_packing(-1)}) {
    for (DType t : {DType::i4, DType::u4}) {
      const Shape shape = packing.odd == OddLength::reject ? Shape{4, 6} : Shape{3, 7};
      const Tensor v = test::random_ints(t, shape, r, int_min(t), int_max(t));
      const Tensor packed = pack_int4(v, t, packing);
      std::int64_t length = v.size(), inner = 1;
      if (packing.axis) {
        const int axis = *packing.axis < 0 ? *packing.axis + 2 : *packing.axis;
        length = shape[static_cast<std::size_t>(axis)];
        inner = axis == 0 ? shape[1] : 1;
      }
      const bool low_first = packing.nibbles == NibbleOrder::low_first;
      std::vector<std::int32_t> values(static_cast<std::size_t>(v.size()));
      for (std::int64_t i = 0; i < v.size(); ++i) {
        const NibbleSource s = int4_source(i, length, inner, low_first);
        ASSERT_LT(s.byte, packed.size());
        EXPECT_EQ(int4_value(static_cast<std::uint8_t>(packed.bits(s.byte)), s.high, t == DType::i4), v.get_int(i));
        values[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v.get_int(i));
      }
      for (std::int64_t b = 0; b < packed.size(); ++b)
        EXPECT_EQ(int4_packed_byte(values.data(), b, length, inner, low_first), packed.bits(b)) << b;
    }
  }
}

// Σ (a - za)(b - zb) mod 2^32 from the shifted operands' raw dot product, row and column sums.
TEST(HipNumerics, CompensationIsTheZeroPointFreeSum) {
  Rng r(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const bool a_u8 = r.uniform(0, 1) != 0, b_u8 = r.uniform(0, 1) != 0;
    const std::int64_t K = trial < 10 ? 100000 : r.uniform(1, 300);
    const std::int32_t za =
        a_u8 ? static_cast<std::int32_t>(r.uniform(0, 255)) : static_cast<std::int32_t>(r.uniform(-128, 127));
    const std::int32_t zb =
        b_u8 ? static_cast<std::int32_t>(r.uniform(0, 255)) : static_cast<std::int32_t>(r.uniform(-128, 127));
    std::int32_t raw = 0, rows = 0, cols = 0;
    std::int64_t exact = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      // The first trials use extreme values so the sums leave int32.
      const std::int32_t a =
          trial < 10 ? (a_u8 ? 255 : -128) : static_cast<std::int32_t>(a_u8 ? r.uniform(0, 255) : r.uniform(-128, 127));
      const std::int32_t b =
          trial < 10 ? (b_u8 ? 0 : 127) : static_cast<std::int32_t>(b_u8 ? r.uniform(0, 255) : r.uniform(-128, 127));
      const std::int32_t as = a - (a_u8 ? 128 : 0), bs = b - (b_u8 ? 128 : 0);
      raw = dot4(pack_word(as, 0, 0, 0), pack_word(bs, 0, 0, 0), raw);
      rows = wrapping_add(rows, as);
      cols = wrapping_add(cols, bs);
      exact += std::int64_t{a - za} * (b - zb);
    }
    const std::int32_t got =
        compensate(raw, rows, cols, za - (a_u8 ? 128 : 0), zb - (b_u8 ? 128 : 0), static_cast<std::int32_t>(K));
    ASSERT_EQ(got, static_cast<std::int32_t>(static_cast<std::uint32_t>(exact))) << trial;
  }
}

TEST(HipNumerics, Dot4IsFourSignedProductsWrapping) {
  // Bytes (1, -2, 127, -128) . (3, 4, -128, -128) = 3 - 8 - 16256 + 16384 = 123, plus c.
  const std::int32_t a = pack_word(1, -2, 127, -128), b = pack_word(3, 4, -128, -128);
  EXPECT_EQ(dot4(a, b, 1000), 1123);
  EXPECT_EQ(dot4(a, b, 2147483647), -2147483648 + 122);  // wraps modulo 2^32
}

}  // namespace
}  // namespace qc::gpu
