// `qconform explain` of one output element of a case (docs/oracle.md "Explain an element of a
// case"): the inputs that feed it, every step of its derivation under the case's spec and under the
// policy that reproduces the backend's value (the best cause of the run that does, else the
// backend's claimed preset), and the first step where the two part.
#pragma once

#include "cases/case.hpp"
#include "harness/isolation.hpp"
#include "oracles/quantize.hpp"  // TraceStep
#include "qconform/backend.hpp"

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace qc {

// One element's derivation under one spec.
struct ElementDerivation {
  std::string policy;       // "onnx", "preset tflite-reference", "quantize.rounding=rna"
  std::string description;  // the spec's or the change's description
  std::vector<TraceStep> steps;
  Tensor value;        // the element's output, one element of the op's output format
  std::string result;  // as reports show it; "unspecified" where the spec leaves it open
  std::string label;
  bool specified = true;
};

// Element `index` (flat, row-major over the op's output) of `op` under `spec`, every step. Throws
// InputError for an index outside the output.
ElementDerivation derive_element(const OpRequest& op, const Spec& spec, std::int64_t index);

// The values that feed element `index` under `spec` (which quantizes float operands), one line each:
// the input and its parameters, or a GEMM/convolution's dot product term by term (the first
// `max_terms` terms and a count of the rest), its zero points, scales and bias.
std::vector<std::string> element_inputs(const OpRequest& op, const Spec& spec, std::int64_t index,
                                        std::size_t max_terms = 16);

// Where two derivations of one element part: the steps they share in value (whatever the steps are
// called), then each side's roundings from there on, so that a scheme rounding twice (gemmlowp's
// SaturatingRoundingDoublingHighMul then RoundingDivideByPOT) against once is named at both of its
// roundings. One paragraph.
std::string where_they_part(const ElementDerivation& a, const ElementDerivation& b);

struct ElementExplanation {
  std::string case_id, op;
  std::int64_t index = 0;
  std::vector<std::int64_t> coords;
  Shape shape;  // the output's
  std::vector<std::string> inputs;
  ElementDerivation spec;
  // With a backend: its value, and the derivation that reproduces it.
  std::string backend, claim, backend_value, backend_reason;  // reason: why it gave no value
  bool matches_spec = false;
  std::optional<ElementDerivation> backend_policy;
  std::string backend_policy_source;        // "the run's cause ...", "the claimed preset ..."
  std::vector<std::string> backend_inputs;  // input lines that differ under that policy (float operands)
  bool reproduces_backend = false;
  std::string parting;  // where_they_part(spec, backend_policy)
};

// Element `index` of case `c` (a case that stands alone: see standalone_case), run on `backend`
// when given (the run's verdict, causes and the backend's value). Throws InputError for an index
// outside the output.
ElementExplanation explain_element(const Case& c, std::int64_t index, Backend* backend, const CallPolicy& call = {});

// "17" or "1,5" (coordinates) -> a flat index into `shape`. Throws InputError naming `what`.
std::int64_t parse_element_index(const std::string& text, const Shape& shape, const std::string& what);

// Steps numbered from 1, each with its exact value, its rounded value where they differ and its note.
std::string steps_text(const std::vector<TraceStep>& steps);

std::string to_text(const ElementExplanation& e);
nlohmann::json to_json(const ElementExplanation& e);

}  // namespace qc
