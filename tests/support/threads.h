#pragma once
// Running a computation at a chosen thread count, for tests that the bits do not depend on it.
#include "nanoformer/core/parallel.h"

namespace nf::testing {

// f() with nf::num_threads() == n; the count in force before is restored, also when f throws
template <class F>
auto at_threads(int n, F&& f) {
  struct Restore {
    int threads = num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  set_num_threads(n);
  return f();
}

}  // namespace nf::testing
