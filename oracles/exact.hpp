// Exact numbers for the slow oracle path: arbitrary-precision integers and rationals.
// Boost.Multiprecision on its GMP backend: cpp_rational (boost::rational over cpp_int) costs
// several microseconds per comparison, which made validating the fast path on 10^7 elements
// impractical; mpq/mpz are the same exact numbers, an order of magnitude faster.
#pragma once

#include <boost/multiprecision/gmp.hpp>

#include <cstdint>
#include <string>

namespace qc {

using BigInt = boost::multiprecision::mpz_int;
using Rational = boost::multiprecision::mpq_rational;

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
