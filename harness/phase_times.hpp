// Where a run's time goes, phase by phase (`qconform run --timings FILE`, benchmarks/judge_bench.py):
// each phase's seconds of wall time, added up over the run's cases and backends. Backends that run
// side by side (--jobs) add their phases from several threads, so the totals can exceed the run's
// wall time; the benchmark runs one backend.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace qc {

enum class Phase : std::uint8_t {
  load,         // reading the case files, generators included
  oracle,       // the spec's answer of each case (harness evaluate)
  claim,        // the oracle's answer under a backend's claimed preset, where it differs from the spec
  backend,      // the backend's own calls
  compare,      // comparing outputs, metrics and labels of the mismatches
  causes,       // cause attribution
  reproducers,  // one-element reproducers (each re-run on the backend) and their files
  reports,      // writing report.json, report.html, report.junit.xml
};
inline constexpr std::array<Phase, 8> kAllPhases = {Phase::load,    Phase::oracle, Phase::claim,       Phase::backend,
                                                    Phase::compare, Phase::causes, Phase::reproducers, Phase::reports};
std::string_view name(Phase p);

// The process's totals so far, in seconds; reset() zeroes them (tests, several runs in one process).
double phase_seconds(Phase p);
void reset_phase_times();
void add_phase_time(Phase p, double seconds);

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
