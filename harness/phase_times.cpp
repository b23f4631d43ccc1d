#include "harness/phase_times.hpp"

#include <array>
#include <atomic>

namespace qc {

namespace {

// Nanoseconds per phase: integers, so concurrent adds need no lock.
std::array<std::atomic<std::int64_t>, std::size(kPhaseTable)> g_nanoseconds{};
thread_local PhaseTimer* t_current = nullptr;

}  // namespace

double phase_seconds(Phase p) { return static_cast<double>(g_nanoseconds[static_cast<std::size_t>(p)].load()) * 1e-9; }

PhaseTimer::PhaseTimer(Phase p) : phase_(p), start_(std::chrono::steady_clock::now()), outer_(t_current) {
  if (outer_) outer_->stop_clock();
  t_current = this;
}

PhaseTimer::~PhaseTimer() {
  stop_clock();
  t_current = outer_;
  if (outer_) outer_->start_ = std::chrono::steady_clock::now();
}

void PhaseTimer::stop_clock() {
  const auto now = std::chrono::steady_clock::now();
  g_nanoseconds[static_cast<std::size_t>(phase_)] +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
  start_ = now;
}

}  // namespace qc
