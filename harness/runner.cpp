#include "harness/runner.hpp"
#include "harness/phase_times.hpp"

#include "harness/baseline.hpp"
#include "harness/causes.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "harness/isolation.hpp"
#include "harness/judge.hpp"
#include "harness/reproducer.hpp"
#include "harness/verdict.hpp"
#include "qconform/error.hpp"
#include "reports/writers.hpp"

#include "qconform/parallel.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace qc {
namespace {

std::string granularity_of(const OpRequest& op) {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) return std::string(name(q->params.granularity()));
  if (const auto* d = std::get_if<DequantizeOp>(&op)) return std::string(name(d->params.granularity()));
  if (const auto* r = std::get_if<RequantizeOp>(&op))
    return r->params.weight_scales.size() > 1 ? "per_axis" : "per_tensor";
  if (const auto* g = std::get_if<QGemmOp>(&op)) return "weights " + std::string(name(g->b.params.granularity()));
  if (const auto* w = std::get_if<WeightOnlyGemmOp>(&op))
    return "weights " + std::string(name(w->b.params.granularity()));
  if (const auto* c = std::get_if<ChooseQParamsOp>(&op)) return c->axis ? "per_axis" : "per_tensor";
  if (const auto* c = std::get_if<Conv2dOp>(&op))
    return is_float(c->weight.values.dtype()) && !c->weight.packing
               ? "float weights"
               : "weights " + std::string(name(c->weight.params.granularity()));
  if (const auto* m = std::get_if<MxQuantizeOp>(&op)) return "blocks of " + std::to_string(m->blocking.block_size);
  if (const auto* m = std::get_if<MxDequantizeOp>(&op)) return "blocks of " + std::to_string(m->blocking.block_size);
  if (const auto* m = std::get_if<MxGemmOp>(&op))
    return std::string(name(m->a.format)) + " x " + std::string(name(m->b.format)) + ", blocks of " +
           std::to_string(m->block_size) + " along K";
  if (std::holds_alternative<QAddOp>(op)) return "per_tensor";
  return "weights " + std::string(name(std::get<QConv2dOp>(op).weight.params.granularity()));
}

// How two cases' outputs compare against what `a` states about them.
struct AgreementFinding {
  AgreementCheck check;
  std::vector<std::int64_t> differing;  // every differing index
};

AgreementFinding check_agreement(const Agreement& a, const Case& c, const std::string& other_id, const Tensor& mine,
                                 const Tensor& theirs, const std::string& whose) {
  constexpr std::size_t kShown = 8;
  AgreementFinding f;
  AgreementCheck& k = f.check;
  k.assertion = std::string(a.assertion());
  k.other = other_id;
  k.stated = a.kind == Agreement::Kind::differs ? a.elements : -1;
  k.elements = mine.size();
  const std::vector<std::uint8_t> same = same_elements(mine, theirs);
  for (std::size_t i = 0; i < same.size(); ++i)
    if (!same[i]) f.differing.push_back(static_cast<std::int64_t>(i));
  k.differing = static_cast<std::int64_t>(f.differing.size());
  for (std::size_t i = 0; i < std::min(kShown, f.differing.size()); ++i) k.first_differing.push_back(f.differing[i]);
  const bool holds = a.kind == Agreement::Kind::same_outputs ? k.differing == 0
                     : a.elements < 0                        ? k.differing > 0
                                                             : k.differing == a.elements;
  k.status = holds ? AgreementStatus::holds : AgreementStatus::broken;
  std::string at;
  for (std::size_t i = 0; i < k.first_differing.size(); ++i)
    at += (i ? ", " : "") + std::to_string(k.first_differing[i]);
  if (k.differing > static_cast<std::int64_t>(k.first_differing.size())) at += ", ...";
  const std::string stated = a.kind == Agreement::Kind::same_outputs ? "the same outputs"
                             : a.elements < 0                        ? "different outputs"
                                              : std::to_string(a.elements) + " differing elements";
  k.reason = k.assertion + " " + (holds ? "holds" : "broken") + ": " + whose + " of '" + c.name + "' and '" + a.other +
             "' differ in " + std::to_string(k.differing) + " of " + std::to_string(k.elements) + " elements" +
             (at.empty() ? "" : " (at " + at + ")") + "; the case states " + stated;
  return f;
}

// A case with the operands it takes from other cases bound to `op`'s values, standing alone.
Case standalone(const Case& c, const OpRequest& op) {
  Case s = c;
  s.op = op;
  s.links.clear();
  s.agreements.clear();
  return s;
}

// The cases of `s` (cases and dependencies) that `roots` need, producers transitively, in order.
std::vector<Case> chain_of(const Suite& s, const std::vector<std::string>& roots) {
  std::map<std::string, const Case*> by_name;
  for (const auto* list : {&s.cases, &s.dependencies})
    for (const Case& c : *list) by_name.emplace(c.name, &c);
  std::set<std::string> need;
  std::vector<std::string> todo = roots;
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    if (!need.insert(n).second) continue;
    if (auto it = by_name.find(n); it != by_name.end())
      for (const OperandLink& l : it->second->links) todo.push_back(l.producer);
  }
  std::vector<Case> out;
  for (const auto* list : {&s.cases, &s.dependencies})
    for (const Case& c : *list)
      if (need.contains(c.name)) out.push_back(c);
  return out;
}

// Runs the cases of one suite. A case that takes operands from other cases, or compares its
// outputs with them, needs those cases first: each case is evaluated once by the oracle and once
// by each backend, when it is reported or when a case needs it, whichever comes first, and kept
// until the end of the suite when another case names it.
// Backends whose device was lost (BackendFault::Kind::device_lost) in this process, with the case
// it happened in and why: their later calls are not made, since each would fail the same way and
// be reported as a fault of its own case.
struct LostDevice {
  std::string case_id;
  std::string reason;
};
using LostDevices = std::map<const Backend*, LostDevice>;

class SuiteRunner {
 public:
  SuiteRunner(const Suite& s, const std::vector<Backend*>& backends, const RunOptions& opt, LostDevices& lost)
      : s_(s), backends_(backends), opt_(opt), lost_(lost) {
    for (const auto* list : {&s.cases, &s.dependencies})
      for (const Case& c : *list) {
        by_name_.emplace(c.name, &c);
        for (const OperandLink& l : c.links) named_.insert(l.producer);
        for (const Agreement& a : c.agreements) named_.insert(a.other);
      }
  }

  // The case's result on every backend (progress is called after each).
  CaseResult report(const Case& c, std::size_t& done, std::size_t total);

 private:
  struct CaseRun {
    OpRequest op;   // the case's op with the oracle's outputs of its producers bound
    Reference ref;  // the oracle's answer for `op` (its describe() refers to `op`: a CaseRun stays put)
    std::vector<std::optional<BackendRun>> backends;  // by backend index, once run
  };

  const Case& find(const std::string& name) const { return *by_name_.at(name); }
  std::string id(const std::string& name) const { return s_.name + "/" + name; }
  // The oracle's side of a case (its producers' first).
  CaseRun& evaluated(const Case& c);
  // Backend i's run of a case (its producers' on backend i first). One backend at a time, so a
  // result streams out (progress, results.jsonl) as soon as it and what it needs are done.
  const BackendRun& ran(const Case& c, std::size_t i);
  // Keeps backend i's run of `c`, noting a device it lost.
  const BackendRun& keep(const Case& c, std::size_t i, BackendRun r);
  // Runs `c` (and the cases it compares with) on the backends side by side, opt_.jobs at a time,
  // each backend in a thread of its own: its slot of each CaseRun is its alone, and the oracle's
  // side is evaluated first, so the threads only read the map of runs. What a thread throws is left
  // for report(), whose ran() calls then meet it again in the serial order.
  void run_side_by_side(const Case& c);
  void write_reproducers(const Case& c, const CaseRun& run, Backend& b, const std::vector<std::int64_t>& deciding,
                         const std::vector<std::string>& broken_with, BackendResult& r);

  const Suite& s_;
  const std::vector<Backend*>& backends_;
  const RunOptions& opt_;
  LostDevices& lost_;
  std::map<std::string, const Case*> by_name_;
  std::set<std::string> named_;  // cases another case takes operands from or compares with
  std::map<std::string, std::unique_ptr<CaseRun>> runs_;
  std::mutex lost_mutex_;  // lost_, shared by the backends' threads
};

SuiteRunner::CaseRun& SuiteRunner::evaluated(const Case& c) {
  if (auto it = runs_.find(c.name); it != runs_.end()) return *it->second;
  std::vector<const CaseRun*> producers;
  for (const OperandLink& l : c.links) producers.push_back(&evaluated(find(l.producer)));
  auto run = std::make_unique<CaseRun>();
  run->op = c.op;
  run->backends.resize(backends_.size());
  try {
    for (std::size_t k = 0; k < c.links.size(); ++k)
      bind_operand(run->op, c.links[k].field, producers[k]->ref.expected);
    const PhaseTimer timer(Phase::oracle);
    std::optional<Reference> known = c.links.empty() && opt_.known_reference ? opt_.known_reference(c) : std::nullopt;
    run->ref = known ? std::move(*known) : evaluate(run->op, c.spec);
  } catch (const InputError& e) {
    throw InputError(c.file + ":" + std::to_string(c.line) + ": case '" + c.name + "': " + e.what());
  }
  return *runs_.emplace(c.name, std::move(run)).first->second;
}

const BackendRun& SuiteRunner::keep(const Case& c, std::size_t i, BackendRun r) {
  if (r.device_lost) {
    const std::lock_guard<std::mutex> hold(lost_mutex_);
    lost_.try_emplace(backends_[i], LostDevice{id(c.name), r.result.reason});
  }
  return evaluated(c).backends[i].emplace(std::move(r));
}

void SuiteRunner::run_side_by_side(const Case& c) {
  const std::size_t n = backends_.size();
  const int jobs = opt_.jobs > 0 ? opt_.jobs : worker_threads();
  if (jobs <= 1 || n < 2 || opt_.isolate || opt_.timeout_seconds > 0) return;
  for (const Agreement& a : c.agreements) evaluated(find(a.other));  // the oracle's side first
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        ran(c, i);
        for (const Agreement& a : c.agreements) ran(find(a.other), i);
      } catch (...) {  // report() meets it again, in order
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < std::min<std::size_t>(static_cast<std::size_t>(jobs), n); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

const BackendRun& SuiteRunner::ran(const Case& c, std::size_t i) {
  CaseRun& run = evaluated(c);
  if (run.backends[i]) return *run.backends[i];
  Backend& b = *backends_[i];
  std::optional<LostDevice> lost;
  {
    const std::lock_guard<std::mutex> hold(lost_mutex_);
    if (const auto it = lost_.find(&b); it != lost_.end()) lost = it->second;
  }
  if (lost) {
    BackendRun not_run;
    not_run.result = started(c, b);
    not_run.result.verdict = Verdict::crash;
    not_run.result.reason = "not run: the device was lost since case " + lost->case_id + " (" + lost->reason + ")";
    return run.backends[i].emplace(std::move(not_run));
  }
  if (c.links.empty()) return keep(c, i, run_and_judge(c, run.op, c.op, run.ref, b, opt_, {}));
  // This backend's own outputs of the producers: a rounding of its own at an earlier case
  // propagates into this one, as in the lowered graph.
  OpRequest own = c.op;
  std::string missing;
  std::vector<InputVariation> propagated;
  for (const OperandLink& l : c.links) {
    const Case& producer = find(l.producer);
    const BackendRun& p = ran(producer, i);
    if (!p.output) {
      missing = "takes its " + l.field + " from '" + l.producer + "', which gave no output on " + b.name() + " (" +
                std::string(name(p.result.verdict)) + ": " + p.result.reason + ")";
      break;
    }
    bind_operand(own, l.field, *p.output);
    const Tensor& oracle = evaluated(producer).ref.expected;
    const std::int64_t moved =
        count_mismatches(oracle, *p.output, SpecifiedMask(static_cast<std::size_t>(p.output->size())));
    if (moved > 0) {
      InputVariation v{l.field + ".from=" + l.producer,
                       b.name() + "'s own output of '" + l.producer + "' as " + l.field + " (it differs from the " +
                           "oracle's in " + std::to_string(moved) + " of " + std::to_string(p.output->size()) +
                           " elements): the difference propagates",
                       run.op};
      bind_operand(v.op, l.field, *p.output);
      propagated.push_back(std::move(v));
    }
  }
  if (!missing.empty() && is_available(b)) {
    BackendRun skipped;
    skipped.result = started(c, b);
    skipped.result.verdict = Verdict::skip;
    skipped.result.reason = missing;
    return run.backends[i].emplace(std::move(skipped));
  }
  return keep(c, i, run_and_judge(c, run.op, own, run.ref, b, opt_, propagated));
}

CaseResult SuiteRunner::report(const Case& c, std::size_t& done, std::size_t total) {
  const CaseRun& run = evaluated(c);
  run_side_by_side(c);
  std::vector<const CaseRun*> others;
  for (const Agreement& a : c.agreements) others.push_back(&evaluated(find(a.other)));
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
  for (const OperandLink& l : c.links) cr.operands_from[l.field] = id(l.producer);
  for (std::size_t k = 0; k < c.agreements.size(); ++k)
    cr.agreements.push_back(check_agreement(c.agreements[k], c, id(c.agreements[k].other), run.ref.expected,
                                            others[k]->ref.expected, "the oracle's outputs")
                                .check);
  for (std::size_t i = 0; i < backends_.size(); ++i) {
    Backend& b = *backends_[i];
    const BackendRun& br = ran(c, i);
    BackendResult r = br.result;
    std::vector<std::string> broken_with;  // the other cases of broken agreements
    for (std::size_t k = 0; k < c.agreements.size(); ++k) {
      const Agreement& a = c.agreements[k];
      const BackendRun& theirs = ran(find(a.other), i);
      if (!br.output || !theirs.output) {
        AgreementCheck u;
        u.assertion = std::string(a.assertion());
        u.other = id(a.other);
        u.stated = a.kind == Agreement::Kind::differs ? a.elements : -1;
        u.reason = u.assertion + " unchecked on " + b.name() + ": '" + (br.output ? a.other : c.name) +
                   "' gave no output (" + std::string(name((br.output ? theirs : br).result.verdict)) + ")";
        r.agreements.push_back(std::move(u));
        continue;
      }
      AgreementFinding f = check_agreement(a, c, id(a.other), *br.output, *theirs.output, b.name() + "'s outputs");
      // Judged against its claim, a backend whose outputs of both cases match the claim exactly breaks
      // the statement exactly as the claim does: the claim predicts it (ONNX Runtime or oneDNN
      // without VNNI pair u8 x s8 products but not s8 x s8 ones, so the u8 rewrite of an s8 GEMM
      // stops being equivalent). A result judged by the dot-product bound (a float convolution or
      // GEMM summed in the kernel's own order) is not one value under any claim: within the bound its
      // outputs may round away from the exactly rounded sums a statement's count was derived from,
      // so the statement may break there with both results passing. It reads broken, with the count.
      const auto matches_claim = [](const BackendResult& x) {
        return x.verdict == Verdict::pass && x.claim_mismatches == 0;
      };
      const auto within_bound = [](const BackendResult& x) {
        return x.verdict == Verdict::pass && x.expectation == "dot_product";
      };
      const bool allowed = (matches_claim(br.result) || within_bound(br.result)) &&
                           (matches_claim(theirs.result) || within_bound(theirs.result));
      if (f.check.status == AgreementStatus::broken && matches_claim(br.result) && matches_claim(theirs.result)) {
        f.check.reason += " (as its claim " + r.claim + " predicts: its outputs of both cases match the claim)";
        r.reason += "; " + f.check.reason;
      } else if (f.check.status == AgreementStatus::broken && allowed) {
        const std::string& bounded = within_bound(br.result) ? c.name : a.other;
        f.check.reason += " (within what its claim " + r.claim + " allows: both results pass, and '" + bounded +
                          "' is judged by the dot-product bound, which does not fix each output)";
        r.reason += "; " + f.check.reason;
      } else if (f.check.status == AgreementStatus::broken) {
        if (cr.agreements[k].status == AgreementStatus::broken)
          f.check.reason += " (the oracle's outputs break it too)";
        r.reason += "; " + f.check.reason;
        if (r.verdict == Verdict::pass) {
          r.verdict = Verdict::fail;
          r.fingerprint = fingerprint(f.differing, distances(*theirs.output, *br.output, f.differing));
        }
        broken_with.push_back(a.other);
      } else {
        r.reason += "; " + f.check.assertion + " '" + a.other + "' holds";
      }
      r.agreements.push_back(std::move(f.check));
    }
    if (opt_.baseline) apply_baseline(*opt_.baseline, c.id(), r);
    if (!opt_.reproducer_dir.empty() && (r.verdict == Verdict::fail || r.verdict == Verdict::xfail)) {
      // The elements of the case's own failure, if it failed before its agreements were checked.
      const std::vector<std::int64_t> own =
          br.result.verdict == Verdict::fail ? br.deciding : std::vector<std::int64_t>{};
      const PhaseTimer timer(Phase::reproducers);
      write_reproducers(c, run, b, own, broken_with, r);
    }
    if (br.output && opt_.on_output) opt_.on_output(c, r, *br.output);
    cr.backends.push_back(std::move(r));
    if (opt_.progress) opt_.progress(cr, cr.backends.back(), ++done, total);
  }
  if (!named_.contains(c.name)) runs_.erase(c.name);  // nothing later needs it
  return cr;
}

// Reproducers (harness/reproducer.hpp): a standalone case for the smallest failing unit. A case
// whose failure does not survive standing alone (the difference comes through an earlier case of
// its chain, or is a broken agreement between two cases) gets the chain instead: every case it
// needs, in one file, with the links and the agreement kept.
void SuiteRunner::write_reproducers(const Case& c, const CaseRun& run, Backend& b,
                                    const std::vector<std::int64_t>& deciding,
                                    const std::vector<std::string>& broken_with, BackendResult& r) {
  if (r.fingerprint == "shape") return;  // nothing to reduce: the backend's output has the wrong shape
  if (!deciding.empty()) {
    const bool alone = write_reproducer(standalone(c, run.op), b, deciding, opt_.reproducer_dir, r,
                                        CallPolicy{opt_.isolate, opt_.timeout_seconds});
    if (alone || c.links.empty()) return;
  }
  if (deciding.empty() && broken_with.empty()) return;  // (a failure with no elements to point at)
  std::vector<std::string> roots{c.name};
  roots.insert(roots.end(), broken_with.begin(), broken_with.end());
  const std::string why =
      broken_with.empty()
          ? "The chain of " + c.id() + ": it fails on " + b.name() +
                " only with the backend's own outputs of the earlier cases (with the oracle's inlined it passes)."
          : "The cases whose agreement breaks on " + b.name() + ", " + c.id() + " and " + id(broken_with.front()) +
                ", with the cases they take operands from.";
  const std::string path = write_chain_reproducer(chain_of(s_, roots), c, b, opt_.reproducer_dir, why, r);
  // The file is checked the way its command runs it.
  try {
    RunOptions again;
    again.attribute_causes = false;
    const RunReport rr = run_cases(load_suites({path}), {&b}, again);
    for (const CaseResult& x : rr.cases)
      if (x.name == c.name && !x.backends.empty() && x.backends[0].verdict != Verdict::fail)
        r.reason += "; the chain reproducer gives " + std::string(name(x.backends[0].verdict)) + " when re-run";
  } catch (const InputError& e) {
    r.reason += "; the chain reproducer does not load: " + std::string(e.what());
  }
}

}  // namespace

RunReport run_cases(const std::vector<Suite>& suites, const std::vector<Backend*>& backends, const RunOptions& opt) {
  for (const Suite& s : suites) check_links(s);  // suites built in code have not been through the loader
  RunReport report;
  report.meta = collect_metadata();
  for (Backend* b : backends) {
    // A backend whose availability() or facts() throws is listed with the error; each of its
    // results reports the fault again.
    std::string line = b->name();
    try {
      const Availability a = b->availability();
      if (!a.available) line += " (unavailable: " + a.reason + ")";
      if (a.available) {
        auto facts = b->facts();
        if (!facts.empty()) report.meta.backend_facts[b->name()] = std::move(facts);
      }
    } catch (const std::exception& e) {
      line += std::string(" (failed: ") + e.what() + ")";
    }
    report.meta.backends.push_back(line);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t total = 0, done = 0;
  for (const Suite& s : suites) total += s.cases.size() * backends.size();
  LostDevices lost;
  for (const Suite& s : suites) {
    SuiteRunner runner(s, backends, opt, lost);
    for (const Case& c : s.cases) report.cases.push_back(runner.report(c, done, total));
  }
  report.meta.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

int exit_code(const RunReport& r) {
  bool ran = false;
  if (broken_oracle_agreements(r) > 0) return 1;
  for (const CaseResult& c : r.cases) {
    for (const BackendResult& b : c.backends) {
      if (is_change(b.verdict)) return 1;
      if (b.verdict != Verdict::skip) ran = true;
    }
  }
  return ran ? 0 : 77;
}

void check_claims(const std::vector<Backend*>& backends, const std::string& where) {
  for (const Backend* b : backends) {
    const std::string claim = b->claim();
    if (find_preset(claim)) continue;
    std::string known;
    for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(where + ": backend '" + b->name() + "' claims unknown preset '" + claim + "' (known: " + known +
                     "; a custom preset is loaded with --preset-file or QCONFORM_PRESETS)");
  }
}

void expect_claims(std::vector<Suite>& suites) {
  const Expectation claim{Expectation::Kind::claim, 0};
  auto convert = [&](Case& c) {
    for (auto& [backend, e] : c.expect)
      if (e.kind != Expectation::Kind::dot_product) e = claim;
    c.expect.try_emplace("*", claim);
  };
  for (Suite& s : suites) {
    for (Case& c : s.cases) convert(c);
    for (Case& c : s.dependencies) convert(c);
  }
}

void expect_claims_for(std::vector<Suite>& suites, const std::vector<std::string>& backends) {
  const Expectation claim{Expectation::Kind::claim, 0};
  for (Suite& s : suites)
    for (auto* list : {&s.cases, &s.dependencies})
      for (Case& c : *list)
        for (const std::string& b : backends) c.expect.try_emplace(b, claim);
}

std::int64_t broken_oracle_agreements(const RunReport& r) {
  std::int64_t n = 0;
  for (const CaseResult& c : r.cases)
    for (const AgreementCheck& a : c.agreements) n += a.status == AgreementStatus::broken ? 1 : 0;
  return n;
}

Case standalone_case(const Case& c, const Suite& s) {
  OpRequest op = c.op;
  for (const OperandLink& l : c.links) {
    const Case* p = nullptr;
    for (const auto* list : {&s.cases, &s.dependencies})
      for (const Case& x : *list)
        if (x.name == l.producer) p = &x;
    if (!p)
      throw InputError("case '" + c.name + "': takes its " + l.field + " from '" + l.producer +
                       "', no case of suite '" + s.name + "'");
    const Case producer = standalone_case(*p, s);
    bind_operand(op, l.field, evaluate(producer.op, producer.spec).expected);
  }
  return standalone(c, op);
}

}  // namespace qc
