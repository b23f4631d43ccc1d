// What each fuzz target does with one input, shared by the libFuzzer mains (fuzz/*_fuzz.cpp) and
// the test that replays the checked-in corpus in every build (tests/harness/fuzz_corpus_test.cpp).
// Each returns normally for an input that reads and for one that is a qc::InputError; anything
// else (another exception, a crash, a sanitizer report) is a finding.
#pragma once

#include "cases/case.hpp"
#include "qconform/error.hpp"
#include "qconform/npy.hpp"
#include "reports/reader.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace qc::fuzz {

// The case loader.
inline void load_cases(std::string_view bytes) {
  try {
    (void)load_suite_text(std::string(bytes), "fuzz.json");
  } catch (const InputError&) {
  }
}

// The .npy reader, reading the bytes as themselves and as each format that travels as bit patterns.
inline void read_npy(std::string_view bytes) {
  for (const std::optional<DType> as :
       {std::optional<DType>{}, std::optional(DType::bf16), std::optional(DType::f8e4m3fn), std::optional(DType::i4)}) {
    try {
      (void)read_npy_bytes(bytes, "fuzz.npy", as).size();
    } catch (const InputError&) {
    }
  }
}

// The report reader (qconform report / merge / baseline); what reads also merges as a one-shard set.
inline void read_report(std::string_view bytes) {
  try {
    (void)merge_reports({report_from_text(std::string(bytes), "fuzz.json")});
  } catch (const InputError&) {
  }
}

}  // namespace qc::fuzz
