// The .npy reader (qconform/npy.hpp) reads NumPy's header strictly: the files here are written byte
// by byte as the .npy format defines them (magic, version, header length, the header dict, the
// data), so what is accepted and what is refused does not depend on the writer under test.
#include "qconform/npy.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace qc {
namespace {

namespace fs = std::filesystem;

// A version 1.0 file with `header` (padded as NumPy pads it) and `data`.
fs::path npy_file(const std::string& name, std::string header, const std::string& data) {
  const fs::path p = fs::temp_directory_path() / ("qconform_npy_" + std::to_string(::getpid()) + "_" + name + ".npy");
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(p, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(header.size() & 0xFF), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header << data;
  return p;
}

std::string f32_bytes(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), sizeof f);
  return s;
}

std::string refusal(const fs::path& p) {
  try {
    (void)read_npy(p);
  } catch (const InputError& e) {
    fs::remove(p);
    return e.what();
  }
  fs::remove(p);
  return "accepted";
}

TEST(Npy, ReadsTheHeaderNumpyWrites) {
  const fs::path p = npy_file("ok", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              f32_bytes({0.5f, -1.0f, 2.0f, 3.5f, -0.25f, 8.0f}));
  const Tensor t = read_npy(p);
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.get_double(3), 3.5);
  EXPECT_EQ(t.get_double(4), -0.25);
  fs::remove(p);
  // A 1-D shape "(3,)", a 0-D one "()", double quotes and no trailing comma are NumPy's too.
  const fs::path q =
      npy_file("one", "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}", f32_bytes({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(read_npy(q).shape(), (Shape{3}));
  fs::remove(q);
  const fs::path r = npy_file("scalar", "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f32_bytes({7.0f}));
  EXPECT_EQ(read_npy(r).size(), 1);
  fs::remove(r);
}

TEST(Npy, AMalformedHeaderIsAnInputErrorNamingTheFile) {
  for (const char* shape : {"(a, b)", "(3x,)", "(-1,)", "(2 3)", "2, 3", "(2, 3"}) {
    const fs::path p =
        npy_file("shape", std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }",
                 f32_bytes({1, 2, 3, 4, 5, 6}));
    const std::string why = refusal(p);
    EXPECT_NE(why.find(p.string()), std::string::npos) << shape << ": " << why;
    EXPECT_NE(why.find("malformed .npy header"), std::string::npos) << shape << ": " << why;
  }
  for (const char* header : {"{'descr': '<f4', 'fortran_order': False, }",                             // no shape
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }",  // unknown key
                             "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }",
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk"}) {
    const std::string why = refusal(npy_file("header", header, f32_bytes({1})));
    EXPECT_NE(why.find("malformed .npy header"), std::string::npos) << header << ": " << why;
  }
  EXPECT_NE(refusal(npy_file("fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", f32_bytes({1})))
                .find("Fortran-order"),
            std::string::npos);
}

// A header may claim any shape; the data must be in the file before anything is allocated.
TEST(Npy, AShapeLargerThanTheDataIsRefusedBeforeAllocating) {
  for (const char* shape : {"(1099511627776,)", "(1099511627776, 1099511627776)", "(3,)"}) {
    const std::string why = refusal(npy_file(
        "big", std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", f32_bytes({1, 2})));
    EXPECT_TRUE(why.find("shorter than its shape") != std::string::npos ||
                why.find("too many elements") != std::string::npos)
        << shape << ": " << why;
  }
}

}  // namespace
}  // namespace qc
