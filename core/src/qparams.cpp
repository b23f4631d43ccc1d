#include "qconform/qparams.hpp"

#include "qconform/error.hpp"

#include <cmath>

namespace qc {

std::string_view name(Granularity g) { return table_name(g); }

Granularity QuantParams::granularity() const {
  if (block_size > 0) return Granularity::blocked;
  // A single scale with an axis is per tensor (ONNX: a scalar scale means per-tensor).
  if (axis.has_value() && scales.size() != 1) return Granularity::per_axis;
  return Granularity::per_tensor;
}

Shape QuantParams::param_shape(const Shape& x) const {
  switch (granularity()) {
    case Granularity::per_tensor:
      return {1};
    case Granularity::per_axis:
      return {x[static_cast<std::size_t>(resolve_axis(*axis, static_cast<int>(x.size())))]};
    case Granularity::blocked: {
      Shape s = x;
      auto a = static_cast<std::size_t>(resolve_axis(*axis, static_cast<int>(x.size())));
      s[a] = (x[a] + block_size - 1) / block_size;
      return s;
    }
  }
  return {1};
}

void validate(const QuantParams& p, const Shape& x, DType q, const std::string& where_,
              const std::string& field_prefix) {
  // Every message below reads "<where>: field '<prefix><name>': ...".
  const std::string where = where_ + ": field '" + field_prefix;
  const int rank = static_cast<int>(x.size());
  if (p.block_size < 0) throw InputError(where + "block_size': must be positive, got " + std::to_string(p.block_size));
  if (p.block_size > 0 && !p.axis) throw InputError(where + "block_size': blocked quantization needs an 'axis'");
  if (p.axis) {
    const int a = resolve_axis(*p.axis, rank);
    if (a < 0 || a >= rank)
      throw InputError(where + "axis': " + std::to_string(*p.axis) + " is out of range for an input of rank " +
                       std::to_string(rank));
  }
  if (p.scales.empty()) throw InputError(where + "scale': no scale given");
  const std::int64_t want = numel(p.param_shape(x));
  if (static_cast<std::int64_t>(p.scales.size()) != want)
    throw InputError(where + "scale': expected " + std::to_string(want) + " value(s) for " +
                     std::string(name(p.granularity())) + " quantization of shape " + shape_str(x) + ", got " +
                     std::to_string(p.scales.size()));
  for (std::size_t i = 0; i < p.scales.size(); ++i) {
    const double s = p.scales[i];
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(where + "scale[" + std::to_string(i) + "]': must be positive and finite, got " +
                       std::to_string(s));
    if (is_float(p.scale_dtype) && float_bits_to_double(p.scale_dtype, double_to_float_bits(p.scale_dtype, s)) != s)
      throw InputError(where + "scale[" + std::to_string(i) + "]': " + std::to_string(s) + " is not representable in " +
                       std::string(name(p.scale_dtype)));
  }
  if (!p.zero_points.empty()) {
    if (static_cast<std::int64_t>(p.zero_points.size()) != want)
      throw InputError(where + "zero_point': expected " + std::to_string(want) + " value(s), got " +
                       std::to_string(p.zero_points.size()));
    if (is_int(q)) {
      for (std::size_t i = 0; i < p.zero_points.size(); ++i) {
        const std::int64_t z = p.zero_points[i];
        if (z < int_min(q) || z > int_max(q))
          throw InputError(where + "zero_point[" + std::to_string(i) + "]': " + std::to_string(z) + " is outside " +
                           std::string(name(q)) + " [" + std::to_string(int_min(q)) + ", " +
                           std::to_string(int_max(q)) + "]");
      }
    }
  }
}

ParamIndexer::ParamIndexer(const QuantParams& p, const Shape& x) {
  if (p.granularity() == Granularity::per_tensor) return;
  const int rank = static_cast<int>(x.size());
  const auto a = static_cast<std::size_t>(resolve_axis(*p.axis, rank));
  dim_ = x[a];
  for (std::size_t k = a + 1; k < x.size(); ++k) inner_ *= x[k];
  if (p.block_size > 0) {
    block_ = p.block_size;
    nblocks_ = (dim_ + block_ - 1) / block_;
  }
}

}  // namespace qc
