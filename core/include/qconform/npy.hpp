// NumPy .npy files (format versions 1.0-3.0, C order, little-endian) as tensors.
// f16 maps to '<f2'; bf16 and f8 have no NumPy dtype and travel as their bit patterns
// ('<u2' / '|u1'), with the format named separately.
#pragma once

#include "qconform/tensor.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace qc {

// The type a format's elements are stored as in a .npy file: itself where NumPy has it, else the
// integer type of its bit patterns (bf16: u16; f8: u8) or of its one value per byte (i4: i8, u4: u8).
DType npy_storage_dtype(DType t);

// Reads a .npy file. `as` reinterprets u2/u1 bit patterns as bf16 or f8 when given.
Tensor read_npy(const std::filesystem::path& file, std::optional<DType> as = std::nullopt);
// The same from the file's bytes (`where` names them in messages).
Tensor read_npy_bytes(std::string_view bytes, const std::string& where, std::optional<DType> as = std::nullopt);
void write_npy(const std::filesystem::path& file, const Tensor& t);

}  // namespace qc
