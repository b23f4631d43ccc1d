// XNNPACK (google/XNNPACK, the Debian libxnnpack0 build) as a qconform peer backend: `qconform run
// --plugin libqconform_xnnpack.so --backend xnnpack`. Every result comes out of an XNNPACK operator:
//
//   quantize     xnn_create_convert_nc_f32_qs8 / _f32_qu8 (f32 -> int8/uint8); per axis: one operator per
//                channel over that channel's strided elements
//   dequantize   xnn_create_convert_nc_qs8_f32 / _qu8_f32; per axis likewise
//   qgemm        xnn_create_fully_connected_nc_qs8 (int8, symmetric weights) / _qu8 (uint8, weight zero
//                point); per-channel int8 weights through xnn_create_convolution2d_nhwc_qc8 as a 1x1
//                convolution over R pixels (this version has no per-channel fully connected operator);
//                float activations first through the f32 -> q convert operator
//   qconv2d      xnn_create_convolution2d_nhwc_qs8 / _qu8 / _qc8 (NCHW requests transposed to NHWC)
//   requantize   a fully connected operator with one input channel whose input equals its zero point and
//                whose weights are 0: each accumulator enters as the bias, so the output is XNNPACK's
//                own requantization of exactly that int32 (one operator per channel of a per-axis request)
//
// Which requantization the operators use is decided at xnn_initialize by the CPU: on x86 this version
// (src/init.c, XNN_ARCH_X86_64 branch) selects *_minmax_fp32_* GEMM/IGEMM/DWCONV microkernels for qs8,
// qu8 and qc8 on every ISA level, i.e. lrintf(min((float)acc * scale, qmax - zp)) + zp with the f32
// scale input_scale * kernel_scale / output_scale (src/operators/fully-connected-nc.c,
// convolution-nhwc.c). The rndnu kernels are the ARM ones.
#include <qconform/backend.hpp>
#include <qconform/error.hpp>
#include <qconform/plugin.hpp>

#include "../host_isa.hpp"

#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#ifndef QCONFORM_XNNPACK_VERSION
#define QCONFORM_XNNPACK_VERSION "git 2022-02-16 ae108ef (Debian libxnnpack0 0.0~git20220216.ae108ef-2)"
#endif

namespace {

using qc::Availability;
using qc::DType;

// The microkernels src/init.c (ae108ef, x86 branch) installs on this CPU. cpuinfo's tests there read
// the same CPUID bits as __builtin_cpu_supports; XNN_PLATFORM_MOBILE is 0 on Linux.
std::string kernel_path() {
  __builtin_cpu_init();
  const bool skx = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (skx)
    return "qs8/qu8/qc8 GEMM: *_minmax_fp32_ukernel_4x16c8__avx512skx; f32->q8 convert: "
           "xnn_f32_qs8_vcvt_ukernel__avx512skx_x128 / qu8 _x128; q8->f32: *_vcvt_ukernel__avx512skx_x32";
  if (__builtin_cpu_supports("xop")) return "qs8/qu8/qc8 GEMM: *_minmax_fp32_ukernel_2x4c8__xop_ld64";
  if (__builtin_cpu_supports("avx2"))
    return "qs8/qu8/qc8 GEMM: *_minmax_fp32_ukernel_3x8c8__avx2; convert: *_vcvt_ukernel__avx2";
  if (__builtin_cpu_supports("avx")) return "qs8/qu8/qc8 GEMM: *_minmax_fp32_ukernel_2x4c8__avx_ld128";
  if (__builtin_cpu_supports("sse4.1")) return "qs8/qc8 GEMM: *_minmax_fp32_ukernel_3x4c8__sse41_ld64";
  return "qs8/qu8/qc8 GEMM: *_minmax_fp32_ukernel_3x4c8__sse2_ld64";
}

bool is_8bit(DType t) { return t == DType::u8 || t == DType::i8; }

// XNNPACK takes f32 scales and rejects zero, subnormal, infinite and NaN ones ("scale must be finite,
// normalized, and positive", every xnn_create_*): a request scale is usable when it is exactly such a float.
bool usable_scale(double s) {
  const auto f = static_cast<float>(s);
  return static_cast<double>(f) == s && f > 0.0f && std::isnormal(f);
}

// The f32 requantization scale exactly as the operators form it (fully-connected-nc.c, convolution-nhwc.c:
// `input_scale * kernel_scale / output_scale` in float), and why it is refused (empty when it is not).
std::string requantization_limit(double s_in, double s_w, double s_out) {
  if (!usable_scale(s_in) || !usable_scale(s_w) || !usable_scale(s_out))
    return "XNNPACK takes normal f32 scales; a scale here is not one exactly";
  const float r = static_cast<float>(s_in) * static_cast<float>(s_w) / static_cast<float>(s_out);
  if (r >= 256.0f) return "the requantization scale " + std::to_string(r) + " is >= 256 (xnn_create_* refuses it)";
  // params-init.c::xnn_init_qs8_conv_minmax_fp32_*_params: assert(scale >= 0x1.0p-32f).
  if (r < 0x1.0p-32f) return "the requantization scale is below 2^-32 (XNNPACK asserts scale >= 2^-32)";
  return {};
}

struct Op {
  xnn_operator_t op = nullptr;
  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (op) xnn_delete_operator(op);
  }
};

void check(xnn_status s, const char* what) {
  if (s != xnn_status_success)
    throw std::runtime_error(std::string(what) + " failed with xnn_status " + std::to_string(static_cast<int>(s)));
}

// XNNPACK microkernels may read up to XNN_EXTRA_BYTES past the end of an input (xnnpack.h).
template <class T>
std::vector<T> padded(std::size_t n) {
  return std::vector<T>(n + XNN_EXTRA_BYTES / sizeof(T) + 1);
}

// The channel structure of a per-axis parameter: element i belongs to channel (i / inner) % dim.
struct Channels {
  std::int64_t outer = 1, dim = 1, inner = 1;
};
Channels channels_of(const qc::Shape& shape, std::optional<int> axis_opt) {
  Channels c;
  std::int64_t total = qc::numel(shape);
  if (!axis_opt) {
    c.inner = total;
    return c;
  }
  const int rank = static_cast<int>(shape.size());
  const int axis = *axis_opt < 0 ? *axis_opt + rank : *axis_opt;
  c.dim = shape[static_cast<std::size_t>(axis)];
  for (int d = axis + 1; d < rank; ++d) c.inner *= shape[static_cast<std::size_t>(d)];
  c.outer = total / std::max<std::int64_t>(1, c.dim * c.inner);
  return c;
}

// ---- The backend -------------------------------------------------------------------------------

class XnnpackBackend : public qc::Backend {
 public:
  XnnpackBackend() : init_(xnn_initialize(nullptr)) {}
  ~XnnpackBackend() override {
    if (init_ == xnn_status_success) xnn_deinitialize();
  }

  std::string name() const override { return "xnnpack"; }
  std::string description() const override {
    return "XNNPACK " QCONFORM_XNNPACK_VERSION
           " operators: convert f32<->qs8/qu8, fully connected qs8/qu8, convolution qs8/qu8/qc8 "
           "(per-channel GEMM as a 1x1 qc8 convolution), requantize through a fully connected bias";
  }
  // x86 builds run the SIMD converts, whose NaN rule the versioned preset states (docs/peers.md).
  std::string claim() const override { return "xnnpack-fp32@2022.02-x86"; }
  Availability availability() const override {
    if (init_ != xnn_status_success)
      return {false, "xnn_initialize failed with xnn_status " + std::to_string(static_cast<int>(init_))};
    return {};
  }
  std::map<std::string, std::string> facts() const override {
    return {{"library", "XNNPACK"},
            {"version", QCONFORM_XNNPACK_VERSION},
            {"isa", qc::peers::host_isa()},
            {"kernel_path", kernel_path()},
            {"requantization",
             "fp32 (x86 init.c selects *_minmax_fp32_* for qs8, qu8 and qc8): min((float)acc * scale, qmax - zp), "
             "cvtps2dq (ties to even), + zp saturating, max(qmin)"},
            {"threads", "1 (no pthreadpool)"},
            {"compiler", __VERSION__}};
  }

  Availability supports(const qc::OpRequest& op) const override {
    if (const auto* q = std::get_if<qc::QuantizeOp>(&op)) return supports_quantize(*q);
    if (const auto* d = std::get_if<qc::DequantizeOp>(&op)) return supports_dequantize(*d);
    if (const auto* r = std::get_if<qc::RequantizeOp>(&op)) return supports_requantize(*r);
    if (const auto* g = std::get_if<qc::QGemmOp>(&op)) return supports_gemm(*g);
    if (const auto* c = std::get_if<qc::QConv2dOp>(&op)) return supports_conv(*c);
    if (std::holds_alternative<qc::ChooseQParamsOp>(op))
      return {false, "choose_qparams: not driven here (XNNPACK chooses parameters only inside its qd8 convert)"};
    if (std::holds_alternative<qc::Conv2dOp>(op))
      return {false, "conv2d: this peer runs XNNPACK's quantized operators only (no float convolution)"};
    if (std::holds_alternative<qc::QAddOp>(op))
      return {false,
              "qadd: this peer does not drive xnn_define_add2 yet (the xnnpack presets' add scheme, "
              "xnnpack_vadd, is the oracle's model of it)"};
    if (!std::holds_alternative<qc::WeightOnlyGemmOp>(op))
      return {false, std::string(qc::op_name(op)) + ": XNNPACK " QCONFORM_XNNPACK_VERSION
                                                    " has no MX/NVFP4 block-scaled operators"};
    return {false, "weight_only_gemm: XNNPACK " QCONFORM_XNNPACK_VERSION
                   " has no float-activation x integer-weight operator (no qd8/qc4w in this version)"};
  }

  qc::Tensor run(const qc::OpRequest& op) override {
    if (const auto* q = std::get_if<qc::QuantizeOp>(&op)) return run_quantize(*q);
    if (const auto* d = std::get_if<qc::DequantizeOp>(&op)) return run_dequantize(*d);
    if (const auto* r = std::get_if<qc::RequantizeOp>(&op)) return run_requantize(*r);
    if (const auto* g = std::get_if<qc::QGemmOp>(&op)) return run_gemm(*g);
    return run_conv(std::get<qc::QConv2dOp>(op));
  }

 private:
  xnn_status init_;

  // ---- quantize / dequantize ----

  static Availability supports_params(const qc::QuantParams& p, const char* op) {
    if (p.granularity() == qc::Granularity::blocked)
      return {false, std::string(op) + ": XNNPACK converts take one scale and zero point (no blocks)"};
    for (const double s : p.scales)
      if (!usable_scale(s))
        return {false,
                std::string(op) + ": XNNPACK takes normal f32 scales; " + std::to_string(s) + " is not one exactly"};
    return {};
  }

  static Availability supports_quantize(const qc::QuantizeOp& q) {
    if (q.x.dtype() != DType::f32)
      return {false, "quantize: this XNNPACK converts only f32 to qs8/qu8 (no f16/f64 input)"};
    if (!is_8bit(q.out)) return {false, "quantize: XNNPACK converts to int8 (qs8) or uint8 (qu8) only"};
    return supports_params(q.params, "quantize");
  }

  static Availability supports_dequantize(const qc::DequantizeOp& d) {
    if (!is_8bit(d.q.dtype())) return {false, "dequantize: XNNPACK converts qs8/qu8 only"};
    if (d.out != DType::f32) return {false, "dequantize: XNNPACK converts qs8/qu8 to f32 only"};
    return supports_params(d.params, "dequantize");
  }

  // One convert operator per channel: channels = inner (a contiguous run), strides dim * inner, batch
  // outer, the pointers offset to the channel's first run.
  template <class In, class Out, class Make, class Setup>
  static void per_channel_convert(const In* x, Out* y, const qc::Shape& shape, const qc::QuantParams& p, Make make,
                                  Setup setup) {
    const Channels ch = channels_of(shape, p.axis);
    for (std::int64_t c = 0; c < ch.dim; ++c) {
      Op op;
      const auto zp = p.zero_point(p.scales.size() == 1 ? 0 : c);
      const auto s = static_cast<float>(p.scales[static_cast<std::size_t>(p.scales.size() == 1 ? 0 : c)]);
      const auto stride = static_cast<std::size_t>(ch.dim * ch.inner);
      check(make(static_cast<std::size_t>(ch.inner), stride, stride, s, zp, &op.op), "xnn_create_convert");
      check(setup(op.op, static_cast<std::size_t>(ch.outer), x + c * ch.inner, y + c * ch.inner), "xnn_setup_convert");
      check(xnn_run_operator(op.op, nullptr), "xnn_run_operator");
    }
  }

  static qc::Tensor run_quantize(const qc::QuantizeOp& q) {
    const auto n = static_cast<std::size_t>(q.x.size());
    auto x = padded<float>(n);
    std::memcpy(x.data(), q.x.data<float>(), n * sizeof(float));
    qc::Tensor y(q.out, q.x.shape());
    if (q.out == DType::i8) {
      per_channel_convert(
          x.data(), y.data<std::int8_t>(), q.x.shape(), q.params,
          [](std::size_t c, std::size_t is, std::size_t os, float s, std::int64_t zp, xnn_operator_t* op) {
            return xnn_create_convert_nc_f32_qs8(c, is, os, s, static_cast<std::int8_t>(zp), INT8_MIN, INT8_MAX, 0, op);
          },
          [](xnn_operator_t op, std::size_t b, const float* in, std::int8_t* out) {
            return xnn_setup_convert_nc_f32_qs8(op, b, in, out, nullptr);
          });
    } else {
      per_channel_convert(
          x.data(), y.data<std::uint8_t>(), q.x.shape(), q.params,
          [](std::size_t c, std::size_t is, std::size_t os, float s, std::int64_t zp, xnn_operator_t* op) {
            return xnn_create_convert_nc_f32_qu8(c, is, os, s, static_cast<std::uint8_t>(zp), 0, UINT8_MAX, 0, op);
          },
          [](xnn_operator_t op, std::size_t b, const float* in, std::uint8_t* out) {
            return xnn_setup_convert_nc_f32_qu8(op, b, in, out, nullptr);
          });
    }
    return y;
  }

  static qc::Tensor run_dequantize(const qc::DequantizeOp& d) {
    const auto n = static_cast<std::size_t>(d.q.size());
    qc::Tensor y(DType::f32, d.q.shape());
    if (d.q.dtype() == DType::i8) {
      auto x = padded<std::int8_t>(n);
      std::memcpy(x.data(), d.q.data<std::int8_t>(), n);
      per_channel_convert(
          x.data(), y.data<float>(), d.q.shape(), d.params,
          [](std::size_t c, std::size_t is, std::size_t os, float s, std::int64_t zp, xnn_operator_t* op) {
            return xnn_create_convert_nc_qs8_f32(c, is, os, s, static_cast<std::int8_t>(zp), 0, op);
          },
          [](xnn_operator_t op, std::size_t b, const std::int8_t* in, float* out) {
            return xnn_setup_convert_nc_qs8_f32(op, b, in, out, nullptr);
          });
    } else {
      auto x = padded<std::uint8_t>(n);
      std::memcpy(x.data(), d.q.data<std::uint8_t>(), n);
      per_channel_convert(
          x.data(), y.data<float>(), d.q.shape(), d.params,
          [](std::size_t c, std::size_t is, std::size_t os, float s, std::int64_t zp, xnn_operator_t* op) {
            return xnn_create_convert_nc_qu8_f32(c, is, os, s, static_cast<std::uint8_t>(zp), 0, op);
          },
          [](xnn_operator_t op, std::size_t b, const std::uint8_t* in, float* out) {
            return xnn_setup_convert_nc_qu8_f32(op, b, in, out, nullptr);
          });
    }
    return y;
  }

  // ---- fully connected ----

  // One fully connected operator: y[R, N] = requantize(bias + sum_k (a - za)(w - zw)), w [N, K] or [K, N]
  // (XNN_FLAG_TRANSPOSE_WEIGHTS). T is int8_t (qs8, zw = 0) or uint8_t (qu8).
  template <class T>
  static void fully_connected(const std::vector<T>& a, std::size_t rows, std::size_t k, std::size_t n,
                              const std::vector<T>& w, bool k_by_n, const std::int32_t* bias, std::int64_t za,
                              double s_a, std::int64_t zw, double s_w, std::int64_t zy, double s_y, std::int64_t lo,
                              std::int64_t hi, T* y) {
    Op op;
    const std::uint32_t flags = k_by_n ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0;
    if constexpr (std::is_same_v<T, std::int8_t>) {
      (void)zw;
      check(xnn_create_fully_connected_nc_qs8(k, n, k, n, static_cast<std::int8_t>(za), static_cast<float>(s_a),
                                              static_cast<float>(s_w), w.data(), bias, static_cast<std::int8_t>(zy),
                                              static_cast<float>(s_y), static_cast<std::int8_t>(lo),
                                              static_cast<std::int8_t>(hi), flags, &op.op),
            "xnn_create_fully_connected_nc_qs8");
      check(xnn_setup_fully_connected_nc_qs8(op.op, rows, a.data(), y, nullptr), "xnn_setup_fully_connected_nc_qs8");
    } else {
      check(xnn_create_fully_connected_nc_qu8(
                k, n, k, n, static_cast<std::uint8_t>(za), static_cast<float>(s_a), static_cast<std::uint8_t>(zw),
                static_cast<float>(s_w), w.data(), bias, static_cast<std::uint8_t>(zy), static_cast<float>(s_y),
                static_cast<std::uint8_t>(lo), static_cast<std::uint8_t>(hi), flags, &op.op),
            "xnn_create_fully_connected_nc_qu8");
      check(xnn_setup_fully_connected_nc_qu8(op.op, rows, a.data(), y, nullptr), "xnn_setup_fully_connected_nc_qu8");
    }
    check(xnn_run_operator(op.op, nullptr), "xnn_run_operator");
  }

  // ---- requantize ----

  static Availability supports_requantize(const qc::RequantizeOp& r) {
    if (r.acc.dtype() != DType::i32) return {false, "requantize: XNNPACK accumulators (and biases) are int32"};
    if (!is_8bit(r.out)) return {false, "requantize: XNNPACK's quantized operators output qs8/qu8 only"};
    for (const double w : r.params.weight_scales) {
      const std::string why = requantization_limit(r.params.input_scale, w, r.params.output_scale);
      if (!why.empty()) return {false, "requantize: " + why};
    }
    return {};
  }

  static qc::Tensor run_requantize(const qc::RequantizeOp& r) {
    const qc::RequantizeParams& p = r.params;
    const Channels ch = channels_of(r.acc.shape(), p.axis);
    const bool per_channel = p.weight_scales.size() > 1 || p.output_zero_points.size() > 1;
    const std::int64_t groups = per_channel ? ch.dim : 1;
    qc::Tensor y(r.out, r.acc.shape());
    const auto* acc = r.acc.data<std::int32_t>();
    for (std::int64_t c = 0; c < groups; ++c) {
      // The accumulators of channel c (all of them when per tensor), as the bias of a 1-input FC.
      std::vector<std::int64_t> index;
      for (std::int64_t i = 0; i < r.acc.size(); ++i)
        if (!per_channel || (i / ch.inner) % ch.dim == c) index.push_back(i);
      if (index.empty()) continue;
      std::vector<std::int32_t> bias;
      for (const std::int64_t i : index) bias.push_back(acc[i]);
      const auto zy = p.output_zero_points.empty()       ? 0
                      : p.output_zero_points.size() == 1 ? p.output_zero_points[0]
                                                         : p.output_zero_points[static_cast<std::size_t>(c)];
      const double s_w =
          p.weight_scales.size() == 1 ? p.weight_scales[0] : p.weight_scales[static_cast<std::size_t>(c)];
      const std::size_t n = index.size();
      if (r.out == DType::i8) {
        auto a = padded<std::int8_t>(1);  // the input equals its zero point 0: (a - za) = 0
        std::vector<std::int8_t> w(n, 0), out(n);
        fully_connected<std::int8_t>(a, 1, 1, n, w, false, bias.data(), 0, p.input_scale, 0, s_w, zy, p.output_scale,
                                     INT8_MIN, INT8_MAX, out.data());
        for (std::size_t j = 0; j < n; ++j) y.set_int(index[j], out[j]);
      } else {
        auto a = padded<std::uint8_t>(1);
        std::vector<std::uint8_t> w(n, 0), out(n);
        fully_connected<std::uint8_t>(a, 1, 1, n, w, false, bias.data(), 0, p.input_scale, 0, s_w, zy, p.output_scale,
                                      0, UINT8_MAX, out.data());
        for (std::size_t j = 0; j < n; ++j) y.set_int(index[j], out[j]);
      }
    }
    return y;
  }

  // ---- qgemm ----

  // Which XNNPACK operator family a GEMM or convolution maps to.
  enum class Family { qs8, qu8, qc8 };

  // A, B, output formats and parameters -> the family, or why none fits.
  static Availability family_of(DType a_fmt, const qc::QWeights& b, const qc::OutputStage& out,
                                const qc::QuantParams& a_params, bool per_channel_ok, Family& fam) {
    if (b.packing || !is_8bit(b.values.dtype()))
      return {false, "XNNPACK packs 8-bit integer weights only (no int4, no float weights quantized in the path)"};
    if (out.kind != qc::OutputKind::requantized)
      return {false,
              "XNNPACK's quantized GEMM/convolution operators produce requantized qs8/qu8 only "
              "(no int32 or float output)"};
    if (a_params.granularity() != qc::Granularity::per_tensor)
      return {false, "XNNPACK activations have one scale and zero point"};
    const DType w = b.values.dtype();
    if (a_fmt != w || out.format != w)
      return {false,
              "XNNPACK operators take activations, weights and outputs all int8 (qs8/qc8) or all uint8 "
              "(qu8); no mixed u8 x s8"};
    const qc::Granularity gb = b.params.granularity();
    if (gb == qc::Granularity::blocked) return {false, "XNNPACK weights are per tensor or per output channel"};
    if (w == DType::u8) {
      if (gb != qc::Granularity::per_tensor) return {false, "XNNPACK qu8 weights are per tensor (no per-channel qu8)"};
      fam = Family::qu8;
      return {};
    }
    for (const std::int64_t z : b.params.zero_points)
      if (z != 0) return {false, "XNNPACK int8 weights are symmetric (qs8/qc8 have no kernel zero point)"};
    if (gb == qc::Granularity::per_axis) {
      if (!per_channel_ok) return {false, "XNNPACK per-channel weights run along the output channels"};
      fam = Family::qc8;
      return {};
    }
    fam = Family::qs8;
    return {};
  }

  static Availability check_scales(double s_a, const qc::QWeights& b, const qc::OutputStage& out) {
    for (const double s_w : b.params.scales) {
      const std::string why = requantization_limit(s_a, s_w, out.scale);
      if (!why.empty()) return {false, why};
    }
    const DType f = out.format;
    const std::int64_t lo = out.clamp ? out.clamp->lo : qc::int_min(f), hi = out.clamp ? out.clamp->hi : qc::int_max(f);
    if (lo >= hi) return {false, "XNNPACK requires output_min < output_max (the fused range is one value)"};
    return {};
  }

  static Availability supports_activation(const qc::ActivationOperand& a) {
    if (a.quantization != qc::ActivationQuantization::static_params)
      return {false, "XNNPACK " QCONFORM_XNNPACK_VERSION " has no dynamic quantization (no qd8 operators)"};
    const DType t = a.values.dtype();
    if (t == DType::f32) {
      if (!is_8bit(a.format)) return {false, "XNNPACK converts f32 to qs8/qu8 only"};
      return {};
    }
    if (!is_8bit(t)) return {false, "XNNPACK activations are f32 (converted first), int8 or uint8"};
    return {};
  }

  static DType activation_format(const qc::ActivationOperand& a) {
    return a.values.dtype() == DType::f32 ? a.format : a.values.dtype();
  }

  static Availability supports_gemm(const qc::QGemmOp& g) {
    if (g.output.kind != qc::OutputKind::requantized)
      return {false,
              "qgemm: XNNPACK's quantized operators produce requantized qs8/qu8 only (no int32 or float output)"};
    if (g.b.packing) return {false, "qgemm: XNNPACK packs 8-bit integer weights only (no int4)"};
    if (auto s = supports_activation(g.a); !s.available) return {false, "qgemm: " + s.reason};
    if (g.b.values.rank() != 2) return {false, "qgemm: B is one 2-D matrix"};
    if (g.bias && g.bias->dtype() != DType::i32) return {false, "qgemm: XNNPACK biases are int32"};
    Family fam{};
    const int n_axis = g.b_layout == qc::WeightLayout::k_by_n ? 1 : 0;
    const bool along_n = !g.b.params.axis || (*g.b.params.axis + 2) % 2 == n_axis;
    if (auto s = family_of(activation_format(g.a), g.b, g.output, g.a.params, along_n, fam); !s.available)
      return {false, "qgemm: " + s.reason};
    if (auto s = check_scales(g.a.params.scales[0], g.b, g.output); !s.available) return {false, "qgemm: " + s.reason};
    if (!usable_scale(g.a.params.scales[0])) return {false, "qgemm: the activation scale is not a normal f32"};
    return {};
  }

  // The activation as the operator's input type: integer values copied, f32 values through XNNPACK's own
  // f32 -> q convert (what an XNNPACK graph does before a quantized operator).
  template <class T>
  static std::vector<T> activation_values(const qc::ActivationOperand& a) {
    const auto n = static_cast<std::size_t>(a.values.size());
    auto v = padded<T>(n);
    if (a.values.dtype() != DType::f32) {
      std::memcpy(v.data(), a.values.bytes().data(), n);
      return v;
    }
    qc::QuantizeOp q{a.values, a.params, std::is_same_v<T, std::int8_t> ? DType::i8 : DType::u8};
    q.params.axis.reset();
    const qc::Tensor t = run_quantize(q);
    std::memcpy(v.data(), t.bytes().data(), n);
    return v;
  }

  template <class T>
  static std::vector<T> weight_values(const qc::Tensor& t) {
    std::vector<T> v(static_cast<std::size_t>(t.size()));
    std::memcpy(v.data(), t.bytes().data(), v.size());
    return v;
  }

  static std::vector<std::int32_t> bias_values(const std::optional<qc::Tensor>& bias, std::size_t n) {
    std::vector<std::int32_t> v(n, 0);
    if (bias)
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(bias->get_int(static_cast<std::int64_t>(i)));
    return v;
  }

  static qc::Tensor run_gemm(const qc::QGemmOp& g) {
    const qc::GemmShape d = qc::gemm_shape(g.a.values.shape(), g.b.values.shape(), g.b_layout);
    const auto rows = static_cast<std::size_t>(d.rows), k = static_cast<std::size_t>(d.depth),
               n = static_cast<std::size_t>(d.cols);
    Family fam{};
    const int n_axis = g.b_layout == qc::WeightLayout::k_by_n ? 1 : 0;
    const bool along_n = !g.b.params.axis || (*g.b.params.axis + 2) % 2 == n_axis;
    const Availability ok = family_of(activation_format(g.a), g.b, g.output, g.a.params, along_n, fam);
    if (!ok.available) throw qc::InputError("qgemm: " + ok.reason);
    const std::vector<std::int32_t> bias = bias_values(g.bias, n);
    const DType f = g.output.format;
    const std::int64_t lo = g.output.clamp ? g.output.clamp->lo : qc::int_min(f);
    const std::int64_t hi = g.output.clamp ? g.output.clamp->hi : qc::int_max(f);
    const std::int64_t za = g.a.params.zero_point(0);
    qc::Tensor y(f, d.out_shape);
    const bool k_by_n = g.b_layout == qc::WeightLayout::k_by_n;
    switch (fam) {
      case Family::qs8:
        fully_connected<std::int8_t>(activation_values<std::int8_t>(g.a), rows, k, n,
                                     weight_values<std::int8_t>(g.b.values), k_by_n, bias.data(), za,
                                     g.a.params.scales[0], 0, g.b.params.scales[0], g.output.zero_point, g.output.scale,
                                     lo, hi, y.data<std::int8_t>());
        break;
      case Family::qu8:
        fully_connected<std::uint8_t>(activation_values<std::uint8_t>(g.a), rows, k, n,
                                      weight_values<std::uint8_t>(g.b.values), k_by_n, bias.data(), za,
                                      g.a.params.scales[0], g.b.params.zero_point(0), g.b.params.scales[0],
                                      g.output.zero_point, g.output.scale, lo, hi, y.data<std::uint8_t>());
        break;
      case Family::qc8: {
        // A 1x1 convolution over a 1 x R image of K channels is the GEMM [R, K] x [K, N]; its kernel is
        // [N, 1, 1, K] (OHWI), i.e. B as [N, K].
        std::vector<std::int8_t> w = weight_values<std::int8_t>(g.b.values);
        if (k_by_n) {
          std::vector<std::int8_t> t(w.size());
          for (std::size_t kk = 0; kk < k; ++kk)
            for (std::size_t nn = 0; nn < n; ++nn) t[nn * k + kk] = w[kk * n + nn];
          w.swap(t);
        }
        std::vector<float> ws;
        for (const double s : g.b.params.scales) ws.push_back(static_cast<float>(s));
        Op op;
        check(xnn_create_convolution2d_nhwc_qc8(
                  0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, k, n, k, n, static_cast<std::int8_t>(za),
                  static_cast<float>(g.a.params.scales[0]), ws.data(), w.data(), bias.data(),
                  static_cast<std::int8_t>(g.output.zero_point), static_cast<float>(g.output.scale),
                  static_cast<std::int8_t>(lo), static_cast<std::int8_t>(hi), 0, &op.op),
              "xnn_create_convolution2d_nhwc_qc8");
        const std::vector<std::int8_t> a = activation_values<std::int8_t>(g.a);
        check(xnn_setup_convolution2d_nhwc_qc8(op.op, 1, rows, 1, a.data(), y.data<std::int8_t>(), nullptr),
              "xnn_setup_convolution2d_nhwc_qc8");
        check(xnn_run_operator(op.op, nullptr), "xnn_run_operator");
        break;
      }
    }
    return y;
  }

  // ---- qconv2d ----

  static Availability supports_conv(const qc::QConv2dOp& c) {
    if (c.output.kind != qc::OutputKind::requantized)
      return {false,
              "qconv2d: XNNPACK's quantized operators produce requantized qs8/qu8 only (no int32 or float output)"};
    if (auto s = supports_activation(c.input); !s.available) return {false, "qconv2d: " + s.reason};
    if (c.bias && c.bias->dtype() != DType::i32) return {false, "qconv2d: XNNPACK biases are int32"};
    Family fam{};
    const bool along_o = !c.weight.params.axis || (*c.weight.params.axis + 4) % 4 == 0;
    if (auto s = family_of(activation_format(c.input), c.weight, c.output, c.input.params, along_o, fam); !s.available)
      return {false, "qconv2d: " + s.reason};
    if (auto s = check_scales(c.input.params.scales[0], c.weight, c.output); !s.available)
      return {false, "qconv2d: " + s.reason};
    // XNNPACK pads with the input zero point (the real zero); quantized_zero pads with the integer 0.
    if (c.padding == qc::ConvPadding::quantized_zero && c.input.params.zero_point(0) != 0)
      return {false, "qconv2d: XNNPACK pads with the input zero point (real zero), not with the byte 0"};
    return {};
  }

  template <class T>
  static qc::Tensor conv_typed(const qc::QConv2dOp& c, const qc::Conv2dShape& s, Family fam) {
    const std::int64_t N = s.batch, C = s.channels, H = s.height, W = s.width, O = s.out_channels, OH = s.out_height,
                       OW = s.out_width, KH = s.kernel_h, KW = s.kernel_w, G = s.geometry.groups,
                       IC = s.group_in_channels;
    const bool nchw = c.layout == qc::ConvLayout::nchw;
    // Input to NHWC (a permutation of bytes).
    const std::vector<T> raw = activation_values<T>(c.input);
    auto x = padded<T>(static_cast<std::size_t>(N * H * W * C));
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t w = 0; w < W; ++w)
          for (std::int64_t ch = 0; ch < C; ++ch)
            x[static_cast<std::size_t>(((n * H + h) * W + w) * C + ch)] =
                raw[static_cast<std::size_t>(nchw ? ((n * C + ch) * H + h) * W + w : ((n * H + h) * W + w) * C + ch)];
    // OIHW weights to XNNPACK's [G, O/G, KH, KW, I/G] (OHWI per group, groups outermost).
    const std::vector<T> wr = weight_values<T>(c.weight.values);
    std::vector<T> w(wr.size());
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < IC; ++i)
        for (std::int64_t kh = 0; kh < KH; ++kh)
          for (std::int64_t kw = 0; kw < KW; ++kw)
            w[static_cast<std::size_t>(((o * KH + kh) * KW + kw) * IC + i)] =
                wr[static_cast<std::size_t>(((o * IC + i) * KH + kh) * KW + kw)];
    const std::vector<std::int32_t> bias = bias_values(c.bias, static_cast<std::size_t>(O));
    const DType f = c.output.format;
    const std::int64_t lo = c.output.clamp ? c.output.clamp->lo : qc::int_min(f);
    const std::int64_t hi = c.output.clamp ? c.output.clamp->hi : qc::int_max(f);
    const auto za = c.input.params.zero_point(0);
    const auto sa = static_cast<float>(c.input.params.scales[0]);
    const auto sy = static_cast<float>(c.output.scale);
    const auto zy = c.output.zero_point;
    const auto& g = s.geometry;
    const auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    std::vector<T> yn(static_cast<std::size_t>(N * OH * OW * O));
    Op op;
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      check(xnn_create_convolution2d_nhwc_qu8(
                u(g.pad_top), u(g.pad_right), u(g.pad_bottom), u(g.pad_left), u(KH), u(KW), u(g.stride_h),
                u(g.stride_w), u(g.dilation_h), u(g.dilation_w), u(G), static_cast<std::size_t>(IC),
                static_cast<std::size_t>(O / G), static_cast<std::size_t>(C), static_cast<std::size_t>(O),
                static_cast<std::uint8_t>(za), sa, static_cast<std::uint8_t>(c.weight.params.zero_point(0)),
                static_cast<float>(c.weight.params.scales[0]), w.data(), bias.data(), static_cast<std::uint8_t>(zy), sy,
                static_cast<std::uint8_t>(lo), static_cast<std::uint8_t>(hi), 0, &op.op),
            "xnn_create_convolution2d_nhwc_qu8");
      check(xnn_setup_convolution2d_nhwc_qu8(op.op, static_cast<std::size_t>(N), static_cast<std::size_t>(H),
                                             static_cast<std::size_t>(W), x.data(), yn.data(), nullptr),
            "xnn_setup_convolution2d_nhwc_qu8");
    } else if (fam == Family::qc8) {
      std::vector<float> ws;
      for (std::int64_t o = 0; o < O; ++o)
        ws.push_back(static_cast<float>(
            c.weight.params.scales[static_cast<std::size_t>(c.weight.params.scales.size() == 1 ? 0 : o)]));
      check(xnn_create_convolution2d_nhwc_qc8(
                u(g.pad_top), u(g.pad_right), u(g.pad_bottom), u(g.pad_left), u(KH), u(KW), u(g.stride_h),
                u(g.stride_w), u(g.dilation_h), u(g.dilation_w), u(G), static_cast<std::size_t>(IC),
                static_cast<std::size_t>(O / G), static_cast<std::size_t>(C), static_cast<std::size_t>(O),
                static_cast<std::int8_t>(za), sa, ws.data(), w.data(), bias.data(), static_cast<std::int8_t>(zy), sy,
                static_cast<std::int8_t>(lo), static_cast<std::int8_t>(hi), 0, &op.op),
            "xnn_create_convolution2d_nhwc_qc8");
      check(xnn_setup_convolution2d_nhwc_qc8(op.op, static_cast<std::size_t>(N), static_cast<std::size_t>(H),
                                             static_cast<std::size_t>(W), x.data(), yn.data(), nullptr),
            "xnn_setup_convolution2d_nhwc_qc8");
    } else {
      check(
          xnn_create_convolution2d_nhwc_qs8(
              u(g.pad_top), u(g.pad_right), u(g.pad_bottom), u(g.pad_left), u(KH), u(KW), u(g.stride_h), u(g.stride_w),
              u(g.dilation_h), u(g.dilation_w), u(G), static_cast<std::size_t>(IC), static_cast<std::size_t>(O / G),
              static_cast<std::size_t>(C), static_cast<std::size_t>(O), static_cast<std::int8_t>(za), sa,
              static_cast<float>(c.weight.params.scales[0]), w.data(), bias.data(), static_cast<std::int8_t>(zy), sy,
              static_cast<std::int8_t>(lo), static_cast<std::int8_t>(hi), 0, &op.op),
          "xnn_create_convolution2d_nhwc_qs8");
      check(xnn_setup_convolution2d_nhwc_qs8(op.op, static_cast<std::size_t>(N), static_cast<std::size_t>(H),
                                             static_cast<std::size_t>(W), x.data(), yn.data(), nullptr),
            "xnn_setup_convolution2d_nhwc_qs8");
    }
    check(xnn_run_operator(op.op, nullptr), "xnn_run_operator");
    qc::Tensor y(f, s.output_shape());
    T* out = y.data<T>();
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow)
          for (std::int64_t o = 0; o < O; ++o)
            out[s.output_index(n, o, oh, ow)] = yn[static_cast<std::size_t>(((n * OH + oh) * OW + ow) * O + o)];
    return y;
  }

  static qc::Tensor run_conv(const qc::QConv2dOp& c) {
    const qc::Conv2dShape s = qc::resolve_conv2d(c.input.values.shape(), c.layout, c.weight.values.shape(), c.geometry);
    Family fam{};
    const bool along_o = !c.weight.params.axis || (*c.weight.params.axis + 4) % 4 == 0;
    const Availability ok = family_of(activation_format(c.input), c.weight, c.output, c.input.params, along_o, fam);
    if (!ok.available) throw qc::InputError("qconv2d: " + ok.reason);
    if (fam == Family::qu8) return conv_typed<std::uint8_t>(c, s, fam);
    return conv_typed<std::int8_t>(c, s, fam);
  }
};

}  // namespace

QCONFORM_PLUGIN("xnnpack", qc::plugin::one_backend<XnnpackBackend>)
