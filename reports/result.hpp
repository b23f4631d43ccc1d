// The result model of a run: what the harness measured and decided, which every report
// writer (JSON, HTML) renders. Plain data, no behaviour.
#pragma once

#include "oracles/labels.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qc {

enum class Verdict : std::uint8_t { pass, fail, xfail, xpass, skip, crash, timeout };
std::string_view name(Verdict v);  // "PASS", "FAIL", ...

// One element the backend got wrong, with everything needed to understand it.
struct ElementDiff {
  std::int64_t index = 0;
  std::vector<std::int64_t> coords;
  std::string input;     // the input value, decimal and hex float
  std::int64_t expected = 0;
  std::int64_t actual = 0;
  std::string exact;     // the exact pre-rounding value under the spec
  Label label = Label::clear;
};

struct Metrics {
  std::int64_t elements = 0;
  std::int64_t compared = 0;     // elements whose expected value the spec defines
  std::int64_t unspecified = 0;  // elements the spec leaves open (e.g. NaN under ONNX)
  std::int64_t exact = 0;        // compared elements that match bit for bit
  std::array<std::int64_t, 5> lsb_histogram{};  // |delta| = 0, 1, 2, 3, >= 4
  std::int64_t max_abs_lsb = 0;
  std::int64_t signed_sum = 0;   // sum of (actual - expected): the bias
  std::array<std::int64_t, kLabelCount> label_total{};
  std::array<std::int64_t, kLabelCount> label_mismatch{};
  std::vector<ElementDiff> worst;  // the largest |delta| first, then by index
  std::int64_t mismatches() const { return compared - exact; }
};

struct BackendResult {
  std::string backend;
  std::string claim;        // the preset the backend claims
  std::string expectation;  // "exact", "max_lsb:1", "claim"
  Verdict verdict = Verdict::skip;
  std::string reason;       // one line: why this verdict
  Metrics metrics;          // against the case's spec
  std::int64_t claim_mismatches = -1;  // against the claimed preset; -1 if not evaluated
  double seconds = 0;
};

struct CaseResult {
  std::string id;  // suite/name
  std::string suite, name, description, file;
  int line = 0;
  std::string op, spec, spec_description;
  std::string shape, input_dtype, output_dtype, granularity;
  std::vector<BackendResult> backends;
};

struct RunMetadata {
  std::string tool_version, git_revision, compiler, host, cpu, started_at;
  std::vector<std::string> cpu_features;
  std::vector<std::string> backends;  // every backend considered, with availability
  std::vector<std::string> command_line;
  double seconds = 0;
};

struct RunReport {
  RunMetadata meta;
  std::vector<CaseResult> cases;
  std::map<std::string, std::int64_t> verdict_counts() const;
};

}  // namespace qc
