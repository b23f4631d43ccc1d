#include "oracles/weight_only.hpp"

#include "qconform/error.hpp"

#include <cmath>
#include <string>

namespace qc {

namespace {

void require_float_tensor(const Tensor& t, const std::string& what) {
  if (!is_float(t.dtype()))
    throw InputError("weight_only_gemm: " + what + " must be a float tensor, got " + std::string(name(t.dtype())));
}

// The weights as multiplied, [K][N] row-major exact values.
std::vector<Rational> multiplied_weights(const QuantizedOperand& qb, const GemmShape& d,
                                         const WeightOnlyPolicy& policy) {
  const std::vector<Rational> values = dequantized_values(qb, policy.weight_format, policy.dequantize);
  if (d.b_k_axis == 0) return values;
  std::vector<Rational> w(values.size());
  for (std::int64_t k = 0; k < d.depth; ++k)
    for (std::int64_t n = 0; n < d.cols; ++n)
      w[static_cast<std::size_t>(k * d.cols + n)] = values[static_cast<std::size_t>(n * d.depth + k)];
  return w;
}

double nearest_double(const Rational& v) { return round_to_format(DType::f64, v).value.convert_to<double>(); }

struct Prepared {
  GemmShape d;
  std::vector<Rational> a;     // [R][K]
  std::vector<Rational> w;     // [K][N]
  std::vector<Rational> bias;  // [N] or empty
};

Prepared prepare(const WeightOnlyGemmOp& op, const WeightOnlyPolicy& policy) {
  require_float_tensor(op.a, "the activation");
  if (!is_float(op.out)) throw InputError("weight_only_gemm: the output format must be a float format");
  const QuantizedOperand qb = quantize_weights(op.b, policy.quantize);
  Prepared p;
  p.d = gemm_shape(op.a.shape(), qb.q.shape(), op.b_layout);
  p.a.reserve(static_cast<std::size_t>(op.a.size()));
  for (std::int64_t i = 0; i < op.a.size(); ++i) p.a.push_back(exact_element(op.a, i));
  p.w = multiplied_weights(qb, p.d, policy);
  if (op.bias) {
    require_float_tensor(*op.bias, "the bias");
    if (op.bias->rank() != 1 || op.bias->size() != p.d.cols)
      throw InputError("weight_only_gemm: the bias must be [N] = [" + std::to_string(p.d.cols) + "], got " +
                       shape_str(op.bias->shape()));
    for (std::int64_t n = 0; n < p.d.cols; ++n) p.bias.push_back(exact_element(*op.bias, n));
  }
  return p;
}

// Σ_k |a_k| * |w_k| + |bias| for every element, with `a_abs(r, k)` the |a| to use.
template <class AbsA>
std::vector<double> bounds(const Prepared& p, AbsA a_abs) {
  const GemmShape& d = p.d;
  std::vector<double> b(static_cast<std::size_t>(d.rows * d.cols));
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::int64_t n = 0; n < d.cols; ++n) {
      Rational s = p.bias.empty() ? Rational(0) : Rational(abs(p.bias[static_cast<std::size_t>(n)]));
      for (std::int64_t k = 0; k < d.depth; ++k)
        s += Rational(a_abs(r, k)) * Rational(abs(p.w[static_cast<std::size_t>(k * d.cols + n)]));
      b[static_cast<std::size_t>(r * d.cols + n)] = nearest_double(s);
    }
  return b;
}

}  // namespace

WeightOnlyResult weight_only_gemm(const WeightOnlyGemmOp& op, const WeightOnlyPolicy& policy) {
  const Prepared p = prepare(op, policy);
  const GemmShape& d = p.d;
  WeightOnlyResult res;
  res.kernel_size = d.depth;
  for (const Rational& b : p.bias) res.nonzero_bias = res.nonzero_bias || b != 0;
  res.y = Tensor(op.out, d.out_shape);
  res.exact.resize(static_cast<std::size_t>(res.y.size()));
  res.labels.resize(res.exact.size());
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::int64_t n = 0; n < d.cols; ++n) {
      Rational v = p.bias.empty() ? Rational(0) : p.bias[static_cast<std::size_t>(n)];
      for (std::int64_t k = 0; k < d.depth; ++k)
        v += p.a[static_cast<std::size_t>(r * d.depth + k)] * p.w[static_cast<std::size_t>(k * d.cols + n)];
      const std::int64_t e = r * d.cols + n;
      res.y.set_bits(e, encode_float(op.out, ExactFloat::finite(v), RoundingMode::rne, Overflow::ieee));
      const bool finite = decode_float(op.out, res.y.bits(e)).is_finite();
      res.labels[static_cast<std::size_t>(e)] = finite ? float_grid_label(v, op.out) : Label::saturated;
      res.exact[static_cast<std::size_t>(e)] = std::move(v);
    }
  res.bound = bounds(p, [&](std::int64_t r, std::int64_t k) -> Rational {
    return abs(p.a[static_cast<std::size_t>(r * d.depth + k)]);
  });
  // The weights as a [K, N] f64 tensor when every value is exact in f64.
  Tensor w(DType::f64, {d.depth, d.cols});
  bool exact_in_f64 = true;
  for (std::int64_t i = 0; i < w.size() && exact_in_f64; ++i) {
    const double x = nearest_double(p.w[static_cast<std::size_t>(i)]);
    exact_in_f64 = Rational(x) == p.w[static_cast<std::size_t>(i)];
    w.set_double(i, x);
  }
  if (exact_in_f64) res.weights = std::move(w);
  return res;
}

std::vector<double> weight_only_bounds(const WeightOnlyGemmOp& op, const WeightOnlyPolicy& policy, BoundKind kind) {
  const Prepared p = prepare(op, policy);
  if (kind == BoundKind::local)
    return bounds(p, [&](std::int64_t r, std::int64_t k) -> Rational {
      return abs(p.a[static_cast<std::size_t>(r * p.d.depth + k)]);
    });
  Rational max_abs = 0;
  for (const Rational& a : p.a) max_abs = std::max(max_abs, Rational(abs(a)));
  return bounds(p, [&](std::int64_t, std::int64_t) { return max_abs; });
}

// ---- TOSA DOT_PRODUCT compliance ---------------------------------------------------------------

std::int64_t tosa_kernel_size_bound(std::int64_t kernel_size, bool nonzero_bias) {
  return kernel_size + (nonzero_bias ? 1 : 0);
}

namespace {

struct Limits {
  double abs = 0, variance_per_element = 0, bias = 0;  // bias: the full limit for T elements
};

// reference_model/src/verify/verify_dot_product.cc, both revisions (see weight_only.hpp).
Limits tosa_limits(const DotProductCheck& c, std::int64_t T) {
  const double k = static_cast<double>(c.kernel_size_bound), t = static_cast<double>(T);
  Limits l;
  if (c.revision == TosaDotProductRevision::ks) {
    l.abs = k;                         // REQUIRE(abs(out_err) <= KS)
    l.variance_per_element = 0.4 * k;  // REQUIRE(out_err_sumsq <= 0.4 * KS * T)
    l.bias = 2 * std::sqrt(k * t);     // REQUIRE(abs(out_err_sum) <= 2 * sqrt(KS * T))
  } else {
    l.abs = 2 * k;                                        // absBound = 2 * ksb
    l.variance_per_element = 4 * 0.4 * k;                 // varianceErrorBound = 4 * 0.4 * ksb
    l.bias = std::sqrt(10 * l.variance_per_element * t);  // max_bias = sqrt(10 * varianceErrorBound * T)
  }
  return l;
}

bool bias_tested(int S) { return S >= 3 && S <= 5; }  // "data sets S which are not positive biased"

// normal_frac<T>() and normal_min<T>() of the TOSA pseudocode: fraction bits, smallest normal.
int normal_frac(DType t) { return info(t).fl.mant_bits; }
double normal_min(DType t) { return std::ldexp(1.0, 1 - info(t).fl.bias); }

bool overflows_in(DType t, double x) { return std::isinf(float_bits_to_double(t, double_to_float_bits(t, x))); }

}  // namespace

DotProductVerdict check_dot_product(std::span<const Rational> reference, std::span<const double> bound,
                                    const Tensor& implementation, const DotProductCheck& check) {
  const auto T = static_cast<std::int64_t>(reference.size());
  if (static_cast<std::int64_t>(bound.size()) != T || implementation.size() != T)
    throw InputError("check_dot_product: reference, bound and implementation sizes differ");
  if (!is_float(implementation.dtype()) || !is_float(check.error_format))
    throw InputError("check_dot_product: the implementation and the error format must be float formats");
  if (T == 0) throw InputError("check_dot_product: no elements");
  const Limits lim = tosa_limits(check, T);
  const int frac = normal_frac(check.error_format);
  const double unit_min = normal_min(check.error_format);
  DotProductVerdict v;
  v.abs_limit = lim.abs;
  v.variance_limit = lim.variance_per_element * static_cast<double>(T);
  v.bias_limit = bias_tested(check.test_set) ? lim.bias : 0;
  v.errors.assign(static_cast<std::size_t>(T), 0.0);
  auto fail = [&](std::int64_t i, std::string why) {
    if (v.pass) {
      v.pass = false;
      v.first_failure = i;
      v.reason = std::move(why);
    }
  };
  for (std::int64_t i = 0; i < T; ++i) {
    const double bnd = bound[static_cast<std::size_t>(i)];
    const Rational& ref = reference[static_cast<std::size_t>(i)];
    const double imp = implementation.get_double(i);
    const std::string at = "element " + std::to_string(i) + ": ";
    if (std::isnan(bnd)) continue;  // "No further accuracy requirements for a NaN bound"
    if (check.revision == TosaDotProductRevision::ksb &&
        overflows_in(implementation.dtype(), bnd * (1 + lim.abs * std::ldexp(1.0, -1 - frac))))
      continue;      // "dot product can overflow and there is no accuracy limit"
    if (bnd == 0) {  // "All products in the dot product are zero"
      if (ref != 0 || imp != 0) fail(i, at + "the bound is 0 but the reference or the implementation is not");
      continue;
    }
    if (!std::isfinite(imp)) {
      fail(i, at + "the implementation is not finite (" + std::to_string(imp) + ")");
      continue;
    }
    const double out_err_bnd = std::max(bnd * std::ldexp(1.0, -1 - frac), unit_min);
    const double err = ((Rational(imp) - ref) / Rational(out_err_bnd)).convert_to<double>();
    v.errors[static_cast<std::size_t>(i)] = err;
    v.error_sum += err;
    v.error_sum_squares += err * err;
    if (std::abs(err) > lim.abs)
      fail(i, at + "|out_err| = " + std::to_string(std::abs(err)) + " exceeds " + std::to_string(lim.abs));
  }
  if (v.pass && v.bias_limit > 0 && std::abs(v.error_sum) > v.bias_limit)
    fail(-1, "error bias |sum out_err| = " + std::to_string(std::abs(v.error_sum)) + " exceeds " +
                 std::to_string(v.bias_limit));
  if (v.pass && v.error_sum_squares > v.variance_limit)
    fail(-1, "error variance sum out_err^2 = " + std::to_string(v.error_sum_squares) + " exceeds " +
                 std::to_string(v.variance_limit));
  return v;
}

std::int64_t ulp_distance(DType out, std::uint64_t implementation_bits, std::uint64_t reference_bits) {
  if (!is_float(out)) throw InputError("ulp_distance: " + std::string(name(out)) + " is not a float format");
  const int bits = info(out).bits;
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  // Sign-magnitude bit patterns in value order: consecutive finite values differ by 1 (-0 == +0).
  auto ordered = [&](std::uint64_t b) {
    const auto magnitude = static_cast<std::int64_t>(b & (sign - 1));
    return (b & sign) ? -magnitude : magnitude;
  };
  for (const std::uint64_t b : {implementation_bits, reference_bits})
    if (!decode_float(out, b).is_finite()) throw InputError("ulp_distance: both values must be finite");
  const std::int64_t d = ordered(implementation_bits) - ordered(reference_bits);
  return d < 0 ? -d : d;
}

}  // namespace qc
