#pragma once
// How much memory this process can still take, read from the system: the kernel's MemAvailable
// (/proc/meminfo; sysconf's free pages where that file is absent), capped by the memory limit of
// the process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) when one is set.
#include <cstdint>

namespace nf::util {

// Bytes a new allocation can take now: min(MemAvailable, cgroup limit).
int64_t available_memory_bytes();

}  // namespace nf::util
