#include "backends/cpu_ref/mx.hpp"

#include "backends/cpu_ref/float8.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace qc::cpu_ref {
namespace {

// The element formats of OCP MX v1.0 table 1: code bits, fraction bits, smallest normal exponent,
// emax_elem, largest magnitude (MXINT8: k / 64 with |k| <= 127).
struct MxElem {
  int bits, mbits, emin, emax;
  double max;
  bool integer;
};

MxElem elem(MxFormat f) {
  switch (f) {
    case MxFormat::mxfp8_e4m3:
      return {8, 3, -6, 8, 448.0, false};
    case MxFormat::mxfp8_e5m2:
      return {8, 2, -14, 15, 57344.0, false};
    case MxFormat::mxfp6_e3m2:
      return {6, 2, -2, 4, 28.0, false};
    case MxFormat::mxfp6_e2m3:
      return {6, 3, 0, 2, 7.5, false};
    case MxFormat::mxfp4:
    case MxFormat::nvfp4:
      return {4, 1, 0, 2, 6.0, false};
    case MxFormat::mxint8:
      return {8, 6, 0, 0, 127.0 / 64.0, true};
  }
  return {8, 3, -6, 8, 448.0, false};
}

// The block of each element: blocks of `bs` along axis `a` of `shape`, numbered row-major in the
// shape with that dimension replaced by its block count.
std::vector<std::int64_t> block_numbers(const Shape& shape, int axis, std::int64_t bs, std::int64_t& count) {
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(shape.size()) : axis);
  std::int64_t inner = 1, total = 1;
  for (std::size_t k = a + 1; k < shape.size(); ++k) inner *= shape[k];
  for (const std::int64_t d : shape) total *= d;
  const std::int64_t dim = shape[a], nb = (dim + bs - 1) / bs;
  count = total / dim * nb;
  std::vector<std::int64_t> out(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) {
    const std::int64_t c = (i / inner) % dim, outer = i / (inner * dim), in = i % inner;
    out[static_cast<std::size_t>(i)] = (outer * nb + c / bs) * inner + in;
  }
  return out;
}

// The f32 bits' biased exponent and mantissa.
void f32_fields(float v, int& biased, std::uint32_t& mantissa) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  biased = static_cast<int>((b >> 23) & 0xFF);
  mantissa = b & 0x7FFFFF;
}

// The shared exponent of a block (nullopt: the NaN scale), from the float amax as each library does.
std::optional<int> shared_exponent(double amax, const MxElem& e, MxScaleRule rule) {
  if (!std::isfinite(amax)) return std::nullopt;
  int x;
  if (amax == 0) {
    x = -127;
  } else if (rule == MxScaleRule::rceil) {
    // descale = amax * (1 / max) in float; the E8M0 byte is the biased exponent, plus one for any
    // mantissa bit (for an f32 subnormal: above 2^-127, i.e. mantissa > 0x400000).
    const float descale = static_cast<float>(amax) * (1.0f / static_cast<float>(e.max));
    int biased;
    std::uint32_t mant;
    f32_fields(descale, biased, mant);
    x = biased + (biased == 0 ? (mant > 0x400000 ? 1 : 0) : (mant != 0 ? 1 : 0)) - 127;
  } else {
    int fl = std::ilogb(amax);
    const double significand = std::ldexp(amax, -fl);  // [1, 2)
    if (rule == MxScaleRule::ceil && significand != 1.0) fl += 1;
    if (rule == MxScaleRule::even && significand >= 2.0 - std::ldexp(1.0, -(e.mbits + 1))) fl += 1;
    x = fl - e.emax;
  }
  if (x > 127) return std::nullopt;
  return std::max(x, -127);
}

// v rounded onto the element grid (ties to even with nearbyint, or away with round), saturating.
double round_element(double v, const MxElem& e, RoundingMode m) {
  const double a = std::fabs(v);
  if (a == 0) return v;
  const int q = e.integer ? -6 : std::max(std::ilogb(a), e.emin) - e.mbits;
  const double scaled = std::ldexp(a, -q);
  const double n = m == RoundingMode::rna ? std::round(scaled) : std::nearbyint(scaled);
  return std::copysign(std::min(std::ldexp(n, q), e.max), v);
}

// E2M1 by a search of its eight magnitudes: the nearest, ties to the even code (NVFP4's elements).
double nearest_e2m1(double v, RoundingMode m) {
  static const double grid[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::min(std::fabs(v), 6.0);
  int best = 0;
  for (int k = 1; k < 8; ++k) {
    const double d = std::fabs(a - grid[k]), db = std::fabs(a - grid[best]);
    if (d < db || (d == db && (m == RoundingMode::rna || (k & 1) == 0))) best = k;
  }
  return std::copysign(grid[best], v);
}

float to_f32(double v) { return static_cast<float>(v); }  // one rounding, overflow to inf

// A tensor quantized: each element's value in the element format (NaN where the block's scale or
// NVFP4's step is not finite) and each block's scale (2^e, or NVFP4's E4M3 scale times g, exact in
// double: 4 x 24 bits); the value the format stores is element * scale.
struct Quantized {
  std::vector<double> element, scale;
  std::vector<std::int64_t> block;  // per element
  double value(std::int64_t i) const {
    const auto k = static_cast<std::size_t>(i);
    return element[k] * scale[static_cast<std::size_t>(block[k])];  // exact in double
  }
};

Quantized quantize_blocks(const MxQuantizeOp& op) {
  const MxBlocking& b = op.blocking;
  const MxElem e = elem(b.format);
  std::int64_t nblocks = 0;
  Quantized q;
  q.block = block_numbers(op.x.shape(), b.axis, b.block_size, nblocks);
  const std::vector<std::int64_t>& block = q.block;
  std::vector<double> amax(static_cast<std::size_t>(nblocks), 0.0);
  double tensor_amax = 0;
  for (std::int64_t i = 0; i < op.x.size(); ++i) {
    const double a = std::fabs(op.x.get_double(i));
    double& m = amax[static_cast<std::size_t>(block[static_cast<std::size_t>(i)])];
    if (std::isnan(a) || a > m || std::isnan(m)) m = std::isnan(m) ? m : a;
    if (std::isnan(a) || a > tensor_amax || std::isnan(tensor_amax))
      tensor_amax = std::isnan(tensor_amax) ? tensor_amax : a;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  q.element.assign(static_cast<std::size_t>(op.x.size()), nan);
  q.scale.assign(static_cast<std::size_t>(nblocks), nan);
  if (b.format != MxFormat::nvfp4) {
    std::vector<std::optional<int>> shared(static_cast<std::size_t>(nblocks));
    for (std::int64_t k = 0; k < nblocks; ++k) {
      shared[static_cast<std::size_t>(k)] = shared_exponent(amax[static_cast<std::size_t>(k)], e, op.scale_rule);
      if (const auto& s = shared[static_cast<std::size_t>(k)])
        q.scale[static_cast<std::size_t>(k)] = std::ldexp(1.0, *s);
    }
    for (std::int64_t i = 0; i < op.x.size(); ++i) {
      const std::optional<int>& s = shared[static_cast<std::size_t>(block[static_cast<std::size_t>(i)])];
      if (s)
        q.element[static_cast<std::size_t>(i)] =
            round_element(std::ldexp(op.x.get_double(i), -*s), e, op.element_rounding);
    }
    return q;
  }
  // NVFP4 as torchao's _nvfp4_quantize: every step in float.
  const float g = b.global_scale ? static_cast<float>(*b.global_scale) : static_cast<float>(tensor_amax) / 2688.0f;
  std::vector<float> s8(static_cast<std::size_t>(nblocks)), total(static_cast<std::size_t>(nblocks));
  for (std::int64_t k = 0; k < nblocks; ++k) {
    float s = static_cast<float>(amax[static_cast<std::size_t>(k)]) / 6.0f / g;
    if (s > 448.0f) s = 448.0f;  // NaN compares false and stays NaN
    if (s < 0.015625f) s = 0.015625f;
    s8[static_cast<std::size_t>(k)] =
        static_cast<float>(float8_to_double(DType::f8e4m3fn, float8_from_double(DType::f8e4m3fn, s, true)));
    total[static_cast<std::size_t>(k)] = g * s8[static_cast<std::size_t>(k)];
    q.scale[static_cast<std::size_t>(k)] =
        static_cast<double>(s8[static_cast<std::size_t>(k)]) * static_cast<double>(g);
  }
  for (std::int64_t i = 0; i < op.x.size(); ++i) {
    const auto k = static_cast<std::size_t>(block[static_cast<std::size_t>(i)]);
    const float d = static_cast<float>(op.x.get_double(i)) / total[k];
    if (!std::isfinite(d) || !std::isfinite(s8[k]) || !std::isfinite(g)) continue;
    q.element[static_cast<std::size_t>(i)] = nearest_e2m1(d, op.element_rounding);
  }
  return q;
}

}  // namespace

Tensor mx_quantize(const MxQuantizeOp& op) {
  const Quantized q = quantize_blocks(op);
  Tensor y(DType::f32, op.x.shape());
  for (std::int64_t i = 0; i < op.x.size(); ++i) y.set_double(i, to_f32(q.value(i)));
  return y;
}

// Plain loops over the quantized values (each element * its block scale, exact in double), the
// products and their sum in long double (64-bit significand: every product of two values is exact,
// and the sum is while it spans under 64 bits), + bias, rounded to f32 once (then to f16 / bf16).
Tensor mx_gemm(const MxGemmOp& op) {
  const Quantized qa = quantize_blocks(mx_gemm_quantize_request(op, MxGemmSide::a));
  const Quantized qb = quantize_blocks(mx_gemm_quantize_request(op, MxGemmSide::b));
  const Shape& as = op.a.values.shape();
  const Shape& bs = op.b.values.shape();
  const std::int64_t K = as.back(), rows = op.a.values.size() / K;
  const bool k_by_n = op.b_layout == WeightLayout::k_by_n;
  const std::int64_t N = k_by_n ? bs[1] : bs[0];
  Shape out_shape(as.begin(), as.end() - 1);
  out_shape.push_back(N);
  Tensor y(op.out, out_shape);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t n = 0; n < N; ++n) {
      long double acc = op.bias ? static_cast<long double>(op.bias->get_double(n)) : 0.0L;
      for (std::int64_t k = 0; k < K; ++k)
        acc += static_cast<long double>(qa.value(r * K + k)) *
               static_cast<long double>(qb.value(k_by_n ? k * N + n : n * K + k));
      y.set_double(r * N + n, static_cast<double>(static_cast<float>(acc)));
    }
  return y;
}

Tensor mx_dequantize(const MxDequantizeOp& op) {
  const MxBlocking& b = op.blocking;
  const MxElem e = elem(b.format);
  std::int64_t nblocks = 0;
  const std::vector<std::int64_t> block = block_numbers(op.elements.shape(), b.axis, b.block_size, nblocks);
  Tensor y(DType::f32, op.elements.shape());
  for (std::int64_t i = 0; i < op.elements.size(); ++i) {
    const auto code = static_cast<std::uint8_t>(op.elements.bits(i));
    double v;
    if (b.format == MxFormat::mxfp8_e4m3) {
      v = float8_to_double(DType::f8e4m3fn, code);
    } else if (b.format == MxFormat::mxfp8_e5m2) {
      v = float8_to_double(DType::f8e5m2, code);
    } else if (e.integer) {
      v = static_cast<std::int8_t>(code) / 64.0;
    } else {
      const int field = (code >> e.mbits) & ((1 << (e.bits - 1 - e.mbits)) - 1);
      const int frac = code & ((1 << e.mbits) - 1);
      const double mag = field == 0 ? std::ldexp(frac, e.emin - e.mbits)
                                    : std::ldexp(frac + (1 << e.mbits), field - 1 + e.emin - e.mbits);
      v = (code >> (e.bits - 1)) != 0 ? -mag : mag;
    }
    const auto sc = static_cast<std::uint8_t>(op.scales.bits(block[static_cast<std::size_t>(i)]));
    double scale;
    if (b.format == MxFormat::nvfp4)
      scale = float8_to_double(DType::f8e4m3fn, sc) * *b.global_scale;  // 4 x 24 bits: exact in double
    else
      scale = sc == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, sc - 127);
    y.set_double(i, to_f32(v * scale));
  }
  return y;
}

}  // namespace qc::cpu_ref
