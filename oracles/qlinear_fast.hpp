// Fast paths of the qgemm/qconv2d output stage (qlinear.cpp) that reuse other ops' machinery.
// Internal to the oracle: nothing outside oracles/ includes it.
#pragma once

#include "oracles/int_accumulate.hpp"
#include "oracles/labels.hpp"
#include "oracles/policy.hpp"
#include "oracles/qlinear.hpp"
#include "oracles/requantize.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace qc::qlinear_fast {

// A requantized output with one accumulator per element (one segment, no float bias), as
// qlinear.cpp's output stage holds it.
struct RequantizeStage {
  const ScaledAccumulators* acc = nullptr;
  const std::vector<double>* a_scales = nullptr;  // A's and B's scales, indexed as acc's tables index them
  const std::vector<double>* b_scales = nullptr;
  const std::vector<std::int64_t>* int_bias = nullptr;   // per channel; empty: none
  Accumulation accumulation = Accumulation::int32_wrap;  // how the int32 bias is added
  double out_scale = 1.0;
  DType scale_dtype = DType::f32;
  std::int64_t zero_point = 0;
  const RequantizePolicy* policy = nullptr;  // with the fused clamp already in its clip
};

// Every element of y under s.policy's scheme through the standalone requantize op's fast channels
// (requantize_detail.hpp): the elements are grouped by their (A scale, B scale) pair, each pair's
// accumulators gathered into an int32 buffer and run through the pair's channel, and the values
// and labels scattered back. `definition` receives, in increasing order and once per thread, the
// elements left to the per-element definition: those the channels do not decide, overflowed
// accumulations, accumulators outside int32 (int64 sums), and those of pairs too rare to be worth
// a channel. It runs on the thread that owns those elements and may write y and labels there.
// Returns how many elements went to `definition`.
std::int64_t requantize_by_pairs(const RequantizeStage& s, Tensor& y, std::vector<Label>& labels,
                                 const std::function<void(const std::vector<std::int64_t>&)>& definition);

}  // namespace qc::qlinear_fast
