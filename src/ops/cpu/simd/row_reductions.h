#pragma once
// Row reductions for the CPU kernels (softmax, cross-entropy) written so that they vectorise:
// several independent accumulators ("lanes") that the compiler keeps in vector registers, since it
// may not reassociate a single scalar accumulator.
#include <algorithm>
#include <cstdint>

namespace nf::cpu {

// Independent accumulators per row reduction: enough for two AVX-512 (or four AVX2) f32 vectors.
inline constexpr int64_t kLanes = 32;

// max(a, b) by value: unlike std::max, which returns a reference, GCC turns it into vmaxps.
template <class T>
inline T max_of(T a, T b) {
  return a < b ? b : a;
}

// max_i x[i] over n >= 1 elements. With a NaN in x the result may or may not be NaN (callers
// that go on to compute e^(x - max) get NaN either way).
template <class T>
T row_max(const T* x, int64_t n) {
  T lane[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) lane[j] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lane[j] = max_of(lane[j], x[i + j]);
  }
  T m = lane[0];
  for (int64_t j = 1; j < kLanes; ++j) m = std::max(m, lane[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// Sum over lanes of f(i) for i in [0, n); f is inlined into the lane loop.
template <class T, class F>
T lane_sum(int64_t n, F f) {
  T lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += f(i + j);
  }
  T s = 0;
  for (int64_t j = 0; j < kLanes; ++j) s += lane[j];
  for (; i < n; ++i) s += f(i);
  return s;
}

}  // namespace nf::cpu
