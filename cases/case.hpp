// A conformance case: an op request, the numerics spec its outputs must meet, and what each
// backend is expected to achieve. Loaded from JSON case files (schema: cases/case.schema.json).
#pragma once

#include "oracles/ops.hpp"
#include "oracles/presets.hpp"

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

struct Case {
  std::string suite;  // the file's suite name
  std::string name;   // unique within the suite
  std::string description;
  std::string file;  // where it came from, for messages and reproducers
  int line = 0;      // line of the case's "name" in the file (0 if unknown)
  OpRequest op;
  Spec spec;
  std::map<std::string, Expectation> expect;  // by backend name; "*" for every other backend

  std::string id() const { return suite + "/" + name; }
  Expectation expectation_for(const std::string& backend) const;
};

struct Suite {
  std::string name;
  std::string description;
  std::string file;
  std::vector<Case> cases;
};

// A spec from a preset name or a JSON object {"preset": ..., overrides} (the case format's
// "spec" field; docs/cases.md). Throws InputError naming `where` and the field.
Spec parse_spec(const std::string& text, const std::string& where);

// Loads one case file. Throws InputError naming the file, the case (and its line), and the
// field for every problem: JSON syntax, unknown fields, bad parameters, shape mismatches.
Suite load_suite(const std::filesystem::path& file);
// Files and folders (searched recursively for *.json, in sorted order).
std::vector<Suite> load_suites(const std::vector<std::filesystem::path>& paths);

}  // namespace qc
