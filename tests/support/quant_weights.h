#pragma once
// Quantised weights for the product tests (tests/ops/test_quant_matmul.cpp, test_quant_panels.cpp):
// the formulas of quant_blocks.h written out independently (a row -> its values), and random
// weights of each type.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/quantized_tensor.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "support/testing.h"

namespace nf::testing {

// ---- the weight formulas of quant_blocks.h, written out: row -> values ----

// A row's values, and for each the sum of the magnitudes of the terms that make it (|d (q - o)| +
// |m|, |d sc q| + |dmin mn|, ...): what bounds the rounding of a kernel that sums the terms apart.
struct DecodedRow {
  std::vector<double> value, magnitude;
};

inline double f16(uint16_t h) { return f16_bits_to_float(h); }

template <class Block>
const Block& block_at(const void* row, int64_t b) {
  return static_cast<const Block*>(row)[b];
}

// Q4_K's and Q5_K's 6-bit scale and min of sub-block j (ggml's get_scale_min_k4)
inline std::pair<int, int> k4_scale_min(const uint8_t* q, int j) {
  return {j < 4 ? q[j] & 63 : (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4), j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4)};
}

inline DecodedRow decode_row(QuantType type, const void* row, int64_t k) {
  DecodedRow out;
  const auto add = [&](double scale, int q, double m) {
    out.value.push_back(scale * q + m);
    out.magnitude.push_back(std::abs(scale * q) + std::abs(m));
  };
  const int64_t block = quant_type_info(type).block_size;
  for (int64_t b = 0; b < k / block; ++b) {
    switch (type) {
      case QuantType::q8_0: {
        const auto& blk = block_at<cpu::BlockQ8_0>(row, b);
        for (int j = 0; j < 32; ++j) add(f16(blk.d), blk.qs[j], 0);
        break;
      }
      case QuantType::q4_0:
      case QuantType::q4_1: {  // q[j] low nibble of qs[j], q[j + 16] its high nibble
        const bool min = type == QuantType::q4_1;
        const uint8_t* qs = min ? block_at<cpu::BlockQ4_1>(row, b).qs : block_at<cpu::BlockQ4_0>(row, b).qs;
        const double d = f16(min ? block_at<cpu::BlockQ4_1>(row, b).d : block_at<cpu::BlockQ4_0>(row, b).d);
        const double m = min ? f16(block_at<cpu::BlockQ4_1>(row, b).m) : 0.0;
        for (int j = 0; j < 32; ++j) add(d, (j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) - (min ? 0 : 8), m);
        break;
      }
      case QuantType::q5_0:
      case QuantType::q5_1: {  // as Q4, plus bit j of qh as value j's fifth bit
        const bool min = type == QuantType::q5_1;
        const uint8_t* qs = min ? block_at<cpu::BlockQ5_1>(row, b).qs : block_at<cpu::BlockQ5_0>(row, b).qs;
        const uint8_t* qh = min ? block_at<cpu::BlockQ5_1>(row, b).qh : block_at<cpu::BlockQ5_0>(row, b).qh;
        const double d = f16(min ? block_at<cpu::BlockQ5_1>(row, b).d : block_at<cpu::BlockQ5_0>(row, b).d);
        const double m = min ? f16(block_at<cpu::BlockQ5_1>(row, b).m) : 0.0;
        for (int j = 0; j < 32; ++j) {
          const int low = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4, high = (qh[j / 8] >> (j % 8)) & 1;
          add(d, (low | (high << 4)) - (min ? 0 : 16), m);
        }
        break;
      }
      case QuantType::q4_k: {  // ggml's get_scale_min_k4 and dequantize_row_q4_K
        const auto& blk = block_at<cpu::BlockQ4_K>(row, b);
        const uint8_t* q = blk.scales;
        for (int j = 0; j < 8; ++j) {
          const auto [sc, mn] = k4_scale_min(q, j);
          for (int l = 0; l < 32; ++l) {
            const uint8_t byte = blk.qs[32 * (j / 2) + l];
            add(f16(blk.d) * sc, j % 2 == 0 ? byte & 0xf : byte >> 4, -f16(blk.dmin) * mn);
          }
        }
        break;
      }
      case QuantType::q6_k: {  // dequantize_row_q6_K: two halves of 128, four runs of 32 each
        const auto& blk = block_at<cpu::BlockQ6_K>(row, b);
        std::vector<int> q(256);
        for (int h = 0; h < 2; ++h)
          for (int l = 0; l < 32; ++l) {
            const uint8_t* ql = blk.ql + 64 * h;
            const uint8_t qh = blk.qh[32 * h + l];
            q[128 * h + l] = (ql[l] & 0xf) | ((qh & 3) << 4);
            q[128 * h + l + 32] = (ql[l + 32] & 0xf) | (((qh >> 2) & 3) << 4);
            q[128 * h + l + 64] = (ql[l] >> 4) | (((qh >> 4) & 3) << 4);
            q[128 * h + l + 96] = (ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4);
          }
        for (int i = 0; i < 256; ++i) add(f16(blk.d) * blk.scales[i / 16], q[static_cast<size_t>(i)] - 32, 0);
        break;
      }
      case QuantType::q5_k: {  // dequantize_row_q5_K: Q4_K's scales and nibbles, qh bits u1 = 1 << 2g, u2 = 2 << 2g
        const auto& blk = block_at<cpu::BlockQ5_K>(row, b);
        const uint8_t* q = blk.scales;
        for (int j = 0; j < 8; ++j) {
          const auto [sc, mn] = k4_scale_min(q, j);
          for (int l = 0; l < 32; ++l) {
            const uint8_t byte = blk.qs[32 * (j / 2) + l];
            const int high = (blk.qh[l] & (1 << j)) ? 16 : 0;
            add(f16(blk.d) * sc, (j % 2 == 0 ? byte & 0xf : byte >> 4) + high, -f16(blk.dmin) * mn);
          }
        }
        break;
      }
      case QuantType::q3_k: {  // dequantize_row_q3_K: the kmask1 / kmask2 unpacking of the 12 scale bytes
        const auto& blk = block_at<cpu::BlockQ3_K>(row, b);
        uint32_t aux[4];
        std::memcpy(aux, blk.scales, 12);
        const uint32_t tmp = aux[2];
        aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
        aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
        aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
        aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
        int8_t scales[16];
        std::memcpy(scales, aux, 16);
        int is = 0;
        for (int h = 0; h < 2; ++h)
          for (int shift = 0, mask = 1 << (4 * h); shift < 8; shift += 2, mask <<= 1)
            for (int half = 0; half < 2; ++half, ++is)
              for (int l = 0; l < 16; ++l) {
                const int low = (blk.qs[32 * h + 16 * half + l] >> shift) & 3;
                add(f16(blk.d) * (scales[is] - 32), low - ((blk.hmask[16 * half + l] & mask) ? 0 : 4), 0);
              }
        break;
      }
      default: ADD_FAILURE() << "no decoder for " << quant_type_name(type);
    }
  }
  return out;
}

// The f16 fields of a block: d, and m or dmin.
inline std::vector<size_t> scale_offsets(QuantType type) {
  switch (type) {
    case QuantType::q8_0: return {offsetof(cpu::BlockQ8_0, d)};
    case QuantType::q4_0: return {offsetof(cpu::BlockQ4_0, d)};
    case QuantType::q4_1: return {offsetof(cpu::BlockQ4_1, d), offsetof(cpu::BlockQ4_1, m)};
    case QuantType::q5_0: return {offsetof(cpu::BlockQ5_0, d)};
    case QuantType::q5_1: return {offsetof(cpu::BlockQ5_1, d), offsetof(cpu::BlockQ5_1, m)};
    case QuantType::q4_k: return {offsetof(cpu::BlockQ4_K, d), offsetof(cpu::BlockQ4_K, dmin)};
    case QuantType::q6_k: return {offsetof(cpu::BlockQ6_K, d)};
    case QuantType::q5_k: return {offsetof(cpu::BlockQ5_K, d), offsetof(cpu::BlockQ5_K, dmin)};
    case QuantType::q3_k: return {offsetof(cpu::BlockQ3_K, d)};
    default: return {};
  }
}

// rows x cols of `type` with random integers and scales; `unit_scales` sets every f16 scale to 1
inline QuantizedTensor random_weight(QuantType type, int64_t rows, int64_t cols, std::mt19937& rng, bool unit_scales = false) {
  QuantizedTensor w = QuantizedTensor::empty(type, rows, cols);
  auto* bytes = static_cast<unsigned char*>(w.mutable_data());
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < w.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(byte(rng));
  if (type == QuantType::q8_0)  // Q8_0 stores [-127, 127]
    for (size_t i = 0; i < w.nbytes(); ++i)
      if (i % sizeof(cpu::BlockQ8_0) >= 2 && bytes[i] == 0x80) bytes[i] = 0x81;
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(type).block_bytes);
  for (size_t b = 0; b < w.nbytes() / block_bytes; ++b)
    for (size_t off : scale_offsets(type)) {
      const uint16_t h = float_to_f16_bits(unit_scales ? 1.0f : scale(rng));
      std::memcpy(bytes + b * block_bytes + off, &h, 2);
    }
  return w;
}

}  // namespace nf::testing
