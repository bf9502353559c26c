// Activation quantisation (activation_quant.h): the AVX2 forms of Q8_0's and Q8_K's quantisers, and
// the reference ones (quant_rows.cpp) where the build has no AVX2 or `scalar` asks for them.
#include "ops/cpu/quant/activation_quant.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

// Two formulas, both giving x ~ d q with q in [-127, 127], and sums16[i] = the sum of q over values
// 16 i .. 16 i + 15:
//   Q8_0 (blocks of 32): d = max|x| / 127, q = round(x * id), id = 1 / d (roundf: ties away from 0),
//     as quantize_row(q8_0); d rounded to f16 as Q8_0 stores it;
//   Q8_K (blocks of 256): s = -127 / max (max: the x of largest magnitude, with its sign, the first
//     on ties), q = min(127, nearest(s x)) (ties to even), d = 1 / s, as quantize_row(q8_k) and
//     llama.cpp's quantize_row_q8_K.
// The reference quantisers compute them (quant_rows.cpp); these take q, d and the sums from their blocks.
float reference_q8_0(const float* x, int8_t* q, int32_t* sums16) {
  BlockQ8_0 block;
  quantize_q8_0(x, &block, 1);
  std::memcpy(q, block.qs, kQK8_0);
  for (int i = 0; i < kQK8_0 / 16; ++i) {
    sums16[i] = 0;
    for (int j = 16 * i; j < 16 * i + 16; ++j) sums16[i] += q[j];
  }
  return f16_to_float(block.d);
}

float reference_q8_k(const float* x, int8_t* q, int32_t* sums16) {
  BlockQ8_K block;
  quantize_q8_k(x, &block, 1);
  std::memcpy(q, block.qs, kQK_K);
  std::copy(block.bsums, block.bsums + kQK_K / 16, sums16);
  return block.d;
}

#if defined(__AVX2__) && defined(__FMA__)
inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// roundf on 8 lanes: truncate, then step away from zero when the dropped fraction is >= 1/2
// (x - trunc(x) is exact, so this is roundf's result bit for bit)
inline __m256 round_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

inline float absmax_avx2(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < n; j += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
  return hmax(amax);
}

// q[j] for 32 values at a time: `level` maps 8 floats to 8 int32; packed to int8 (saturating) in
// order; and the sums of each 16 (unless sums16 is null)
template <class Level>
void store_levels(const float* x, int n, int8_t* q, int32_t* sums16, Level level) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int j = 0; j < n; j += 32) {
    __m256i i[4];
    for (int v = 0; v < 4; ++v) i[v] = level(_mm256_loadu_ps(x + j + 8 * v));
    if (sums16 != nullptr) {
      sums16[j / 16] = hsum_i32(_mm256_add_epi32(i[0], i[1]));
      sums16[j / 16 + 1] = hsum_i32(_mm256_add_epi32(i[2], i[3]));
    }
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), _mm256_permutevar8x32_epi32(packed, order));
  }
}

// the AVX2 forms, n a multiple of 32, the same bits; Q8_0's d unrounded
float quantize_q8_0_avx2(const float* x, int n, int8_t* q, int32_t* sums16) {
  const float d = absmax_avx2(x, n) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  store_levels(x, n, q, sums16, [&](__m256 v) { return _mm256_cvtps_epi32(round_away(_mm256_mul_ps(v, id))); });
  return d;
}

// nearest with ties to even is the conversion's default rounding; |s x| <= 127 up to rounding, and
// the packs saturate a 128 to 127 as min(127, .) does
float quantize_q8_k_avx2(const float* x, int n, int8_t* q, int32_t* sums16) {
  const float amax = absmax_avx2(x, n);
  int first = 0;
  while (first + 1 < n && std::fabs(x[first]) != amax) ++first;  // the first value of largest magnitude, with its sign
  const float max = x[first];
  const __m256 s = _mm256_set1_ps(max != 0.0f ? -127.0f / max : 0.0f);
  store_levels(x, n, q, sums16, [&](__m256 v) { return _mm256_cvtps_epi32(_mm256_mul_ps(v, s)); });
  return max != 0.0f ? 1.0f / (-127.0f / max) : 0.0f;
}

// d rounded to f16 and back, as Q8_0 stores it
inline float round_to_f16(float d) {
#if defined(__F16C__)
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
#else
  return f16_bits_to_float(float_to_f16_bits(d));
#endif
}
#endif

// Q8_0's formula for 32 values (d rounded to f16), Q8_K's for 256
float quantize_block(const float* x, int n, int8_t* q, int32_t* sums16, bool scalar) {
#if defined(__AVX2__) && defined(__FMA__)
  if (!scalar) return n == 32 ? round_to_f16(quantize_q8_0_avx2(x, n, q, sums16)) : quantize_q8_k_avx2(x, n, q, sums16);
#endif
  return n == 32 ? reference_q8_0(x, q, sums16) : reference_q8_k(x, q, sums16);
}

}  // namespace

void quantize_activations(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block,
                          QuantizedActivations& out, bool scalar) {
  NF_CHECK(block == 32 || block == 256, "quantize_activations: block ", block, " is not 32 or 256");
  NF_CHECK(cols % block == 0, "quantize_activations: ", cols, " values are not whole blocks of ", block);
  out.rows = rows, out.cols = cols, out.block = block;
  const int64_t nb = cols / block;
  const auto grow = [](auto& v, int64_t size) {
    if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
  };
  grow(out.q, rows * cols);
  grow(out.d, rows * nb);
  if (block == 32) grow(out.s, rows * nb);
  else grow(out.sums, rows * (cols / 16));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sums16[16];
      const float d = quantize_block(x + r * ldx + b * block, static_cast<int>(block), out.q.data() + r * cols + b * block,
                                     sums16, scalar);
      const size_t i = static_cast<size_t>(r * nb + b);
      out.d[i] = d;
      if (block == 32) {
        // (in 64 bits: a block holding inf or NaN has levels of INT_MIN, sums16 too)
        out.s[i] = d * static_cast<float>(static_cast<int64_t>(sums16[0]) + sums16[1]);
      } else {
        for (size_t g = 0; g < 16; ++g) out.sums[i * 16 + g] = static_cast<int16_t>(sums16[g]);
      }
    }
}

void quantize_activation_blocks(const float* x, int64_t ldx, int64_t rows, int64_t cols, int64_t block, void* out) {
  NF_CHECK(block == kQK8_0 || block == kQK_K, "quantize_activation_blocks: block ", block, " is not 32 or 256");
  NF_CHECK(cols % block == 0, "quantize_activation_blocks: ", cols, " values are not whole blocks of ", block);
  const int64_t nb = cols / block;
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(cols, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x + r * ldx;
      if (block == kQK8_0) {
        BlockQ8_0* blocks = static_cast<BlockQ8_0*>(out) + r * nb;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
        for (int64_t b = 0; b < nb; ++b)
          // (vcvtps2ph as _cvtss_sh does, whose clang form is a compound literal -Wpedantic warns of)
          blocks[b].d = static_cast<uint16_t>(_mm_extract_epi16(
              _mm_cvtps_ph(_mm_set_ss(quantize_q8_0_avx2(row + b * kQK8_0, kQK8_0, blocks[b].qs, nullptr)), _MM_FROUND_TO_NEAREST_INT), 0));
#else
        quantize_q8_0(row, blocks, nb);  // the reference: the same bits
#endif
      } else {
        BlockQ8_K* blocks = static_cast<BlockQ8_K*>(out) + r * nb;
#if defined(__AVX2__) && defined(__FMA__)
        for (int64_t b = 0; b < nb; ++b) {
          int32_t sums16[kQK_K / 16];
          blocks[b].d = quantize_q8_k_avx2(row + b * kQK_K, kQK_K, blocks[b].qs, sums16);
          for (int g = 0; g < kQK_K / 16; ++g) blocks[b].bsums[g] = static_cast<int16_t>(sums16[g]);
        }
#else
        quantize_q8_k(row, blocks, nb);  // the reference: the same bits
#endif
      }
    }
  });
}

}  // namespace nf::cpu
