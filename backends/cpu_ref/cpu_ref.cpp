#include "backends/cpu_ref/cpu_ref.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qc {
namespace {

// ONNX QuantizeLinear as a plain C++ reference writes it: divide in the scale's type, round
// half to even with nearbyint (default FP environment), add the zero point in int, saturate.
// For f16/bf16 scales the division runs in float and is rounded back to the scale's format:
// float carries more than 2p+2 bits for both, so that equals a native f16/bf16 division.
template <class Out>
void quantize_linear(const QuantizeOp& op, Tensor& y) {
  const Tensor& x = op.x;
  const QuantParams& p = op.params;
  const ParamIndexer index(p, x.shape());
  const auto lo = static_cast<std::int64_t>(int_min(op.out));
  const auto hi = static_cast<std::int64_t>(int_max(op.out));
  const bool narrow_scale = p.scale_dtype == DType::f16 || p.scale_dtype == DType::bf16;
  Out* out = y.data<Out>();
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t k = index(i);
    double q;
    if (p.scale_dtype == DType::f64) {
      q = x.get_double(i) / p.scales[static_cast<std::size_t>(k)];
    } else {
      float xf = static_cast<float>(x.get_double(i));
      const auto sf = static_cast<float>(p.scales[static_cast<std::size_t>(k)]);
      if (narrow_scale) xf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, xf)));
      float qf = xf / sf;
      if (narrow_scale) qf = static_cast<float>(float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, qf)));
      q = qf;
    }
    std::int64_t v;
    if (std::isnan(q)) {
      v = lo;  // ONNX leaves NaN open; a reference has to pick something
    } else {
      const double r = std::nearbyint(std::clamp(q, -1e18, 1e18));
      v = static_cast<std::int64_t>(r) + p.zero_point(k);
    }
    out[i] = static_cast<Out>(std::clamp(v, lo, hi));
  }
}

// ONNX DequantizeLinear as a reference writes it: static_cast<T>(q - zp) * scale in the scale's
// type T, then stored in the output format. The converted difference times a 24-bit (or
// narrower) significand is exact in double, so one cast gives T's rounded product.
Tensor dequantize_linear(const DequantizeOp& op) {
  const QuantParams& p = op.params;
  const ParamIndexer index(p, op.q.shape());
  Tensor y(op.out, op.q.shape());
  auto in_scale_type = [&](double v) {
    if (p.scale_dtype == DType::f64) return v;
    if (p.scale_dtype == DType::f32) return static_cast<double>(static_cast<float>(v));
    return float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, v));
  };
  for (std::int64_t i = 0; i < op.q.size(); ++i) {
    const std::int64_t k = index(i);
    const double diff = in_scale_type(static_cast<double>(op.q.get_int(i) - p.zero_point(k)));
    const long double prod = static_cast<long double>(diff) * static_cast<long double>(p.scales[static_cast<std::size_t>(k)]);
    const double in_t = p.scale_dtype == DType::f64 ? static_cast<double>(prod) : in_scale_type(static_cast<double>(prod));
    y.set_bits(i, double_to_float_bits(op.out, in_t));
  }
  return y;
}

// round(acc * s_in * s_w / s_out) + zp with ties to even, exactly: each f32 scale is m * 2^e with
// a 24-bit integer m, so the value is (acc * m_in * m_w) / m_out * 2^(e_in + e_w - e_out), an
// integer division in 128-bit arithmetic.
std::int64_t requantize_exact(std::int64_t acc, double s_in, double s_w, double s_out) {
  auto split = [](double s, std::int64_t& m) {
    int e;
    const double f = std::frexp(s, &e);  // s = f * 2^e, f in [0.5, 1)
    m = static_cast<std::int64_t>(std::ldexp(f, 53));
    return e - 53;
  };
  std::int64_t mi, mw, mo;
  const int e = split(s_in, mi) + split(s_w, mw) - split(s_out, mo);
  // Strip trailing zero bits so the products stay well inside 128 bits.
  auto strip = [](std::int64_t& m) {
    int z = 0;
    while (m != 0 && (m & 1) == 0) m >>= 1, ++z;
    return z;
  };
  const int shift = e + strip(mi) + strip(mw) - strip(mo);
  __int128 num = static_cast<__int128>(acc) * mi * mw;
  __int128 den = mo;
  if (num == 0) return 0;
  if (shift >= 0) {
    int bits = 0;
    for (__int128 a = num < 0 ? -num : num; a != 0; a >>= 1) ++bits;
    // |value| >= 2^(bits - 1 + shift - 24): past 2^40 it saturates every output format.
    if (bits + shift > 100) return num > 0 ? (std::int64_t{1} << 40) : -(std::int64_t{1} << 40);
    num <<= shift;
  } else {
    if (-shift > 100) return 0;  // |value| < 2^-20: rounds to 0
    den <<= -shift;
  }
  __int128 q = num / den, r = num % den;
  if (r < 0) q -= 1, r += den;  // floor division
  const __int128 twice = 2 * r;
  if (twice > den || (twice == den && (q & 1) != 0)) q += 1;
  if (q > (__int128{1} << 40)) return std::int64_t{1} << 40;
  if (q < -(__int128{1} << 40)) return -(std::int64_t{1} << 40);
  return static_cast<std::int64_t>(q);
}

Tensor requantize(const RequantizeOp& op) {
  const RequantizeParams& p = op.params;
  Tensor y(op.out, op.acc.shape());
  std::int64_t inner = 1, dim = 1;
  if (p.axis) {
    const int a = *p.axis < 0 ? *p.axis + op.acc.rank() : *p.axis;
    dim = op.acc.shape()[static_cast<std::size_t>(a)];
    for (int d = a + 1; d < op.acc.rank(); ++d) inner *= op.acc.shape()[static_cast<std::size_t>(d)];
  }
  for (std::int64_t i = 0; i < op.acc.size(); ++i) {
    const auto c = static_cast<std::size_t>((i / inner) % dim);
    const double w = p.weight_scales[p.weight_scales.size() == 1 ? 0 : c];
    const std::int64_t zp =
        p.output_zero_points.empty() ? 0 : p.output_zero_points[p.output_zero_points.size() == 1 ? 0 : c];
    const std::int64_t v = requantize_exact(op.acc.get_int(i), p.input_scale, w, p.output_scale) + zp;
    y.set_int(i, std::clamp(v, int_min(op.out), int_max(op.out)));
  }
  return y;
}

}  // namespace

Availability CpuRefBackend::supports(const OpRequest& op) const {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (!is_float(q->params.scale_dtype) || q->params.scale_dtype == DType::f8e4m3fn ||
        q->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref quantizes with f64, f32, f16 or bf16 scales only"};
    if (info(q->out).bits == 32) return {false, "cpu-ref does not quantize to i32"};
    return {};
  }
  if (const auto* d = std::get_if<DequantizeOp>(&op)) {
    if (d->params.scale_dtype == DType::f8e4m3fn || d->params.scale_dtype == DType::f8e5m2)
      return {false, "cpu-ref dequantizes with f64, f32, f16 or bf16 scales only"};
    return {};
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    if (r->params.scale_dtype != DType::f32) return {false, "cpu-ref requantizes with f32 scales only"};
    return {};
  }
  return {false, "op not implemented by cpu-ref"};
}

Tensor CpuRefBackend::run(const OpRequest& op) {
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return dequantize_linear(*d);
  if (const auto* r = std::get_if<RequantizeOp>(&op)) return requantize(*r);
  const auto& q = std::get<QuantizeOp>(op);
  Tensor y(q.out, q.x.shape());
  switch (q.out) {
    case DType::i8:
    case DType::i4: quantize_linear<std::int8_t>(q, y); break;
    case DType::u8:
    case DType::u4: quantize_linear<std::uint8_t>(q, y); break;
    case DType::i16: quantize_linear<std::int16_t>(q, y); break;
    case DType::u16: quantize_linear<std::uint16_t>(q, y); break;
    default: throw std::invalid_argument("cpu-ref: unsupported output " + std::string(qc::name(q.out)));
  }
  return y;
}

}  // namespace qc
