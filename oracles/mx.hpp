// Block-scaled formats, exactly: OCP Microscaling (MX) v1.0 and NVIDIA's NVFP4.
//
// MX (OCP MX v1.0, sections 5 and 6.3): a block of 32 values V_i shares an E8M0 scale X = 2^e
// (e in [-127, 127]; code e + 127; 0xFF is NaN); element P_i = round(V_i / X) into the element
// format, saturating at its largest magnitude; the value is P_i * X. Elements: FP8 E4M3 (emax 8,
// max 448), FP8 E5M2 (15, 57344), FP6 E3M2 (4, 28), FP6 E2M3 (2, 7.5), FP4 E2M1 (2, 6) and INT8
// (k * 2^-6, |k| <= 127, emax 0). How e follows from the block's largest magnitude amax is where
// implementations part (MxScaleRule; each rule's source is above its definition in mx.cpp). Every
// rule: a block holding NaN or inf gets the NaN scale (all its values NaN); e below -127 (a zero
// block, or one of tiny values) is clamped to -127; e above 127 is the NaN scale.
//
// NVFP4 (torchao/prototype/mx_formats/nvfp4_tensor.py::_nvfp4_quantize, two-level scaling): E2M1
// elements over blocks of 16, an E4M3 block scale and a per-tensor f32 scale g (by default
// per_tensor_amax_to_scale: amax(x) / (448 * 6) in f32). In f32, step by step: b = amax_block / 6;
// s = b / g; s8 = e4m3(clamp(s, 2^-6, 448)); t = g * s8; P_i = e2m1(clamp(V_i / t, -6, 6)). The value
// is P_i * s8 * g, rounded once into f32.
//
// Element rounding is ties to even (OCP) or, as an option, ties away (microxcaling's "nearest",
// mx/elemwise_ops.py::_round_mantissa: sign(A) * floor(|A| + 0.5)). The fake-quantized output is
// f32: P_i * X is exact in f32 for every MX format (the smallest is 2^-143), except past f32's
// largest value (inf).
#pragma once

#include "oracles/format.hpp"
#include "oracles/labels.hpp"
#include "oracles/quantize.hpp"  // OraclePath
#include "qconform/ops.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qc {

struct MxElement {
  int bits = 8;      // code width
  int mbits = 3;     // fraction bits (MXINT8: 6, the implied 2^-6)
  int emin = -6;     // the smallest normal exponent (1 - bias)
  int emax = 8;      // emax_elem: the largest exponent (OCP table 1)
  double max = 448;  // the largest magnitude
  bool is_int = false;
};
const MxElement& mx_element(MxFormat f);

// The axis the blocks run along (checked against x's rank), and the scales' shape: x's with that
// dimension replaced by its block count. Throws InputError naming `where`.
int mx_axis(const MxBlocking& b, const Shape& x, const std::string& where);
Shape mx_scale_shape(const MxBlocking& b, const Shape& x);
// InputError "<field>: ..." unless an NVFP4 per-tensor scale, where given, is a positive finite f32
// value (field: the message's start, naming the field).
void mx_check_global_scale(const std::optional<double>& global_scale, MxFormat f, const std::string& field);

// The shared exponent e of an MX block whose largest magnitude is `amax` (nullopt: the NaN scale).
std::optional<int> mx_shared_exponent(const ExactFloat& amax, MxFormat f, MxScaleRule rule);
// v rounded to the element grid of `f` (m: rne or rna), saturating at +-max. v's sign is kept by the
// caller for a zero result.
Rational mx_round_element(const Rational& v, MxFormat f, RoundingMode m);

// The value of an element code (NaN/inf for E4M3's and E5M2's special codes). Throws InputError for
// a code wider than the format.
ExactFloat mx_element_value(std::uint64_t code, MxFormat f);
// The value of a block's scale code: E8M0 2^(code - 127) (0xFF: NaN), or for NVFP4 the E4M3 code's
// value times b.global_scale (which must be set).
ExactFloat mx_block_scale(std::uint64_t code, const MxBlocking& b);

struct MxQuantizeResult {
  Tensor y;                            // f32 values, shape of x
  Tensor elements;                     // u8 element codes, shape of x
  Tensor scales;                       // u8 scale codes (E8M0, or E4M3 for NVFP4), mx_scale_shape
  std::optional<double> global_scale;  // NVFP4: the per-tensor scale used
  std::vector<Label> labels;           // V_i / X against the element grid: tie, near_tie, saturated, special
  std::int64_t slow_elements = 0;      // how many elements the definition evaluated (see below)
};
// The definition (OraclePath::slow) evaluates every step on exact rationals. The fast path (mx.cpp)
// gives the same codes, values and labels from doubles: every MX element (each step is exact in
// double), and every NVFP4 element but those of a block whose g * s8 overflows or underflows in f32,
// which it hands to the definition.
MxQuantizeResult mx_quantize(const MxQuantizeOp& op, OraclePath path = OraclePath::fast);

// The values of element and scale codes (MxDequantizeOp), f32. The fast path multiplies the codes'
// values as doubles (exact) and rounds once, as the definition does on rationals.
Tensor mx_dequantize(const MxDequantizeOp& op, OraclePath path = OraclePath::fast);

}  // namespace qc
