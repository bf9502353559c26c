// Reference quantising and dequantising of rows, as gguf.quants computes them (f32 arithmetic,
// ties rounded away from zero as C's roundf). Formulas per type: src/ops/cpu/quant_blocks.h.
#include "quant_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "quant_blocks.h"

namespace nf::cpu {
namespace {

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b, y += kQK8_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = d * static_cast<float>(x[b].qs[j]);
  }
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, the first one on ties
    for (int j = 0; j < kQK4_0; ++j)
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(x[j + kQK4_0 / 2] * id + 8.5f));
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b, y += kQK4_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
      y[j + kQK4_0 / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

}  // namespace

void quantize_row(QuantType type, const float* x, void* blocks, int64_t n) {
  NF_CHECK(n % quant_type_info(type).block_size == 0, "quantize: ", n, " values are not whole blocks of ",
           quant_type_name(type));
  switch (type) {
    case QuantType::f32: std::memcpy(blocks, x, static_cast<size_t>(n) * 4); return;
    case QuantType::f16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_f16_bits(x[i]);
      return;
    case QuantType::bf16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_bf16_bits(x[i]);
      return;
    case QuantType::q8_0: quantize_q8_0(x, static_cast<BlockQ8_0*>(blocks), n); return;
    case QuantType::q4_0: quantize_q4_0(x, static_cast<BlockQ4_0*>(blocks), n); return;
    default: NF_FAIL("quantize: ", quant_type_name(type), " is not supported yet");
  }
}

void dequantize_row(QuantType type, const void* blocks, float* y, int64_t n) {
  NF_CHECK(n % quant_type_info(type).block_size == 0, "dequantize: ", n, " values are not whole blocks of ",
           quant_type_name(type));
  switch (type) {
    case QuantType::f32: std::memcpy(y, blocks, static_cast<size_t>(n) * 4); return;
    case QuantType::f16:
      for (int64_t i = 0; i < n; ++i) y[i] = f16_bits_to_float(static_cast<const uint16_t*>(blocks)[i]);
      return;
    case QuantType::bf16:
      for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_float(static_cast<const uint16_t*>(blocks)[i]);
      return;
    case QuantType::q8_0: dequantize_q8_0(static_cast<const BlockQ8_0*>(blocks), y, n); return;
    case QuantType::q4_0: dequantize_q4_0(static_cast<const BlockQ4_0*>(blocks), y, n); return;
    default: NF_FAIL("dequantize: ", quant_type_name(type), " is not supported yet");
  }
}

}  // namespace nf::cpu
