#include "harness/infer.hpp"

#include "cases/generators.hpp"
#include "harness/compare.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"
#include "oracles/quantize.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace qc {
namespace {

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

struct QuantizeProbe {
  QuantizeOp op;
  Tensor out;  // the backend's answer
};

// Whether `policy` reproduces every probe (elements the policy leaves open match anything).
bool reproduces(const std::vector<QuantizeProbe>& probes, const QuantizePolicy& policy) {
  for (const QuantizeProbe& p : probes) {
    QuantizeResult r;
    try {
      r = quantize(p.op.x, p.op.params, p.op.out, policy, OraclePath::fast, false);
    } catch (const InputError&) {
      return false;
    }
    for (std::int64_t i = 0; i < r.q.size(); ++i)
      if (r.specified[static_cast<std::size_t>(i)] && !same_element(r.q, p.out, i)) return false;
  }
  return true;
}

constexpr auto kOrders = table_values<QuantizeOrder>();
constexpr auto kClamps = table_values<Clamp>();
constexpr auto kNans = kOutputNanRules;

// Words for a quantize policy: "x*(1/s), f32, ties to even, saturate".
std::string quantize_words(const std::set<std::string>& orders, const std::set<std::string>& computes,
                           const std::set<std::string>& roundings, const std::set<std::string>& clamps,
                           const std::set<std::string>& nans) {
  auto join = [](const std::set<std::string>& s) {
    std::string o;
    for (const auto& x : s) o += (o.empty() ? "" : " or ") + x;
    return o.empty() ? std::string("?") : o;
  };
  return join(orders) + ", " + join(computes) + ", " + join(roundings) + ", clamp " + join(clamps) + ", NaN -> " +
         join(nans);
}

void infer_quantize(Backend& b, const InferOptions& opt, InferReport& rep) {
  SplitMix64 rng(opt.seed);
  std::vector<QuantizeProbe> probes;
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
        const Availability sup = b.supports(op);
        if (!sup.available) {
          skipped = sup.reason;
          continue;
        }
        QuantizeProbe p{op, b.run(op)};
        if (p.out.dtype() != out || p.out.shape() != op.x.shape())
          throw InputError("infer: backend " + b.name() + " returned " + std::string(name(p.out.dtype())) + " " +
                           shape_str(p.out.shape()) + " for a quantize to " + std::string(name(out)));
        rep.probes += op.x.size();
        probes.push_back(std::move(p));
      }
    }
  }
  if (probes.empty()) {
    rep.skipped.push_back("quantize: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("quantize");
  // Every combination of order, compute format, rounding and clamp (NaN handled on its own,
  // since only NaN inputs see it); the findings are the values that occur in a reproducing one.
  std::set<std::string> orders, computes, roundings, clamps, nans;
  std::optional<QuantizePolicy> first;
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
          if (!reproduces(probes, p)) continue;
          if (!first) first = p;
          orders.insert(std::string(formula(o)));
          computes.insert(to_string(f));
          roundings.insert(std::string(describe(m)));
          clamps.insert(std::string(name(c)));
        }
  if (first) {
    for (NanRule n : kNans) {
      QuantizePolicy p = *first;
      p.nan = n;
      if (reproduces(probes, p)) nans.insert(std::string(name(n)));
    }
  }
  auto finding = [&](const char* dim, const std::set<std::string>& values, const std::string& words) {
    rep.findings.push_back({"quantize", dim, {values.begin(), values.end()}, words});
  };
  finding("order", orders, "the operation order");
  finding("compute", computes, "the format intermediates are rounded to");
  finding("rounding", roundings, "the float to integer rounding");
  finding("clamp", clamps, "where the range is enforced");
  finding("nan", nans, "what NaN becomes");
  std::vector<Spec> known = presets();  // and the custom presets registered (QCONFORM_PRESETS)
  for (Spec& s : registered_presets()) known.push_back(std::move(s));
  for (const Spec& s : known) {
    if (reproduces(probes, s.quantize_for(DType::f32))) rep.presets.push_back(s.name);
  }
  rep.summary = first ? "quantize behaves like: " + quantize_words(orders, computes, roundings, clamps, nans)
                      : "quantize: no single policy reproduces every output";
}

// ---- GEMM accumulation probes ---------------------------------------------------------------

// u8 x s8 operands whose adjacent products overflow int16 pairs (255*127*2 = 64770 > 32767) and,
// with a long K, int32 (255*127*K > 2^31 for K > 66313).
void infer_accumulation(Backend& b, InferReport& rep) {
  std::vector<std::pair<QGemmOp, Tensor>> probes;
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
    const Availability sup = b.supports(op);
    if (!sup.available) {
      skipped = sup.reason;
      continue;
    }
    Tensor out = b.run(op);
    if (out.dtype() != DType::i32 || out.shape() != Shape{2, 2})
      throw InputError("infer: backend " + b.name() + " returned " + std::string(name(out.dtype())) + " " +
                       shape_str(out.shape()) + " for an int32 qgemm of shape [2, 2]");
    rep.probes += out.size();
    probes.emplace_back(std::move(op), std::move(out));
  }
  if (probes.empty()) {
    rep.skipped.push_back("qgemm: " + (skipped.empty() ? std::string("not supported") : skipped));
    return;
  }
  rep.ops.push_back("qgemm");
  std::vector<std::string> values;
  for (Accumulation acc : kAllAccumulations) {
    QGemmPolicy p;
    p.accumulation = acc;
    bool all = true;
    for (const auto& [op, out] : probes) {
      const QGemmResult r = qgemm(op, p);
      for (std::int64_t i = 0; i < out.size() && all; ++i) all = r.y.get_int(i) == out.get_int(i);
    }
    if (all) values.emplace_back(name(acc));
  }
  rep.findings.push_back({"qgemm", "accumulation", values, "the integer accumulator"});
  rep.summary += (rep.summary.empty() ? "" : "; ") + std::string("qgemm accumulates ") +
                 (values.empty() ? std::string("in no modelled way") : values.front());
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
  infer_quantize(backend, options, rep);
  infer_accumulation(backend, rep);
  return rep;
}

}  // namespace qc
