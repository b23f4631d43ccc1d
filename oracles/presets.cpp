// Each preset reads like a row of a table in docs/numerics.md: the choices, then the source
// (docs/numerics.md "Preset sources" lists them).
#include "oracles/presets.hpp"

#include "qconform/error.hpp"

#include <mutex>

namespace qc {
namespace {

using K = ComputeFormat::Kind;
using O = QuantizeOrder;
using R = RoundingMode;
using S = RequantizeScheme;
constexpr ComputeFormat kPresetF32{K::f32, 0};
constexpr ComputeFormat kPresetF64{K::f64, 0};
constexpr ComputeFormat kScaleType{K::scale_type, 0};
constexpr ComputeFormat kInputType{K::input_type, 0};

QuantizePolicy quantize(O order, ComputeFormat compute, R rounding, Clamp clamp, NanRule nan) {
  QuantizePolicy p;
  p.order = order;
  p.compute = compute;
  p.rounding = rounding;
  p.clamp = clamp;
  p.nan = nan;
  return p;
}

DequantizePolicy dequantize(DequantizeOrder order, ComputeFormat compute) { return {order, compute}; }

// A float requantize recipe: multiplier formed in `mult` by `order`, product in `product`.
RequantizePolicy float_requantize(MultiplierOrder order, ComputeFormat mult, ComputeFormat product, ZeroPointAdd zp,
                                  R rounding, Clamp clamp) {
  RequantizePolicy p = requantize_policy_for(S::float_multiplier);
  p.multiplier_order = order;
  p.multiplier_format = mult;
  p.product_format = product;
  p.zero_point = zp;
  p.rounding = rounding;
  p.clamp = clamp;
  return p;
}

RequantizePolicy ideal_requantize(R rounding) {
  RequantizePolicy p = requantize_policy_for(S::ideal);
  p.rounding = rounding;
  return p;
}

std::vector<Spec> make_presets() {
  std::vector<Spec> v;
  auto add = [&](Spec s) { v.push_back(std::move(s)); };

  // ---- ONNX -------------------------------------------------------------------------------
  {
    Spec s;
    s.name = "onnx";
    s.description =
        "ONNX spec: QuantizeLinear saturate(round(x / y_scale) + zp), division in the scale's type, "
        "ties to even; DequantizeLinear (x - zp) * scale in the output type; QLinear* exact, ties to even";
    s.sources = {"onnx/onnx onnx/defs/quantization/defs.cc::QuantizeLinear_ver25_doc",
                 "onnx/onnx onnx/defs/doc_strings.cc::kDoc_DequantizeLinear_ver24",
                 "onnx/onnx onnx/defs/math/utils.cc::QLinearMatMulDoc"};
    s.quantize = quantize(O::div_then_add_int, kScaleType, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kScaleType);
    s.requantize = ideal_requantize(R::rne);
    s.accumulation = Accumulation::int32_wrap;  // "accumulation may overflow if and only if in 32 bits"
    s.qparams = "onnx-dynamic-quantize-linear";
    // QLinearAdd (com.microsoft) is defined by its formula, like QLinearMatMul: exact, ties to even.
    s.add = AddPolicy{AddScheme::ideal, R::rne};
    add(s);
  }
  {
    Spec s;
    s.name = "onnx-reference";
    s.description =
        "onnx.reference (NumPy): np.rint(x / y_scale) in the promoted dtype, astype(int32), + zp, clip; "
        "dequantize in f32 then cast; QLinearMatMul rint(C * (a_s*b_s/y_s) + y_zp) with an f64 product";
    s.sources = {"onnx/onnx onnx/reference/ops/op_quantize_linear.py::_CommonQuantizeLinear._run",
                 "onnx/onnx onnx/reference/ops/op_dequantize_linear.py",
                 "onnx/onnx onnx/reference/ops/op_qlinear_matmul.py"};
    // x86 astype(int32) of NaN gives INT_MIN, which the clip takes to qmin (inferred).
    s.quantize = quantize(O::div_then_add_int, kScaleType, R::rne, Clamp::int_after, NanRule::to_qmin);
    s.dequantize = dequantize(DequantizeOrder::sub_float_then_mul, kPresetF32);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF64,
                                    ZeroPointAdd::float_before_rounding, R::rne, Clamp::int_after);
    s.accumulation = Accumulation::int32_wrap;  // np.matmul on int32 arrays
    s.qparams = "onnx-dynamic-quantize-linear";
    add(s);
  }
  // ---- ONNX Runtime ---------------------------------------------------------------------------
  {
    Spec s;
    s.name = "ort-cpu";
    s.description =
        "ONNX Runtime CPU (MLAS): f32 x / s, clamp in float to [qmin-zp, qmax-zp], cvtps2dq (ties to even), "
        "+ zp; NaN -> qmin; f16 input divides in f32, an int32 cast (NaN, inf, overflow -> INT32_MIN) + zp "
        "wrapping; requantize with an f32 multiplier";
    s.sources = {
        "microsoft/onnxruntime onnxruntime/core/mlas/lib/quantize.cpp::MlasQuantizeLinearVector",
        "microsoft/onnxruntime onnxruntime/core/util/qmath.h::ParQuantizeLinearStd (after PR #32452)",
        "microsoft/onnxruntime onnxruntime/core/providers/cpu/quantization/quantize_linear.cc::DequantizeLinearApply",
        "microsoft/onnxruntime onnxruntime/core/providers/cpu/quantization/qlinearconv.cc::ComputeOutputScale"};
    s.quantize = quantize(O::div_then_add_int, kPresetF32, R::rne, Clamp::float_before, NanRule::to_qmin);
    // f16 input: static_cast<int32_t>(std::nearbyint(x / s)) + zp, then the clamp. The cast is
    // cvttss2si on x86-64: NaN, +-inf and |x/s| >= 2^31 give INT32_MIN, and the int32 + zp wraps
    // (measured with onnxruntime-node 1.30: f16 +inf, s 1, i8 zp -1 -> 127).
    s.quantize_half_input = quantize(O::div_then_add_int, kPresetF32, R::rne, Clamp::int_after, NanRule::unspecified);
    s.quantize_half_input->cast = IntCast::x86_int32;
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                    ZeroPointAdd::int_after_rounding, R::rne, Clamp::float_before);
    s.qparams = "ort-dynamic";
    s.sources.push_back("microsoft/onnxruntime onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp");
    s.add = AddPolicy{AddScheme::ort_mlas_avx2, R::rne};
    add(s);
    Spec old = s;
    old.name = "ort-cpu@pre-pr32452";
    old.description = "ONNX Runtime CPU before PR #32452: f16 inputs truncated (static_cast<int32_t>(x/s)) in f32";
    old.sources.push_back("microsoft/onnxruntime PR #32452 'Fix float16 QuantizeLinear rounding on CPU'; issue #18576");
    old.quantize_half_input = quantize(O::div_then_add_int, kPresetF32, R::rtz, Clamp::int_after, NanRule::unspecified);
    old.quantize_half_input->cast = IntCast::x86_int32;  // the same static_cast<int32_t>
    add(old);
    // On an x86 CPU without VNNI, MLAS's u8 x s8 GEMM kernels (MlasGemmU8S8KernelAvx2, ...Avx512Core)
    // multiply the raw bytes with vpmaddubsw: adjacent products summed and saturated to int16, the
    // zero points applied afterwards from row and column sums. Pairs run along K for MatMulInteger
    // and QLinearMatMul and along (kh, kw, c) for QLinearConv, which reorders the filter to
    // [KH*KW, C, OC] and runs NHWC. Measured with onnxruntime-node 1.30 under qemu-x86_64 -cpu max
    // (AVX2 and FMA, no VNNI): MatMulInteger/QLinearMatMul u8 x s8 match these pairs element for
    // element; s8 x s8, u8 x u8 and s8 x u8 are exact (accumulation_for_operands).
    Spec pairs = s;
    pairs.name = "ort-cpu@x86-vpmaddubsw";
    pairs.description =
        "ONNX Runtime CPU on x86 without VNNI (AVX2, AVX-512 without VNNI): ort-cpu, with u8 x s8 products of raw "
        "bytes paired and saturated to int16 (vpmaddubsw) along K, and along (kh, kw, c) in convolutions";
    pairs.sources.push_back("microsoft/onnxruntime onnxruntime/core/mlas/lib/platform.cpp (U8S8 dispatch per ISA)");
    pairs.sources.push_back(
        "microsoft/onnxruntime onnxruntime/core/mlas/lib/x86_64/QgemmU8S8KernelAvx2.S (vpmaddubsw, vpmaddwd)");
    pairs.sources.push_back(
        "microsoft/onnxruntime onnxruntime/core/providers/cpu/quantization/qlinearconv.cc::ReorderFilter");
    pairs.accumulation = Accumulation::int16_pair_saturate;
    pairs.zero_points = ZeroPointCorrection::compensate;
    pairs.conv_depth_order = ConvDepthOrder::kh_kw_c;
    add(pairs);
  }
  {
    Spec s;
    s.name = "ort-cuda";
    s.description =
        "ONNX Runtime CUDA: __float2int_rn(v / scale) + zp (half division for f16), int clamp; "
        "NaN -> zero point (cvt.rni gives 0); dequantize multiplies in the output type";
    s.sources = {
        "microsoft/onnxruntime onnxruntime/core/providers/cuda/tensor/quantize_linear.cu::RoundStd",
        "microsoft/onnxruntime onnxruntime/core/providers/cuda/tensor/quantize_linear.cu::DequantizeLinearKernel"};
    s.quantize = quantize(O::div_then_add_int, kScaleType, R::rne, Clamp::int_after, NanRule::to_zero_point);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kScaleType);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                    ZeroPointAdd::int_after_rounding, R::rne, Clamp::float_before);
    s.qparams = "ort-dynamic";
    add(s);
  }
  // ---- TFLite, gemmlowp -----------------------------------------------------------------------
  {
    Spec s;
    s.name = "tflite-reference";
    s.description =
        "TFLite reference: round(x / (float)scale) + zp with std::round (ties away), dequantize in double, "
        "requantize by gemmlowp double rounding (SRDHM then RoundingDivideByPOT)";
    s.sources = {"tensorflow/tensorflow tensorflow/lite/kernels/internal/reference/quantize.h::AffineQuantize",
                 "tensorflow/tensorflow tensorflow/lite/kernels/internal/reference/dequantize.h::Dequantize",
                 "tensorflow/tensorflow tensorflow/lite/kernels/internal/common.cc::MultiplyByQuantizedMultiplier",
                 "tensorflow/tensorflow tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier"};
    s.quantize = quantize(O::div_then_add_int, kPresetF32, R::rna, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF64);
    s.requantize = requantize_policy_for(S::gemmlowp_double);
    s.qparams = "tflite";
    add(s);
  }
  {
    Spec s;
    s.name = "gemmlowp";
    s.description =
        "gemmlowp fixed point: Q31 multiplier from frexp (round half away), ShiftLeft saturating (scalar), "
        "SaturatingRoundingDoublingHighMul (ties up) then RoundingDivideByPOT (ties away)";
    // The scalar fixedpoint.h, which gemmlowp's reference kernel path runs (measured: Debian's
    // libgemmlowp-dev 2021-12-20, GemmWithOutputPipeline; multiplier 100 on acc 2^24 gives 32767 in i16,
    // where TFLite's wrapping shift gives -32768). SIMD builds (fixedpoint_sse.h) wrap instead.
    s.sources = {
        "google/gemmlowp fixedpoint/fixedpoint.h::ShiftLeft, SaturatingRoundingDoublingHighMul, RoundingDivideByPOT",
        "google/gemmlowp internal/output.h::OutputStageEvalImpl<OutputStageScaleInt32ByFixedPointAndExponent>",
        "tensorflow/tensorflow tensorflow/lite/kernels/internal/quantization_util.cc::QuantizeMultiplier",
        "tensorflow/tensorflow tensorflow/lite/kernels/internal/quantization_util.h::ChooseQuantizationParams"};
    s.quantize = quantize(O::div_then_add_int, kPresetF32, R::rna, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF64);
    s.requantize = requantize_policy_for(S::gemmlowp_scalar);
    s.qparams = "tflite";
    add(s);
  }
  // ---- TOSA, StableHLO ------------------------------------------------------------------------
  for (const bool dbl : {false, true}) {
    Spec s;
    s.name = dbl ? "tosa-double" : "tosa-single";
    s.description = std::string("TOSA: CAST float->int ties to even, saturating; RESCALE apply_scale_32 with ") +
                    (dbl ? "DOUBLE_ROUND (gemmlowp-identical)" : "SINGLE_ROUND (ties up)") + ", multiplier by frexp";
    s.sources = {"arm/tosa-specification pseudocode/library/scale_helpers.tosac::apply_scale_32",
                 "arm/tosa-specification pseudocode/operators/RESCALE.tosac",
                 "arm/tosa-specification chapters/type_conversion.adoc (CAST)"};
    s.quantize = quantize(O::div_then_add_int, kScaleType, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kScaleType);
    s.requantize = requantize_policy_for(dbl ? S::tosa_double : S::tosa_single);
    s.accumulation = Accumulation::int32_wrap;
    s.qparams = "tflite";
    add(s);
  }
  {
    Spec s;
    s.name = "stablehlo-spec";
    s.description =
        "StableHLO spec: quantize clamp(x / scale + zp) in float, then round_nearest_even; "
        "ops on quantized tensors are dequantize -> float op -> quantize";
    s.sources = {"openxla/stablehlo docs/spec.md 'Quantization computations' def quantize, def dequantize",
                 "openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp::matchAndRewriteQuantize"};
    s.quantize = quantize(O::div_add_float, kScaleType, R::rne, Clamp::float_before, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kScaleType);
    s.requantize = float_requantize(MultiplierOrder::per_op, kPresetF32, kPresetF32,
                                    ZeroPointAdd::float_before_rounding, R::rne, Clamp::float_before);
    s.accumulation = Accumulation::exact;
    s.qparams = "tflite";
    add(s);
    Spec low = s;
    low.name = "stablehlo-lowering";
    low.description =
        "StableHLO legalize-quant-to-math: as the spec for quantize; dot/conv rescale f32(acc) * f32 scale "
        "then convert (truncates)";
    low.sources.push_back(
        "openxla/stablehlo stablehlo/transforms/StablehloLegalizeQuantToMath.cpp (dot_general lowering)");
    low.requantize = requantize_policy_for(S::stablehlo_truncate);
    low.accumulation = Accumulation::int32_wrap;
    add(low);
  }
  // ---- XNNPACK, oneDNN ------------------------------------------------------------------------
  for (const bool rndnu : {false, true}) {
    Spec s;
    s.name = rndnu ? "xnnpack-rndnu" : "xnnpack-fp32";
    s.description = std::string("XNNPACK: x * (1/s) clamped in float, lrintf (ties to even), + zp; requantize ") +
                    (rndnu ? "rndnu: (acc*M24 + 2^(s-1)) >> s from the f32 scale's significand (ties up)"
                           : "fp32: lrintf(clamp((float)acc * scale)) + zp");
    s.sources = {"google/XNNPACK src/f32-qs8-vcvt/gen/f32-qs8-vcvt-scalar-lrintf-u1.c",
                 "google/XNNPACK src/microparams-init.c::xnn_init_f32_qs8_cvt_scalar_params",
                 rndnu ? "google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_rndnu"
                       : "google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_fp32"};
    s.quantize = quantize(O::recip_then_add_int, kPresetF32, R::rne, Clamp::float_before, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = requantize_policy_for(rndnu ? S::xnnpack_rndnu : S::xnnpack_fp32);
    s.sources.push_back("google/XNNPACK src/qs8-vadd/gen/qs8-vadd-minmax-scalar-u1.c; src/microparams-init.c");
    s.add = AddPolicy{AddScheme::xnnpack_vadd, R::rne};
    s.qparams = "xnnpack-qd8";
    add(s);
    if (!rndnu) {
      // The x86 SIMD converts clamp with min_ps(x * (1/s), qmax - zp) first, and min_ps returns its
      // second operand for NaN: NaN -> qmax (measured: Debian's libxnnpack 2022-02-16 ae108ef on
      // AVX512, f32-qs8-vcvt avx512skx; the SSE2 and AVX2 kernels clamp the same way).
      Spec x86 = s;
      x86.name = "xnnpack-fp32@2022.02-x86";
      x86.description = "xnnpack-fp32 as XNNPACK 2022-02 computes it with its x86 SIMD kernels: NaN -> qmax";
      x86.sources.push_back("google/XNNPACK src/f32-qs8-vcvt/gen/vcvt-avx512skx-x128.c (_mm512_min_ps)");
      x86.sources.push_back("google/XNNPACK src/init.c (x86: *_minmax_fp32_* microkernels at every ISA level)");
      x86.quantize.nan = NanRule::to_qmax;
      add(x86);
    }
  }
  {
    Spec s;
    s.name = "onednn";
    s.description =
        "oneDNN: dst = x / scale_dst + zp_dst in f32, saturate in float, nearbyintf; conv epilogue "
        "((float)acc * src_scale * wei_scale) / dst_scale + dst_zp, each op in f32";
    s.sources = {"uxlfoundation/oneDNN src/cpu/simple_q10n.hpp::saturate_and_round",
                 "uxlfoundation/oneDNN src/cpu/ref_convolution_int8.cpp",
                 "uxlfoundation/oneDNN doc/functional_api/programming_model/attributes_quantization.md"};
    s.quantize = quantize(O::div_add_float, kPresetF32, R::rne, Clamp::float_before, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = float_requantize(MultiplierOrder::per_op, kPresetF32, kPresetF32,
                                    ZeroPointAdd::float_before_rounding, R::rne, Clamp::float_before);
    s.qparams = "ort-dynamic";
    add(s);
  }
  {
    // oneDNN 2.x leaves the scales to the user: a quantizing reorder takes alpha = 1/s (output
    // scales), an int8 matmul or convolution the output multiplier (s_in*s_w)/s_out, each formed in
    // f32 by the caller (measured: Debian's libdnnl 2.6.3 on AVX512-VNNI, jit:uni reorder and
    // brg:avx512_core_vnni matmul, with those multipliers formed left to right in f32).
    Spec s;
    s.name = "onednn@2.6";
    s.description =
        "oneDNN 2.6 (x64, VNNI): quantize rne(x * (1/s) + zp) in f32, saturated in float (NaN: qmax for s8, "
        "qmin for u8); dequantize (q - zp) * s in f32; epilogue rne(f32(acc) * m + zp) with m = s_in*s_w/s_out "
        "in f32";
    s.sources = {"oneapi-src/oneDNN@v2.6.3 src/cpu/x64/jit_uni_reorder.cpp",
                 "oneapi-src/oneDNN@v2.6.3 src/cpu/x64/jit_generator.hpp::saturate_f32",
                 "oneapi-src/oneDNN@v2.6.3 src/cpu/simple_q10n.hpp::saturate_and_round",
                 "oneapi-src/oneDNN@v2.6.3 src/cpu/x64/brgemm/jit_brgemm_kernel.cpp::store_accumulators_apply_post_ops",
                 "oneapi-src/oneDNN@v2.6.3 src/cpu/matmul/ref_matmul_int8.cpp"};
    s.quantize =
        quantize(O::recip_add_float, kPresetF32, R::rne, Clamp::float_before, NanRule::to_qmax_signed_qmin_unsigned);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                    ZeroPointAdd::float_before_rounding, R::rne, Clamp::float_before);
    s.qparams = "ort-dynamic";
    add(s);
    // Without VNNI an int8 matmul runs gemm_s8u8s32 (impl gemm:jit): vpmaddubsw pairs of raw bytes
    // saturated to int16, s8 sources shifted to u8 by +128 and compensated, the zero points applied
    // from row and column sums, and the pairs restarting at the driver's K blocks, whose sizes depend
    // on the ISA. A convolution given plain (OIHW) weights runs ref_int8, exact. Measured with Debian's
    // libdnnl 2.6.3 under ONEDNN_MAX_CPU_ISA=AVX2 and =AVX512_CORE: a pair (t, t+1) saturates iff t is
    // even within its block (AVX2, K = 257: blocks [0, 129) and [129, 257); AVX-512, K = 769: [0, 385)
    // and [385, 769)), for M = 1..64, N = 1..K and 1..16 threads.
    for (const PairRule rule : {PairRule::x8s8_avx2_k_blocks, PairRule::x8s8_avx512_k_blocks}) {
      const bool avx2 = rule == PairRule::x8s8_avx2_k_blocks;
      Spec pairs = s;
      pairs.name = avx2 ? "onednn@2.6-x86-avx2" : "onednn@2.6-x86-avx512-core";
      pairs.description =
          std::string("oneDNN 2.6 on x86 ") + (avx2 ? "AVX2" : "AVX-512") +
          " without VNNI: onednn@2.6, with matmul's u8/s8 x s8 products paired and saturated to int16 (vpmaddubsw; "
          "s8 shifted by +128) in the GEMM driver's K blocks; convolutions exact";
      pairs.sources.push_back("oneapi-src/oneDNN@v2.6.3 src/cpu/x64/gemm/gemm_driver.cpp::get_k_padd");
      pairs.sources.push_back(
          "oneapi-src/oneDNN@v2.6.3 src/cpu/x64/gemm/gemm_info.cpp (bk, bk_traditional; "
          "prepare_bo: s8 offset + 128)");
      pairs.sources.push_back(std::string("oneapi-src/oneDNN@v2.6.3 src/cpu/x64/gemm/s8x8s32/") +
                              (avx2 ? "jit_avx2_gemm_s8u8s32_kern.cpp" : "jit_avx512_core_gemm_s8u8s32_kern.cpp"));
      pairs.sources.push_back("oneapi-src/oneDNN@v2.6.3 src/cpu/ref_convolution_int8.cpp");
      pairs.accumulation = Accumulation::int16_pair_saturate;
      pairs.zero_points = ZeroPointCorrection::compensate;
      pairs.pair_rule = rule;
      pairs.conv_accumulation = Accumulation::int32_wrap;
      add(pairs);
    }
  }
  // ---- PyTorch --------------------------------------------------------------------------------
  {
    Spec s;
    s.name = "pytorch-cpu";
    s.description =
        "PyTorch CPU (FBGEMM): zp + nearbyint(x * (1.f/scale)); NaN -> qmax (AVX2 min_ps); "
        "requantize lrintf(acc * (in_scale*w_scale/out_scale in f32)) + zp";
    s.sources = {"pytorch/FBGEMM include/fbgemm/QuantUtils.h::Quantize",
                 "pytorch/FBGEMM src/QuantUtilsAvx2.cc::QuantizeAvx2",
                 "pytorch/FBGEMM include/fbgemm/OutputProcessing-inl.h::ReQuantizeOutput::f",
                 "pytorch/pytorch aten/src/ATen/native/quantized/AffineQuantizerBase.cpp::quantize_val"};
    s.quantize = quantize(O::recip_then_add_int, kPresetF32, R::rne, Clamp::int_after, NanRule::to_qmax);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                    ZeroPointAdd::int_after_rounding, R::rne, Clamp::int_after);
    s.qparams = "pytorch-observer-affine";
    add(s);
  }
  // PyTorch 1.13 built without FBGEMM (Debian's python3-torch), engines onednn and qnnpack. Quantize is
  // quantize_val's scalar form: zp + nearbyint(x * (1.f / s)) with the add in float, then a cast to
  // int64 (cvttss2si: NaN, +-inf and values past 2^63 give INT64_MIN, which the clamp takes to qmin).
  // Measured on about 1.4M elements per engine (python/tests/test_peer_torch.py).
  for (const bool onednn : {true, false}) {
    Spec s;
    s.name = onednn ? "pytorch-onednn@1.13" : "pytorch-qnnpack@1.13";
    s.description =
        std::string("PyTorch 1.13 without FBGEMM, engine ") + (onednn ? "onednn" : "qnnpack") +
        ": quantize (int64)(zp +. nearbyint(x * (1.f/s))) (NaN, inf -> qmin); dequantize (q - zp) * s in f32; " +
        (onednn ? "requantize rne(f32(acc) * ((1/s_out) / ((1/s_in) * (1/s_w))) + zp) in f32, reciprocals rounded"
                : "requantize rne(f32(acc) * ((s_in * s_w) * (1/s_out))) + zp");
    s.sources = {"pytorch/pytorch@v1.13.1 aten/src/ATen/native/quantized/AffineQuantizerBase.cpp::quantize_val",
                 "pytorch/pytorch@v1.13.1 aten/src/ATen/native/quantized/AffineQuantizerBase.cpp::dequantize_val"};
    if (onednn) {
      s.sources.push_back(
          "pytorch/pytorch@v1.13.1 aten/src/ATen/native/quantized/cpu/qlinear.cpp::"
          "PackedLinearWeightsOnednn::apply_impl");
      s.sources.push_back(
          "intel/ideep@pytorch-rls-v2.6.0 include/ideep/operators/matmul.hpp::do_prepare, "
          "include/ideep/utils.hpp::compute_scales");
    } else {
      s.sources.push_back(
          "pytorch/pytorch@v1.13.1 aten/src/ATen/native/quantized/cpu/qnnpack/src/requantization/"
          "fp32-sse2.c; aten/src/ATen/native/quantized/cpu/qnnpack_utils.h::generate_requantization_scales");
    }
    s.quantize = quantize(O::recip_round_then_add_float, kPresetF32, R::rne, Clamp::int_after, NanRule::unspecified);
    s.quantize.cast = IntCast::x86_int64;
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = onednn ? float_requantize(MultiplierOrder::reciprocal_scales, kPresetF32, kPresetF32,
                                             ZeroPointAdd::float_before_rounding, R::rne, Clamp::float_before)
                          : float_requantize(MultiplierOrder::product_times_reciprocal, kPresetF32, kPresetF32,
                                             ZeroPointAdd::int_after_rounding, R::rne, Clamp::int_after);
    s.qparams = "pytorch-observer-affine";
    add(s);
  }
  {
    Spec s;
    s.name = "pytorch-cuda";
    s.description =
        "PyTorch CUDA: nearbyint(x / scale) + zp with a double scale (f64 division); dequantize "
        "(float(q) - zp) * double scale";
    s.sources = {
        "pytorch/pytorch "
        "aten/src/ATen/native/quantized/cuda/AffineQuantizer.cu::quantize_tensor_per_tensor_affine_cuda",
        "pytorch/pytorch issue #153340 (NaN differs from CPU)"};
    s.quantize = quantize(O::div_then_add_int, kPresetF64, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF64);
    s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                    ZeroPointAdd::int_after_rounding, R::rne, Clamp::int_after);
    s.qparams = "pytorch-observer-affine";
    add(s);
  }
  // ---- MIGraphX -------------------------------------------------------------------------------
  {
    Spec s;
    s.name = "migraphx-ref";
    s.description =
        "MIGraphX reference: nearbyint(x / s) (x type == scale type) + zp in double, clamp; "
        "dequantize ((double)x - zp) * scale";
    s.sources = {"ROCm/AMDMIGraphX src/include/migraphx/op/quantizelinear.hpp::quantizelinear::compute",
                 "ROCm/AMDMIGraphX src/include/migraphx/op/dequantizelinear.hpp",
                 "ROCm/AMDMIGraphX src/simplify_qdq.cpp::match_find_quantizable_ops"};
    s.quantize = quantize(O::div_then_add_int, kInputType, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF64);
    s.requantize = float_requantize(MultiplierOrder::per_op, kPresetF32, kPresetF32, ZeroPointAdd::int_after_rounding,
                                    R::rne, Clamp::int_after);
    s.qparams = "onnx-dynamic-quantize-linear";
    add(s);
    Spec old = s;
    old.name = "migraphx-ref@2023.10";
    old.description = "MIGraphX reference before late 2023: std::round (ties away) into int64, + zp, clamp";
    old.sources.push_back(
        "ROCm/AMDMIGraphX src/include/migraphx/op/quantizelinear.hpp (history: std::round -> nearbyint)");
    old.quantize.rounding = R::rna;
    add(old);
  }
  {
    Spec s;
    s.name = "migraphx-gpu";
    s.description =
        "MIGraphX GPU lowering: convert x to the scale type, divide, nearbyint, + convert(zp) in the scale "
        "type (fp16 for fp16 scales), clip, convert";
    s.sources = {"ROCm/AMDMIGraphX src/rewrite_quantization.cpp::apply_quantizelinear, apply_dequantizelinear",
                 "ROCm/AMDMIGraphX src/targets/gpu/kernels/include/migraphx/kernels/math.hpp"};
    s.quantize = quantize(O::round_then_add_float, kScaleType, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_float_then_mul, kScaleType);
    s.requantize = float_requantize(MultiplierOrder::per_op, kScaleType, kScaleType, ZeroPointAdd::int_after_rounding,
                                    R::rne, Clamp::int_after);
    s.qparams = "onnx-dynamic-quantize-linear";
    add(s);
    // The seed's "Alternative 2": QuantizeLinear composed of MIGraphX's own div, round, add, clip
    // and convert ops. op::round is std::round, so ties go away from zero where the GPU rewrite's
    // nearbyint goes to even; everything else is the rewrite's.
    Spec alt = s;
    alt.name = "migraphx-clip-round-convert";
    alt.description =
        "QuantizeLinear as MIGraphX's div, round, add, clip and convert ops: std::round (ties away) of x / s "
        "in the scale type, + convert(zp) in the scale type, clip, convert";
    alt.sources = {"ROCm/AMDMIGraphX src/include/migraphx/op/round.hpp::round::apply (std::round)",
                   "ROCm/AMDMIGraphX src/include/migraphx/op/clip.hpp, op/convert.hpp",
                   "ROCm/AMDMIGraphX src/rewrite_quantization.cpp::apply_quantizelinear (the op order)"};
    alt.quantize.rounding = R::rna;
    add(alt);
  }
  {
    // rocMLIR lowers migraphx.quantizelinear to TOSA: x * reciprocal(s) in x's type, tosa.cast to
    // int32 (round to nearest even, saturating), + zp in int32, clamp, cast. The reciprocal is
    // modelled correctly rounded (TOSA allows RECIPROCAL an error of 1 ulp).
    Spec s;
    s.name = "rocmlir-tosa";
    s.description =
        "rocMLIR MIGraphX->TOSA lowering: x * reciprocal(s) in x's type, tosa.cast to i32 (ties to even, "
        "saturating), + zp in int32, clamp; dequantize (convert(x) - convert(zp)) * s in the scale type";
    s.sources = {"ROCm/rocMLIR mlir/lib/Conversion/MIGraphXToTosa/MIGraphXToTosa.cpp::QuantizeLinearConverter",
                 "ROCm/rocMLIR mlir/lib/Conversion/MIGraphXToTosa/MIGraphXToTosa.cpp::DeQuantizeLinearConverter",
                 "arm/tosa-specification chapters/type_conversion.adoc (CAST: round to nearest even, saturate)"};
    s.quantize = quantize(O::recip_then_add_int, kInputType, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_float_then_mul, kScaleType);
    s.requantize = float_requantize(MultiplierOrder::per_op, kScaleType, kScaleType, ZeroPointAdd::int_after_rounding,
                                    R::rne, Clamp::int_after);
    s.qparams = "onnx-dynamic-quantize-linear";
    add(s);
  }
  // ---- TVM ------------------------------------------------------------------------------------
  for (const bool upward : {true, false}) {
    Spec s;
    s.name = upward ? "tvm-upward" : "tvm-tonearest";
    s.description = std::string(
                        "TVM Relay QNN: Round(x / scale) + f32(zp), clip, cast (Round ties to even since PR "
                        "#19368); requantize int64 fixed point ") +
                    (upward ? "UPWARD (q_multiply_shift, ties up)" : "TONEAREST (ties away)");
    s.sources = {"apache/tvm src/relay/qnn/op/quantize.cc::QuantizeLower",
                 "apache/tvm src/relay/qnn/op/requantize.cc (rounding UPWARD/TONEAREST)",
                 "apache/tvm PR #19368 (tir.round lowered to ties-to-even)"};
    s.quantize = quantize(O::round_then_add_float, kPresetF32, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    RequantizePolicy r = requantize_policy_for(upward ? S::tflite_single : S::qnnpack_precise);
    // UPWARD: GetFixedPointMultiplierShift (frexp + std::round) then q_multiply_shift. TONEAREST is
    // modelled by QNNPACK's exact round-half-away shift with the f32 significand as multiplier; TVM
    // derives that multiplier by frexp in double instead (not modelled).
    if (upward) r.derivation = MultiplierDerivation::tflite;
    s.requantize = r;
    s.qparams = "tflite";
    add(s);
    Spec old = s;
    old.name = s.name + "@2026.03";
    old.description = s.name + " before PR #19368 (2026-04): tir.round lowered to llvm.round (ties away from zero)";
    old.quantize.rounding = R::rna;
    add(old);
  }
  // ---- Glow -----------------------------------------------------------------------------------
  for (const bool cpu : {false, true}) {
    Spec s;
    s.name = cpu ? "glow-cpu" : "glow-interpreter";
    s.description = std::string("Glow: nearbyintf(x / scale + offset) (zp before rounding, f32), clip; requantize ") +
                    (cpu ? "libjit int32 pre-shift, multiply, post-shift (ties up, may wrap)"
                         : "std::round(float(acc) * (in*w/out) + offset) (ties away)");
    s.sources = {
        "pytorch/glow include/glow/Quantization/Base/Base.h::quantize",
        cpu ? "pytorch/glow lib/Quantization/Base/Base.cpp::quantizeScaleOffset32To8; libjit_defs.h::libjit_scale"
            : "pytorch/glow lib/Backends/Interpreter/InterpreterNodes.cpp (conv)"};
    s.quantize = quantize(O::div_add_float, kPresetF32, R::rne, Clamp::int_after, NanRule::unspecified);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = cpu ? requantize_policy_for(S::glow_int32)
                       : float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                          ZeroPointAdd::float_before_rounding, R::rna, Clamp::int_after);
    s.qparams = "glow-asymmetric";
    add(s);
  }
  // ---- qconform's own x86 kernels (backends/vnni) -----------------------------------------
  for (const bool maddubs : {false, true}) {
    Spec s;
    s.name = maddubs ? "x86-avx2-vpmaddubsw" : "x86-vnni";
    s.description = std::string("x86 int8 kernels: MLAS-style quantize (x/s clamped in f32, RNE), ") +
                    (maddubs ? "vpmaddubsw+vpmaddwd accumulation (adjacent u8 x s8 pairs saturate to int16; s8 "
                               "activations shifted by +128 first), "
                             : "vpdpbusd int32 accumulation (wraps), ") +
                    "zero points by compensation, f32 epilogue lrintf(acc * fl(fl(s_a*s_w)/s_out)) + zp";
    s.sources = {"uxlfoundation/oneDNN doc/advanced_topics/int8_computations.md (vpmaddubsw saturation, compensation)",
                 "microsoft/onnxruntime onnxruntime/core/mlas/lib/quantize.cpp::MlasQuantizeLinearVector",
                 "google/XNNPACK src/xnnpack/requantization.h::xnn_qs8_requantize_fp32 (the same f32 epilogue)",
                 "qconform backends/vnni/vnni.hpp (the kernels' contract)"};
    s.quantize = quantize(O::div_then_add_int, kPresetF32, R::rne, Clamp::float_before, NanRule::to_qmin);
    s.dequantize = dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32);
    s.requantize = requantize_policy_for(S::xnnpack_fp32);
    s.accumulation = maddubs ? Accumulation::int16_pair_saturate : Accumulation::int32_wrap;
    if (maddubs) s.pair_rule = PairRule::x8s8_shifted_whole_k;
    s.zero_points = ZeroPointCorrection::compensate;
    s.qparams = "ort-dynamic";
    // qadd: backends/vnni/elementwise.cpp runs MLAS's AVX2 QLinearAdd arithmetic (f32 ratios, two FMAs,
    // cvtps2dq, saturating packs), the ORT half of the epilogue family these kernels follow.
    s.sources.push_back("microsoft/onnxruntime onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp");
    s.add = AddPolicy{AddScheme::ort_mlas_avx2, R::rne};
    add(s);
  }
  // ---- qconform's own GPU kernels (backends/hip) -----------------------------------------
  // One preset per numerics variant of the hip backend (docs/hip.md). Common to all: int32
  // accumulation that wraps (dp4a, sdot4 and the s32 mma add modulo 2^32), zero points by
  // compensation, and the f32 epilogue of ORT CUDA and XNNPACK fp32: multiplier fl(fl(s_in*s_w)/s_out),
  // f32 product, clamp in float, round, + zp; dequantized outputs float(acc) * fl(s_a*s_w) (+ bias).
  // NaN: the kernels convert NaN to the integer 0 (cvt.rni.s32.f32 semantics), then add zp when
  // the form adds it in integers.
  {
    auto gpu = [&](std::string name, std::string description, std::vector<std::string> sources, QuantizePolicy q,
                   DequantizePolicy d, R rounding) {
      Spec s;
      s.name = std::move(name);
      s.description = std::move(description);
      s.sources = std::move(sources);
      s.sources.push_back("qconform backends/hip/numerics.hpp (the kernels' contract)");
      s.quantize = q;
      s.dequantize = d;
      s.requantize = float_requantize(MultiplierOrder::left_to_right, kPresetF32, kPresetF32,
                                      ZeroPointAdd::int_after_rounding, rounding, Clamp::float_before);
      s.accumulation = Accumulation::int32_wrap;
      s.zero_points = ZeroPointCorrection::compensate;
      s.qparams = "ort-dynamic";
      add(s);
    };
    const std::string ort_cuda = "microsoft/onnxruntime onnxruntime/core/providers/cuda/tensor/quantize_linear.cu";
    gpu("gpu-div",
        "GPU f32: __float2int_rn(x / s) + zp (IEEE f32 division, f16 scales widened to f32), int clamp, NaN -> zp; "
        "dequantize float(q - zp) * s in f32",
        {ort_cuda + "::RoundStd<float> (__float2int_rn(v / scale) + zp)",
         ort_cuda + "::DequantizeLinearKernel (static_cast<OutT>(v - zp) * scale)",
         "NVIDIA CUDA Math API __fdiv_rn, __float2int_rn (nvcc -prec-div=true: IEEE division)"},
        quantize(O::div_then_add_int, kPresetF32, R::rne, Clamp::int_after, NanRule::to_zero_point),
        dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32), R::rne);
    gpu("gpu-recip",
        "GPU f32 reciprocal: __float2int_rn(x * __frcp_rn(s)) + zp (1/s rounded to f32 first), int clamp, NaN -> zp",
        {"pytorch/FBGEMM include/fbgemm/QuantUtils.h::Quantize (nearbyint(src * (1.0f / scale)) + zp)",
         "pytorch/pytorch torch/ao/quantization/fx/_decomposed.py::quantize_per_tensor (round(input * (1.0 / "
         "scale)) + zp)",
         "NVIDIA CUDA Math API __frcp_rn (correctly rounded reciprocal)"},
        quantize(O::recip_then_add_int, kPresetF32, R::rne, Clamp::int_after, NanRule::to_zero_point),
        dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32), R::rne);
    gpu("gpu-f16",
        "GPU binary16 for f16 scales: __half2int_rn(x_h / s_h) + zp (x converted to f16, correctly rounded f16 "
        "division); dequantize (half)(q - zp) * s_h; f32 scales as gpu-div",
        {ort_cuda + "::RoundStd<half> (__half2int_rn(v / scale) + zp)",
         ort_cuda + "::DequantizeLinearKernel (the multiply in OutT = half)",
         "ROCm/AMDMIGraphX src/rewrite_quantization.cpp::apply_quantizelinear (arithmetic in the scale's type)"},
        quantize(O::div_then_add_int, kScaleType, R::rne, Clamp::int_after, NanRule::to_zero_point),
        dequantize(DequantizeOrder::sub_int_then_mul, kScaleType), R::rne);
    const std::string fake_quant =
        "pytorch/pytorch aten/src/ATen/native/quantized/cuda/fake_quantize_core.cu::fake_quantize_slice_cuda "
        "(nearbyint(input_val * inv_scale + zero_point), inv_scale = 1.0f / scale)";
    const std::string new_zero_point =
        "tensorflow/tensorflow tensorflow/lite/kernels/internal/optimized/optimized_ops.h::ScaleWithNewZeroPoint "
        "(q * s - zp * s)";
    gpu("gpu-fma",
        "GPU affine forms contracted (nvcc --fmad=true): rint(fma(x, 1/s, zp)), NaN -> 0; dequantize "
        "fma(q, s, -(zp * s)); all in f32",
        {fake_quant, new_zero_point, "NVIDIA nvcc --fmad (default true: a*b+c contracted into one FFMA)"},
        quantize(O::fma_recip, kPresetF32, R::rne, Clamp::int_after, NanRule::to_zero),
        dequantize(DequantizeOrder::fma, kPresetF32), R::rne);
    gpu("gpu-nofma",
        "GPU affine forms not contracted (nvcc --fmad=false): rint(fl(fl(x * (1/s)) + zp)), NaN -> 0; dequantize "
        "fl(fl(q * s) - fl(zp * s)); all in f32",
        {fake_quant, new_zero_point, "NVIDIA nvcc --fmad=false (a multiply and an add, each rounded)"},
        quantize(O::recip_add_float, kPresetF32, R::rne, Clamp::int_after, NanRule::to_zero),
        dequantize(DequantizeOrder::mul_then_sub, kPresetF32), R::rne);
    gpu("gpu-roundf",
        "GPU roundf (ties away from zero): (int)roundf(x / s) + zp and roundf in the requantize epilogue; "
        "otherwise as gpu-div",
        {"apache/tvm src/target/source/intrin_rule_cuda.cc (round lowered to roundf before PR #19368)",
         "NVIDIA libdevice __nv_roundf (halfway cases rounded away from zero)",
         "pytorch/glow lib/Backends/OpenCL/kernels.cl::quantize (OpenCL round)"},
        quantize(O::div_then_add_int, kPresetF32, R::rna, Clamp::int_after, NanRule::to_zero_point),
        dequantize(DequantizeOrder::sub_int_then_mul, kPresetF32), R::rna);
  }
  return v;
}

}  // namespace

const std::vector<Spec>& presets() {
  static const std::vector<Spec> kPresets = make_presets();
  return kPresets;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<Spec> specs;
};

Registry& registry() {
  static Registry r;
  return r;
}

bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '@' || c == '-';
}

}  // namespace

bool is_builtin_preset(std::string_view name) {
  for (const Spec& s : presets())
    if (s.name == name) return true;
  return false;
}

std::optional<Spec> find_preset(std::string_view name) {
  for (const Spec& s : presets())
    if (s.name == name) return s;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (const Spec& s : r.specs)
    if (s.name == name) return s;
  return std::nullopt;
}

void register_preset(Spec s) {
  if (s.name.empty()) throw InputError("a custom preset needs a name");
  for (char c : s.name)
    if (!valid_name_char(c))
      throw InputError("preset name '" + s.name + "': '" + std::string(1, c) +
                       "' is not allowed (letters, digits, '.', '_', '@' and '-')");
  if (is_builtin_preset(s.name))
    throw InputError("preset '" + s.name + "' is built in: a custom preset needs another name");
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (const Spec& x : r.specs)
    if (x.name == s.name) throw InputError("preset '" + s.name + "' is already registered");
  r.specs.push_back(std::move(s));
}

std::vector<Spec> registered_presets() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.specs;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> v;
  for (const Spec& s : presets()) v.push_back(s.name);
  for (const Spec& s : registered_presets()) v.push_back(s.name);
  return v;
}

void clear_registered_presets() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.specs.clear();
}

}  // namespace qc
