// What the requantize fast path (requantize_fast.cpp) and the definitions and tensor driver
// (requantize.cpp) share. Internal to the oracle: nothing outside oracles/ includes it.
#pragma once

#include "oracles/requantize.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace qc::requantize_detail {

inline constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

using Range = OutputRange;
// The policy's output range (narrow range, clip); InputError names requantize.
Range output_range(DType out, const RequantizePolicy& p);
// A scale as an exact value.
ExactFloat scale_value(double s);

// float_multiplier and xnnpack_fp32: each IEEE operation rounded once, in the product format.
struct FloatRecipe {
  Arith product;
  ZeroPointAdd zero_point;
  RoundingMode rounding;
  Clamp clamp;
  bool per_op;
};

// The recipe of `m`'s scheme under `p`: xnnpack_fp32's own (f32, clamp in float, lrintf), or the
// policy's product format, zero-point placement, rounding and clamp.
FloatRecipe float_recipe(const RequantizeMultiplier& m, const RequantizePolicy& p);

// One channel (a multiplier and a zero point) prepared for the fast path.
struct FastChannel;
struct FastChannelDeleter {
  void operator()(FastChannel* c) const;
};
using FastChannelPtr = std::unique_ptr<FastChannel, FastChannelDeleter>;
// `m` must outlive the channel.
FastChannelPtr make_fast_channel(const RequantizeMultiplier& m, std::int64_t zp, DType out, const RequantizePolicy& p);
// Runs the channel's kernel over elements [begin, end) of acc into q. labels/unsettled: null when no
// labels are wanted; else the tensor's labels and a scratch flag per element. The elements the fast
// path cannot decide are appended to `slow`, for the definition.
void run_fast_channel(const FastChannel& ch, const RequantizePolicy& p, DType out, const std::int32_t* acc, Tensor& q,
                      Label* labels, std::uint8_t* unsettled, std::int64_t begin, std::int64_t end,
                      std::vector<std::int64_t>& slow);

}  // namespace qc::requantize_detail
