#include "nanoformer/core/parallel.h"

#include <omp.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "core/blas_library.h"

namespace nf {
namespace {

int initial_threads() {
  if (const char* env = std::getenv("NANOFORMER_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void apply(int n) {
  omp_set_num_threads(n);
  if (const auto set = blas::library().set_num_threads) set(n);
}

int& thread_count() {
  static int n = [] {
    const int v = initial_threads();
    apply(v);
    return v;
  }();
  return n;
}

}  // namespace

int num_threads() { return thread_count(); }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  thread_count() = n;
  apply(n);
}

const char* blas_info() {
  static const std::string info = [] {
    const blas::Library& lib = blas::library();
    std::string s = lib.path;
    if (lib.corename) s += std::string(" core=") + lib.corename();
    if (lib.config) s += std::string(" (") + lib.config() + ")";
    return s;
  }();
  return info.c_str();
}

}  // namespace nf
