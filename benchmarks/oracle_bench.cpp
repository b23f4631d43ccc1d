// Oracle throughput against plain loops and the peers, in one process (medians of CPU time,
// benchmarks/README.md). Prints each benchmark (Google Benchmark) and then the ratios:
//   quantize (16M f32 -> i8): the oracle's paths / the plain nearbyint(x/s)+zp loop built
//   -O3 -march=native (benchmarks/baselines.cpp), and / XNNPACK's convert where installed;
//   requantize (16M int32 -> i8): the fast path for gemmlowp_double, xnnpack_rndnu and
//   float_multiplier, with and without labels / a plain nearbyint(acc*m)+zp clamp loop.
#include "benchmarks/baselines.hpp"
#include "benchmarks/ratio_reporter.hpp"
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"
#include "oracles/requantize.hpp"

#include <benchmark/benchmark.h>
#ifdef QCONFORM_BENCH_XNNPACK
#include <xnnpack.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

namespace {

constexpr std::int64_t kElements = 16 << 20;  // 16M

const qc::Tensor& input() {
  static const qc::Tensor x = [] {
    qc::Tensor t(qc::DType::f32, {kElements});
    std::uint64_t s = 12345;
    float* d = t.data<float>();
    for (std::int64_t i = 0; i < kElements; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      d[i] = static_cast<float>(static_cast<double>(s >> 11) * 0x1p-53 * 8.0 - 4.0);
    }
    return t;
  }();
  return x;
}

qc::QuantParams params() {
  qc::QuantParams p;
  p.scales = {static_cast<float>(1.0 / 37.0)};
  p.zero_points = {3};
  return p;
}

// The baseline: what a plain float implementation of ONNX QuantizeLinear compiles to.
void BM_PlainNearbyintLoop(benchmark::State& state) {
  const qc::Tensor& x = input();
  std::vector<std::int8_t> q(kElements);
  for (auto _ : state) {
    qc::bench::quantize_f32_s8(x.data<float>(), kElements, static_cast<float>(params().scales[0]), 3.0f, q.data());
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

void run_quantize(benchmark::State& state, const char* preset, qc::ComputeFormat compute, bool labels) {
  const qc::Tensor& x = input();
  const qc::QuantParams p = params();
  qc::QuantizePolicy pol = qc::find_preset(preset)->quantize;
  pol.compute = compute;
  // Output buffers are reused between iterations, as the plain loop's are: the figure is the
  // oracle's work, not the kernel's page faults on a fresh 16 MB allocation.
  qc::QuantizeResult r;
  for (auto _ : state) {
    qc::quantize(x, p, qc::DType::i8, pol, r, qc::OraclePath::fast, labels);
    benchmark::DoNotOptimize(r.q.bytes().data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

#ifdef QCONFORM_BENCH_XNNPACK
// The peer: XNNPACK's f32 -> qs8 convert operator (what TFLite's XNNPACK delegate runs for
// QUANTIZE), one operator over the whole tensor, no thread pool (one thread, as the oracle).
void BM_XnnpackConvertF32Qs8(benchmark::State& state) {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_initialize failed");
    return;
  }
  const qc::Tensor& x = input();
  std::vector<float> padded(static_cast<std::size_t>(kElements) +
                            XNN_EXTRA_BYTES / sizeof(float));  // XNNPACK reads past
  std::copy(x.data<float>(), x.data<float>() + kElements, padded.begin());
  std::vector<std::int8_t> q(kElements);
  const auto n = static_cast<std::size_t>(kElements);
  xnn_operator_t op = nullptr;
  if (xnn_create_convert_nc_f32_qs8(n, n, n, static_cast<float>(params().scales[0]), 3, INT8_MIN, INT8_MAX, 0, &op) !=
          xnn_status_success ||
      xnn_setup_convert_nc_f32_qs8(op, 1, padded.data(), q.data(), nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_create/setup_convert_nc_f32_qs8 failed");
    return;
  }
  for (auto _ : state) {
    xnn_run_operator(op, nullptr);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  xnn_delete_operator(op);
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_XnnpackConvertF32Qs8)->Unit(benchmark::kMillisecond);
#endif

void BM_OracleQuantizeOnnx(benchmark::State& s) {
  run_quantize(s, "onnx", {qc::ComputeFormat::Kind::scale_type, 0}, false);
}
void BM_OracleQuantizeOnnxLabels(benchmark::State& s) {
  run_quantize(s, "onnx", {qc::ComputeFormat::Kind::scale_type, 0}, true);
}
void BM_OracleQuantizeExact(benchmark::State& s) {
  run_quantize(s, "onnx", {qc::ComputeFormat::Kind::exact, 0}, false);
}
void BM_OracleQuantizeExactLabels(benchmark::State& s) {
  run_quantize(s, "onnx", {qc::ComputeFormat::Kind::exact, 0}, true);
}

// ---- Requantize ----------------------------------------------------------------------------------

// 16M int32 accumulators, uniform in [-2^17, 2^17): with the multiplier below, outputs cover the
// int8 range and the outer few percent saturate.
const qc::Tensor& accumulators() {
  static const qc::Tensor acc = [] {
    qc::Tensor t(qc::DType::i32, {kElements});
    std::uint64_t s = 6789;
    auto* d = t.data<std::int32_t>();
    for (std::int64_t i = 0; i < kElements; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      d[i] = static_cast<std::int32_t>(s >> 46) - (1 << 17);
    }
    return t;
  }();
  return acc;
}

// s_in * s_w / s_out = 0.0123 * 0.0045 / 0.05 ~ 0.0011 (each an f32).
qc::RequantizeParams requantize_params() {
  qc::RequantizeParams p;
  p.scale_dtype = qc::DType::f32;
  p.input_scale = static_cast<float>(0.0123);
  p.weight_scales = {static_cast<float>(0.0045)};
  p.output_scale = static_cast<float>(0.05);
  p.output_zero_points = {3};
  return p;
}

// The baseline: what a plain f32 requantize epilogue compiles to (XNNPACK's fp32 scalar kernel,
// without the oracle's labels or any exactness argument).
void BM_PlainRequantizeLoop(benchmark::State& state) {
  const qc::Tensor& acc = accumulators();
  const qc::RequantizeParams p = requantize_params();
  const auto m = static_cast<float>(static_cast<float>(p.input_scale) * static_cast<float>(p.weight_scales[0]) /
                                    static_cast<float>(p.output_scale));
  std::vector<std::int8_t> q(kElements);
  for (auto _ : state) {
    qc::bench::requantize_s32_s8(acc.data<std::int32_t>(), kElements, m, 3.0f, q.data());
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

void run_requantize(benchmark::State& state, qc::RequantizeScheme scheme, bool labels) {
  const qc::Tensor& acc = accumulators();
  const qc::RequantizeParams p = requantize_params();
  const qc::RequantizePolicy pol = qc::requantize_policy_for(scheme);
  std::int64_t slow = 0;
  for (auto _ : state) {
    qc::RequantizeResult r = qc::requantize(acc, p, qc::DType::i8, pol, qc::OraclePath::fast, labels);
    slow = r.slow_elements;
    benchmark::DoNotOptimize(r.q.bytes().data());
  }
  state.counters["slow_elements"] = static_cast<double>(slow);
  state.SetItemsProcessed(state.iterations() * kElements);
}

using S = qc::RequantizeScheme;
void BM_OracleRequantizeGemmlowpDouble(benchmark::State& s) { run_requantize(s, S::gemmlowp_double, false); }
void BM_OracleRequantizeGemmlowpDoubleLabels(benchmark::State& s) { run_requantize(s, S::gemmlowp_double, true); }
void BM_OracleRequantizeXnnpackRndnu(benchmark::State& s) { run_requantize(s, S::xnnpack_rndnu, false); }
void BM_OracleRequantizeXnnpackRndnuLabels(benchmark::State& s) { run_requantize(s, S::xnnpack_rndnu, true); }
void BM_OracleRequantizeFloatMultiplier(benchmark::State& s) { run_requantize(s, S::float_multiplier, false); }
void BM_OracleRequantizeFloatMultiplierLabels(benchmark::State& s) { run_requantize(s, S::float_multiplier, true); }

BENCHMARK(BM_PlainNearbyintLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQuantizeOnnx)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQuantizeOnnxLabels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQuantizeExact)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQuantizeExactLabels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlainRequantizeLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeGemmlowpDouble)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeGemmlowpDoubleLabels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeXnnpackRndnu)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeXnnpackRndnuLabels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeFloatMultiplier)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleRequantizeFloatMultiplierLabels)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  qc::bench::initialize(&argc, argv);
  qc::bench::RatioReporter reporter("items_per_second");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto is_requantize = [](const std::string& name) { return name.find("Requantize") != std::string::npos; };
  const double base = reporter.value("BM_PlainNearbyintLoop");
  if (base > 0) {
    std::printf("\nratios to the plain nearbyint(x/s)+zp loop (16M f32 -> i8, same run):\n");
    for (const auto& [name, r] : reporter.values())
      if (name != "BM_PlainNearbyintLoop" && !is_requantize(name))
        std::printf("  %-32s %.3f\n", name.c_str(), r / base);
  }
  const double xnnpack = reporter.value("BM_XnnpackConvertF32Qs8");
  if (xnnpack > 0) {
    std::printf("\nratios to XNNPACK's convert_nc_f32_qs8 (16M f32 -> i8, same run):\n");
    for (const auto& [name, r] : reporter.values())
      if (name.rfind("BM_OracleQuantize", 0) == 0) std::printf("  %-32s %.3f\n", name.c_str(), r / xnnpack);
  }
  const double requantize_base = reporter.value("BM_PlainRequantizeLoop");
  if (requantize_base > 0) {
    std::printf("\nratios to the plain nearbyint(acc*m)+zp clamp loop (16M int32 -> i8, same run):\n");
    for (const auto& [name, r] : reporter.values())
      if (name != "BM_PlainRequantizeLoop" && is_requantize(name))
        std::printf("  %-40s %.3f\n", name.c_str(), r / requantize_base);
  }
  benchmark::Shutdown();
  return 0;
}
