#include "oracles/policy.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <array>

namespace qc {

OutputRange output_range(DType out, bool narrow_range,
                         const std::optional<std::pair<std::int64_t, std::int64_t>>& clip) {
  OutputRange r{int_min(out, narrow_range), int_max(out)};
  if (clip) {
    r.lo = std::max(r.lo, clip->first);
    r.hi = std::min(r.hi, clip->second);
  }
  if (r.lo > r.hi)
    throw InputError("the clip [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "] leaves no value of " +
                     std::string(name(out)));
  return r;
}

std::string to_string(const ComputeFormat& c) {
  switch (c.kind) {
    case ComputeFormat::Kind::exact:
      return "exact";
    case ComputeFormat::Kind::f64:
      return "f64";
    case ComputeFormat::Kind::f32:
      return "f32";
    case ComputeFormat::Kind::f16:
      return "f16";
    case ComputeFormat::Kind::bf16:
      return "bf16";
    case ComputeFormat::Kind::scale_type:
      return "scale_type";
    case ComputeFormat::Kind::input_type:
      return "input_type";
    case ComputeFormat::Kind::fixed64:
      return "fixed64:" + std::to_string(c.frac_bits);
  }
  return "?";
}

std::optional<ComputeFormat> parse_compute_format(std::string_view s) {
  using K = ComputeFormat::Kind;
  static constexpr std::pair<std::string_view, K> kNames[] = {{"exact", K::exact},
                                                              {"f64", K::f64},
                                                              {"f32", K::f32},
                                                              {"f16", K::f16},
                                                              {"bf16", K::bf16},
                                                              {"scale_type", K::scale_type},
                                                              {"input_type", K::input_type}};
  for (auto [n, k] : kNames)
    if (n == s) return ComputeFormat{k, 0};
  if (s.starts_with("fixed64:")) {
    const std::string rest(s.substr(8));
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int bits = std::stoi(rest);
    if (bits > 62) return std::nullopt;
    return ComputeFormat{K::fixed64, bits};
  }
  return std::nullopt;
}

std::string_view name(QuantizeOrder o) {
  switch (o) {
    case QuantizeOrder::div_then_add_int:
      return "div_then_add_int";
    case QuantizeOrder::div_add_float:
      return "div_add_float";
    case QuantizeOrder::recip_then_add_int:
      return "recip_then_add_int";
    case QuantizeOrder::recip_add_float:
      return "recip_add_float";
    case QuantizeOrder::fma_recip:
      return "fma_recip";
    case QuantizeOrder::round_then_add_float:
      return "round_then_add_float";
    case QuantizeOrder::recip_round_then_add_float:
      return "recip_round_then_add_float";
  }
  return "?";
}

std::string_view formula(QuantizeOrder o) {
  switch (o) {
    case QuantizeOrder::div_then_add_int:
      return "round(x/s) + zp";
    case QuantizeOrder::div_add_float:
      return "round(x/s + zp)";
    case QuantizeOrder::recip_then_add_int:
      return "round(x*(1/s)) + zp";
    case QuantizeOrder::recip_add_float:
      return "round(x*(1/s) + zp)";
    case QuantizeOrder::fma_recip:
      return "round(fma(x, 1/s, zp))";
    case QuantizeOrder::round_then_add_float:
      return "round(x/s) +. zp";
    case QuantizeOrder::recip_round_then_add_float:
      return "round(x*(1/s)) +. zp";
  }
  return "?";
}

std::optional<QuantizeOrder> parse_quantize_order(std::string_view s) {
  for (auto o : {QuantizeOrder::div_then_add_int, QuantizeOrder::div_add_float, QuantizeOrder::recip_then_add_int,
                 QuantizeOrder::recip_add_float, QuantizeOrder::fma_recip, QuantizeOrder::round_then_add_float,
                 QuantizeOrder::recip_round_then_add_float})
    if (name(o) == s || formula(o) == s) return o;
  return std::nullopt;
}

std::string_view name(Clamp c) {
  switch (c) {
    case Clamp::int_after:
      return "int_after";
    case Clamp::float_before:
      return "float_before";
    case Clamp::wrap:
      return "wrap";
  }
  return "?";
}

std::optional<Clamp> parse_clamp(std::string_view s) {
  for (auto c : {Clamp::int_after, Clamp::float_before, Clamp::wrap})
    if (name(c) == s) return c;
  return std::nullopt;
}

std::string_view name(NanRule n) {
  switch (n) {
    case NanRule::unspecified:
      return "unspecified";
    case NanRule::to_qmin:
      return "qmin";
    case NanRule::to_qmax:
      return "qmax";
    case NanRule::to_zero_point:
      return "zero_point";
    case NanRule::to_zero:
      return "zero";
    case NanRule::error:
      return "error";
    case NanRule::to_qmax_signed_qmin_unsigned:
      return "qmax_signed_qmin_unsigned";
  }
  return "?";
}

std::optional<NanRule> parse_nan_rule(std::string_view s) {
  for (auto n : {NanRule::unspecified, NanRule::to_qmin, NanRule::to_qmax, NanRule::to_zero_point, NanRule::to_zero,
                 NanRule::error, NanRule::to_qmax_signed_qmin_unsigned})
    if (name(n) == s) return n;
  return std::nullopt;
}

std::string_view name(IntCast c) {
  switch (c) {
    case IntCast::exact:
      return "exact";
    case IntCast::x86_int32:
      return "x86_int32";
    case IntCast::x86_int64:
      return "x86_int64";
  }
  return "?";
}

std::optional<IntCast> parse_int_cast(std::string_view s) {
  for (auto c : {IntCast::exact, IntCast::x86_int32, IntCast::x86_int64})
    if (name(c) == s) return c;
  return std::nullopt;
}

std::string_view name(DequantizeOrder o) {
  switch (o) {
    case DequantizeOrder::sub_int_then_mul:
      return "sub_int_then_mul";
    case DequantizeOrder::sub_float_then_mul:
      return "sub_float_then_mul";
    case DequantizeOrder::mul_then_sub:
      return "mul_then_sub";
    case DequantizeOrder::fma:
      return "fma";
  }
  return "?";
}

std::string_view formula(DequantizeOrder o) {
  switch (o) {
    case DequantizeOrder::sub_int_then_mul:
      return "(q - zp) * s, integer subtraction";
    case DequantizeOrder::sub_float_then_mul:
      return "(float(q) - float(zp)) * s";
    case DequantizeOrder::mul_then_sub:
      return "q*s - zp*s";
    case DequantizeOrder::fma:
      return "fma(q, s, -(zp*s))";
  }
  return "?";
}

std::optional<DequantizeOrder> parse_dequantize_order(std::string_view s) {
  for (auto o : {DequantizeOrder::sub_int_then_mul, DequantizeOrder::sub_float_then_mul, DequantizeOrder::mul_then_sub,
                 DequantizeOrder::fma})
    if (name(o) == s) return o;
  return std::nullopt;
}

}  // namespace qc
