// The result model of a run: what the harness measured and decided, which every report
// writer (JSON, HTML) renders. Plain data, no behaviour.
#pragma once

#include "oracles/labels.hpp"
#include "qconform/enum_table.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qc {

enum class Verdict : std::uint8_t { pass, fail, xfail, xpass, skip, crash, timeout };
inline constexpr EnumEntry<Verdict> kVerdictTable[] = {
    {Verdict::pass, "PASS", "the outputs meet the expectation"},
    {Verdict::fail, "FAIL", "they do not"},
    {Verdict::xfail, "XFAIL", "they do not, as a baseline records"},
    {Verdict::xpass, "XPASS", "they do, where a baseline records a failure"},
    {Verdict::skip, "SKIP", "the backend does not run the case"},
    {Verdict::crash, "CRASH", "the backend died or threw"},
    {Verdict::timeout, "TIMEOUT", "the backend ran past its time limit"},
};
constexpr std::span<const EnumEntry<Verdict>> enum_table(Verdict) { return kVerdictTable; }
inline constexpr auto kAllVerdicts = table_values<Verdict>();
std::string_view name(Verdict v);  // "PASS", "FAIL", ...

// One element the backend got wrong, with everything needed to understand it.
struct ElementDiff {
  std::int64_t index = 0;
  std::vector<std::int64_t> coords;
  std::string input;       // the input value (decimal and hex float for floats)
  std::string expected;    // the spec's output, as text (decimal and hex for floats)
  std::string actual;      // the backend's output
  std::int64_t delta = 0;  // actual - expected in LSB (integers) or ULP (floats)
  std::string exact;       // the exact value under the spec (before its final rounding)
  Label label = Label::clear;
  std::vector<std::string> causes;  // the single policy changes that reproduce `actual`
};

// A policy change (one dimension of the spec) that reproduces some of a backend's mismatching
// elements: the harness re-evaluates the spec with that one change and counts the elements
// whose new value equals the backend's.
struct CauseCount {
  std::string cause;        // "rounding=rna", "accumulation=int16_pair_saturate", ...
  std::string description;  // one sentence a kernel engineer can act on
  std::int64_t count = 0;   // mismatching elements this change reproduces
  // Where the output has channels (per-axis parameters, GEMM columns, conv output channels):
  // channel -> count. Empty otherwise.
  std::map<std::int64_t, std::int64_t> per_channel;
  // "single" (one change of the spec, or an operand from an earlier case), "pair" (two changes at
  // once: "a + b") or "preset" (another whole spec: "preset tflite-reference").
  std::string kind = "single";
  // Elements the backend computed as the spec does, sampled, and how many of them this change
  // would compute otherwise: a change that reproduces the mismatches but breaks matches is the
  // weaker explanation.
  std::int64_t matches_sampled = 0, matches_broken = 0;
  // 0: `count` and `per_channel` are over every mismatch. Else over this many of them, sampled
  // (evenly spaced, and the worst elements listed): past kCauseScreen mismatches, every candidate
  // but the best is counted on the sample only (docs/reports.md "Causes").
  std::int64_t mismatches_sampled = 0;
};

// The distance the comparison gives a NaN against a number (it has no place among the values):
// every report shows distances at or above it as infinite.
inline constexpr std::int64_t kUlpInfinite = std::int64_t{1} << 62;

struct Metrics {
  std::string unit = "lsb";  // "lsb" for integer outputs, "ulp" (of the output format) for floats
  std::int64_t elements = 0;
  std::int64_t compared = 0;                // elements whose expected value the spec defines
  std::int64_t unspecified = 0;             // elements the spec leaves open (e.g. NaN under ONNX)
  std::int64_t exact = 0;                   // compared elements that match bit for bit (NaN matches NaN)
  std::array<std::int64_t, 5> histogram{};  // |delta| = 0, 1, 2, 3, >= 4 (in `unit`)
  std::int64_t max_abs = 0;                 // largest |delta|
  std::int64_t signed_sum = 0;              // sum of (actual - expected): the bias
  std::int64_t signed_zero_mismatches = 0;  // floats: +0 against -0 (a mismatch at distance 0)
  // Floats: distance of the backend's output to the exact real value correctly rounded.
  bool has_to_exact = false;
  std::array<std::int64_t, 5> histogram_to_exact{};
  std::int64_t max_to_exact = 0;
  std::array<std::int64_t, kLabelCount> label_total{};
  std::array<std::int64_t, kLabelCount> label_mismatch{};
  std::vector<ElementDiff> worst;  // the largest |delta| first, then by index
  std::int64_t mismatches() const { return compared - exact; }
};

// The check of one agreement statement of a case (the case format's "same_outputs_as" and
// "differs_from") on one side: the oracle's outputs of the two cases, or one backend's.
enum class AgreementStatus : std::uint8_t {
  holds,      // the outputs agree as stated
  broken,     // they do not: the backend's result is a FAIL
  unchecked,  // one of the two cases has no output there (a SKIP, a crash)
};
inline constexpr EnumEntry<AgreementStatus> kAgreementStatusTable[] = {
    {AgreementStatus::holds, "holds"},
    {AgreementStatus::broken, "broken"},
    {AgreementStatus::unchecked, "unchecked"},
};
constexpr std::span<const EnumEntry<AgreementStatus>> enum_table(AgreementStatus) { return kAgreementStatusTable; }
std::string_view name(AgreementStatus s);

struct AgreementCheck {
  std::string assertion;     // "same_outputs_as" or "differs_from"
  std::string other;         // the other case's id (suite/name)
  std::int64_t stated = -1;  // differs_from: the number of differing elements stated; -1: any but 0
  AgreementStatus status = AgreementStatus::unchecked;
  std::int64_t elements = 0;                  // elements compared
  std::int64_t differing = 0;                 // elements whose bits differ (any NaN equals any NaN)
  std::vector<std::int64_t> first_differing;  // the first few differing indices
  std::string reason;                         // one line naming both cases
};

struct BackendResult {
  std::string backend;
  std::string claim;        // the preset the backend claims
  std::string expectation;  // "exact", "max_lsb:1", "claim"
  Verdict verdict = Verdict::skip;
  std::string reason;                  // one line: why this verdict
  Metrics metrics;                     // against the case's spec
  std::int64_t claim_mismatches = -1;  // against the claimed preset; -1 if not evaluated
  std::vector<CauseCount> causes;      // most elements first
  std::int64_t unexplained = 0;        // mismatches that no single policy change reproduces
  std::int64_t unexplained_sampled = 0;  // 0: `unexplained` is over every mismatch; else over this many sampled
  // Identifies this set of mismatches for a baseline: "<count>:<hash of the mismatching indices>".
  std::string fingerprint;
  std::string reproducer;         // path of a standalone case file for the smallest failing unit
  std::string reproduce_command;  // the one-line command that re-runs it
  // The case's agreement statements checked on this backend's outputs (CaseResult::agreements'
  // order).
  std::vector<AgreementCheck> agreements;
  double seconds = 0;
};

struct CaseResult {
  std::string id;  // suite/name
  std::string suite, name, description, file;
  int line = 0;
  std::string op, spec, spec_description;
  std::string shape, input_dtype, output_dtype, granularity;
  // Operands taken from other cases' outputs: operand ("a", "input", ...) -> the producer's id.
  std::map<std::string, std::string> operands_from;
  // The case's agreement statements checked on the oracle's outputs: whether the two lowerings
  // agree under the specs, whatever any backend does.
  std::vector<AgreementCheck> agreements;
  std::vector<BackendResult> backends;
};

struct RunMetadata {
  std::string tool_version, git_revision, compiler, host, cpu, started_at;
  std::vector<std::string> cpu_features;
  std::vector<std::string> backends;  // every backend considered, with availability
  // Per available backend: its device and build facts (Backend::facts()).
  std::map<std::string, std::map<std::string, std::string>> backend_facts;
  std::vector<std::string> command_line;
  std::string shard;  // "i/n" for one shard of a sharded run (qconform run --shard), empty otherwise
  double seconds = 0;
};

// ---- The model view (qconform model; docs/models.md) ------------------------------------------

// One run of a model's steps compared, step by step, with the oracle's run of the same reading.
struct ModelStepRun {
  std::string run;       // ModelRun::name
  bool computed = true;  // false: the backend does not run this step; the oracle computed it on the
                         // backend's own inputs (`note` says why), so the run could go on
  std::string note;
  std::int64_t elements = 0;
  std::int64_t differing = 0;  // elements whose bits differ from the oracle's chain
  std::int64_t max_lsb = 0;    // integer outputs: the largest |difference| in LSB
  double max_abs = 0;          // the largest |difference| as a real number
  // Why, where the step differs: the leading cause of the same backend's result on the step's case
  // (isolated mode: the step on the oracle chain's inputs), "" where it has none.
  std::string cause;
};

struct ModelStep {
  std::string name;     // the node's name (a fused reading: "<Conv|MatMul|Gemm node>.fused")
  std::string op_type;  // the node's op type; "fused Conv" for a fused reading
  std::string kind;     // "op" (a case), "fused" (a case: the fused integer reading), "float" (the float executor)
  std::string case_id;  // suite/name of its case in the report's cases ("" for float steps)
  std::string output, shape, dtype;
  std::vector<std::string> covers;  // fused: the steps of the QDQ reading it stands for
  // fused: output elements that differ from the QDQ reading (the oracle's chain), and how many there are
  std::int64_t fused_differs = -1, fused_elements = 0;
  std::vector<ModelStepRun> runs;  // propagated runs that computed this step, in ModelView::runs' order
};

// One execution of the whole model compared with the oracle's: the oracle's other reading, a
// backend driven through the graph (propagated), or a runtime running the model itself (whole).
struct ModelRun {
  std::string name;     // "<backend> (fused)", ...
  std::string backend;  // "oracle" for the oracle's own fused reading
  std::string mode;     // "propagated" or "whole"
  std::string reading;  // "graph" (the model's own nodes: a QDQ model's QDQ reading) or "fused" (each QDQ pattern as
                        // its integer kernel)
  std::string compared_with;  // the oracle chain it is compared with ("graph" or "fused")
  std::string status = "ok";  // "ok", or "failed": `note` says where and why
  std::string note;
  // The first step whose quantized (integer) output differs from the oracle's chain; "" none.
  std::string first_divergent;
  std::string first_divergent_cause;  // its ModelStepRun::cause
  // The first step whose float output differs before any quantized one does (a float convolution
  // summed in another order): where runtimes round float values between quantized tensors
  // differently, which may or may not change a quantized value later; "" none.
  std::string first_float_difference;
  std::int64_t steps_run = 0, steps_by_oracle = 0;
  std::int64_t output_elements = 0, output_differing = 0;
  double output_max_abs = 0;
  std::int64_t top1_total = 0, top1_agree = -1;  // a classifier's rows: argmax equal to the oracle's
  std::int64_t top1_correct = -1;                // argmax equal to the labels (--labels)
  double seconds = 0;
};

struct ModelView {
  std::string file, name, format, spec, producer;
  std::int64_t ir_version = 0, opset = 0;
  std::vector<std::string> inputs;  // "name: dtype shape (from FILE | generated)"
  std::vector<ModelStep> steps;     // graph order
  std::vector<ModelRun> runs;
  std::int64_t oracle_top1_correct = -1, top1_total = 0;  // the oracle's QDQ reading against --labels
};

struct RunReport {
  RunMetadata meta;
  std::vector<CaseResult> cases;
  std::vector<ModelView> models;  // qconform model: the model, step by step
  std::map<std::string, std::int64_t> verdict_counts() const;
};

}  // namespace qc
