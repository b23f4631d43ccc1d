#include "oracles/float_conv2d.hpp"

#include "oracles/format.hpp"
#include "oracles/qlinear.hpp"  // float_grid_label
#include "qconform/error.hpp"

#include "qconform/parallel.hpp"

#include <bit>
#include <climits>
#include <cmath>
#include <optional>
#include <string>

namespace qc {

namespace {

// A dyadic rational m * 2^e with |m| < 2^62 (every value of a float format is one).
struct Dyadic {
  std::int64_t m = 0;
  int e = 0;
  int bits() const { return m == 0 ? 0 : 64 - std::countl_zero(static_cast<std::uint64_t>(m < 0 ? -m : m)); }
};

std::optional<Dyadic> as_dyadic(const Rational& r) {
  if (r == 0) return Dyadic{};
  const BigInt& n = numerator(r);
  const BigInt& d = denominator(r);
  const auto top = msb(d);
  if (lsb(d) != top || msb(abs(n)) >= 62) return std::nullopt;
  Dyadic v{n.convert_to<std::int64_t>(), -static_cast<int>(top)};
  const int tz = std::countr_zero(static_cast<std::uint64_t>(v.m < 0 ? -v.m : v.m));
  v.m >>= tz;
  v.e += tz;
  return v;
}

// m as a BigInt, for the one Rational each output is made into.
BigInt big(unsigned __int128 m) {
  BigInt b(static_cast<std::uint64_t>(m >> 64));
  b <<= 64;
  b += static_cast<std::uint64_t>(m);
  return b;
}

// The operands on common binary scales: x_i = X_i 2^ex, w_k = W_k 2^ew, bias = B 2^(ex + ew), every
// sum of products fitting an __int128. Empty when a value is not dyadic or the exponents spread too
// far (the rational path then evaluates the convolution).
struct FixedPoint {
  std::vector<std::int64_t> x, w;
  std::vector<__int128> bias;
  int ex = 0, ew = 0;
};

std::optional<FixedPoint> fixed_point(const std::vector<Rational>& x, const std::vector<Rational>& w,
                                      const std::vector<Rational>& bias, std::int64_t depth) {
  std::vector<Dyadic> dx, dw, db;
  for (const auto* src : {&x, &w, &bias}) {
    auto& dst = src == &x ? dx : src == &w ? dw : db;
    dst.reserve(src->size());
    for (const Rational& r : *src) {
      const auto d = as_dyadic(r);
      if (!d) return std::nullopt;
      dst.push_back(*d);
    }
  }
  const auto min_e = [](const std::vector<Dyadic>& v, int fallback) {
    int e = INT32_MAX;
    for (const Dyadic& d : v)
      if (d.m != 0) e = std::min(e, d.e);
    return e == INT32_MAX ? fallback : e;
  };
  FixedPoint f;
  f.ew = min_e(dw, 0);
  f.ex = min_e(dx, 0);
  // The bias sits on the products' scale 2^(ex + ew): lower ex where a bias value is finer.
  const int eb = min_e(db, f.ex + f.ew);
  f.ex = std::min(f.ex, eb - f.ew);
  const auto top = [](const std::vector<Dyadic>& v, int scale) {
    int b = 0;
    for (const Dyadic& d : v)
      if (d.m != 0) b = std::max(b, d.bits() + d.e - scale);
    return b;
  };
  const int bx = top(dx, f.ex), bw = top(dw, f.ew), bb = top(db, f.ex + f.ew);
  const int depth_bits = 64 - std::countl_zero(static_cast<std::uint64_t>(depth + 1));
  if (bx > 62 || bw > 62 || std::max(bx + bw + depth_bits, bb) + 1 > 125) return std::nullopt;
  for (const Dyadic& d : dx) f.x.push_back(d.m == 0 ? 0 : d.m << (d.e - f.ex));
  for (const Dyadic& d : dw) f.w.push_back(d.m == 0 ? 0 : d.m << (d.e - f.ew));
  for (const Dyadic& d : db) f.bias.push_back(d.m == 0 ? 0 : static_cast<__int128>(d.m) << (d.e - f.ex - f.ew));
  return f;
}

// The convolution on the fixed-point operands: each output's sum and its bound Σ|x||w| + |bias| exact
// in __int128, made into a Rational once; outputs split over the worker threads by output channel.
void fixed_point_conv2d(const Conv2dShape& cs, const FixedPoint& f, FloatConv2dResult& r, DType out) {
  const std::int64_t K = cs.depth();
  const int e = f.ex + f.ew;
  parallel_ranges(cs.batch * cs.out_channels, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t no = begin; no < end; ++no) {
      const std::int64_t n = no / cs.out_channels, oc = no % cs.out_channels, g = oc / cs.group_out_channels;
      const std::int64_t* w = f.w.data() + oc * K;
      const __int128 b = f.bias.empty() ? 0 : f.bias[static_cast<std::size_t>(oc)];
      for (std::int64_t oh = 0; oh < cs.out_height; ++oh)
        for (std::int64_t ow = 0; ow < cs.out_width; ++ow) {
          __int128 acc = b;
          unsigned __int128 bound = static_cast<unsigned __int128>(b < 0 ? -b : b);
          for (std::int64_t k = 0; k < K; ++k) {
            const std::int64_t src = cs.tap_source(n, g, oh, ow, k);
            if (src < 0 || w[k] == 0) continue;  // a padded tap: the real 0
            const __int128 p = static_cast<__int128>(f.x[static_cast<std::size_t>(src)]) * w[k];
            acc += p;
            bound += static_cast<unsigned __int128>(p < 0 ? -p : p);
          }
          const std::int64_t o = cs.output_index(n, oc, oh, ow);
          const auto i = static_cast<std::size_t>(o);
          BigInt m = big(static_cast<unsigned __int128>(acc < 0 ? -acc : acc));
          if (acc < 0) m = -m;
          Rational v = e >= 0 ? Rational(m << e) : Rational(m, BigInt(1) << -e);
          r.y.set_bits(o, encode_float(out, ExactFloat::finite(v), RoundingMode::rne, Overflow::ieee));
          r.labels[i] = decode_float(out, r.y.bits(o)).is_finite() ? float_grid_label(v, out) : Label::saturated;
          // Σ|x||w| + |bias| to f64: the integer is exact, its conversion rounds once (RNE), the
          // power of two is exact unless the double under- or overflows, where the rational does it.
          const double bd = static_cast<double>(bound);
          const double scaled = std::ldexp(bd, e);
          r.bound[i] = std::isfinite(scaled) && (scaled == 0 || std::fabs(scaled) >= 0x1p-1022)
                           ? scaled
                           : round_to_format(DType::f64,
                                             e >= 0 ? Rational(big(bound) << e) : Rational(big(bound), BigInt(1) << -e))
                                 .value.convert_to<double>();
          r.exact[i] = std::move(v);
        }
    }
  });
}

}  // namespace

FloatConv2dResult float_conv2d_exact(const Conv2dShape& cs, const std::vector<Rational>& x,
                                     const std::vector<Rational>& w, const std::vector<Rational>& bias, DType out) {
  const std::int64_t K = cs.depth();
  if (static_cast<std::int64_t>(x.size()) != cs.batch * cs.channels * cs.height * cs.width ||
      static_cast<std::int64_t>(w.size()) != cs.out_channels * K ||
      (!bias.empty() && static_cast<std::int64_t>(bias.size()) != cs.out_channels))
    throw InputError("float_conv2d_exact: input, weight or bias sizes do not match the convolution's shape");
  if (!is_float(out)) throw InputError("float_conv2d_exact: the output format must be a float format");
  FloatConv2dResult r;
  r.kernel_size = K;
  for (const Rational& b : bias) r.nonzero_bias = r.nonzero_bias || b != 0;
  r.y = Tensor(out, cs.output_shape());
  const auto size = static_cast<std::size_t>(r.y.size());
  r.exact.resize(size);
  r.bound.resize(size);
  r.labels.resize(size);
  // Dyadic operands (every float value is one) whose sums fit 125 bits are summed in machine integers,
  // every output on its own (the same exact values); the rest in rationals.
  if (const auto f = fixed_point(x, w, bias, K)) {
    fixed_point_conv2d(cs, *f, r, out);
    return r;
  }
  for (std::int64_t n = 0; n < cs.batch; ++n)
    for (std::int64_t oc = 0; oc < cs.out_channels; ++oc)
      for (std::int64_t oh = 0; oh < cs.out_height; ++oh)
        for (std::int64_t ow = 0; ow < cs.out_width; ++ow) {
          const std::int64_t g = oc / cs.group_out_channels, e = cs.output_index(n, oc, oh, ow);
          Rational v = bias.empty() ? Rational(0) : bias[static_cast<std::size_t>(oc)];
          Rational b = bias.empty() ? Rational(0) : Rational(abs(bias[static_cast<std::size_t>(oc)]));
          for (std::int64_t k = 0; k < K; ++k) {
            const std::int64_t src = cs.tap_source(n, g, oh, ow, k);
            if (src < 0) continue;  // a padded tap: the real 0
            const Rational& xi = x[static_cast<std::size_t>(src)];
            const Rational& wi = w[static_cast<std::size_t>(oc * K + k)];
            v += xi * wi;
            b += Rational(abs(xi)) * Rational(abs(wi));
          }
          const auto i = static_cast<std::size_t>(e);
          r.y.set_bits(e, encode_float(out, ExactFloat::finite(v), RoundingMode::rne, Overflow::ieee));
          r.labels[i] = decode_float(out, r.y.bits(e)).is_finite() ? float_grid_label(v, out) : Label::saturated;
          r.bound[i] = round_to_format(DType::f64, b).value.convert_to<double>();
          r.exact[i] = std::move(v);
        }
  return r;
}

}  // namespace qc
