#include "nanoformer/core/parallel.h"

#include <omp.h>

#include <cstdlib>
#include <string>
#include <thread>

namespace nf {

// Optional OpenBLAS entry points: present when linked against OpenBLAS, null otherwise.
extern "C" {
void openblas_set_num_threads(int n) __attribute__((weak));
char* openblas_get_corename() __attribute__((weak));
char* openblas_get_config() __attribute__((weak));
}

namespace {
int initial_threads() {
  if (const char* env = std::getenv("NANOFORMER_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int& thread_count() {
  static int n = [] {
    const int v = initial_threads();
    omp_set_num_threads(v);
    if (openblas_set_num_threads) openblas_set_num_threads(v);
    return v;
  }();
  return n;
}
}  // namespace

int num_threads() { return thread_count(); }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  thread_count() = n;
  omp_set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}

const char* blas_info() {
  static const std::string info = [] {
    std::string s = NF_BLAS_VENDOR;
    if (openblas_get_corename) s += std::string(" core=") + openblas_get_corename();
    if (openblas_get_config) s += std::string(" (") + openblas_get_config() + ")";
    return s;
  }();
  return info.c_str();
}

}  // namespace nf
