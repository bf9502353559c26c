#pragma once
// The int8 kernels' one product, on 32-bit lanes: acc + the sum of 4 products of an unsigned byte
// of u and a signed byte of s (int8_isa.h chooses which form runs):
//   Int8DotAvx2     vpmaddubsw (adjacent pairs into i16, saturating) then vpmaddwd (into i32):
//                   exact while a pair's sum fits i16, |pair| <= 32767, which the callers ensure
//   Int8DotAvxVnni  vpdpbusd, VEX (AVX-VNNI): exact
// The VNNI form carries its target attribute: a kernel templated on it is compiled for that target
// by calling it, always inlined, from a function with the same attribute (NF_TARGET_AVX_VNNI,
// which also flattens it), so the rest of the binary stays AVX2 and runs on any AVX2 CPU.
#include <immintrin.h>

namespace nf::cpu {

// The int8 kernels' loops over rows and groups unrolled, so their sums stay in registers.
#define NF_UNROLL _Pragma("GCC unroll 16")

#if defined(__AVX2__) && defined(__FMA__)
#define NF_TARGET_AVX_VNNI __attribute__((target("avxvnni"), flatten))
#define NF_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), flatten))

struct Int8DotAvx2 {
  static constexpr bool kVnni = false;
  static __m256i add(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
};

struct Int8DotAvxVnni {
  static constexpr bool kVnni = true;
  NF_TARGET_AVX_VNNI static __m256i add(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
};
#endif

}  // namespace nf::cpu
