#include "oracles/dequantize.hpp"

#include "qconform/error.hpp"

#include <bit>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace qc {
namespace {

using u128 = unsigned __int128;

int msb(u128 v) {  // v > 0
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  const auto lo = static_cast<std::uint64_t>(v);
  return hi != 0 ? 64 + std::bit_width(hi) - 1 : std::bit_width(lo) - 1;
}

ExactFloat exact_int(std::int64_t v) { return ExactFloat::finite(Rational(v)); }

void require_integer_input(DType q) {
  if (!is_int(q))
    throw InputError("dequantize: input format " + std::string(name(q)) +
                     " is not an integer format (float8 inputs are not modelled)");
}

void require_float_output(DType out) {
  if (!is_float(out))
    throw InputError("dequantize: output format " + std::string(name(out)) + " is not a float format");
}

// The cast into the output format: IEEE conversion, ties to even, overflow to inf (NaN for a
// format without inf), as astype / static_cast do.
std::uint64_t cast_to_output(DType out, const ExactFloat& v) { return encode_float(out, v, RoundingMode::rne); }

std::string int_str(std::int64_t v) { return std::to_string(v); }

}  // namespace

Label exact_product_label(std::int64_t d, double s, DType out) {
  if (d == 0) return Label::clear;
  // v = |d| * s = P * 2^e exactly, with s = m * 2^e (m < 2^53) and P = |d| * m < 2^93.
  int k = 0;
  const double f = std::frexp(s, &k);
  const auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
  const int e = k - 53;
  const u128 P = static_cast<u128>(d < 0 ? -static_cast<u128>(d) : static_cast<u128>(d)) * m;
  // The output step at v's binade (subnormals share the smallest normal binade's step).
  const FloatLayout& l = info(out).fl;
  const int binade = std::max(msb(P) + e, 1 - l.bias);
  const int shift = binade - l.mant_bits - e;  // v / step = P / 2^shift
  if (shift <= 0) return Label::clear;         // v is a whole number of steps
  if (shift > 100) return Label::clear;        // v / step < 2^-7: far from any midpoint
  const u128 one = 1;
  const u128 low = P & ((one << shift) - 1);
  const u128 half = one << (shift - 1);
  if (low == half) return Label::tie;
  const u128 dist = low > half ? low - half : half - low;  // distance to the midpoint, in 2^-shift steps
  // dist / 2^shift <= kNearTieDistance = 2^-10
  return dist * 1024 <= (one << shift) ? Label::near_tie : Label::clear;
}

namespace {

// The part of a dequantize evaluation that does not depend on q: the compute arithmetic, and the
// scale, the zero point and zp * s in it. Formed once per channel by the tensor-level slow path
// (each term is a correctly rounded conversion or product on exact rationals, costly to repeat).
struct DequantizeTerms {
  Arith A = Arith::exact();
  ExactFloat s, sc;   // the scale, exactly and in the compute format
  ExactFloat zf, zc;  // the zero point, exactly and in the compute format
  ExactFloat b;       // zp * s in the compute format (mul_then_sub and fma only)
};

DequantizeTerms dequantize_terms(DType q_dtype, double sd, DType scale_dtype, std::int64_t zp,
                                 const DequantizePolicy& pol) {
  DequantizeTerms c;
  c.A = resolve_compute(pol.compute, q_dtype, scale_dtype);
  c.s = ExactFloat::finite(Rational(sd));
  c.sc = c.A.convert(c.s);
  c.zf = exact_int(zp);
  c.zc = c.A.convert(c.zf);
  if (pol.order == DequantizeOrder::mul_then_sub || pol.order == DequantizeOrder::fma) c.b = c.A.mul(c.zc, c.sc);
  return c;
}

// One element from its channel's terms. `details`: also the exact value, the computed value and
// the output's value (the tensor-level path needs only the bits and the label).
void evaluate(DequantizeElement& e, std::int64_t q, std::int64_t zp, double sd, const DequantizeTerms& c, DType out,
              const DequantizePolicy& pol, bool trace, bool details) {
  const Arith& A = c.A;
  const Arith X = Arith::exact();
  const std::string in = trace ? " in " + A.name() : std::string();
  // Only called under `if (trace)`: the step texts (exact decimals) and the exact values beside
  // the rounded ones are costly, and the slow path runs on every element of a property test.
  auto step = [&](std::string what, std::string formula, const ExactFloat& exact, const ExactFloat& rounded,
                  std::string note = "") {
    e.steps.push_back({std::move(what), std::move(formula), exact, rounded, std::move(note)});
  };

  const ExactFloat& s = c.s;
  const ExactFloat& sc = c.sc;
  const ExactFloat& zf = c.zf;
  const ExactFloat& zc = c.zc;
  if (details) e.exact = X.mul(exact_int(q - zp), s);
  if (trace) step("s to " + A.name(), "s = " + to_string(s), s, sc);

  ExactFloat t;
  switch (pol.order) {
    case DequantizeOrder::sub_int_then_mul: {
      const ExactFloat d = exact_int(q - zp);  // integer subtraction: exact for every supported format
      if (trace) step("q - zp in integers", int_str(q) + " - " + int_str(zp), d, d);
      const ExactFloat dc = A.convert(d);
      if (trace) step("(q - zp) to " + A.name(), int_str(q - zp), d, dc);
      t = A.mul(dc, sc);
      if (trace) step("(q - zp) * s" + in, "(q - zp) * s", X.mul(dc, sc), t);
      break;
    }
    case DequantizeOrder::sub_float_then_mul: {
      const ExactFloat qf = exact_int(q);
      const ExactFloat qc = A.convert(qf);
      if (trace) step("q to " + A.name(), int_str(q), qf, qc);
      if (trace) step("zp to " + A.name(), int_str(zp), zf, zc);
      const ExactFloat d = A.sub(qc, zc);
      if (trace) step("q - zp" + in, "q - zp", X.sub(qc, zc), d);
      t = A.mul(d, sc);
      if (trace) step("(q - zp) * s" + in, "(q - zp) * s", X.mul(d, sc), t);
      break;
    }
    case DequantizeOrder::mul_then_sub: {
      const ExactFloat qf = exact_int(q);
      const ExactFloat qc = A.convert(qf);
      if (trace) step("q to " + A.name(), int_str(q), qf, qc);
      if (trace) step("zp to " + A.name(), int_str(zp), zf, zc);
      const ExactFloat a = A.mul(qc, sc);
      if (trace) step("q * s" + in, "q * s", X.mul(qc, sc), a);
      const ExactFloat& b = c.b;
      if (trace) step("zp * s" + in, "zp * s", X.mul(zc, sc), b);
      t = A.sub(a, b);
      if (trace) step("q*s - zp*s" + in, "(q*s) - (zp*s)", X.sub(a, b), t);
      break;
    }
    case DequantizeOrder::fma: {
      const ExactFloat qf = exact_int(q);
      const ExactFloat qc = A.convert(qf);
      if (trace) step("q to " + A.name(), int_str(q), qf, qc);
      if (trace) step("zp to " + A.name(), int_str(zp), zf, zc);
      const ExactFloat& b = c.b;
      if (trace) step("zp * s" + in, "zp * s", X.mul(zc, sc), b);
      const ExactFloat nb = negate(b);
      t = A.fma(qc, sc, nb);
      if (trace) step("fma(q, s, -(zp*s))" + in + " (one rounding)", "q * s - (zp*s)", X.fma(qc, sc, nb), t);
      break;
    }
  }
  e.bits = cast_to_output(out, t);
  bool finite;
  if (details) {
    e.computed = t;
    e.y = decode_float(out, e.bits);
    finite = e.y.is_finite();
  } else {
    finite = std::isfinite(float_bits_to_double(out, e.bits));
  }
  if (trace)
    step("cast to " + std::string(name(out)) + " (ties to even)", to_string(t), t, e.y,
         A.is_exact() ? "the only rounding"
                      : "a second rounding when " + A.name() + " is wider than " + std::string(name(out)));
  e.label = finite ? exact_product_label(q - zp, sd, out) : Label::saturated;
}

}  // namespace

DequantizeElement dequantize_element(std::int64_t q, DType q_dtype, double sd, DType scale_dtype, std::int64_t zp,
                                     DType out, const DequantizePolicy& pol, bool trace) {
  require_float_output(out);
  DequantizeElement e;
  evaluate(e, q, zp, sd, dequantize_terms(q_dtype, sd, scale_dtype, zp, pol), out, pol, trace, true);
  return e;
}

namespace {

// Hardware cast of a finite f32/f64 value into `out`. f32 and f64 outputs are the hardware's
// IEEE conversion (ties to even); narrower formats go through the exact encoder, whose input is
// the exact value of the double. Sets `finite` to whether the output is finite.
template <class T>
std::uint64_t hw_cast_to_output(T y, DType out, bool& finite) {
  std::uint64_t bits = 0;
  switch (out) {
    case DType::f64: {
      const auto v = static_cast<double>(y);
      bits = std::bit_cast<std::uint64_t>(v);
      finite = std::isfinite(v);
      return bits;
    }
    case DType::f32: {
      const auto v = static_cast<float>(y);
      bits = std::bit_cast<std::uint32_t>(v);
      finite = std::isfinite(v);
      return bits;
    }
    default:
      break;
  }
  const auto v = static_cast<double>(y);
  // y is never -0 here (see fast_float_element), so +0 is the exact pattern 0 in every format.
  bits = v == 0 ? 0 : cast_to_output(out, ExactFloat::finite(Rational(v)));
  finite = std::isfinite(float_bits_to_double(out, bits));
  return bits;
}

// Fast path for f32/f64 compute: the conversions int -> T (cvtsi2ss/sd), double -> T, and each
// T operation are the hardware's IEEE operations in the default environment, exactly the
// policy's rounded operations (the oracle is built with -ffp-contract=off; std::fma is the one
// fused operation). Never produces -0: every operand is an integer times a positive scale s_T,
// so a zero result is an exact zero (+0 under ties-to-even), and a nonzero one is a nonzero
// multiple of s_T's quantum, which cannot round to zero. Returns false for a zero or infinite
// converted scale and for a non-finite result (the slow path labels those).
template <class T>
bool fast_float_element(std::int64_t q, double sd, std::int64_t zp, DequantizeOrder order, DType out,
                        std::uint64_t& bits, bool& finite) {
  const T s = static_cast<T>(sd);
  if (!(s > 0) || !std::isfinite(s)) return false;
  T y = 0;
  switch (order) {
    case DequantizeOrder::sub_int_then_mul:
      y = static_cast<T>(q - zp) * s;
      break;
    case DequantizeOrder::sub_float_then_mul:
      y = (static_cast<T>(q) - static_cast<T>(zp)) * s;
      break;
    case DequantizeOrder::mul_then_sub:
      y = static_cast<T>(q) * s - static_cast<T>(zp) * s;
      break;
    case DequantizeOrder::fma:
      y = std::fma(static_cast<T>(q), s, -(static_cast<T>(zp) * s));
      break;
  }
  if (!std::isfinite(y)) return false;
  bits = hw_cast_to_output(y, out, finite);
  return true;
}

// Fast path for exact compute: (q - zp) * s in f64 with its exact residual (fma); when the
// residual is 0 the f64 product is the exact value and the cast to `out` is the only rounding.
bool fast_exact_element(std::int64_t q, double sd, std::int64_t zp, DType out, std::uint64_t& bits, bool& finite) {
  const auto d = static_cast<double>(q - zp);  // exact: |q - zp| < 2^53
  const double p = d * sd;
  if (!std::isfinite(p) || (p != 0 && std::fabs(p) < 0x1p-1000)) return false;  // keep fma's residual exact
  if (std::fma(d, sd, -p) != 0) return false;
  bits = hw_cast_to_output(p, out, finite);
  return true;
}

using FastKind = Arith::Native;

}  // namespace

DequantizeResult dequantize(const Tensor& q, const QuantParams& p, DType out, const DequantizePolicy& pol,
                            OraclePath path, bool want_labels) {
  require_integer_input(q.dtype());
  require_float_output(out);
  validate(p, q.shape(), q.dtype(), "dequantize");
  DequantizeResult res;
  res.y = Tensor(out, q.shape());
  if (want_labels) res.labels.assign(static_cast<std::size_t>(q.size()), Label::clear);
  const ParamIndexer index(p, q.shape());
  const Arith A = resolve_compute(pol.compute, q.dtype(), p.scale_dtype);
  const FastKind fk = path == OraclePath::fast ? A.native() : FastKind::none;
  // The slow path's per-channel terms, formed when a channel first needs them.
  std::vector<std::optional<DequantizeTerms>> terms(p.scales.size());

  for (std::int64_t i = 0; i < q.size(); ++i) {
    const std::int64_t k = index(i);
    const std::int64_t qv = q.get_int(i);
    const double sd = p.scales[static_cast<std::size_t>(k)];
    const std::int64_t zp = p.zero_point(k);
    std::uint64_t bits = 0;
    bool finite = true;
    bool ok = false;
    switch (fk) {
      case FastKind::f32:
        ok = fast_float_element<float>(qv, sd, zp, pol.order, out, bits, finite);
        break;
      case FastKind::f64:
        ok = fast_float_element<double>(qv, sd, zp, pol.order, out, bits, finite);
        break;
      case FastKind::exact:
        ok = fast_exact_element(qv, sd, zp, out, bits, finite);
        break;
      case FastKind::none:
      case FastKind::narrow:  // not taken: f16/bf16 compute of a dequantize is evaluated exactly
        break;
    }
    Label label = Label::clear;
    if (ok) {
      if (want_labels) label = finite ? exact_product_label(qv - zp, sd, out) : Label::saturated;
    } else {
      auto& c = terms[static_cast<std::size_t>(k)];
      if (!c) c = dequantize_terms(q.dtype(), sd, p.scale_dtype, zp, pol);
      DequantizeElement e;
      evaluate(e, qv, zp, sd, *c, out, pol, false, false);
      bits = e.bits;
      label = e.label;
      if (path == OraclePath::fast) ++res.slow_elements;
    }
    res.y.set_bits(i, bits);
    if (want_labels) res.labels[static_cast<std::size_t>(i)] = label;
  }
  return res;
}

}  // namespace qc
