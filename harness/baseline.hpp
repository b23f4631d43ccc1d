// Baselines: known mismatches a client team has accepted for now. A baseline entry records a
// (case, backend) pair's verdict and mismatch fingerprint; a run that finds the same fingerprint
// reports XFAIL, a run where the pair passes reports XPASS, and a changed fingerprint stays FAIL.
// With `qconform run --gate`, only a change fails the run.
#pragma once

#include "reports/result.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace qc {

inline constexpr const char* kBaselineFormat = "qconform-baseline/1";

struct BaselineEntry {
  std::string verdict;      // "FAIL", "CRASH" or "TIMEOUT": what the pair did when recorded
  std::string fingerprint;  // "<count>:<indices hash>:<distances hash>" for FAIL; empty otherwise
  std::string reason;       // the recorded reason, for people reading the file
};

struct Baseline {
  // (case id, backend) -> entry
  std::map<std::pair<std::string, std::string>, BaselineEntry> entries;
  // How a FAIL is matched to its entry: by the elements and their signed distances (default), or
  // by the elements alone (`run --ignore-magnitude`, for teams that accept any distance there).
  bool ignore_magnitude = false;
  const BaselineEntry* find(const std::string& case_id, const std::string& backend) const;
};

// Throws InputError naming the file and the problem.
Baseline load_baseline(const std::filesystem::path& path);
void save_baseline(const Baseline& b, const std::filesystem::path& path);

// The baseline a report implies: one entry per FAIL, CRASH or TIMEOUT (XFAIL results keep their
// entry). With `previous`, entries for pairs the report did not run are kept, so a partial run
// (one suite, one backend, one shard) updates only what it ran.
Baseline baseline_from(const RunReport& r, const Baseline* previous = nullptr);

// Turns a result into XFAIL or XPASS against the baseline; returns true when it changed it.
bool apply_baseline(const Baseline& b, const std::string& case_id, BackendResult& r);

// Whether a result is a change for the gate: FAIL, XPASS, CRASH, TIMEOUT.
bool is_change(Verdict v);

}  // namespace qc
