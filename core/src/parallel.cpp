#include "qconform/parallel.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace qc {

namespace {

int threads_from_environment() {
  const char* e = std::getenv("QCONFORM_THREADS");
  if (e == nullptr || *e == '\0') return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  char* end = nullptr;
  const long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 1024)
    throw InputError("QCONFORM_THREADS: expected a thread count from 1 to 1024, got '" + std::string(e) + "'");
  return static_cast<int>(v);
}

std::atomic<int> g_threads{0};  // 0: not set

}  // namespace

int worker_threads() {
  static const int from_environment = threads_from_environment();
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : from_environment;
}

void set_worker_threads(int n) {
  if (n < 0 || n > 1024) throw InputError("worker threads: expected 0 to 1024, got " + std::to_string(n));
  g_threads.store(n, std::memory_order_relaxed);
}

void parallel_ranges(std::int64_t n, std::int64_t min_per_thread,
                     const std::function<void(std::int64_t, std::int64_t)>& f) {
  if (n <= 0) return;
  const std::int64_t t = std::clamp<std::int64_t>(n / std::max<std::int64_t>(1, min_per_thread), 1, worker_threads());
  if (t == 1) {
    f(0, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(t));
  auto run = [&](std::int64_t i) {
    try {
      f(n * i / t, n * (i + 1) / t);
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (std::int64_t i = 1; i < t; ++i) pool.emplace_back(run, i);
  run(0);
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace qc
