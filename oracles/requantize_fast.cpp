// The requantize fast path: per channel, the scheme evaluated in machine arithmetic that provably
// equals its definition (requantize.cpp), with the elements it cannot decide handed back to the
// definition. The tensor driver (requantize.cpp requantize) calls it through requantize_detail.hpp.
#include "oracles/requantize_detail.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace qc {

using namespace requantize_detail;

// ---- Fast path ---------------------------------------------------------------------------------
//
// Each channel's multiplier is prepared once, exactly as the slow path prepares it
// (prepare_multiplier). Per element the fast path then evaluates the scheme in machine arithmetic
// that provably equals its definition:
//   fixed-point schemes  the unchecked integer kernels of fixed_point.hpp -- the very definitions
//                        the slow path calls through their checked wrappers -- in int64 with the
//                        same int32 wraps;
//   float_multiplier, xnnpack_fp32 (f32 or f64 product)
//                        hardware binary32/binary64: in the default environment each operation is
//                        the policy's correctly rounded operation (the oracle is built with
//                        -ffp-contract=off, and FLT_EVAL_METHOD is 0);
//   ideal, and float_multiplier with an exact product
//                        floor(acc * M) and where acc * M lies, decided by ExactProduct below.
// Labels come from an ExactProduct on the ideal multiplier. An element whose bounds do not hold
// goes to the slow path. So does every element of a channel on which the slow path throws for
// acc = 0 (a precondition on the channel's parameters), and every element that would break a
// precondition depending on the accumulator (TOSA's REQUIREs), so that errors are the slow path's
// own, raised at the same element.

static_assert(FLT_EVAL_METHOD == 0, "the fast path needs float and double operations evaluated in their own format");

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

u128 low_128_bits(const BigInt& v) {  // v >= 0
  const BigInt mask64 = (BigInt(1) << 64) - 1;
  const auto lo = static_cast<std::uint64_t>(BigInt(v & mask64).convert_to<unsigned long long>());
  const auto hi = static_cast<std::uint64_t>(BigInt((v >> 64) & mask64).convert_to<unsigned long long>());
  return (static_cast<u128>(hi) << 64) | lo;
}

// Where v = acc * M lies: floor(v), the fraction class of v - floor(v), and whether v is within
// kNearTieDistance of floor(v) + 1/2.
struct Position {
  std::int64_t floor = 0;
  Fraction fraction = Fraction::zero;
  bool near = false;
};

// A positive rational multiplier M = N / D, prepared to locate acc * M exactly for any int32 acc.
// A double approximation with a proven error bound settles almost every element; the rest (ties,
// and values within that bound of a decision boundary) are settled exactly in 128-bit integers
// when D < 2^124, and otherwise left to the slow path.
class ExactProduct {
 public:
  enum class Where : std::uint8_t {
    settled,    // the Position is filled in
    beyond,     // |acc * M| > 2^38: beyond every int32 output range (it has the sign of acc)
    unsettled,  // the slow path decides
  };

  ExactProduct() = default;
  explicit ExactProduct(const Rational& m) {
    const ExactFloat a = round_to_format(DType::f64, m);  // RNE: |a - M| <= 2^-53 M in the normal range
    if (a.is_finite()) {
      const double d = a.value.convert_to<double>();  // exact: a is a double
      if (d >= 0x1p-1000 && d <= 0x1p1000) approx_ = d;
    }
    if (msb(denominator(m)) < 124) {
      den_ = low_128_bits(denominator(m));
      num_mod_ = low_128_bits(numerator(m));
    }
  }

  // M rounded to the nearest double (relative error 2^-53); 0 when M is outside [2^-1000, 2^1000].
  double approx() const { return approx_; }

  // exact_beyond: also settle |acc * M| > 2^38 exactly (up to 2^50) instead of answering `beyond`.
  [[gnu::always_inline]] Where locate(std::int32_t acc, Position& p, bool exact_beyond = false) const {
    if (acc == 0) {
      p = {0, Fraction::zero, false};
      return Where::settled;
    }
    if (approx_ == 0) return Where::unsettled;
    // t = acc * approx_ rounded: |acc*M - t| < |t| * 2^-51 (two roundings of relative 2^-53).
    const double t = static_cast<double>(acc) * approx_;
    const double at = std::fabs(t);
    if (at < 0.25) {  // |acc * M| < 1/2, with the sign of acc: far from any half-integer
      p = acc > 0 ? Position{0, Fraction::below_half, false} : Position{-1, Fraction::above_half, false};
      return Where::settled;
    }
    if (at >= 0x1p39 && !exact_beyond) return Where::beyond;
    if (at >= 0x1p50) return Where::unsettled;
    auto fl = static_cast<std::int64_t>(t);  // floor by truncation (branch-free: the sign is data)
    fl -= static_cast<double>(fl) > t ? 1 : 0;
    // d = t - (fl + 1/2) is exact (Sterbenz: 1/4 <= |t| < 2^50). With eps above the error of t,
    // t and acc * M lie on the same side of fl + 1/2, of fl + 1/2 +- 2^-10, and strictly between
    // fl and fl + 1 when every comparison below clears eps (the roundings in them are monotone).
    const double d = t - (static_cast<double>(fl) + 0.5);
    const double ad = std::fabs(d);
    const double eps = at * 0x1p-50;
    if (ad > eps && std::fabs(ad - kNearTieDistance) > eps && ad + eps < 0.5) {
      p = {fl, d < 0 ? Fraction::below_half : Fraction::above_half, ad <= kNearTieDistance};
      return Where::settled;
    }
    if (den_ == 0) return Where::unsettled;
    // Exactly: r = acc * N - fl * D. |acc*M - t| < 1 puts floor(acc * M) within one of fl, so r
    // lies in (-D, 2D) and fits an i128 (D < 2^124); both products may be taken modulo 2^128.
    const auto wide = [](std::int64_t v) { return static_cast<u128>(static_cast<i128>(v)); };
    auto r = static_cast<i128>(wide(acc) * num_mod_ - wide(fl) * den_);
    const auto den = static_cast<i128>(den_);
    if (r < 0) {
      --fl;
      r += den;
    } else if (r >= den) {
      ++fl;
      r -= den;
    }
    // acc*M - fl = r / D; its distance to 1/2 is |2r - D| / 2D, within 2^-10 iff |2r - D| <= D / 512.
    const i128 twice = 2 * r;
    p.floor = fl;
    p.fraction = r == 0         ? Fraction::zero
                 : twice < den  ? Fraction::below_half
                 : twice == den ? Fraction::half
                                : Fraction::above_half;
    p.near = (twice > den ? twice - den : den - twice) <= (den >> 9);
    return Where::settled;
  }

 private:
  double approx_ = 0;  // M rounded to the nearest double; 0 when outside [2^-1000, 2^1000]
  u128 num_mod_ = 0;   // N modulo 2^128
  u128 den_ = 0;       // D; 0 when D >= 2^124
};

// The label of v = acc * M relative to the ideal value (see requantize.hpp, and ideal_label):
// saturated when v + zp >= hi + 1/2 or v + zp <= lo - 1/2.
[[gnu::always_inline]] inline Label label_at(const Position& p, std::int64_t hi_less_zp, std::int64_t lo_less_zp) {
  if (p.floor > hi_less_zp || (p.floor == hi_less_zp && p.fraction >= Fraction::half)) return Label::saturated;
  if (p.floor < lo_less_zp - 1 || (p.floor == lo_less_zp - 1 && p.fraction <= Fraction::half)) return Label::saturated;
  if (p.fraction == Fraction::half) return Label::tie;
  return p.near ? Label::near_tie : Label::clear;
}

// The ideal-value label of one element; false when it is left to the slow path.
struct IdealLabel {
  const ExactProduct* ideal;
  std::int64_t hi_less_zp, lo_less_zp;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, Label& l) const {
    Position p;
    switch (ideal->locate(acc, p)) {
      case ExactProduct::Where::settled:
        l = label_at(p, hi_less_zp, lo_less_zp);
        return true;
      case ExactProduct::Where::beyond:
        l = Label::saturated;
        return true;
      case ExactProduct::Where::unsettled:
        return false;
    }
    return false;
  }
};

// The labels of a run of elements, as IdealLabel gives them, in a branch-free loop (labels are
// data: a branch on them mispredicts). t = acc * m, m the ideal multiplier rounded to double,
// settles every element whose |t| < 2^31 clears the same bounds as ExactProduct::locate, and every
// element with |t| < 1/4 (acc * M then lies strictly between -1/2 and 1/2, with the sign of acc).
// `unsettled[i]` flags the others for IdealLabel. Label codes: clear 0, near_tie 1, saturated 3
// (a settled element is never a tie).
static_assert(static_cast<int>(Label::clear) == 0 && static_cast<int>(Label::near_tie) == 1 &&
              static_cast<int>(Label::saturated) == 3);
// (Compare results are used as 0/1 values: GCC does not if-convert floating-point selects under
// -ftrapping-math.)
void settle_labels(const std::int32_t* acc, Label* labels, std::uint8_t* unsettled, std::int64_t n, double m,
                   double hi_less_zp, double lo_less_zp) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(acc[i]) * m;
    const double at = std::fabs(t);
    const bool in_int32 = at < 0x1p31;
    const double tc = in_int32 ? t : 0.0;  // truncated below without overflow
    const auto ti = static_cast<std::int32_t>(tc);
    const double fl = static_cast<double>(ti - static_cast<std::int32_t>(static_cast<double>(ti) > tc));
    const double d = tc - (fl + 0.5);  // exact for 1/4 <= |t| < 2^31 (see locate)
    const double ad = std::fabs(d);
    const double eps = at * 0x1p-50;
    const bool settled =
        (at < 0.25) | (in_int32 & (ad > eps) & (std::fabs(ad - kNearTieDistance) > eps) & (ad + eps < 0.5));
    const bool above = d > 0;
    const bool saturated =
        (fl > hi_less_zp) | ((fl == hi_less_zp) & above) | (fl < lo_less_zp - 1) | ((fl == lo_less_zp - 1) & !above);
    const bool near = (ad <= kNearTieDistance) & (at >= 0.25);
    labels[i] = static_cast<Label>((saturated ? 3 : 0) | (near ? 1 : 0));
    unsettled[i] = settled ? 0 : 1;
  }
}

// Two's-complement wrap into an integer format of at most 32 bits (int_convert's wrap).
struct WrapTo {
  int bits = 32;
  bool is_signed = true;
  std::int64_t operator()(std::int64_t v) const {
    const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
    std::uint64_t u = static_cast<std::uint64_t>(v) & mask;
    if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
    return static_cast<std::int64_t>(u);
  }
};

// rounds_up() tabulated for one rounding mode, indexed by its five inputs, so that the hot loops
// look the decision up instead of branching on the mode.
class RoundTable {
 public:
  explicit RoundTable(RoundingMode m) {
    for (unsigned i = 0; i < 32; ++i)
      up_[i] = rounds_up(m, (i & 1) != 0, (i & 2) != 0, (i & 4) != 0, (i & 8) != 0, (i & 16) != 0) ? 1 : 0;
  }
  [[gnu::always_inline]] std::int64_t operator()(bool zero, bool half, bool above, bool floor_is_odd,
                                                 bool floor_is_negative) const {
    return up_[static_cast<unsigned>(zero) | static_cast<unsigned>(half) << 1 | static_cast<unsigned>(above) << 2 |
               static_cast<unsigned>(floor_is_odd) << 3 | static_cast<unsigned>(floor_is_negative) << 4];
  }
  [[gnu::always_inline]] std::int64_t operator()(Fraction f, bool floor_is_odd, bool floor_is_negative) const {
    return (*this)(f == Fraction::zero, f == Fraction::half, f == Fraction::above_half, floor_is_odd,
                   floor_is_negative);
  }

 private:
  std::array<std::uint8_t, 32> up_{};
};

// What every kernel needs besides its own parameters.
struct Common {
  std::int64_t zp;
  Range range;
  WrapTo wrap_out;
  std::int64_t clamp(std::int64_t v) const { return std::clamp(v, range.lo, range.hi); }
};

// Each kernel: bool operator()(acc, q) computes the output q exactly as the slow path's eval_*
// does, or returns false to decline the element.

// ideal (eval_ideal), and float_multiplier with an exact product (eval_float in exact arithmetic,
// where a float clamp before rounding equals the integer clamp after it): round(acc * M) with the
// policy's rounding mode, zero-point placement and clamp.
struct RationalKernel {
  Common c;
  const ExactProduct* product;
  bool zp_before;
  bool wrap;
  RoundTable round_up;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    Position p;
    const ExactProduct::Where w = product->locate(acc, p, wrap);
    if (w == ExactProduct::Where::unsettled) return false;
    if (w == ExactProduct::Where::beyond) {  // (not under wrap) far beyond the range either way
      q = acc > 0 ? c.range.hi : c.range.lo;
    } else {
      const std::int64_t base = p.floor + (zp_before ? c.zp : 0);  // floor(v + zp) when zp comes first
      const std::int64_t r = base + round_up(p.fraction, (base & 1) != 0, base < 0);
      const std::int64_t v = zp_before ? r : r + c.zp;
      q = c.clamp(wrap ? c.wrap_out(v) : v);
    }
    return true;
  }
};

// float_multiplier and xnnpack_fp32 with an f32 (T = float) or f64 (T = double) product
// (eval_float): every operation is one hardware IEEE operation.
template <class T>
struct FloatKernel {
  Common c;
  T mult, s_in, s_w, s_out;  // in the product format
  T zp_t, lo_t, hi_t;        // zp, and the float clamp's bounds (lo - off, hi - off) in the product format
  std::int64_t off;          // the zero point when added in integers after rounding, else 0
  bool per_op, zp_before, float_before, wrap;
  RoundTable round_up;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const auto a = static_cast<T>(acc);  // cvtsi2ss/sd: round to nearest even
    T v = per_op ? ((a * s_in) * s_w) / s_out : a * mult;
    if (zp_before) v = v + zp_t;
    if (!std::isfinite(v)) return false;
    if (float_before) v = v < lo_t ? lo_t : v > hi_t ? hi_t : v;
    constexpr T big = static_cast<T>(0x1p62);
    if (std::fabs(v) >= big) {
      if (wrap) return false;
      v = v > 0 ? big : -big;  // saturates below all the same
    }
    // floor(v) by truncation, and where v lies against floor(v) + 1/2 (exact where it matters: see
    // quantize_f32_kernel.hpp; a v of 2^23 or more in f32, 2^52 in f64, is an integer).
    auto fli = static_cast<std::int64_t>(v);
    T fl = static_cast<T>(fli);
    const bool adjust = fl > v;  // written branch-free: the sign is data
    fli -= static_cast<std::int64_t>(adjust);
    fl -= static_cast<T>(adjust);
    const T d = v - (fl + T(0.5));
    const bool zero = v == fl, half = (d == T(0)) & !zero, above = (d > T(0)) & !zero;
    const std::int64_t r = fli + round_up(zero, half, above, (fli & 1) != 0, fli < 0);
    const std::int64_t w = r + off;
    q = c.clamp(wrap ? c.wrap_out(w) : w);
    return true;
  }
};

// gemmlowp_double, gemmlowp_scalar, tflite_single, tflite_int64: the TFLite (or gemmlowp) kernel, then `acc +=
// output_offset` in int32 (wraps), then the clamp.
template <RequantizeScheme S>
struct TfliteKernel {
  Common c;
  Q31Multiplier m;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    std::int32_t v;
    if constexpr (S == RequantizeScheme::gemmlowp_double)
      v = unchecked::tflite_multiply_by_quantized_multiplier_double(acc, m);
    else if constexpr (S == RequantizeScheme::gemmlowp_scalar)
      v = unchecked::gemmlowp_scale_by_fixed_point_and_exponent(acc, m);
    else if constexpr (S == RequantizeScheme::tflite_single)
      v = unchecked::tflite_multiply_by_quantized_multiplier_single(acc, m);
    else
      v = unchecked::tflite_multiply_by_quantized_multiplier_int64(acc, m);
    q = c.clamp(unchecked::wrap_int32(std::int64_t{v} + c.zp));
    return true;
  }
};

// tosa_single, tosa_double: apply_scale_32 (declining values outside its REQUIRE), + zp, clamp.
struct TosaScale32Kernel {
  Common c;
  std::int32_t multiplier;
  int shift;
  TosaRounding rounding;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int64_t half = std::int64_t{1} << (shift - 1);
    if (acc < -half || acc >= half) return false;  // the slow path raises TOSA's REQUIRE
    q = c.clamp(std::int64_t{unchecked::tosa_apply_scale_32(acc, multiplier, shift, rounding)} + c.zp);
    return true;
  }
};

// tosa_scale16: apply_scale_16 (declining results outside int32, its REQUIRE), + zp, clamp.
struct TosaScale16Kernel {
  Common c;
  std::int16_t multiplier;
  int shift;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int64_t v = unchecked::tosa_apply_scale_16(acc, multiplier, shift);
    if (v < kInt32Min || v > kInt32Max) return false;  // the slow path raises TOSA's REQUIRE
    q = c.clamp(v + c.zp);
    return true;
  }
};

// xnnpack_rndnu, qnnpack_precise, qnnpack_q31: the kernel, clamp to [qmin - zp, qmax - zp], + zp.
template <RequantizeScheme S>
struct MantissaKernel {
  Common c;
  ScaleShift m;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    std::int32_t v;
    if constexpr (S == RequantizeScheme::xnnpack_rndnu)
      v = unchecked::xnnpack_rndnu_multiply_shift(acc, m);
    else if constexpr (S == RequantizeScheme::qnnpack_precise)
      v = unchecked::qnnpack_precise_multiply_shift(acc, m);
    else
      v = unchecked::qnnpack_q31_multiply_shift(acc, {static_cast<std::int32_t>(m.multiplier), 31 - m.right_shift});
    q = std::clamp<std::int64_t>(v, c.range.lo - c.zp, c.range.hi - c.zp) + c.zp;
    return true;
  }
};

// glow_int32: libjit_scale_i32i8 with the zero point as its int32 offset, then libjit_clip.
struct GlowKernel {
  Common c;
  GlowScale g;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    q = c.clamp(unchecked::glow_libjit_scale_i32i8(acc, g, static_cast<std::int32_t>(c.zp)));
    return true;
  }
};

// stablehlo_truncate: the f32 product truncated (or acc unscaled), + zp in int32, the narrowing
// convert (wraps), then only an explicit clip or narrow range.
struct StablehloKernel {
  Common c;
  bool scaled;
  float scale;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    const std::int32_t v = scaled ? unchecked::stablehlo_scale_and_truncate(acc, scale) : acc;
    q = c.clamp(c.wrap_out(unchecked::wrap_int32(std::int64_t{v} + c.zp)));
    return true;
  }
};

// fbgemm_fixed_point: zp + SaturatingRoundingMulWithShift in int64, clamp.
struct FbgemmKernel {
  Common c;
  std::int32_t multiplier;
  int right_shift;
  [[gnu::always_inline]] bool operator()(std::int32_t acc, std::int64_t& q) const {
    q = c.clamp(c.zp + unchecked::fbgemm_saturating_rounding_mul_with_shift(acc, multiplier, right_shift));
    return true;
  }
};

// Everything the kernels of one channel (a multiplier and a zero point) need, formed once.
struct Channel {
  bool fast = false;  // false: every element of the channel goes to the slow path
  const RequantizeMultiplier* m = nullptr;
  std::int64_t zp = 0;
  Range range{0, 0};
  ExactProduct ideal;    // acc * s_in*s_w/s_out
  ExactProduct product;  // ideal and exact-product float_multiplier: the multiplier applied
  enum class Float : std::uint8_t { none, f32, f64, exact } product_format = Float::none;
  double mult = 0, s_in = 0, s_w = 0, s_out = 0;  // float schemes, in the product format (exact as doubles)
};

double exact_double(const ExactFloat& v) { return v.value.convert_to<double>(); }  // v is an f32/f64 value

Channel make_channel(const RequantizeMultiplier& m, std::int64_t zp, DType out, const RequantizePolicy& p) {
  Channel c;
  c.m = &m;
  c.zp = zp;
  // Every precondition on the channel's parameters shows at acc = 0, which meets every
  // precondition on the accumulator: a channel the slow path rejects stays with the slow path.
  try {
    (void)requantize_element(0, m, zp, out, p);
  } catch (const InputError&) {
    return c;
  }
  c.range = output_range(out, p);
  c.ideal = ExactProduct(m.exact);
  using S = RequantizeScheme;
  if (p.scheme == S::ideal) {
    c.product_format = Channel::Float::exact;
    c.product = c.ideal;
  } else if (p.scheme == S::float_multiplier || p.scheme == S::xnnpack_fp32) {
    const FloatRecipe fr = float_recipe(m, p);
    const std::string n = fr.product.name();
    if (n == "exact") {
      c.product_format = Channel::Float::exact;
      // per_op: ((acc * s_in) * s_w) / s_out exactly is acc times the ideal multiplier.
      c.product = fr.per_op ? c.ideal : ExactProduct(fr.product.convert(m.formed).value);
    } else if (n == "f32" || n == "f64") {
      c.product_format = n == "f32" ? Channel::Float::f32 : Channel::Float::f64;
      // The multiplier (or the three scales) as the slow path converts them into the product
      // format; zero or infinite values (an overflow or underflow in the conversion) stay slow.
      const auto to_product = [&](const ExactFloat& v, double& into) {
        const ExactFloat r = fr.product.convert(v);
        if (!r.is_finite() || r.value == 0) return false;
        into = exact_double(r);
        return true;
      };
      const bool ok = fr.per_op ? to_product(scale_value(m.scales.input), c.s_in) &&
                                      to_product(scale_value(m.scales.weight), c.s_w) &&
                                      to_product(scale_value(m.scales.output), c.s_out)
                                : to_product(m.formed, c.mult);
      if (!ok) return c;
    } else {
      return c;  // f16 / bf16 products: slow path
    }
  }
  c.fast = true;
  return c;
}

// Labels of one run, when asked for: settle_labels, then IdealLabel for what it left.
struct RunLabels {
  Label* labels = nullptr;  // null: no labels wanted
  const std::uint8_t* unsettled = nullptr;
  IdealLabel ideal{};
};

// One run of elements sharing a channel: a tight loop over one kernel and one output type. An
// element goes to the slow path when the kernel declines it or its label stays unsettled.
template <class Kernel, class Out>
void fast_run(const Kernel& k, const RunLabels& l, const std::int32_t* acc, Out* q, std::int64_t begin,
              std::int64_t end, std::vector<std::int64_t>& slow) {
  for (std::int64_t i = begin; i < end; ++i) {
    std::int64_t v;
    if (!k(acc[i], v)) {
      slow.push_back(i);
      continue;
    }
    q[i] = static_cast<Out>(v);
    if (l.labels && l.unsettled[i] && !l.ideal(acc[i], l.labels[i])) slow.push_back(i);
  }
}

template <class Kernel>
void fast_run_out(const Kernel& k, const RunLabels& l, const std::int32_t* acc, Tensor& q, std::int64_t begin,
                  std::int64_t end, std::vector<std::int64_t>& slow) {
  switch (q.dtype()) {
    case DType::i8:
    case DType::i4:
      return fast_run(k, l, acc, q.data<std::int8_t>(), begin, end, slow);
    case DType::u8:
    case DType::u4:
      return fast_run(k, l, acc, q.data<std::uint8_t>(), begin, end, slow);
    case DType::i16:
      return fast_run(k, l, acc, q.data<std::int16_t>(), begin, end, slow);
    case DType::u16:
      return fast_run(k, l, acc, q.data<std::uint16_t>(), begin, end, slow);
    case DType::i32:
      return fast_run(k, l, acc, q.data<std::int32_t>(), begin, end, slow);
    default:
      for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
  }
}

// Runs the kernel of `p.scheme` for one channel over [begin, end). labels/unsettled: null when no
// labels are wanted; else the tensor's labels and a scratch flag per element.
void fast_channel_run(const Channel& ch, const RequantizePolicy& p, DType out, const std::int32_t* acc, Tensor& q,
                      Label* labels, std::uint8_t* unsettled, std::int64_t begin, std::int64_t end,
                      std::vector<std::int64_t>& slow) {
  if (!ch.fast) {
    for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
    return;
  }
  const RequantizeMultiplier& m = *ch.m;
  const Common c{ch.zp, ch.range, WrapTo{info(out).bits, info(out).is_signed}};
  const RunLabels l{labels, unsettled, IdealLabel{&ch.ideal, ch.range.hi - ch.zp, ch.range.lo - ch.zp}};
  if (labels) {
    if (ch.ideal.approx() != 0)
      settle_labels(acc + begin, labels + begin, unsettled + begin, end - begin, ch.ideal.approx(),
                    static_cast<double>(l.ideal.hi_less_zp), static_cast<double>(l.ideal.lo_less_zp));
    else
      std::fill(unsettled + begin, unsettled + end, std::uint8_t{1});
  }
  const auto run = [&](const auto& kernel) { fast_run_out(kernel, l, acc, q, begin, end, slow); };
  const auto q31 = [&] {
    return Q31Multiplier{static_cast<std::int32_t>(m.fixed->multiplier), 31 - m.fixed->right_shift};
  };
  using S = RequantizeScheme;
  switch (p.scheme) {
    case S::ideal:
      return run(RationalKernel{c, &ch.product, p.zero_point == ZeroPointAdd::float_before_rounding,
                                p.clamp == Clamp::wrap, RoundTable(p.rounding)});
    case S::float_multiplier:
    case S::xnnpack_fp32: {
      const FloatRecipe fr = float_recipe(m, p);
      const bool zp_before = fr.zero_point == ZeroPointAdd::float_before_rounding;
      const Clamp clamp = fr.clamp;
      const RoundingMode mode = fr.rounding;
      const std::int64_t off = zp_before ? 0 : ch.zp;
      const auto floats = [&](auto zero) {
        using T = decltype(zero);
        return FloatKernel<T>{c,
                              static_cast<T>(ch.mult),
                              static_cast<T>(ch.s_in),
                              static_cast<T>(ch.s_w),
                              static_cast<T>(ch.s_out),
                              static_cast<T>(ch.zp),
                              static_cast<T>(ch.range.lo - off),
                              static_cast<T>(ch.range.hi - off),
                              off,
                              fr.per_op,
                              zp_before,
                              clamp == Clamp::float_before,
                              clamp == Clamp::wrap,
                              RoundTable(mode)};
      };
      switch (ch.product_format) {
        case Channel::Float::exact:
          return run(RationalKernel{c, &ch.product, zp_before, clamp == Clamp::wrap, RoundTable(mode)});
        case Channel::Float::f32:
          return run(floats(0.0f));
        case Channel::Float::f64:
          return run(floats(0.0));
        case Channel::Float::none:
          break;
      }
      break;
    }
    case S::gemmlowp_double:
      return run(TfliteKernel<S::gemmlowp_double>{c, q31()});
    case S::gemmlowp_scalar:
      return run(TfliteKernel<S::gemmlowp_scalar>{c, q31()});
    case S::tflite_single:
      return run(TfliteKernel<S::tflite_single>{c, q31()});
    case S::tflite_int64:
      return run(TfliteKernel<S::tflite_int64>{c, q31()});
    case S::tosa_single:
    case S::tosa_double:
      return run(
          TosaScale32Kernel{c, static_cast<std::int32_t>(m.fixed->multiplier), m.fixed->right_shift,
                            p.scheme == S::tosa_double ? TosaRounding::double_round : TosaRounding::single_round});
    case S::tosa_scale16:
      return run(TosaScale16Kernel{c, static_cast<std::int16_t>(m.fixed->multiplier), m.fixed->right_shift});
    case S::xnnpack_rndnu:
      return run(MantissaKernel<S::xnnpack_rndnu>{c, *m.fixed});
    case S::qnnpack_precise:
      return run(MantissaKernel<S::qnnpack_precise>{c, *m.fixed});
    case S::qnnpack_q31:
      return run(MantissaKernel<S::qnnpack_q31>{c, *m.fixed});
    case S::glow_int32:
      return run(GlowKernel{c, *m.glow});
    case S::stablehlo_truncate:
      return run(StablehloKernel{c, m.stablehlo_scale.has_value(), m.stablehlo_scale.value_or(1.0f)});
    case S::fbgemm_fixed_point:
      return run(FbgemmKernel{c, static_cast<std::int32_t>(m.fixed->multiplier), m.fixed->right_shift});
  }
  for (std::int64_t i = begin; i < end; ++i) slow.push_back(i);
}

}  // namespace

namespace requantize_detail {

struct FastChannel {
  Channel channel;
};

void FastChannelDeleter::operator()(FastChannel* c) const { delete c; }

FastChannelPtr make_fast_channel(const RequantizeMultiplier& m, std::int64_t zp, DType out, const RequantizePolicy& p) {
  return FastChannelPtr(new FastChannel{make_channel(m, zp, out, p)});
}

void run_fast_channel(const FastChannel& ch, const RequantizePolicy& p, DType out, const std::int32_t* acc, Tensor& q,
                      Label* labels, std::uint8_t* unsettled, std::int64_t begin, std::int64_t end,
                      std::vector<std::int64_t>& slow) {
  fast_channel_run(ch.channel, p, out, acc, q, labels, unsettled, begin, end, slow);
}

}  // namespace requantize_detail
}  // namespace qc
