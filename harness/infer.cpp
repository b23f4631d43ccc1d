#include "harness/infer.hpp"

#include "cases/generators.hpp"
#include "harness/compare.hpp"
#include "harness/evaluate.hpp"
#include "oracles/dequantize.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace qc {
namespace {

// ---- Ranking candidates, with outliers --------------------------------------------------------

// The best candidates may miss up to one probe element in this many: those are outliers to report
// (a kernel's bug at one index, a special value handled apart), not a reason to drop what the
// other elements showed.
constexpr std::int64_t kOutlierShare = 50;
// Whether `missed` of `probed` elements (-1: no candidate applied) is within that allowance.
bool within_allowance(std::int64_t missed, std::int64_t probed) {
  return missed >= 0 && missed * kOutlierShare <= probed;
}
constexpr std::size_t kOutliersShown = 5;  // per op

template <class Op>
struct Probe {
  Op op;
  Tensor out;  // the backend's answer
};

// What a candidate computes for a probe op: the values, and the elements it leaves open.
struct Computed {
  Tensor y;
  SpecifiedMask specified;
};

std::int64_t elements(const auto& probes) {
  std::int64_t n = 0;
  for (const auto& p : probes) n += p.out.size();
  return n;
}

// The probe elements `eval` gets wrong, counted up to just past `limit`; -1 where the candidate
// rejects a probe (InputError: a derivation that cannot represent a scale, ...).
template <class Op, class Eval>
std::int64_t mismatches(const std::vector<Probe<Op>>& probes, Eval eval, std::int64_t limit) {
  std::int64_t n = 0;
  for (const Probe<Op>& p : probes) {
    std::optional<Computed> c;
    try {
      c = eval(p.op);
    } catch (const InputError&) {
      return -1;
    }
    for (std::int64_t i = 0; i < c->y.size(); ++i)
      if (c->specified[static_cast<std::size_t>(i)] && !same_element(c->y, p.out, i) && ++n > limit) return n;
  }
  return n;
}

template <class C>
struct Ranked {
  std::vector<C> best;       // the candidates with the fewest mismatches
  std::int64_t missed = -1;  // their mismatches (-1: no candidate applies)
  bool within(std::int64_t probed) const { return within_allowance(missed, probed); }
};

// `count(candidate, limit)`: mismatches() of one candidate.
template <class C, class Count>
Ranked<C> rank(const std::vector<C>& candidates, Count count) {
  Ranked<C> r;
  for (const C& c : candidates) {
    const std::int64_t limit = r.missed < 0 ? std::numeric_limits<std::int64_t>::max() - 1 : r.missed;
    const std::int64_t n = count(c, limit);
    if (n < 0 || n > limit) continue;
    if (r.missed < 0 || n < r.missed) {
      r.best.clear();
      r.missed = n;
    }
    r.best.push_back(c);
  }
  return r;
}

// The elements `eval` (the best candidate) does not reproduce, the first few, into rep.outliers.
template <class Op, class Eval, class Input>
void list_outliers(const std::string& what, const std::vector<Probe<Op>>& probes, Eval eval, Input input,
                   InferReport& rep) {
  std::size_t shown = 0;
  for (const Probe<Op>& p : probes) {
    const Computed c = eval(p.op);
    for (std::int64_t i = 0; i < c.y.size() && shown < kOutliersShown; ++i)
      if (c.specified[static_cast<std::size_t>(i)] && !same_element(c.y, p.out, i)) {
        rep.outliers.push_back(what + " " + input(p.op, i) + ": backend " + value_text(p.out, i) + ", policy " +
                               value_text(c.y, i));
        ++shown;
      }
  }
}

// Runs one probe op; false (and the reason) where the backend does not take it. Throws InputError
// for an answer of the wrong format or shape.
template <class Op>
bool run_probe(Backend& b, Op op, std::vector<Probe<Op>>& probes, std::string& skipped, InferReport& rep) {
  const Availability sup = b.supports(op);
  if (!sup.available) {
    skipped = sup.reason;
    return false;
  }
  const DType want = op_output_dtype(op);
  const Shape shape = op_output_shape(op);
  Tensor out = b.run(op);
  if (out.dtype() != want || out.shape() != shape)
    throw InputError("infer: backend " + b.name() + " returned " + std::string(name(out.dtype())) + " " +
                     shape_str(out.shape()) + " for a " + std::string(op_name(op)) + " to " + std::string(name(want)) +
                     " " + shape_str(shape));
  rep.probes += out.size();
  probes.push_back({std::move(op), std::move(out)});
  return true;
}

// "a or b or c", the first `most` values and a count of the rest.
std::string join(const std::set<std::string>& s, std::size_t most = 4) {
  std::string o;
  std::size_t n = 0;
  for (const auto& x : s)
    if (n++ < most) o += (o.empty() ? "" : " or ") + x;
  if (n > most) o += " (or " + std::to_string(n - most) + " more)";
  return o.empty() ? std::string("?") : o;
}

std::string short_number(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// The summary clause of an op: its words, and the outliers if any.
std::string clause(const std::string& op, std::int64_t missed, std::int64_t probed, const std::string& words) {
  if (!within_allowance(missed, probed))
    return op + ": no policy reproduces more than " + std::to_string(kOutlierShare - 1) + " in " +
           std::to_string(kOutlierShare) + " of the " + std::to_string(probed) + " probe elements";
  std::string s = op + " behaves like: " + words;
  if (missed > 0) s += " (except " + std::to_string(missed) + " of " + std::to_string(probed) + " elements)";
  return s;
}

void add_finding(InferReport& rep, const std::string& op, const std::string& dim, const std::set<std::string>& values,
                 const std::string& words, std::int64_t missed, std::int64_t probed) {
  const bool ok = within_allowance(missed, probed);
  rep.findings.push_back({op, dim,
                          ok ? std::vector<std::string>(values.begin(), values.end()) : std::vector<std::string>{},
                          words, ok ? missed : 0, probed});
}

void add_summary(InferReport& rep, const std::string& c) { rep.summary += (rep.summary.empty() ? "" : "; ") + c; }

// Every probe an infer run made, by op, for the presets' check at the end.
struct AllProbes {
  std::vector<Probe<QuantizeOp>> quantize;
  std::vector<Probe<DequantizeOp>> dequantize;
  std::vector<Probe<RequantizeOp>> requantize;
  std::vector<Probe<RequantizeOp>> gemm_stage;         // a requantized GEMM's accumulators (see infer_output_stage)
  std::vector<Probe<QGemmOp>> gemm_int32, gemm_float;  // accumulation probes, dequantized outputs
};

std::vector<Spec> known_presets() {
  std::vector<Spec> known = presets();  // and the custom presets registered (QCONFORM_PRESETS)
  for (Spec& s : registered_presets()) known.push_back(std::move(s));
  return known;
}

// ---- Quantize probes -------------------------------------------------------------------------

// Values that tell the policies apart for one scale: exact ties (x = (k + 1/2)·s where that is
// an f32), values 1 and 2 ulp either side of them, values where x/s and x·(1/s) round to
// different f32 (reciprocal-sensitive), values whose quotient is within 1/64 of a tie (an f16
// quotient rounds them onto the tie or past it), saturation on both sides and far beyond
// (wrap versus saturate), and the specials.
std::vector<float> quantize_probe_values(float s, SplitMix64& rng) {
  std::vector<float> v;
  for (int k = -140; k <= 140; k += 3) {
    const float t = static_cast<float>((k + 0.5) * static_cast<double>(s));
    v.push_back(t);
    v.push_back(std::nextafter(t, INFINITY));
    v.push_back(std::nextafter(t, -INFINITY));
  }
  int found = 0;
  for (int i = 0; i < 200000 && found < 64; ++i) {
    const auto x = static_cast<float>((rng.uniform01() * 2 - 1) * 130.0 * static_cast<double>(s));
    const float inv = 1.0f / s;
    if (std::nearbyint(x / s) != std::nearbyint(x * inv)) {
      v.push_back(x);
      ++found;
    }
  }
  for (int k = -120; k <= 120; k += 7)
    for (double off : {-1.0 / 64, -1.0 / 128, 1.0 / 128, 1.0 / 64})
      v.push_back(static_cast<float>((k + 0.5 + off) * static_cast<double>(s)));
  for (double m : {127.5, 128.0, 128.5, 200.0, 255.5, 256.0, 300.0, 1000.0, 70000.0})
    for (double sign : {1.0, -1.0}) v.push_back(static_cast<float>(sign * m * static_cast<double>(s)));
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1e-40f}) v.push_back(x);
  return v;
}

Computed quantize_with(const QuantizeOp& op, const QuantizePolicy& policy) {
  QuantizeResult r = quantize(op.x, op.params, op.out, policy, OraclePath::fast, false);
  return {std::move(r.q), std::move(r.specified)};
}

std::string quantize_input(const QuantizeOp& op, std::int64_t i) {
  return "x " + value_text(op.x, i) + " (s " + short_number(op.params.scales[0]) + ", zp " +
         std::to_string(op.params.zero_point(0)) + ", to " + std::string(name(op.out)) + ")";
}

constexpr auto kOrders = table_values<QuantizeOrder>();
constexpr auto kClamps = table_values<Clamp>();
constexpr auto kNans = kOutputNanRules;

void infer_quantize(Backend& b, const InferOptions& opt, InferReport& rep, AllProbes& all) {
  SplitMix64 rng(opt.seed);
  std::vector<Probe<QuantizeOp>>& probes = all.quantize;
  std::string skipped;
  for (DType out : {DType::i8, DType::u8}) {
    for (float s : {0.5f, 0.1f, 0.3f, 3.0f}) {
      for (std::int64_t zp : {std::int64_t{0}, out == DType::i8 ? std::int64_t{-3} : std::int64_t{128}}) {
        const std::vector<float> vals = quantize_probe_values(s, rng);
        QuantizeOp op;
        op.x = Tensor(DType::f32, {static_cast<std::int64_t>(vals.size())});
        for (std::size_t i = 0; i < vals.size(); ++i) op.x.set_double(static_cast<std::int64_t>(i), vals[i]);
        op.params.scales = {s};
        op.params.zero_points = {zp};
        op.out = out;
        run_probe(b, std::move(op), probes, skipped, rep);
      }
    }
  }
  if (probes.empty()) {
    rep.skipped.push_back("quantize: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("quantize");
  const std::int64_t probed = elements(probes);
  // Every combination of order, compute format, rounding and clamp (NaN handled on its own, since
  // only NaN inputs see it); the findings are the values that occur in the best ones.
  std::vector<QuantizePolicy> candidates;
  for (QuantizeOrder o : kOrders)
    for (const ComputeFormat& f : kPlausibleComputeFormats)
      for (RoundingMode m : kAllRoundingModes)
        for (Clamp c : kClamps) {
          QuantizePolicy p;
          p.order = o;
          p.compute = f;
          p.rounding = m;
          p.clamp = c;
          p.nan = NanRule::unspecified;
          candidates.push_back(p);
        }
  const auto count = [&](const QuantizePolicy& p, std::int64_t limit) {
    return mismatches(
        probes, [&](const QuantizeOp& op) { return quantize_with(op, p); }, limit);
  };
  const Ranked<QuantizePolicy> best = rank(candidates, count);
  std::set<std::string> orders, computes, roundings, clamps, nans;
  for (const QuantizePolicy& p : best.best) {
    orders.insert(std::string(formula(p.order)));
    computes.insert(to_string(p.compute));
    roundings.insert(std::string(describe(p.rounding)));
    clamps.insert(std::string(name(p.clamp)));
  }
  // NaN: each rule on the first best policy; a rule pins NaN elements the unspecified rule left
  // open, so the rules that keep the count where it was reproduce them.
  std::int64_t missed = best.missed;
  std::optional<QuantizePolicy> with_nan;  // the first best policy with its best NaN rule
  if (!best.best.empty()) {
    std::vector<QuantizePolicy> rules;
    for (NanRule n : kNans) {
      QuantizePolicy p = best.best.front();
      p.nan = n;
      rules.push_back(p);
    }
    const Ranked<QuantizePolicy> by_nan = rank(rules, count);
    for (const QuantizePolicy& p : by_nan.best) nans.insert(std::string(name(p.nan)));
    if (!by_nan.best.empty()) {
      missed = by_nan.missed;
      with_nan = by_nan.best.front();
    }
  }
  add_finding(rep, "quantize", "order", orders, "the operation order", missed, probed);
  add_finding(rep, "quantize", "compute", computes, "the format intermediates are rounded to", missed, probed);
  add_finding(rep, "quantize", "rounding", roundings, "the float to integer rounding", missed, probed);
  add_finding(rep, "quantize", "clamp", clamps, "where the range is enforced", missed, probed);
  add_finding(rep, "quantize", "nan", nans, "what NaN becomes", missed, probed);
  if (with_nan && missed > 0 && within_allowance(missed, probed))
    list_outliers(
        "quantize", probes, [&](const QuantizeOp& op) { return quantize_with(op, *with_nan); }, quantize_input, rep);
  add_summary(rep, clause("quantize", best.best.empty() ? -1 : missed, probed,
                          join(orders) + ", " + join(computes) + ", " + join(roundings) + ", clamp " + join(clamps) +
                              ", NaN -> " + join(nans)));
}

// ---- Dequantize probes -----------------------------------------------------------------------

auto dequantize_with(const DequantizePolicy& p) {
  return [p](const DequantizeOp& op) {
    DequantizeResult r = dequantize(op.q, op.params, op.out, p, OraclePath::fast, false);
    return Computed{std::move(r.y), SpecifiedMask(static_cast<std::size_t>(op.q.size()))};
  };
}

// Every value of i8 and u8 under scales whose products round differently in f16, f32 and f64 and
// zero points that make the subtraction's order matter.
void infer_dequantize(Backend& b, InferReport& rep, AllProbes& all) {
  std::vector<Probe<DequantizeOp>>& probes = all.dequantize;
  std::string skipped;
  for (DType qt : {DType::i8, DType::u8})
    for (float s : {0.1f, 0.3f, 3.0f, 0.007f})
      for (std::int64_t zp : {std::int64_t{0}, qt == DType::i8 ? std::int64_t{-3} : std::int64_t{131}}) {
        DequantizeOp op;
        op.q = Tensor(qt, {256});
        for (std::int64_t i = 0; i < 256; ++i) op.q.set_int(i, int_min(qt) + i);
        op.params.scales = {s};
        op.params.zero_points = {zp};
        op.out = DType::f32;
        run_probe(b, std::move(op), probes, skipped, rep);
      }
  if (probes.empty()) {
    rep.skipped.push_back("dequantize: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("dequantize");
  const std::int64_t probed = elements(probes);
  std::vector<DequantizePolicy> candidates;
  for (DequantizeOrder o : table_values<DequantizeOrder>())
    for (const ComputeFormat& f : kPlausibleComputeFormats) candidates.push_back({o, f});
  const auto eval = dequantize_with;
  const Ranked<DequantizePolicy> best = rank(
      candidates, [&](const DequantizePolicy& p, std::int64_t limit) { return mismatches(probes, eval(p), limit); });
  std::set<std::string> orders, computes;
  for (const DequantizePolicy& p : best.best) {
    orders.insert(std::string(name(p.order)));
    computes.insert(to_string(p.compute));
  }
  add_finding(rep, "dequantize", "order", orders, "where the zero point is subtracted", best.missed, probed);
  add_finding(rep, "dequantize", "compute", computes, "the format the product is rounded in", best.missed, probed);
  if (best.within(probed) && best.missed > 0)
    list_outliers(
        "dequantize", probes, eval(best.best.front()),
        [](const DequantizeOp& op, std::int64_t i) {
          return "q " + value_text(op.q, i) + " (s " + short_number(op.params.scales[0]) + ", zp " +
                 std::to_string(op.params.zero_point(0)) + ")";
        },
        rep);
  add_summary(rep, clause("dequantize", best.missed, probed, join(orders) + " in " + join(computes)));
}

// ---- Requantize probes (RequantizeOp, and the GEMM output stage) ------------------------------

// Every requantize scheme as its source forms its multiplier, each derivation a fixed-point scheme
// accepts, and for the ideal and float schemes the roundings, multiplier formations and zero-point
// placements real code uses.
std::vector<RequantizePolicy> requantize_candidates() {
  std::vector<RequantizePolicy> c;
  const ComputeFormat f64{ComputeFormat::Kind::f64, 0}, f32{ComputeFormat::Kind::f32, 0};
  for (RequantizeScheme s : kAllRequantizeSchemes) {
    const RequantizePolicy base = requantize_policy_for(s);
    if (s == RequantizeScheme::ideal) {
      for (RoundingMode m : kAllRoundingModes)
        for (ZeroPointAdd z : table_values<ZeroPointAdd>()) {
          RequantizePolicy p = base;
          p.rounding = m;
          p.zero_point = z;
          c.push_back(p);
        }
    } else if (s == RequantizeScheme::float_multiplier) {
      for (MultiplierOrder o : table_values<MultiplierOrder>())
        for (const ComputeFormat& mf : {f64, f32})  // an exact multiplier is the ideal scheme
          for (const ComputeFormat& pf : {f64, f32})
            for (RoundingMode m : {RoundingMode::rne, RoundingMode::rna, RoundingMode::rtz})
              for (ZeroPointAdd z : table_values<ZeroPointAdd>())
                for (Clamp cl : {Clamp::int_after, Clamp::float_before}) {
                  RequantizePolicy p = base;
                  p.multiplier_order = o;
                  p.multiplier_format = mf;
                  p.product_format = pf;
                  p.rounding = m;
                  p.zero_point = z;
                  p.clamp = cl;
                  c.push_back(p);
                }
    } else if (scheme_uses_derivation(s)) {
      for (MultiplierDerivation d : table_values<MultiplierDerivation>())
        if (scheme_accepts(s, d)) {
          RequantizePolicy p = base;
          p.derivation = d;
          c.push_back(p);
        }
    } else {
      c.push_back(base);
    }
  }
  return c;
}

// How a candidate forms its multiplier and rounds, in words.
std::string multiplier_words(const RequantizePolicy& p) {
  if (p.scheme == RequantizeScheme::ideal) return "exact";
  if (scheme_uses_derivation(p.scheme)) return std::string(name(p.derivation));
  return std::string(name(p.multiplier_order)) + " in " + to_string(p.multiplier_format);
}
std::string rounding_words(const RequantizePolicy& p) {
  if (p.scheme == RequantizeScheme::ideal || p.scheme == RequantizeScheme::float_multiplier)
    return std::string(describe(p.rounding)) + ", zero point " + std::string(name(p.zero_point));
  return std::string(describe(p.scheme));
}

// The findings of a requantize ranking, under `op` ("requantize", or "qgemm" for its output stage).
void requantize_findings(InferReport& rep, const std::string& op, const Ranked<RequantizePolicy>& best,
                         std::int64_t probed) {
  std::set<std::string> schemes, multipliers, roundings;
  for (const RequantizePolicy& p : best.best) {
    schemes.insert(std::string(name(p.scheme)));
    multipliers.insert(multiplier_words(p));
    roundings.insert(rounding_words(p));
  }
  const std::string pre = op == "requantize" ? "" : "requantize.";
  add_finding(rep, op, pre + "scheme", schemes, "the requantize scheme", best.missed, probed);
  add_finding(rep, op, pre + "multiplier", multipliers, "how the multiplier is formed", best.missed, probed);
  add_finding(rep, op, pre + "rounding", roundings, "how the scaled accumulator is rounded", best.missed, probed);
  add_summary(rep, clause(op == "requantize" ? "requantize" : op + " requantized output", best.missed, probed,
                          join(schemes) + " (" + join(multipliers) + ")"));
}

struct Scales {
  double in, w, out;
};
// Multipliers 1/4 (many exact ties: single against double rounding), 1/12, and two that no binary
// fraction reaches (the multiplier's own rounding shows).
constexpr Scales kRequantizeScales[] = {{0.25, 0.5, 0.5}, {0.5, 0.5, 3.0}, {0.02, 0.013, 0.11}, {0.001, 0.7, 0.05}};

auto requantize_with(const RequantizePolicy& p) {
  return [p](const RequantizeOp& op) {
    RequantizeResult r = requantize(op.acc, op.params, op.out, p, OraclePath::fast, false);
    return Computed{std::move(r.q), SpecifiedMask(static_cast<std::size_t>(op.acc.size()))};
  };
}

std::string requantize_input(const RequantizeOp& op, std::int64_t i) {
  return "acc " + value_text(op.acc, i) + " (s_in " + short_number(op.params.input_scale) + ", s_w " +
         short_number(op.params.weight_scales[0]) + ", s_out " + short_number(op.params.output_scale) + ", zp " +
         std::to_string(op.params.output_zero_points[0]) + ")";
}

void infer_requantize(Backend& b, InferReport& rep, AllProbes& all) {
  std::vector<Probe<RequantizeOp>>& probes = all.requantize;
  std::string skipped;
  for (const Scales& s : kRequantizeScales)
    for (std::int64_t zp : {std::int64_t{0}, std::int64_t{5}}) {
      // Small accumulators (exact ties where the multiplier allows), the accumulators nearest each
      // half-integer of the output (near ties, where a multiplier or product rounded to f32 moves
      // the value across), and saturation far past both ends.
      std::vector<std::int64_t> accs;
      for (std::int64_t a = -300; a <= 300; ++a) accs.push_back(a);
      const double m =
          static_cast<double>(static_cast<float>(s.in)) * static_cast<float>(s.w) / static_cast<float>(s.out);
      for (int k = -130; k < 130; ++k) {
        const auto a0 = static_cast<std::int64_t>(std::llround((k + 0.5) / m));
        for (std::int64_t d = -1; d <= 1; ++d)
          if (std::llabs(a0 + d) > 300 && std::llabs(a0 + d) < (std::int64_t{1} << 31)) accs.push_back(a0 + d);
      }
      for (std::int64_t a : {std::int64_t{1000000}, std::int64_t{123456789}, std::int64_t{2147483647}})
        for (std::int64_t sign : {1, -1}) accs.push_back(sign * a);
      accs.push_back(std::numeric_limits<std::int32_t>::min());
      RequantizeOp op;
      op.acc = Tensor(DType::i32, {static_cast<std::int64_t>(accs.size())});
      for (std::size_t i = 0; i < accs.size(); ++i) op.acc.set_int(static_cast<std::int64_t>(i), accs[i]);
      op.params.input_scale = static_cast<float>(s.in);
      op.params.weight_scales = {static_cast<float>(s.w)};
      op.params.output_scale = static_cast<float>(s.out);
      op.params.output_zero_points = {zp};
      op.out = DType::i8;
      run_probe(b, std::move(op), probes, skipped, rep);
    }
  if (probes.empty()) {
    rep.skipped.push_back("requantize: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("requantize");
  const std::int64_t probed = elements(probes);
  const Ranked<RequantizePolicy> best = rank(
      requantize_candidates(),
      [&](const RequantizePolicy& p, std::int64_t limit) { return mismatches(probes, requantize_with(p), limit); });
  requantize_findings(rep, "requantize", best, probed);
  if (best.within(probed) && best.missed > 0)
    list_outliers("requantize", probes, requantize_with(best.best.front()), requantize_input, rep);
}

// A u8 x i8 GEMM [32, 16] x [16, 32] whose accumulators cover a few hundred values of both signs,
// small enough that no accumulator overflows (the accumulation probes ask about that).
QGemmOp output_stage_probe(const Scales& s, SplitMix64& rng) {
  QGemmOp op;
  op.a.values = Tensor(DType::u8, {32, 16});
  op.b.values = Tensor(DType::i8, {16, 32});
  for (std::int64_t i = 0; i < op.a.values.size(); ++i)
    op.a.values.set_int(i, 108 + static_cast<std::int64_t>(rng.uniform01() * 40));
  for (std::int64_t i = 0; i < op.b.values.size(); ++i)
    op.b.values.set_int(i, static_cast<std::int64_t>(rng.uniform01() * 13) - 6);
  op.a.params.scales = {static_cast<float>(s.in)};
  op.a.params.zero_points = {128};
  op.b.format = DType::i8;
  op.b.params.scales = {static_cast<float>(s.w)};
  op.output.kind = OutputKind::requantized;
  op.output.format = DType::i8;
  op.output.scale = static_cast<float>(s.out);
  op.output.zero_point = 3;
  return op;
}

std::string gemm_input(const QGemmOp& op, std::int64_t i) {
  const std::int64_t n = op.b.values.shape()[1];
  return "element [" + std::to_string(i / n) + ", " + std::to_string(i % n) + "] (s_a " +
         short_number(op.a.params.scales[0]) + ", s_b " + short_number(op.b.params.scales[0]) + ", s_out " +
         short_number(op.output.scale) + ")";
}

// The GEMM's output stage: requantized (the scheme) and dequantized to f32 (the compute format).
void infer_output_stage(Backend& b, const InferOptions& opt, InferReport& rep, AllProbes& all) {
  SplitMix64 rng(opt.seed + 1);
  std::vector<Probe<QGemmOp>> requantized;
  std::vector<Probe<QGemmOp>>& dequantized = all.gemm_float;
  std::string skipped;
  for (const Scales& s : kRequantizeScales) {
    QGemmOp op = output_stage_probe(s, rng);
    run_probe(b, op, requantized, skipped, rep);
    op.output.kind = OutputKind::dequantized;
    op.output.format = DType::f32;
    op.output.scale = 1.0;
    op.output.zero_point = 0;
    run_probe(b, std::move(op), dequantized, skipped, rep);
  }
  if (requantized.empty() && dequantized.empty()) {
    rep.skipped.push_back("qgemm output stage: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  if (std::find(rep.ops.begin(), rep.ops.end(), "qgemm") == rep.ops.end()) rep.ops.push_back("qgemm");
  if (!requantized.empty()) {
    const std::int64_t probed = elements(requantized);
    // The output stage requantizes each accumulator with s_a, s_b and s_out (qlinear.hpp): the
    // accumulators are taken once (no probe overflows one) and each candidate requantizes them.
    std::vector<Probe<RequantizeOp>>& stage = all.gemm_stage;
    for (const Probe<QGemmOp>& p : requantized) {
      QGemmOp int32 = p.op;
      int32.output = OutputStage{};
      RequantizeOp r;
      r.acc = qgemm(int32, QGemmPolicy{}).y;
      r.params.input_scale = p.op.a.params.scales[0];
      r.params.weight_scales = p.op.b.params.scales;
      r.params.output_scale = p.op.output.scale;
      r.params.output_zero_points = {p.op.output.zero_point};
      r.out = p.op.output.format;
      stage.push_back({std::move(r), p.out});
    }
    const Ranked<RequantizePolicy> best = rank(
        requantize_candidates(),
        [&](const RequantizePolicy& p, std::int64_t limit) { return mismatches(stage, requantize_with(p), limit); });
    requantize_findings(rep, "qgemm", best, probed);
    if (best.within(probed) && best.missed > 0)
      list_outliers("qgemm requantized", stage, requantize_with(best.best.front()), requantize_input, rep);
  }
  if (!dequantized.empty()) {
    const std::int64_t probed = elements(dequantized);
    const auto eval = [](const ComputeFormat& f) {
      return [f](const QGemmOp& op) {
        QGemmPolicy g;
        g.dequantize.compute = f;
        QGemmResult r = qgemm(op, g);
        return Computed{std::move(r.y), SpecifiedMask(static_cast<std::size_t>(r.labels.size()))};
      };
    };
    const std::vector<ComputeFormat> formats(std::begin(kPlausibleComputeFormats), std::end(kPlausibleComputeFormats));
    const Ranked<ComputeFormat> best = rank(
        formats, [&](const ComputeFormat& f, std::int64_t limit) { return mismatches(dequantized, eval(f), limit); });
    std::set<std::string> computes;
    for (const ComputeFormat& f : best.best) computes.insert(to_string(f));
    add_finding(rep, "qgemm", "dequantize.compute", computes, "the format float(acc) * (s_a * s_b) is rounded in",
                best.missed, probed);
    if (best.within(probed) && best.missed > 0)
      list_outliers("qgemm dequantized", dequantized, eval(best.best.front()), gemm_input, rep);
    add_summary(rep, clause("qgemm dequantized output", best.missed, probed, "in " + join(computes)));
  }
}

// ---- GEMM accumulation probes ---------------------------------------------------------------

// u8 x s8 operands whose adjacent products overflow int16 pairs (255*127*2 = 64770 > 32767) and,
// with a long K, int32 (255*127*K > 2^31 for K > 66313).
void infer_accumulation(Backend& b, InferReport& rep, AllProbes& all) {
  std::vector<Probe<QGemmOp>>& probes = all.gemm_int32;
  std::string skipped;
  for (std::int64_t k : {std::int64_t{64}, std::int64_t{66400}}) {
    QGemmOp op;
    op.a.values = Tensor(DType::u8, {2, k});
    op.a.params.scales = {1.0};
    op.b.values = Tensor(DType::i8, {k, 2});
    op.b.format = DType::i8;
    op.b.params.scales = {1.0};
    // Short K: a mix, so some int16 pairs saturate and others do not. Long K: every product
    // 255 * 127, so the int32 sum overflows (wrap versus saturate versus 64 bits).
    const bool mixed = k < 1000;
    for (std::int64_t i = 0; i < 2 * k; ++i) {
      op.a.values.set_int(i, mixed && i % 5 == 4 ? 3 : 255);
      op.b.values.set_int(i, mixed && (i / 2) % 3 == 2 ? -128 : 127);
    }
    op.output.kind = OutputKind::int32;
    op.output.format = DType::i32;
    run_probe(b, std::move(op), probes, skipped, rep);
  }
  if (probes.empty()) {
    rep.skipped.push_back("qgemm: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("qgemm");
  const std::int64_t probed = elements(probes);
  std::vector<Accumulation> candidates(std::begin(kAllAccumulations), std::end(kAllAccumulations));
  const Ranked<Accumulation> best = rank(candidates, [&](Accumulation acc, std::int64_t limit) {
    return mismatches(
        probes,
        [acc](const QGemmOp& op) {
          QGemmPolicy p;
          p.accumulation = acc;
          QGemmResult r = qgemm(op, p);
          return Computed{std::move(r.y), SpecifiedMask(static_cast<std::size_t>(r.labels.size()))};
        },
        limit);
  });
  // Few elements and each decisive: the accumulation must reproduce all of them.
  std::set<std::string> values;
  if (best.missed == 0)
    for (Accumulation a : best.best) values.insert(std::string(name(a)));
  rep.findings.push_back(
      {"qgemm", "accumulation", {values.begin(), values.end()}, "the integer accumulator", 0, probed});
  add_summary(rep, std::string("qgemm accumulates ") +
                       (values.empty() ? std::string("in no modelled way") : std::string(name(best.best.front()))));
}

// Whether a whole preset reproduces every probe element of every op probed.
bool reproduces_every_probe(const Spec& s, const AllProbes& all) {
  const auto none = [](std::int64_t n) { return n == 0; };
  const auto gemm = [&s](const QGemmOp& op) {
    QGemmResult r = qgemm(op, qgemm_policy(s, op.a.values.dtype(), LinearOp::gemm));
    return Computed{std::move(r.y), SpecifiedMask(static_cast<std::size_t>(r.labels.size()))};
  };
  return none(mismatches(
             all.quantize, [&](const QuantizeOp& op) { return quantize_with(op, s.quantize_for(DType::f32)); }, 0)) &&
         none(mismatches(all.dequantize, dequantize_with(s.dequantize), 0)) &&
         none(mismatches(all.requantize, requantize_with(s.requantize), 0)) &&
         none(mismatches(all.gemm_stage, requantize_with(s.requantize), 0)) &&
         none(mismatches(all.gemm_int32, gemm, 0)) && none(mismatches(all.gemm_float, gemm, 0));
}

}  // namespace

InferReport infer(Backend& backend, const InferOptions& options) {
  InferReport rep;
  rep.backend = backend.name();
  const Availability a = backend.availability();
  if (!a.available) {
    rep.skipped.push_back("all: " + a.reason);
    rep.summary = backend.name() + " is not available: " + a.reason;
    return rep;
  }
  AllProbes all;
  infer_quantize(backend, options, rep, all);
  infer_dequantize(backend, rep, all);
  infer_requantize(backend, rep, all);
  infer_accumulation(backend, rep, all);
  infer_output_stage(backend, options, rep, all);
  for (const Spec& s : known_presets())
    if (reproduces_every_probe(s, all)) rep.presets.push_back(s.name);
  return rep;
}

}  // namespace qc
