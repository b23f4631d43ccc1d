// The oracle's qgemm (u8 x s8, exact integer accumulation, exact requantization to i8 under `onnx`)
// and its integer stage alone (accumulate_gemm: the exact int64 sums of (a - 128) * b, the packed
// kernel of oracles/int_gemm.hpp), at 256^3 and 1024^3, on 1 and 2 threads, in GOPS (2*M*N*K per
// second), beside a plain int32 GEMM loop built -O3 -march=native and, where installed, oneDNN's
// u8 x s8 -> s32 matmul, in one process; ratios of medians (benchmarks/README.md).
//
// Threads: the oracle's are set per benchmark (1 or 2, qconform/parallel.hpp); oneDNN uses its
// OpenMP threads (OMP_NUM_THREADS; run with OMP_NUM_THREADS=1 for its one-thread speed). ISA: the
// oracle takes QCONFORM_ORACLE_ISA (avx2 forces its AVX2 kernel), oneDNN ONEDNN_MAX_CPU_ISA (AVX2).
// One-thread figures are medians of CPU time; two-thread figures are wall time (their speed-up is
// the ratio to the one-thread figure of the same benchmark, both best measured on an idle machine).
#include "benchmarks/baselines.hpp"
#include "benchmarks/ratio_reporter.hpp"
#include "harness/evaluate.hpp"
#include "oracles/int_accumulate.hpp"
#include "oracles/int_gemm.hpp"
#include "oracles/presets.hpp"
#include "oracles/qgemm.hpp"
#include "qconform/parallel.hpp"

#include <benchmark/benchmark.h>
#ifdef QCONFORM_BENCH_ONEDNN
#include <dnnl.hpp>
#endif

#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace {

struct Operands {
  std::int64_t n;
  qc::Tensor a, b;                      // [n, n] u8 and [n, n] s8 (B as [K, N], row-major)
  std::vector<std::int32_t> a32, bt32;  // the same as raw int32 values, B transposed: IntGemmProblem's layout
  explicit Operands(std::int64_t size) : n(size), a(qc::DType::u8, {size, size}), b(qc::DType::i8, {size, size}) {
    std::uint64_t s = 7;
    auto next = [&] { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    for (std::int64_t i = 0; i < a.size(); ++i) a.set_int(i, static_cast<std::int64_t>(next() % 256));
    for (std::int64_t i = 0; i < b.size(); ++i) b.set_int(i, static_cast<std::int64_t>(next() % 255) - 127);
    a32.resize(static_cast<std::size_t>(n * n));
    bt32.resize(static_cast<std::size_t>(n * n));
    for (std::int64_t i = 0; i < n * n; ++i) a32[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(a.get_int(i));
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = 0; j < n; ++j)
        bt32[static_cast<std::size_t>(j * n + k)] = static_cast<std::int32_t>(b.get_int(k * n + j));
  }
};

const Operands& operands(std::int64_t n) {
  static std::map<std::int64_t, std::unique_ptr<Operands>> cache;
  auto& o = cache[n];
  if (!o) o = std::make_unique<Operands>(n);
  return *o;
}

void set_gops(benchmark::State& state, std::int64_t n) {
  state.counters["GOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// The baseline: u8 x s8 accumulated in int32 (benchmarks/baselines.cpp, built -O3 -march=native).
void BM_PlainInt32Gemm(benchmark::State& state) {
  const Operands& o = operands(state.range(0));
  std::vector<std::int32_t> c(static_cast<std::size_t>(o.n * o.n));
  for (auto _ : state) {
    qc::bench::gemm_u8s8_s32(o.a.data<std::uint8_t>(), o.b.data<std::int8_t>(), o.n, o.n, o.n, c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_gops(state, o.n);
}
BENCHMARK(BM_PlainInt32Gemm)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

#ifdef QCONFORM_BENCH_ONEDNN
// The peer: oneDNN's u8 x s8 -> s32 matmul (no zero points, no scales: its fastest int8 GEMM) on
// its OpenMP threads, in the CPU time of the whole process (its GOPS are per CPU-second).
void BM_OnednnMatmulU8S8S32(benchmark::State& state) {
  using dnnl::memory;
  const Operands& o = operands(state.range(0));
  const std::int64_t n = o.n;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const memory::desc a_md({n, n}, memory::data_type::u8, memory::format_tag::ab);
  const memory::desc b_md({n, n}, memory::data_type::s8, memory::format_tag::ab);
  const memory::desc c_md({n, n}, memory::data_type::s32, memory::format_tag::ab);
  const dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  std::vector<std::int32_t> c(static_cast<std::size_t>(n * n));
  memory a_mem(a_md, eng, const_cast<std::uint8_t*>(o.a.data<std::uint8_t>()));
  memory b_mem(b_md, eng, const_cast<std::int8_t*>(o.b.data<std::int8_t>()));
  memory c_mem(c_md, eng, c.data());
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
    benchmark::DoNotOptimize(c.data());
  }
  set_gops(state, n);
}
BENCHMARK(BM_OnednnMatmulU8S8S32)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
#endif

// The oracle's integer stage: accumulate_gemm over A's u8 minus zero point 128 and B's s8, int32_wrap
// (what `onnx` accumulates; every sum provably fits, so the exact int64 sums are the result).
void oracle_sums(benchmark::State& state) {
  const Operands& o = operands(state.range(0));
  qc::set_worker_threads(static_cast<int>(state.range(1)));
  qc::IntGemmProblem p;
  p.rows = p.cols = p.depth = o.n;
  p.a = o.a32;
  p.bt = o.bt32;
  p.a_zero_points.assign(static_cast<std::size_t>(o.n), 128);
  p.b_zero_points.assign(static_cast<std::size_t>(o.n), 0);
  for (auto _ : state) {
    qc::IntGemmAccumulators acc =
        qc::accumulate_gemm(p, qc::Accumulation::int32_wrap, qc::ZeroPointCorrection::subtract_first);
    benchmark::DoNotOptimize(acc.value.data());
  }
  set_gops(state, o.n);
  state.SetLabel(qc::int_gemm::name(qc::int_gemm::chosen()));
  qc::set_worker_threads(0);
}

// The whole qgemm: quantized operands in, requantized i8 out.
void oracle_qgemm(benchmark::State& state) {
  const Operands& o = operands(state.range(0));
  qc::set_worker_threads(static_cast<int>(state.range(1)));
  qc::QGemmOp op;
  op.a.values = o.a;
  op.a.format = qc::DType::u8;
  op.a.params.scales = {static_cast<float>(0.02)};
  op.a.params.zero_points = {128};
  op.b.values = o.b;
  op.b.format = qc::DType::i8;
  op.b.shape = o.b.shape();
  op.b.params.axis = 1;
  for (std::int64_t n = 0; n < o.n; ++n) op.b.params.scales.push_back(static_cast<float>(0.001 * (1 + n % 7)));
  op.output.kind = qc::OutputKind::requantized;
  op.output.format = qc::DType::i8;
  op.output.scale = 0.5;
  const qc::QGemmPolicy policy = qc::qgemm_policy(*qc::find_preset("onnx"), qc::DType::u8, qc::LinearOp::gemm);
  for (auto _ : state) {
    qc::QGemmResult r = qc::qgemm(op, policy);
    benchmark::DoNotOptimize(r.y.bytes().data());
  }
  set_gops(state, o.n);
  qc::set_worker_threads(0);
}

// Args: size, threads. One thread in CPU time like the baselines; two in wall time.
void BM_OracleIntSums(benchmark::State& state) { oracle_sums(state); }
void BM_OracleIntSums2T(benchmark::State& state) { oracle_sums(state); }
void BM_OracleQGemm(benchmark::State& state) { oracle_qgemm(state); }
void BM_OracleQGemm2T(benchmark::State& state) { oracle_qgemm(state); }
BENCHMARK(BM_OracleIntSums)->Args({256, 1})->Args({1024, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleIntSums2T)->Args({256, 2})->Args({1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQGemm)->Args({256, 1})->Args({1024, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleQGemm2T)->Args({256, 2})->Args({1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  qc::bench::initialize(&argc, argv);
  qc::bench::RatioReporter reporter("GOPS");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\ninteger GEMM build: %s (QCONFORM_ORACLE_ISA caps it)\n", qc::int_gemm::name(qc::int_gemm::chosen()));
  // Each figure and ratio only where its benchmarks ran (a --benchmark_filter leaves some out).
  auto gops = [](double x) {
    char text[32] = "not run";
    if (x > 0) std::snprintf(text, sizeof text, "%.1f", x);
    return std::string(text);
  };
  auto ratio = [](double x, double y, const char* of) {
    char text[64] = "";
    if (x > 0 && y > 0) std::snprintf(text, sizeof text, " = %.3f x %s", x / y, of);
    return std::string(text);
  };
  for (const int n : {256, 1024}) {
    const std::string s = "/" + std::to_string(n);
    const double base = reporter.value("BM_PlainInt32Gemm" + s) / 1e9;
    const double onednn = reporter.value("BM_OnednnMatmulU8S8S32" + s) / 1e9;
    const double sums = reporter.value("BM_OracleIntSums" + s + "/1") / 1e9;
    const double sums2 = reporter.value("BM_OracleIntSums2T" + s + "/2") / 1e9;
    const double qgemm = reporter.value("BM_OracleQGemm" + s + "/1") / 1e9;
    const double qgemm2 = reporter.value("BM_OracleQGemm2T" + s + "/2") / 1e9;
    if (base + onednn + sums + sums2 + qgemm + qgemm2 == 0) continue;
    std::printf("%d^3 u8 x s8 (GOPS per CPU-second): plain int32 loop %s, oneDNN %s\n", n, gops(base).c_str(),
                gops(onednn).c_str());
    std::printf("  oracle integer sums, 1 thread: %s%s%s; 2 threads %s%s\n", gops(sums).c_str(),
                ratio(sums, onednn, "oneDNN").c_str(), ratio(sums, base, "plain loop").c_str(), gops(sums2).c_str(),
                ratio(sums2, sums, "1 thread").c_str());
    std::printf("  oracle qgemm (sums + exact requantize), 1 thread: %s%s%s; 2 threads %s%s\n", gops(qgemm).c_str(),
                ratio(qgemm, onednn, "oneDNN").c_str(), ratio(qgemm, base, "plain loop").c_str(), gops(qgemm2).c_str(),
                ratio(qgemm2, qgemm, "1 thread").c_str());
  }
  benchmark::Shutdown();
  return 0;
}
