#include "oracles/float_conv2d.hpp"

#include "oracles/format.hpp"
#include "oracles/qlinear.hpp"  // float_grid_label
#include "qconform/error.hpp"

#include <string>

namespace qc {

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
