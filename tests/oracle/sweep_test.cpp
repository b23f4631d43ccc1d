// The streamed sweep against the materialized one: every f16 bit pattern quantized on the slow
// (rational) path as one tensor, and its counts, range, differences and digest summed here, must
// be what sweep_quantize reports from its chunks on any number of threads.
#include "oracles/sweep.hpp"
#include "cases/generators.hpp"
#include "oracles/presets.hpp"
#include "oracles/quantize.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace qc {
namespace {

// The digest as docs/oracle.md defines it: FNV-1a's 64-bit step on little-endian words of each
// chunk's output bytes (the last word zero-padded), then on the chunk digests in order.
std::uint64_t expected_digest(const Tensor& q, std::int64_t chunk) {  // chunk: outputs per chunk
  constexpr std::uint64_t offset = 0xcbf29ce484222325ull, prime = 0x100000001b3ull;
  const auto bytes = q.bytes();
  const std::size_t per_chunk = bytes.size() / static_cast<std::size_t>(q.size() / chunk);
  std::uint64_t total = offset;
  for (std::size_t c = 0; c < bytes.size(); c += per_chunk) {
    std::uint64_t h = offset;
    for (std::size_t i = 0; i < per_chunk; i += 8) {
      std::uint64_t w = 0;
      for (std::size_t b = 0; b < 8 && i + b < per_chunk; ++b)
        w |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(bytes[c + i + b])) << (8 * b);
      h = (h ^ w) * prime;
    }
    total = (total ^ h) * prime;
  }
  return total;
}

TEST(QuantizeSweep, EqualsTheMaterializedSlowPath) {
  Tensor x(DType::f16, Shape{65536});
  fill_exhaustive(x);  // bit-pattern order
  QuantParams p;
  p.scales = {0.0999755859375};  // an f16 scale: f16 compute under onnx's scale_type
  p.scale_dtype = DType::f16;
  p.zero_points = {3};
  const QuantizePolicy onnx = find_preset("onnx")->quantize_for(DType::f16);
  const QuantizeResult a = quantize(x, p, DType::i8, onnx, OraclePath::slow, true);
  // ORT's f16 path casts to int32 (inf becomes INT32_MIN + zp, so -128): differs in a chunk with
  // open NaN outputs; ties away from zero differ in chunks where every output is specified.
  QuantizePolicy rna = onnx;
  rna.rounding = RoundingMode::rna;
  for (const QuantizePolicy& other : {find_preset("ort-cpu")->quantize_for(DType::f16), rna}) {
    const QuantizeResult b = quantize(x, p, DType::i8, other, OraclePath::slow, true);
    std::array<std::uint64_t, kLabelCount> labels{};
    std::uint64_t open = 0, differ = 0;
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    std::vector<std::uint64_t> first;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      ++labels[static_cast<std::size_t>(a.labels[u])];
      if (!a.specified[u]) {
        ++open;
        continue;
      }
      lo = std::min(lo, a.q.get_int(i));
      hi = std::max(hi, a.q.get_int(i));
      if (b.specified[u] && a.q.get_int(i) != b.q.get_int(i)) {
        ++differ;
        if (first.size() < 5) first.push_back(static_cast<std::uint64_t>(i));
      }
    }
    ASSERT_GT(differ, 0u);
    for (const int threads : {1, 3}) {
      SweepOptions o;
      o.threads = threads;
      o.chunk_bits = 10;  // 64 chunks, so the folding and the merge in order are exercised
      o.max_examples = 5;
      const QuantizeSweep s = sweep_quantize(DType::f16, p, DType::i8, onnx, &other, o);
      SCOPED_TRACE("threads " + std::to_string(threads) + ", " + std::to_string(differ) + " differences");
      EXPECT_EQ(s.count, 65536u);
      EXPECT_EQ(s.labels, labels);
      EXPECT_EQ(s.open, open);
      EXPECT_EQ(s.q_min, lo);
      EXPECT_EQ(s.q_max, hi);
      EXPECT_EQ(s.differ, differ);
      EXPECT_EQ(s.slow_elements, 0u);
      EXPECT_EQ(s.digest, expected_digest(a.q, 1024));
      ASSERT_EQ(s.first.size(), first.size());
      for (std::size_t k = 0; k < first.size(); ++k) {
        const auto i = static_cast<std::int64_t>(first[k]);
        EXPECT_EQ(s.first[k].bits, first[k]);
        EXPECT_EQ(s.first[k].q, a.q.get_int(i));
        EXPECT_EQ(s.first[k].q_vs, b.q.get_int(i));
      }
    }
  }
}

TEST(QuantizeSweep, RefusesWhatItCannotSweep) {
  QuantParams p;
  p.scales = {1};
  p.zero_points = {0};
  const QuantizePolicy onnx = find_preset("onnx")->quantize;
  EXPECT_THROW(sweep_quantize(DType::f64, p, DType::i8, onnx), InputError);  // 2^64 inputs
  EXPECT_THROW(sweep_quantize(DType::i8, p, DType::i8, onnx), InputError);
  p.scales = {1, 2};
  p.zero_points = {0, 0};
  p.axis = 0;
  EXPECT_THROW(sweep_quantize(DType::f16, p, DType::i8, onnx), InputError);
}

}  // namespace
}  // namespace qc
