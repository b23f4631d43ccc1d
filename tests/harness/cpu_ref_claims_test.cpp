// cpu-ref's selectable claim: every preset it implements (backends/cpu_ref/numerics.hpp) gives,
// first, the values worked out by hand in the comments below and, second, the oracle's values
// under that preset (the slow-and-exact side of the harness) on every default suite case and on
// random ties, near-ties, saturation and accumulator extremes.
#include "backends/cpu_ref/cpu_ref.hpp"
#include "backends/cpu_ref/linear.hpp"
#include "backends/registry.hpp"
#include "cases/case.hpp"
#include "cases/generators.hpp"
#include "cpu_ref_test_util.hpp"
#include "harness/evaluate.hpp"
#include "oracles/presets.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace qc {
namespace {

using testing::int_values;
using testing::per_tensor;

Tensor f32s(const std::vector<double>& v) {
  Tensor x(DType::f32, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) x.set_double(static_cast<std::int64_t>(i), v[i]);
  return x;
}

Tensor ints(DType t, const std::vector<std::int64_t>& v) {
  Tensor x(t, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<std::int64_t>(i), v[i]);
  return x;
}

Tensor run_on(const std::string& preset, const OpRequest& op) {
  CpuRefBackend cpu(preset);
  const Availability a = cpu.supports(op);
  EXPECT_TRUE(a.available) << a.reason;
  return cpu.run(op);
}

std::vector<std::int64_t> quantized(const std::string& preset, const std::vector<double>& x, double scale,
                                    std::int64_t zp = 0) {
  return int_values(run_on(preset, QuantizeOp{f32s(x), per_tensor(scale, zp), DType::i8}));
}

std::vector<std::int64_t> requantized(const std::string& preset, const std::vector<std::int64_t>& acc, double s_in,
                                      double s_w, double s_out) {
  RequantizeOp r{ints(DType::i32, acc), {}, DType::i8};
  r.params.input_scale = s_in;
  r.params.weight_scales = {s_w};
  r.params.output_scale = s_out;
  return int_values(run_on(preset, r));
}

// ---- Naming and selection --------------------------------------------------------------------

TEST(CpuRefClaim, DefaultIsOnnxAndOthersAreNamedByTheirPreset) {
  EXPECT_EQ(CpuRefBackend().name(), "cpu-ref");
  EXPECT_EQ(CpuRefBackend().claim(), "onnx");
  EXPECT_EQ(make_backend("cpu-ref:tflite-reference")->claim(), "tflite-reference");
  EXPECT_EQ(make_backend("cpu-ref:pytorch-cpu")->name(), "cpu-ref:pytorch-cpu");
  // Every claim is a real preset, and the variants are listed for --backend.
  for (const cpu_ref::Numerics& n : cpu_ref::claimable()) EXPECT_TRUE(find_preset(n.preset)) << n.preset;
  EXPECT_EQ(backend_variants(), (std::vector<std::string>{"cpu-ref:tflite-reference", "cpu-ref:pytorch-cpu"}));
}

TEST(CpuRefClaim, UnknownPresetIsAnErrorNamingWhatIsImplemented) {
  try {
    make_backend("cpu-ref:tosa-single");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu-ref can claim onnx, tflite-reference, pytorch-cpu, not 'tosa-single'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_backend("no-such-backend"), InputError);
}

// ---- Hand-derived values ---------------------------------------------------------------------

// x / s = ±2.5, ±0.5 exactly (s = 1): ONNX's nearbyint gives ties to even (±2, ±0), TFLite's
// std::round ties away (±3, ±1). 1.5 is a tie both ways to 2.
TEST(CpuRefClaim, TfliteRoundsQuantizeTiesAwayFromZero) {
  const std::vector<double> x{2.5, -2.5, 0.5, -0.5, 1.5};
  EXPECT_EQ(quantized("onnx", x, 1.0), (std::vector<std::int64_t>{2, -2, 0, 0, 2}));
  EXPECT_EQ(quantized("tflite-reference", x, 1.0), (std::vector<std::int64_t>{3, -3, 1, -1, 2}));
}

// s = 7, x = ±45.5: x / s = ±6.5 exactly, a tie, which nearbyint takes to ±6 and std::round to ±7.
// FBGEMM multiplies by 1.f / 7 = 9586981 * 2^-26 (2^26 / 7 = 9586980.57 rounds up), so
// x * (1/s) = 45.5 * 9586981 * 2^-26 = 6.5 + 19.5 * 2^-26; the f32 spacing in [4, 8) is 2^-21
// = 32 * 2^-26, and 19.5 > 16 (half of it) rounds the product up to 6.5 + 2^-21, which nearbyint
// takes to 7 (and -7 for -45.5). A NaN goes to qmax (127) for FBGEMM; cpu-ref picks qmin where the
// spec leaves it open.
TEST(CpuRefClaim, PytorchMultipliesByTheReciprocalAndSendsNanToQmax) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(quantized("onnx", {45.5, -45.5, nan}, 7.0), (std::vector<std::int64_t>{6, -6, -128}));
  EXPECT_EQ(quantized("pytorch-cpu", {45.5, -45.5, nan}, 7.0), (std::vector<std::int64_t>{7, -7, 127}));
  EXPECT_EQ(quantized("tflite-reference", {45.5, -45.5}, 7.0), (std::vector<std::int64_t>{7, -7}));
}

// q = 2^24 + 1 (int32), zp 0, s = 3, f32 output. In f32 (ONNX's scale type, FBGEMM's float) the
// difference is first rounded to float: 2^24 + 1 is a tie between 2^24 and 2^24 + 2 and goes to
// the even 2^24; times 3 it is 50331648 exactly. TFLite computes in double: 50331651 exactly, then
// stored as float, where the spacing in [2^25, 2^26) is 4: 50331651 is 1 from 50331652.
TEST(CpuRefClaim, TfliteDequantizesInDouble) {
  const DequantizeOp d{ints(DType::i32, {16777217}), per_tensor(3.0), DType::f32};
  EXPECT_EQ(run_on("onnx", d).get_double(0), 50331648.0);
  EXPECT_EQ(run_on("pytorch-cpu", d).get_double(0), 50331648.0);
  EXPECT_EQ(run_on("tflite-reference", d).get_double(0), 50331652.0);
}

// Multiplier 0.5 (s_in 0.5, s_w 1, s_out 1): QuantizeMultiplier(0.5) = frexp -> 0.5 * 2^0, so
// M = round(0.5 * 2^31) = 2^30 and shift 0. SaturatingRoundingDoublingHighMul(acc, 2^30) =
// (acc * 2^30 + nudge) / 2^31 truncated, nudge 2^30 for a non-negative product, 1 - 2^30 otherwise:
//   acc  5: (5 + 1) * 2^30 / 2^31 = 3          (exact 2.5: ONNX's ties to even give 2)
//   acc -5: (-6 * 2^30 + 1) / 2^31 -> -2       (exact -2.5: -2 both ways)
//   acc  1: 2 * 2^30 / 2^31 = 1                (exact 0.5: 0)
//   acc -1: (-2 * 2^30 + 1) / 2^31 -> 0        (exact -0.5: 0)
// so gemmlowp rounds ties toward +inf.
TEST(CpuRefClaim, GemmlowpRoundsTiesUp) {
  EXPECT_EQ(requantized("onnx", {5, -5, 1, -1}, 0.5, 1.0, 1.0), (std::vector<std::int64_t>{2, -2, 0, 0}));
  EXPECT_EQ(requantized("tflite-reference", {5, -5, 1, -1}, 0.5, 1.0, 1.0), (std::vector<std::int64_t>{3, -2, 1, 0}));
}

// Multiplier 0.25: frexp -> 0.5 * 2^-1, M = 2^30, right shift 1. acc 5: the high multiply rounds
// 2.5 up to 3, then RoundingDivideByPOT(3, 1): 3 >> 1 = 1, remainder 1 > threshold 0, so 2, where
// the exact 5 * 0.25 = 1.25 is 1: gemmlowp's double rounding.
TEST(CpuRefClaim, GemmlowpRoundsTwice) {
  EXPECT_EQ(cpu_ref::tflite_quantize_multiplier(0.25).multiplier, 1 << 30);
  EXPECT_EQ(cpu_ref::tflite_quantize_multiplier(0.25).shift, -1);
  EXPECT_EQ(requantized("onnx", {5}, 0.25, 1.0, 1.0), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(requantized("tflite-reference", {5}, 0.25, 1.0, 1.0), (std::vector<std::int64_t>{2}));
}

// acc = 2^24 + 1 with multiplier 2^-25: exactly 0.5 + 2^-25, which rounds to 1. FBGEMM's float
// epilogue first rounds acc to float (a tie, to the even 2^24), so float(acc) * m = 0.5, and
// nearbyint gives 0. gemmlowp: M = 2^30, shift -24; the high multiply gives
// (2^24 + 2) * 2^30 / 2^31 = 2^23 + 1, then RoundingDivideByPOT(2^23 + 1, 24) = 0 + (2^23 + 1 >
// 2^23 - 1 ? 1 : 0) = 1.
TEST(CpuRefClaim, PytorchRoundsTheAccumulatorToFloatFirst) {
  const double m = std::ldexp(1.0, -25);
  EXPECT_EQ(requantized("onnx", {16777217}, m, 1.0, 1.0), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(requantized("pytorch-cpu", {16777217}, m, 1.0, 1.0), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(requantized("tflite-reference", {16777217}, m, 1.0, 1.0), (std::vector<std::int64_t>{1}));
}

// The fixed-point routines take one accumulator and one multiplier; a blocked GEMM is a SKIP with
// the reason (the oracle defines it for the exact scheme only).
TEST(CpuRefClaim, FixedPointRoutinesSkipBlockedRequantizedGemms) {
  QGemmOp g;
  g.a.values = Tensor(DType::i8, {1, 4});
  g.a.params = per_tensor(0.5);
  g.b.values = Tensor(DType::i8, {4, 1});
  g.b.format = DType::i8;
  g.b.shape = {4, 1};
  g.b.params.scales = {0.25, 0.5};
  g.b.params.zero_points = {0, 0};
  g.b.params.axis = 0;
  g.b.params.block_size = 2;
  g.output = {OutputKind::requantized, DType::i8, 1.0, 0, std::nullopt};
  EXPECT_TRUE(CpuRefBackend("onnx").supports(g).available);
  const Availability a = CpuRefBackend("tflite-reference").supports(g);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("exact routine only"), std::string::npos) << a.reason;
}

// ---- Against the oracle ------------------------------------------------------------------------

// Bits of the backend's output where the spec fixes them, against the oracle's.
std::int64_t mismatches(const Reference& ref, const Tensor& out) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < out.size(); ++i)
    if (ref.specified[static_cast<std::size_t>(i)] && ref.expected.bits(i) != out.bits(i)) ++n;
  return n;
}

class CpuRefClaimOracle : public ::testing::TestWithParam<std::string> {};

// Every default suite case the variant supports, bit for bit against the oracle under its claim.
// The variants must also part from onnx somewhere, or the comparison would not show they are
// different implementations.
TEST_P(CpuRefClaimOracle, MatchesTheOracleOnEveryDefaultCase) {
  const std::string preset = GetParam();
  const Spec spec = *find_preset(preset);
  const Spec onnx = *find_preset("onnx");
  CpuRefBackend cpu(preset);
  int compared = 0, differ_from_onnx = 0;
  for (const Suite& s : load_suites({std::string(QCONFORM_SOURCE_DIR) + "/cases"})) {
    for (const Case& c : s.cases) {
      if (!cpu.supports(c.op).available || std::holds_alternative<WeightOnlyGemmOp>(c.op)) continue;
      const Tensor out = cpu.run(c.op);
      const Reference ref = evaluate(c.op, spec);
      EXPECT_EQ(mismatches(ref, out), 0) << c.id() << " on cpu-ref:" << preset;
      ++compared;
      if (mismatches(evaluate(c.op, onnx), out) > 0) ++differ_from_onnx;
    }
  }
  EXPECT_GT(compared, 100);
  if (preset != "onnx") {
    EXPECT_GT(differ_from_onnx, 0);
  }
}

// Quantize ties and their float neighbours, saturation and specials for random f32 scales; and
// requantization of random and extreme int32 accumulators with random f32 scales (SplitMix64, so
// the same elements everywhere).
TEST_P(CpuRefClaimOracle, MatchesTheOracleOnRandomTiesAndExtremes) {
  const std::string preset = GetParam();
  const Spec spec = *find_preset(preset);
  CpuRefBackend cpu(preset);
  SplitMix64 rng(20261122);
  auto random_scale = [&](int lo_exp, int hi_exp) {
    const int e = lo_exp + static_cast<int>(rng.below(static_cast<std::uint64_t>(hi_exp - lo_exp + 1)));
    return static_cast<double>(static_cast<float>(std::ldexp(1.0 + rng.uniform01(), e)));
  };
  for (int round = 0; round < 40; ++round) {
    const double s = random_scale(-12, 2);
    const std::int64_t zp = static_cast<std::int64_t>(rng.below(41)) - 20;
    std::vector<double> x;
    for (int k = -140; k <= 140; ++k) {
      const auto t = static_cast<float>((k + 0.5) * s);  // a tie when exact in f32, else a near-tie
      x.push_back(t);
      x.push_back(std::nextafter(t, 1e30f));
      x.push_back(std::nextafter(t, -1e30f));
    }
    for (const double v : {0.0, -0.0, 1e30, -1e30, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
      x.push_back(v);
    const QuantizeOp q{f32s(x), per_tensor(s, zp), DType::i8};
    EXPECT_EQ(mismatches(evaluate(q, spec), cpu.run(q)), 0) << "quantize, scale " << s << ", zp " << zp;

    std::vector<std::int64_t> acc{0, 1, -1, std::numeric_limits<std::int32_t>::max(),
                                  std::numeric_limits<std::int32_t>::min()};
    for (int i = 0; i < 500; ++i) {
      const int bits = 1 + static_cast<int>(rng.below(31));
      acc.push_back(static_cast<std::int64_t>(rng.below(std::uint64_t{1} << bits)) * (rng.below(2) ? 1 : -1));
    }
    const double s_in = random_scale(-12, -4), s_w = random_scale(-12, -4), s_out = random_scale(-8, 0);
    // Accumulators whose real value lands on or next to a half-integer inside the output range,
    // where the routines' rounding differs; with multipliers down to 2^-24 they reach past 2^24,
    // where float(acc) itself rounds.
    const double m = s_in * s_w / s_out;
    for (int k = -130; k <= 130; ++k) {
      const auto centre = static_cast<std::int64_t>(std::llround((k + 0.5) / m));
      for (std::int64_t d = -1; d <= 1; ++d)
        if (std::llabs(centre + d) <= std::numeric_limits<std::int32_t>::max()) acc.push_back(centre + d);
    }
    RequantizeOp r{ints(DType::i32, acc), {}, rng.below(2) ? DType::i8 : DType::u8};
    r.params.input_scale = s_in;
    r.params.weight_scales = {s_w};
    r.params.output_scale = s_out;
    r.params.output_zero_points = {r.out == DType::u8 ? static_cast<std::int64_t>(rng.below(256)) : zp};
    EXPECT_EQ(mismatches(evaluate(r, spec), cpu.run(r)), 0)
        << "requantize, scales " << r.params.input_scale << " " << r.params.weight_scales[0] << " "
        << r.params.output_scale;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, CpuRefClaimOracle, ::testing::Values("onnx", "tflite-reference", "pytorch-cpu"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace qc
