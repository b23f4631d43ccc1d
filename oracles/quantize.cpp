#include "oracles/quantize.hpp"

#include "oracles/quantize_f32.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace qc {

Arith resolve_compute(const ComputeFormat& c, DType x_dtype, DType scale_dtype) {
  using K = ComputeFormat::Kind;
  switch (c.kind) {
    case K::exact:
      return Arith::exact();
    case K::f64:
      return Arith::in(DType::f64);
    case K::f32:
      return Arith::in(DType::f32);
    case K::f16:
      return Arith::in(DType::f16);
    case K::bf16:
      return Arith::in(DType::bf16);
    case K::scale_type:
      return Arith::in(is_float(scale_dtype) ? scale_dtype : DType::f32);
    case K::input_type:
      return Arith::in(is_float(x_dtype) ? x_dtype : DType::f32);
    case K::fixed64:
      return Arith::fixed64(c.frac_bits);
  }
  return Arith::exact();
}

namespace {

using Range = OutputRange;

Range output_range(DType out, const QuantizePolicy& pol) { return qc::output_range(out, pol.narrow_range, pol.clip); }

bool adds_zp_in_integers(QuantizeOrder o) {
  return o == QuantizeOrder::div_then_add_int || o == QuantizeOrder::recip_then_add_int;
}

// Orders whose zero point comes after the rounding, so a clamp before rounding is to
// [qmin - zp, qmax - zp].
bool adds_zp_after_rounding(QuantizeOrder o) { return adds_zp_in_integers(o) || adds_zp_in_float_after_rounding(o); }

ExactFloat exact_of(double v) {
  if (std::isnan(v)) return ExactFloat::nan();
  if (std::isinf(v)) return ExactFloat::inf(v < 0);
  return ExactFloat::finite(Rational(v), std::signbit(v));
}

bool is_subnormal_in(double v, DType t) {
  if (!is_float(t) || v == 0 || !std::isfinite(v)) return false;
  const FloatLayout& l = info(t).fl;
  return std::fabs(v) < std::ldexp(1.0, 1 - l.bias);
}

std::int64_t nan_value(NanRule rule, Range r, std::int64_t zp, bool out_signed) {
  switch (rule) {
    case NanRule::to_qmax_signed_qmin_unsigned:
      return out_signed ? r.hi : r.lo;
    case NanRule::to_qmin:
      return r.lo;
    case NanRule::to_qmax:
      return r.hi;
    case NanRule::to_zero_point:
      return std::clamp(zp, r.lo, r.hi);
    case NanRule::to_zero:
      return std::clamp<std::int64_t>(0, r.lo, r.hi);
    case NanRule::unspecified:
      return r.lo;  // placeholder; the element is marked unspecified
    case NanRule::error:
      break;
  }
  throw InputError("NaN input where the policy's NaN rule is 'error'");
}

// IntCast: the integer type's bounds, and its 'integer indefinite' value (the most negative).
int cast_bits(IntCast c) { return c == IntCast::x86_int32 ? 32 : 64; }
BigInt cast_indefinite(IntCast c) { return -(BigInt(1) << (cast_bits(c) - 1)); }
bool cast_fits(IntCast c, const BigInt& v) {
  const BigInt lim = BigInt(1) << (cast_bits(c) - 1);
  return v >= -lim && v < lim;
}
// a + zp in the cast's integer type: two's-complement wrap (what int32/int64 addition does).
BigInt cast_add(IntCast c, const BigInt& a, std::int64_t zp) {
  const BigInt m = BigInt(1) << cast_bits(c);
  BigInt v = (a + zp) % m;
  if (v < 0) v += m;
  if (v >= m / 2) v -= m;
  return v;
}

// A label from where the pre-rounding value lay; `dist_to_half` is |t - floor(t) - 1/2|.
Label rounding_label(Fraction f, bool near) {
  if (f == Fraction::half) return Label::tie;
  return near ? Label::near_tie : Label::clear;
}

std::string fraction_note(Fraction f, RoundingMode m, const BigInt& fl, const BigInt& r) {
  const std::string where(describe(f));
  return where + " between " + fl.str() + " and " + BigInt(fl + 1).str() + "; " + std::string(name(m)) + " (" +
         std::string(describe(m)) + ") gives " + r.str();
}

}  // namespace

QuantizeElement quantize_element(double xd, DType x_dtype, double sd, DType scale_dtype, std::int64_t zp, DType out,
                                 const QuantizePolicy& pol, bool trace) {
  QuantizeElement e;
  const Arith A = resolve_compute(pol.compute, x_dtype, scale_dtype);
  const Range range = output_range(out, pol);
  const bool int_add = adds_zp_in_integers(pol.order);
  const ExactFloat x = exact_of(xd);
  const ExactFloat s = exact_of(sd);
  const ExactFloat zpf = ExactFloat::finite(Rational(zp));
  const ExactFloat one = ExactFloat::finite(1);
  bool special = !x.is_finite() || is_subnormal_in(xd, x_dtype);

  // Only called under `if (trace)`: building the step texts (exact decimals) is costly.
  auto step = [&](std::string what, std::string formula, const ExactFloat& exact, const ExactFloat& rounded,
                  std::string note = "") {
    e.steps.push_back({std::move(what), std::move(formula), exact, rounded, std::move(note)});
  };
  const Arith X = Arith::exact();
  const std::string in = " in " + A.name();

  const ExactFloat xc = A.convert(x);
  const ExactFloat sc = A.convert(s);
  if (trace) step("x to " + A.name(), "x = " + to_string(x), x, xc);
  if (trace) step("s to " + A.name(), "s = " + to_string(s), s, sc);

  ExactFloat t;
  switch (pol.order) {
    case QuantizeOrder::div_then_add_int:
    case QuantizeOrder::round_then_add_float:
    case QuantizeOrder::div_add_float: {
      t = A.div(xc, sc);
      if (trace) step("x / s" + in, "x / s", X.div(xc, sc), t);
      if (pol.order == QuantizeOrder::div_add_float) {
        const ExactFloat zc = A.convert(zpf);
        ExactFloat u = A.add(t, zc);
        if (trace) step("+ zp" + in, "(x / s) + " + std::to_string(zp), X.add(t, zc), u);
        t = u;
      }
      break;
    }
    case QuantizeOrder::recip_then_add_int:
    case QuantizeOrder::recip_round_then_add_float:
    case QuantizeOrder::recip_add_float:
    case QuantizeOrder::fma_recip: {
      const ExactFloat inv = A.div(one, sc);
      if (trace) step("1 / s" + in, "1 / s", X.div(one, sc), inv);
      if (pol.order == QuantizeOrder::fma_recip) {
        const ExactFloat zc = A.convert(zpf);
        t = A.fma(xc, inv, zc);
        if (trace)
          step("fma(x, 1/s, zp)" + in + " (one rounding)", "x * (1/s) + " + std::to_string(zp), X.fma(xc, inv, zc), t);
        break;
      }
      t = A.mul(xc, inv);
      if (trace) step("x * (1/s)" + in, "x * (1/s)", X.mul(xc, inv), t);
      if (pol.order == QuantizeOrder::recip_add_float) {
        const ExactFloat zc = A.convert(zpf);
        ExactFloat u = A.add(t, zc);
        if (trace) step("+ zp" + in, "x * (1/s) + " + std::to_string(zp), X.add(t, zc), u);
        t = u;
      }
      break;
    }
  }

  const bool casts = pol.cast != IntCast::exact;
  if (t.is_nan() && !casts) {
    e.label = Label::special;
    e.pre_round = t;
    e.specified = pol.nan != NanRule::unspecified;
    e.q = nan_value(pol.nan, range, zp, info(out).is_signed);
    if (trace)
      step("NaN rule", "", t, t,
           e.specified ? "the policy maps NaN to " + std::string(name(pol.nan)) + ": " + std::to_string(e.q)
                       : "the policy leaves NaN unspecified: any output is accepted");
    return e;
  }

  bool saturated = false;
  const std::int64_t off = adds_zp_after_rounding(pol.order) ? zp : 0;
  if (pol.clamp == Clamp::float_before) {
    const ExactFloat lo = A.convert(ExactFloat::finite(Rational(range.lo - off)));
    const ExactFloat hi = A.convert(ExactFloat::finite(Rational(range.hi - off)));
    const bool below = t.is_inf() ? t.negative : t.value < lo.value;
    const bool above = t.is_inf() ? !t.negative : t.value > hi.value;
    if (below || above) {
      ExactFloat c = below ? lo : hi;
      if (trace) step("clamp" + in + " before rounding", "to [" + to_string(lo) + ", " + to_string(hi) + "]", t, c);
      t = c;
      saturated = true;
    }
  }
  e.pre_round = t;

  // A cast (IntCast) of NaN or an infinity gives the integer indefinite value; a zero point added
  // after it, in integers, wraps in the cast's type; the clamp follows.
  if (casts && !t.is_finite()) {
    const BigInt c = cast_indefinite(pol.cast);
    const BigInt v = int_add ? cast_add(pol.cast, c, zp) : c;
    e.label = Label::special;
    e.q = std::clamp(v, BigInt(range.lo), BigInt(range.hi)).convert_to<std::int64_t>();
    if (trace)
      step(std::string("cast to ") + (pol.cast == IntCast::x86_int32 ? "int32" : "int64") + " (x86)", "", t,
           ExactFloat::finite(Rational(v)),
           "not finite: the integer indefinite value " + c.str() + (int_add ? ", + zp wrapped" : "") +
               ", then saturated to " + std::to_string(e.q));
    return e;
  }

  BigInt r;
  if (t.is_inf()) {  // infinities saturate (also under wrap, where a cast of inf has no meaning)
    special = true;
    // One past the range, so the clamp saturates it and labels it; under wrap (no clamp) the end
    // of the range itself, since wrapping one past it would land on the opposite end.
    const int past = pol.clamp == Clamp::wrap ? 0 : 1;
    r = t.negative ? BigInt(range.lo) - off - past : BigInt(range.hi) - off + past;
    if (trace) step("round", "", t, t, "infinite: saturates");
  } else {
    Fraction f;
    BigInt fl = floor_with_fraction(t.value, f);
    r = fl;
    const bool odd = bit_test(fl < 0 ? BigInt(-fl) : fl, 0);
    if (rounds_up(pol.rounding, f, odd, fl < 0)) r += 1;
    const Rational dist = abs(t.value - Rational(fl) - Rational(1, 2));
    const Label l = rounding_label(f, dist <= Rational(1, 1024));
    e.label = l;
    if (trace)
      step("round to integer", to_string(t), t, ExactFloat::finite(Rational(r)), fraction_note(f, pol.rounding, fl, r));
  }

  BigInt v = r + off;
  bool sum_inf = false;
  if (adds_zp_in_float_after_rounding(pol.order) && !t.is_inf()) {
    const ExactFloat zc = A.convert(zpf);
    const ExactFloat sum = A.add(ExactFloat::finite(Rational(r)), zc);
    sum_inf = sum.is_inf();
    if (sum.is_inf())
      v = sum.negative ? BigInt(range.lo) - 1 : BigInt(range.hi) + 1;
    else
      v = numerator(sum.value);  // a sum of integers rounded to a float format is an integer
    if (trace) step("+ zp" + in, r.str() + " + " + std::to_string(zp), X.add(ExactFloat::finite(Rational(r)), zc), sum);
  }
  if (casts) {  // the cast sees the rounded value (and the float sum, when the zp was added in float)
    const BigInt seen = int_add ? r : v;
    const bool fits = !sum_inf && cast_fits(pol.cast, seen);
    const BigInt c = fits ? seen : cast_indefinite(pol.cast);
    v = int_add ? cast_add(pol.cast, c, zp) : c;
    saturated |= !fits;
    if (trace)
      step(std::string("cast to ") + (pol.cast == IntCast::x86_int32 ? "int32" : "int64") + " (x86)" +
               (int_add ? ", + zp wrapped" : ""),
           seen.str(), ExactFloat::finite(Rational(seen)), ExactFloat::finite(Rational(v)),
           fits ? "in range" : "out of range: the integer indefinite value " + c.str());
  }
  if (int_add && trace)
    step("+ zp in integers", r.str() + " + " + std::to_string(zp), ExactFloat::finite(Rational(v)),
         ExactFloat::finite(Rational(v)));
  std::int64_t q;
  if (pol.clamp == Clamp::wrap) {
    q = int_convert(out, v, IntOverflow::wrap);
    if (q < range.lo || q > range.hi) {  // an explicit clip still applies after the cast
      q = std::clamp(q, range.lo, range.hi);
      saturated = true;
    }
    if (trace)
      step("wrap to " + std::string(name(out)), v.str(), ExactFloat::finite(Rational(v)),
           ExactFloat::finite(Rational(q)));
  } else {
    if (v < range.lo) {
      q = range.lo;
      saturated = true;
    } else if (v > range.hi) {
      q = range.hi;
      saturated = true;
    } else {
      q = v.convert_to<std::int64_t>();
    }
    if (trace)
      step("saturate to [" + std::to_string(range.lo) + ", " + std::to_string(range.hi) + "]", v.str(),
           ExactFloat::finite(Rational(v)), ExactFloat::finite(Rational(q)));
  }
  e.q = q;
  if (special)
    e.label = Label::special;
  else if (saturated)
    e.label = Label::saturated;
  return e;
}

namespace {

// Wrap an int64 into `out` (two's complement of its width), as a plain cast would.
std::int64_t wrap_to(DType out, std::int64_t v) {
  const int bits = info(out).bits;
  const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  std::uint64_t u = static_cast<std::uint64_t>(v) & mask;
  if (info(out).is_signed && bits < 64 && (u >> (bits - 1)) != 0) u |= ~mask;
  return static_cast<std::int64_t>(u);
}

// The integer tail shared by both fast paths: add the zero point, then saturate or wrap.
struct Finish {
  DType out;
  Range range;
  Clamp clamp;
  std::int64_t operator()(std::int64_t v, bool& saturated) const {
    if (clamp == Clamp::wrap) v = wrap_to(out, v);
    if (v < range.lo) v = range.lo, saturated = true;
    if (v > range.hi) v = range.hi, saturated = true;
    return v;
  }
};

// rounds_up() tabulated for one rounding mode, indexed by its five inputs, so the hot loop
// looks the decision up instead of branching on the mode.
struct RoundTable {
  std::array<std::uint8_t, 32> up{};
  explicit RoundTable(RoundingMode m) {
    for (unsigned i = 0; i < 32; ++i)
      up[i] = rounds_up(m, i & 1, (i >> 1) & 1, (i >> 2) & 1, (i >> 3) & 1, (i >> 4) & 1) ? 1 : 0;
  }
  std::uint8_t operator()(bool zero, bool half, bool above, bool odd, bool neg) const {
    return up[static_cast<unsigned>(zero) | static_cast<unsigned>(half) << 1 | static_cast<unsigned>(above) << 2 |
              static_cast<unsigned>(odd) << 3 | static_cast<unsigned>(neg) << 4];
  }
};

constexpr double k2p62 = 4611686018427387904.0;

// The compute format's rounding, applied after every operation of fast_float_element. f32 and
// f64 need none: the hardware's operation is already the rounded one. f16 and bf16 are computed
// in f64 and each result rounded into the format (round_into: RNE, overflow to infinity): their
// operands have at most 11 significant bits, so f64 holds a product exactly and a quotient or a
// sum rounded once to 53 bits, and rounding that again to p bits gives the correctly rounded
// result because 53 >= 2p + 2 (S. A. Figueroa, "When is double rounding innocuous?", ACM SIGNUM
// Newsletter 30(3), 1995). fma is one rounding of an unbounded sum: not emulated (slow path).
struct NativeRound {
  template <class T>
  T operator()(T v) const {
    return v;
  }
};
struct NarrowRound {
  DType t;
  double operator()(double v) const { return round_into(t, v); }
};

// What a cast (IntCast) of a value that is not finite or does not fit gives: the integer
// indefinite value (the most negative of the cast's type); a zero point added in integers wraps
// in that type (quantize_element's cast_indefinite and cast_add, in int64).
std::int64_t sign_extend(std::uint64_t v, int bits) {
  return bits == 64 ? static_cast<std::int64_t>(v) : static_cast<std::int64_t>(static_cast<std::int32_t>(v));
}
std::int64_t cast_wrap_add(IntCast c, std::int64_t a, std::int64_t zp) {
  return sign_extend(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(zp), cast_bits(c));
}
std::int64_t cast_indefinite_value(IntCast c) {
  return sign_extend(std::uint64_t{1} << (cast_bits(c) - 1), cast_bits(c));
}

// A special result: NaN or an infinity reached the rounding (label special). Returns false where
// only the slow path says what happens (the NaN rule 'error' raises there).
bool special_result(bool nan, bool negative, std::int64_t zp, const QuantizePolicy& pol, const Finish& fin,
                    bool int_add, std::int64_t& q, Label& label, bool& specified) {
  label = Label::special;
  if (pol.cast != IntCast::exact) {
    const std::int64_t c = cast_indefinite_value(pol.cast);
    q = std::clamp(int_add ? cast_wrap_add(pol.cast, c, zp) : c, fin.range.lo, fin.range.hi);
    return true;
  }
  if (nan) {
    if (pol.nan == NanRule::error) return false;
    q = nan_value(pol.nan, fin.range, zp, info(fin.out).is_signed);
    specified = pol.nan != NanRule::unspecified;
    return true;
  }
  q = negative ? fin.range.lo : fin.range.hi;  // infinities saturate, under wrap too
  return true;
}

// Fast path for floating-point compute: f32 and f64 on the hardware, f16 and bf16 emulated
// (Round). Every input class is decided here: NaN and infinities (inputs, or quotients that
// overflow) by the policy's special-value rules, subnormal inputs (`x_special`) computed as they
// are and labelled special, casts of values that do not fit in their integer type. Returns false
// to hand the element to the slow path: a NaN under a cast with float_before (the slow path
// compares it as zero), the NaN rule 'error', fma under f16/bf16, a float zero-point add that
// overflows, huge values under wrap.
template <class T, class Round>
[[gnu::always_inline]] inline bool fast_float_element(double xd, double sd, std::int64_t zp, const QuantizePolicy& pol,
                                                      const RoundTable& round_up, const Finish& fin, bool int_add,
                                                      bool x_special, Round rnd, std::int64_t& q, Label& label,
                                                      bool& specified) {
  constexpr bool kNative = std::is_same_v<Round, NativeRound>;
  const T s = rnd(static_cast<T>(sd));  // correctly rounded (RNE) conversions
  if (!(s > 0) || !std::isfinite(s)) return false;
  const T x = rnd(static_cast<T>(xd));  // NaN and infinities pass through
  const T zpt = rnd(static_cast<T>(zp));
  T t = 0;
  switch (pol.order) {
    case QuantizeOrder::div_then_add_int:
    case QuantizeOrder::round_then_add_float:
      t = rnd(x / s);
      break;
    case QuantizeOrder::div_add_float:
      t = rnd(rnd(x / s) + zpt);
      break;
    case QuantizeOrder::recip_then_add_int:
    case QuantizeOrder::recip_round_then_add_float:
      t = rnd(x * rnd(T(1) / s));
      break;
    case QuantizeOrder::recip_add_float:
      t = rnd(rnd(x * rnd(T(1) / s)) + zpt);
      break;
    case QuantizeOrder::fma_recip:
      if constexpr (!kNative) return false;
      t = std::fma(x, T(1) / s, zpt);
      break;
  }
  if (std::isnan(t)) {
    if (pol.cast != IntCast::exact && pol.clamp == Clamp::float_before) return false;
    return special_result(true, false, zp, pol, fin, int_add, q, label, specified);
  }
  bool saturated = false;
  const std::int64_t off = int_add ? zp : 0;
  const bool round_add = adds_zp_in_float_after_rounding(pol.order);
  if (pol.clamp == Clamp::float_before) {
    const std::int64_t boff = int_add || round_add ? zp : 0;
    const T lo = rnd(static_cast<T>(fin.range.lo - boff)), hi = rnd(static_cast<T>(fin.range.hi - boff));
    if (!std::isfinite(lo) || !std::isfinite(hi)) return false;
    if (t < lo) t = lo, saturated = true;
    if (t > hi) t = hi, saturated = true;
  }
  if (std::isinf(t)) return special_result(false, t < 0, zp, pol, fin, int_add, q, label, specified);
  const bool casts = pol.cast != IntCast::exact;
  std::int64_t r = 0;
  bool f_half = false, near = false;
  if (std::fabs(t) >= T(k2p62)) {
    if (casts) {
      // t is an integer this large, and the cast sees t itself (or t + zp in float): whether it
      // fits decides, with no rounding left to do.
      const T seen = round_add ? rnd(t + zpt) : t;
      const T lim = static_cast<T>(std::ldexp(1.0, cast_bits(pol.cast) - 1));
      const bool fits = seen >= -lim && seen < lim;  // false for an infinite sum
      const std::int64_t c = fits ? static_cast<std::int64_t>(seen) : cast_indefinite_value(pol.cast);
      std::int64_t v = int_add ? cast_wrap_add(pol.cast, c, zp) : c;
      saturated |= !fits;
      if (pol.clamp == Clamp::wrap) v = wrap_to(fin.out, v);
      q = std::min(std::max(v, fin.range.lo), fin.range.hi);
      saturated |= q != v;
      label = x_special ? Label::special : saturated ? Label::saturated : Label::clear;
      return true;
    }
    if (pol.clamp == Clamp::wrap) {
      // An integer this large wraps to its low bits, which fmod gives exactly.
      const T seen = round_add ? rnd(t + zpt) : t;
      if (!std::isfinite(seen)) return false;
      std::uint64_t u = static_cast<std::uint64_t>(std::fmod(std::fabs(static_cast<double>(seen)), 0x1p64));
      if (seen < 0) u = ~u + 1;
      const std::int64_t v = wrap_to(fin.out, static_cast<std::int64_t>(u + static_cast<std::uint64_t>(off)));
      q = std::min(std::max(v, fin.range.lo), fin.range.hi);  // an explicit clip still applies
      label = x_special ? Label::special : q != v ? Label::saturated : Label::clear;
      return true;
    }
    t = t > 0 ? T(k2p62) : T(-k2p62);  // saturates below in any case
  }
  // floor(t) by truncation (|t| <= 2^62 here). Everything below is
  // data-independent control flow: the tie decisions are the hot, unpredictable part.
  auto fli = static_cast<std::int64_t>(t);
  T fl = static_cast<T>(fli);
  const bool adjust = fl > t;
  fli -= adjust;
  fl -= static_cast<T>(adjust);
  const T d = t - (fl + T(0.5));  // exact when |d| <= 1/4: see quantize_f32_kernel.hpp
  const bool f_zero = t == fl, f_above = (d > T(0)) & !f_zero;
  f_half = (d == T(0)) & !f_zero;
  r = fli + round_up(f_zero, f_half, f_above, (fli & 1) != 0, fli < 0);
  near = (std::fabs(d) <= T(kNearTieDistance)) & !f_zero;
  std::int64_t v = r + off;
  bool sum_inf = false;
  if (round_add) {  // r is a rounded T value, so exact in T; the add rounds once
    const T sum = rnd(static_cast<T>(r) + zpt);
    if (!std::isfinite(sum)) {
      if (!casts) return false;
      sum_inf = true;
    } else {
      v = static_cast<std::int64_t>(sum);
    }
  }
  if (casts) {  // the cast sees the rounded value (and the float sum, when the zp was added in float)
    const std::int64_t seen = int_add ? r : v;
    // |seen| < 2^63 here, so every value fits a 64-bit cast
    const bool fits = !sum_inf && (cast_bits(pol.cast) == 64 || (seen >= INT32_MIN && seen <= INT32_MAX));
    const std::int64_t c = fits ? seen : cast_indefinite_value(pol.cast);
    v = int_add ? cast_wrap_add(pol.cast, c, zp) : c;
    saturated |= !fits;
  }
  if (pol.clamp == Clamp::wrap) v = wrap_to(fin.out, v);
  const std::int64_t c = std::min(std::max(v, fin.range.lo), fin.range.hi);
  saturated |= c != v;
  q = c;
  label = x_special   ? Label::special
          : saturated ? Label::saturated
          : f_half    ? Label::tie
          : near      ? Label::near_tie
                      : Label::clear;
  return true;
}

// Error-free sum: a + b = s + err exactly (Knuth's TwoSum).
double two_sum_err(double a, double b, double s) {
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

// Fast path for exact compute: q = x/s in f64 plus the exact sign of the residual x - q*s
// (fma gives the residual exactly while nothing underflows). Every order is x/s [+ zp] in
// exact arithmetic. The tie and near-tie decisions use (t, sign of residual); elements whose
// decision the pair cannot settle go to the slow path. NaN and infinite inputs follow the
// policy's special-value rules; subnormal inputs (`x_special`) are computed and labelled special.
[[gnu::always_inline]] inline bool fast_exact_element(double x, double s, std::int64_t zp, const QuantizePolicy& pol,
                                                      const Finish& fin, bool int_add, bool x_special, std::int64_t& q,
                                                      Label& label, bool& specified) {
  if (pol.cast != IntCast::exact || !(s > 0) || !std::isfinite(s)) return false;  // casts: the slow path
  if (!std::isfinite(x)) return special_result(std::isnan(x), x < 0, zp, pol, fin, int_add, q, label, specified);
  constexpr double kTiny = 0x1p-900, kHuge = 0x1p900;
  double t = 0;
  int sticky = 0;  // sign of (exact value - t)
  if (x != 0) {
    if (std::fabs(x) < kTiny || s < kTiny || s > kHuge) return false;
    t = x / s;
    if (std::fabs(t) < kTiny) return false;
    const double res = std::fma(-t, s, x);  // exact: x - t*s
    sticky = (res > 0) - (res < 0);
  }
  if (!int_add) {
    const double z = static_cast<double>(zp);
    const double u = t + z;
    const double err = two_sum_err(t, z, u);
    if (err != 0 && sticky != 0) return false;
    if (err != 0) sticky = (err > 0) - (err < 0);
    t = u;
  }
  bool saturated = false;
  const std::int64_t off = int_add ? zp : 0;
  if (pol.clamp == Clamp::float_before) {
    const double lo = static_cast<double>(fin.range.lo - off), hi = static_cast<double>(fin.range.hi - off);
    if (t < lo || (t == lo && sticky < 0)) t = lo, sticky = 0, saturated = true;
    if (t > hi || (t == hi && sticky > 0)) t = hi, sticky = 0, saturated = true;
  }
  if (std::fabs(t) >= 0x1p50) {  // beyond the range where frac and sticky are meaningful
    if (pol.clamp == Clamp::wrap) return false;
    q = fin(t > 0 ? static_cast<std::int64_t>(k2p62) : -static_cast<std::int64_t>(k2p62), saturated);
    label = Label::saturated;
    return true;
  }
  auto fli0 = static_cast<std::int64_t>(t);  // floor by truncation: |t| < 2^50 here
  double fl = static_cast<double>(fli0);
  if (fl > t) fl -= 1;
  // Classify against m = fl + 1/2 (d = t - m is exact when |d| <= 1/4, see quantize_f32_kernel.hpp), then
  // let the residual's sign settle values that sit exactly on an integer or a half.
  double d = t - (fl + 0.5);
  Fraction f = t == fl ? Fraction::zero : d == 0 ? Fraction::half : d < 0 ? Fraction::below_half : Fraction::above_half;
  if (f == Fraction::zero && sticky != 0) {
    if (sticky > 0) {
      f = Fraction::below_half;
      d = -0.5;
    } else {
      fl -= 1;
      f = Fraction::above_half;
      d = 0.5;
    }
  } else if (f == Fraction::half && sticky != 0) {
    f = sticky > 0 ? Fraction::above_half : Fraction::below_half;
  }
  const auto fli = static_cast<std::int64_t>(fl);
  const std::int64_t r = fli + (rounds_up(pol.rounding, f, (fli & 1) != 0, fli < 0) ? 1 : 0);
  q = fin(r + off, saturated);
  if (saturated || x_special) {  // these labels override the rounding's
    label = x_special ? Label::special : Label::saturated;
    return true;
  }
  // The exact value is t + e with |e| < ulp(t)/2 and the sign of e known. The near-tie label
  // needs |d + e| <= kNearTieDistance: settle it when the bound leaves no doubt, else decline.
  const double dist = f == Fraction::zero ? 0.5 : std::fabs(d);
  bool near = dist <= kNearTieDistance;
  if (sticky != 0 && f != Fraction::zero) {
    const double half_ulp = std::ldexp(1.0, std::ilogb(t) - 53);
    if (dist + half_ulp <= kNearTieDistance)
      near = true;
    else if (dist > kNearTieDistance + half_ulp)
      near = false;
    else
      return false;
  }
  label = rounding_label(f, near);
  return true;
}

using FastKind = Arith::Native;

}  // namespace

namespace {

// Everything the per-element fast paths need, fixed for one quantize call.
struct FastContext {
  const QuantizePolicy& pol;
  RoundTable round_up;
  Finish fin;
  bool int_add;
  FastKind kind;
  NarrowRound narrow;  // the format of FastKind::narrow
  double min_normal;   // nonzero inputs below this are subnormal: labelled special
};

// One element on the fast path of the context's compute kind; false hands it to the slow path.
[[gnu::always_inline]] inline bool fast_element(const FastContext& c, double xd, double s, std::int64_t zp,
                                                std::int64_t& v, Label& l, bool& specified) {
  const double ax = std::fabs(xd);
  const bool x_special = !(ax <= std::numeric_limits<double>::max()) || (ax < c.min_normal && ax != 0);
  switch (c.kind) {
    case FastKind::f32:
      return fast_float_element<float>(xd, s, zp, c.pol, c.round_up, c.fin, c.int_add, x_special, NativeRound{}, v, l,
                                       specified);
    case FastKind::f64:
      return fast_float_element<double>(xd, s, zp, c.pol, c.round_up, c.fin, c.int_add, x_special, NativeRound{}, v, l,
                                        specified);
    case FastKind::narrow:
      return fast_float_element<double>(xd, s, zp, c.pol, c.round_up, c.fin, c.int_add, x_special, c.narrow, v, l,
                                        specified);
    case FastKind::exact:  // in exact arithmetic the float add of an integer zp is an integer add
      return fast_exact_element(xd, s, zp, c.pol, c.fin, c.int_add || adds_zp_in_float_after_rounding(c.pol.order),
                                x_special, v, l, specified);
    case FastKind::none:
      break;
  }
  return false;
}

// One run of elements sharing a scale and zero point: a tight loop with the input and output
// types known at compile time. Elements the fast path declines are appended to `slow`.
template <class In, class Out, bool kLabels>
void fast_run(const FastContext& c, const In* x, Out* q, Label* labels, SpecifiedMask& specified, std::int64_t begin,
              std::int64_t end, double s, std::int64_t zp, std::vector<std::int64_t>& slow) {
  for (std::int64_t i = begin; i < end; ++i) {
    std::int64_t v = 0;
    Label l = Label::clear;
    bool spec = true;
    if (!fast_element(c, static_cast<double>(x[i]), s, zp, v, l, spec)) {
      slow.push_back(i);
      continue;
    }
    q[i] = static_cast<Out>(v);
    if constexpr (kLabels) labels[i] = l;
    if (!spec) specified.set(static_cast<std::size_t>(i), false);
  }
}

// Calls f(begin, end, k) for each maximal run of consecutive elements with parameter index k.
template <class F>
void for_each_param_run(const QuantParams& p, const Shape& shape, std::int64_t n, F&& f) {
  if (p.granularity() == Granularity::per_tensor) {
    f(std::int64_t{0}, n, std::int64_t{0});
    return;
  }
  const ParamIndexer index(p, shape);
  std::int64_t begin = 0;
  while (begin < n) {
    const std::int64_t k = index(begin);
    std::int64_t end = begin + 1;
    while (end < n && index(end) == k) ++end;
    f(begin, end, k);
    begin = end;
  }
}

template <class In, class Out>
void fast_tensor(const FastContext& c, const Tensor& x, const QuantParams& p, Tensor& q, Label* labels,
                 SpecifiedMask& specified, std::vector<std::int64_t>& slow) {
  const In* xd = x.data<In>();
  Out* qd = q.data<Out>();
  if constexpr (std::is_same_v<In, float> && sizeof(Out) <= 2) {
    if (c.kind == FastKind::f32 && c.pol.clamp != Clamp::wrap && c.pol.order != QuantizeOrder::fma_recip &&
        !adds_zp_in_float_after_rounding(c.pol.order) && c.pol.cast == IntCast::exact) {
      constexpr auto kOut = std::is_same_v<Out, std::int8_t>    ? quantize_f32::Out::s8
                            : std::is_same_v<Out, std::uint8_t> ? quantize_f32::Out::u8
                            : std::is_same_v<Out, std::int16_t> ? quantize_f32::Out::s16
                                                                : quantize_f32::Out::u16;
      const quantize_f32::Kernel kernel = quantize_f32::kernel();
      const bool fb = c.pol.clamp == Clamp::float_before;
      std::vector<std::int64_t> flagged;
      for_each_param_run(p, x.shape(), x.size(), [&](std::int64_t b, std::int64_t e, std::int64_t k) {
        quantize_f32::Params kp;
        kp.s = static_cast<float>(p.scales[static_cast<std::size_t>(k)]);
        kp.zp = static_cast<std::int32_t>(p.zero_point(k));
        const std::int32_t off = c.int_add ? kp.zp : 0;
        kp.lo_f = fb ? static_cast<float>(c.fin.range.lo - off) : -0x1p30f;
        kp.hi_f = fb ? static_cast<float>(c.fin.range.hi - off) : 0x1p30f;
        kp.float_before = fb;
        kp.lo = static_cast<std::int32_t>(c.fin.range.lo);
        kp.hi = static_cast<std::int32_t>(c.fin.range.hi);
        kp.min_normal = static_cast<float>(c.min_normal);
        kp.mode = c.pol.rounding;
        kp.order = c.pol.order;
        kernel(kp, kOut, xd + b, e - b, qd + b, labels ? labels + b : nullptr, b, flagged);
        // What the vector kernel flags (NaN, infinities, subnormal inputs, overflowing
        // quotients) the scalar fast path decides; the rest goes on to the slow path.
        for (const std::int64_t i : flagged) {
          std::int64_t v = 0;
          Label l = Label::clear;
          bool spec = true;
          if (!fast_element(c, static_cast<double>(xd[i]), p.scales[static_cast<std::size_t>(k)], kp.zp, v, l, spec)) {
            slow.push_back(i);
            continue;
          }
          qd[i] = static_cast<Out>(v);
          if (labels) labels[i] = l;
          if (!spec) specified.set(static_cast<std::size_t>(i), false);
        }
        flagged.clear();
      });
      return;
    }
  }
  for_each_param_run(p, x.shape(), x.size(), [&](std::int64_t b, std::int64_t e, std::int64_t k) {
    const double s = p.scales[static_cast<std::size_t>(k)];
    const std::int64_t zp = p.zero_point(k);
    if (labels)
      fast_run<In, Out, true>(c, xd, qd, labels, specified, b, e, s, zp, slow);
    else
      fast_run<In, Out, false>(c, xd, qd, labels, specified, b, e, s, zp, slow);
  });
}

template <class In>
void fast_tensor_out(const FastContext& c, const Tensor& x, const QuantParams& p, Tensor& q, Label* labels,
                     SpecifiedMask& specified, std::vector<std::int64_t>& slow) {
  switch (q.dtype()) {
    case DType::i8:
    case DType::i4:
      fast_tensor<In, std::int8_t>(c, x, p, q, labels, specified, slow);
      break;
    case DType::u8:
    case DType::u4:
      fast_tensor<In, std::uint8_t>(c, x, p, q, labels, specified, slow);
      break;
    case DType::i16:
      fast_tensor<In, std::int16_t>(c, x, p, q, labels, specified, slow);
      break;
    case DType::u16:
      fast_tensor<In, std::uint16_t>(c, x, p, q, labels, specified, slow);
      break;
    case DType::i32:
      fast_tensor<In, std::int32_t>(c, x, p, q, labels, specified, slow);
      break;
    default:
      throw InputError("quantize: output format " + std::string(name(q.dtype())) + " is not an integer format");
  }
}

}  // namespace

QuantizeResult quantize(const Tensor& x, const QuantParams& p, DType out, const QuantizePolicy& pol, OraclePath path,
                        bool want_labels) {
  QuantizeResult res;
  quantize(x, p, out, pol, res, path, want_labels);
  return res;
}

void quantize(const Tensor& x, const QuantParams& p, DType out, const QuantizePolicy& pol, QuantizeResult& res,
              OraclePath path, bool want_labels) {
  if (!is_int(out)) throw InputError("quantize: output format " + std::string(name(out)) + " is not an integer format");
  // Every element is written below (by a fast path or the slow path), so buffers of the right
  // size are reused as they are.
  if (res.q.dtype() != out || res.q.shape() != x.shape() || res.q.bytes().empty() != (x.size() == 0))
    res.q = Tensor(out, x.shape());
  if (want_labels)
    res.labels.resize(static_cast<std::size_t>(x.size()));
  else
    res.labels.clear();
  res.specified = SpecifiedMask(static_cast<std::size_t>(x.size()));
  const Arith A = resolve_compute(pol.compute, x.dtype(), p.scale_dtype);
  const FastKind fk = path == OraclePath::fast ? A.native() : FastKind::none;
  const FastContext ctx{pol,
                        RoundTable(pol.rounding),
                        Finish{out, output_range(out, pol), pol.clamp},
                        adds_zp_in_integers(pol.order),
                        fk,
                        NarrowRound{fk == FastKind::narrow ? A.format() : DType::f64},
                        is_float(x.dtype()) ? std::ldexp(1.0, 1 - info(x.dtype()).fl.bias) : 0.0};

  // The fast path takes f32 and f64 inputs from memory directly; every other input format
  // (f16, bf16, f8, i32) is widened to f64 first, which is exact.
  std::vector<std::int64_t> slow;
  Label* labels = want_labels ? res.labels.data() : nullptr;
  if (fk == FastKind::none) {
    slow.resize(static_cast<std::size_t>(x.size()));
    for (std::int64_t i = 0; i < x.size(); ++i) slow[static_cast<std::size_t>(i)] = i;
  } else if (x.dtype() == DType::f32) {
    fast_tensor_out<float>(ctx, x, p, res.q, labels, res.specified, slow);
  } else if (x.dtype() == DType::f64) {
    fast_tensor_out<double>(ctx, x, p, res.q, labels, res.specified, slow);
  } else {
    Tensor wide(DType::f64, x.shape());
    for (std::int64_t i = 0; i < x.size(); ++i) wide.data<double>()[i] = x.get_double(i);
    fast_tensor_out<double>(ctx, wide, p, res.q, labels, res.specified, slow);
  }

  const ParamIndexer index(p, x.shape());
  for (std::int64_t i : slow) {
    const std::int64_t k = index(i);
    QuantizeElement e;
    try {
      e = quantize_element(x.get_double(i), x.dtype(), p.scales[static_cast<std::size_t>(k)], p.scale_dtype,
                           p.zero_point(k), out, pol);
    } catch (const InputError& err) {
      throw InputError(std::string(err.what()) + " (element " + std::to_string(i) + ")");
    }
    res.q.set_int(i, e.q);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = e.label;
    res.specified.set(static_cast<std::size_t>(i), e.specified);
  }
  res.slow_elements = static_cast<std::int64_t>(slow.size());  // every element, when no fast path applies
}

}  // namespace qc
