// The oracle's qgemm at 1024x1024x1024 (u8 x s8, exact integer accumulation, exact
// requantization to i8 under `onnx`), in GOPS (2*M*N*K per second), on one thread and on every
// core, beside a plain int32 GEMM loop built -O3 -march=native and, where installed, oneDNN's int8
// matmul, in one process; ratios of medians of CPU time (wall time for every core;
// benchmarks/README.md).
#include "benchmarks/baselines.hpp"
#include "benchmarks/ratio_reporter.hpp"
#include "harness/evaluate.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"
#include "qconform/parallel.hpp"

#include <benchmark/benchmark.h>
#ifdef QCONFORM_BENCH_ONEDNN
#include <dnnl.hpp>
#endif

#include <algorithm>
#include <cstdio>
#include <thread>

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

// The baseline: u8 x s8 accumulated in int32 (benchmarks/baselines.cpp, built -O3 -march=native).
void BM_PlainInt32Gemm(benchmark::State& state) {
  const Operands& o = operands();
  std::vector<std::int32_t> c(static_cast<std::size_t>(kM * kN));
  for (auto _ : state) {
    qc::bench::gemm_u8s8_s32(o.a.data<std::uint8_t>(), o.b.data<std::int8_t>(), kM, kN, kK, c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kM * kN * kK * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

#ifdef QCONFORM_BENCH_ONEDNN
// The peer: oneDNN's u8 x s8 -> s32 matmul (no zero points, no scales: its fastest int8 GEMM) with
// its default threads.
void BM_OnednnMatmulU8S8S32(benchmark::State& state) {
  using dnnl::memory;
  const Operands& o = operands();
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const memory::desc a_md({kM, kK}, memory::data_type::u8, memory::format_tag::ab);
  const memory::desc b_md({kK, kN}, memory::data_type::s8, memory::format_tag::ab);
  const memory::desc c_md({kM, kN}, memory::data_type::s32, memory::format_tag::ab);
  const dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  std::vector<std::int32_t> c(static_cast<std::size_t>(kM * kN));
  memory a_mem(a_md, eng, const_cast<std::uint8_t*>(o.a.data<std::uint8_t>()));
  memory b_mem(b_md, eng, const_cast<std::int8_t*>(o.b.data<std::int8_t>()));
  memory c_mem(c_md, eng, c.data());
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * kM * kN * kK * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
// The CPU time of every thread of the process: oneDNN computes on its OpenMP workers, and Google
// Benchmark's default CPU time is the calling thread's alone.
BENCHMARK(BM_OnednnMatmulU8S8S32)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
#endif

// The oracle's qgemm on state.range(0) threads (oracles/parallel.hpp).
void oracle_qgemm(benchmark::State& state) {
  qc::set_worker_threads(static_cast<int>(state.range(0)));
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
  qc::set_worker_threads(0);
}

// One thread, in CPU time like the baselines; and every core, in wall time (its speed-up is the
// ratio of the two).
void BM_OracleQGemmRequantized(benchmark::State& state) { oracle_qgemm(state); }
void BM_OracleQGemmRequantizedAllCores(benchmark::State& state) { oracle_qgemm(state); }

BENCHMARK(BM_PlainInt32Gemm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQGemmRequantized)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQGemmRequantizedAllCores)
    ->Arg(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())))
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  qc::bench::initialize(&argc, argv);
  qc::bench::RatioReporter reporter("GOPS");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double base = reporter.value("BM_PlainInt32Gemm") / 1e9;
  const double oracle = reporter.value("BM_OracleQGemmRequantized") / 1e9;
  const double onednn = reporter.value("BM_OnednnMatmulU8S8S32") / 1e9;
  std::printf(
      "\n1024^3 u8 x s8 (medians of CPU time): plain int32 loop %.2f GOPS, oracle qgemm (exact accumulation + "
      "exact requantize) %.2f GOPS, ratio %.3f\n",
      base, oracle, base > 0 ? oracle / base : 0.0);
  const double all_cores = reporter.value("BM_OracleQGemmRequantizedAllCores") / 1e9;
  std::printf("oracle qgemm on %u threads (wall time) %.2f GOPS: %.2fx its one-thread speed\n",
              std::max(1u, std::thread::hardware_concurrency()), all_cores, oracle > 0 ? all_cores / oracle : 0.0);
  if (onednn > 0)
    std::printf("oneDNN u8 x s8 -> s32 matmul %.2f GOPS; oracle / oneDNN %.3f\n", onednn, oracle / onednn);
  benchmark::Shutdown();
  return 0;
}
