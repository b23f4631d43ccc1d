// Weight packing: validation, panels for the micro-kernel, and the per-column epilogue terms
// (the zero-point column sums with the +128 compensation folded in, the f32 multipliers).
#include "backends/vnni/driver.hpp"
#include "backends/vnni/vnni.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

namespace qc::vnni {

namespace detail {
const KernelSet& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return scalar_kernels();
    case Isa::avx2_maddubs:
      return avx2_maddubs_kernels();
    case Isa::avxvnni:
      return avxvnni_kernels();
    case Isa::vnni512:
      return vnni512_kernels();
  }
  return scalar_kernels();
}
}  // namespace detail

AlignedBytes::AlignedBytes(std::size_t n)
    : p_(static_cast<std::int8_t*>(::operator new[](std::max<std::size_t>(n, 1), std::align_val_t{64}))), n_(n) {
  std::memset(p_.get(), 0, n);
}

void AlignedBytes::Free::operator()(std::int8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }

std::string_view name(ActivationType t) { return t == ActivationType::u8 ? "u8" : "s8"; }

std::string_view name(WeightType t) {
  switch (t) {
    case WeightType::s8:
      return "s8";
    case WeightType::s4:
      return "s4";
    case WeightType::u4:
      return "u4";
  }
  return "?";
}

std::string_view name(OutputKind k) {
  switch (k) {
    case OutputKind::int32:
      return "int32";
    case OutputKind::f32:
      return "f32";
    case OutputKind::u8:
      return "u8";
    case OutputKind::s8:
      return "s8";
  }
  return "?";
}

namespace {

struct Range {
  std::int64_t lo, hi;
};

Range range_of(ActivationType t) { return t == ActivationType::u8 ? Range{0, 255} : Range{-128, 127}; }

Range range_of(WeightType t) {
  switch (t) {
    case WeightType::s8:
      return {-128, 127};
    case WeightType::s4:
      return {-8, 7};
    case WeightType::u4:
      return {0, 15};
  }
  return {0, 0};
}

[[noreturn]] void fail(const std::string& what) { throw InputError("vnni: " + what); }

bool positive_finite(float v) { return std::isfinite(v) && v > 0.0f; }

void check_per_column(std::size_t size, std::int64_t n, bool allow_empty, const char* field) {
  const bool ok = (allow_empty && size == 0) || size == 1 || static_cast<std::int64_t>(size) == n;
  if (!ok)
    fail(std::string(field) + " has " + std::to_string(size) + " entries; expected " + (allow_empty ? "0, " : "") +
         "1 or " + std::to_string(n));
}

// The output clamp [lo, hi]: the type's range intersected with the fused clamp.
Range output_range(const OutputSpec& o) {
  Range r = o.kind == OutputKind::u8 ? Range{0, 255} : Range{-128, 127};
  if (o.min) r.lo = std::max<std::int64_t>(r.lo, *o.min);
  if (o.max) r.hi = std::min<std::int64_t>(r.hi, *o.max);
  return r;
}

void validate_quant(const QuantSpec& q, std::int64_t n) {
  const Range ar = range_of(q.a_type);
  if (q.a_zero_point < ar.lo || q.a_zero_point > ar.hi)
    fail("a_zero_point " + std::to_string(q.a_zero_point) + " is outside " + std::string(name(q.a_type)));
  if (!positive_finite(q.a_scale)) fail("a_scale must be positive and finite");
  check_per_column(q.w_scales.size(), n, false, "w_scales");
  for (std::size_t i = 0; i < q.w_scales.size(); ++i)
    if (!positive_finite(q.w_scales[i])) fail("w_scales[" + std::to_string(i) + "] must be positive and finite");
  check_per_column(q.w_zero_points.size(), n, true, "w_zero_points");
  const Range wr = range_of(q.w_type);
  for (std::size_t i = 0; i < q.w_zero_points.size(); ++i)
    if (q.w_zero_points[i] < wr.lo || q.w_zero_points[i] > wr.hi)
      fail("w_zero_points[" + std::to_string(i) + "] = " + std::to_string(q.w_zero_points[i]) + " is outside " +
           std::string(name(q.w_type)));
  if (!q.bias.empty() && static_cast<std::int64_t>(q.bias.size()) != n)
    fail("bias has " + std::to_string(q.bias.size()) + " entries; expected 0 or " + std::to_string(n));
  if (!q.bias_f32.empty()) {
    if (q.output.kind != OutputKind::f32) fail("bias_f32 is only for the f32 output");
    if (static_cast<std::int64_t>(q.bias_f32.size()) != n)
      fail("bias_f32 has " + std::to_string(q.bias_f32.size()) + " entries; expected 0 or " + std::to_string(n));
    for (float b : q.bias_f32)
      if (!std::isfinite(b)) fail("bias_f32 must be finite");
  }
  const OutputSpec& o = q.output;
  if (o.kind == OutputKind::u8 || o.kind == OutputKind::s8) {
    if (!positive_finite(o.scale)) fail("output.scale must be positive and finite");
    const Range full = o.kind == OutputKind::u8 ? Range{0, 255} : Range{-128, 127};
    if (o.zero_point < full.lo || o.zero_point > full.hi)
      fail("output.zero_point " + std::to_string(o.zero_point) + " is outside " + std::string(name(o.kind)));
    const Range r = output_range(o);
    if (r.lo > r.hi) fail("output clamp [min, max] is empty within " + std::string(name(o.kind)));
  }
}

std::int32_t wrap32(std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }

}  // namespace

namespace detail {
// Shared with conv2d.cpp (declared there): the checks that do not depend on the weight values.
void validate_quant_spec(const QuantSpec& q, std::int64_t n) { validate_quant(q, n); }
}  // namespace detail

PackedWeights pack_weights(const GemmParams& p, std::span<const std::int8_t> w, Isa isa) {
  if (p.n < 1 || p.k < 1)
    fail("N and K must be at least 1, got N = " + std::to_string(p.n) + ", K = " + std::to_string(p.k));
  const QuantSpec& q = p.quant;
  validate_quant(q, p.n);
  const std::int64_t N = p.n, K = p.k;
  if (static_cast<std::int64_t>(w.size()) != N * K)
    fail("weights have " + std::to_string(w.size()) + " values; expected N*K = " + std::to_string(N * K));
  const Range wr = q.weights_7bit ? Range{-64, 63} : range_of(q.w_type);
  auto weight = [&](std::int64_t k, std::int64_t n) -> std::int32_t {
    return w[static_cast<std::size_t>(p.w_layout == WeightLayout::k_by_n ? k * N + n : n * K + k)];
  };
  for (std::int64_t i = 0; i < N * K; ++i) {
    const std::int32_t v = w[static_cast<std::size_t>(i)];
    if (v < wr.lo || v > wr.hi)
      fail("weight " + std::to_string(i) + " (" +
           std::string(p.w_layout == WeightLayout::k_by_n ? "k_by_n" : "n_by_k") + " order) = " + std::to_string(v) +
           " is outside [" + std::to_string(wr.lo) + ", " + std::to_string(wr.hi) + "]" +
           (q.weights_7bit ? " (weights_7bit)" : ""));
  }

  const detail::KernelSet& ks = detail::kernels_for(isa);
  PackedWeights pw;
  pw.isa = isa;
  pw.params = p;
  pw.nr = ks.nr;
  pw.kgroups = (K + 3) / 4;
  pw.panels = (N + ks.nr - 1) / ks.nr;
  const std::int64_t nr = ks.nr, padded = pw.panels * nr;
  pw.panel_data = AlignedBytes(static_cast<std::size_t>(pw.panels * pw.kgroups * nr * 4));
  std::int8_t* dst = pw.panel_data.data();
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int64_t panel = n / nr, j = n % nr;
    for (std::int64_t k = 0; k < K; ++k)
      dst[((panel * pw.kgroups + k / 4) * nr + j) * 4 + k % 4] = static_cast<std::int8_t>(weight(k, n));
  }

  // Epilogue terms. za_u is the activation zero point in the kernel's u8 domain.
  const std::int64_t za_u = q.a_zero_point + (q.a_type == ActivationType::s8 ? 128 : 0);
  auto per_column = [](const auto& v, std::int64_t n) { return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(n)]; };
  pw.col_term.assign(static_cast<std::size_t>(padded), 0);
  pw.w_zp.assign(static_cast<std::size_t>(padded), 0);
  pw.scale.assign(static_cast<std::size_t>(padded), 0.0f);
  if (!q.bias_f32.empty()) pw.bias_f.assign(static_cast<std::size_t>(padded), 0.0f);
  for (std::int64_t n = 0; n < N; ++n) {
    const auto i = static_cast<std::size_t>(n);
    std::int64_t sum_w = 0;
    for (std::int64_t k = 0; k < K; ++k) sum_w += weight(k, n);
    const std::int64_t zw = q.w_zero_points.empty() ? 0 : per_column(q.w_zero_points, n);
    const std::int64_t bias = q.bias.empty() ? 0 : q.bias[i];
    // b - za_u·Σw + K·za_u·zw, reduced mod 2^32 (each term of the kernel's sum is).
    pw.col_term[i] = wrap32(bias - za_u * sum_w + wrap32(K * za_u) * zw);
    pw.w_zp[i] = static_cast<std::int32_t>(zw);
    pw.has_w_zp = pw.has_w_zp || zw != 0;
    // f32, one rounding per operation (this file is built with -ffp-contract=off).
    const float d = q.a_scale * per_column(q.w_scales, n);
    if (q.output.kind == OutputKind::f32) {
      pw.scale[i] = d;
    } else if (q.output.kind != OutputKind::int32) {
      pw.scale[i] = d / q.output.scale;
    }
    if (q.output.kind != OutputKind::int32 && !positive_finite(pw.scale[i]))
      fail("the f32 multiplier of column " + std::to_string(n) + " is " + std::to_string(pw.scale[i]) +
           " (s_a * s_w / s_out overflowed or underflowed)");
    if (!q.bias_f32.empty()) pw.bias_f[i] = q.bias_f32[i];
  }

  // Pair saturation under vpmaddubsw, for any u8 activation: pairs (2j, 2j+1), an odd K's last
  // element paired with a zero.
  for (std::int64_t n = 0; n < N && !pw.pair_saturation_possible; ++n) {
    for (std::int64_t k = 0; k < K; k += 2) {
      const std::int64_t w0 = weight(k, n), w1 = k + 1 < K ? weight(k + 1, n) : 0;
      const std::int64_t hi = 255 * (std::max<std::int64_t>(w0, 0) + std::max<std::int64_t>(w1, 0));
      const std::int64_t lo = 255 * (std::min<std::int64_t>(w0, 0) + std::min<std::int64_t>(w1, 0));
      if (hi > 32767 || lo < -32768) {
        pw.pair_saturation_possible = true;
        break;
      }
    }
  }
  return pw;
}

namespace detail {
std::vector<std::int8_t> unpack_int4(std::span<const std::uint8_t> packed, std::int64_t count, WeightType type,
                                     const char* where) {
  if (type == WeightType::s8) fail(std::string(where) + ": packed int4 weights need w_type s4 or u4");
  const std::int64_t bytes = (count + 1) / 2;
  if (static_cast<std::int64_t>(packed.size()) != bytes)
    fail(std::string(where) + ": packed int4 weights have " + std::to_string(packed.size()) + " bytes; expected " +
         std::to_string(bytes));
  std::vector<std::int8_t> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint8_t byte = packed[static_cast<std::size_t>(i / 2)];
    const int nibble = (i % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
    v[static_cast<std::size_t>(i)] =
        static_cast<std::int8_t>(type == WeightType::s4 && nibble >= 8 ? nibble - 16 : nibble);
  }
  return v;
}
}  // namespace detail

PackedWeights pack_weights_int4(const GemmParams& p, std::span<const std::uint8_t> packed, Isa isa) {
  if (p.n < 1 || p.k < 1) fail("N and K must be at least 1");
  const std::vector<std::int8_t> w = detail::unpack_int4(packed, p.n * p.k, p.quant.w_type, "pack_weights_int4");
  return pack_weights(p, w, isa);
}

}  // namespace qc::vnni
