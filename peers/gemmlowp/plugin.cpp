// gemmlowp (google/gemmlowp, header only) as a qconform peer backend: `qconform run --plugin
// libqconform_gemmlowp.so --backend gemmlowp`. Two ops, both on the library's own code:
//
//   requantize  the arithmetic of gemmlowp's OutputStageScaleInt32ByFixedPointAndExponent
//               (internal/output.h), element by element with fixedpoint/fixedpoint.h's ShiftLeft,
//               SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, then + zero point and a clamp
//               to the output range (OutputStageSaturatingCastTo{Uint8,Int8,Int16}).
//   qgemm       gemmlowp::GemmWithOutputPipelinePC: uint8 operands with offsets (per column for B),
//               OutputStageBiasAddition, OutputStageScaleInt32ByFixedPointAndExponent(PC), OutputStageClamp,
//               OutputStageSaturatingCastTo{Uint8,Int8,Int16}; or the raw int32 result (+ bias).
//
// The real multiplier and its Q31 form follow TFLite, gemmlowp's main user (gemmlowp itself ships no
// multiplier derivation, only doc/quantization_example.cc): real = (double(s_in) * double(s_w)) /
// double(s_out) (tensorflow/lite/kernels/kernel_util.cc::PopulateConvolutionQuantizationParams), then
// tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier (frexp, round half away
// to Q31, 2^31 -> 2^30 with exponent + 1, exponent < -31 -> zero).
#include <qconform/backend.hpp>
#include <qconform/error.hpp>
#include <qconform/plugin.hpp>

#include "../host_isa.hpp"

// gemmlowp lives under /usr/include (a system header directory): its own warnings are not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <gemmlowp/fixedpoint/fixedpoint.h>
#include <gemmlowp/public/gemmlowp.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#ifndef QCONFORM_GEMMLOWP_VERSION
#define QCONFORM_GEMMLOWP_VERSION "git 2021-12-20 e844ffd (Debian libgemmlowp-dev 0.0~git20211220.e844ffd-1)"
#endif

namespace {

using qc::Availability;
using qc::DType;

// Which kernel and which fixedpoint.h implementation this translation unit compiled (gemmlowp picks
// both from the compiler's target macros: internal/detect_platform.h, internal/kernel_default.h).
#if defined(GEMMLOWP_AVX2_64)
constexpr const char* kKernelPath =
    "AVX2_64_Kernel24x8Depth2 (GEMMLOWP_AVX2_64); output stages on __m256i (fixedpoint_avx.h)";
constexpr bool kSimdOutput = true;
#elif defined(GEMMLOWP_SSE4_64)
constexpr const char* kKernelPath =
    "SSE4_64_Kernel12x4Depth2 (GEMMLOWP_SSE4_64); output stages on __m128i (fixedpoint_sse.h)";
constexpr bool kSimdOutput = true;
#elif defined(GEMMLOWP_NEON)
constexpr const char* kKernelPath = "NEON kernels (GEMMLOWP_NEON); output stages on NEON registers (fixedpoint_neon.h)";
constexpr bool kSimdOutput = true;
#else
constexpr const char* kKernelPath =
    "DefaultReferenceKernel (portable C++; no GEMMLOWP_SSE4/AVX2 macro at compile time); output stages on "
    "scalar std::int32_t (generic fixedpoint.h)";
constexpr bool kSimdOutput = false;
#endif

// ---- The Q31 multiplier ------------------------------------------------------------------------

struct Q31 {
  std::int32_t multiplier = 0;
  int exponent = 0;  // real ~= multiplier * 2^(exponent - 31); gemmlowp's result_exponent
};

// tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier (the default,
// double-rounding build): q = frexp(real, &shift); q_fixed = TfLiteRound(q * 2^31) (std::round, half
// away from zero); q_fixed == 2^31 -> q_fixed / 2, shift + 1; shift < -31 -> (0, 0). Written here, not
// taken from the oracle (fixed_point.hpp): the peer is the caller's side of gemmlowp, judged by the oracle.
Q31 quantize_multiplier(double real) {
  if (real == 0.0) return {};
  int shift = 0;
  const double q = std::frexp(real, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(std::int64_t{1} << 31)));
  if (q_fixed == (std::int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {};
  return {static_cast<std::int32_t>(q_fixed), shift};
}

// The formed multiplier of one channel, and why gemmlowp cannot use it (empty when it can).
std::string multiplier_limit(const Q31& m) {
  // OutputStageScaleInt32ByFixedPointAndExponent shifts left by max(exponent, 0) and right by
  // max(-exponent, 0) with RoundingDivideByPOT, which asserts 0 <= exponent <= 31 (fixedpoint.h).
  // A left shift of 31 or more moves every nonzero int32 out of range; TFLite's own precondition
  // is exponent <= 30 (common.h::MultiplyByQuantizedMultiplier).
  if (m.exponent > 30)
    return "the multiplier needs a left shift of " + std::to_string(m.exponent) +
           " bits; gemmlowp/TFLite fixed point takes at most 30";
  return {};
}

// One element of OutputStageScaleInt32ByFixedPointAndExponent (internal/output.h,
// OutputStageEvalBufferImpl::Eval) on scalar int32, then the saturating cast: exactly the calls that
// stage makes, so this is the library's own arithmetic.
std::int32_t scale_by_fixed_point(std::int32_t x, const Q31& m, std::int32_t offset_after_shift) {
  const int left_shift = std::max(0, m.exponent);
  const int right_shift = std::max(0, -m.exponent);
  // fixedpoint.h::ShiftLeft (generic): the int64 product saturated to int32 (not a wrap).
  const std::int32_t shifted = gemmlowp::ShiftLeft(x, left_shift);
  const std::int32_t high = gemmlowp::SaturatingRoundingDoublingHighMul(shifted, m.multiplier);
  const std::int32_t divided = gemmlowp::RoundingDivideByPOT(high, right_shift);
  // gemmlowp::Add on int32 is a plain +: wrap it explicitly (two's complement, as the hardware does).
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(divided) +
                                   static_cast<std::uint32_t>(offset_after_shift));
}

bool is_output_int(DType t) { return t == DType::u8 || t == DType::i8 || t == DType::i16; }
bool is_8bit(DType t) { return t == DType::u8 || t == DType::i8; }

std::int64_t zero_point(const std::vector<std::int64_t>& zps, std::size_t i) {
  if (zps.empty()) return 0;
  return zps.size() == 1 ? zps[0] : zps[i];
}

// ---- The backend -------------------------------------------------------------------------------

class GemmlowpBackend : public qc::Backend {
 public:
  std::string name() const override { return "gemmlowp"; }
  std::string description() const override {
    return "gemmlowp " QCONFORM_GEMMLOWP_VERSION
           ": requantize by OutputStageScaleInt32ByFixedPointAndExponent arithmetic (fixedpoint.h), qgemm by "
           "GemmWithOutputPipelinePC on uint8 operands (int8 operands re-biased by +128, exact)";
  }
  std::string claim() const override { return "gemmlowp"; }

  std::map<std::string, std::string> facts() const override {
    return {{"library", "gemmlowp"},
            {"version", QCONFORM_GEMMLOWP_VERSION},
            {"isa", qc::peers::host_isa()},
            {"kernel_path", kKernelPath},
            {"left_shift", kSimdOutput ? "SIMD ShiftLeft (_mm_slli_epi32 etc.) wraps; leftover scalar lanes saturate"
                                       : "fixedpoint.h generic ShiftLeft saturates to int32"},
            {"multiplier", "TFLite QuantizeMultiplier on (double(s_in) * double(s_w)) / double(s_out)"},
            {"compiler", __VERSION__},
            {"threads", "1 (GemmContext::set_max_num_threads(1))"}};
  }

  Availability supports(const qc::OpRequest& op) const override {
    if (const auto* r = std::get_if<qc::RequantizeOp>(&op)) return supports_requantize(*r);
    if (const auto* g = std::get_if<qc::QGemmOp>(&op)) return supports_gemm(*g);
    return {false, std::string(qc::op_name(op)) +
                       ": gemmlowp has no such operation (it offers integer GEMM with output pipelines only)"};
  }

  qc::Tensor run(const qc::OpRequest& op) override {
    if (const auto* r = std::get_if<qc::RequantizeOp>(&op)) return run_requantize(*r);
    return run_gemm(std::get<qc::QGemmOp>(op));
  }

 private:
  // ---- requantize ----

  static Availability supports_requantize(const qc::RequantizeOp& r) {
    if (r.acc.dtype() != DType::i32) return {false, "requantize: gemmlowp output stages take int32 accumulators"};
    if (!is_output_int(r.out))
      return {false, "requantize: gemmlowp saturating casts exist for uint8, int8 and int16 only"};
    for (const double w : r.params.weight_scales) {
      const std::string why = multiplier_limit(quantize_multiplier(r.params.input_scale * w / r.params.output_scale));
      if (!why.empty()) return {false, "requantize: " + why};
    }
    return {};
  }

  static qc::Tensor run_requantize(const qc::RequantizeOp& r) {
    const qc::RequantizeParams& p = r.params;
    std::vector<Q31> m;
    for (const double w : p.weight_scales) m.push_back(quantize_multiplier(p.input_scale * w / p.output_scale));
    // The channel of flat index i along `axis` (row-major): (i / inner) % dim.
    std::int64_t dim = 1, inner = 1;
    if (p.axis) {
      const int rank = r.acc.rank();
      const int axis = *p.axis < 0 ? *p.axis + rank : *p.axis;
      dim = r.acc.shape()[static_cast<std::size_t>(axis)];
      for (int d = axis + 1; d < rank; ++d) inner *= r.acc.shape()[static_cast<std::size_t>(d)];
    }
    const std::int64_t lo = qc::int_min(r.out), hi = qc::int_max(r.out);
    qc::Tensor y(r.out, r.acc.shape());
    const auto* acc = r.acc.data<std::int32_t>();
    for (std::int64_t i = 0; i < r.acc.size(); ++i) {
      const auto c = static_cast<std::size_t>((i / inner) % dim);
      const Q31& mc = m.size() == 1 ? m[0] : m[c];
      const auto zp = static_cast<std::int32_t>(zero_point(p.output_zero_points, c));
      const std::int32_t v = scale_by_fixed_point(acc[i], mc, zp);
      y.set_int(i, std::clamp<std::int64_t>(v, lo, hi));
    }
    return y;
  }

  // ---- qgemm ----

  static Availability supports_gemm(const qc::QGemmOp& g) {
    const DType at = g.a.values.dtype();
    if (!is_8bit(at))
      return {false, "qgemm: gemmlowp takes already quantized 8-bit activations (it has no float quantize)"};
    if (g.a.quantization != qc::ActivationQuantization::static_params)
      return {false, "qgemm: gemmlowp has no dynamic quantization"};
    if (g.a.params.granularity() != qc::Granularity::per_tensor)
      return {false,
              "qgemm: A's offset is one per row at most in gemmlowp, and its scale is folded into one "
              "multiplier per column: A is per tensor"};
    if (g.b.packing || !is_8bit(g.b.values.dtype()))
      return {false, "qgemm: gemmlowp takes 8-bit weights (no int4, no float weights)"};
    const qc::Granularity gb = g.b.params.granularity();
    if (gb == qc::Granularity::blocked)
      return {false, "qgemm: gemmlowp's offsets and multipliers are per tensor or per column, not blocked along K"};
    if (gb == qc::Granularity::per_axis) {
      const int n_axis = g.b_layout == qc::WeightLayout::k_by_n ? 1 : 0;
      if ((*g.b.params.axis + 2) % 2 != n_axis)
        return {false, "qgemm: gemmlowp's per-channel parameters run along N (the result's columns)"};
    }
    if (g.b.values.rank() != 2) return {false, "qgemm: B is one 2-D matrix"};
    if (g.bias && g.bias->dtype() != DType::i32)
      return {false, "qgemm: OutputStageBiasAddition adds int32 to the int32 accumulator (no float bias)"};
    if (g.output.kind == qc::OutputKind::dequantized)
      return {false, "qgemm: gemmlowp's output pipeline has no float output stage"};
    if (g.output.kind == qc::OutputKind::requantized) {
      if (!is_output_int(g.output.format))
        return {false, "qgemm: gemmlowp saturating casts exist for uint8, int8 and int16 only"};
      for (const double sb : g.b.params.scales) {
        const std::string why = multiplier_limit(quantize_multiplier(g.a.params.scales[0] * sb / g.output.scale));
        if (!why.empty()) return {false, "qgemm: " + why};
      }
    }
    return {};
  }

  // gemmlowp's operands are uint8 on x86 (kernel_default.h sets no signed kernel outside NEON). An int8
  // operand v with zero point z becomes (v + 128, z + 128): (v + 128) - (z + 128) = v - z, so every
  // product and the accumulator are unchanged.
  static std::vector<std::uint8_t> as_uint8(const qc::Tensor& t) {
    std::vector<std::uint8_t> v(static_cast<std::size_t>(t.size()));
    const std::int64_t bias = t.dtype() == DType::i8 ? 128 : 0;
    for (std::int64_t i = 0; i < t.size(); ++i)
      v[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(t.get_int(i) + bias);
    return v;
  }

  template <class OutScalar, gemmlowp::MapOrder RhsOrder, class Pipeline>
  static void gemm(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, int rows, int depth,
                   int cols, std::int32_t lhs_offset, const std::vector<std::int32_t>& rhs_offsets, OutScalar* out,
                   const Pipeline& pipeline) {
    gemmlowp::GemmContext context;
    context.set_max_num_threads(1);
    const gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::RowMajor> lhs(a.data(), rows, depth);
    const gemmlowp::MatrixMap<const std::uint8_t, RhsOrder> rhs(b.data(), depth, cols);
    gemmlowp::MatrixMap<OutScalar, gemmlowp::MapOrder::RowMajor> result(out, rows, cols);
    const gemmlowp::VectorDup<const std::int32_t, gemmlowp::VectorShape::Col> lhs_offset_vector(lhs_offset, rows);
    const gemmlowp::VectorMap<const std::int32_t, gemmlowp::VectorShape::Row> rhs_offset_vector(rhs_offsets.data(),
                                                                                                cols);
    gemmlowp::GemmWithOutputPipelinePC<std::uint8_t, OutScalar, gemmlowp::DefaultL8R8BitDepthParams>(
        &context, lhs, rhs, &result, lhs_offset_vector, rhs_offset_vector, pipeline);
  }

  template <class OutScalar, class Pipeline>
  static void gemm_any_layout(const qc::QGemmOp& g, const std::vector<std::uint8_t>& a,
                              const std::vector<std::uint8_t>& b, int rows, int depth, int cols,
                              std::int32_t lhs_offset, const std::vector<std::int32_t>& rhs_offsets, OutScalar* out,
                              const Pipeline& pipeline) {
    // B [K, N] row-major is a RowMajor K x N map; B [N, K] row-major is the same matrix ColMajor.
    if (g.b_layout == qc::WeightLayout::k_by_n)
      gemm<OutScalar, gemmlowp::MapOrder::RowMajor>(a, b, rows, depth, cols, lhs_offset, rhs_offsets, out, pipeline);
    else
      gemm<OutScalar, gemmlowp::MapOrder::ColMajor>(a, b, rows, depth, cols, lhs_offset, rhs_offsets, out, pipeline);
  }

  template <class OutScalar, class CastStage>
  static void requantized_gemm(const qc::QGemmOp& g, const std::vector<std::uint8_t>& a,
                               const std::vector<std::uint8_t>& b, int rows, int depth, int cols,
                               std::int32_t lhs_offset, const std::vector<std::int32_t>& rhs_offsets,
                               const std::vector<std::int32_t>& bias, OutScalar* out) {
    using RowVector = gemmlowp::VectorMap<const std::int32_t, gemmlowp::VectorShape::Row>;
    const gemmlowp::OutputStageBiasAddition<RowVector> bias_stage{RowVector(bias.data(), cols)};
    const DType f = g.output.format;
    const gemmlowp::OutputStageClamp clamp{
        static_cast<std::int32_t>(g.output.clamp ? g.output.clamp->lo : qc::int_min(f)),
        static_cast<std::int32_t>(g.output.clamp ? g.output.clamp->hi : qc::int_max(f))};
    const auto zp = static_cast<std::int32_t>(g.output.zero_point);
    const double s_a = g.a.params.scales[0];
    if (g.b.params.scales.size() == 1) {
      const Q31 m = quantize_multiplier(s_a * g.b.params.scales[0] / g.output.scale);
      gemmlowp::OutputStageScaleInt32ByFixedPointAndExponent scale;
      scale.result_fixedpoint_multiplier = m.multiplier;
      scale.result_exponent = m.exponent;
      scale.result_offset_after_shift = zp;
      gemm_any_layout(g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, out,
                      std::make_tuple(bias_stage, scale, clamp, CastStage{}));
    } else {
      std::vector<std::int32_t> mult, expo;
      for (const double sb : g.b.params.scales) {
        const Q31 m = quantize_multiplier(s_a * sb / g.output.scale);
        mult.push_back(m.multiplier);
        expo.push_back(m.exponent);
      }
      gemmlowp::OutputStageScaleInt32ByFixedPointAndExponentPC<gemmlowp::VectorShape::Row> scale{
          RowVector(mult.data(), cols), RowVector(expo.data(), cols), zp};
      gemm_any_layout(g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, out,
                      std::make_tuple(bias_stage, scale, clamp, CastStage{}));
    }
  }

  static qc::Tensor run_gemm(const qc::QGemmOp& g) {
    const qc::GemmShape d = qc::gemm_shape(g.a.values.shape(), g.b.values.shape(), g.b_layout);
    const auto rows = static_cast<int>(d.rows), depth = static_cast<int>(d.depth), cols = static_cast<int>(d.cols);
    const std::vector<std::uint8_t> a = as_uint8(g.a.values);
    const std::vector<std::uint8_t> b = as_uint8(g.b.values);
    const std::int64_t a_bias = g.a.values.dtype() == DType::i8 ? 128 : 0;
    const std::int64_t b_bias = g.b.values.dtype() == DType::i8 ? 128 : 0;
    // gemmlowp adds its offsets to the operands: (lhs + lhs_offset) * (rhs + rhs_offset).
    const auto lhs_offset = static_cast<std::int32_t>(-(g.a.params.zero_point(0) + a_bias));
    std::vector<std::int32_t> rhs_offsets(static_cast<std::size_t>(cols));
    for (int n = 0; n < cols; ++n)
      rhs_offsets[static_cast<std::size_t>(n)] =
          static_cast<std::int32_t>(-(g.b.params.zero_point(g.b.params.zero_points.size() > 1 ? n : 0) + b_bias));
    std::vector<std::int32_t> bias(static_cast<std::size_t>(cols), 0);
    if (g.bias)
      for (int n = 0; n < cols; ++n) bias[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(g.bias->get_int(n));

    qc::Tensor y(g.output.kind == qc::OutputKind::int32 ? DType::i32 : g.output.format, d.out_shape);
    if (g.output.kind == qc::OutputKind::int32) {
      using RowVector = gemmlowp::VectorMap<const std::int32_t, gemmlowp::VectorShape::Row>;
      const gemmlowp::OutputStageBiasAddition<RowVector> bias_stage{RowVector(bias.data(), cols)};
      auto* out = y.data<std::int32_t>();
      if (g.bias)
        gemm_any_layout(g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, out, std::make_tuple(bias_stage));
      else
        gemm_any_layout(g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, out, std::make_tuple());
      return y;
    }
    switch (g.output.format) {
      case DType::u8:
        requantized_gemm<std::uint8_t, gemmlowp::OutputStageSaturatingCastToUint8>(
            g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, bias, y.data<std::uint8_t>());
        break;
      case DType::i8:
        requantized_gemm<std::int8_t, gemmlowp::OutputStageSaturatingCastToInt8>(
            g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, bias, y.data<std::int8_t>());
        break;
      case DType::i16:
        requantized_gemm<std::int16_t, gemmlowp::OutputStageSaturatingCastToInt16>(
            g, a, b, rows, depth, cols, lhs_offset, rhs_offsets, bias, y.data<std::int16_t>());
        break;
      default:
        throw qc::InputError("qgemm: output format " + std::string(qc::name(g.output.format)) + " not supported");
    }
    return y;
  }
};

}  // namespace

QCONFORM_PLUGIN("gemmlowp", qc::plugin::one_backend<GemmlowpBackend>)
