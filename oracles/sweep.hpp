// Every value of a float format through quantize, streamed: the exhaustive input sweep. f32's
// 2^32 bit patterns would take 16 GiB as one tensor, so the sweep quantizes them in chunks on
// every core and keeps only what is summed over them: label counts, the output range, a digest of
// the outputs in bit-pattern order and, against a second spec, where the two differ.
#pragma once

#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "qconform/qparams.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace qc {

// An input on which the two specs of a sweep give different outputs.
struct SweepDifference {
  std::uint64_t bits = 0;  // the input's bit pattern in the swept format
  double x = 0;
  std::int64_t q = 0, q_vs = 0;
  Label label = Label::clear, label_vs = Label::clear;
};

struct QuantizeSweep {
  DType input = DType::f32, output = DType::i8;
  std::uint64_t count = 0;                          // inputs swept: 2^bits of the input format
  std::array<std::uint64_t, kLabelCount> labels{};  // per label, under the first spec
  std::uint64_t open = 0;                           // outputs the spec leaves open (NaN under 'unspecified')
  std::uint64_t slow_elements = 0;                  // decided on the rational path
  std::int64_t q_min = 0, q_max = 0;                // the output range met on specified elements
  // A digest of the output bytes in bit-pattern order: FNV-1a's step (64-bit) on little-endian
  // words of each chunk's outputs (2^20 by default), then on the chunks' digests in order. The same for every
  // thread count, so two sweeps (two machines, two versions) agree when their digests do.
  std::uint64_t digest = 0;
  // Against a second spec: the inputs whose outputs differ (an output either spec leaves open never
  // differs), and the first of them in bit-pattern order.
  std::uint64_t differ = 0;
  std::vector<SweepDifference> first;
};

struct SweepOptions {
  int threads = 0;                // 0: worker_threads() (QCONFORM_THREADS, else every core)
  std::size_t max_examples = 10;  // differences kept in `first`
  int chunk_bits = 20;            // inputs per chunk: 2^chunk_bits (fewer for a smaller format)
};

// Quantizes every bit pattern of the float format `input` (at most 32 bits: f32, f16, bf16, the
// f8 formats) with per-tensor parameters `p` into `out`, under `spec` and, unless null, `vs`.
QuantizeSweep sweep_quantize(DType input, const QuantParams& p, DType out, const QuantizePolicy& spec,
                             const QuantizePolicy* vs = nullptr, const SweepOptions& options = {});

}  // namespace qc
