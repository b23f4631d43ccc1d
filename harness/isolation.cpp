#include "harness/isolation.hpp"

#include "qconform/child_process.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace qc {

CallResult call_in_process(Backend& b, const OpRequest& op) {
  CallResult r;
  if (auto fault = fault_of([&] { r.out = b.run(op); })) return *fault;
  return r;
}

bool is_available(const Backend& b) {
  try {
    return b.availability().available;
  } catch (const std::exception&) {
    return true;
  }
}

CallResult call_isolated(Backend& b, const OpRequest& op, double timeout_seconds) {
  // The child's answer: a status byte, then the tensor (format, rank, shape, bytes) or the message.
  const ChildResult c = run_in_child(
      [&](int fd) {
        CallResult r = call_in_process(b, op);
        const char ok = r.out ? 1 : 0;
        bool written = write_all(fd, &ok, 1);
        if (r.out) {
          const auto dt = static_cast<std::uint8_t>(r.out->dtype());
          const auto rank = static_cast<std::uint64_t>(r.out->shape().size());
          written = written && write_all(fd, &dt, 1) && write_all(fd, &rank, 8);
          for (std::int64_t d : r.out->shape()) written = written && write_all(fd, &d, 8);
          written = written && write_all(fd, r.out->bytes().data(), r.out->bytes().size());
        } else {
          written = written && write_all(fd, r.reason.data(), r.reason.size());
        }
        return written ? 0 : 3;
      },
      timeout_seconds);
  if (!c.started) return call_in_process(b, op);
  if (c.timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_seconds);
    return {std::nullopt, Verdict::timeout, std::string("no answer within ") + secs + " s; the backend was killed"};
  }
  if (c.signal) return {std::nullopt, Verdict::crash, "the backend died of " + signal_text(c.signal)};
  const std::string& buf = c.answer;
  if (c.exit_status != 0 || buf.empty())
    return {std::nullopt, Verdict::crash, "the backend's process exited with status " + std::to_string(c.exit_status)};
  if (buf[0] == 0) return {std::nullopt, Verdict::crash, buf.substr(1)};
  std::size_t pos = 1;
  auto take = [&](void* dst, std::size_t n) {
    if (pos + n > buf.size()) throw std::runtime_error("short reply from the backend's process");
    std::memcpy(dst, buf.data() + pos, n);
    pos += n;
  };
  try {
    std::uint8_t dt = 0;
    std::uint64_t rank = 0;
    take(&dt, 1);
    take(&rank, 8);
    if (rank > 16) throw std::runtime_error("bad reply from the backend's process");
    Shape shape(rank);
    for (auto& d : shape) take(&d, 8);
    Tensor t(static_cast<DType>(dt), shape);
    take(t.bytes().data(), t.bytes().size());
    return {std::move(t), Verdict::pass, ""};
  } catch (const std::exception& e) {
    return {std::nullopt, Verdict::crash, e.what()};
  }
}

CallResult call_backend(Backend& b, const OpRequest& op, const CallPolicy& policy) {
  const bool fork = (policy.isolate || policy.timeout_seconds > 0) && !b.contains_faults();
  return fork ? call_isolated(b, op, policy.timeout_seconds) : call_in_process(b, op);
}

}  // namespace qc
