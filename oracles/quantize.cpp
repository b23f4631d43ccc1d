#include "oracles/quantize.hpp"

#include "oracles/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qc {

Arith resolve_compute(const ComputeFormat& c, DType x_dtype, DType scale_dtype) {
  using K = ComputeFormat::Kind;
  switch (c.kind) {
    case K::exact: return Arith::exact();
    case K::f64: return Arith::in(DType::f64);
    case K::f32: return Arith::in(DType::f32);
    case K::f16: return Arith::in(DType::f16);
    case K::bf16: return Arith::in(DType::bf16);
    case K::scale_type: return Arith::in(is_float(scale_dtype) ? scale_dtype : DType::f32);
    case K::input_type: return Arith::in(is_float(x_dtype) ? x_dtype : DType::f32);
    case K::fixed64: return Arith::fixed64(c.frac_bits);
  }
  return Arith::exact();
}

namespace {

struct Range {
  std::int64_t lo, hi;
};

Range output_range(DType out, const QuantizePolicy& pol) {
  Range r{int_min(out, pol.narrow_range), int_max(out)};
  if (pol.clip) {
    r.lo = std::max(r.lo, pol.clip->first);
    r.hi = std::min(r.hi, pol.clip->second);
  }
  return r;
}

bool adds_zp_in_integers(QuantizeOrder o) {
  return o == QuantizeOrder::div_then_add_int || o == QuantizeOrder::recip_then_add_int;
}

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

std::int64_t nan_value(NanRule rule, Range r, std::int64_t zp) {
  switch (rule) {
    case NanRule::to_qmin: return r.lo;
    case NanRule::to_qmax: return r.hi;
    case NanRule::to_zero_point: return std::clamp(zp, r.lo, r.hi);
    case NanRule::to_zero: return std::clamp<std::int64_t>(0, r.lo, r.hi);
    case NanRule::unspecified: return r.lo;  // placeholder; the element is marked unspecified
    case NanRule::error: break;
  }
  throw InputError("NaN input where the policy's NaN rule is 'error'");
}

// A label from where the pre-rounding value lay; `dist_to_half` is |t - floor(t) - 1/2|.
Label rounding_label(Fraction f, bool near) {
  if (f == Fraction::half) return Label::tie;
  return near ? Label::near_tie : Label::clear;
}

std::string fraction_note(Fraction f, RoundingMode m, const BigInt& fl, const BigInt& r) {
  std::string where;
  switch (f) {
    case Fraction::zero: where = "already an integer"; break;
    case Fraction::below_half: where = "below the half-way point"; break;
    case Fraction::half: where = "exactly half-way (a tie)"; break;
    case Fraction::above_half: where = "above the half-way point"; break;
  }
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

  auto step = [&](std::string what, std::string formula, const ExactFloat& exact, const ExactFloat& rounded,
                  std::string note = "") {
    if (trace) e.steps.push_back({std::move(what), std::move(formula), exact, rounded, std::move(note)});
  };
  const Arith X = Arith::exact();
  const std::string in = " in " + A.name();

  const ExactFloat xc = A.convert(x);
  const ExactFloat sc = A.convert(s);
  step("x to " + A.name(), "x = " + to_string(x), x, xc);
  step("s to " + A.name(), "s = " + to_string(s), s, sc);

  ExactFloat t;
  switch (pol.order) {
    case QuantizeOrder::div_then_add_int:
    case QuantizeOrder::div_add_float: {
      t = A.div(xc, sc);
      step("x / s" + in, "x / s", X.div(xc, sc), t);
      if (pol.order == QuantizeOrder::div_add_float) {
        const ExactFloat zc = A.convert(zpf);
        ExactFloat u = A.add(t, zc);
        step("+ zp" + in, "(x / s) + " + std::to_string(zp), X.add(t, zc), u);
        t = u;
      }
      break;
    }
    case QuantizeOrder::recip_then_add_int:
    case QuantizeOrder::recip_add_float:
    case QuantizeOrder::fma_recip: {
      const ExactFloat inv = A.div(one, sc);
      step("1 / s" + in, "1 / s", X.div(one, sc), inv);
      if (pol.order == QuantizeOrder::fma_recip) {
        const ExactFloat zc = A.convert(zpf);
        t = A.fma(xc, inv, zc);
        step("fma(x, 1/s, zp)" + in + " (one rounding)", "x * (1/s) + " + std::to_string(zp), X.fma(xc, inv, zc), t);
        break;
      }
      t = A.mul(xc, inv);
      step("x * (1/s)" + in, "x * (1/s)", X.mul(xc, inv), t);
      if (pol.order == QuantizeOrder::recip_add_float) {
        const ExactFloat zc = A.convert(zpf);
        ExactFloat u = A.add(t, zc);
        step("+ zp" + in, "x * (1/s) + " + std::to_string(zp), X.add(t, zc), u);
        t = u;
      }
      break;
    }
  }

  if (t.is_nan()) {
    e.label = Label::special;
    e.pre_round = t;
    e.specified = pol.nan != NanRule::unspecified;
    e.q = nan_value(pol.nan, range, zp);
    step("NaN rule", "", t, t,
         e.specified ? "the policy maps NaN to " + std::string(name(pol.nan)) + ": " + std::to_string(e.q)
                     : "the policy leaves NaN unspecified: any output is accepted");
    return e;
  }

  bool saturated = false;
  const std::int64_t off = int_add ? zp : 0;
  if (pol.clamp == Clamp::float_before) {
    const ExactFloat lo = A.convert(ExactFloat::finite(Rational(range.lo - off)));
    const ExactFloat hi = A.convert(ExactFloat::finite(Rational(range.hi - off)));
    const bool below = t.is_inf() ? t.negative : t.value < lo.value;
    const bool above = t.is_inf() ? !t.negative : t.value > hi.value;
    if (below || above) {
      ExactFloat c = below ? lo : hi;
      step("clamp" + in + " before rounding", "to [" + to_string(lo) + ", " + to_string(hi) + "]", t, c);
      t = c;
      saturated = true;
    }
  }
  e.pre_round = t;

  BigInt r;
  if (t.is_inf()) {  // infinities saturate (also under wrap, where a cast of inf has no meaning)
    special = true;
    r = t.negative ? BigInt(range.lo) - off - 1 : BigInt(range.hi) - off + 1;
    step("round", "", t, t, "infinite: saturates");
  } else {
    Fraction f;
    BigInt fl = floor_with_fraction(t.value, f);
    r = fl;
    const bool odd = bit_test(fl < 0 ? BigInt(-fl) : fl, 0);
    if (rounds_up(pol.rounding, f, odd, fl < 0)) r += 1;
    const Rational dist = abs(t.value - Rational(fl) - Rational(1, 2));
    const Label l = rounding_label(f, dist <= Rational(1, 1024));
    e.label = l;
    step("round to integer", to_string(t), t, ExactFloat::finite(Rational(r)), fraction_note(f, pol.rounding, fl, r));
  }

  BigInt v = r + off;
  if (int_add) step("+ zp in integers", r.str() + " + " + std::to_string(zp), ExactFloat::finite(Rational(v)),
                    ExactFloat::finite(Rational(v)));
  std::int64_t q;
  if (pol.clamp == Clamp::wrap) {
    q = int_convert(out, v, IntOverflow::wrap);
    if (q < range.lo || q > range.hi) {  // an explicit clip still applies after the cast
      q = std::clamp(q, range.lo, range.hi);
      saturated = true;
    }
    step("wrap to " + std::string(name(out)), v.str(), ExactFloat::finite(Rational(v)), ExactFloat::finite(Rational(q)));
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

Fraction classify(double frac) {
  return frac == 0 ? Fraction::zero
         : frac < 0.5 ? Fraction::below_half
         : frac == 0.5 ? Fraction::half
                       : Fraction::above_half;
}

constexpr double k2p62 = 4611686018427387904.0;

// Fast path for f32/f64 compute: the hardware's IEEE operation in the default environment is
// exactly the policy's rounded operation, so the only work is the final rounding, decided
// exactly on the representable value t. Returns false to hand the element to the slow path
// (non-finite inputs or intermediates, and huge values under wrap).
template <class T>
bool fast_float_element(double xd, double sd, std::int64_t zp, const QuantizePolicy& pol, const Finish& fin,
                        bool int_add, std::int64_t& q, Label& label) {
  if (!std::isfinite(xd)) return false;
  const T x = static_cast<T>(xd);  // correctly rounded (RNE) conversion
  const T s = static_cast<T>(sd);
  if (!(s > 0) || !std::isfinite(s) || !std::isfinite(x)) return false;
  const T zpt = static_cast<T>(zp);
  T t = 0;
  switch (pol.order) {
    case QuantizeOrder::div_then_add_int: t = x / s; break;
    case QuantizeOrder::div_add_float: t = x / s + zpt; break;
    case QuantizeOrder::recip_then_add_int: t = x * (T(1) / s); break;
    case QuantizeOrder::recip_add_float: t = x * (T(1) / s) + zpt; break;
    case QuantizeOrder::fma_recip: t = std::fma(x, T(1) / s, zpt); break;
  }
  if (!std::isfinite(t)) return false;
  bool saturated = false;
  const std::int64_t off = int_add ? zp : 0;
  if (pol.clamp == Clamp::float_before) {
    const T lo = static_cast<T>(fin.range.lo - off), hi = static_cast<T>(fin.range.hi - off);
    if (t < lo) t = lo, saturated = true;
    if (t > hi) t = hi, saturated = true;
  }
  if (std::fabs(t) >= T(k2p62)) {
    if (pol.clamp == Clamp::wrap) return false;
    t = t > 0 ? T(k2p62) : T(-k2p62);  // saturates below in any case
  }
  const T fl = std::floor(t);
  const T frac = t - fl;  // exact
  const Fraction f = classify(static_cast<double>(frac));
  const auto fli = static_cast<std::int64_t>(fl);
  const std::int64_t r = fli + (rounds_up(pol.rounding, f, (fli & 1) != 0, fli < 0) ? 1 : 0);
  label = rounding_label(f, std::fabs(static_cast<double>(frac) - 0.5) <= kNearTieDistance);
  q = fin(r + off, saturated);
  if (saturated) label = Label::saturated;
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
// decision the pair cannot settle go to the slow path.
bool fast_exact_element(double x, double s, std::int64_t zp, const QuantizePolicy& pol, const Finish& fin,
                        bool int_add, std::int64_t& q, Label& label) {
  if (!std::isfinite(x)) return false;
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
  double fl = std::floor(t);
  double frac = t - fl;
  Fraction f = classify(frac);
  if (f == Fraction::zero && sticky != 0) {
    if (sticky > 0) {
      f = Fraction::below_half;
    } else {
      fl -= 1;
      f = Fraction::above_half;
      frac = 1;  // just below 1
    }
  } else if (f == Fraction::half && sticky != 0) {
    f = sticky > 0 ? Fraction::above_half : Fraction::below_half;
  }
  const double dist = std::fabs(frac - 0.5);
  if (dist == kNearTieDistance && sticky != 0) return false;  // the residual decides the label
  const auto fli = static_cast<std::int64_t>(fl);
  const std::int64_t r = fli + (rounds_up(pol.rounding, f, (fli & 1) != 0, fli < 0) ? 1 : 0);
  label = rounding_label(f, dist <= kNearTieDistance);
  q = fin(r + off, saturated);
  if (saturated) label = Label::saturated;
  return true;
}

enum class FastKind { none, f32, f64, exact };

FastKind fast_kind(const Arith& a) {
  const std::string n = a.name();
  if (n == "f32") return FastKind::f32;
  if (n == "f64") return FastKind::f64;
  if (n == "exact") return FastKind::exact;
  return FastKind::none;
}

}  // namespace

QuantizeResult quantize(const Tensor& x, const QuantParams& p, DType out, const QuantizePolicy& pol, OraclePath path,
                        bool want_labels) {
  if (!is_int(out)) throw InputError("quantize: output format " + std::string(name(out)) + " is not an integer format");
  QuantizeResult res;
  res.q = Tensor(out, x.shape());
  if (want_labels) res.labels.assign(static_cast<std::size_t>(x.size()), Label::clear);
  res.specified.assign(static_cast<std::size_t>(x.size()), 1);
  const ParamIndexer index(p, x.shape());
  const Arith A = resolve_compute(pol.compute, x.dtype(), p.scale_dtype);
  const FastKind fk = path == OraclePath::fast ? fast_kind(A) : FastKind::none;
  const Finish fin{out, output_range(out, pol), pol.clamp};
  const bool int_add = adds_zp_in_integers(pol.order);
  const bool in_has_subnormals = is_float(x.dtype());
  const double min_normal = in_has_subnormals ? std::ldexp(1.0, 1 - info(x.dtype()).fl.bias) : 0.0;

  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t k = index(i);
    const double xd = x.get_double(i);
    const double sd = p.scales[static_cast<std::size_t>(k)];
    const std::int64_t zp = p.zero_point(k);
    std::int64_t q = 0;
    Label label = Label::clear;
    bool ok = false;
    const bool subnormal = in_has_subnormals && xd != 0 && std::fabs(xd) < min_normal;
    if (!subnormal) {
      switch (fk) {
        case FastKind::f32: ok = fast_float_element<float>(xd, sd, zp, pol, fin, int_add, q, label); break;
        case FastKind::f64: ok = fast_float_element<double>(xd, sd, zp, pol, fin, int_add, q, label); break;
        case FastKind::exact: ok = fast_exact_element(xd, sd, zp, pol, fin, int_add, q, label); break;
        case FastKind::none: break;
      }
    }
    if (!ok) {
      QuantizeElement e;
      try {
        e = quantize_element(xd, x.dtype(), sd, p.scale_dtype, zp, out, pol);
      } catch (const InputError& err) {
        throw InputError(std::string(err.what()) + " (element " + std::to_string(i) + ")");
      }
      q = e.q;
      label = e.label;
      res.specified[static_cast<std::size_t>(i)] = e.specified ? 1 : 0;
      if (fk != FastKind::none) ++res.slow_elements;
    }
    res.q.set_int(i, q);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = label;
  }
  return res;
}

}  // namespace qc
