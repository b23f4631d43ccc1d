// Helpers the cpu-ref tests share (cpu_ref_claims_test.cpp, cpu_ref_gemm_test.cpp).
#pragma once

#include "qconform/qparams.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <vector>

namespace qc::testing {

inline QuantParams per_tensor(double scale, std::int64_t zp = 0, DType scale_dtype = DType::f32) {
  QuantParams p;
  p.scales = {scale};
  p.zero_points = {zp};
  p.scale_dtype = scale_dtype;
  return p;
}

inline std::vector<std::int64_t> int_values(const Tensor& y) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < y.size(); ++i) v.push_back(y.get_int(i));
  return v;
}

}  // namespace qc::testing
