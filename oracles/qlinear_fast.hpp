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
#include <optional>
#include <string>
#include <vector>

namespace qc::qlinear_fast {

// hi + lo (a double-double) within `delta` of the exact value v: out's bits of v correctly rounded
// when v is provably farther than kNearTieDistance output ulps from every midpoint of out's grid;
// nullopt near midpoints, binade boundaries, zero, subnormal limits and overflow. delta = 0: hi + lo
// is v exactly (qlinear.cpp's one-segment dequantized output).
std::optional<std::uint64_t> clear_with_bound(double hi, double lo, double delta, DType out);

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

// A dequantized output with several K segments and/or a float bias: each element's recipe
// (qlinear.hpp: float(acc_s) * (float(s_a) * float(s_b)) per segment, summed in segment order, +
// float(bias), each operation rounded in the compute format, then cast RNE to the output format)
// in hardware f32 or f64, and the exact value v as an exact sum of doubles, which decides whether
// v is provably farther than kNearTieDistance output ulps from every midpoint: then the element is
// `clear` and the correctly rounded v is known. Anything else (a compute format other than f32,
// f64 or exact, scales whose product is not exact in double, accumulators beyond 2^53, a
// non-finite intermediate, values near a midpoint, a binade boundary, zero or overflow) is left to
// the definition.
class DequantizeFast {
 public:
  // `compute`: the compute format's name (Arith::name()); `float_bias`: per channel, exact values
  // of a float tensor (empty: none).
  DequantizeFast(std::string compute, DType out, const std::vector<Rational>& float_bias);
  // The output bits of one element from its policy accumulators and per-segment scales, and its
  // output channel (for the bias); nullopt: the definition decides (its label is `clear` otherwise).
  std::optional<std::uint64_t> element(const std::int64_t* acc, const double* sa, const double* sb,
                                       std::int64_t segments, std::int64_t channel) const;

 private:
  enum class Compute : std::uint8_t { none, exact, f32, f64 } compute_ = Compute::none;
  DType out_;
  std::vector<double> bias_;  // per channel; empty: none
};

}  // namespace qc::qlinear_fast
