#include "oracles/exact.hpp"

#include <algorithm>
#include <sstream>

namespace qc {

Rational pow2(int e) {
  // Built in place: 2^|e| is a single bit and 1/2^k needs no canonicalizing, so this skips the two
  // temporary BigInts and the gcd a Rational(num, den) costs (the slow path calls it per element).
  Rational r;
  mpq_ptr q = r.backend().data();
  if (e >= 0) {
    mpz_set_ui(mpq_numref(q), 0);
    mpz_setbit(mpq_numref(q), static_cast<mp_bitcnt_t>(e));
  } else {
    mpz_set_ui(mpq_numref(q), 1);
    mpz_set_ui(mpq_denref(q), 0);
    mpz_setbit(mpq_denref(q), static_cast<mp_bitcnt_t>(-e));
  }
  return r;
}

int floor_log2(const Rational& r) {
  BigInt n = abs(numerator(r));
  const BigInt& d = denominator(r);
  int e = static_cast<int>(msb(n)) - static_cast<int>(msb(d));
  // 2^e <= n/d < 2^(e+2) here; settle which.
  if (e >= 0) {
    if (n < (d << e)) --e;
  } else {
    if ((n << (-e)) < d) --e;
  }
  return e;
}

std::string to_decimal(const Rational& r, int max_digits) {
  BigInt n = numerator(r);
  const BigInt& d = denominator(r);
  std::string out;
  if (n < 0) {
    out += '-';
    n = -n;
  }
  BigInt ip = n / d;
  BigInt rem = n - ip * d;
  out += ip.str();
  if (rem == 0) return out;
  out += '.';
  for (int i = 0; i < max_digits && rem != 0; ++i) {
    rem *= 10;
    BigInt digit = rem / d;
    rem -= digit * d;
    out += static_cast<char>('0' + digit.convert_to<int>());
  }
  if (rem != 0) out += "...";
  return out;
}

std::string to_hexfloat(const Rational& r) {
  if (r == 0) return "0x0p+0";
  const BigInt& d = denominator(r);
  if ((d & (d - 1)) != 0) return "";  // not a power of two: not dyadic
  BigInt n = abs(numerator(r));
  int e = -static_cast<int>(msb(d));
  // Normalise to 1.xxx * 2^p: the mantissa bits after the leading one, padded to nibbles.
  const int top = static_cast<int>(msb(n));
  const int frac_bits = top;
  const int nibbles = (frac_bits + 3) / 4;
  BigInt frac = n - (BigInt(1) << top);
  frac <<= (nibbles * 4 - frac_bits);
  std::string hex = frac.str(0, std::ios_base::hex);
  if (static_cast<int>(hex.size()) < nibbles)
    hex = std::string(static_cast<std::size_t>(nibbles) - hex.size(), '0') + hex;
  while (!hex.empty() && hex.back() == '0') hex.pop_back();
  std::transform(hex.begin(), hex.end(), hex.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  const int p = e + top;
  std::ostringstream out;  // (string concatenation here trips GCC 12's -Wrestrict false positive)
  out << (numerator(r) < 0 ? "-0x1" : "0x1");
  if (!hex.empty()) out << '.' << hex;
  out << 'p' << (p >= 0 ? "+" : "") << p;
  return out.str();
}

}  // namespace qc
