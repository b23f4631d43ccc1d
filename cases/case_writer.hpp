// Writing cases back to the JSON case format (docs/cases.md), so that a case built in code (Python,
// a reproducer, a shrunk failure) becomes a file `load_suite` reads back into the same request.
//
// Round trip: load_suite(save_cases(c)) gives, for every op kind, the same op request and the same
// numerics, so the oracle evaluates it identically. Inline data is written so that it reads back bit
// for bit: finite values as JSON numbers (the shortest text that parses to the same double; every
// value of every float format is exact in a double, -0 included), infinities as "inf"/"-inf", NaN as
// "nan"/"-nan" with the payload of an f32/f64 quiet NaN as "nan(0x...)" (glibc strtod reads it
// back). What the case format cannot express is an InputError naming the case and the field, never a
// silently different file: f16/bf16/f8 NaNs other than the format's canonical NaN (the loader stores
// the canonical NaN for any "nan"), signalling f32/f64 NaNs, int4 packings other than the named ones,
// dynamic activation rules other than the spec's `qparams` preset, and specs no preset-plus-overrides
// object reproduces. WriteOptions::canonical_nans writes such NaNs as the NaN the loader makes instead
// (for reproducers: the oracle treats every NaN alike, and no format's NaN bits change a quantized
// result).
//
// An operand taken from another case (Case::links) is written as {"from": name} with its
// parameters, format and shape, not its values, and agreements as "same_outputs_as" and
// "differs_from"; save_cases therefore needs every case they name in the same file.
//
// An operand a generator made (Case::generated, recorded by the loader) is written as its generator
// while its values still have the digest they were made with, and as its values once anything
// replaced them (a shrunk or reproduced case, a case rebuilt in Python).
#pragma once

#include "cases/case.hpp"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace qc {

struct WriteOptions {
  // false: a NaN the loader cannot read back bit for bit is an InputError; true: it is written as
  // "nan" / "-nan" and reads back as the loader's NaN (sign kept for f32/f64).
  bool canonical_nans = false;
  // save_cases: arrays of at least this many elements go to .npy side files next to the case file,
  // <stem>.<case>.<field>.npy (the case name with characters other than letters, digits and
  // "-_=+." as '_'), referenced as "data": {"npy": "<that name>"}; bit for bit, every NaN included.
  // 0: every array inline. case_to_json always writes inline data.
  std::int64_t npy_min_elements = 0;
};

// The case as the case format's JSON object (inline data or generators, spec, expectations). Throws
// InputError when the case cannot be expressed exactly in the format (see above).
nlohmann::json case_to_json(const Case& c, const WriteOptions& options = {});

// A spec as the case format's "spec" field: the preset name when the spec is a preset unchanged, else
// {"preset": ..., overrides} that parse_spec turns back into the same policies (checked before
// returning). Throws InputError when no preset plus overrides reproduces it.
nlohmann::json spec_to_json(const Spec& s);

// An expectation as the case format writes it: "exact", "claim", "dot_product", {"max_lsb": n} or
// {"max_ulp": n} (Expectation::str()'s "max_lsb:1" is for reports, not for case files).
nlohmann::json expectation_to_json(const Expectation& e);

// Whether two specs define the same numerics (every policy field; names and citations aside).
bool same_numerics(const Spec& a, const Spec& b);

// A tensor as the case format's {"dtype", "shape", "data"} object, bit for bit. `field` names it in
// messages. Throws InputError for a value the loader cannot read back identically.
nlohmann::json tensor_to_json(const Tensor& t, const std::string& field, const WriteOptions& options = {});

// JSON text laid out for reading: objects indented by two spaces, one member a line (a case's name
// first, its data last); arrays of numbers and strings on one line, wrapped at 100 columns; an
// object of such values on one line where it fits. Numbers are nlohmann's text (the shortest that
// reads back as the same double), so json::parse gives back `j`.
std::string case_file_text(const nlohmann::json& j);

// Writes a case file `load_suite` accepts: {"suite": suite, "cases": [...]}, as case_file_text lays
// it out. Written to a temporary file in the same folder and renamed, so an existing file is
// replaced only by a complete one (side files first, each the same way). Throws InputError for
// duplicate case names and for cases the format cannot express, before writing any file.
void save_cases(const std::filesystem::path& file, const std::string& suite, const std::vector<Case>& cases,
                const WriteOptions& options = {});

}  // namespace qc
