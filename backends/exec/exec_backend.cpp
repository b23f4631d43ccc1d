#include "backends/exec/exec_backend.hpp"

#include "qconform/error.hpp"
#include "qconform/exec_runner.hpp"
#include "qconform/npy.hpp"
#include "qconform/wire.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace qc {

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t kStderrTail = 4096;
constexpr double kStartupSeconds = 60;  // the least time hello gets

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* n = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (n ? std::string(" (SIG") + n + ")" : "");
  }
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    std::string t = "exited with status " + std::to_string(code);
    // /bin/sh reports a child killed by signal N as 128 + N when it did not exec the command itself.
    if (code > 128 && code < 128 + 65) {
      const char* n = sigabbrev_np(code - 128);
      if (n) t += " (the shell's report of signal " + std::to_string(code - 128) + ", SIG" + n + ")";
    }
    return t;
  }
  return "stopped";
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// A per-call folder for the request's tensors and the runner's output; removed afterwards.
class CallDir {
 public:
  CallDir() {
    std::string tmpl = (fs::temp_directory_path() / "qconform-exec-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw BackendFault(BackendFault::Kind::crash, "cannot create a temporary folder");
    path = tmpl;
  }
  ~CallDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  CallDir(const CallDir&) = delete;
  CallDir& operator=(const CallDir&) = delete;
  fs::path path;
};

}  // namespace

ExecBackend::ExecBackend(std::string command, double timeout_seconds, std::string env_pythonpath)
    : command_(std::move(command)), timeout_(timeout_seconds), pythonpath_(std::move(env_pythonpath)) {
  // A runner that dies while we write to it must not take this process with it.
  ::signal(SIGPIPE, SIG_IGN);
  hello(true);
}

ExecBackend::~ExecBackend() {
  if (pid_ > 0 && to_ >= 0) {
    const std::string bye = "{\"type\": \"bye\"}\n";
    if (::write(to_, bye.data(), bye.size()) > 0) {
      for (int i = 0; i < 100; ++i) {  // up to a second to exit on its own
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  stop(true);
}

void ExecBackend::start() const {
  stop(true);
  stderr_.clear();
  buffer_.clear();
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw BackendFault(BackendFault::Kind::crash, "pipe failed");
  if (::pipe2(out, O_CLOEXEC) != 0) throw BackendFault(BackendFault::Kind::crash, "pipe failed");
  if (::pipe2(err, O_CLOEXEC) != 0) throw BackendFault(BackendFault::Kind::crash, "pipe failed");
  // The environment is built before fork (the child only calls async-signal-safe functions).
  std::vector<std::string> env;
  const char* old = std::getenv("PYTHONPATH");
  for (char** e = environ; *e; ++e)
    if (pythonpath_.empty() || std::strncmp(*e, "PYTHONPATH=", 11) != 0) env.emplace_back(*e);
  if (!pythonpath_.empty())
    env.push_back("PYTHONPATH=" + pythonpath_ + (old && *old ? std::string(":") + old : std::string()));
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw BackendFault(BackendFault::Kind::crash, "fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: a timeout kills the runner and its children
    // This child keeps the runner, which runs in a grandchild: `sh -c CMD` forks CMD, so a signal
    // at the harness's death (PR_SET_PDEATHSIG) would reach only the shell. The keeper gets
    // SIGTERM when the harness dies and kills the whole group; otherwise it waits for the runner
    // and leaves as it did (its exit status or its signal), which is what the harness reads.
    sigset_t keep;
    ::sigemptyset(&keep);
    ::sigaddset(&keep, SIGTERM);
    ::sigaddset(&keep, SIGCHLD);
    ::signal(SIGCHLD, SIG_DFL);
    ::sigprocmask(SIG_BLOCK, &keep, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    const pid_t runner = ::fork();
    if (runner == 0) {
      ::sigprocmask(SIG_UNBLOCK, &keep, nullptr);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::signal(SIGPIPE, SIG_DFL);
      const char* argv[] = {"sh", "-c", command_.c_str(), nullptr};
      ::execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
      ::_exit(127);
    }
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);  // the runner's, not the keeper's
    if (runner < 0) ::_exit(127);
    for (;;) {
      int sig = 0;
      ::sigwait(&keep, &sig);
      if (sig == SIGTERM) {
        ::kill(-::getpgrp(), SIGKILL);  // the runner, what it started, and the keeper
        ::_exit(128 + SIGKILL);
      }
      int status = 0;
      if (::waitpid(runner, &status, WNOHANG) != runner) continue;
      if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
      ::signal(WTERMSIG(status), SIG_DFL);  // leave by the runner's signal, as the runner did
      ::sigprocmask(SIG_UNBLOCK, &keep, nullptr);
      ::raise(WTERMSIG(status));
      ::_exit(128 + WTERMSIG(status));
    }
  }
  ::setpgid(pid, pid);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  pid_ = pid;
  to_ = in[1];
  from_ = out[0];
  err_ = err[0];
  ::fcntl(err_, F_SETFL, ::fcntl(err_, F_GETFL) | O_NONBLOCK);
  ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
  said_hello_ = false;
}

void ExecBackend::stop(bool kill_now) const {
  if (pid_ > 0) {
    if (kill_now) ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  for (int* fd : {&to_, &from_, &err_})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

void ExecBackend::drain_stderr() const {
  if (err_ < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(err_, buf, sizeof buf);
    if (n <= 0) break;
    stderr_.append(buf, static_cast<std::size_t>(n));
    if (stderr_.size() > kStderrTail) stderr_.erase(0, stderr_.size() - kStderrTail);
  }
}

std::string ExecBackend::stderr_tail() const {
  drain_stderr();
  std::string t = stderr_;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.empty() ? "" : "; its stderr ends: " + t;
}

void ExecBackend::fault(BackendFault::Kind kind, const std::string& what) const {
  // Give a dying runner a moment to finish writing its stderr, then kill what is left.
  std::string msg = "exec runner '" + command_ + "' " + what;
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
  int status = 0;
  if (pid_ > 0) {
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  msg += stderr_tail();
  stop(true);
  throw BackendFault(kind, msg);
}

std::string ExecBackend::exchange(const std::string& message) const {
  if (pid_ < 0) {
    start();
    if (message.find("\"hello\"") == std::string::npos) hello(false);
  }
  const std::string line = message + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t w = ::write(to_, line.data() + sent, line.size() - sent);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // it closed its stdin: the read below finds out how it ended
    sent += static_cast<std::size_t>(w);
  }
  // Starting (an interpreter, a device context) may take longer than a call: hello gets at least
  // kStartupSeconds.
  const double limit = said_hello_ ? timeout_ : std::max(timeout_, kStartupSeconds);
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (const std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string reply = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (reply.find_first_not_of(" \t\r") == std::string::npos) continue;
      return reply;
    }
    int wait_ms = -1;
    if (limit > 0) {
      const double left = limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0)
        fault(BackendFault::Kind::timeout, "gave no answer within " + seconds_text(limit) + " s and was killed");
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd fds[2] = {{from_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int n = ::poll(fds, err_ >= 0 ? 2 : 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (err_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
      char buf[4096];
      const ssize_t r = ::read(err_, buf, sizeof buf);
      if (r > 0) {
        stderr_.append(buf, static_cast<std::size_t>(r));
        if (stderr_.size() > kStderrTail) stderr_.erase(0, stderr_.size() - kStderrTail);
      } else if (r == 0) {
        ::close(err_);
        err_ = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t r = ::read(from_, buf, sizeof buf);
      if (r > 0) {
        buffer_.append(buf, static_cast<std::size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        // Its stdout closed: it has exited or is about to; wait up to a second for its status.
        int status = 0;
        bool reaped = false;
        for (int i = 0; i < 100 && !reaped; ++i) {
          reaped = ::waitpid(pid_, &status, WNOHANG) == pid_;
          if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (reaped) {
          pid_ = -1;
          fault(BackendFault::Kind::crash, exit_text(status) + " before answering");
        }
        fault(BackendFault::Kind::crash, "closed its stdout before answering");
      }
    }
  }
}

void ExecBackend::hello(bool at_startup) const {
  json reply;
  try {
    const std::string text =
        exchange(json{{"qconform", "exec"}, {"version", exec::kVersion}, {"type", "hello"}}.dump());
    reply = json::parse(text, nullptr, false);
    std::string bad;
    if (reply.is_discarded() || !reply.is_object())
      bad = "not a JSON object: " + text.substr(0, 200);
    else if (!reply.contains("version") || !reply["version"].is_number_integer())
      bad = "no \"version\"";
    if (bad.empty() && reply["version"].get<std::int64_t>() != exec::kVersion) {
      const std::string msg = "exec runner '" + command_ + "' speaks exec protocol version " +
                              std::to_string(reply["version"].get<std::int64_t>()) + "; this qconform speaks version " +
                              std::to_string(exec::kVersion);
      stop(true);
      if (at_startup) throw InputError(msg);
      throw BackendFault(BackendFault::Kind::crash, msg);
    }
    if (bad.empty())
      for (const char* f : {"name", "description", "claim", "reason"})
        if (!reply.contains(f) || !reply[f].is_string()) bad = std::string("no string \"") + f + "\"";
    if (bad.empty() && (!reply.contains("available") || !reply["available"].is_boolean()))
      bad = "no boolean \"available\"";
    if (bad.empty() && (!reply.contains("facts") || !reply["facts"].is_object())) bad = "no object \"facts\"";
    if (bad.empty())
      for (const auto& [k, v] : reply["facts"].items())
        if (!v.is_string()) bad = "fact '" + k + "' is not a string";
    if (bad.empty() && reply["name"].get<std::string>().empty()) bad = "an empty \"name\"";
    if (bad.empty() && !at_startup && reply["name"].get<std::string>() != name_)
      bad = "a new name '" + reply["name"].get<std::string>() + "' (it was '" + name_ + "')";
    if (!bad.empty()) fault(BackendFault::Kind::crash, "gave a malformed reply to hello: " + bad);
  } catch (const BackendFault& f) {
    if (at_startup) throw InputError(std::string("cannot start: ") + f.what());
    throw;
  }
  said_hello_ = true;
  if (at_startup) {
    auto* self = const_cast<ExecBackend*>(this);
    self->name_ = reply["name"];
    self->description_ = reply["description"];
    self->claim_ = reply["claim"];
    self->available_ = {reply["available"].get<bool>(), reply["reason"].get<std::string>()};
    self->facts_.clear();
    for (const auto& [k, v] : reply["facts"].items()) self->facts_[k] = v.get<std::string>();
  }
}

Availability ExecBackend::supports(const OpRequest& op) const {
  CallDir dir;
  const wire::Message m = wire::encode_op(op);
  exec::write_tensors(dir.path, m.tensors);
  const std::string text =
      exchange("{\"type\": \"supports\", \"op\": " + m.json + ", \"dir\": " + json(dir.path.string()).dump() + "}");
  const json r = json::parse(text, nullptr, false);
  if (r.is_discarded() || !r.is_object())
    fault(BackendFault::Kind::crash, "gave a malformed reply: not a JSON object: " + text.substr(0, 200));
  if (r.contains("ok") && r["ok"] == false)
    throw BackendFault(BackendFault::Kind::crash, "backend threw: " + (r.contains("error") && r["error"].is_string()
                                                                           ? r["error"].get<std::string>()
                                                                           : std::string("(no error message)")));
  if (!r.contains("available") || !r["available"].is_boolean())
    fault(BackendFault::Kind::crash, "gave a malformed reply: no boolean \"available\" in " + text.substr(0, 200));
  if (!r.contains("reason") || !r["reason"].is_string())
    fault(BackendFault::Kind::crash, "gave a malformed reply: no string \"reason\" in " + text.substr(0, 200));
  return {r["available"].get<bool>(), r["reason"].get<std::string>()};
}

Tensor ExecBackend::run(const OpRequest& op) {
  CallDir dir;
  const wire::Message m = wire::encode_op(op);
  exec::write_tensors(dir.path, m.tensors);
  const std::string text =
      exchange("{\"type\": \"run\", \"op\": " + m.json + ", \"dir\": " + json(dir.path.string()).dump() + "}");
  const json r = json::parse(text, nullptr, false);
  if (r.is_discarded() || !r.is_object())
    fault(BackendFault::Kind::crash, "gave a malformed reply: not a JSON object: " + text.substr(0, 200));
  if (!r.contains("ok") || !r["ok"].is_boolean())
    fault(BackendFault::Kind::crash, "gave a malformed reply: no boolean \"ok\" in " + text.substr(0, 200));
  if (!r["ok"].get<bool>()) {
    if (!r.contains("error") || !r["error"].is_string())
      fault(BackendFault::Kind::crash, "gave a malformed reply: no string \"error\" in " + text.substr(0, 200));
    throw BackendFault(BackendFault::Kind::crash, "backend threw: " + r["error"].get<std::string>());
  }
  if (!r.contains("output") || !r["output"].is_string())
    fault(BackendFault::Kind::crash, "gave a malformed reply: no string \"output\" in " + text.substr(0, 200));
  const fs::path file = dir.path / r["output"].get<std::string>();
  const DType want = op_output_dtype(op);
  try {
    if (!fs::is_regular_file(file))
      throw InputError("its output file '" + r["output"].get<std::string>() + "' is missing");
    Tensor t = read_npy(file);
    // The storage type of a format NumPy lacks (bf16 as u16) is read as the format; any other type
    // is the kernel's answer, judged like a wrong dtype from any backend (a FAIL that names it).
    if (t.dtype() != want && t.dtype() == npy_storage_dtype(want)) t = read_npy(file, want);
    return t;
  } catch (const InputError& e) {
    fault(BackendFault::Kind::crash, std::string("gave a malformed reply: ") + e.what());
  }
}

}  // namespace qc
