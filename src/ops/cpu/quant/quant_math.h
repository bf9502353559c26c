#pragma once
// The rounding helpers the reference quantisers share (quant_rows.cpp, quant_rows_k.cpp), in the
// references' f32 arithmetic (both files are compiled with -ffp-contract=off).
#include <bit>
#include <cmath>
#include <cstdint>

namespace nf::cpu {

// The value of largest magnitude, with its sign; the first one when two tie.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// Rounds to the nearest integer, ties to even, as llama.cpp's nearest_int: adding 1.5 * 2^23 leaves
// the rounded value in the low 22 mantissa bits (exact for |v| < 2^22; beyond, the same bits as it).
inline int nearest_int(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v + 12582912.0f);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

}  // namespace nf::cpu
