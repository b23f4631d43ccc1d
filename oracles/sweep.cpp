#include "oracles/sweep.hpp"

#include "oracles/quantize.hpp"
#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <mutex>
#include <thread>

namespace qc {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

// FNV-1a's step taken on 64-bit little-endian words instead of bytes (the last word zero-padded):
// one multiplication per 8 output bytes.
std::uint64_t fnv1a_words(std::uint64_t h, const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t w = 0;
    for (std::size_t b = 0; b < 8 && i + b < n; ++b) w |= std::uint64_t{p[i + b]} << (8 * b);
    h = (h ^ w) * kFnvPrime;
  }
  return h;
}

// What one chunk contributes; chunks are merged in order.
struct ChunkSum {
  std::array<std::uint64_t, kLabelCount> labels{};
  std::uint64_t open = 0, slow = 0, differ = 0;
  std::int64_t q_min = std::numeric_limits<std::int64_t>::max(), q_max = std::numeric_limits<std::int64_t>::min();
  std::uint64_t digest = kFnvOffset;
  std::vector<SweepDifference> first;
};

void fill_patterns(Tensor& x, DType input, std::uint64_t begin) {
  if (input == DType::f32) {
    auto* d = x.data<float>();
    for (std::int64_t i = 0; i < x.size(); ++i)
      d[i] = std::bit_cast<float>(static_cast<std::uint32_t>(begin + static_cast<std::uint64_t>(i)));
    return;
  }
  for (std::int64_t i = 0; i < x.size(); ++i)
    x.set_double(i, float_bits_to_double(input, begin + static_cast<std::uint64_t>(i)));
}

// One chunk's output range and differences, on the outputs' own type. Where every output is
// specified (the common case) the loops carry no per-element test and vectorize.
template <class Out>
void scan(const QuantizeResult& r, const QuantizeResult* rv, const Tensor& x, std::uint64_t base,
          std::size_t max_examples, ChunkSum& s) {
  const Out* q = r.q.data<Out>();
  const Out* qv = rv ? rv->q.data<Out>() : nullptr;
  const auto n = static_cast<std::size_t>(x.size());
  const auto example = [&](std::size_t i) {
    s.first.push_back({base + i, x.get_double(static_cast<std::int64_t>(i)), q[i], qv[i], r.labels[i], rv->labels[i]});
  };
  if (r.specified.all() && (!rv || rv->specified.all())) {
    Out lo = q[0], hi = q[0];
    for (std::size_t i = 0; i < n; ++i) {
      lo = std::min(lo, q[i]);
      hi = std::max(hi, q[i]);
    }
    s.q_min = lo;
    s.q_max = hi;
    if (!rv) return;
    for (std::size_t i = 0; i < n; ++i) s.differ += q[i] != qv[i] ? 1 : 0;
    for (std::size_t i = 0; i < n && s.differ > 0 && s.first.size() < max_examples; ++i)
      if (q[i] != qv[i]) example(i);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!r.specified[i]) {
      ++s.open;
      continue;
    }
    s.q_min = std::min<std::int64_t>(s.q_min, q[i]);
    s.q_max = std::max<std::int64_t>(s.q_max, q[i]);
    if (!rv || !rv->specified[i] || q[i] == qv[i]) continue;
    ++s.differ;
    if (s.first.size() < max_examples) example(i);
  }
}

}  // namespace

QuantizeSweep sweep_quantize(DType input, const QuantParams& p, DType out, const QuantizePolicy& spec,
                             const QuantizePolicy* vs, const SweepOptions& options) {
  if (!is_float(input) || info(input).bits > 32)
    throw InputError("sweep: the input format must be a float format of at most 32 bits (f32, f16, bf16, f8), not " +
                     std::string(name(input)));
  if (p.granularity() != Granularity::per_tensor)
    throw InputError("sweep: one scale and one zero point (per-tensor parameters)");
  const std::uint64_t total = std::uint64_t{1} << info(input).bits;
  validate(p, Shape{1}, out, "sweep");
  if (options.chunk_bits < 1 || options.chunk_bits > 24) throw InputError("sweep: chunk_bits must lie in [1, 24]");
  const std::uint64_t chunk = std::min<std::uint64_t>(total, std::uint64_t{1} << options.chunk_bits);
  const std::uint64_t chunks = total / chunk;
  std::vector<ChunkSum> sums(chunks);
  std::atomic<std::uint64_t> next{0};
  std::mutex error_mutex;
  std::string error;
  auto worker = [&] {
    Tensor x(input, Shape{static_cast<std::int64_t>(chunk)});
    QuantizeResult r, rv;
    for (std::uint64_t c = next++; c < chunks; c = next++) {
      try {
        fill_patterns(x, input, c * chunk);
        quantize(x, p, out, spec, r, OraclePath::fast, true);
        if (vs) quantize(x, p, out, *vs, rv, OraclePath::fast, true);
      } catch (const InputError& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error.empty()) error = e.what();
        next = chunks;
        return;
      }
      ChunkSum& s = sums[c];
      s.slow = static_cast<std::uint64_t>(r.slow_elements);
      s.digest = fnv1a_words(kFnvOffset, reinterpret_cast<const std::uint8_t*>(r.q.bytes().data()), r.q.bytes().size());
      for (const Label l : r.labels) ++s.labels[static_cast<std::size_t>(l)];
      switch (out) {
        case DType::i8:
        case DType::i4:
          scan<std::int8_t>(r, vs ? &rv : nullptr, x, c * chunk, options.max_examples, s);
          break;
        case DType::u8:
        case DType::u4:
          scan<std::uint8_t>(r, vs ? &rv : nullptr, x, c * chunk, options.max_examples, s);
          break;
        case DType::i16:
          scan<std::int16_t>(r, vs ? &rv : nullptr, x, c * chunk, options.max_examples, s);
          break;
        case DType::u16:
          scan<std::uint16_t>(r, vs ? &rv : nullptr, x, c * chunk, options.max_examples, s);
          break;
        default:
          scan<std::int32_t>(r, vs ? &rv : nullptr, x, c * chunk, options.max_examples, s);
          break;
      }
    }
  };
  const auto threads = static_cast<unsigned>(std::min<std::uint64_t>(
      chunks, static_cast<std::uint64_t>(options.threads > 0 ? options.threads : worker_threads())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (!error.empty()) throw InputError("sweep: " + error);

  QuantizeSweep res;
  res.input = input;
  res.output = out;
  res.count = total;
  res.digest = kFnvOffset;
  res.q_min = std::numeric_limits<std::int64_t>::max();
  res.q_max = std::numeric_limits<std::int64_t>::min();
  for (const ChunkSum& s : sums) {
    for (std::size_t l = 0; l < res.labels.size(); ++l) res.labels[l] += s.labels[l];
    res.open += s.open;
    res.slow_elements += s.slow;
    res.differ += s.differ;
    res.q_min = std::min(res.q_min, s.q_min);
    res.q_max = std::max(res.q_max, s.q_max);
    res.digest = (res.digest ^ s.digest) * kFnvPrime;
    for (const SweepDifference& d : s.first)
      if (res.first.size() < options.max_examples) res.first.push_back(d);
  }
  if (res.open == total) res.q_min = res.q_max = 0;
  return res;
}

}  // namespace qc
