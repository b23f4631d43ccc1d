// One table per enum: each value with its name (and, where it has one, a one-line description).
// name(), parse, the list of every value (kAll...), the Python enums and the schema's enum lists
// (checked by a test) all come from it, so a value is named in exactly one place.
//
// An enum E has a table when a function `enum_table(E)` returning std::span<const EnumEntry<E>>
// is declared in E's namespace (found by argument-dependent lookup), next to the enum:
//   inline constexpr EnumEntry<Clamp> kClampTable[] = {{Clamp::int_after, "int_after"}, ...};
//   constexpr std::span<const EnumEntry<Clamp>> enum_table(Clamp) { return kClampTable; }
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace qc {

template <class E>
struct EnumEntry {
  E value;
  std::string_view name;
  std::string_view description = {};
};

// The name of `v` in its table ("?" for a value the table does not hold).
template <class E>
constexpr std::string_view table_name(E v) {
  for (const EnumEntry<E>& e : enum_table(E{}))
    if (e.value == v) return e.name;
  return "?";
}

// The description of `v` in its table (empty where it has none).
template <class E>
constexpr std::string_view table_description(E v) {
  for (const EnumEntry<E>& e : enum_table(E{}))
    if (e.value == v) return e.description;
  return {};
}

// The value named `s`; empty for an unknown name.
template <class E>
constexpr std::optional<E> table_parse(std::string_view s) {
  for (const EnumEntry<E>& e : enum_table(E{}))
    if (e.name == s) return e.value;
  return std::nullopt;
}

// Every value, in table order.
template <class E>
constexpr auto table_values() {
  constexpr std::span<const EnumEntry<E>> t = enum_table(E{});
  std::array<E, t.size()> values{};
  for (std::size_t i = 0; i < t.size(); ++i) values[i] = t[i].value;
  return values;
}

// Every name, in table order, joined by ", " (for messages that list the choices).
template <class E>
std::string table_names() {
  std::string s;
  for (const EnumEntry<E>& e : enum_table(E{})) (s += s.empty() ? "" : ", ") += e.name;
  return s;
}

}  // namespace qc
