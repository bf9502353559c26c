// Mapping a whole file copy-on-write (mmap), unmapped when the last owner lets go.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "nanoformer/core/error.h"

namespace nf::io {

MappedFile map_file(const std::string& path, const std::string& context) {
  const auto errno_message = [](int err) { return std::system_category().message(err); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    NF_FAIL(context, "cannot open: ", errno_message(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    NF_FAIL(context, "cannot stat: ", errno_message(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    NF_FAIL(context, "not a regular file");
  }
  MappedFile file;
  file.size = static_cast<size_t>(st.st_size);
  if (file.size == 0) {
    ::close(fd);
    return file;
  }
  // Writable but private: a write (an optimizer step on a parameter that is a view, a weight
  // rewritten in place) copies that page for this process alone and the file never changes; pages
  // never written stay the page cache's, shared. MAP_NORESERVE: no swap is reserved for the pages
  // that might be written, so a file larger than memory maps as a read-only one does (Linux ignores
  // it under strict overcommit, vm.overcommit_memory = 2, where the whole size is charged).
  void* addr = ::mmap(nullptr, file.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  NF_CHECK(addr != MAP_FAILED, context, "cannot map ", file.size, " bytes: ", errno_message(err));
  const size_t size = file.size;
  file.mapping = std::shared_ptr<void>(addr, [size](void* p) { ::munmap(p, size); });
  return file;
}

void release_pages(const void* p, size_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  // (advice only: a kernel that refuses it leaves the pages resident, nothing else changes)
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace nf::io
