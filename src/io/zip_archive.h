#pragma once
// The entries of a zip archive whose members are stored uncompressed, as torch.save writes them
// (PyTorch's zip format): the central directory (ZIP64 too) read from the end of the file, each
// entry's data located through its local header. Every offset and size is checked against the
// file before it is used; a compressed or encrypted member, a truncated or overlapping directory,
// or a name given twice is an nf::Error naming the file (and the member).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nf::io {

struct ZipEntry {
  std::string name;
  uint64_t offset = 0;  // of the member's bytes in the file
  uint64_t size = 0;
};

std::vector<ZipEntry> read_stored_zip(const unsigned char* data, size_t size, const std::string& path);

}  // namespace nf::io
