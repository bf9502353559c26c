// Reference quantising and dequantising of rows, bit-identical to gguf.quants: the 32-value types and
// the float types here, the super-blocks of 256 (Q3_K to Q8_K) in quant_rows_k.cpp; f32 arithmetic in
// the reference's order, compiled with -ffp-contract=off (CMakeLists.txt) so that no a * b + c is fused.
// Formulas per type: src/ops/cpu/quant/quant_blocks.h.
#include "ops/cpu/quant/quant_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nanoformer/core/dtype.h"
#include "nanoformer/core/error.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/quant/quant_math.h"
#include "ops/cpu/quant/type_kernels.h"
#include "ops/cpu/quant/type_traits.h"
#include "ops/cpu/simd/simd.h"

namespace nf::cpu {
namespace {

// ---- 32-value blocks: gguf.quants' formulas ---------------------------------------------------

// q = min(top, trunc(v)) for v >= 0, as gguf's np.trunc(...).astype(np.uint8).clip(0, top)
uint8_t trunc_clamped(float v, int top) { return static_cast<uint8_t>(std::min(top, static_cast<int>(v))); }

// 32 values of 5 bits -> 16 bytes of low nibbles (q[j] | q[j + 16] << 4) and the fifth bits, bit j of qh.
void pack_5bit(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + 16] << 4));
    high |= static_cast<uint32_t>(q[j] >> 4) << j | static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(high >> (8 * b));
}

uint32_t load_qh(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

// Q8_0's levels of 32 values: q = round(x * id), id = 1 / d; returns d = max|x| / 127 (unrounded)
float q8_0_levels(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK8_0; ++j) q[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  return d;
}

// Q8_0 and Q8_1: x = d q
template <class Block>
void dequantize_8bit(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const Block*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK8_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

}  // namespace

void quantize_q8_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ8_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK8_0) y[b].d = float_to_f16_bits(q8_0_levels(x, y[b].qs));
}

void dequantize_q8_0(const void* blocks, float* y, int64_t nb) { dequantize_8bit<BlockQ8_0>(blocks, y, nb); }

void quantize_q8_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ8_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK8_0) {
    const float d = q8_0_levels(x, y[b].qs);
    int sum = 0;
    for (int j = 0; j < kQK8_0; ++j) sum += y[b].qs[j];
    y[b].d = float_to_f16_bits(d);
    y[b].s = float_to_f16_bits(static_cast<float>(sum) * d);
  }
}

void dequantize_q8_1(const void* blocks, float* y, int64_t nb) { dequantize_8bit<BlockQ8_1>(blocks, y, nb); }

void quantize_q4_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK4_0) {
    const float d = signed_absmax(x, kQK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const uint8_t q0 = trunc_clamped(x[j] * id + 8.5f, 15);
      const uint8_t q1 = trunc_clamped(x[j + kQK4_0 / 2] * id + 8.5f, 15);
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_0(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ4_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = f16_bits_to_float(x[b].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
      y[j + kQK4_0 / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void quantize_q4_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ4_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK4_1) {
    const auto [lo, hi] = std::minmax_element(x, x + kQK4_1);
    const float min = *lo, d = (*hi - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    y[b].m = float_to_f16_bits(min);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      const uint8_t q0 = trunc_clamped((x[j] - min) * id + 0.5f, 15);
      const uint8_t q1 = trunc_clamped((x[j + kQK4_1 / 2] - min) * id + 0.5f, 15);
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q4_1(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ4_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK4_1) {
    const float d = f16_bits_to_float(x[b].d), m = f16_bits_to_float(x[b].m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      y[j] = d * static_cast<float>(x[b].qs[j] & 0x0f) + m;
      y[j + kQK4_1 / 2] = d * static_cast<float>(x[b].qs[j] >> 4) + m;
    }
  }
}

void quantize_q5_0(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ5_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK5_0) {
    const float d = signed_absmax(x, kQK5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    uint8_t q[kQK5_0];
    for (int j = 0; j < kQK5_0; ++j) q[j] = trunc_clamped(x[j] * id + 16.5f, 31);
    pack_5bit(q, y[b].qs, y[b].qh);
  }
}

void dequantize_q5_0(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ5_0*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK5_0) {
    const float d = f16_bits_to_float(x[b].d);
    const uint32_t qh = load_qh(x[b].qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int q0 = (x[b].qs[j] & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
      const int q1 = (x[b].qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>(q0 - 16);
      y[j + kQK5_0 / 2] = d * static_cast<float>(q1 - 16);
    }
  }
}

void quantize_q5_1(const float* x, void* blocks, int64_t nb) {
  auto* y = static_cast<BlockQ5_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, x += kQK5_1) {
    const auto [lo, hi] = std::minmax_element(x, x + kQK5_1);
    const float min = *lo, d = (*hi - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_f16_bits(d);
    y[b].m = float_to_f16_bits(min);
    uint8_t q[kQK5_1];
    for (int j = 0; j < kQK5_1; ++j) q[j] = trunc_clamped((x[j] - min) * id + 0.5f, 31);
    pack_5bit(q, y[b].qs, y[b].qh);
  }
}

void dequantize_q5_1(const void* blocks, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockQ5_1*>(blocks);
  for (int64_t b = 0; b < nb; ++b, y += kQK5_1) {
    const float d = f16_bits_to_float(x[b].d), m = f16_bits_to_float(x[b].m);
    const uint32_t qh = load_qh(x[b].qh);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const int q0 = (x[b].qs[j] & 0x0f) | static_cast<int>((qh >> j) & 1) << 4;
      const int q1 = (x[b].qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>(q0) + m;
      y[j + kQK5_1 / 2] = d * static_cast<float>(q1) + m;
    }
  }
}

// ---- the float types: one value a block -------------------------------------------------------

void quantize_f32(const float* x, void* blocks, int64_t nb) { std::memcpy(blocks, x, static_cast<size_t>(nb) * 4); }
void dequantize_f32(const void* blocks, float* y, int64_t nb) { std::memcpy(y, blocks, static_cast<size_t>(nb) * 4); }
void quantize_f64(const float* x, void* blocks, int64_t nb) { std::copy_n(x, nb, static_cast<double*>(blocks)); }
void dequantize_f64(const void* blocks, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i] = static_cast<float>(static_cast<const double*>(blocks)[i]);
}
void quantize_f16(const float* x, void* blocks, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_f16_bits(x[i]);
}
void dequantize_f16(const void* blocks, float* y, int64_t nb) {
  // a vector's width at a time (F16C's conversion where the build has it: exact, as the scalar one)
  const auto* h = static_cast<const uint16_t*>(blocks);
  int64_t i = 0;
  for (; i + Simd::width <= nb; i += Simd::width) Simd::store(y + i, Simd::load_f16(h + i));
  for (; i < nb; ++i) y[i] = f16_bits_to_float(h[i]);
}
void quantize_bf16(const float* x, void* blocks, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) static_cast<uint16_t*>(blocks)[i] = float_to_bf16_bits(x[i]);
}
void dequantize_bf16(const void* blocks, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i] = bf16_bits_to_float(static_cast<const uint16_t*>(blocks)[i]);
}

// ---- by type: the traits table's kernels ------------------------------------------------------

namespace {

// n values of `type` as whole blocks: their count
int64_t blocks_of(const QuantTypeTraits& traits, int64_t n, const char* what) {
  const QuantTypeInfo& info = traits.info();
  NF_CHECK(n % info.block_size == 0, what, ": ", n, " values are not whole blocks of ", info.name);
  return n / info.block_size;
}

}  // namespace

void quantize_row(QuantType type, const float* x, void* blocks, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(type);
  traits.quantize(x, blocks, blocks_of(traits, n, "quantize"));
}

void dequantize_row(QuantType type, const void* blocks, float* y, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(type);
  traits.dequantize(blocks, y, blocks_of(traits, n, "dequantize"));
}

// the loops of ops/quantized.cpp, threaded over rows when the work is large enough
void quantize_rows(QuantizedTensor& out, const Tensor& weight) {
  const QuantTypeTraits& traits = quant_traits(out.type());
  const int64_t rows = out.rows(), cols = out.cols(), nb = blocks_of(traits, cols, "quantize");
  const float* src = weight.data<float>();
  auto* dst = static_cast<unsigned char*>(out.mutable_data());
  const size_t row_bytes = out.row_bytes();
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; ++r) traits.quantize(src + r * cols, dst + row_bytes * r, nb);
}

void dequantize_rows(const Tensor& out, const QuantizedTensor& w, int64_t begin, int64_t end) {
  const QuantTypeTraits& traits = quant_traits(w.type());
  const int64_t cols = w.cols(), nb = blocks_of(traits, cols, "dequantize");
  float* dst = out.data<float>();
#pragma omp parallel for schedule(static) if ((end - begin) * cols > 65536)
  for (int64_t r = begin; r < end; ++r) traits.dequantize(w.row(r), dst + (r - begin) * cols, nb);
}

void gather_rows(const Tensor& out, const QuantizedTensor& w, const int64_t* ids, int64_t n) {
  const QuantTypeTraits& traits = quant_traits(w.type());
  const int64_t cols = w.cols(), nb = blocks_of(traits, cols, "dequantize");
  float* dst = out.data<float>();
  if (w.panels() == nullptr || traits.unpack_panel_row == nullptr) {
    for (int64_t i = 0; i < n; ++i) traits.dequantize(w.row(ids[i]), dst + i * cols, nb);
    return;
  }
  // from the panels: the file's pages of the rows were dropped once they were made (GGUFFile::release),
  // and reading a row there would bring its pages back (on a file in large folios, 2 MiB of them)
  std::vector<uint8_t> row(w.row_bytes());
  for (int64_t i = 0; i < n; ++i) {
    traits.unpack_panel_row(w.panels()->data(), cols, ids[i], row.data());
    traits.dequantize(row.data(), dst + i * cols, nb);
  }
}

}  // namespace nf::cpu
