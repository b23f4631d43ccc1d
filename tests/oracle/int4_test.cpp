// pack_int4 / unpack_int4 against the layouts stated in the sources int4.hpp cites
// (docs/numerics.md "Int4 packing"). Expected bytes are written by hand from each layout rule:
// low-first puts element 2k in bits 0-3 and 2k+1 in bits 4-7 (ONNX: pack(x, y) =
// y << 4 | x & 0x0F); high-first is torchao's data[::2] << 4 | data[1::2]; an i4 value v is
// stored as v & 0xF (two's complement).
#include "oracles/int4.hpp"

#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace qc {
namespace {

Tensor ints(DType t, const Shape& shape, const std::vector<std::int64_t>& v) {
  Tensor x(t, shape);
  for (std::size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<std::int64_t>(i), v[i]);
  return x;
}

std::vector<std::int64_t> bytes_of(const Tensor& packed) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < packed.size(); ++i) out.push_back(packed.get_int(i));
  return out;
}

TEST(Int4Pack, OnnxLowNibbleFirstWithPadding) {
  // [1, -2, 3] as i4: byte 0 = (-2 & 0xF) << 4 | 1 = 0xE1; byte 1 = 0 << 4 | 3 = 0x03 (the odd
  // count is padded with a 0 nibble).
  const Tensor p = pack_int4(ints(DType::i4, {3}, {1, -2, 3}), DType::i4, onnx_int4_packing());
  EXPECT_EQ(p.dtype(), DType::u8);
  EXPECT_EQ(p.shape(), (Shape{2}));
  EXPECT_EQ(bytes_of(p), (std::vector<std::int64_t>{0xE1, 0x03}));
  // Flat order ignores the shape: [[1, 2, 3], [4, 5, 6]] u4 -> 0x21, 0x43, 0x65.
  const Tensor q = pack_int4(ints(DType::u4, {2, 3}, {1, 2, 3, 4, 5, 6}), DType::u4, onnx_int4_packing());
  EXPECT_EQ(q.shape(), (Shape{3}));
  EXPECT_EQ(bytes_of(q), (std::vector<std::int64_t>{0x21, 0x43, 0x65}));
  // -8 is 0x8, 7 is 0x7: [-8, 7] -> 0x78.
  EXPECT_EQ(bytes_of(pack_int4(ints(DType::i8, {2}, {-8, 7}), DType::i4, onnx_int4_packing())),
            (std::vector<std::int64_t>{0x78}));
}

TEST(Int4Pack, TorchaoHighNibbleFirst) {
  // torchao uint4: [1, 2, 3, 4] -> 1 << 4 | 2 = 0x12, 3 << 4 | 4 = 0x34.
  const Tensor p = pack_int4(ints(DType::u4, {1, 4}, {1, 2, 3, 4}), DType::u4, torchao_uint4_packing());
  EXPECT_EQ(bytes_of(p), (std::vector<std::int64_t>{0x12, 0x34}));
  // An odd count is rejected.
  EXPECT_THROW(pack_int4(ints(DType::u4, {3}, {1, 2, 3}), DType::u4, torchao_uint4_packing()), InputError);
}

TEST(Int4Pack, MigraphxAlongTheLastAxis) {
  // [[1, 2, 3, 4], [5, 6, 7, -8]] i4, axis -1: each row on its own, 2k low, 2k+1 high:
  // row 0: 0x21, 0x43; row 1: 0x65, (-8 & 0xF) << 4 | 7 = 0x87. Shape [2, 2].
  const Tensor p = pack_int4(ints(DType::i8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, -8}), DType::i4, migraphx_int4_packing());
  EXPECT_EQ(p.shape(), (Shape{2, 2}));
  EXPECT_EQ(bytes_of(p), (std::vector<std::int64_t>{0x21, 0x43, 0x65, 0x87}));
  // An odd axis length is rejected (MIGraphX requires an even axis length).
  EXPECT_THROW(pack_int4(ints(DType::i8, {2, 3}, {1, 2, 3, 4, 5, 6}), DType::i4, migraphx_int4_packing()), InputError);
  // Clipping: 9 -> 7, -9 -> -8: 0x87.
  EXPECT_EQ(bytes_of(pack_int4(ints(DType::i8, {1, 2}, {9, -9}), DType::i4, migraphx_int4_packing())),
            (std::vector<std::int64_t>{0x87}));
}

TEST(Int4Pack, AlongTheFirstAxisWithPadding) {
  // x = [[1, 2], [3, 4], [5, 6]] u4 packed along axis 0, padded: packed shape [2, 2];
  // byte (0, j) = x[1][j] << 4 | x[0][j]; byte (1, j) = 0 << 4 | x[2][j].
  Int4Packing p = onnx_int4_packing();
  p.axis = 0;
  const Tensor packed = pack_int4(ints(DType::u4, {3, 2}, {1, 2, 3, 4, 5, 6}), DType::u4, p);
  EXPECT_EQ(packed.shape(), (Shape{2, 2}));
  EXPECT_EQ(bytes_of(packed), (std::vector<std::int64_t>{0x31, 0x42, 0x05, 0x06}));
  EXPECT_EQ(packed_shape({3, 2}, p), (Shape{2, 2}));
}

TEST(Int4Pack, OutOfRangeRules) {
  Int4Packing p = onnx_int4_packing();
  // reject: 8 is outside i4 [-8, 7].
  EXPECT_THROW(pack_int4(ints(DType::i8, {2}, {8, 0}), DType::i4, p), InputError);
  // u4 rejects negatives.
  EXPECT_THROW(pack_int4(ints(DType::i8, {2}, {-1, 0}), DType::u4, p), InputError);
  // clip: 8 -> 7, -100 -> -8 (0x8): 0x87.
  p.out_of_range = OutOfRange::clip;
  EXPECT_EQ(bytes_of(pack_int4(ints(DType::i8, {2}, {8, -100}), DType::i4, p)), (std::vector<std::int64_t>{0x87}));
  // wrap (the low four bits, as a truncating cast): 8 -> 0x8 (reads back as -8), 17 -> 0x1.
  p.out_of_range = OutOfRange::wrap;
  const Tensor w = pack_int4(ints(DType::i16, {2}, {8, 17}), DType::i4, p);
  EXPECT_EQ(bytes_of(w), (std::vector<std::int64_t>{0x18}));
  const Tensor back = unpack_int4(w, DType::i4, {2}, p);
  EXPECT_EQ(back.get_int(0), -8);
  EXPECT_EQ(back.get_int(1), 1);
  // Floats and non-nibble types are refused.
  EXPECT_THROW(pack_int4(Tensor(DType::f32, {2}), DType::i4, p), InputError);
  EXPECT_THROW(pack_int4(ints(DType::i8, {2}, {0, 0}), DType::i8, p), InputError);
}

TEST(Int4Unpack, SignExtendsI4AndChecksTheShape) {
  // 0xE1 -> low 0x1 = 1, high 0xE = -2 (i4) or 14 (u4).
  const Tensor packed = ints(DType::u8, {1}, {0xE1});
  const Tensor s = unpack_int4(packed, DType::i4, {2}, onnx_int4_packing());
  EXPECT_EQ(s.dtype(), DType::i4);
  EXPECT_EQ(s.get_int(0), 1);
  EXPECT_EQ(s.get_int(1), -2);
  const Tensor u = unpack_int4(packed, DType::u4, {2}, onnx_int4_packing());
  EXPECT_EQ(u.get_int(1), 14);
  // High-first reads the other nibble first.
  const Tensor h = unpack_int4(packed, DType::u4, {1, 2}, torchao_uint4_packing());
  EXPECT_EQ(h.get_int(0), 14);
  EXPECT_EQ(h.get_int(1), 1);
  // A byte count that does not match the shape is refused.
  EXPECT_THROW(unpack_int4(packed, DType::i4, {4}, onnx_int4_packing()), InputError);
  EXPECT_THROW(unpack_int4(ints(DType::i8, {1}, {1}), DType::i4, {2}, onnx_int4_packing()), InputError);
}

TEST(Int4RoundTrip, EveryLayoutAndShape) {
  std::mt19937 rng(5);
  const std::vector<Shape> shapes = {{1}, {7}, {8}, {2, 3}, {3, 4, 5}, {4, 1, 6}};
  for (DType t : {DType::i4, DType::u4}) {
    std::uniform_int_distribution<int> d(static_cast<int>(int_min(t)), static_cast<int>(int_max(t)));
    for (const Shape& shape : shapes) {
      for (NibbleOrder order : {NibbleOrder::low_first, NibbleOrder::high_first}) {
        for (std::optional<int> axis : {std::optional<int>{}, std::optional<int>{0}, std::optional<int>{-1}}) {
          const Int4Packing p{order, axis, OddLength::pad, OutOfRange::reject};
          SCOPED_TRACE(std::string(name(t)) + " " + shape_str(shape) + " " + std::string(name(order)) + " axis " +
                       (axis ? std::to_string(*axis) : std::string("flat")));
          Tensor x(t, shape);
          for (std::int64_t i = 0; i < x.size(); ++i) x.set_int(i, d(rng));
          const Tensor packed = pack_int4(x, t, p);
          EXPECT_EQ(packed.shape(), packed_shape(shape, p));
          const Tensor back = unpack_int4(packed, t, shape, p);
          for (std::int64_t i = 0; i < x.size(); ++i) ASSERT_EQ(back.get_int(i), x.get_int(i)) << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace qc
