// A conformance case: an op request, the numerics spec its outputs must meet, and what each
// backend is expected to achieve. Loaded from JSON case files (schema: cases/case.schema.json).
#pragma once

#include "oracles/presets.hpp"
#include "oracles/qconv2d.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/requantize.hpp"
#include "oracles/weight_only.hpp"
#include "qconform/ops.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace qc {

struct Expectation {
  enum class Kind : std::uint8_t {
    exact,        // bit-exact against the case's spec
    max_lsb,      // integer outputs within `tolerance` LSB of the spec
    max_ulp,      // float outputs within `tolerance` ULP (of the output format) of the spec
    claim,        // bit-exact against the backend's claimed preset (distance to the spec reported)
    dot_product,  // dot-product ops: within TOSA's DOT_PRODUCT error bounds of the exact value
  };
  Kind kind = Kind::exact;
  std::int64_t tolerance = 0;
  std::string str() const;
};

// An operand whose values are another case's output (the case format's {"from": "name"}): two
// lowerings of one graph chain cases instead of copying intermediate data by hand. The op holds a
// tensor of the producer's output format and shape (zeros) until the runner binds the values: the
// oracle's output of the producer for the reference, each backend's own output for that backend.
struct OperandLink {
  std::string field;     // "input", "a", "b", "weight" or "bias"
  std::string producer;  // the name of a case of the same suite
};

// A statement about two lowerings: this case's outputs equal another case's bit for bit
// ("same_outputs_as"), or differ from them ("differs_from"), in `elements` elements when given.
// The runner checks it on the oracle's outputs and on each backend's.
struct Agreement {
  enum class Kind : std::uint8_t { same_outputs, differs };
  Kind kind = Kind::same_outputs;
  std::string other;           // the name of a case of the same suite
  std::int64_t elements = -1;  // differs: the number of differing elements stated; -1: any number but 0
  std::string_view assertion() const { return kind == Kind::same_outputs ? "same_outputs_as" : "differs_from"; }
};

// An operand whose values a generator made (the case format's "generator"), kept so that the case
// writer writes the generator back instead of its values. The generator's defaults taken from the
// case (a scale, a zero point, an output format) are written into it, so it makes the same values
// whatever becomes of the case's other fields. The writer writes it only while the operand still
// has `digest`: shrinking, reproducers and Python replace values (gathered elements, inlined
// producers), and any change of the values, format or shape changes the digest.
struct GeneratedOperand {
  std::string field;      // "input", "a", "b", "weight" or "bias", as in OperandLink
  std::string generator;  // the generator object, as JSON text
  std::uint64_t digest = 0;
};

// A 64-bit digest of a tensor's format, shape and bits (not cryptographic: it tells whether values
// were changed since they were generated; one changed element always changes it).
std::uint64_t tensor_digest(const Tensor& t);

struct Case {
  std::string suite;  // the file's suite name
  std::string name;   // unique within the suite
  std::string description;
  std::string file;  // where it came from, for messages and reproducers
  int line = 0;      // line of the case's "name" in the file (0 if unknown)
  OpRequest op;
  Spec spec;
  std::map<std::string, Expectation> expect;  // by backend name; "*" for every other backend
  std::vector<OperandLink> links;             // operands taken from other cases' outputs
  std::vector<Agreement> agreements;          // what this case's outputs are to other cases'
  std::vector<GeneratedOperand> generated;    // operands a generator made (written back as generators)

  std::string id() const { return suite + "/" + name; }
  Expectation expectation_for(const std::string& backend) const;
};

struct Suite {
  std::string name;
  std::string description;
  std::string file;
  std::vector<Case> cases;
  // Cases of the file that `cases` take operands from or compare with but that this selection does
  // not hold (a shard's view of the file, select_cases): the runner evaluates them where needed and
  // reports nothing for them.
  std::vector<Case> dependencies;
};

// `op` with the operand named `field` ("input", "a", "b", "weight", "bias") replaced by `values`,
// which must have the operand's format and (logical) shape; packed int4 weights are packed again.
// Throws InputError otherwise.
void bind_operand(OpRequest& op, const std::string& field, const Tensor& values);

// Checks a suite's links and agreements: every named case exists in the suite (cases or
// dependencies) and is not the case itself, links form no cycle, a producer's output has the
// consumer's operand format and shape, and two cases compared have the same output format and
// shape. Throws InputError naming the file, the case (and its line) and the field. load_suite
// checks this; the runner checks it again for suites built in code (Python).
void check_links(const Suite& s);

// The suite reduced to the cases whose index is in `keep` (in order), with every case they need
// (producers, transitively, and the cases they compare with) moved to `dependencies`.
Suite select_cases(const Suite& s, const std::vector<bool>& keep);

// A spec from a preset name or a JSON object {"preset": ..., overrides} (the case format's
// "spec" field; docs/cases.md). Throws InputError naming `where` and the field.
Spec parse_spec(const std::string& text, const std::string& where);

// Custom presets (docs/numerics.md, "Custom presets and claims"). A policy file holds one
// definition or a JSON list of them:
//   {"preset": "mykernel-1.0", "spec": {"preset": "onnx", "rounding": "rna"},
//    "description": "...", "sources": ["org/repo path::function"]}
// "spec" is read exactly as a case's "spec" field (parse_spec: a preset name, or a base preset with
// overrides), and may name a preset registered before, by this file or an earlier one. Each
// definition is registered with register_preset as it is read. Throws InputError naming `where`,
// the line (for JSON syntax) and the field; a name that is built in or already registered is
// refused (field 'preset'). Returns the names registered. For plugins: pass the JSON text and a
// `where` that names its origin.
std::vector<std::string> register_presets_json(const std::string& text, const std::string& where);
// The same, from a file (`where` is its path).
std::vector<std::string> load_preset_file(const std::filesystem::path& file);

// Loads one case file. Throws InputError naming the file, the case (and its line), and the
// field for every problem: JSON syntax, unknown fields, bad parameters, shape mismatches.
Suite load_suite(const std::filesystem::path& file);
// The same from the file's text (`file` names it in messages and in the suite).
Suite load_suite_text(const std::string& text, const std::filesystem::path& file);
// Files and folders (searched recursively for *.json, in sorted order).
std::vector<Suite> load_suites(const std::vector<std::filesystem::path>& paths);

}  // namespace qc
