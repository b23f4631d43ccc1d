// Exact numbers for the slow oracle path: arbitrary-precision integers and rationals.
// Header-only Boost.Multiprecision (cpp_int), so no GMP is needed at run time.
#pragma once

#include <boost/multiprecision/cpp_int.hpp>

#include <cstdint>
#include <string>

namespace qc {

using BigInt = boost::multiprecision::cpp_int;
using Rational = boost::multiprecision::cpp_rational;

// 2^e as an exact rational, for any sign of e.
Rational pow2(int e);

// floor(log2(|r|)) for r != 0.
int floor_log2(const Rational& r);

// Exact decimal text of a rational with up to `max_digits` fraction digits; a trailing "..."
// marks truncation (every dyadic rational has a finite decimal expansion).
std::string to_decimal(const Rational& r, int max_digits = 60);

// C99 hexadecimal float text ("0x1.8p-1") of a dyadic rational; "" if r is not dyadic.
std::string to_hexfloat(const Rational& r);

}  // namespace qc
