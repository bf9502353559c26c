#include "nanoformer/core/storage.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "nanoformer/core/error.h"

namespace nf {
namespace {

std::atomic<size_t> g_current{0};
std::atomic<size_t> g_peak{0};

void count_allocation(size_t n) {
  const size_t now = g_current.fetch_add(n) + n;
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

// Freed blocks are kept and handed out again for a request of the same rounded size. Training
// and inference loops allocate the same shapes every step: a fresh large block costs a page fault
// per 4 KiB on first touch (glibc maps blocks above 32 MiB anew on every malloc), and a small one
// an aligned_alloc and free (glibc's memalign path, which its per-thread cache does not serve:
// about 7% of a small model's decode thread went there; caching them measured 1.02x decode).
// Small sizes are rounded to 4 classes per power of two, large ones to pages. Under
// AddressSanitizer small blocks are not kept, so a use after free is still caught.
constexpr size_t kLargeBytes = 1 << 20;
constexpr size_t kPage = 4096;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheSmall = false;
#else
constexpr bool kCacheSmall = true;
#endif

class BlockCache {
 public:
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache();  // never destroyed: storages may outlive statics
    return *cache;
  }

  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }

  // Keeps the block if the cache has room, else frees it.
  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + bytes <= limit_) {
        free_[bytes].push_back(p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

  size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }

  void set_limit(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
      if (cached_ <= limit_) return;
    }
    release_all();
  }

 private:
  BlockCache() {
    if (const char* env = std::getenv("NANOFORMER_ALLOCATOR_CACHE_MB")) limit_ = std::strtoull(env, nullptr, 10) << 20;
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // rounded size -> its free blocks
  size_t cached_ = 0;
  size_t limit_ = size_t{2} << 30;  // 2 GiB unless NANOFORMER_ALLOCATOR_CACHE_MB says otherwise
};

// Bytes actually requested from the system for `nbytes`: below 1 MiB the next of 4 classes per
// power of two (64, 128, 192, 256, 320, 384, 448, 512, 640, ...: at most a quarter more), above
// that a page multiple.
size_t block_size(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  if (nbytes < kLargeBytes) {
    const size_t top = size_t{1} << (std::bit_width(nbytes - 1) - 1);  // largest power of two below nbytes
    const size_t step = std::max(top / 4, kAlignment);  // aligned_alloc takes multiples of the alignment
    return (nbytes + step - 1) / step * step;
  }
  return (nbytes + kPage - 1) / kPage * kPage;
}

bool cacheable(size_t bytes) { return kCacheSmall || bytes >= kLargeBytes; }

[[noreturn]] void out_of_memory(size_t nbytes) {
  throw OutOfMemory(detail::concat("out of memory: a tensor of ", nbytes, " bytes (", static_cast<double>(nbytes) / (1 << 30),
                                   " GiB) could not be allocated"));
}

}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  NF_CHECK(device.type == DeviceType::cpu, "Storage: allocation on ", device.str(), " is not supported yet");
  const size_t bytes = block_size(nbytes);
  if (cacheable(bytes)) data_ = BlockCache::instance().take(bytes);
  if (data_ == nullptr) data_ = std::aligned_alloc(kAlignment, bytes);
  if (data_ == nullptr) out_of_memory(nbytes);
  count_allocation(nbytes);
}

Storage::Storage(void* external, size_t nbytes, std::shared_ptr<void> owner, Device device)
    : data_(external), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {
  NF_CHECK(owner_ != nullptr, "Storage: external memory needs an owner");
}

std::shared_ptr<Storage> Storage::huge_pages(size_t nbytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  // below one huge page: an ordinary block (a huge page would hold it and waste the rest)
  if (nbytes < kHugePage) return std::make_shared<Storage>(nbytes, Device{});
  void* data = nullptr;
  if (::posix_memalign(&data, kHugePage, (nbytes + kPage - 1) / kPage * kPage) != 0) out_of_memory(nbytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // the whole huge pages only (advice: without THP they stay 4 KiB); the tail keeps small pages
  ::madvise(data, nbytes / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  count_allocation(nbytes);
  std::shared_ptr<void> owner(data, [nbytes](void* p) {
    std::free(p);
    g_current.fetch_sub(nbytes);
  });
  return std::make_shared<Storage>(data, nbytes, std::move(owner));
}

Storage::~Storage() {
  if (owner_) return;  // external memory: the owner releases it
  const size_t bytes = block_size(nbytes_);
  if (cacheable(bytes)) {
    BlockCache::instance().give(data_, bytes);
  } else {
    std::free(data_);
  }
  g_current.fetch_sub(nbytes_);
}

namespace memory {
size_t current_bytes() { return g_current.load(); }
size_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }
size_t cached_bytes() { return BlockCache::instance().cached(); }
void empty_cache() { BlockCache::instance().release_all(); }
size_t cache_limit() { return BlockCache::instance().limit(); }
void set_cache_limit(size_t bytes) { BlockCache::instance().set_limit(bytes); }
}  // namespace memory

}  // namespace nf
