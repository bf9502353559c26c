// Writing safetensors atomically: the whole file goes to "<path>.tmp.<pid>", is fsynced, and is
// renamed over `path` (then the directory is fsynced), so readers see the old file or the new one,
// never a partial one.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/ops/view.h"
#include "io/safetensors_internal.h"

namespace nf::io {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string errno_message(int err) { return std::system_category().message(err); }

// The bytes of `t` in row-major order: itself when contiguous, else a contiguous copy.
Tensor contiguous_bytes(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  copy_into(out, t);
  return out;
}

void check_tensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    NF_CHECK(!name.empty(), file_context(path), "a tensor has an empty name");
    NF_CHECK(name != "__metadata__", file_context(path), "'__metadata__' is reserved and cannot name a tensor");
    NF_CHECK(seen.insert(name).second, file_context(path), "tensor '", name, "' is given twice");
    NF_CHECK(t.defined(), file_context(path), "tensor '", name, "' is undefined");
    NF_CHECK(t.device().type == DeviceType::cpu, file_context(path), "tensor '", name, "' is on ",
             t.device().str(), "; move it to the CPU first");
  }
}

// The JSON header, padded with spaces to a multiple of 8 bytes so the data section is aligned.
std::string make_header(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * t.itemsize();
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    NF_FAIL(file_context(path), "cannot encode the header (names and metadata must be valid UTF-8): ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// Owns the temporary file until it has been renamed into place; removes it on any failure.
class TemporaryFile {
 public:
  TemporaryFile(std::string path, std::string final_path) : path_(std::move(path)), final_(std::move(final_path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      const int err = errno;
      NF_FAIL(file_context(final_), "cannot create '", path_, "': ", errno_message(err));
    }
  }
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t written = ::write(fd_, p, n);
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) {
        const int err = errno;
        NF_FAIL(file_context(final_), "cannot write '", path_, "': ", errno_message(err));
      }
      p += written;
      n -= static_cast<size_t>(written);
    }
  }

  // fsync, close, rename over the final path, then fsync the directory so the rename is durable.
  void commit() {
    if (::fsync(fd_) != 0) {
      const int err = errno;
      NF_FAIL(file_context(final_), "cannot sync '", path_, "': ", errno_message(err));
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      NF_FAIL(file_context(final_), "cannot close '", path_, "': ", errno_message(err));
    }
    if (::rename(path_.c_str(), final_.c_str()) != 0) {
      const int err = errno;
      NF_FAIL(file_context(final_), "cannot rename '", path_, "' into place: ", errno_message(err));
    }
    committed_ = true;
    std::filesystem::path dir = std::filesystem::path(final_).parent_path();
    if (dir.empty()) dir = ".";
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);  // best effort: the data itself is already synced
      ::close(dir_fd);
    }
  }

 private:
  std::string path_, final_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  check_tensors(path, tensors);
  const std::string header = make_header(path, tensors, metadata);
  NoGradGuard no_grad;
  TemporaryFile file(path + ".tmp." + std::to_string(::getpid()), path);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  file.write(length, sizeof length);
  file.write(header.data(), header.size());
  for (const auto& [name, t] : tensors) {
    const Tensor bytes = contiguous_bytes(t);
    file.write(bytes.raw_data(), static_cast<size_t>(bytes.numel()) * bytes.itemsize());
  }
  file.commit();
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, std::vector<std::pair<std::string, Tensor>>(tensors.begin(), tensors.end()), metadata);
}

void save_safetensors(const std::string& path, std::initializer_list<std::pair<std::string, Tensor>> tensors,
                      const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, std::vector<std::pair<std::string, Tensor>>(tensors), metadata);
}

}  // namespace nf::io
