#pragma once
// A block of bytes on a device. CPU blocks are 64-byte aligned and counted, so current and peak
// memory can be reported. Freed blocks are cached and reused for requests of the same rounded size
// (small ones to 4 classes per power of two, from 1 MiB to pages), up to
// NANOFORMER_ALLOCATOR_CACHE_MB (default 2048) in all. A Storage may also wrap external memory (a
// memory-mapped file) that it keeps alive through an owner handle and does not count.
#include <cstddef>
#include <memory>

#include "nanoformer/core/device.h"

namespace nf {

inline constexpr size_t kAlignment = 64;

class Storage {
 public:
  Storage(size_t nbytes, Device device);                                     // allocates
  Storage(void* external, size_t nbytes, std::shared_ptr<void> owner, Device device = {});
  // CPU memory that is read whole, over and over (a weight's panels, read by every decode step):
  // 2 MiB-aligned and advised as transparent huge pages (madvise(MADV_HUGEPAGE), which Linux's
  // default THP mode "madvise" honours), so that streaming it costs a TLB miss every 2 MiB rather
  // than every 4 KiB. Counted; not cached (freed to the system). Below 2 MiB an ordinary block.
  static std::shared_ptr<Storage> huge_pages(size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool owns_memory() const { return owner_ == nullptr; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::shared_ptr<void> owner_;  // set for external memory
};

namespace memory {
size_t current_bytes();   // bytes held by live CPU storages (the cache not included)
size_t peak_bytes();      // high-water mark of current_bytes() since start or the last reset_peak()
void reset_peak();
size_t cached_bytes();    // bytes of freed blocks kept for reuse
void empty_cache();       // returns the cached blocks to the system
// The most bytes of freed blocks kept: 2 GiB, or NANOFORMER_ALLOCATOR_CACHE_MB's MiB; blocks beyond go
// back to the system (0: none kept). Releases what the new limit leaves out.
size_t cache_limit();
void set_cache_limit(size_t bytes);
}  // namespace memory

}  // namespace nf
