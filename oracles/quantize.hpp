// QuantizeLinear under any QuantizePolicy, exactly.
//
// Two paths give identical results: the slow path evaluates every step on Boost rationals
// (with an optional step-by-step trace for `qconform explain`); the fast path uses hardware
// IEEE arithmetic where that is provably the policy's own arithmetic (f32/f64 compute) and
// residual-checked doubles for exact compute, and falls back to the slow path per element
// whenever its bounds do not hold.
#pragma once

#include "oracles/ieee.hpp"
#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "oracles/specified.hpp"
#include "qconform/qparams.hpp"
#include "qconform/tensor.hpp"

#include <string>
#include <vector>

namespace qc {

enum class OraclePath : std::uint8_t { fast, slow };

struct QuantizeResult {
  Tensor q;
  std::vector<Label> labels;            // empty unless requested
  SpecifiedMask specified;              // where the policy leaves the value open (NaN, unspecified)
  std::int64_t slow_elements = 0;       // how many elements the fast path handed to the slow path
};

QuantizeResult quantize(const Tensor& x, const QuantParams& p, DType out, const QuantizePolicy& policy,
                        OraclePath path = OraclePath::fast, bool want_labels = true);
// The same into `res`, reusing its buffers where they have the right size (for repeated calls).
void quantize(const Tensor& x, const QuantParams& p, DType out, const QuantizePolicy& policy, QuantizeResult& res,
              OraclePath path = OraclePath::fast, bool want_labels = true);

// One element, every step: for `qconform explain` and for reports' worst elements.
struct TraceStep {
  std::string what;     // e.g. "x / s in f32"
  std::string formula;  // e.g. "0.25 / 0.1"
  ExactFloat exact;     // the exact real result of this step
  ExactFloat rounded;   // after rounding to the compute format (== exact when exact)
  std::string note;     // the rounding decision and why
};

struct QuantizeElement {
  std::int64_t q = 0;
  Label label = Label::clear;
  bool specified = true;
  ExactFloat pre_round;  // the exact value handed to the final integer rounding
  std::vector<TraceStep> steps;
};

QuantizeElement quantize_element(double x, DType x_dtype, double scale, DType scale_dtype, std::int64_t zp, DType out,
                                 const QuantizePolicy& policy, bool trace = false);

// The compute format a policy uses for given input and scale formats.
Arith resolve_compute(const ComputeFormat& c, DType x_dtype, DType scale_dtype);

}  // namespace qc
