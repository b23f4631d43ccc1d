// The wire codec on every case of the default suites: encode -> decode -> encode is the identity
// (the same JSON text, bit-identical tensors), and cpu-ref gives bit-identical outputs for the
// original op and the decoded one. Malformed requests are InputErrors naming the field.
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "harness/runner.hpp"
#include "qconform/error.hpp"
#include "qconform/wire.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace qc {
namespace {

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.bits(i), b.bits(i)) << what << " element " << i;
}

// The outcome of cpu-ref on an op: its output, or the exception's text.
struct Outcome {
  std::optional<Tensor> out;
  std::string skipped, error;
};
Outcome run_on(Backend& b, const OpRequest& op) {
  Outcome o;
  const Availability s = b.supports(op);
  if (!s.available) {
    o.skipped = s.reason;
    return o;
  }
  try {
    o.out = b.run(op);
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

TEST(WireRoundTrip, EveryDefaultCaseEncodesDecodesAndRunsIdentically) {
  const std::vector<Suite> suites = load_suites({std::string(QCONFORM_SOURCE_DIR) + "/cases"});
  auto cpu = make_backend("cpu-ref");
  int cases = 0, ran = 0;
  for (const Suite& s : suites)
    for (const Case& c : s.cases) {
      SCOPED_TRACE(c.id());
      // A case that takes an operand from another case gets the oracle's output of that case
      // (as the runner gives it), so every op is complete.
      const Case sc = c.links.empty() ? c : standalone_case(c, s);
      const wire::Message m1 = wire::encode_op(sc.op);
      const OpRequest decoded = wire::decode_op(m1.json, m1.tensors);
      const wire::Message m2 = wire::encode_op(decoded);
      ASSERT_EQ(m1.json, m2.json);
      ASSERT_EQ(m1.tensors.size(), m2.tensors.size());
      for (std::size_t i = 0; i < m1.tensors.size(); ++i)
        expect_same_bits(m1.tensors[i], m2.tensors[i], "tensor " + std::to_string(i));
      const Outcome a = run_on(*cpu, sc.op), b = run_on(*cpu, decoded);
      EXPECT_EQ(a.skipped, b.skipped);
      EXPECT_EQ(a.error, b.error);
      ASSERT_EQ(a.out.has_value(), b.out.has_value());
      if (a.out) {
        expect_same_bits(*a.out, *b.out, "cpu-ref output");
        ++ran;
      }
      ++cases;
    }
  EXPECT_GT(cases, 50);
  EXPECT_GT(ran, cases / 2);
}

// A small quantize request, as JSON to break.
nlohmann::json quantize_request(std::vector<Tensor>& tensors) {
  QuantizeOp q;
  q.x = Tensor(DType::f32, {3});
  q.params.scales = {0.5};
  q.params.zero_points = {0};
  q.out = DType::i8;
  wire::Message m = wire::encode_op(q);
  tensors = m.tensors;
  return nlohmann::json::parse(m.json);
}

std::string decode_error(const nlohmann::json& j, const std::vector<Tensor>& tensors) {
  try {
    wire::decode_op(j.dump(), tensors);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WireRoundTrip, MalformedRequestsNameTheField) {
  std::vector<Tensor> t;
  const nlohmann::json ok = quantize_request(t);
  EXPECT_EQ(decode_error(ok, t), "(no error)");

  nlohmann::json missing = ok;
  missing["params"].erase("zero_points");
  EXPECT_NE(decode_error(missing, t).find("params.zero_points"), std::string::npos) << decode_error(missing, t);

  nlohmann::json unknown = ok;
  unknown["out"] = "i7";
  EXPECT_NE(decode_error(unknown, t).find("'out'"), std::string::npos) << decode_error(unknown, t);
  EXPECT_NE(decode_error(unknown, t).find("i7"), std::string::npos);

  nlohmann::json scale_dtype = ok;
  scale_dtype["params"]["scale_dtype"] = "f33";
  EXPECT_NE(decode_error(scale_dtype, t).find("params.scale_dtype"), std::string::npos);

  // The JSON says f32, the tensor given is f16.
  std::vector<Tensor> wrong = {Tensor(DType::f16, {3})};
  const std::string e = decode_error(ok, wrong);
  EXPECT_NE(e.find("x"), std::string::npos) << e;
  EXPECT_NE(e.find("f16"), std::string::npos) << e;
}

}  // namespace
}  // namespace qc
