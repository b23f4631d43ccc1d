// An ONNX model as qconform reads it: the graph's nodes, initializers, inputs and outputs, decoded
// from the protobuf wire format by a reader of our own (no protobuf library: only the fields of
// onnx/onnx.proto that a quantized inference graph uses are kept, every other field is skipped by
// its wire type, so a model written by any exporter reads). Field numbers are onnx.proto's
// (github.com/onnx/onnx, onnx/onnx.proto: ModelProto, GraphProto, NodeProto, AttributeProto,
// TensorProto, ValueInfoProto, TypeProto, TensorShapeProto).
#pragma once

#include "qconform/tensor.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qc::onnx {

// TensorProto.DataType. Only the types a quantized graph's tensors have are read into a Tensor.
enum class ElemType : int {
  undefined = 0,
  f32 = 1,
  u8 = 2,
  i8 = 3,
  u16 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  string = 8,
  boolean = 9,
  f16 = 10,
  f64 = 11,
  u32 = 12,
  u64 = 13,
  c64 = 14,
  c128 = 15,
  bf16 = 16,
  f8e4m3fn = 17,
  f8e4m3fnuz = 18,
  f8e5m2 = 19,
  f8e5m2fnuz = 20,
  u4 = 21,
  i4 = 22,
  f4e2m1 = 23,
};
// "FLOAT", "INT8", ... (onnx.proto's names), or "type N" for a number it does not name.
std::string elem_type_name(int t);
// The qconform format of an ONNX element type; nullopt for the types qconform does not compute in
// (int64 is held apart, as Value::ints).
std::optional<DType> to_dtype(int t);

// A tensor value: numbers in a qconform format, or int64 (shapes, axes, indices).
struct Value {
  int elem_type = 0;
  Shape shape;
  std::optional<Tensor> numbers;   // every element type to_dtype maps
  std::vector<std::int64_t> ints;  // int64 values (elem_type i64)
  bool is_int64() const { return elem_type == static_cast<int>(ElemType::i64); }
};

struct Attribute {
  enum class Type : int { undefined = 0, f = 1, i = 2, s = 3, t = 4, g = 5, floats = 6, ints = 7, strings = 8 };
  std::string name;
  Type type = Type::undefined;
  float f = 0;
  std::int64_t i = 0;
  std::string s;
  std::optional<Value> t;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  bool has_subgraph = false;  // g or graphs: control flow, which qconform does not run
};

struct Node {
  std::string name;  // as in the file; "" where the exporter gave none (label() makes one)
  std::string op_type;
  std::string domain;                        // "" (and "ai.onnx") for the default domain
  std::vector<std::string> inputs, outputs;  // "" for an omitted optional input
  std::vector<Attribute> attributes;
  int index = 0;  // position in the file's node list

  const Attribute* attr(std::string_view n) const;
  // The name, or "<op_type>#<index>" when it has none: what messages and reports call the node.
  std::string label() const;
};

// A graph input or output with its declared type: dims are -1 where symbolic ("N") or unknown.
struct ValueInfo {
  std::string name;
  int elem_type = 0;
  bool has_shape = false;
  Shape dims;
  std::vector<std::string> dim_params;  // per dim: the symbol, "" where a number
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::map<std::string, Value> initializers;
  std::vector<ValueInfo> inputs;  // without those that are initializers (IR < 4 lists them too)
  std::vector<ValueInfo> outputs;
};

struct Model {
  std::int64_t ir_version = 0;
  std::map<std::string, std::int64_t> opsets;  // domain ("" for the default) -> version
  std::string producer;                        // producer_name and version
  Graph graph;
  std::int64_t opset(std::string_view domain = "") const;  // 0 where not imported
};

// Reads a .onnx file. Throws InputError naming the file and what is wrong: not a protobuf, a
// truncated message, a model without a graph, external tensor data, a tensor whose data does not
// match its dims.
Model read_model(const std::filesystem::path& file);
// The same from the file's bytes (`where` names them in messages).
Model parse_model(std::string_view bytes, const std::string& where);

}  // namespace qc::onnx
