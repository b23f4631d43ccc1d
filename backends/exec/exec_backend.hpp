// The host's side of the exec protocol (docs/integrate.md, "Exec runners"): a backend that is a
// long-lived program, started with /bin/sh -c CMD and driven over newline-delimited JSON on its
// stdin/stdout, tensors as .npy files in a per-call folder. Its faults (it exits, dies of a signal,
// hangs past the timeout, answers with something that is not a reply) are contained in that
// process and reported as qc::BackendFault; the next call restarts it.
#pragma once

#include "qconform/backend.hpp"

#include <sys/types.h>

#include <map>
#include <string>

namespace qc {

// `s` as one /bin/sh word (single-quoted): the exec route runs its command with /bin/sh -c.
std::string sh_quote(const std::string& s);

class ExecBackend : public Backend {
 public:
  // Starts the runner and says hello. Throws InputError when it cannot be started, does not answer
  // hello, or speaks another protocol version (naming the command and both versions).
  // timeout_seconds > 0 bounds every reply.
  ExecBackend(std::string command, double timeout_seconds, std::string env_pythonpath = "");
  ~ExecBackend() override;
  ExecBackend(const ExecBackend&) = delete;
  ExecBackend& operator=(const ExecBackend&) = delete;

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::string claim() const override { return claim_; }
  Availability availability() const override { return available_; }
  std::map<std::string, std::string> facts() const override { return facts_; }
  Availability supports(const OpRequest& op) const override;
  Tensor run(const OpRequest& op) override;
  bool contains_faults() const override { return true; }

  const std::string& command() const { return command_; }

 private:
  struct Reply;
  void start() const;
  void hello(bool at_startup) const;
  void stop(bool kill_now) const;
  // Sends one message and waits for one line; throws BackendFault (and stops the runner) on a fault.
  std::string exchange(const std::string& message) const;
  [[noreturn]] void fault(BackendFault::Kind kind, const std::string& what) const;
  std::string stderr_tail() const;
  void drain_stderr() const;

  std::string command_;
  double timeout_;
  std::string pythonpath_;  // prepended to PYTHONPATH in the runner's environment (py: route)
  std::string name_, description_, claim_;
  Availability available_;
  std::map<std::string, std::string> facts_;

  // The running process (mutable: supports() is const but talks to it, and restarts it).
  mutable pid_t pid_ = -1;
  mutable int to_ = -1, from_ = -1, err_ = -1;
  mutable std::string buffer_;  // read from stdout, not yet a full line
  mutable std::string stderr_;  // the last kStderrTail bytes of its stderr
  mutable bool said_hello_ = false;
};

}  // namespace qc
