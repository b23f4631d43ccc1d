#include "oracles/int4.hpp"

#include "qconform/error.hpp"

#include <algorithm>
#include <string>

namespace qc {

Int4Packing onnx_int4_packing() { return {NibbleOrder::low_first, std::nullopt, OddLength::pad, OutOfRange::reject}; }
Int4Packing ort_int4_packing() { return {NibbleOrder::low_first, std::nullopt, OddLength::pad, OutOfRange::clip}; }
Int4Packing migraphx_int4_packing(int axis) {
  return {NibbleOrder::low_first, axis, OddLength::reject, OutOfRange::clip};
}
Int4Packing torchao_uint4_packing() {
  return {NibbleOrder::high_first, std::nullopt, OddLength::reject, OutOfRange::reject};
}

std::span<const NamedInt4Packing> named_int4_packings() {
  static constexpr NamedInt4Packing kNamed[] = {{"onnx", onnx_int4_packing},
                                                {"ort", ort_int4_packing},
                                                {"torchao", torchao_uint4_packing},
                                                {"migraphx", [] { return migraphx_int4_packing(); }}};
  return kNamed;
}

std::optional<Int4Packing> find_int4_packing(std::string_view name) {
  for (const NamedInt4Packing& n : named_int4_packings())
    if (n.name == name) return n.packing();
  return std::nullopt;
}

std::optional<std::string_view> int4_packing_name(const Int4Packing& p, const Shape& shape) {
  Int4Packing q = p;
  if (q.axis && *q.axis == static_cast<int>(shape.size()) - 1) q.axis = -1;
  for (const NamedInt4Packing& n : named_int4_packings())
    if (n.packing() == p || n.packing() == q) return n.name;
  return std::nullopt;
}

std::string int4_packing_names() {
  std::string s;
  for (const NamedInt4Packing& n : named_int4_packings()) s += (s.empty() ? "" : ", ") + std::string(n.name);
  return s;
}

namespace {

// The tensor seen as [outer, length, inner] with pairs formed along `length`: the whole tensor
// flattened (outer = inner = 1) for flat packing, else the packing axis.
struct PairLayout {
  std::int64_t outer = 1, length = 0, inner = 1;
  std::size_t axis = 0;  // the axis whose length is halved (flat: the packed tensor is 1-D)
  bool flat = true;
  std::int64_t packed_length() const { return (length + 1) / 2; }
  std::int64_t packed_size() const { return outer * packed_length() * inner; }
  // Byte index and nibble index (0 or 1 along the pair) of element `flat_index`.
  std::int64_t byte_of(std::int64_t i) const {
    const std::int64_t o = i / (length * inner), k = (i / inner) % length, in = i % inner;
    return (o * packed_length() + k / 2) * inner + in;
  }
  int pair_index_of(std::int64_t i) const { return static_cast<int>((i / inner) % length % 2); }
};

PairLayout pair_layout(const Shape& shape, const Int4Packing& packing, const char* op) {
  PairLayout l;
  if (!packing.axis) {
    l.length = numel(shape);
  } else {
    const int rank = static_cast<int>(shape.size());
    const int a = resolve_axis(*packing.axis, rank);
    if (a < 0 || a >= rank)
      throw InputError(std::string(op) + ": packing axis " + std::to_string(*packing.axis) +
                       " is out of range for a tensor of rank " + std::to_string(rank));
    l.flat = false;
    l.axis = static_cast<std::size_t>(a);
    l.length = shape[l.axis];
    for (std::size_t k = 0; k < l.axis; ++k) l.outer *= shape[k];
    for (std::size_t k = l.axis + 1; k < shape.size(); ++k) l.inner *= shape[k];
  }
  if (l.length % 2 != 0 && packing.odd == OddLength::reject) {
    const std::string where = packing.axis ? "axis " + std::to_string(*packing.axis) : std::string("the tensor");
    throw InputError(std::string(op) + ": " + where + " of shape " + shape_str(shape) + " has odd length " +
                     std::to_string(l.length) + ", and this packing rejects odd lengths (no padding nibble)");
  }
  return l;
}

void require_nibble_type(DType t, const char* op) {
  if (t != DType::i4 && t != DType::u4)
    throw InputError(std::string(op) + ": nibble type " + std::string(name(t)) + " is not i4 or u4");
}

// The 4-bit two's-complement (i4) or plain (u4) pattern of v under the out-of-range rule.
std::uint8_t to_nibble(std::int64_t v, DType nibble_type, OutOfRange rule, std::int64_t element) {
  const std::int64_t lo = int_min(nibble_type), hi = int_max(nibble_type);
  if (v < lo || v > hi) {
    switch (rule) {
      case OutOfRange::reject:
        throw InputError("pack_int4: element " + std::to_string(element) + " = " + std::to_string(v) + " is outside " +
                         std::string(name(nibble_type)) + " [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "] and this packing rejects out-of-range values");
      case OutOfRange::clip:
        v = std::clamp(v, lo, hi);
        break;
      case OutOfRange::wrap:
        break;  // the low 4 bits below
    }
  }
  return static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & 0xF);
}

std::int64_t from_nibble(std::uint8_t n, DType nibble_type) {
  return nibble_type == DType::i4 && n >= 8 ? static_cast<std::int64_t>(n) - 16 : n;
}

int nibble_shift(int pair_index, NibbleOrder order) {
  const bool low = (pair_index == 0) == (order == NibbleOrder::low_first);
  return low ? 0 : 4;
}

}  // namespace

Shape packed_shape(const Shape& values, const Int4Packing& packing) {
  const PairLayout l = pair_layout(values, packing, "pack_int4");
  if (l.flat) return {l.packed_length()};
  Shape s = values;
  s[l.axis] = l.packed_length();
  return s;
}

Tensor pack_int4(const Tensor& values, DType nibble_type, const Int4Packing& packing) {
  require_nibble_type(nibble_type, "pack_int4");
  if (!is_int(values.dtype()))
    throw InputError("pack_int4: input format " + std::string(name(values.dtype())) + " is not an integer format");
  const PairLayout l = pair_layout(values.shape(), packing, "pack_int4");
  Tensor packed(DType::u8, packed_shape(values.shape(), packing));  // zero-filled: padding nibbles are 0
  for (std::int64_t i = 0; i < values.size(); ++i) {
    const std::uint8_t n = to_nibble(values.get_int(i), nibble_type, packing.out_of_range, i);
    const std::int64_t b = l.byte_of(i);
    const int shift = nibble_shift(l.pair_index_of(i), packing.nibbles);
    packed.set_int(b, packed.get_int(b) | std::int64_t{n} << shift);
  }
  return packed;
}

Tensor unpack_int4(const Tensor& packed, DType nibble_type, const Shape& shape, const Int4Packing& packing) {
  require_nibble_type(nibble_type, "unpack_int4");
  if (packed.dtype() != DType::u8)
    throw InputError("unpack_int4: packed data must be u8 bytes, got " + std::string(name(packed.dtype())));
  const Shape want = packed_shape(shape, packing);
  if (packed.shape() != want)
    throw InputError("unpack_int4: packed shape " + shape_str(packed.shape()) + " does not match " + shape_str(want) +
                     ", the packing of shape " + shape_str(shape));
  const PairLayout l = pair_layout(shape, packing, "unpack_int4");
  Tensor out(nibble_type, shape);
  for (std::int64_t i = 0; i < out.size(); ++i) {
    const auto byte = static_cast<std::uint8_t>(packed.get_int(l.byte_of(i)));
    const auto n = static_cast<std::uint8_t>((byte >> nibble_shift(l.pair_index_of(i), packing.nibbles)) & 0xF);
    out.set_int(i, from_nibble(n, nibble_type));
  }
  return out;
}

}  // namespace qc
