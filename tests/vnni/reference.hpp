// The independent model the vnni kernels are tested against: int64 arithmetic written from the
// contract in backends/vnni/vnni.hpp, sharing no code with the kernels (no packing, no blocking,
// no compensation terms -- the exact sum, plus what vpmaddubsw loses, wrapped to int32 once).
#pragma once

#include "backends/vnni/vnni.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace qc::vnni {
// gtest prints a parameter through PrintTo found by argument-dependent lookup.
inline void PrintTo(Isa isa, std::ostream* os) { *os << name(isa); }
}  // namespace qc::vnni

namespace qc::vnni::test {

inline std::int64_t sat16(std::int64_t v) { return std::clamp<std::int64_t>(v, -32768, 32767); }
inline std::int32_t wrap32(std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }

// One output's accumulator, from its operands in K order (a: the activation values as given, u8 or
// s8; w: weight values), as `isa` computes it:
//   exact = bias + Σ_k (a_k - za)(w_k - zw)
//   avx2_maddubs adds, per adjacent pair (2j, 2j+1) of the +128-shifted activations au,
//   sat16(p) - p where p = au_2j·w_2j + au_2j+1·w_2j+1 (an odd K pairs its last element with 0)
// and the result is exact mod 2^32.
struct DotModel {
  std::int64_t exact = 0;            // bias + Σ (a - za)(w - zw)
  std::int64_t saturation_loss = 0;  // avx2_maddubs only
  std::int32_t value(Isa isa) const { return wrap32(exact + (isa == Isa::avx2_maddubs ? saturation_loss : 0)); }
};

inline DotModel dot_model(std::span<const std::int32_t> a, std::span<const std::int32_t> w, ActivationType at,
                          std::int64_t za, std::int64_t zw, std::int64_t bias) {
  DotModel d;
  d.exact = bias;
  for (std::size_t k = 0; k < a.size(); ++k) d.exact += (a[k] - za) * (w[k] - zw);
  const std::int64_t shift = at == ActivationType::s8 ? 128 : 0;
  for (std::size_t k = 0; k < a.size(); k += 2) {
    std::int64_t p = (a[k] + shift) * w[k];
    if (k + 1 < a.size()) p += (a[k + 1] + shift) * w[k + 1];
    d.saturation_loss += sat16(p) - p;
  }
  return d;
}

// The epilogue from the contract, one f32 operation at a time (built with -ffp-contract=off).
struct Epilogue {
  OutputKind kind = OutputKind::int32;
  float a_scale = 1, w_scale = 1, out_scale = 1, bias_f = 0;
  bool has_bias_f = false;
  std::int32_t out_zp = 0, lo = 0, hi = 0;

  // The output element as a double (exact for every kind): int32, the f32 value, or the integer.
  double apply(std::int32_t acc) const {
    switch (kind) {
      case OutputKind::int32:
        return acc;
      case OutputKind::f32: {
        const float d = a_scale * w_scale;
        float y = static_cast<float>(acc) * d;
        if (has_bias_f) y = y + bias_f;
        return y;
      }
      case OutputKind::u8:
      case OutputKind::s8: {
        const float r = (a_scale * w_scale) / out_scale;
        float y = static_cast<float>(acc) * r;
        y = std::min(std::max(y, static_cast<float>(lo - out_zp)), static_cast<float>(hi - out_zp));
        return static_cast<double>(static_cast<std::int32_t>(std::nearbyint(y)) + out_zp);
      }
    }
    return 0;
  }
};

inline Epilogue epilogue_for(const QuantSpec& q, std::int64_t column) {
  auto at = [&](const auto& v) { return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(column)]; };
  Epilogue e;
  e.kind = q.output.kind;
  e.a_scale = q.a_scale;
  e.w_scale = at(q.w_scales);
  e.out_scale = q.output.scale;
  e.has_bias_f = !q.bias_f32.empty();
  if (e.has_bias_f) e.bias_f = q.bias_f32[static_cast<std::size_t>(column)];
  e.out_zp = q.output.zero_point;
  e.lo = q.output.kind == OutputKind::u8 ? 0 : -128;
  e.hi = q.output.kind == OutputKind::u8 ? 255 : 127;
  if (q.output.min) e.lo = std::max(e.lo, *q.output.min);
  if (q.output.max) e.hi = std::min(e.hi, *q.output.max);
  return e;
}

// An output buffer of any kind, read back as doubles.
struct OutputBuffer {
  OutputKind kind;
  std::vector<std::int32_t> i32;
  std::vector<float> f32;
  std::vector<std::uint8_t> u8;
  std::vector<std::int8_t> s8;

  OutputBuffer(OutputKind k, std::size_t n, double fill = -77) : kind(k) {
    switch (k) {
      case OutputKind::int32:
        i32.assign(n, static_cast<std::int32_t>(fill));
        break;
      case OutputKind::f32:
        f32.assign(n, static_cast<float>(fill));
        break;
      case OutputKind::u8:
        u8.assign(n, static_cast<std::uint8_t>(static_cast<std::int32_t>(fill)));
        break;
      case OutputKind::s8:
        s8.assign(n, static_cast<std::int8_t>(fill));
        break;
    }
  }
  double at(std::size_t i) const {
    switch (kind) {
      case OutputKind::int32:
        return i32[i];
      case OutputKind::f32:
        return f32[i];
      case OutputKind::u8:
        return u8[i];
      case OutputKind::s8:
        return s8[i];
    }
    return 0;
  }
};

// Bitwise equality for doubles that hold f32 or integers (NaN never occurs here).
inline bool same(double x, double y) { return x == y && std::signbit(x) == std::signbit(y); }

}  // namespace qc::vnni::test
