// The oracle's qgemm at 1024x1024x1024 (u8 x s8, exact integer accumulation, exact
// requantization to i8 under `onnx`), in GOPS (2*M*N*K per second), next to a plain
// auto-vectorized int32 GEMM loop measured in the same run.
#include "harness/evaluate.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>

namespace {

constexpr std::int64_t kM = 1024, kN = 1024, kK = 1024;

struct Operands {
  qc::Tensor a{qc::DType::u8, {kM, kK}};
  qc::Tensor b{qc::DType::i8, {kK, kN}};
  Operands() {
    std::uint64_t s = 7;
    auto next = [&] { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    for (std::int64_t i = 0; i < a.size(); ++i) a.set_int(i, static_cast<std::int64_t>(next() % 256));
    for (std::int64_t i = 0; i < b.size(); ++i) b.set_int(i, static_cast<std::int64_t>(next() % 255) - 127);
  }
};

const Operands& operands() {
  static const Operands o;
  return o;
}

// The baseline: (a - za) * b accumulated in int32 over a transposed B, as a plain reference
// would write it; GCC vectorizes the inner loop.
void BM_PlainInt32Gemm(benchmark::State& state) {
  const Operands& o = operands();
  std::vector<std::int32_t> bt(static_cast<std::size_t>(kN * kK)), c(static_cast<std::size_t>(kM * kN));
  for (std::int64_t k = 0; k < kK; ++k)
    for (std::int64_t n = 0; n < kN; ++n)
      bt[static_cast<std::size_t>(n * kK + k)] = static_cast<std::int32_t>(o.b.get_int(k * kN + n));
  std::vector<std::int32_t> a(static_cast<std::size_t>(kM * kK));
  for (std::int64_t i = 0; i < kM * kK; ++i)
    a[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(o.a.get_int(i)) - 128;
  for (auto _ : state) {
    for (std::int64_t m = 0; m < kM; ++m) {
      const std::int32_t* ar = &a[static_cast<std::size_t>(m * kK)];
      for (std::int64_t n = 0; n < kN; ++n) {
        const std::int32_t* br = &bt[static_cast<std::size_t>(n * kK)];
        std::int32_t acc = 0;
        for (std::int64_t k = 0; k < kK; ++k) acc += ar[k] * br[k];
        c[static_cast<std::size_t>(m * kN + n)] = acc;
      }
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kM * kN * kK * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_OracleQGemmRequantized(benchmark::State& state) {
  const Operands& o = operands();
  qc::QGemmOp op;
  op.a.values = o.a;
  op.a.format = qc::DType::u8;
  op.a.params.scales = {static_cast<float>(0.02)};
  op.a.params.zero_points = {128};
  op.b.values = o.b;
  op.b.format = qc::DType::i8;
  op.b.shape = o.b.shape();
  op.b.params.axis = 1;
  for (std::int64_t n = 0; n < kN; ++n) op.b.params.scales.push_back(static_cast<float>(0.001 * (1 + n % 7)));
  op.output.kind = qc::OutputKind::requantized;
  op.output.format = qc::DType::i8;
  op.output.scale = 0.5;
  const qc::QGemmPolicy policy = qc::qgemm_policy(*qc::find_preset("onnx"), qc::DType::u8, qc::LinearOp::gemm);
  for (auto _ : state) {
    qc::QGemmResult r = qc::qgemm(op, policy);
    benchmark::DoNotOptimize(r.y.bytes().data());
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kM * kN * kK * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_PlainInt32Gemm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OracleQGemmRequantized)->Unit(benchmark::kMillisecond)->UseRealTime();

class GopsReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("GOPS");
      if (it != r.counters.end()) gops[r.benchmark_name()] = it->second.value / 1e9;
    }
  }
  std::map<std::string, double> gops;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  GopsReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double base = reporter.gops["BM_PlainInt32Gemm/real_time"];
  const double oracle = reporter.gops["BM_OracleQGemmRequantized/real_time"];
  std::printf(
      "\n1024^3 u8 x s8: plain int32 loop %.2f GOPS, oracle qgemm (exact accumulation + exact requantize) %.2f GOPS, "
      "ratio %.3f\n",
      base, oracle, base > 0 ? oracle / base : 0.0);
  benchmark::Shutdown();
  return 0;
}
