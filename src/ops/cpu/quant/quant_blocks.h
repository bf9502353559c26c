#pragma once
// The block layouts of llama.cpp's quantised types (ggml-common.h), byte for byte, so a GGUF
// tensor is read in place. x are the block's float values, d (and m) its scales stored as f16,
// q its integers. Each struct is the bytes of one block; rows are blocks one after another.
// Quantising (src/ops/cpu/quant/quant_rows.cpp) computes in f32 with id = 1 / d (0 when d = 0) before d
// is rounded to f16; "max" is the x of largest magnitude with its sign (the first on ties);
// trunc / round: C's truncation / roundf (ties away from 0); nearest: ties to even.
#include <cstdint>

namespace nf::cpu {

inline constexpr int kQK8_0 = 32, kQK4_0 = 32, kQK4_1 = 32, kQK5_0 = 32, kQK5_1 = 32, kQK_K = 256;

// Q8_0: d = max|x| / 127, q = round(x * id) in [-127, 127];  x = d * q
struct BlockQ8_0 {
  uint16_t d;            // f16
  int8_t qs[kQK8_0];
};
// Q4_0: d = max / -8, q = min(15, trunc(x * id + 8.5));
// x = d * (q - 8). qs[j] holds q[j] in its low nibble and q[j + 16] in its high nibble.
struct BlockQ4_0 {
  uint16_t d;            // f16
  uint8_t qs[kQK4_0 / 2];
};
// Q4_1: d = (max(x) - min(x)) / 15, m = min(x), q = min(15, trunc((x - m) * id + 0.5));  x = d * q + m.
// Nibbles as Q4_0.
struct BlockQ4_1 {
  uint16_t d, m;         // f16
  uint8_t qs[kQK4_1 / 2];
};
// Q5_0: d = max / -16, q = min(31, trunc(x * id + 16.5)) in 5 bits;  x = d * (q - 16). Low 4 bits as
// Q4_0's nibbles, the fifth bit of q[j] is bit j of the little-endian qh.
struct BlockQ5_0 {
  uint16_t d;            // f16
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
// Q5_1: d = (max(x) - min(x)) / 31, m = min(x), q = min(31, trunc((x - m) * id + 0.5));  x = d * q + m.
// Bits as Q5_0.
struct BlockQ5_1 {
  uint16_t d, m;         // f16
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
// Q8_1 (activations only): Q8_0 plus s = sum(q) * d (before d is rounded), for the dot with Q4_1 / Q5_1's m.
struct BlockQ8_1 {
  uint16_t d, s;         // f16
  int8_t qs[kQK8_0];
};
// Q4_K: a super-block of 256 = 8 sub-blocks of 32; each sub-block j has a 6-bit scale sc[j] and
// 6-bit min mn[j] packed in `scales` (12 bytes: bytes 0-3 sc[0..3] and 4-7 mn[0..3] in their low 6
// bits; bytes 8-11 the low nibbles of sc[4..7] | mn[4..7] << 4; the top 2 bits of sc[4..7] in bits
// 6-7 of bytes 0-3, of mn[4..7] in bytes 4-7);  x = (d * sc[j]) * q - dmin * mn[j], q in [0, 15].
// qs: 4 groups of 32 bytes, group g holds sub-block 2g in the low nibbles and 2g+1 in the high.
// Quantising (llama.cpp's reference): per sub-block a weighted least-squares fit x ~ s * q - mn
// (weights sqrt(mean x^2) + |x|, 21 trial scales); d = max s / 63, dmin = max mn / 63,
// sc = nearest(s * 63 / max s), mn likewise; then q = clamp(nearest((x + dmin * mn) / (d * sc)), 0, 15).
struct BlockQ4_K {
  uint16_t d, dmin;      // f16
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
// Q6_K: 16 sub-blocks of 16, an int8 scale each;  x = (d * scales[j]) * (q - 32), q in [0, 63]:
// 4 low bits in ql, 2 high bits in qh. Value 128h + 32k + l (h < 2, k < 4, l < 32) has its low bits in
// ql[64h + 32(k % 2) + l] >> 4(k / 2), its high bits in qh[32h + l] >> 2k.
// Quantising (llama.cpp's reference): per sub-block the best of 19 trial scales s (weights x^2);
// d = smax / -128 with smax the s of largest magnitude, scales = min(127, nearest(s / d)),
// q - 32 = clamp(nearest(x / (d * scales)), -32, 31).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;            // f16
};
// Q5_K: Q4_K with a fifth bit, q in [0, 31]: x = (d * sc[j]) * q - dmin * mn[j] over sub-blocks j of 32,
// scales and mins packed as Q4_K's; qs as Q4_K's nibbles (group g: sub-block 2g low, 2g+1 high), the
// fifth bit of value l of sub-block j is bit j of qh[l].
// Quantising (llama.cpp's reference): Q4_K's fit with nmax 31 and 16 trial scales (rmin -0.5, step 0.1);
// then q = clamp(nearest((x + dmin * mn) / (d * sc)), 0, 31).
struct BlockQ5_K {
  uint16_t d, dmin;      // f16
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// Q3_K: 16 sub-blocks of 16, a 6-bit scale each stored as sc + 32;  x = (d * sc[j]) * q, q in [-4, 3]:
// q + 4's 2 low bits in qs, its third bit in hmask. Value 128h + 32k + l (h < 2, k < 4, l < 32) has its
// low bits in qs[32h + l] >> 2k, its high bit in hmask[l] >> (4h + k). `scales` (12 bytes): bytes 0-7
// hold the low nibbles of sc + 32 for j < 8 (low nibble of byte j) and j >= 8 (high nibble of byte
// j - 8); the top 2 bits of sc[j] + 32 at bits 2(j / 4) of byte 8 + j % 4.
// Quantising (llama.cpp's reference): per sub-block the levels of s = -4 / max (max: signed absmax),
// improved by up to 5 sweeps moving one level at a time while sum(w x l)^2 / sum(w l^2) grows (w = x^2),
// the scale sum(w x l) / sum(w l^2); d = smax / -32 (smax: the scale of largest magnitude),
// sc = clamp(nearest(s / d), -32, 31); then q = clamp(nearest(x / (d * sc)), -4, 3).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;            // f16
};
// Q8_K (activations only, the partner of the K types): d = 1 / (-127 / max) as f32 (0 when max = 0),
// q = min(127, nearest(x * (-127 / max))), bsums[i] = sum of q over the i-th group of 16;  x = d * q.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ3_K) == 110);

}  // namespace nf::cpu
