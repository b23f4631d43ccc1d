// Weight-only (hybrid) quantized GEMM: float activations times dequantized int8/int4 weights with
// float accumulation (docs/design.md "Weight-only GEMM"). The accumulation order of a float GEMM
// is not specified, so the oracle gives (a) the exact real result of every element, (b) that
// result correctly rounded (RNE) into the output format, for ULP distances, and (c) the
// statistical dot-product check of the TOSA specification, which accepts any summation order of
// a correct kernel.
//
// Weights are the exact reals (q - zp) * s, or, with WeightOnlyPolicy::weight_format, the float
// values a kernel dequantizes them to (dequantize.hpp under WeightOnlyPolicy::dequantize, e.g.
// f16 weights for an f16 GEMM); either way the products and sums after that are exact.
//
// TOSA DOT_PRODUCT compliance. Source: the ARM TOSA reference model's verifier,
// reference_model/src/verify/verify_dot_product.cc (read in the public copy
// jerryzhao173985/reference_model, two revisions), which implements the specification's "Dot product
// accuracy requirements"; the specification chapter itself was not found in the index. For T output
// elements with exact value ref, bound bnd = Σ|a_k|·|w_k| + |bias| (fp64 in the reference model;
// exact here, then rounded to f64) and implementation value imp:
//   * bnd == 0:             ref == 0 and imp == 0 are required, out_err = 0;
//   * otherwise             out_err = (imp - ref) / max(bnd * 2^(-1 - normal_frac), normal_min)
//                           with normal_frac / normal_min of the error format (fp32: 23, 2^-126);
//                           |out_err| <= abs_bound is required;
//   * variance:             Σ out_err^2 <= variance_bound * T;
//   * bias (sets S = 3..5): |Σ out_err| <= bias_bound(T).
// Two revisions of the verifier:
//   ks    (earlier):  abs_bound = KS, variance 0.4 * KS, bias 2 * sqrt(KS * T); the error format is
//                     the accumulator format.
//   ksb   (2023-2025, TOSA 1.0):  abs_bound = 2 * ksb, variance 4 * 0.4 * ksb, bias
//                     sqrt(10 * 4 * 0.4 * ksb * T) ("up to a 4 sigma difference"); the error format is
//                     the output format; an element whose bound would overflow the output format
//                     (bnd * (1 + abs_bound * 2^(-1 - normal_frac)) is infinite in it) has no
//                     accuracy limit; a NaN bound has none either.
// KS is the dot-product length, plus 1 when the bias is nonzero (the verifier: "KS in the compliance
// config MUST have already been updated to (KS + 1) if the bias tensor is non-zero").
// Assumed, not verified against the specification text: that ksb equals that KS when operands,
// accumulator and output share one format (ksb comes from the test generator's config, whose formula
// for mixed precisions was not found), and that operations without a local_bound attribute (MATMUL)
// use the element's own |a| in the bound while the others default to the input's global max |a|
// (BoundKind below; recalled from the specification, not re-read).
#pragma once

#include "oracles/labels.hpp"
#include "oracles/qgemm.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace qc {

struct WeightOnlyPolicy {
  QuantizePolicy quantize{};           // only for float weights
  std::optional<DType> weight_format;  // nullopt: the exact reals (q - zp) * s; else dequantized into this format
  DequantizePolicy dequantize{};       // how, when weight_format is set
};

// Which |a| values enter the bound Σ|a_k|·|w_k| + |bias| (TOSA local_bound).
enum class BoundKind : std::uint8_t {
  local,       // the element's own |a_k| (local_bound = true)
  global_max,  // every |a_k| replaced by max |a| over the whole input (local_bound = false)
};

struct WeightOnlyResult {
  Tensor y;                      // exact results correctly rounded (RNE, IEEE overflow) into `out`
  std::vector<Rational> exact;   // per element: Σ_k a_k * w_k + bias, exactly
  std::vector<double> bound;     // per element: Σ_k |a_k| * |w_k| + |bias|, rounded to f64 (local bound)
  std::vector<Label> labels;     // tie / near_tie / clear of `exact` on the output grid; saturated: y not finite
  Tensor weights;                // the weights as multiplied, [K, N] f64 (every value exact in f64) -- or empty
                                 // when weight_format is empty and some (q - zp) * s is not exact in f64
  std::int64_t kernel_size = 0;  // K
  bool nonzero_bias = false;
};

WeightOnlyResult weight_only_gemm(const WeightOnlyGemmOp& op, const WeightOnlyPolicy& policy);

// Per-element bounds with the global-max |a| (BoundKind::global_max).
std::vector<double> weight_only_bounds(const WeightOnlyGemmOp& op, const WeightOnlyPolicy& policy, BoundKind kind);

// ---- TOSA DOT_PRODUCT compliance ---------------------------------------------------------------

enum class TosaDotProductRevision : std::uint8_t { ks, ksb };

struct DotProductCheck {
  TosaDotProductRevision revision = TosaDotProductRevision::ksb;
  std::int64_t kernel_size_bound = 0;  // KS or ksb, already + 1 for a nonzero bias (tosa_kernel_size_bound)
  int test_set = -1;                   // S of the TOSA data generator; -1: other data (no bias test)
  DType error_format = DType::f32;     // whose normal_frac and normal_min scale the error
};

// KS + 1 when the bias is nonzero.
std::int64_t tosa_kernel_size_bound(std::int64_t kernel_size, bool nonzero_bias);

struct DotProductVerdict {
  bool pass = true;
  std::vector<double> errors;  // out_err per element
  double error_sum = 0, error_sum_squares = 0;
  double abs_limit = 0, variance_limit = 0, bias_limit = 0;  // bias_limit 0: not tested
  std::int64_t first_failure = -1;  // the first element outside abs_limit (or with a zero-bound violation)
  std::string reason;               // empty when pass
};

// reference: exact values; bound: per-element bounds (f64); implementation: a float tensor of the
// same size. Throws InputError on size mismatches.
DotProductVerdict check_dot_product(std::span<const Rational> reference, std::span<const double> bound,
                                    const Tensor& implementation, const DotProductCheck& check);

// Distance in units in the last place of `out` between an implementation's value and the correctly
// rounded exact value: the number of representable values of `out` strictly between them, plus one
// (0 when equal). Both finite.
std::int64_t ulp_distance(DType out, std::uint64_t implementation_bits, std::uint64_t reference_bits);

}  // namespace qc
