// qadd as a case op: loaded from a case file (operands from other cases, parameters from a
// choose_qparams case), evaluated by the oracle under the spec's add scheme, run by cpu-ref (its own
// 128-bit integer path) and by the x86 backend (MLAS's AVX2 arithmetic), carried over the wire. Every
// expected value is worked by hand in the comment above it.
#include "backends/cpu_ref/cpu_ref.hpp"
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "cases/case_writer.hpp"
#include "harness/evaluate.hpp"
#include "harness/runner.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"
#include "qconform/wire.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qc {
namespace qadd_op_test {

Tensor ints(DType t, Shape shape, const std::vector<std::int64_t>& v) {
  Tensor x(t, std::move(shape));
  for (std::size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<std::int64_t>(i), v[i]);
  return x;
}

std::vector<std::int64_t> values(const Tensor& t) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < t.size(); ++i) v.push_back(t.get_int(i));
  return v;
}

QAddOp make(Tensor a, double sa, std::int64_t za, Tensor b, double sb, std::int64_t zb, DType out, double sc,
            std::int64_t zc) {
  QAddOp op;
  op.a = std::move(a);
  op.a_params.scales = {sa};
  op.a_params.zero_points = {za};
  op.b = std::move(b);
  op.b_params.scales = {sb};
  op.b_params.zero_points = {zb};
  op.output.kind = OutputKind::requantized;
  op.output.format = out;
  op.output.scale = sc;
  op.output.zero_point = zc;
  return op;
}

// sA = 0.5 (zA 1), sB = 0.25 (zB -2), sC = 1 (zC 3), i8; B [3] over A [2, 3]:
//   C = round(0.5(a - 1) + 0.25(b + 2)) + 3.
// (a, b) = (2, 0): 0.5 + 0.5 = 1 -> 4.    (4, 0): 1.5 + 0.5 = 2 -> 5.    (3, -3): 1 - 0.25 = 0.75 -> 4.
// (6, 0): 2.5 + 0.5 = 3 -> 6.    (1, 0): 0 + 0.5 = 0.5, a tie: 0 -> 3.    (127, -3): 63 - 0.25 = 62.75 -> 66.
QAddOp small() {
  return make(ints(DType::i8, {2, 3}, {2, 4, 127, 6, 1, 3}), 0.5, 1, ints(DType::i8, {3}, {0, 0, -3}), 0.25, -2,
              DType::i8, 1, 3);
}
// Row 0: (2, 0) -> 4, (4, 0) -> 5, (127, -3) -> 66. Row 1: (6, 0) -> 6, (1, 0) -> 3 (tie to even), (3, -3) -> 4.
const std::vector<std::int64_t> kSmallExpected{4, 5, 66, 6, 3, 4};

TEST(QAddOp, TheOracleAndCpuRefGiveTheFormula) {
  const QAddOp op = small();
  EXPECT_EQ(op_output_shape(op), (Shape{2, 3}));
  const Reference ref = evaluate(op, *find_preset("onnx"));
  EXPECT_EQ(values(ref.expected), kSmallExpected);
  EXPECT_EQ(ref.labels[4], Label::tie);
  CpuRefBackend cpu;
  ASSERT_TRUE(cpu.supports(op).available) << cpu.supports(op).reason;
  EXPECT_EQ(values(cpu.run(op)), kSmallExpected);
}

// sA = 1 (zA -127), sB = 6, sC = 6, zero points otherwise 0: the exact value of a = -124, b = 0 is
// (-124 + 127) / 6 = 0.5, a tie (ideal: 0). MLAS (oracles/qadd.hpp and tests/oracle/qadd_test.cpp,
// worked from qladd_avx2.cpp): rA = fl(1/6) = 11184811·2^-26, the folded constant 11097430·2^-19,
// fma(-124, rA, constant) = 0.5 + 11·2^-24 -> 1. B has three elements (not folded).
QAddOp mlas_tie() {
  return make(ints(DType::i8, {1, 3}, {-124, -124, -127}), 1, -127, ints(DType::i8, {3}, {0, 0, 0}), 6, 0, DType::i8, 6,
              0);
}

// small() under MLAS: every step is exact in f32 (ratios 0.5 and 0.25, the constant
// 3 - (0.5·1 + 0.25·(-2)) = 3), but zC is inside the constant, so element 4 rounds 0.5 + 3 = 3.5 to
// even, 4, where the ideal scheme rounds 0.5 to 0 and then adds 3.
const std::vector<std::int64_t> kSmallMlas{4, 5, 66, 6, 4, 4};

TEST(QAddOp, TheX86ClaimIsMlasAndItsBackendsRunIt) {
  const QAddOp op = mlas_tie();
  EXPECT_EQ(values(evaluate(op, *find_preset("onnx")).expected), (std::vector<std::int64_t>{0, 0, 0}));
  EXPECT_EQ(values(evaluate(op, *find_preset("x86-vnni")).expected), (std::vector<std::int64_t>{1, 1, 0}));
  EXPECT_EQ(values(evaluate(small(), *find_preset("x86-vnni")).expected), kSmallMlas);
  EXPECT_EQ(find_preset("x86-avx2-vpmaddubsw")->add.scheme, AddScheme::ort_mlas_avx2);
  EXPECT_EQ(find_preset("ort-cpu")->add.scheme, AddScheme::ort_mlas_avx2);
  EXPECT_EQ(find_preset("xnnpack-fp32")->add.scheme, AddScheme::xnnpack_vadd);
  for (const char* name : {"vnni512", "avxvnni", "avx2-maddubs"}) {
    std::unique_ptr<Backend> b;
    try {
      b = make_backend(name);
    } catch (const InputError&) {
      continue;  // not a backend of this build
    }
    if (!b->availability().available) continue;
    ASSERT_TRUE(b->supports(op).available) << name << ": " << b->supports(op).reason;
    EXPECT_EQ(values(b->run(op)), (std::vector<std::int64_t>{1, 1, 0})) << name;
    EXPECT_EQ(values(b->run(small())), kSmallMlas) << name;
  }
}

// B [M, 1] over A [M, N]: ONNX Runtime calls MLAS once per row with that row's B as a scalar, which
// MLAS folds into its constant (F' = fl(F + fl(b·rB)), then one FMA) instead of the two FMAs of a
// vector B. sA = 1.5, sB = 1, sC = 3, zC = -16, a = 1, b = 48: rA = 0.5, rB = fl(1/3) =
// 11184811·2^-25 = 1/3 + 2^-25/3, F = -16. Exact: (1.5 + 48) / 3 - 16 = 0.5, a tie: 0 (ideal).
// Folded: fl(48·rB) = fl(16 + 2^-21) = 16 (the f32 step at 16 is 2^-19), F' = 0, fma(1, 0.5, 0) =
// 0.5 -> 0. Vector B: fma(48, rB, -16) = 2^-21, fma(1, 0.5, 2^-21) = 0.5 + 2^-21 -> 1.
TEST(QAddOp, AColumnBIsFoldedRowByRow) {
  const QAddOp column =
      make(ints(DType::i8, {2, 2}, {1, 1, 1, 1}), 1.5, 0, ints(DType::i8, {2, 1}, {48, 48}), 1, 0, DType::i8, 3, -16);
  const QAddOp row =
      make(ints(DType::i8, {2, 2}, {1, 1, 1, 1}), 1.5, 0, ints(DType::i8, {2}, {48, 48}), 1, 0, DType::i8, 3, -16);
  EXPECT_TRUE(qadd_b_folded({2, 2}, {2, 1}));
  EXPECT_FALSE(qadd_b_folded({2, 2}, {2}));
  EXPECT_FALSE(qadd_b_folded({1, 1}, {1}));          // one element: one call, nothing broadcast
  EXPECT_TRUE(qadd_b_folded({2, 3, 1}, {2, 1, 1}));  // trailing 1s merge into the span
  const Spec x86 = *find_preset("x86-vnni");
  const std::vector<std::int64_t> zeros(4, 0), ones(4, 1);
  EXPECT_EQ(values(evaluate(column, x86).expected), zeros);
  EXPECT_EQ(values(evaluate(row, x86).expected), ones);
  EXPECT_EQ(values(evaluate(row, *find_preset("onnx")).expected), zeros);
  for (const char* name : {"vnni512", "avxvnni", "avx2-maddubs"}) {
    std::unique_ptr<Backend> b;
    try {
      b = make_backend(name);
    } catch (const InputError&) {
      continue;
    }
    if (!b->availability().available) continue;
    EXPECT_EQ(values(b->run(column)), zeros) << name;
    EXPECT_EQ(values(b->run(row)), ones) << name;
  }
}

TEST(QAddOp, CpuRefDeclinesAClaimWhoseAddIsNotTheExactValue) {
  // cpu-ref's claims are presets whose add is ideal with ties to even; the op itself is fine.
  CpuRefBackend cpu;
  EXPECT_TRUE(cpu.supports(small()).available);
  QAddOp per_axis = small();
  per_axis.a_params.scales = {0.5, 0.5};
  EXPECT_FALSE(cpu.supports(per_axis).available);
}

TEST(QAddOp, TheWireCarriesIt) {
  const QAddOp op = small();
  const wire::Message m = wire::encode_op(op);
  const OpRequest back = wire::decode_op(m.json, m.tensors);
  ASSERT_TRUE(std::holds_alternative<QAddOp>(back));
  const QAddOp& q = std::get<QAddOp>(back);
  EXPECT_EQ(values(q.a), values(op.a));
  EXPECT_EQ(values(q.b), values(op.b));
  EXPECT_EQ(q.b.shape(), op.b.shape());
  EXPECT_EQ(q.b_params.zero_points, op.b_params.zero_points);
  EXPECT_EQ(q.output.scale, 1.0);
  EXPECT_EQ(q.output.zero_point, 3);
}

// A chain: the bias quantized exactly (i32 at 2^-8) added to a requantized GEMM's outputs, with the
// output's pair from a choose_qparams case (glow-power2 on [-1, 100]: scale 1, zero point 0, worked in
// choose_qparams_op_test.cpp).
constexpr const char* kChain = R"({
  "suite": "qadd_chain",
  "cases": [
    {"name": "pair", "op": "choose_qparams", "input": {"dtype": "f32", "shape": [2], "data": [-1.0, 100.0]},
     "rule": "glow-power2", "output_dtype": "i8"},
    {"name": "mm", "op": "qgemm", "spec": "onnx",
     "a": {"dtype": "i8", "shape": [2, 2], "data": [1, 2, 3, 4], "scale": 1.0},
     "b": {"dtype": "i8", "shape": [2, 2], "data": [1, 0, 0, 1], "scale": 1.0},
     "output": {"kind": "requantized", "dtype": "i8", "scale": 0.5, "zero_point": 0}},
    {"name": "add", "op": "qadd", "spec": "onnx",
     "a": {"from": "mm", "scale": 0.5, "zero_point": 0},
     "b": {"dtype": "i32", "shape": [2], "data": [128, -64], "scale": 0.00390625},
     "output": {"dtype": "i8", "params_from": "pair"}}
  ]
})";

TEST(QAddOp, ACaseTakesAnOperandAndItsOutputPairFromOtherCases) {
  const Suite s = load_suite_text(kChain, "chain.json");
  ASSERT_EQ(s.cases.size(), 3u);
  ASSERT_EQ(s.cases[2].links.size(), 2u);
  EXPECT_EQ(s.cases[2].links[0].field, "a");
  EXPECT_EQ(s.cases[2].links[1].field, "output.params");
  // mm: A times the identity = [1, 2, 3, 4], requantized to scale 0.5: [2, 4, 6, 8]. add: 0.5·q plus
  // the bias [128·2^-8, -64·2^-8] = [0.5, -0.25] over each row, at scale 1: [1.5, 1.75, 3.5, 3.75]
  // -> [2, 2, 4, 4] (1.5 and 3.5 are ties: to even).
  CpuRefBackend cpu;
  std::vector<Backend*> backends{&cpu};
  const RunReport r = run_cases({s}, backends, RunOptions{});
  for (const CaseResult& c : r.cases)
    EXPECT_EQ(c.backends.at(0).verdict, Verdict::pass) << c.id << c.backends[0].reason;
  OpRequest op = s.cases[2].op;
  bind_operand(op, "a", ints(DType::i8, {2, 2}, {2, 4, 6, 8}));
  Tensor pair(DType::f64, {2});
  pair.set_double(0, 1.0);
  bind_operand(op, "output.params", pair);
  EXPECT_EQ(values(evaluate(op, *find_preset("onnx")).expected), (std::vector<std::int64_t>{2, 2, 4, 4}));
  // Written back, the case keeps its links and loads to the same op.
  nlohmann::json file = {{"suite", "qadd_chain"}, {"cases", nlohmann::json::array()}};
  for (const Case& c : s.cases) file["cases"].push_back(case_to_json(c));
  const Suite again = load_suite_text(file.dump(), "again.json");
  EXPECT_EQ(again.cases[2].links.size(), 2u);
  EXPECT_EQ(wire::encode_op(again.cases[2].op).json, wire::encode_op(s.cases[2].op).json);
}

TEST(QAddOp, ASpecCanNameTheAddScheme) {
  const Spec s = parse_spec(R"({"preset": "onnx", "add": {"scheme": "ideal", "rounding": "rna"}})", "spec");
  EXPECT_EQ(s.add.scheme, AddScheme::ideal);
  EXPECT_EQ(s.add.rounding, RoundingMode::rna);
  // The tie of small()'s element 4 (0.5) now rounds away: 1 + 3 = 4.
  EXPECT_EQ(evaluate(small(), s).expected.get_int(4), 4);
  EXPECT_THROW(parse_spec(R"({"preset": "onnx", "add": {"scheme": "mlas"}})", "spec"), InputError);
}

}  // namespace qadd_op_test
}  // namespace qc
