// The oracle's answer to an op request under a spec, in the form the comparison needs.
#pragma once

#include "oracles/conv2d.hpp"
#include "oracles/presets.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/requantize.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/ops.hpp"
#include "reports/result.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace qc {

struct Reference {
  Tensor expected;            // bit for bit, under the spec
  std::vector<Label> labels;  // per element
  SpecifiedMask specified;    // where the spec leaves the element open
  // Float outputs: the exact real value correctly rounded (ties to even) into the output format,
  // so a backend's distance to the real answer is reported beside its distance to the spec.
  std::optional<Tensor> correctly_rounded;
  // Dot-product ops (weight-only GEMM): the TOSA DOT_PRODUCT compliance check of an output.
  std::function<DotProductVerdict(const Tensor&)> dot_product;
  // Fills an element's input text and exact value (only called for the few worst elements). It owns
  // what it reads (a copy of the op's operands), so it may be called after the op is gone.
  std::function<void(std::int64_t, ElementDiff&)> describe;
  // qgemm and qconv2d: the whole result, accumulators included (ElementEvaluator takes them).
  std::shared_ptr<const QLinearResult> linear;
};

Reference evaluate(const OpRequest& op, const Spec& spec);

// The spec's values at output elements `idx` alone (a tensor of shape [idx.size()]), for the ops that
// compute them without the rest (qgemm, qconv2d: the rows that hold them); nullopt for the others.
std::optional<Tensor> evaluate_elements(const OpRequest& op, const Spec& spec, const std::vector<std::int64_t>& idx);

// evaluate(op, spec) where `known` is op's answer under `known_spec`: a qgemm or qconv2d whose
// integer stage under `spec` is known's (the same accumulation, zero points and operands: a claim
// that differs from the spec in its output stage) is finished from known's sums instead of summed
// again. The same values, labels and exact values as evaluate.
Reference evaluate_beside(const OpRequest& op, const Spec& spec, const Spec& known_spec, const Reference& known);

// evaluate_elements for one op under many specs (cause attribution): the integer stage of a qgemm
// or qconv2d, which is most of its cost, depends only on the policy's quantize, accumulation, zero
// points, pair rule and depth order (its "integer key"; an output-stage change leaves it alone), so
// it is summed once per key and element set, and taken from a whole result that has it (know()).
// Each element then costs its own dot product, not its row's. The values are evaluate_elements's.
class ElementEvaluator {
 public:
  explicit ElementEvaluator(const OpRequest& op);
  // A whole answer of `op` under `spec` (its Reference::linear), whose accumulators serve every
  // element set under the same integer key.
  void know(const Spec& spec, const Reference& whole);
  // The values at idx under `spec`, as evaluate_elements gives them (nullopt for the ops it does not
  // cut). Throws what evaluate_elements throws.
  std::optional<Tensor> operator()(const Spec& spec, const std::vector<std::int64_t>& idx);
  // Whether evaluating `spec` on any element set costs no more than its output stage there: an
  // element-wise op, or a GEMM or convolution whose integer stage under `spec` a known answer holds.
  bool cheap(const Spec& spec) const;
  // The whole op under `spec` from a known answer's sums (see evaluate_beside); nullopt where none
  // shares its integer stage.
  std::optional<Reference> whole(const Spec& spec) const;

 private:
  struct Summed {
    QGemmPolicy key;
    std::vector<std::int64_t> idx;
    std::shared_ptr<const LinearAccumulators> acc;
  };
  QGemmPolicy policy_of(const Spec& spec) const;
  QGemmPolicy integer_key(QGemmPolicy p) const;
  const OpRequest& op_;
  bool linear_ = false, conv_ = false, float_operands_ = false;
  std::vector<std::pair<QGemmPolicy, std::shared_ptr<const QLinearResult>>> whole_;
  std::vector<Summed> summed_;  // the latest first, at most kSummedElements elements in all
  GemmOperandCache operands_;   // a qgemm's int32 operands, made once
  static constexpr std::size_t kSummedElements = std::size_t{1} << 22;
};

// The GEMM/conv policy a spec defines for activations of format `a` in a GEMM or a convolution
// (Spec::conv_accumulation).
enum class LinearOp : std::uint8_t { gemm, conv };
QGemmPolicy qgemm_policy(const Spec& spec, DType a, LinearOp op);

// The weight-only GEMM policy a spec defines: its f32 quantize (for the activations' reference),
// no dynamic rule, its dequantize.
WeightOnlyPolicy weight_only_policy(const Spec& spec);

// Decimal and hex-float text of a double ("NaN", "+inf", "-0" for the specials).
std::string describe_value(double v);

}  // namespace qc
