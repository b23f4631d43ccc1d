#include "cases/spec_fields.hpp"

#include <array>
#include <cmath>
#include <type_traits>

namespace qc {
namespace {

using json = nlohmann::json;

template <class>
struct MemberOf;
template <class P, class T>
struct MemberOf<T P::*> {
  using Policy = P;
  using Type = T;
};

// A choice among named values (an enum, or a compute format), read by its parse function.
template <auto M, auto Parse>
SpecField<typename MemberOf<decltype(M)>::Policy> choice(std::string_view name) {
  using P = typename MemberOf<decltype(M)>::Policy;
  using T = typename MemberOf<decltype(M)>::Type;
  return {name,
          [](const P& p) -> json {
            if constexpr (std::is_enum_v<T>)
              return std::string(qc::name(p.*M));
            else
              return to_string(p.*M);
          },
          [](const json& v, P& p) -> std::string {
            if (!v.is_string()) return "expected a string";
            const auto parsed = Parse(v.get<std::string>());
            if (!parsed) return "unknown value '" + v.get<std::string>() + "'";
            p.*M = *parsed;
            return {};
          }};
}

template <class P>
SpecField<P> narrow_range() {
  return {"narrow_range", [](const P& p) -> json { return p.narrow_range; },
          [](const json& v, P& p) -> std::string {
            if (!v.is_boolean()) return "expected true or false";
            p.narrow_range = v.get<bool>();
            return {};
          }};
}

// An explicit output sub-range [low, high]; an override can set one but not remove it.
template <class P>
SpecField<P> clip() {
  return {"clip",
          [](const P& p) -> json {
            return p.clip ? json{p.clip->first, p.clip->second} : json();
          },
          [](const json& v, P& p) -> std::string {
            const auto whole = [](const json& x) {
              return x.is_number_integer() || (x.is_number_float() && x.get<double>() == std::floor(x.get<double>()) &&
                                               std::fabs(x.get<double>()) < 9.2e18);
            };
            if (!v.is_array() || v.size() != 2 || !whole(v[0]) || !whole(v[1]))
              return "expected [low, high] (integers), got " + v.dump();
            const auto integer = [](const json& x) {
              return x.is_number_integer() ? x.get<std::int64_t>() : static_cast<std::int64_t>(x.get<double>());
            };
            const std::int64_t lo = integer(v[0]), hi = integer(v[1]);
            if (lo > hi) return "low > high";
            p.clip = std::pair{lo, hi};
            return {};
          }};
}

}  // namespace

std::span<const SpecField<QuantizePolicy>> quantize_fields() {
  static const std::array fields = {
      choice<&QuantizePolicy::order, parse_quantize_order>("order"),
      choice<&QuantizePolicy::compute, parse_compute_format>("compute"),
      choice<&QuantizePolicy::rounding, parse_rounding_mode>("rounding"),
      choice<&QuantizePolicy::clamp, parse_clamp>("clamp"),
      choice<&QuantizePolicy::nan, parse_nan_rule>("nan"),
      choice<&QuantizePolicy::cast, parse_int_cast>("cast"),
      narrow_range<QuantizePolicy>(),
      clip<QuantizePolicy>(),
  };
  return fields;
}

std::span<const SpecField<DequantizePolicy>> dequantize_fields() {
  static const std::array fields = {
      choice<&DequantizePolicy::order, parse_dequantize_order>("order"),
      choice<&DequantizePolicy::compute, parse_compute_format>("compute"),
  };
  return fields;
}

std::span<const SpecField<RequantizePolicy>> requantize_fields() {
  static const std::array fields = {
      SpecField<RequantizePolicy>{"scheme",
                                  [](const RequantizePolicy& p) -> json { return std::string(name(p.scheme)); },
                                  [](const json& v, RequantizePolicy& p) -> std::string {
                                    if (!v.is_string()) return "expected a string";
                                    const auto s = parse_requantize_scheme(v.get<std::string>());
                                    if (!s) return "unknown value '" + v.get<std::string>() + "'";
                                    p = requantize_policy_for(*s);
                                    return {};
                                  }},
      choice<&RequantizePolicy::multiplier_order, parse_multiplier_order>("multiplier_order"),
      choice<&RequantizePolicy::multiplier_format, parse_compute_format>("multiplier_format"),
      choice<&RequantizePolicy::derivation, parse_multiplier_derivation>("derivation"),
      choice<&RequantizePolicy::product_format, parse_compute_format>("product_format"),
      choice<&RequantizePolicy::zero_point, parse_zero_point_add>("zero_point"),
      choice<&RequantizePolicy::rounding, parse_rounding_mode>("rounding"),
      choice<&RequantizePolicy::clamp, parse_clamp>("clamp"),
      narrow_range<RequantizePolicy>(),
      clip<RequantizePolicy>(),
  };
  return fields;
}

}  // namespace qc
