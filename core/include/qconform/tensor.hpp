// A dense, row-major tensor of one DType. Float formats narrower than f32 (f16, bf16, f8) are
// stored as their bit patterns; i4/u4 one value per byte (packing is an explicit op).
#pragma once

#include "qconform/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qc {

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType t, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t size() const { return size_; }
  int rank() const { return static_cast<int>(shape_.size()); }

  // Raw element bits (float bit pattern, or two's-complement integer bits zero-extended).
  std::uint64_t bits(std::int64_t i) const;
  void set_bits(std::int64_t i, std::uint64_t b);

  // Integer formats: the value. Float formats: not allowed.
  std::int64_t get_int(std::int64_t i) const;
  void set_int(std::int64_t i, std::int64_t v);

  // Any format: the exact value as a double (every supported format fits exactly).
  double get_double(std::int64_t i) const;
  // Float formats: v must be exactly representable in the format (checked by the writer).
  void set_double(std::int64_t i, double v);

  std::span<std::byte> bytes() { return data_; }
  std::span<const std::byte> bytes() const { return data_; }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(data_.data());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_.data());
  }

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::int64_t size_ = 0;
  std::vector<std::byte> data_;
};

// Unravel a flat row-major index into coordinates.
void unravel(std::int64_t flat, const Shape& shape, std::vector<std::int64_t>& coords);

}  // namespace qc
