// Small builders shared by the quantized GEMM/conv/pipeline tests.
#pragma once

#include "oracles/qlinear.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace qc::test {

inline Tensor ints(DType t, Shape s, const std::vector<std::int64_t>& v) {
  Tensor x(t, std::move(s));
  for (std::size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<std::int64_t>(i), v[i]);
  return x;
}

inline Tensor floats(DType t, Shape s, const std::vector<double>& v) {
  Tensor x(t, std::move(s));
  for (std::size_t i = 0; i < v.size(); ++i) x.set_double(static_cast<std::int64_t>(i), v[i]);
  return x;
}

inline std::vector<std::int64_t> int_values(const Tensor& t) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < t.size(); ++i) v.push_back(t.get_int(i));
  return v;
}

inline std::vector<double> float_values(const Tensor& t) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < t.size(); ++i) v.push_back(t.get_double(i));
  return v;
}

inline QuantParams per_tensor(double scale, std::int64_t zp = 0) {
  QuantParams p;
  p.scales = {scale};
  p.zero_points = {zp};
  return p;
}

inline QuantParams per_axis(int axis, std::vector<double> scales, std::vector<std::int64_t> zps = {}) {
  QuantParams p;
  p.axis = axis;
  p.scales = std::move(scales);
  p.zero_points = std::move(zps);
  return p;
}

inline QuantParams blocked(int axis, std::int64_t block, std::vector<double> scales) {
  QuantParams p = per_axis(axis, std::move(scales));
  p.block_size = block;
  return p;
}

inline OutputStage int32_out() { return {OutputKind::int32, DType::i32, 1.0, 0, std::nullopt}; }
inline OutputStage float_out(DType t) { return {OutputKind::dequantized, t, 1.0, 0, std::nullopt}; }
inline OutputStage requant_out(double scale, std::int64_t zp, std::optional<IntRange> clamp = std::nullopt,
                               DType format = DType::i8) {
  return {OutputKind::requantized, format, scale, zp, clamp};
}

inline QGemmPolicy ideal_policy() {
  QGemmPolicy p;
  p.requantize.scheme = RequantizeScheme::ideal;  // round(v / s_out) + zp exactly, RNE
  return p;
}

// About a third of a result's elements, in random order: what qgemm/qconv2d(..., &only) are given.
inline std::vector<std::int64_t> some_elements(const Tensor& y, std::mt19937_64& rng) {
  std::vector<std::int64_t> only;
  for (std::int64_t e = 0; e < y.size(); ++e)
    if (rng() % 3 == 0) only.push_back(e);
  std::shuffle(only.begin(), only.end(), rng);
  return only;
}

// `part` (computed for elements `only`) against the whole result at those elements, bit for bit and
// label for label. Returns how many elements it compared.
inline int expect_selected_equal_whole(const QLinearResult& part, const QLinearResult& whole,
                                       const std::vector<std::int64_t>& only, int trial) {
  EXPECT_EQ(part.y.shape(), (Shape{static_cast<std::int64_t>(only.size())})) << "trial " << trial;
  if (part.y.size() != static_cast<std::int64_t>(only.size())) return 0;
  for (std::size_t j = 0; j < only.size(); ++j) {
    EXPECT_EQ(part.y.bits(static_cast<std::int64_t>(j)), whole.y.bits(only[j]))
        << "trial " << trial << ", element " << only[j];
    EXPECT_EQ(part.labels[j], whole.labels[static_cast<std::size_t>(only[j])]) << "trial " << trial;
  }
  return static_cast<int>(only.size());
}

}  // namespace qc::test
