#pragma once
// The super-block types' unpacking (quant_blocks.h gives the bytes and formulas), shared by the
// reference dequantisers (quant_rows_k.cpp), decode's tiles (tiles_k.cpp) and whatever else reads a
// block's integers (prefill's panels): each block's sub-block scales, and its 256 stored integers in
// value order.
#include <cstdint>
#include <cstring>

#include "ops/cpu/quant/quant_blocks.h"

namespace nf::cpu {

// Q4_K's and Q5_K's 12 bytes of 6-bit scales and mins -> 16 bytes, sc[0..7] then mn[0..7]: sub-blocks
// 0-3 keep the low 6 bits of bytes 0-3 (sc) and 4-7 (mn); 4-7 take the nibbles of bytes 8-11 with the
// top 2 bits of bytes 0-3 (sc) and 4-7 (mn) above them.
inline void q4_k_scales(const uint8_t* s, uint8_t* out) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop2 = 0x03030303;
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t words[4] = {a & kLow6, (c & kLow4) | (((a >> 6) & kTop2) << 4), b & kLow6,
                             ((c >> 4) & kLow4) | (((b >> 6) & kTop2) << 4)};
  std::memcpy(out, words, 16);
}

// Q3_K's 12 bytes -> its 16 scales sc[j] (stored as sc + 32 in 6 bits: the low nibble of byte j
// (j < 8) or the high nibble of byte j - 8, the top 2 bits at bit 2 (j / 4) of byte 8 + j % 4), four
// at a time as 32-bit words: scales 4w..4w+3 take their nibbles from bytes 0-3 / 4-7 (low nibbles for
// w < 2, high for w >= 2) and their top bits from bits 2w, 2w + 1 of bytes 8-11
inline void q3_k_scales(const uint8_t* s, int8_t* out) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t words[4] = {(a & kLow4) | ((c & kLow2) << 4), (b & kLow4) | (((c >> 2) & kLow2) << 4),
                             ((a >> 4) & kLow4) | (((c >> 4) & kLow2) << 4), ((b >> 4) & kLow4) | (((c >> 6) & kLow2) << 4)};
  uint8_t u[16];
  std::memcpy(u, words, 16);
  for (int j = 0; j < 16; ++j) out[j] = static_cast<int8_t>(u[j] - 32);
}

// Q5_K's 256 integers q in [0, 31] in value order: value 32j + l (sub-block j) is nibble j % 2 of
// qs[32 (j / 2) + l] with bit j of qh[l] as its fifth bit
inline void q5_k_values(const BlockQ5_K& b, uint8_t* q) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = static_cast<uint8_t>(((b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0f) | ((b.qh[l] >> j) & 1) << 4);
}

// Q3_K's 256 integers as stored, u = q + 4 in [0, 7], in value order: value 128h + 32k + l has its
// low 2 bits at 2k of qs[32h + l] and its third at bit 4h + k of hmask[l]
inline void q3_k_values(const BlockQ3_K& b, uint8_t* u) {
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        u[128 * h + 32 * k + l] =
            static_cast<uint8_t>(((b.qs[32 * h + l] >> (2 * k)) & 3) | ((b.hmask[l] >> (4 * h + k)) & 1) << 2);
}

}  // namespace nf::cpu
