#include "qconform/npy.hpp"

#include "qconform/error.hpp"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace qc {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
// The NumPy dtype string of each storable format (the byte-order mark as NumPy writes it).
constexpr NpyType kTypes[] = {{"<f8", DType::f64}, {"<f4", DType::f32}, {"<f2", DType::f16}, {"<i4", DType::i32},
                              {"<i2", DType::i16}, {"<u2", DType::u16}, {"|i1", DType::i8},  {"|u1", DType::u8}};

// The header dict NumPy writes, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, read
// strictly: exactly those three keys, a string, a boolean and a tuple of whole numbers; anything
// else is an error naming the file and what is wrong (a regex read used to accept "(a, b)" or
// "(3x,)" as shapes).
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& text, const std::filesystem::path& file) : s_(text), file_(file) {}

  NpyHeader read() {
    NpyHeader h;
    bool descr = false, order = false, shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      if (key == "descr" && !descr) {
        h.descr = quoted();
        descr = true;
      } else if (key == "fortran_order" && !order) {
        h.fortran_order = boolean();
        order = true;
      } else if (key == "shape" && !shape) {
        h.shape = tuple();
        shape = true;
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != '}') fail("expected ',' or '}' after '" + key + "'");
    }
    ++i_;
    skip();
    if (i_ != s_.size()) fail("text after the header's closing '}'");
    if (!descr || !order || !shape) fail("the header needs 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file_.string() + ": malformed .npy header (" + what + ")");
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("an unterminated string");
    std::string v = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    skip();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (s_.compare(i_, n, word) == 0) {
        i_ += n;
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skip();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("a shape holds whole numbers");
      std::int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("a dimension too large");
        d = d * 10 + (s_[i_++] - '0');
      }
      shape.push_back(d);
      skip();
      if (peek() == ',') {
        ++i_;
      } else if (peek() != ')') {
        fail("a shape holds whole numbers separated by ','");
      }
    }
    ++i_;
    return shape;
  }

  const std::string& s_;
  const std::filesystem::path& file_;
  std::size_t i_ = 0;
};

const char* descr_of(DType t) {
  const DType stored = npy_storage_dtype(t);
  for (const NpyType& n : kTypes)
    if (n.dtype == stored) return n.descr;
  return "?";
}

}  // namespace

DType npy_storage_dtype(DType t) {
  switch (t) {
    case DType::bf16:
      return DType::u16;  // bit patterns
    case DType::f8e4m3fn:
    case DType::f8e5m2:
      return DType::u8;
    case DType::i4:
      return DType::i8;  // one value per byte
    case DType::u4:
      return DType::u8;
    default:
      return t;
  }
}

namespace {

// The .npy held by `in`, `size` bytes in all; `file` names it in messages.
Tensor read_npy_from(std::istream& in, std::uintmax_t size, const std::filesystem::path& file,
                     std::optional<DType> as) {
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw InputError(file.string() + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    throw InputError(file.string() + ": unsupported .npy version " + std::to_string(major));
  }
  // The header must be in the file before it is allocated (a version 2 length field may say 4 GiB);
  // NumPy itself refuses headers over 10,000 bytes unless told otherwise (np.load max_header_size).
  constexpr std::uint32_t kMaxHeader = 1 << 20;
  const auto header_at = static_cast<std::uintmax_t>(in.tellg());
  if (!in || header_len > kMaxHeader || header_at > size || header_len > size - header_at)
    throw InputError(file.string() + ": truncated or oversized .npy header (" + std::to_string(header_len) + " bytes)");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) throw InputError(file.string() + ": truncated .npy header");
  const NpyHeader h = HeaderReader(header, file).read();
  std::string descr = h.descr;
  if (descr == "<i1" || descr == "i1") descr = "|i1";
  if (descr == "<u1" || descr == "u1") descr = "|u1";
  if (h.fortran_order)
    throw InputError(file.string() + ": Fortran-order .npy arrays are not supported (save with np.ascontiguousarray)");
  const Shape& shape = h.shape;
  std::optional<DType> t;
  for (const NpyType& n : kTypes)
    if (descr == n.descr) t = n.dtype;
  if (!t) throw InputError(file.string() + ": unsupported .npy dtype '" + descr + "'");
  if (as) {
    if (info(*as).storage_bytes != info(*t).storage_bytes)
      throw InputError(file.string() + ": dtype '" + descr + "' cannot hold " + std::string(name(*as)));
    t = as;
  }
  // The data must be in the file before anything is allocated for it (a header may claim 2^40
  // elements).
  const auto data_at = static_cast<std::uintmax_t>(in.tellg());
  std::uintmax_t elements = 0;
  try {
    elements = static_cast<std::uintmax_t>(numel(shape));  // checked for overflow
  } catch (const InputError& e) {
    throw InputError(file.string() + ": .npy " + e.what());
  }
  const auto width = static_cast<std::uintmax_t>(info(*t).storage_bytes);
  if (data_at > size || elements > (size - data_at) / width)
    throw InputError(file.string() + ": .npy data shorter than its shape " + shape_str(shape));
  Tensor x(*t, shape);
  in.read(reinterpret_cast<char*>(x.bytes().data()), static_cast<std::streamsize>(x.bytes().size()));
  if (!in) throw InputError(file.string() + ": .npy data shorter than its shape " + shape_str(shape));
  return x;
}

}  // namespace

Tensor read_npy(const std::filesystem::path& file, std::optional<DType> as) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open .npy file");
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) throw InputError(file.string() + ": cannot read its size: " + ec.message());
  return read_npy_from(in, size, file, as);
}

Tensor read_npy_bytes(std::string_view bytes, const std::string& where, std::optional<DType> as) {
  std::istringstream in{std::string(bytes)};
  return read_npy_from(in, bytes.size(), where, as);
}

void write_npy(const std::filesystem::path& file, const Tensor& t) {
  std::string shape = "(";
  for (std::int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.rank() > 1) shape.pop_back();
  shape += ")";
  std::string header =
      "{'descr': '" + std::string(descr_of(t.dtype())) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(file.string() + ": cannot write");
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out << header;
  out.write(reinterpret_cast<const char*>(t.bytes().data()), static_cast<std::streamsize>(t.bytes().size()));
}

}  // namespace qc
