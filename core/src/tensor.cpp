#include "qconform/tensor.hpp"

#include "qconform/error.hpp"

#include <cstring>

namespace qc {

std::int64_t numel(const Shape& s) {
  // Checked whatever the order of the dimensions: [0, 2^40, 2^40] has no element, but a product of
  // its dimensions left to right that skipped the zero would overflow.
  std::int64_t n = 1, nonzero = 1;
  for (std::int64_t d : s) {
    if (d < 0) throw InputError("shape " + shape_str(s) + " has a negative dimension");
    if (d != 0 && __builtin_mul_overflow(nonzero, d, &nonzero))
      throw InputError("shape " + shape_str(s) + " has too many elements");
    n *= d;  // cannot overflow: |n| <= nonzero
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Tensor::Tensor(DType t, Shape shape)
    : dtype_(t),
      shape_(std::move(shape)),
      size_(numel(shape_)),
      data_(static_cast<std::size_t>(size_) * static_cast<std::size_t>(info(t).storage_bytes)) {}

std::uint64_t Tensor::bits(std::int64_t i) const {
  const int w = info(dtype_).storage_bytes;
  std::uint64_t b = 0;
  std::memcpy(&b, data_.data() + i * w, static_cast<std::size_t>(w));  // little-endian host
  if (info(dtype_).bits == 4) b &= 0xF;
  return b;
}

void Tensor::set_bits(std::int64_t i, std::uint64_t b) {
  const int w = info(dtype_).storage_bytes;
  std::memcpy(data_.data() + i * w, &b, static_cast<std::size_t>(w));
}

std::int64_t Tensor::get_int(std::int64_t i) const {
  switch (dtype_) {
    case DType::i32:
      return data<std::int32_t>()[i];
    case DType::i16:
      return data<std::int16_t>()[i];
    case DType::u16:
      return data<std::uint16_t>()[i];
    case DType::i8:
    case DType::i4:
      return data<std::int8_t>()[i];
    case DType::u8:
    case DType::u4:
      return data<std::uint8_t>()[i];
    default:
      return static_cast<std::int64_t>(get_double(i));
  }
}

void Tensor::set_int(std::int64_t i, std::int64_t v) {
  switch (dtype_) {
    case DType::i32:
      data<std::int32_t>()[i] = static_cast<std::int32_t>(v);
      return;
    case DType::i16:
      data<std::int16_t>()[i] = static_cast<std::int16_t>(v);
      return;
    case DType::u16:
      data<std::uint16_t>()[i] = static_cast<std::uint16_t>(v);
      return;
    case DType::i8:
    case DType::i4:
      data<std::int8_t>()[i] = static_cast<std::int8_t>(v);
      return;
    case DType::u8:
    case DType::u4:
      data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v);
      return;
    default:
      set_double(i, static_cast<double>(v));
  }
}

double Tensor::get_double(std::int64_t i) const {
  switch (dtype_) {
    case DType::f64:
      return data<double>()[i];
    case DType::f32:
      return data<float>()[i];
    case DType::f16:
    case DType::bf16:
    case DType::f8e4m3fn:
    case DType::f8e5m2:
      return float_bits_to_double(dtype_, bits(i));
    default:
      return static_cast<double>(get_int(i));
  }
}

void Tensor::set_double(std::int64_t i, double v) {
  switch (dtype_) {
    case DType::f64:
      data<double>()[i] = v;
      return;
    case DType::f32:
      data<float>()[i] = static_cast<float>(v);
      return;
    case DType::f16:
    case DType::bf16:
    case DType::f8e4m3fn:
    case DType::f8e5m2:
      set_bits(i, double_to_float_bits(dtype_, v));
      return;
    default:
      set_int(i, static_cast<std::int64_t>(v));
  }
}

void unravel(std::int64_t flat, const Shape& shape, std::vector<std::int64_t>& coords) {
  coords.resize(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    coords[k] = flat % shape[k];
    flat /= shape[k];
  }
}

}  // namespace qc
