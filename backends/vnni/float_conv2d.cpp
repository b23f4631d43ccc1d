// The x86 backend's float convolution: im2col per group feeding the weight-only GEMM's f32 FMA
// kernel (float_gemm.cpp), as CPU libraries run a float convolution they have no direct kernel
// for (MLAS MlasConv's im2col path: MlasConvIm2Col, then MlasSgemmOperation). The im2col rows and
// the GEMM rows split across the worker threads; every output is written by one thread, so the
// result does not depend on the thread count.
#include "backends/vnni/vnni.hpp"
#include "qconform/parallel.hpp"

#include <string>
#include <vector>

namespace qc::vnni {
std::pair<std::int64_t, std::int64_t> float_conv2d_output_size(const FloatConv2dParams& p) {
  return conv_output_size(p, "vnni float conv2d");
}

void float_conv2d(Isa isa, const FloatConv2dParams& p, const float* input, const float* w_oihw, const float* bias,
                  float* out) {
  const auto [oh_n, ow_n] = float_conv2d_output_size(p);
  const std::int64_t C = p.channels, H = p.height, W = p.width, OC = p.out_channels;
  const std::int64_t cg = C / p.groups, ocg = OC / p.groups, KH = p.kernel_h, KW = p.kernel_w;
  const std::int64_t K = cg * KH * KW, M = p.batch * oh_n * ow_n;
  const auto in_at = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return p.nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
  };
  const auto out_at = [&](std::int64_t n, std::int64_t oc, std::int64_t oh, std::int64_t ow) {
    return p.nchw ? ((n * OC + oc) * oh_n + oh) * ow_n + ow : ((n * oh_n + oh) * ow_n + ow) * OC + oc;
  };
  std::vector<float> a(static_cast<std::size_t>(M * K)), w(static_cast<std::size_t>(K * ocg)),
      y(static_cast<std::size_t>(M * ocg));
  for (std::int64_t g = 0; g < p.groups; ++g) {
    // Row m = (n, oh, ow) of the im2col matrix: the taps of that output pixel in OIHW order.
    parallel_ranges(M, 256, [&](std::int64_t m0, std::int64_t m1) {
      for (std::int64_t m = m0; m < m1; ++m) {
        const std::int64_t n = m / (oh_n * ow_n), oh = m / ow_n % oh_n, ow = m % ow_n;
        float* row = a.data() + m * K;
        for (std::int64_t c = 0; c < cg; ++c)
          for (std::int64_t kh = 0; kh < KH; ++kh)
            for (std::int64_t kw = 0; kw < KW; ++kw) {
              const std::int64_t h = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const std::int64_t x = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              const bool inside = h >= 0 && h < H && x >= 0 && x < W;
              row[(c * KH + kh) * KW + kw] = inside ? input[in_at(n, g * cg + c, h, x)] : 0.0f;
            }
      }
    });
    // The group's weights [OCg, K] (OIHW rows) as the GEMM's [K, OCg].
    for (std::int64_t j = 0; j < ocg; ++j)
      for (std::int64_t k = 0; k < K; ++k) w[static_cast<std::size_t>(k * ocg + j)] = w_oihw[(g * ocg + j) * K + k];
    float_gemm(isa, a.data(), M, K, w.data(), ocg, bias ? bias + g * ocg : nullptr, y.data());
    for (std::int64_t m = 0; m < M; ++m) {
      const std::int64_t n = m / (oh_n * ow_n), oh = m / ow_n % oh_n, ow = m % ow_n;
      for (std::int64_t j = 0; j < ocg; ++j)
        out[out_at(n, g * ocg + j, oh, ow)] = y[static_cast<std::size_t>(m * ocg + j)];
    }
  }
}

}  // namespace qc::vnni
