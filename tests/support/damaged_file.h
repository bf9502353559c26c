#pragma once
// Damaging a safetensors file in place, as a failing disk or a bad copy would: the lowest bit of
// one element of one tensor flipped.
#include <cstdint>
#include <fstream>
#include <string>

#include "nanoformer/io/safetensors.h"

namespace nf::testing {

inline void flip_lowest_bit(const std::string& path, const std::string& tensor, int64_t element = 0) {
  size_t offset = 0;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(path);
    const io::TensorEntry& entry = file.entry(tensor);
    offset = entry.begin + static_cast<size_t>(element) * dtype_size(entry.dtype);
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header = 0;  // little-endian length, then the header, then the data section
  unsigned char length[8];
  f.read(reinterpret_cast<char*>(length), 8);
  for (int i = 7; i >= 0; --i) header = (header << 8) | length[i];
  f.seekg(static_cast<std::streamoff>(8 + header + offset));
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 1);
  f.seekp(static_cast<std::streamoff>(8 + header + offset));
  f.write(&byte, 1);
}

}  // namespace nf::testing
