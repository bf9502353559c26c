#include "nanoformer/core/storage.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

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

// Large blocks are kept after free and handed out again for a request of the same rounded size.
// Training and inference loops allocate the same shapes every step, and a fresh large block costs
// a page fault per 4 KiB on first touch (glibc maps blocks above 32 MiB anew on every malloc).
constexpr size_t kCacheMinBytes = 1 << 20;
constexpr size_t kPage = 4096;

class BlockCache {
 public:
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache();  // never destroyed: storages may outlive statics
    return *cache;
  }

  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    cached_ -= bytes;
    return p;
  }

  // Keeps the block if the cache has room, else frees it.
  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + bytes <= limit_) {
        free_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

 private:
  BlockCache() {
    if (const char* env = std::getenv("NANOFORMER_ALLOCATOR_CACHE_MB")) limit_ = std::strtoull(env, nullptr, 10) << 20;
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
  size_t limit_ = size_t{2} << 30;  // 2 GiB unless NANOFORMER_ALLOCATOR_CACHE_MB says otherwise
};

// Bytes actually requested from the system for `nbytes`: a multiple of the alignment, and of the
// page size for cacheable blocks so near-equal requests share cache entries.
size_t block_size(size_t nbytes) {
  const size_t aligned = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (aligned < kCacheMinBytes) return aligned == 0 ? kAlignment : aligned;
  return (aligned + kPage - 1) / kPage * kPage;
}

}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  NF_CHECK(device.type == DeviceType::cpu, "Storage: allocation on ", device.str(), " is not supported yet");
  const size_t bytes = block_size(nbytes);
  if (bytes >= kCacheMinBytes) data_ = BlockCache::instance().take(bytes);
  if (data_ == nullptr) data_ = std::aligned_alloc(kAlignment, bytes);
  if (data_ == nullptr) throw std::bad_alloc();
  count_allocation(nbytes);
}

Storage::Storage(void* external, size_t nbytes, std::shared_ptr<void> owner, Device device)
    : data_(external), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {
  NF_CHECK(owner_ != nullptr, "Storage: external memory needs an owner");
}

Storage::~Storage() {
  if (owner_) return;  // external memory: the owner releases it
  const size_t bytes = block_size(nbytes_);
  if (bytes >= kCacheMinBytes) {
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
}  // namespace memory

}  // namespace nf
