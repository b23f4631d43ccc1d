// The body of the ideal requantize row kernel (requantize_rows.hpp), included by one source file per
// ISA, each compiled with its own target flags. Everything here has internal linkage (an unnamed
// namespace), so the builds never meet at link time; the includer defines only its entry point.
#pragma once

#include "oracles/requantize_rows.hpp"
#include "oracles/rounding.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

namespace qc::requantize_rows {
namespace {

// rounds_up_bits for a fraction that is zero or neither zero nor one half (no tie: parity and the
// tie rules never matter), as a double 0 or 1 so the kernel's selects stay one width.
template <RoundingMode M>
[[gnu::always_inline]] inline double rounds_up_value(bool zero, double above, bool negative) {
  const double up = above > 0.0 ? 1.0 : 0.0;
  const double neg = negative ? 1.0 : 0.0;
  switch (M) {
    case RoundingMode::rne:
    case RoundingMode::rna:
    case RoundingMode::rhu:
    case RoundingMode::rhd:
      return up;  // rounds_up_bits: f_above (f_half = 0)
    case RoundingMode::rtz:
      return zero ? 0.0 : neg;  // (1 ^ f_zero) & floor_is_negative
    case RoundingMode::floor:
      return 0.0;
    case RoundingMode::ceil:
      return zero ? 0.0 : 1.0;  // 1 ^ f_zero
  }
  return 0.0;
}

// Element i: the exact value is v = acc * M with M = s_a * s_b / s_out; the kernel computes
//     t = (double(acc) * row_factor) * column_factor,   column_factor = fl(s_b / s_out),
// three roundings of relative error at most u = 2^-53 each. The factors lie in [2^-500, 2^500] and
// |acc| < 2^51 (run_kernel checks it), so no product underflows or overflows and
// t = v (1 + d1)(1 + d2)(1 + d3), |di| <= u:
//     |t - v| <= |v| ((1 + u)^3 - 1) < 3.1 u |v| < 3.2 u |t| < |t| * 2^-51 = eps / 2,  eps = |t| * 2^-50.
// acc = 0 is settled by itself (v = 0: fraction zero, floor 0). Otherwise:
//   |t| > 2^40: |v| > 2^39, beyond every output range of at most 32 bits plus a zero point. t is
//     clamped to +-(2^40 + 1/4), whose floor and fraction then give saturation to hi or lo below
//     (the clamp saturates: the caller never passes Clamp::wrap).
//   otherwise fl = floor(t) exactly (|t| < 2^51: adding and subtracting 1.5 * 2^52 rounds t to an
//     integer) and d = t - (fl + 1/2). With D = v - (fl + 1/2) and |D - d| <= |v - t| < eps, when
//     |d| > eps, | |d| - 2^-10 | > eps and |d| + eps < 1/2 (each compare exact, or monotone in its
//     rounding; eps a power-of-two multiple of |t|): D has the sign of d and is nonzero (not a tie),
//     |D| < 1/2 (floor(v) = fl, the fraction not zero), and |D| <= 2^-10 exactly when |d| <= 2^-10
//     (the near-tie band). d is exact for |t| >= 1/4 (Sterbenz: fl + 1/2 lies in [t/2, 2t]); for
//     |t| < 1/4 it may round, but then v has the sign of t with |v| < 1/2, so floor(v) = fl (0 or -1),
//     and D and d, both of magnitude above 1/4 - 2^-50, have one sign and lie outside the band.
// Every other element is flagged. A settled element's floor and fraction class decide its rounding
// (rounds_up_value: a nonzero fraction that is not one half needs neither tie rule nor parity) and
// its label (requantize.hpp: saturated when v + zp >= hi + 1/2 or <= lo - 1/2).
//
// Written as compare-and-select code on doubles (no data-dependent branches, masks of one width) so
// the compiler vectorizes the loop whole.
template <RoundingMode M>
std::int64_t ideal_rows_kernel(const Params& p, const std::int64_t* __restrict acc, const double* __restrict cf,
                               std::int64_t* __restrict q, std::int64_t* __restrict code, std::int64_t n) {
  static_assert(static_cast<int>(Label::clear) == 0 && static_cast<int>(Label::near_tie) == 1 &&
                static_cast<int>(Label::saturated) == 3);
  constexpr double kMagic = 0x1.8p52;  // 1.5 * 2^52: x + kMagic - kMagic rounds |x| < 2^51 to an integer
  constexpr std::uint64_t kMagicBits = 0x4338000000000000ull;  // the bits of kMagic
  constexpr double kNear = kNearTieDistance, kBig = 0x1p40, kClamp = 0x1p40 + 0.25;
  const double rf = p.row_factor, zp = p.zp, lo = p.lo, hi = p.hi, zp_before = p.zp_before ? p.zp : 0.0;
  const double zp_after = p.zp_before ? 0.0 : p.zp;
  std::int64_t flagged = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    // |a| < 2^51 (the caller's precondition): a + 1.5 * 2^52 has a's value in the low bits of a
    // double's mantissa.
    const double ad = std::bit_cast<double>(static_cast<std::uint64_t>(acc[i]) + kMagicBits) - kMagic;
    const double t = (ad * rf) * cf[i];
    const double at = std::fabs(t);
    const bool zero = ad == 0.0, big = at > kBig;
    // NaN (an unusable factor) is flagged; 1/4 stands in for it (and gives acc = 0 its floor 0).
    double tc = t == t ? t : 0.25;
    tc = tc < -kClamp ? -kClamp : tc;
    tc = tc > kClamp ? kClamp : tc;
    const double r = (tc + kMagic) - kMagic;
    const double fl = r - (r > tc ? 1.0 : 0.0);
    const double d = tc - (fl + 0.5);
    const double dd = std::fabs(d);
    const double eps = at * 0x1p-50;
    const bool settled = zero | big | ((dd > eps) & (std::fabs(dd - kNear) > eps) & (dd + eps < 0.5));
    const double above = d > 0.0 ? 1.0 : 0.0;  // 0 for acc = 0 (d = -1/2 or -1/4)
    const double near = dd <= kNear ? 1.0 : 0.0;
    const double fz = fl + zp_before;  // the floor of the value that is rounded
    double qd = fz + rounds_up_value<M>(zero, above, fz < 0.0) + zp_after;
    qd = qd < lo ? lo : qd;
    qd = qd > hi ? hi : qd;
    // v + zp with its fraction replaced by 1/4 (below one half, or zero) or 3/4 (above): on the same
    // side of every half-integer as v + zp, so the same saturation.
    const double w = fl + zp + (d > 0.0 ? 0.75 : 0.25);
    const bool sat = (w > hi + 0.5) | (w < lo - 0.5);
    // Both integers below 2^31 in magnitude: converted with the same trick, which every build vectorizes.
    const double c = (sat ? 3.0 : near) + (settled ? 0.0 : 4.0);
    q[i] = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(qd + kMagic) - kMagicBits);
    code[i] = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(c + kMagic) - kMagicBits);
    flagged += settled ? 0 : 1;
  }
  return flagged;
}

std::int64_t kernel_for_mode(const Params& p, const std::int64_t* acc, const double* cf, std::int64_t* q,
                             std::int64_t* code, std::int64_t n) {
  switch (p.mode) {
    case RoundingMode::rne:
      return ideal_rows_kernel<RoundingMode::rne>(p, acc, cf, q, code, n);
    case RoundingMode::rna:
      return ideal_rows_kernel<RoundingMode::rna>(p, acc, cf, q, code, n);
    case RoundingMode::rhu:
      return ideal_rows_kernel<RoundingMode::rhu>(p, acc, cf, q, code, n);
    case RoundingMode::rhd:
      return ideal_rows_kernel<RoundingMode::rhd>(p, acc, cf, q, code, n);
    case RoundingMode::rtz:
      return ideal_rows_kernel<RoundingMode::rtz>(p, acc, cf, q, code, n);
    case RoundingMode::floor:
      return ideal_rows_kernel<RoundingMode::floor>(p, acc, cf, q, code, n);
    case RoundingMode::ceil:
      return ideal_rows_kernel<RoundingMode::ceil>(p, acc, cf, q, code, n);
  }
  for (std::int64_t i = 0; i < n; ++i) code[i] = kFlagged;
  return n;
}

// Narrowing loops of their own, built for the same ISA (the output values lie in the range).
template <class OutT>
void narrow(const std::int64_t* q, OutT* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<OutT>(q[i]);
}

std::int64_t run_kernel(const Params& p, const std::int64_t* acc, const double* cf, Row row) {
  // |acc| < 2^51 for every element, or the row is left to the caller.
  std::uint64_t outside = 0;
  for (std::int64_t i = 0; i < row.n; ++i)
    outside |= static_cast<std::uint64_t>(static_cast<std::uint64_t>(acc[i]) + (std::uint64_t{1} << 51) >=
                                          (std::uint64_t{1} << 52));
  if (outside != 0) return -1;
  const std::int64_t flagged = kernel_for_mode(p, acc, cf, row.q, row.code, row.n);
  switch (row.out) {
    case Out::s8:
      narrow(row.q, static_cast<std::int8_t*>(row.y), row.n);
      break;
    case Out::u8:
      narrow(row.q, static_cast<std::uint8_t*>(row.y), row.n);
      break;
    case Out::s16:
      narrow(row.q, static_cast<std::int16_t*>(row.y), row.n);
      break;
    case Out::u16:
      narrow(row.q, static_cast<std::uint16_t*>(row.y), row.n);
      break;
    case Out::s32:
      narrow(row.q, static_cast<std::int32_t*>(row.y), row.n);
      break;
  }
  auto* labels = reinterpret_cast<std::uint8_t*>(row.labels);
  for (std::int64_t i = 0; i < row.n; ++i) labels[i] = static_cast<std::uint8_t>(row.code[i] & 3);
  return flagged;
}

}  // namespace
}  // namespace qc::requantize_rows
