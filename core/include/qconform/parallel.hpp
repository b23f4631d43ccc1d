// Every core for one op: a large op (the oracle's GEMM and convolution, the x86 kernels) is split
// into contiguous ranges of its outputs, one per worker thread, each writing only its own outputs,
// so a result never depends on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace qc {

// Worker threads for one op: QCONFORM_THREADS when set (1: the calling thread alone), else every
// core the machine has. The environment is read once per process; InputError for a value that is
// not a count.
int worker_threads();
// Sets the worker threads for later ops (0: back to QCONFORM_THREADS or every core): for tests,
// and for callers that run several ops side by side.
void set_worker_threads(int n);

// Calls f(begin, end) on contiguous ranges that cover [0, n) in order, concurrently when each of at
// least two threads gets min_per_thread or more; the calling thread takes the first range. The
// first exception any range throws is rethrown here after every thread has finished.
void parallel_ranges(std::int64_t n, std::int64_t min_per_thread,
                     const std::function<void(std::int64_t, std::int64_t)>& f);

}  // namespace qc
