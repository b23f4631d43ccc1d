#include "harness/runner.hpp"

#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "oracles/error.hpp"

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include "qconform_revision.hpp"

#ifndef QCONFORM_VERSION
#define QCONFORM_VERSION "0.0.0"
#endif

namespace qc {
namespace {

BackendResult run_one(const Case& c, const Reference& ref, Backend& b, int max_worst) {
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
  Tensor out;
  try {
    out = b.run(c.op);
  } catch (const std::exception& e) {
    r.verdict = Verdict::crash;
    r.reason = std::string("backend threw: ") + e.what();
    return r;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out.dtype() != ref.expected.dtype() || out.shape() != ref.expected.shape()) {
    r.verdict = Verdict::fail;
    r.reason = "backend returned " + std::string(name(out.dtype())) + " " + shape_str(out.shape()) + ", expected " +
               std::string(name(ref.expected.dtype())) + " " + shape_str(ref.expected.shape());
    return r;
  }
  r.metrics = compare(ref, out, max_worst);
  const Metrics& m = r.metrics;
  const std::string unit = m.unit == "ulp" ? " ULP" : " LSB";
  const std::string counts = std::to_string(m.exact) + "/" + std::to_string(m.compared) + " exact";
  const std::string worst = m.mismatches() ? ", max |delta| " + std::to_string(m.max_abs) + unit : "";
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
      r.claim_mismatches = count_mismatches(cref.expected, out, cref.specified);
      r.verdict = r.claim_mismatches == 0 ? Verdict::pass : Verdict::fail;
      r.reason = std::to_string(r.claim_mismatches) + " mismatches against its claim " + r.claim + "; " + counts +
                 " against the spec " + c.spec.name;
      break;
    }
  }
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
        cr.backends.push_back(run_one(c, ref, *b, opt.max_worst));
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
      if (b.verdict == Verdict::fail || b.verdict == Verdict::xpass || b.verdict == Verdict::crash ||
          b.verdict == Verdict::timeout)
        return 1;
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
