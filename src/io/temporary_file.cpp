// Atomic file writes: a temporary beside the target, fsynced and renamed into place.
#include "io/temporary_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "nanoformer/core/error.h"

namespace nf::io {
namespace {

std::string errno_message(int err) { return std::system_category().message(err); }

}  // namespace

TemporaryFile::TemporaryFile(const std::string& final_path, std::string context)
    : path_(final_path + ".tmp." + std::to_string(::getpid())), final_(final_path), context_(std::move(context)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    NF_FAIL(context_, "cannot create '", path_, "': ", errno_message(err));
  }
}

TemporaryFile::~TemporaryFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(path_.c_str());
}

void TemporaryFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t written = ::write(fd_, p, n);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      const int err = errno;
      NF_FAIL(context_, "cannot write '", path_, "': ", errno_message(err));
    }
    p += written;
    n -= static_cast<size_t>(written);
  }
}

void TemporaryFile::commit() {
  if (::fsync(fd_) != 0) {
    const int err = errno;
    NF_FAIL(context_, "cannot sync '", path_, "': ", errno_message(err));
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    NF_FAIL(context_, "cannot close '", path_, "': ", errno_message(err));
  }
  if (::rename(path_.c_str(), final_.c_str()) != 0) {
    const int err = errno;
    NF_FAIL(context_, "cannot rename '", path_, "' into place: ", errno_message(err));
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

}  // namespace nf::io
