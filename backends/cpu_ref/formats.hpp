// cpu-ref's own number-format code: rounding a double into each float format and unpacking int4
// nibbles, written here as a client's reference would write them, so that cpu-ref shares no
// numerics with the oracle it is checked against (a bug in the oracle's encoder or unpacker would
// otherwise pass unseen on both sides). It uses only the core's vocabulary (DType, Tensor,
// Int4Packing) and the C++ library.
#pragma once

#include "qconform/ops.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>

namespace qc::cpu_ref {

// v rounded to the nearest value of float format t, ties to even, as a double: f64 unchanged,
// f32 by the hardware conversion, the narrower formats by scaling to an integer significand and
// std::nearbyint. Past the format's largest finite value: infinity, or NaN in f8e4m3fn (no
// infinity).
double round_to_format(DType t, double v);

// The bit pattern of `v` in float format t; v must be a value of t (round_to_format's result).
std::uint64_t format_bits(DType t, double v);

// round_to_format, then format_bits.
inline std::uint64_t to_format_bits(DType t, double v) { return format_bits(t, round_to_format(t, v)); }

// The 4-bit values of `packed` (u8 bytes) laid out by `packing`, as a tensor of `shape` and
// `nibble_type` (i4 sign-extended, u4 zero-extended). The packed shape is not re-checked here: the
// case loader checks it.
Tensor unpack_nibbles(const Tensor& packed, DType nibble_type, const Shape& shape, const Int4Packing& packing);

}  // namespace qc::cpu_ref
