#include "backends/cpu_ref/formats.hpp"

#include "qconform/error.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace qc::cpu_ref {
namespace {

// A binary float format: p significant bits (the hidden one included), the smallest normal
// exponent, the bias, whether it has infinities, and its largest finite value. The figures are the
// formats' definitions: IEEE 754 binary16; bfloat16 (f32's exponent, 8 significant bits); OCP 8-bit
// floating point (E4M3: no infinity, S.1111.111 is NaN, largest 448; E5M2: IEEE-like, largest 57344).
struct Layout {
  int p;
  int emin;
  int bias;
  int exp_bits;
  bool has_inf;
  double max;
  std::uint64_t nan;  // the quiet NaN cpu-ref writes
};

const Layout& layout(DType t) {
  static const Layout f16{11, -14, 15, 5, true, 65504.0, 0x7e00};
  static const Layout bf16{8, -126, 127, 8, true, 0x1.fep127, 0x7fc0};
  static const Layout e4m3fn{4, -6, 7, 4, false, 448.0, 0x7f};
  static const Layout e5m2{3, -14, 15, 5, true, 57344.0, 0x7e};
  switch (t) {
    case DType::f16:
      return f16;
    case DType::bf16:
      return bf16;
    case DType::f8e4m3fn:
      return e4m3fn;
    case DType::f8e5m2:
      return e5m2;
    default:
      throw InputError("cpu-ref: " + std::string(name(t)) + " is not a narrow float format");
  }
}

}  // namespace

double round_to_format(DType t, double v) {
  if (t == DType::f64) return v;
  if (t == DType::f32) return static_cast<double>(static_cast<float>(v));
  const Layout& l = layout(t);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(v)) return nan;
  if (std::isinf(v)) return l.has_inf ? v : nan;
  if (v == 0) return v;
  // The quantum (one unit in the last place) at |v|'s binade, never below the subnormal quantum;
  // |v| / quantum is exact (a power-of-two scaling inside double's range), and nearbyint rounds it
  // to an integer ties to even (the default rounding mode).
  const int e = std::max(std::ilogb(v), l.emin);
  const int quantum = e - (l.p - 1);
  const double r = std::ldexp(std::nearbyint(std::ldexp(std::fabs(v), -quantum)), quantum);
  if (r > l.max) return l.has_inf ? std::copysign(std::numeric_limits<double>::infinity(), v) : nan;
  return std::copysign(r, v);
}

std::uint64_t format_bits(DType t, double v) {
  if (t == DType::f64) return std::bit_cast<std::uint64_t>(v);
  if (t == DType::f32) return std::bit_cast<std::uint32_t>(static_cast<float>(v));
  const Layout& l = layout(t);
  const int mant_bits = l.p - 1;
  if (std::isnan(v)) return l.nan;
  const std::uint64_t sign = std::signbit(v) ? std::uint64_t{1} << (l.exp_bits + mant_bits) : 0;
  const std::uint64_t exp_ones = (std::uint64_t{1} << l.exp_bits) - 1;
  if (std::isinf(v)) return sign | (exp_ones << mant_bits);
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int e = std::ilogb(a);
  if (e < l.emin)  // subnormal: a = m * 2^(emin - mant_bits), exponent field 0
    return sign | static_cast<std::uint64_t>(std::ldexp(a, mant_bits - l.emin));
  const auto m = static_cast<std::uint64_t>(std::ldexp(a, mant_bits - e));  // [2^mant_bits, 2^p)
  return sign | (static_cast<std::uint64_t>(e + l.bias) << mant_bits) | (m - (std::uint64_t{1} << mant_bits));
}

Tensor unpack_nibbles(const Tensor& packed, DType nibble_type, const Shape& shape, const Int4Packing& packing) {
  // The elements as (outer, position along the packing axis, inner): flat packing is one axis of
  // every element. Element l of an axis sits in byte l / 2 of its slice, in the nibble l % 2 names.
  std::int64_t outer = 1, length = numel(shape), inner = 1;
  if (packing.axis) {
    const int rank = static_cast<int>(shape.size());
    const int axis = resolve_axis(*packing.axis, rank);
    outer = 1;
    inner = 1;
    for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
    for (int d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];
    length = shape[static_cast<std::size_t>(axis)];
  }
  const std::int64_t bytes_per_slice = (length + 1) / 2;
  Tensor out(nibble_type, shape);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < length; ++k)
      for (std::int64_t in = 0; in < inner; ++in) {
        const std::int64_t byte = packed.get_int((o * bytes_per_slice + k / 2) * inner + in);
        const bool high = (k % 2 == 1) == (packing.nibbles == NibbleOrder::low_first);
        const std::int64_t nibble = (high ? byte >> 4 : byte) & 0xF;
        out.set_int((o * length + k) * inner + in, nibble_type == DType::i4 && nibble >= 8 ? nibble - 16 : nibble);
      }
  return out;
}

}  // namespace qc::cpu_ref
