// Where a run's time goes, phase by phase (`qconform run --timings FILE`, benchmarks/judge_bench.py):
// each phase's seconds of wall time, added up over the run's cases and backends. Backends that run
// side by side (--jobs) add their phases from several threads, so the totals can exceed the run's
// wall time; the benchmark runs one backend.
#pragma once

#include "qconform/enum_table.hpp"

#include <chrono>
#include <cstdint>
#include <span>

namespace qc {

enum class Phase : std::uint8_t { load, oracle, claim, backend, compare, causes, reproducers, reports };
inline constexpr EnumEntry<Phase> kPhaseTable[] = {
    {Phase::load, "load", "reading the case files, generators included"},
    {Phase::oracle, "oracle", "the spec's answer of each case (harness evaluate)"},
    {Phase::claim, "claim", "the oracle's answer under a backend's claimed preset, where it differs from the spec"},
    {Phase::backend, "backend", "the backend's own calls"},
    {Phase::compare, "compare", "comparing outputs, metrics and labels of the mismatches"},
    {Phase::causes, "causes", "cause attribution"},
    {Phase::reproducers, "reproducers", "one-element reproducers (each re-run on the backend) and their files"},
    {Phase::reports, "reports", "writing report.json, report.html, report.junit.xml"},
};
constexpr std::span<const EnumEntry<Phase>> enum_table(Phase) { return kPhaseTable; }

// The process's total for a phase so far, in seconds.
double phase_seconds(Phase p);

// Adds the wall time of its scope to a phase. Nested timers on one thread split the time: while an
// inner one runs, the outer one's phase does not count (a claim's evaluation inside the comparison
// is the claim's time, not the comparison's).
class PhaseTimer {
 public:
  explicit PhaseTimer(Phase p);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  void stop_clock();
  Phase phase_;
  std::chrono::steady_clock::time_point start_;
  PhaseTimer* outer_;
};

}  // namespace qc
