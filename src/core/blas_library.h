#pragma once
// The BLAS library, loaded at run time. OpenBLAS picks its kernels (its "core type") once, when it
// is loaded, from the CPU model; a CPU newer than the library (e.g. Emerald Rapids for OpenBLAS
// 0.3.21) falls back to Prescott (SSE3) kernels at a fraction of the speed. Loading it ourselves
// lets us first set OPENBLAS_CORETYPE from the CPU's features (AVX512-BF16 -> Cooperlake,
// AVX-512 -> SkylakeX, AVX2 -> Haswell) when the user has not set it.
#include <cblas.h>

#include <string>

namespace nf::blas {

struct Library {
  std::string path;  // what was loaded (NF_BLAS_LIBRARY at configure time)
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::cblas_dgemm) dgemm = nullptr;
  void (*set_num_threads)(int) = nullptr;  // OpenBLAS only
  char* (*corename)() = nullptr;           // OpenBLAS only
  char* (*config)() = nullptr;             // OpenBLAS only
};

// Loads on first use; throws nf::Error naming the library when it cannot be loaded.
const Library& library();

}  // namespace nf::blas
