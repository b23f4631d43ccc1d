// qadd: the quantized elementwise add (ONNX Runtime com.microsoft QLinearAdd, TFLite/XNNPACK
// quantized ADD, Glow's quantized BatchedAdd), per-tensor parameters:
//
//   C = saturate(round((sA·(A − zA) + sB·(B − zB)) / sC) + zC)
//
// A and B are i8/u8 (B may also be an i32, as a quantized bias is); C is i8 or u8. How real
// implementations evaluate it is an AddScheme, each one the arithmetic of the cited source:
//
//   ideal          the exact value rounded once under the policy's rounding, then saturated.
//   ort_mlas_avx2  onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp
//                  (MlasQLinearAddKernelAvx2Helper, what MlasQLinearAdd runs on x86-64 with AVX2),
//                  all in f32: rA = fl(sA / sC), rB = fl(sB / sC),
//                  F = fl(float(zC) − fl(fl(rA·zA) + fl(rB·zB))), then per element
//                  t = fma(a, rA, fma(b, rB, F)) with the raw integers a, b (a one-element B is
//                  folded into F first: F' = fl(F + fl(b·rB)), t = fma(a, rA, F'); qadd_b_folded says when), cvtps2dq
//                  (ties to even; out of int32 range: INT32_MIN), then the saturating packs to int16 and to the output
//                  type.
//   xnnpack_vadd   google/XNNPACK src/qs8-vadd/gen/qs8-vadd-minmax-scalar-u1.c with the parameters
//                  of src/microparams-init.c xnn_init_qs8_add_minmax_scalar_params: rA, rB as
//                  above (2^-10 <= |r| < 2^8), shift = 20 − exponent(max |r|) in [12, 30],
//                  mA = lrintf(rA·2^shift), mB likewise, bias = 2^(shift−1) − mA·zA − mB·zB, and per
//                  element (bias + a·mA + b·mB) >> shift (arithmetic: ties round up) + zC, clamped.
//                  Defined for i8/u8 operands only.
#pragma once

#include "oracles/exact.hpp"
#include "oracles/labels.hpp"
#include "qconform/dtype.hpp"
#include "qconform/enum_table.hpp"
#include "qconform/ops.hpp"
#include "qconform/rounding_mode.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace qc {

enum class AddScheme : std::uint8_t { ideal, ort_mlas_avx2, xnnpack_vadd };
inline constexpr EnumEntry<AddScheme> kAddSchemeTable[] = {
    {AddScheme::ideal, "ideal", "the exact value, rounded once under the policy's rounding, saturated"},
    {AddScheme::ort_mlas_avx2, "ort_mlas_avx2",
     "ONNX Runtime MLAS QLinearAdd on AVX2: f32 scale ratios, zero points folded into one f32 constant, "
     "two FMAs, cvtps2dq, saturating packs"},
    {AddScheme::xnnpack_vadd, "xnnpack_vadd",
     "XNNPACK qs8/qu8 vadd: 21-bit integer multipliers from the f32 ratios, int32 sum, rounding shift (ties up)"},
};
constexpr std::span<const EnumEntry<AddScheme>> enum_table(AddScheme) { return kAddSchemeTable; }
constexpr std::string_view name(AddScheme s) { return table_name(s); }
constexpr std::string_view describe(AddScheme s) { return table_description(s); }

struct AddPolicy {
  AddScheme scheme = AddScheme::ideal;
  RoundingMode rounding = RoundingMode::rne;  // the ideal scheme's (the others fix their own)
  bool operator==(const AddPolicy&) const = default;
};

// Per-tensor parameters. Scales are the values given (in their scale dtype, as every op takes them).
struct QAddParams {
  double a_scale = 1, b_scale = 1, out_scale = 1;
  std::int64_t a_zero_point = 0, b_zero_point = 0, out_zero_point = 0;
};

struct QAddElement {
  std::int64_t q = 0;
  Rational ideal;  // (sA·(a − zA) + sB·(b − zB)) / sC + zC, exactly
  Label label = Label::clear;
};

// The parameters of a QAddOp (each operand's one scale and zero point, the output's).
QAddParams qadd_params(const QAddOp& op);

// One element; `b_scalar`: the B element is one MLAS call's scalar B (qadd_b_folded), which
// ort_mlas_avx2 folds into its constant. Throws InputError for parameters the scheme does not define (naming the
// scheme and the bound).
QAddElement qadd_element(std::int64_t a, std::int64_t b, const QAddParams& p, DType out, const AddPolicy& policy,
                         bool b_scalar = false);

struct QAddResult {
  Tensor q;  // a's shape (B broadcast to it)
  std::vector<Rational> ideal;
  std::vector<Label> labels;
};

// B broadcast to A's shape by numpy's rule restricted to B's trailing dimensions matching A's
// (or 1), e.g. B [N] over A [M, N], B [1] over anything. Throws InputError for formats outside
// i8/u8 (A, C) or i8/u8/i32 (B), zero points outside their formats, non-positive or non-finite
// scales, and shapes that do not broadcast.
QAddResult qadd(const Tensor& a, const Tensor& b, const QAddParams& p, DType out, const AddPolicy& policy);

// Whether ONNX Runtime hands MLAS a scalar B: QLinearAdd (contrib_ops/cpu/quantization/
// qlinear_binary_op.cc, QLinearBroadcastLoop) calls MlasQLinearAdd once per span of A's innermost
// dimension of extent > 1 (trailing 1s merged into it), with LengthB == 1 (`input1scalar`) where
// B does not vary along that dimension: a one-element B, or B [M, 1] over A [M, N]. False when A
// has one element.
bool qadd_b_folded(const Shape& a, const Shape& b);

// The flat index of B that element i of A reads (the broadcast rule above); InputError if B's
// shape does not broadcast to A's.
std::vector<std::int64_t> qadd_broadcast_index(const Shape& a, const Shape& b);

}  // namespace qc
