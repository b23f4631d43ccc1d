#include "backends/cpu_ref/qadd.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace qc::cpu_ref {
namespace qadd_ref {

__extension__ using i128 = __int128;

// A positive finite scale as m · 2^e with m odd (a binary float's significand, trailing zeros removed).
struct Dyadic {
  std::int64_t m = 0;
  int e = 0;
};
Dyadic dyadic(double s) {
  int e = 0;
  const double f = std::frexp(s, &e);  // s = f · 2^e, f in [0.5, 1)
  Dyadic d{static_cast<std::int64_t>(std::ldexp(f, 53)), e - 53};
  while ((d.m & 1) == 0) {
    d.m >>= 1;
    ++d.e;
  }
  return d;
}

int bits(std::uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// The exact quotient as num / den (den > 0) with both fitting 125 bits for every operand value of
// the formats, or the reason it does not.
struct Plan {
  Dyadic a, b, c;
  int e0 = 0;           // min(a.e, b.e): the common exponent of the numerator's terms
  int num_shift = 0;    // numerator · 2^num_shift when e0 >= c.e
  int den_shift = 0;    // denominator c.m · 2^den_shift when e0 < c.e
  std::string refusal;  // empty: the 128-bit path holds every value
};

Plan plan(const QAddOp& op) {
  Plan p;
  p.a = dyadic(op.a_params.scales.at(0));
  p.b = dyadic(op.b_params.scales.at(0));
  p.c = dyadic(op.output.scale);
  p.e0 = std::min(p.a.e, p.b.e);
  // |a - zA| <= 255 (8 bits); |b - zB| < 2^33 for an i32 B, else <= 255.
  const int da = 9, db = op.b.dtype() == DType::i32 ? 34 : 9;
  const int ta = bits(static_cast<std::uint64_t>(p.a.m)) + da + (p.a.e - p.e0);
  const int tb = bits(static_cast<std::uint64_t>(p.b.m)) + db + (p.b.e - p.e0);
  int num_bits = std::max(ta, tb) + 1;
  if (p.e0 >= p.c.e)
    p.num_shift = p.e0 - p.c.e;
  else
    p.den_shift = p.c.e - p.e0;
  num_bits += p.num_shift;
  if (num_bits > 125 || bits(static_cast<std::uint64_t>(p.c.m)) + p.den_shift > 125)
    p.refusal = "qadd: cpu-ref's 128-bit exact path needs the scales' exponents within about 2^60 of each other";
  return p;
}

// floor(num / den), den > 0, then the remainder decides: ties to even.
i128 round_half_even(i128 num, i128 den) {
  i128 q = num / den, r = num % den;
  if (r < 0) {
    r += den;
    --q;
  }
  const i128 twice = 2 * r;
  if (twice > den || (twice == den && (q & 1) != 0)) ++q;
  return q;
}

// B's flat index for A's element i: numpy broadcasting, B's dimensions aligned with A's last ones.
std::vector<std::int64_t> b_index(const Shape& a, const Shape& b) {
  const std::size_t lead = a.size() - b.size();
  std::int64_t n = 1;
  for (std::int64_t d : a) n *= d;
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::vector<std::int64_t> coord(a.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t j = 0;
    for (std::size_t d = 0; d < b.size(); ++d) j = j * b[d] + (b[d] == 1 ? 0 : coord[lead + d]);
    out[static_cast<std::size_t>(i)] = j;
    for (std::size_t d = a.size(); d-- > 0;) {  // next coordinate, row-major
      if (++coord[d] < a[d]) break;
      coord[d] = 0;
    }
  }
  return out;
}

}  // namespace qadd_ref

Availability supports_qadd(const QAddOp& op) {
  const DType a = op.a.dtype(), b = op.b.dtype(), c = op.output.format;
  if ((a != DType::i8 && a != DType::u8) || (b != DType::i8 && b != DType::u8 && b != DType::i32))
    return {false, "cpu-ref's qadd takes i8/u8 A and i8/u8/i32 B"};
  if (c != DType::i8 && c != DType::u8) return {false, "cpu-ref's qadd outputs i8 or u8"};
  if (op.output.kind != OutputKind::requantized || op.output.clamp)
    return {false, "cpu-ref's qadd output is requantized, without a fused activation"};
  if (op.a_params.scales.size() != 1 || op.b_params.scales.size() != 1)
    return {false, "cpu-ref's qadd takes per-tensor parameters"};
  if (op.b.rank() > op.a.rank()) return {false, "qadd: B's rank exceeds A's"};
  const std::size_t lead = op.a.shape().size() - op.b.shape().size();
  for (std::size_t d = 0; d < op.b.shape().size(); ++d)
    if (op.b.shape()[d] != 1 && op.b.shape()[d] != op.a.shape()[lead + d])
      return {false, "qadd: B " + shape_str(op.b.shape()) + " does not broadcast to A " + shape_str(op.a.shape())};
  const qadd_ref::Plan p = qadd_ref::plan(op);
  if (!p.refusal.empty()) return {false, p.refusal};
  return {};
}

Tensor run_qadd(const QAddOp& op) {
  using qadd_ref::i128;
  const qadd_ref::Plan p = qadd_ref::plan(op);
  if (!p.refusal.empty()) throw InputError(p.refusal);
  const std::int64_t za = op.a_params.zero_points.empty() ? 0 : op.a_params.zero_points[0];
  const std::int64_t zb = op.b_params.zero_points.empty() ? 0 : op.b_params.zero_points[0];
  const std::int64_t zc = op.output.zero_point;
  const i128 den = static_cast<i128>(p.c.m) << p.den_shift;
  const std::vector<std::int64_t> bi = qadd_ref::b_index(op.a.shape(), op.b.shape());
  Tensor y(op.output.format, op.a.shape());
  const std::int64_t lo = int_min(op.output.format), hi = int_max(op.output.format);
  for (std::int64_t i = 0; i < op.a.size(); ++i) {
    const i128 ta = static_cast<i128>(p.a.m) * (op.a.get_int(i) - za) << (p.a.e - p.e0);
    const i128 tb = static_cast<i128>(p.b.m) * (op.b.get_int(bi[static_cast<std::size_t>(i)]) - zb) << (p.b.e - p.e0);
    const i128 num = (ta + tb) * (static_cast<i128>(1) << p.num_shift);
    const i128 q = qadd_ref::round_half_even(num, den) + zc;
    y.set_int(i, static_cast<std::int64_t>(std::clamp<i128>(q, lo, hi)));
  }
  return y;
}

}  // namespace qc::cpu_ref
