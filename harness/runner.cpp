#include "harness/runner.hpp"

#include "harness/baseline.hpp"
#include "harness/causes.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/reproducer.hpp"
#include "oracles/error.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>

#include "qconform_revision.hpp"

#ifndef QCONFORM_VERSION
#define QCONFORM_VERSION "0.0.0"
#endif

namespace qc {
namespace {

// The outcome of one backend call: an output tensor, or why there is none.
struct CallResult {
  std::optional<Tensor> out;
  Verdict verdict = Verdict::pass;  // crash or timeout when there is no output
  std::string reason;
};

CallResult call_in_process(Backend& b, const OpRequest& op) {
  try {
    return {b.run(op), Verdict::pass, ""};
  } catch (const std::exception& e) {
    return {std::nullopt, Verdict::crash, std::string("backend threw: ") + e.what()};
  }
}

void write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) ::_exit(3);
    c += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Runs the call in a forked child that sends the output back through a pipe: a signal in the
// backend (a segfault, an abort) or a hang cannot take the run down with it.
CallResult call_isolated(Backend& b, const OpRequest& op, double timeout_seconds) {
  int fds[2];
  if (::pipe(fds) != 0) return call_in_process(b, op);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return call_in_process(b, op);
  }
  if (pid == 0) {  // child: status byte, then the tensor or the message
    ::close(fds[0]);
    CallResult r = call_in_process(b, op);
    const char ok = r.out ? 1 : 0;
    write_all(fds[1], &ok, 1);
    if (r.out) {
      const auto dt = static_cast<std::uint8_t>(r.out->dtype());
      const auto rank = static_cast<std::uint64_t>(r.out->shape().size());
      write_all(fds[1], &dt, 1);
      write_all(fds[1], &rank, 8);
      for (std::int64_t d : r.out->shape()) write_all(fds[1], &d, 8);
      write_all(fds[1], r.out->bytes().data(), r.out->bytes().size());
    } else {
      write_all(fds[1], r.reason.data(), r.reason.size());
    }
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string buf;
  const auto t0 = std::chrono::steady_clock::now();
  bool timed_out = false;
  for (;;) {
    int wait_ms = -1;
    if (timeout_seconds > 0) {
      const double left =
          timeout_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::ceil(left * 1000));
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int pr = ::poll(&pfd, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;  // the deadline is checked above
    char chunk[1 << 16];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_seconds);
    return {std::nullopt, Verdict::timeout, std::string("no answer within ") + secs + " s; the backend was killed"};
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return {std::nullopt, Verdict::crash,
            "the backend died of signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")"};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || buf.empty())
    return {std::nullopt, Verdict::crash,
            "the backend's process exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1)};
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

// Elements that decide a tolerance verdict: |delta| above the tolerance (or +0 against -0).
std::vector<std::int64_t> beyond_tolerance(const Reference& ref, const Tensor& out, std::int64_t tol) {
  std::vector<std::int64_t> v;
  const bool floats = is_float(out.dtype());
  for (std::int64_t i = 0; i < out.size(); ++i) {
    if (!ref.specified[static_cast<std::size_t>(i)] || same_element(ref.expected, out, i)) continue;
    const std::int64_t d =
        floats ? ulp_delta(out.dtype(), ref.expected.bits(i), out.bits(i)) : out.get_int(i) - ref.expected.get_int(i);
    if (d == 0 || std::llabs(d) > tol) v.push_back(i);  // d == 0 with different bits: a signed zero
  }
  return v;
}

BackendResult run_one(const Case& c, const Reference& ref, Backend& b, const RunOptions& opt) {
  BackendResult r;
  r.backend = b.name();
  r.claim = b.claim();
  const Expectation ex = c.expectation_for(r.backend);
  r.expectation = ex.str();
  const Availability av = b.availability();
  if (!av.available) {
    r.verdict = Verdict::skip;
    r.reason = av.reason;
    return r;
  }
  const Availability sup = b.supports(c.op);
  if (!sup.available) {
    r.verdict = Verdict::skip;
    r.reason = sup.reason;
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  CallResult call =
      opt.isolate || opt.timeout_seconds > 0 ? call_isolated(b, c.op, opt.timeout_seconds) : call_in_process(b, c.op);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!call.out) {
    r.verdict = call.verdict;
    r.reason = call.reason;
    return r;
  }
  const Tensor& out = *call.out;
  if (out.dtype() != ref.expected.dtype() || out.shape() != ref.expected.shape()) {
    r.verdict = Verdict::fail;
    r.reason = "backend returned " + std::string(name(out.dtype())) + " " + shape_str(out.shape()) + ", expected " +
               std::string(name(ref.expected.dtype())) + " " + shape_str(ref.expected.shape());
    r.fingerprint = "shape";
    return r;
  }
  r.metrics = compare(ref, out, opt.max_worst);
  const std::vector<std::int64_t> mismatches = mismatch_indices(ref.expected, out, ref.specified);
  if (opt.attribute_causes) attribute_causes(c.op, c.spec, ref, out, mismatches, r);
  const Metrics& m = r.metrics;
  const std::string unit = m.unit == "ulp" ? " ULP" : " LSB";
  const std::string counts = std::to_string(m.exact) + "/" + std::to_string(m.compared) + " exact";
  const std::string worst = m.mismatches() ? ", max |delta| " + std::to_string(m.max_abs) + unit : "";
  // The elements the verdict rests on; their fingerprint identifies a known mismatch.
  std::vector<std::int64_t> deciding = mismatches;
  switch (ex.kind) {
    case Expectation::Kind::exact:
      r.verdict = m.mismatches() == 0 ? Verdict::pass : Verdict::fail;
      r.reason = counts + worst + " against " + c.spec.name;
      break;
    case Expectation::Kind::max_lsb:
    case Expectation::Kind::max_ulp: {
      const bool right_unit = (ex.kind == Expectation::Kind::max_ulp) == (m.unit == "ulp");
      r.verdict =
          right_unit && m.max_abs <= ex.tolerance && m.signed_zero_mismatches == 0 ? Verdict::pass : Verdict::fail;
      if (right_unit) deciding = beyond_tolerance(ref, out, ex.tolerance);
      r.reason = counts + ", max |delta| " + std::to_string(m.max_abs) + unit + " (allowed " +
                 std::to_string(ex.tolerance) +
                 (right_unit ? "" : std::string(", but the expectation is in ") + (m.unit == "ulp" ? "LSB" : "ULP")) +
                 ") against " + c.spec.name;
      break;
    }
    case Expectation::Kind::dot_product: {
      if (!ref.dot_product) {
        r.verdict = Verdict::fail;
        r.reason = "a dot_product expectation needs a dot-product op (weight_only_gemm)";
        break;
      }
      const DotProductVerdict v = ref.dot_product(out);
      r.verdict = v.pass ? Verdict::pass : Verdict::fail;
      r.reason = (v.pass ? std::string("within the TOSA dot-product bounds")
                         : "outside the TOSA dot-product bounds: " + v.reason) +
                 "; " + counts + worst + " against the correctly rounded " + c.spec.name;
      break;
    }
    case Expectation::Kind::claim: {
      auto claimed = find_preset(r.claim);
      if (!claimed) {
        r.verdict = Verdict::fail;
        r.reason = "backend claims unknown preset '" + r.claim + "'";
        break;
      }
      const Reference cref = evaluate(c.op, *claimed);
      deciding = mismatch_indices(cref.expected, out, cref.specified);
      r.claim_mismatches = static_cast<std::int64_t>(deciding.size());
      r.verdict = r.claim_mismatches == 0 ? Verdict::pass : Verdict::fail;
      r.reason = std::to_string(r.claim_mismatches) + " mismatches against its claim " + r.claim + "; " + counts +
                 " against the spec " + c.spec.name;
      break;
    }
  }
  if (r.verdict == Verdict::fail) r.fingerprint = fingerprint(deciding);
  if (!r.causes.empty()) {
    r.reason += "; reproduced by " + r.causes.front().cause + " (" + std::to_string(r.causes.front().count) + "/" +
                std::to_string(m.mismatches()) + ")";
  }
  if (opt.baseline) apply_baseline(*opt.baseline, c.id(), r);
  if (!opt.reproducer_dir.empty() && (r.verdict == Verdict::fail || r.verdict == Verdict::xfail))
    write_reproducer(c, b, deciding, opt.reproducer_dir, r);
  return r;
}

std::string granularity_of(const OpRequest& op) {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) return std::string(name(q->params.granularity()));
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return std::string(name(d->params.granularity()));
  if (const auto* r = std::get_if<RequantizeOp>(&op))
    return r->params.weight_scales.size() > 1 ? "per_axis" : "per_tensor";
  if (const auto* g = std::get_if<QGemmOp>(&op)) return "weights " + std::string(name(g->b.params.granularity()));
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op))
    return "weights " + std::string(name(w->b.params.granularity()));
  return "weights " + std::string(name(std::get<QConv2dOp>(op).weight.params.granularity()));
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

RunReport run_cases(const std::vector<Suite>& suites, const std::vector<Backend*>& backends, const RunOptions& opt) {
  RunReport report;
  report.meta = collect_metadata();
  for (Backend* b : backends) {
    const Availability a = b->availability();
    report.meta.backends.push_back(b->name() + (a.available ? "" : " (unavailable: " + a.reason + ")"));
    if (a.available) {
      auto facts = b->facts();
      if (!facts.empty()) report.meta.backend_facts[b->name()] = std::move(facts);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t total = 0, done = 0;
  for (const Suite& s : suites) total += s.cases.size() * backends.size();
  for (const Suite& s : suites) {
    for (const Case& c : s.cases) {
      const Tensor& in = op_input(c.op);
      CaseResult cr;
      cr.id = c.id();
      cr.suite = c.suite;
      cr.name = c.name;
      cr.description = c.description;
      cr.file = c.file;
      cr.line = c.line;
      cr.op = std::string(op_name(c.op));
      cr.spec = c.spec.name;
      cr.spec_description = c.spec.description;
      cr.shape = shape_str(in.shape());
      cr.input_dtype = std::string(name(in.dtype()));
      cr.output_dtype = std::string(name(op_output_dtype(c.op)));
      cr.granularity = granularity_of(c.op);
      Reference ref;
      try {
        ref = evaluate(c.op, c.spec);
      } catch (const InputError& e) {
        throw InputError(c.file + ":" + std::to_string(c.line) + ": case '" + c.name + "': " + e.what());
      }
      for (Backend* b : backends) {
        cr.backends.push_back(run_one(c, ref, *b, opt));
        if (opt.progress) opt.progress(cr, cr.backends.back(), ++done, total);
      }
      report.cases.push_back(std::move(cr));
    }
  }
  report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

int exit_code(const RunReport& r) {
  bool ran = false;
  for (const CaseResult& c : r.cases) {
    for (const BackendResult& b : c.backends) {
      if (is_change(b.verdict)) return 1;
      if (b.verdict != Verdict::skip) ran = true;
    }
  }
  return ran ? 0 : 77;
}

RunMetadata collect_metadata() {
  RunMetadata m;
  m.tool_version = QCONFORM_VERSION;
  m.git_revision = QCONFORM_GIT_REVISION;
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "gcc " __VERSION__;
#endif
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  struct F {
    const char* name;
    bool on;
  };
  const F feats[] = {{"sse4.1", __builtin_cpu_supports("sse4.1") != 0},
                     {"avx2", __builtin_cpu_supports("avx2") != 0},
                     {"fma", __builtin_cpu_supports("fma") != 0},
                     {"f16c", __builtin_cpu_supports("f16c") != 0},
                     {"avx512f", __builtin_cpu_supports("avx512f") != 0},
                     {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
                     {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0}};
  for (const F& f : feats)
    if (f.on) m.cpu_features.push_back(f.name);
#endif
  m.started_at = now_utc();
  return m;
}

}  // namespace qc
