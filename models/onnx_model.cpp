#include "models/onnx_model.hpp"

#include "qconform/error.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>

namespace qc::onnx {

namespace {

// ---- protobuf wire format (protobuf.dev/programming-guides/encoding) --------------------------

enum WireType : int { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// One message's bytes, read field by field. Every error names the message path (`where`).
class Reader {
 public:
  Reader(std::string_view bytes, std::string where) : p_(bytes), where_(std::move(where)) {}

  bool done() const { return pos_ >= p_.size(); }
  const std::string& where() const { return where_; }

  // The next field's number and wire type.
  std::pair<int, int> key() {
    const std::uint64_t k = varint();
    const int wire = static_cast<int>(k & 7);
    const std::uint64_t field = k >> 3;
    if (field == 0 || field >= (1u << 29)) fail("a field number of " + std::to_string(field));
    field_ = static_cast<int>(field);
    wire_ = wire;
    return {field_, wire};
  }
  // The value of the field key() just read, which must have the wire type its field is declared with.
  std::uint64_t varint_field() {
    want(kVarint);
    return varint();
  }
  std::string_view bytes_field() {
    want(kLength);
    return bytes();
  }
  std::uint32_t fixed32_field() {
    want(kFixed32);
    return fixed32();
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= p_.size()) fail("the message ends inside a number (truncated file?)");
      const auto b = static_cast<std::uint8_t>(p_[pos_++]);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a number longer than 10 bytes");
  }
  std::uint32_t fixed32() { return static_cast<std::uint32_t>(fixed(4)); }
  std::uint64_t fixed64() { return fixed(8); }
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (n > p_.size() - pos_)
      fail("a field of " + std::to_string(n) + " bytes where " + std::to_string(p_.size() - pos_) +
           " remain (truncated file?)");
    const std::string_view s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void skip(int wire) {
    switch (wire) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        fixed(8);
        return;
      case kLength:
        bytes();
        return;
      case kFixed32:
        fixed(4);
        return;
      default:
        fail("wire type " + std::to_string(wire) + ", which is not protobuf (not an ONNX file?)");
    }
  }
  // A repeated scalar field, packed (wire type 2) or one element per key.
  template <class F>
  void repeated(int wire, int scalar_wire, F&& one) {
    if (wire == kLength) {
      Reader inner(bytes(), where_);
      while (!inner.done()) one(inner);
    } else if (wire == scalar_wire) {
      one(*this);
    } else {
      skip(wire);
    }
  }
  void want(int wire) const {
    if (wire_ != wire)
      fail("field " + std::to_string(field_) + " has wire type " + std::to_string(wire_) + ", not " +
           std::to_string(wire) + " (not an ONNX file?)");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where_ + ": " + what + " at byte " + std::to_string(pos_));
  }

 private:
  std::uint64_t fixed(int n) {
    if (p_.size() - pos_ < static_cast<std::size_t>(n)) fail("the message ends inside a fixed-size number");
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(p_[pos_ + i])} << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view p_;
  std::size_t pos_ = 0;
  std::string where_;
  int field_ = 0, wire_ = -1;  // the last key's
};

std::int64_t as_int64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// ---- TensorProto ----------------------------------------------------------------------------------

struct RawTensor {
  std::string name;
  int data_type = 0;
  Shape dims;
  std::string_view raw;
  bool has_raw = false;
  std::vector<float> floats;
  std::vector<std::int32_t> int32s;
  std::vector<std::int64_t> int64s;
  std::vector<double> doubles;
  std::vector<std::uint64_t> uint64s;
  bool external = false;
};

RawTensor read_tensor_fields(Reader r) {
  RawTensor t;
  while (!r.done()) {
    auto [field, wire] = r.key();
    switch (field) {
      case 1:
        r.repeated(wire, kVarint, [&](Reader& x) { t.dims.push_back(as_int64(x.varint())); });
        break;
      case 2:
        t.data_type = static_cast<int>(r.varint_field());
        break;
      case 4:
        r.repeated(wire, kFixed32, [&](Reader& x) { t.floats.push_back(std::bit_cast<float>(x.fixed32())); });
        break;
      case 5:
        r.repeated(wire, kVarint, [&](Reader& x) { t.int32s.push_back(static_cast<std::int32_t>(x.varint())); });
        break;
      case 7:
        r.repeated(wire, kVarint, [&](Reader& x) { t.int64s.push_back(as_int64(x.varint())); });
        break;
      case 8:
        t.name = std::string(r.bytes_field());
        break;
      case 9:
        t.raw = r.bytes_field();
        t.has_raw = true;
        break;
      case 10:
        r.repeated(wire, kFixed64, [&](Reader& x) { t.doubles.push_back(std::bit_cast<double>(x.fixed64())); });
        break;
      case 11:
        r.repeated(wire, kVarint, [&](Reader& x) { t.uint64s.push_back(x.varint()); });
        break;
      case 14:
        t.external = r.varint_field() == 1;
        break;
      default:
        r.skip(wire);
    }
  }
  return t;
}

Value decode_tensor(const RawTensor& t, const std::string& where) {
  const std::string what = where + ": tensor '" + t.name + "'";
  if (t.external)
    throw InputError(what +
                     " keeps its data in an external file, which qconform does not read (save the model "
                     "with its tensors inside it)");
  Value v;
  v.elem_type = t.data_type;
  v.shape = t.dims;
  // The element count, bounded before anything is allocated (2^40 elements is far past any model).
  std::int64_t n = 1;
  for (auto d : t.dims) {
    if (d < 0) throw InputError(what + " has a negative dimension " + std::to_string(d));
    if (d != 0 && n > (std::int64_t{1} << 40) / d)
      throw InputError(what + " of shape " + shape_str(t.dims) + " is too large");
    n *= d;
  }
  auto count_error = [&](std::int64_t got) {
    return InputError(what + " of shape " + shape_str(t.dims) + " holds " + std::to_string(got) + " values, not " +
                      std::to_string(n));
  };
  if (v.is_int64()) {
    if (t.has_raw) {
      if (t.raw.size() != static_cast<std::size_t>(n) * 8)
        throw count_error(static_cast<std::int64_t>(t.raw.size() / 8));
      v.ints.resize(static_cast<std::size_t>(n));
      std::memcpy(v.ints.data(), t.raw.data(), t.raw.size());  // little-endian, as onnx.proto says raw_data is
    } else {
      if (static_cast<std::int64_t>(t.int64s.size()) != n)
        throw count_error(static_cast<std::int64_t>(t.int64s.size()));
      v.ints = t.int64s;
    }
    return v;
  }
  const auto dt = to_dtype(t.data_type);
  if (!dt)
    throw InputError(what + " has element type " + elem_type_name(t.data_type) +
                     ", which qconform does not read (it reads float, double, float16, bfloat16, float8, int4 to int32 "
                     "and int64 tensors)");
  const int bytes = info(*dt).storage_bytes;
  const bool four_bit = *dt == DType::i4 || *dt == DType::u4;
  {  // The data holds n values: checked before the tensor is made, so dims alone never allocate.
    const auto size = [](const auto& v) { return static_cast<std::int64_t>(v.size()); };
    const std::int64_t raw = static_cast<std::int64_t>(t.raw.size());
    const bool ok = t.has_raw           ? (four_bit ? raw == (n + 1) / 2 : raw == n * bytes)
                    : *dt == DType::f32 ? size(t.floats) == n
                    : *dt == DType::f64 ? size(t.doubles) == n
                    : four_bit          ? size(t.int32s) == (n + 1) / 2
                                        : size(t.int32s) == n;
    if (!ok)
      throw count_error(t.has_raw           ? (four_bit ? raw * 2 : raw / bytes)
                        : *dt == DType::f32 ? size(t.floats)
                        : *dt == DType::f64 ? size(t.doubles)
                        : four_bit          ? size(t.int32s) * 2
                                            : size(t.int32s));
  }
  Tensor out(*dt, t.dims);
  if (t.has_raw) {
    if (four_bit) {
      // Two values per byte, the first in the low nibble (onnx.proto: "INT4 ... packed").
      if (t.raw.size() != static_cast<std::size_t>((n + 1) / 2))
        throw count_error(static_cast<std::int64_t>(t.raw.size()) * 2);
      for (std::int64_t i = 0; i < n; ++i) {
        const auto byte = static_cast<std::uint8_t>(t.raw[static_cast<std::size_t>(i / 2)]);
        const unsigned nib = (i % 2 == 0) ? (byte & 0xfu) : (byte >> 4);
        out.set_int(i, *dt == DType::i4 ? (nib >= 8 ? static_cast<std::int64_t>(nib) - 16 : nib) : nib);
      }
    } else {
      if (t.raw.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(bytes))
        throw count_error(static_cast<std::int64_t>(t.raw.size()) / bytes);
      std::memcpy(out.bytes().data(), t.raw.data(), t.raw.size());
    }
  } else if (*dt == DType::f32) {
    if (static_cast<std::int64_t>(t.floats.size()) != n) throw count_error(static_cast<std::int64_t>(t.floats.size()));
    std::memcpy(out.bytes().data(), t.floats.data(), t.floats.size() * 4);
  } else if (*dt == DType::f64) {
    if (static_cast<std::int64_t>(t.doubles.size()) != n)
      throw count_error(static_cast<std::int64_t>(t.doubles.size()));
    std::memcpy(out.bytes().data(), t.doubles.data(), t.doubles.size() * 8);
  } else if (four_bit) {
    // int32_data holds the packed bytes, one per int32 (onnx.proto, int32_data).
    if (static_cast<std::int64_t>(t.int32s.size()) != (n + 1) / 2)
      throw count_error(static_cast<std::int64_t>(t.int32s.size()) * 2);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto byte = static_cast<std::uint32_t>(t.int32s[static_cast<std::size_t>(i / 2)]);
      const unsigned nib = (i % 2 == 0) ? (byte & 0xfu) : ((byte >> 4) & 0xfu);
      out.set_int(i, *dt == DType::i4 ? (nib >= 8 ? static_cast<std::int64_t>(nib) - 16 : nib) : nib);
    }
  } else {
    // Integers up to 32 bits hold their values in int32_data; float16, bfloat16 and float8 their bit
    // patterns (onnx.proto, int32_data).
    if (static_cast<std::int64_t>(t.int32s.size()) != n) throw count_error(static_cast<std::int64_t>(t.int32s.size()));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t x = t.int32s[static_cast<std::size_t>(i)];
      if (is_float(*dt)) {
        out.set_bits(i, static_cast<std::uint32_t>(x) & ((std::uint64_t{1} << (8 * bytes)) - 1));
      } else {
        if (!is_int_value(*dt, x))
          throw InputError(what + ": value " + std::to_string(x) + " at " + std::to_string(i) + " is not a " +
                           elem_type_name(t.data_type) + " value");
        out.set_int(i, x);
      }
    }
  }
  v.numbers = std::move(out);
  return v;
}

// ---- the messages ----------------------------------------------------------------------------------

Attribute read_attribute(Reader r) {
  Attribute a;
  while (!r.done()) {
    auto [field, wire] = r.key();
    switch (field) {
      case 1:
        a.name = std::string(r.bytes_field());
        break;
      case 2:
        a.f = std::bit_cast<float>(r.fixed32_field());
        break;
      case 3:
        a.i = as_int64(r.varint_field());
        break;
      case 4:
        a.s = std::string(r.bytes_field());
        break;
      case 5: {
        Reader inner(r.bytes_field(), r.where() + ", attribute '" + a.name + "'");
        a.t = decode_tensor(read_tensor_fields(inner), inner.where());
        break;
      }
      case 6:
      case 11:
        a.has_subgraph = true;
        r.skip(wire);
        break;
      case 7:
        r.repeated(wire, kFixed32, [&](Reader& x) { a.floats.push_back(std::bit_cast<float>(x.fixed32())); });
        break;
      case 8:
        r.repeated(wire, kVarint, [&](Reader& x) { a.ints.push_back(as_int64(x.varint())); });
        break;
      case 20:
        a.type = static_cast<Attribute::Type>(r.varint_field());
        break;
      default:
        r.skip(wire);
    }
  }
  return a;
}

Node read_node(Reader r, int index) {
  Node n;
  n.index = index;
  while (!r.done()) {
    auto [field, wire] = r.key();
    switch (field) {
      case 1:
        n.inputs.emplace_back(r.bytes_field());
        break;
      case 2:
        n.outputs.emplace_back(r.bytes_field());
        break;
      case 3:
        n.name = std::string(r.bytes_field());
        break;
      case 4:
        n.op_type = std::string(r.bytes_field());
        break;
      case 5: {
        Reader inner(r.bytes_field(), r.where() + ", node " + std::to_string(index));
        n.attributes.push_back(read_attribute(inner));
        break;
      }
      case 7:
        n.domain = std::string(r.bytes_field());
        break;
      default:
        r.skip(wire);
    }
  }
  if (n.domain == "ai.onnx") n.domain.clear();
  if (n.op_type.empty()) r.fail("node " + std::to_string(index) + " has no op_type");
  return n;
}

void read_shape(Reader r, ValueInfo& v) {
  v.has_shape = true;
  while (!r.done()) {
    auto [field, wire] = r.key();
    if (field != 1) {
      r.skip(wire);
      continue;
    }
    Reader dim(r.bytes_field(), r.where());
    std::int64_t value = -1;
    std::string param;
    while (!dim.done()) {
      auto [f, w] = dim.key();
      if (f == 1)
        value = as_int64(dim.varint_field());
      else if (f == 2)
        param = std::string(dim.bytes_field());
      else
        dim.skip(w);
    }
    v.dims.push_back(value);
    v.dim_params.push_back(param);
  }
}

ValueInfo read_value_info(Reader r) {
  ValueInfo v;
  while (!r.done()) {
    auto [field, wire] = r.key();
    if (field == 1) {
      v.name = std::string(r.bytes_field());
    } else if (field == 2) {  // TypeProto
      Reader type(r.bytes_field(), r.where());
      while (!type.done()) {
        auto [f, w] = type.key();
        if (f != 1) {  // tensor_type only
          type.skip(w);
          continue;
        }
        Reader tensor(type.bytes_field(), type.where());
        while (!tensor.done()) {
          auto [g, x] = tensor.key();
          if (g == 1)
            v.elem_type = static_cast<int>(tensor.varint_field());
          else if (g == 2)
            read_shape(Reader(tensor.bytes_field(), tensor.where()), v);
          else
            tensor.skip(x);
        }
      }
    } else {
      r.skip(wire);
    }
  }
  return v;
}

Graph read_graph(Reader r) {
  Graph g;
  std::vector<ValueInfo> inputs;
  while (!r.done()) {
    auto [field, wire] = r.key();
    switch (field) {
      case 1: {
        const int index = static_cast<int>(g.nodes.size());
        g.nodes.push_back(read_node(Reader(r.bytes_field(), r.where()), index));
        break;
      }
      case 2:
        g.name = std::string(r.bytes_field());
        break;
      case 5: {
        auto raw = read_tensor_fields(Reader(r.bytes_field(), r.where()));
        if (raw.name.empty()) r.fail("an initializer without a name");
        std::string name = raw.name;
        g.initializers[name] = decode_tensor(raw, r.where());
        break;
      }
      case 11:
        inputs.push_back(read_value_info(Reader(r.bytes_field(), r.where())));
        break;
      case 12:
        g.outputs.push_back(read_value_info(Reader(r.bytes_field(), r.where())));
        break;
      case 15:
        r.fail("a sparse initializer, which qconform does not read");
      default:
        r.skip(wire);
    }
  }
  for (auto& in : inputs)
    if (!g.initializers.count(in.name)) g.inputs.push_back(std::move(in));
  return g;
}

}  // namespace

std::string elem_type_name(int t) {
  static const char* const kNames[] = {"UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
                                       "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
                                       "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
                                       "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                       "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1"};
  if (t >= 0 && t < static_cast<int>(std::size(kNames))) return kNames[t];
  return "type " + std::to_string(t);
}

std::optional<DType> to_dtype(int t) {
  switch (static_cast<ElemType>(t)) {
    case ElemType::f32:
      return DType::f32;
    case ElemType::f64:
      return DType::f64;
    case ElemType::f16:
      return DType::f16;
    case ElemType::bf16:
      return DType::bf16;
    case ElemType::f8e4m3fn:
      return DType::f8e4m3fn;
    case ElemType::f8e5m2:
      return DType::f8e5m2;
    case ElemType::i32:
      return DType::i32;
    case ElemType::i16:
      return DType::i16;
    case ElemType::u16:
      return DType::u16;
    case ElemType::i8:
      return DType::i8;
    case ElemType::u8:
      return DType::u8;
    case ElemType::i4:
      return DType::i4;
    case ElemType::u4:
      return DType::u4;
    default:
      return std::nullopt;
  }
}

const Attribute* Node::attr(std::string_view n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string Node::label() const { return name.empty() ? op_type + "#" + std::to_string(index) : name; }

std::int64_t Model::opset(std::string_view domain) const {
  const auto it = opsets.find(std::string(domain));
  return it == opsets.end() ? 0 : it->second;
}

Model parse_model(std::string_view bytes, const std::string& where) {
  Model m;
  bool has_graph = false;
  Reader r(bytes, where);
  if (bytes.empty()) r.fail("the file is empty");
  while (!r.done()) {
    auto [field, wire] = r.key();
    switch (field) {
      case 1:
        m.ir_version = as_int64(r.varint_field());
        break;
      case 2:
        m.producer = std::string(r.bytes_field()) + m.producer;
        break;
      case 3:
        m.producer += " " + std::string(r.bytes_field());
        break;
      case 7:
        m.graph = read_graph(Reader(r.bytes_field(), where + ", graph"));
        has_graph = true;
        break;
      case 8: {
        Reader op(r.bytes_field(), where + ", opset_import");
        std::string domain;
        std::int64_t version = 0;
        while (!op.done()) {
          auto [f, w] = op.key();
          if (f == 1)
            domain = std::string(op.bytes_field());
          else if (f == 2)
            version = as_int64(op.varint_field());
          else
            op.skip(w);
        }
        if (domain == "ai.onnx") domain.clear();
        m.opsets[domain] = version;
        break;
      }
      default:
        r.skip(wire);
    }
  }
  if (!has_graph) throw InputError(where + ": not an ONNX model (no graph)");
  if (m.graph.nodes.empty()) throw InputError(where + ": the model's graph has no nodes");
  return m;
}

Model read_model(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open the model");
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  return parse_model(bytes, file.string());
}

}  // namespace qc::onnx
