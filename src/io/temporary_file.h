#pragma once
// Writing a file atomically, shared by the safetensors and GGUF writers: the bytes go to
// "<path>.tmp.<pid>", which commit() fsyncs and renames over `path` (then fsyncs the directory), so
// readers see the old file or the new one, never a partial one. Without commit() the temporary is
// removed.
#include <cstddef>
#include <string>

namespace nf::io {

class TemporaryFile {
 public:
  // `context` starts every error message ("<format>: <path>: ").
  TemporaryFile(const std::string& final_path, std::string context);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  void write(const void* data, size_t n);
  // fsync, close, rename over the final path, then fsync the directory so the rename is durable.
  void commit();

 private:
  std::string path_, final_, context_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace nf::io
