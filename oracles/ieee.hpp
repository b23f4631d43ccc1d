// Exact IEEE arithmetic in any format: each operation is computed on exact rationals and then
// rounded once to the target format, which is what an IEEE 754 implementation of that format
// returns in the default environment (round to nearest even). Also the exact "no rounding"
// arithmetic and int64 fixed point with truncation, so one evaluator serves every policy.
#pragma once

#include "oracles/format.hpp"

#include <optional>
#include <string>

namespace qc {

class Arith {
 public:
  static Arith exact() { return Arith(Kind::exact, DType::f64, 0); }
  static Arith in(DType t) { return Arith(Kind::floating, t, 0); }
  static Arith fixed64(int frac_bits) { return Arith(Kind::fixed, DType::f64, frac_bits); }

  bool is_exact() const { return kind_ == Kind::exact; }
  // Which arithmetic a fast path can run natively: the hardware's f32 or f64 (IEEE, default
  // environment), exact, f16 or bf16 emulated in f64 (`narrow`: every result rounded into
  // format()), or none of them (the f8 formats, which lack infinities, and fixed point).
  enum class Native : std::uint8_t { none, f32, f64, exact, narrow };
  Native native() const {
    if (kind_ == Kind::exact) return Native::exact;
    if (kind_ == Kind::floating && type_ == DType::f32) return Native::f32;
    if (kind_ == Kind::floating && type_ == DType::f64) return Native::f64;
    if (kind_ == Kind::floating && (type_ == DType::f16 || type_ == DType::bf16)) return Native::narrow;
    return Native::none;
  }
  // The float format of a floating arithmetic.
  DType format() const { return type_; }
  std::string name() const;

  // Round an exact value into this arithmetic.
  ExactFloat round(const Rational& v) const;
  ExactFloat convert(const ExactFloat& a) const;
  ExactFloat add(const ExactFloat& a, const ExactFloat& b) const;
  ExactFloat sub(const ExactFloat& a, const ExactFloat& b) const;
  ExactFloat mul(const ExactFloat& a, const ExactFloat& b) const;
  ExactFloat div(const ExactFloat& a, const ExactFloat& b) const;
  ExactFloat fma(const ExactFloat& a, const ExactFloat& b, const ExactFloat& c) const;

 private:
  enum class Kind : std::uint8_t { exact, floating, fixed };
  Arith(Kind k, DType t, int f) : kind_(k), type_(t), frac_bits_(f) {}
  Kind kind_;
  DType type_;
  int frac_bits_;
};

std::string to_string(const ExactFloat& v);

}  // namespace qc
