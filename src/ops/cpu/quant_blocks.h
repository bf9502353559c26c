#pragma once
// The block layouts of llama.cpp's quantised types (ggml-common.h), byte for byte, so a GGUF
// tensor is read in place. x are the block's float values, d (and m) its scales stored as f16,
// q its integers. Each struct is the bytes of one block; rows are blocks one after another.
#include <cstdint>

namespace nf::cpu {

inline constexpr int kQK8_0 = 32, kQK4_0 = 32, kQK4_1 = 32, kQK5_0 = 32, kQK5_1 = 32, kQK_K = 256;

// Q8_0: d = max|x| / 127, q = round(x / d) in [-127, 127];  x = d * q
struct BlockQ8_0 {
  uint16_t d;            // f16
  int8_t qs[kQK8_0];
};
// Q4_0: d = max / -8 where max is the x of largest magnitude (with its sign), q = min(15, trunc(x / d + 8.5));
// x = d * (q - 8). qs[j] holds q[j] in its low nibble and q[j + 16] in its high nibble.
struct BlockQ4_0 {
  uint16_t d;            // f16
  uint8_t qs[kQK4_0 / 2];
};
// Q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5));  x = d * q + m. Nibbles as Q4_0.
struct BlockQ4_1 {
  uint16_t d, m;         // f16
  uint8_t qs[kQK4_1 / 2];
};
// Q5_0: d = max / -16, q = min(31, trunc(x / d + 16.5)) in 5 bits;  x = d * (q - 16). Low 4 bits as
// Q4_0's nibbles, the fifth bit of q[j] is bit j of the little-endian qh.
struct BlockQ5_0 {
  uint16_t d;            // f16
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
// Q5_1: d = (max - min) / 31, m = min, q = min(31, trunc((x - m) / d + 0.5));  x = d * q + m. Bits as Q5_0.
struct BlockQ5_1 {
  uint16_t d, m;         // f16
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
// Q8_1 (activations only): Q8_0 plus s = d * sum(q), for the dot with Q4_1 / Q5_1's m.
struct BlockQ8_1 {
  uint16_t d, s;         // f16
  int8_t qs[kQK8_0];
};
// Q4_K: a super-block of 256 = 8 sub-blocks of 32; each sub-block j has a 6-bit scale sc[j] and
// 6-bit min mn[j] packed in `scales` (12 bytes);  x = d * sc[j] * q - dmin * mn[j], q in [0, 15].
// qs: 4 groups of 32 bytes, group g holds sub-block 2g in the low nibbles and 2g+1 in the high.
struct BlockQ4_K {
  uint16_t d, dmin;      // f16
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
// Q6_K: 16 sub-blocks of 16, an int8 scale each;  x = d * scales[j] * (q - 32), q in [0, 63]:
// 4 low bits in ql, 2 high bits in qh (ggml's interleaving).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;            // f16
};
// Q8_K (activations only, the partner of the K types): d = max|x| / 127 as f32, q = round(x / d),
// bsums[i] = sum of q over the i-th group of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

}  // namespace nf::cpu
