// Cause attribution: why a backend's element differs from the spec. The spec is re-evaluated
// with one policy dimension changed at a time (rounding mode, operation order, compute format,
// clamp placement, NaN rule, accumulation, zero-point correction, requantization scheme,
// multiplier derivation, ...); an element is tagged with every change whose value equals the
// backend's. A change that reproduces the backend is a hypothesis the kernel engineer can check
// in the source, not a proof: the report says "reproduced by", never "caused by" alone.
#pragma once

#include "harness/evaluate.hpp"
#include "reports/result.hpp"

#include <optional>
#include <string>
#include <vector>

namespace qc {

// The spec with one dimension changed.
struct Variation {
  std::string cause;        // "quantize.rounding=rna", "accumulation=int16_pair_saturate"
  std::string description;  // "quantize rounds ties away from zero (the spec: ties to even)"
  Spec spec;
};

// Every single change of `spec` that can matter for `op` (the stages the op goes through).
std::vector<Variation> single_changes(const Spec& spec, const OpRequest& op);

// The spec a cause of attribute_causes names ("quantize.rounding=rna", "preset gemmlowp", a pair
// "a + b"), rebuilt from `spec` for `op`; nullopt for a name that is not a policy (an operand taken
// from an earlier case) or that `op` has no change for.
std::optional<Spec> cause_spec(const Spec& spec, const OpRequest& op, const std::string& cause);

// The output axis that indexes channels (per-axis parameters, GEMM columns, conv output
// channels), if the op's output has one.
std::optional<int> channel_axis(const OpRequest& op);

// Another input for the same op under the unchanged spec: a chained case's op with a producer's
// output as the backend computed it instead of the oracle's, so a difference that propagates from
// an earlier case of the chain is named ("a.from=matmul_requantized").
struct InputVariation {
  std::string cause;
  std::string description;
  OpRequest op;
};

// Past this many mismatches, every candidate is counted on a sample of them: this many evenly
// spaced, and the worst elements the report lists. The leading few (those the sample cannot tell
// apart) are then counted on every mismatch where that costs no more than an output stage, so the
// headline's count is exact; the other counts say they are sampled (CauseCount::mismatches_sampled).
// The cost of causes is then bounded by the sample, not the op's size or its mismatches. A change
// that reproduces none of the sample goes unnamed (presets and pairs are first screened on fewer:
// causes.cpp).
inline constexpr std::size_t kCauseScreen = 4096;
// The same for a qgemm or qconv2d, whose every sampled element costs a dot product (K terms) and
// every candidate an output stage over the sample.
inline constexpr std::size_t kCauseScreenLinear = 1024;

// Fills r.causes, r.unexplained and the causes of r.metrics.worst for the elements where
// `actual` differs from `ref` (the spec's answer). The candidates: each single change of the spec
// and each input variation; every other preset; and, where none of those reproduces every
// mismatch, pairs of changes built on the best single ones (kept when they reproduce more than
// either alone). Each is weighed by the mismatches it reproduces and by the matching elements it
// would break (a sample of them), and r.causes lists them best first: most reproduced, fewest
// broken, simplest (a single change, a preset, a pair). Variations the op rejects (e.g. a
// derivation the scheme cannot use) are skipped.
//
// `known`: a preset whose answer for the op is already evaluated (a backend's claim, judged before):
// it is weighed by comparing that answer with `actual`, not evaluated again, and when it reproduces
// every mismatch the other presets are not tried (they could only tie with it). This keeps a run
// whose backends pass against their claims from paying for the preset search on every case where
// the claim parts from the spec.
struct KnownPreset {
  const Spec* spec = nullptr;
  const Reference* answer = nullptr;
};
void attribute_causes(const OpRequest& op, const Spec& spec, const Reference& ref, const Tensor& actual,
                      const std::vector<std::int64_t>& mismatches, BackendResult& r,
                      const std::vector<InputVariation>& inputs = {}, KnownPreset known = {});

}  // namespace qc
