#pragma once
// Thread count for nanoformer's OpenMP kernels and for the BLAS library. The initial value comes
// from NANOFORMER_THREADS, else the number of hardware threads.
#include <cstdint>

namespace nf {

int num_threads();
void set_num_threads(int n);  // also sets the BLAS library's thread count when it has a setter
const char* blas_info();      // vendor and, for OpenBLAS, the core type in use ("OpenBLAS Haswell")

// Grain below which a loop runs on one thread: threads cost more than they save on small work.
inline constexpr int64_t kParallelGrain = 32768;

}  // namespace nf
