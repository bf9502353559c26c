#pragma once
// A copy-on-write memory mapping of a whole file, shared by the readers of safetensors and GGUF:
// views of it are read in place and may be written (that page is then copied for this process
// alone); the file is never changed.
#include <cstddef>
#include <memory>
#include <string>

namespace nf::io {

struct MappedFile {
  std::shared_ptr<void> mapping;  // unmapped when the last owner (the file, a view) lets go; null when empty
  size_t size = 0;
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(mapping.get()); }
};

// Maps `path` privately (PROT_READ | PROT_WRITE, MAP_PRIVATE); throws nf::Error starting with `context` ("<format>: <path>: ")
// when it cannot be opened, is not a regular file, or cannot be mapped. An empty file gives an
// empty mapping (mmap refuses zero bytes).
MappedFile map_file(const std::string& path, const std::string& context);

// Drops the pages wholly inside [p, p + n) of such a mapping from the process's resident memory
// (madvise MADV_DONTNEED): a page touched again is read back from the file, so only for bytes
// never written (a copied page's writes would be lost), whose other copy is what the kernels read
// (the panels).
void release_pages(const void* p, size_t n);

}  // namespace nf::io
