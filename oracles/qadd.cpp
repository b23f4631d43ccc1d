#include "oracles/qadd.hpp"

#include "oracles/ieee.hpp"
#include "oracles/rounding.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

namespace qc {
namespace qadd_impl {

struct Bounds {
  std::int64_t lo, hi;
};

Rational exact_value(std::int64_t a, std::int64_t b, const QAddParams& p) {
  return (Rational(p.a_scale) * (a - p.a_zero_point) + Rational(p.b_scale) * (b - p.b_zero_point)) /
         Rational(p.out_scale);
}

Label label_of(const Rational& v, Bounds r, std::int64_t zc) {
  const Rational w = v + zc, half(1, 2);
  if (w >= Rational(r.hi) + half || w <= Rational(r.lo) - half) return Label::saturated;
  Fraction f;
  const BigInt fl = floor_with_fraction(v, f);
  if (f == Fraction::half) return Label::tie;
  return abs(v - Rational(fl) - half) <= Rational(kNearTieDistance) ? Label::near_tie : Label::clear;
}

std::int64_t ideal(const Rational& v, std::int64_t zc, Bounds r, RoundingMode m) {
  const BigInt q = round_to_integer(v, m) + zc;
  if (q < r.lo) return r.lo;
  if (q > r.hi) return r.hi;
  return q.convert_to<std::int64_t>();
}

// ---- ort_mlas_avx2: every step one f32 operation, exactly rounded (oracles/ieee.hpp) -------------

const Arith& f32() {
  static const Arith a = Arith::in(DType::f32);
  return a;
}
ExactFloat f32_of(const Rational& v) { return f32().round(v); }

// cvtps2dq under the default MXCSR: ties to even; NaN or outside int32: the integer indefinite.
std::int64_t cvtps2dq(const ExactFloat& t) {
  constexpr std::int64_t kIndefinite = INT32_MIN;
  if (!t.is_finite()) return kIndefinite;
  const BigInt r = round_to_integer(t.value, RoundingMode::rne);
  if (r < INT32_MIN || r > INT32_MAX) return kIndefinite;
  return r.convert_to<std::int64_t>();
}

std::int64_t ort_mlas_avx2(std::int64_t a, std::int64_t b, const QAddParams& p, Bounds r, bool b_scalar) {
  const Arith& A = f32();
  const ExactFloat sc = f32_of(Rational(p.out_scale));
  const ExactFloat ra = A.div(f32_of(Rational(p.a_scale)), sc), rb = A.div(f32_of(Rational(p.b_scale)), sc);
  // (float)ZeroPointC - (ScaleRatio_AC * ZeroPointA + ScaleRatio_BC * ZeroPointB): each int32 zero
  // point converted to float (exact: |zp| < 2^24), then one rounding per operation.
  const ExactFloat za = f32_of(Rational(p.a_zero_point)), zb = f32_of(Rational(p.b_zero_point));
  ExactFloat fixed = A.sub(f32_of(Rational(p.out_zero_point)), A.add(A.mul(ra, za), A.mul(rb, zb)));
  const ExactFloat fa = f32_of(Rational(a)), fb = f32_of(Rational(b));
  ExactFloat t;
  if (b_scalar) {
    fixed = A.add(fixed, A.mul(fb, rb));
    t = A.fma(fa, ra, fixed);
  } else {
    t = A.fma(fa, ra, A.fma(fb, rb, fixed));
  }
  // _mm256_packs_epi32 saturates to int16, then _mm256_packs_epi16 / _mm256_packus_epi16 to the
  // output type: together a clamp to the output type's range.
  return std::clamp(cvtps2dq(t), r.lo, r.hi);
}

// ---- xnnpack_vadd ----------------------------------------------------------------------------------

struct XnnpackAddParams {
  std::int64_t a_multiplier, b_multiplier, bias;
  int shift;
};

XnnpackAddParams xnnpack_params(const QAddParams& p) {
  const float ra = static_cast<float>(p.a_scale) / static_cast<float>(p.out_scale);
  const float rb = static_cast<float>(p.b_scale) / static_cast<float>(p.out_scale);
  for (const float v : {ra, rb})
    if (!(std::fabs(v) >= 0x1p-10f && std::fabs(v) < 0x1p+8f))
      throw InputError("qadd: the xnnpack_vadd scheme requires 2^-10 <= s_in / s_out < 2^8, got " + std::to_string(v));
  int exponent = 0;
  (void)std::frexp(std::max(std::fabs(ra), std::fabs(rb)), &exponent);  // m = f·2^e, f in [0.5, 1)
  XnnpackAddParams x;
  x.shift = 20 - (exponent - 1);  // 20 - floor(log2 m), in [12, 30]
  // lrintf(r·2^shift): the scaling is exact (an exponent add), then ties to even.
  x.a_multiplier = std::lrint(std::ldexp(static_cast<double>(ra), x.shift));
  x.b_multiplier = std::lrint(std::ldexp(static_cast<double>(rb), x.shift));
  x.bias = (std::int64_t{1} << (x.shift - 1)) - x.a_multiplier * p.a_zero_point - x.b_multiplier * p.b_zero_point;
  return x;
}

std::int64_t xnnpack_vadd(std::int64_t a, std::int64_t b, const QAddParams& p, Bounds r) {
  const XnnpackAddParams x = xnnpack_params(p);
  const std::int64_t acc = x.bias + a * x.a_multiplier + b * x.b_multiplier;  // |acc| < 2^31 for 8-bit a, b
  const std::int64_t out = (acc >> x.shift) + p.out_zero_point;               // math_asr_s32: floor
  return std::clamp(out, r.lo, r.hi);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InputError("qadd: " + what);
}

}  // namespace qadd_impl

QAddParams qadd_params(const QAddOp& op) {
  auto one = [](const QuantParams& q, const char* which) {
    qadd_impl::require(q.scales.size() == 1 && q.zero_points.size() <= 1 && !q.axis && q.block_size == 0,
                       std::string(which) + " takes one scale and zero point (per tensor)");
    return std::pair{q.scales[0], q.zero_point(0)};
  };
  qadd_impl::require(op.output.kind == OutputKind::requantized && !op.output.clamp,
                     "the output is requantized, without a fused activation");
  QAddParams p;
  std::tie(p.a_scale, p.a_zero_point) = one(op.a_params, "A");
  std::tie(p.b_scale, p.b_zero_point) = one(op.b_params, "B");
  p.out_scale = op.output.scale;
  p.out_zero_point = op.output.zero_point;
  return p;
}

QAddElement qadd_element(std::int64_t a, std::int64_t b, const QAddParams& p, DType out, const AddPolicy& policy,
                         bool b_scalar) {
  qadd_impl::require(out == DType::i8 || out == DType::u8, "the output is i8 or u8, got " + std::string(name(out)));
  qadd_impl::require(
      p.out_zero_point >= int_min(out) && p.out_zero_point <= int_max(out),
      "the output zero point " + std::to_string(p.out_zero_point) + " is outside " + std::string(name(out)));
  for (const double s : {p.a_scale, p.b_scale, p.out_scale})
    qadd_impl::require(std::isfinite(s) && s > 0, "scales must be finite and positive, got " + std::to_string(s));
  const qadd_impl::Bounds r{int_min(out), int_max(out)};
  QAddElement e;
  const Rational v = qadd_impl::exact_value(a, b, p);
  e.ideal = v + p.out_zero_point;
  e.label = qadd_impl::label_of(v, r, p.out_zero_point);
  switch (policy.scheme) {
    case AddScheme::ideal:
      e.q = qadd_impl::ideal(v, p.out_zero_point, r, policy.rounding);
      break;
    case AddScheme::ort_mlas_avx2:
      e.q = qadd_impl::ort_mlas_avx2(a, b, p, r, b_scalar);
      break;
    case AddScheme::xnnpack_vadd:
      e.q = qadd_impl::xnnpack_vadd(a, b, p, r);
      break;
  }
  return e;
}

bool qadd_b_folded(const Shape& a, const Shape& b) {
  std::size_t d = a.size();
  while (d > 0 && a[d - 1] == 1) --d;  // trailing 1s merge into the span
  if (d == 0) return false;            // A has one element: one call, nothing broadcast
  const std::size_t axis = d - 1, lead = a.size() - b.size();
  return axis < lead || b[axis - lead] == 1;
}

std::vector<std::int64_t> qadd_broadcast_index(const Shape& a, const Shape& b) {
  qadd_impl::require(b.size() <= a.size(),
                     "B's rank " + std::to_string(b.size()) + " exceeds A's " + std::to_string(a.size()));
  const std::size_t lead = a.size() - b.size();
  for (std::size_t d = 0; d < b.size(); ++d)
    qadd_impl::require(b[d] == 1 || b[d] == a[lead + d], "B " + shape_str(b) + " does not broadcast to A " +
                                                             shape_str(a) + " (numpy rule, trailing dimensions)");
  std::int64_t n = 1;
  for (std::int64_t d : a) n *= d;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i, j = 0, stride = 1;
    for (std::size_t d = a.size(); d-- > lead;) {
      const std::int64_t c = rest % a[d];
      rest /= a[d];
      const std::int64_t bd = b[d - lead];
      j += (bd == 1 ? 0 : c) * stride;
      stride *= bd;
    }
    idx[static_cast<std::size_t>(i)] = j;
  }
  return idx;
}

QAddResult qadd(const Tensor& a, const Tensor& b, const QAddParams& p, DType out, const AddPolicy& policy) {
  const DType ta = a.dtype(), tb = b.dtype();
  qadd_impl::require(ta == DType::i8 || ta == DType::u8, "A is i8 or u8, got " + std::string(name(ta)));
  qadd_impl::require(tb == DType::i8 || tb == DType::u8 || tb == DType::i32,
                     "B is i8, u8 or i32, got " + std::string(name(tb)));
  qadd_impl::require(p.a_zero_point >= int_min(ta) && p.a_zero_point <= int_max(ta),
                     "A's zero point " + std::to_string(p.a_zero_point) + " is outside " + std::string(name(ta)));
  qadd_impl::require(p.b_zero_point >= int_min(tb) && p.b_zero_point <= int_max(tb),
                     "B's zero point " + std::to_string(p.b_zero_point) + " is outside " + std::string(name(tb)));
  qadd_impl::require(policy.scheme != AddScheme::xnnpack_vadd || tb != DType::i32,
                     "the xnnpack_vadd scheme adds 8-bit operands only (B is i32)");
  const std::vector<std::int64_t> bi = qadd_broadcast_index(a.shape(), b.shape());
  QAddResult r;
  r.q = Tensor(out, a.shape());
  const bool b_scalar = qadd_b_folded(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const QAddElement e =
        qadd_element(a.get_int(i), b.get_int(bi[static_cast<std::size_t>(i)]), p, out, policy, b_scalar);
    r.q.set_int(i, e.q);
    r.ideal.push_back(e.ideal);
    r.labels.push_back(e.label);
  }
  return r;
}

}  // namespace qc
