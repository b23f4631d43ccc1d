#include "qconform/child_process.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace qc {

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

namespace {

// In a child just forked from `parent`. Linux: SIGKILL when the harness dies, so a harness killed
// with -9 (a CI job cancelled) leaves no backend child running; a parent gone before the call is
// caught by the getppid check. (Exec runners have a keeper of their own: backends/exec.)
void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
}

}  // namespace

std::string signal_text(int sig) { return "signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")"; }

ChildResult run_in_child(const std::function<int(int fd)>& work, double timeout_seconds) {
  ChildResult r;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.error = std::string("pipe failed: ") + std::strerror(errno);
    return r;
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork failed: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    die_with_parent(parent);
    ::close(fds[0]);
    const int status = work(fds[1]);
    ::close(fds[1]);
    ::_exit(status);
  }
  r.started = true;
  ::close(fds[1]);
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int wait_ms = -1;
    if (timeout_seconds > 0) {
      const double left =
          timeout_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0) {
        r.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::ceil(left * 1000));
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    char chunk[1 << 16];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.answer.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (r.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_status = WEXITSTATUS(status);
  return r;
}

}  // namespace qc
