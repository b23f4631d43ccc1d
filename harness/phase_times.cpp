#include "harness/phase_times.hpp"

#include <atomic>

namespace qc {

namespace {

// Nanoseconds per phase: integers, so concurrent adds need no lock.
std::array<std::atomic<std::int64_t>, kAllPhases.size()> g_nanoseconds{};
thread_local PhaseTimer* t_current = nullptr;

}  // namespace

std::string_view name(Phase p) {
  switch (p) {
    case Phase::load:
      return "load";
    case Phase::oracle:
      return "oracle";
    case Phase::claim:
      return "claim";
    case Phase::backend:
      return "backend";
    case Phase::compare:
      return "compare";
    case Phase::causes:
      return "causes";
    case Phase::reproducers:
      return "reproducers";
    case Phase::reports:
      return "reports";
  }
  return "?";
}

double phase_seconds(Phase p) { return static_cast<double>(g_nanoseconds[static_cast<std::size_t>(p)].load()) * 1e-9; }

void reset_phase_times() {
  for (auto& n : g_nanoseconds) n.store(0);
}

void add_phase_time(Phase p, double seconds) {
  g_nanoseconds[static_cast<std::size_t>(p)] += static_cast<std::int64_t>(seconds * 1e9);
}

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
  add_phase_time(phase_, std::chrono::duration<double>(now - start_).count());
  start_ = now;
}

}  // namespace qc
