// Running a piece of work in a forked child process that answers through a pipe: a signal in the
// work (a segfault, an abort), a hang, or a runtime it initialises (CUDA cannot be used in a child
// forked after its parent initialised it) stays in the child. The harness isolates backend calls
// with it (--isolate, --timeout), the hip backend probes the GPU with it. POSIX only.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace qc {

struct ChildResult {
  bool started = false;    // false: pipe or fork failed (`error` says which); nothing ran
  std::string error;       // why it did not start
  std::string answer;      // every byte the child wrote to its pipe
  bool timed_out = false;  // no end within the time limit: the child was killed (SIGKILL)
  int signal = 0;          // the signal that ended the child; 0 when it exited
  int exit_status = -1;    // its exit status when it exited
};

// Forks; the child runs work(fd), writing its answer to fd, and leaves with _exit(the value work
// returns) (without the parent's exit handlers or buffered output). The parent reads the answer
// until the child closes the pipe, waiting at most timeout_seconds (<= 0: no limit), then reaps it.
ChildResult run_in_child(const std::function<int(int fd)>& work, double timeout_seconds);

// Writes all n bytes to fd, retrying interrupted writes; false on an error.
bool write_all(int fd, const void* p, std::size_t n);

// "signal 11 (Segmentation fault)".
std::string signal_text(int sig);

}  // namespace qc
