// vnni kernel throughput against plain int32 loops measured in the same run. Prints each benchmark
// (Google Benchmark, with a GOPS counter: 2·M·N·K operations per call) and then the ratios:
//   GEMM   M = N = K = 1024, s8 activations (+128 shift), s8 weights, requantized s8 output
//          (and int32 output), each ISA / the plain i-k-j int32 triple loop (int32 output);
//   conv   1x56x56x64 -> 64, 3x3, pad 1 (a ResNet layer: M = 3136, N = 64, K = 576), implicit
//          GEMM and im2col, each ISA / a plain direct NHWC int32 convolution loop.
// The plain loops are compiled with the project's flags (baseline x86-64, -O3: GCC vectorizes them
// with SSE2); an ISA this CPU lacks is reported as an error row and left out of the ratios.
#include "backends/vnni/vnni.hpp"
#include "benchmarks/baselines.hpp"
#include "benchmarks/ratio_reporter.hpp"
#include "qconform/parallel.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace qc::vnni;

constexpr std::int64_t kGemm = 1024;

struct ConvShape {
  std::int64_t h = 56, w = 56, c = 64, oc = 64, k = 3, pad = 1;
};

template <class T>
std::vector<T> random_bytes(std::size_t n, int lo, int hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

void set_gops(benchmark::State& state, double ops) {
  state.counters["GOPS"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- Baselines -------------------------------------------------------------------------------

// benchmarks/baselines.cpp, built -O3 -march=native.
void BM_PlainInt32Gemm(benchmark::State& state) {
  const std::int64_t n = kGemm;
  const auto a = random_bytes<std::uint8_t>(static_cast<std::size_t>(n * n), 0, 255, 1);
  const auto b = random_bytes<std::int8_t>(static_cast<std::size_t>(n * n), -128, 127, 2);
  std::vector<std::int32_t> c(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    qc::bench::gemm_u8s8_s32(a.data(), b.data(), n, n, n, c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_gops(state, 2.0 * n * n * n);
}

void BM_PlainInt32Conv(benchmark::State& state) {
  const ConvShape s;
  const auto x = random_bytes<std::uint8_t>(static_cast<std::size_t>(s.h * s.w * s.c), 0, 255, 3);
  const auto w = random_bytes<std::int8_t>(static_cast<std::size_t>(s.oc * s.c * s.k * s.k), -128, 127, 4);  // OIHW
  // The plain loop reads weights as [kh][kw][c][oc] so its innermost loop is unit-stride.
  std::vector<std::int32_t> wt(w.size());
  for (std::int64_t o = 0; o < s.oc; ++o)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t t = 0; t < s.k * s.k; ++t)
        wt[static_cast<std::size_t>((t * s.c + c) * s.oc + o)] =
            w[static_cast<std::size_t>((o * s.c + c) * s.k * s.k + t)];
  std::vector<std::int32_t> y(static_cast<std::size_t>(s.h * s.w * s.oc));
  for (auto _ : state) {
    qc::bench::conv_nhwc_u8s8_s32(x.data(), wt.data(), s.h, s.w, s.c, s.oc, s.k, s.pad, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_gops(state, 2.0 * s.h * s.w * s.oc * s.c * s.k * s.k);
}

// ---- Kernels ---------------------------------------------------------------------------------

bool skip_if_missing(benchmark::State& state, Isa isa) {
  if (const auto missing = missing_feature(isa)) {
    state.SkipWithError(("this CPU lacks " + *missing).c_str());
    return true;
  }
  return false;
}

// On `threads` worker threads (qconform/parallel.hpp): 1 for the CPU-time ratios to the plain loop.
template <class Out>
void run_gemm(benchmark::State& state, Isa isa, OutputKind kind, int threads = 1) {
  if (skip_if_missing(state, isa)) return;
  qc::set_worker_threads(threads);
  const std::int64_t n = kGemm;
  const auto a = random_bytes<std::int8_t>(static_cast<std::size_t>(n * n), -128, 127, 1);
  const auto b = random_bytes<std::int8_t>(static_cast<std::size_t>(n * n), -128, 127, 2);
  GemmParams p;
  p.n = n;
  p.k = n;
  p.quant.a_type = ActivationType::s8;
  p.quant.a_zero_point = 3;
  p.quant.a_scale = 0.02f;
  p.quant.w_scales.assign(static_cast<std::size_t>(n), 0.001f);
  p.quant.bias.assign(static_cast<std::size_t>(n), 100);
  p.quant.output = {kind, 0.5f, -2, std::nullopt, std::nullopt};
  const PackedWeights w = pack_weights(p, b, isa);
  std::vector<Out> c(static_cast<std::size_t>(n * n));
  for (auto _ : state) {
    gemm(w, n, a.data(), n, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_gops(state, 2.0 * n * n * n);
  qc::set_worker_threads(0);
}

void run_conv(benchmark::State& state, Isa isa, ConvStrategy strategy) {
  if (skip_if_missing(state, isa)) return;
  qc::set_worker_threads(1);
  const ConvShape s;
  const auto x = random_bytes<std::int8_t>(static_cast<std::size_t>(s.h * s.w * s.c), -128, 127, 3);
  const auto w = random_bytes<std::int8_t>(static_cast<std::size_t>(s.oc * s.c * s.k * s.k), -128, 127, 4);
  Conv2dParams p;
  p.height = s.h;
  p.width = s.w;
  p.channels = s.c;
  p.out_channels = s.oc;
  p.kernel_h = p.kernel_w = s.k;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = s.pad;
  p.strategy = strategy;
  p.quant.a_type = ActivationType::s8;
  p.quant.a_zero_point = -5;
  p.quant.a_scale = 0.02f;
  p.quant.w_scales.assign(static_cast<std::size_t>(s.oc), 0.001f);
  p.quant.output = {OutputKind::s8, 0.5f, 0, std::nullopt, std::nullopt};
  const PackedConv2d pw = pack_conv2d(p, w, isa);
  std::vector<std::int8_t> y(static_cast<std::size_t>(s.h * s.w * s.oc));
  for (auto _ : state) {
    conv2d(pw, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_gops(state, 2.0 * s.h * s.w * s.oc * s.c * s.k * s.k);
  qc::set_worker_threads(0);
}

}  // namespace

int main(int argc, char** argv) {
  qc::bench::initialize(&argc, argv);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  benchmark::RegisterBenchmark("PlainInt32Gemm/1024", BM_PlainInt32Gemm)->Unit(benchmark::kMillisecond);
  for (Isa isa : kAllIsas) {
    const std::string n(name(isa));
    benchmark::RegisterBenchmark(("GemmS8/1024/" + n).c_str(), [isa](benchmark::State& s) {
      run_gemm<std::int8_t>(s, isa, OutputKind::s8);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("GemmInt32/1024/" + n).c_str(), [isa](benchmark::State& s) {
      run_gemm<std::int32_t>(s, isa, OutputKind::int32);
    })->Unit(benchmark::kMillisecond);
    // Every core, in wall time: its ratio to GemmS8 on one thread is the speed-up.
    benchmark::RegisterBenchmark(
        ("GemmS8AllCores/1024/" + n).c_str(),
        [isa, cores](benchmark::State& s) { run_gemm<std::int8_t>(s, isa, OutputKind::s8, cores); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("PlainInt32Conv/56x56x64x64_3x3", BM_PlainInt32Conv)->Unit(benchmark::kMillisecond);
  for (Isa isa : kAllIsas) {
    const std::string n(name(isa));
    benchmark::RegisterBenchmark(("ConvImplicit/56x56x64x64_3x3/" + n).c_str(), [isa](benchmark::State& s) {
      run_conv(s, isa, ConvStrategy::implicit_gemm);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("ConvIm2col/56x56x64x64_3x3/" + n).c_str(), [isa](benchmark::State& s) {
      run_conv(s, isa, ConvStrategy::im2col);
    })->Unit(benchmark::kMillisecond);
  }

  qc::bench::RatioReporter reporter("GOPS");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto ratios = [&](const char* base, const char* prefix1, const char* prefix2, const char* prefix3) {
    const double b = reporter.value(base);
    if (b <= 0) return;
    std::printf("\nGOPS and ratio to %s (%.2f GOPS, same run):\n", base, b);
    for (const auto& [name, g] : reporter.values()) {
      const bool match =
          name.rfind(prefix1, 0) == 0 || name.rfind(prefix2, 0) == 0 || (prefix3 && name.rfind(prefix3, 0) == 0);
      if (match) std::printf("  %-42s %8.1f GOPS  %7.1fx\n", name.c_str(), g, g / b);
    }
  };
  ratios("PlainInt32Gemm/1024", "GemmS8/", "GemmInt32/", nullptr);
  ratios("PlainInt32Conv/56x56x64x64_3x3", "ConvImplicit/", "ConvIm2col/", nullptr);
  std::printf("\nGEMM 1024^3, s8 output, on %d threads (wall time) against one thread:\n", cores);
  for (Isa isa : kAllIsas) {
    const std::string n(name(isa));
    const double one = reporter.value("GemmS8/1024/" + n), all = reporter.value("GemmS8AllCores/1024/" + n);
    if (one > 0 && all > 0) std::printf("  %-12s %8.1f GOPS  %5.2fx\n", n.c_str(), all, all / one);
  }
  benchmark::Shutdown();
  return 0;
}
