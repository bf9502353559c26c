// The system's available memory: /proc/meminfo capped by the cgroup's limit.
#include "nanoformer/util/system_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace nf::util {
namespace {

// The limit of a cgroup (v2 memory.max, v1 limit_in_bytes), or -1 when none is set.
int64_t cgroup_limit_bytes() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::FILE* f = std::fopen(path, "r");
    if (!f) continue;
    long long v = -1;
    const bool numeric = std::fscanf(f, "%lld", &v) == 1;
    std::fclose(f);
    if (numeric && v > 0) return v;
  }
  return -1;
}

}  // namespace

int64_t available_memory_bytes() {
  int64_t available = -1;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      long long kib = 0;
      if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) available = kib * 1024;
    }
    std::fclose(f);
  }
  if (available < 0) available = static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const int64_t limit = cgroup_limit_bytes();
  return limit > 0 ? std::min(available, limit) : available;
}

}  // namespace nf::util
