#include "nanoformer/core/storage.h"

#include <atomic>
#include <cstdlib>
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
}  // namespace

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  NF_CHECK(device.type == DeviceType::cpu, "Storage: allocation on ", device.str(), " is not supported yet");
  // aligned_alloc needs a size that is a multiple of the alignment; never ask for 0 bytes
  const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
  count_allocation(nbytes);
}

Storage::Storage(void* external, size_t nbytes, std::shared_ptr<void> owner, Device device)
    : data_(external), nbytes_(nbytes), device_(device), owner_(std::move(owner)) {
  NF_CHECK(owner_ != nullptr, "Storage: external memory needs an owner");
}

Storage::~Storage() {
  if (owner_) return;  // external memory: the owner releases it
  std::free(data_);
  g_current.fetch_sub(nbytes_);
}

namespace memory {
size_t current_bytes() { return g_current.load(); }
size_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }
}  // namespace memory

}  // namespace nf
