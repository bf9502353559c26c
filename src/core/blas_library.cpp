#include "core/blas_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "nanoformer/core/error.h"

namespace nf::blas {
namespace {

// The fastest OpenBLAS core type this CPU can run, or null to let OpenBLAS decide.
const char* best_openblas_core() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
#endif
  return nullptr;
}

template <class Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

Library load() {
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    if (const char* core = best_openblas_core()) setenv("OPENBLAS_CORETYPE", core, 0);
  }
  Library lib;
  lib.path = NF_BLAS_LIBRARY;
  void* handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  NF_CHECK(handle != nullptr, "BLAS: cannot load '", lib.path, "': ", dlerror(),
           " (install libopenblas0-openmp, or configure another library with -DNF_BLAS_LIBRARY=...)");
  lib.sgemm = symbol<decltype(lib.sgemm)>(handle, "cblas_sgemm");
  lib.dgemm = symbol<decltype(lib.dgemm)>(handle, "cblas_dgemm");
  NF_CHECK(lib.sgemm != nullptr && lib.dgemm != nullptr, "BLAS: '", lib.path, "' lacks cblas_sgemm/cblas_dgemm");
  lib.set_num_threads = symbol<decltype(lib.set_num_threads)>(handle, "openblas_set_num_threads");
  lib.corename = symbol<decltype(lib.corename)>(handle, "openblas_get_corename");
  lib.config = symbol<decltype(lib.config)>(handle, "openblas_get_config");
  return lib;  // the handle stays open for the life of the process
}

}  // namespace

const Library& library() {
  static const Library lib = load();
  return lib;
}

}  // namespace nf::blas
