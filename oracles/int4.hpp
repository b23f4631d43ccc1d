// pack_int4 / unpack_int4: 4-bit values (one per element in a Tensor) to and from bytes, under
// a stated layout (docs/design.md "Int4 layouts", docs/numerics.md "Int4 packing"):
//   nibble order  element 2k in the low nibble and 2k+1 in the high one (ONNX TensorProto,
//                 ORT Int4x2, PyTorch quint4x2, MIGraphX), or the reverse (torchao uint4:
//                 data[::2] << 4 | data[1::2]);
//   packing axis  flat row-major order over the whole tensor (ONNX, ORT, torchao), or pairs
//                 along one axis, each slice on its own (MIGraphX pack_int4, axis default -1);
//   odd length    pad the last byte with a 0 nibble (ONNX "pad 4 bits", ORT (N+1)/2 bytes), or
//                 reject (MIGraphX needs an even axis length, torchao an even last dim);
//   out of range  values outside the 4-bit range are rejected, clipped (ORT, MIGraphX clip
//                 before packing), or wrapped to their low 4 bits (ONNX Cast truncation, the
//                 `v & 0xF` of ORT's Int4x2::Pack).
// Packed data is a Tensor of u8 bytes whose shape is packed_shape(values.shape(), packing).
#pragma once

#include "qconform/ops.hpp"
#include "qconform/tensor.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace qc {

// onnx/onnx.in.proto (TensorProto: "the first element is stored in the 4 least significant
// bits"), docs/docsgen/source/technical/int4.md (pack(x, y) = y << 4 | x & 0x0F, odd counts padded).
Int4Packing onnx_int4_packing();
// onnxruntime/core/framework/int4.h (Int4x2: (v1 & 0xF) << 4 | (v0 & 0xF), (N + 1) / 2 bytes);
// QuantizeLinear clamps before packing.
Int4Packing ort_int4_packing();
// AMDMIGraphX src/include/migraphx/op/pack_int4.hpp: clip, then pairs along `axis` (default -1),
// index 2k low, 2k+1 high; an odd axis length is rejected.
Int4Packing migraphx_int4_packing(int axis = -1);
// pytorch/ao torchao/dtypes/uint4.py::pack_uint4: (data[::2] << 4 | data[1::2]) over the flattened
// tensor with an even last dimension, so element 0 is the high nibble.
Int4Packing torchao_uint4_packing();

// The named packings, the one list from which the case format, the case writer, Python and the
// schema's enum (checked by a test) take their names.
struct NamedInt4Packing {
  std::string_view name;
  Int4Packing (*packing)();
};
std::span<const NamedInt4Packing> named_int4_packings();
// The packing `name` names; empty for an unknown name.
std::optional<Int4Packing> find_int4_packing(std::string_view name);
// The name of `p` for a tensor of `shape` (pairs along axis rank - 1 are the same as along -1);
// empty when the packing has no name.
std::optional<std::string_view> int4_packing_name(const Int4Packing& p, const Shape& shape);
// "onnx, ort, torchao, migraphx", for messages.
std::string int4_packing_names();

// The packed byte tensor's shape: {ceil(n / 2)} for flat packing, else the input shape with the
// axis length halved (rounded up when padding). Throws InputError for an odd length under reject.
Shape packed_shape(const Shape& values, const Int4Packing& packing);

// values: any integer tensor (i4/u4 one value per byte, or a wider type holding 4-bit values);
// nibble_type: i4 ([-8, 7]) or u4 ([0, 15]). Returns a u8 tensor. Throws InputError naming the
// element for an out-of-range value under reject, and for an odd length under reject.
Tensor pack_int4(const Tensor& values, DType nibble_type, const Int4Packing& packing);

// packed: a u8 tensor of packed_shape(shape, packing); returns a tensor of nibble_type (i4 sign-
// extended, u4 zero-extended) and `shape`. Padding nibbles are ignored.
Tensor unpack_int4(const Tensor& packed, DType nibble_type, const Shape& shape, const Int4Packing& packing);

}  // namespace qc
