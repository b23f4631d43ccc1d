// Quantization parameters: scales and zero points with their granularity
// (per tensor, per axis, or blocked along an axis with a possibly short last block).
#pragma once

#include "qconform/dtype.hpp"
#include "qconform/enum_table.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qc {

enum class Granularity : std::uint8_t { per_tensor, per_axis, blocked };
inline constexpr EnumEntry<Granularity> kGranularityTable[] = {
    {Granularity::per_tensor, "per_tensor"},
    {Granularity::per_axis, "per_axis"},
    {Granularity::blocked, "blocked"},
};
constexpr std::span<const EnumEntry<Granularity>> enum_table(Granularity) { return kGranularityTable; }
std::string_view name(Granularity g);

struct QuantParams {
  DType scale_dtype = DType::f32;         // the scales' own format (ONNX: y_scale's type)
  std::vector<double> scales;             // each exactly representable in scale_dtype
  std::vector<std::int64_t> zero_points;  // empty means all zero
  std::optional<int> axis;                // per-axis and blocked; negative counts from the end
  std::int64_t block_size = 0;            // > 0: blocked along `axis`

  Granularity granularity() const;
  // Shape the scale and zero-point tensors must have for an input of shape `x`.
  Shape param_shape(const Shape& x) const;
  std::int64_t zero_point(std::int64_t k) const { return zero_points.empty() ? 0 : zero_points[k]; }
};

// An axis as an index: negative axes count from the end (-1 is the last of `rank` dimensions).
constexpr int resolve_axis(int axis, std::int64_t rank) { return axis < 0 ? axis + static_cast<int>(rank) : axis; }

// Checks scales (positive, finite, representable in scale_dtype), zero points (inside the
// integer format `q`), and counts against the shape. Throws InputError naming `where` and the
// offending field.
// `field_prefix` names the enclosing object in messages (e.g. "b." for a GEMM's weights).
void validate(const QuantParams& p, const Shape& x, DType q, const std::string& where,
              const std::string& field_prefix = "");

// Maps a flat element index of a tensor of shape `x` to its parameter index.
class ParamIndexer {
 public:
  ParamIndexer(const QuantParams& p, const Shape& x);
  std::int64_t operator()(std::int64_t flat) const {
    if (dim_ == 0) return 0;
    const std::int64_t c = (flat / inner_) % dim_;
    if (block_ == 0) return c;
    const std::int64_t outer = flat / (inner_ * dim_);
    const std::int64_t in = flat % inner_;
    return (outer * nblocks_ + c / block_) * inner_ + in;
  }

 private:
  std::int64_t dim_ = 0, inner_ = 1, block_ = 0, nblocks_ = 0;
};

}  // namespace qc
