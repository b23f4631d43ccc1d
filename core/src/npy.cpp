#include "qconform/npy.hpp"

#include "qconform/error.hpp"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace qc {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
// The NumPy dtype string of each storable format (the byte-order mark as NumPy writes it).
constexpr NpyType kTypes[] = {{"<f8", DType::f64}, {"<f4", DType::f32}, {"<f2", DType::f16}, {"<i4", DType::i32},
                              {"<i2", DType::i16}, {"<u2", DType::u16}, {"|i1", DType::i8},  {"|u1", DType::u8}};

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

Tensor read_npy(const std::filesystem::path& file, std::optional<DType> as) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open .npy file");
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
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) throw InputError(file.string() + ": truncated .npy header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'")))
    throw InputError(file.string() + ": .npy header has no descr");
  std::string descr = m[1];
  if (descr == "<i1" || descr == "i1") descr = "|i1";
  if (descr == "<u1" || descr == "u1") descr = "|u1";
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw InputError(file.string() + ": Fortran-order .npy arrays are not supported (save with np.ascontiguousarray)");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw InputError(file.string() + ": .npy header has no shape");
  Shape shape;
  std::stringstream dims(m[1]);
  for (std::string d; std::getline(dims, d, ',');)
    if (d.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(d));
  std::optional<DType> t;
  for (const NpyType& n : kTypes)
    if (descr == n.descr) t = n.dtype;
  if (!t) throw InputError(file.string() + ": unsupported .npy dtype '" + descr + "'");
  if (as) {
    if (info(*as).storage_bytes != info(*t).storage_bytes)
      throw InputError(file.string() + ": dtype '" + descr + "' cannot hold " + std::string(name(*as)));
    t = as;
  }
  Tensor x(*t, shape);
  in.read(reinterpret_cast<char*>(x.bytes().data()), static_cast<std::streamsize>(x.bytes().size()));
  if (!in) throw InputError(file.string() + ": .npy data shorter than its shape " + shape_str(shape));
  return x;
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
