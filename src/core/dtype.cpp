#include "nanoformer/core/dtype.h"

#include "nanoformer/core/error.h"

namespace nf {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "?";
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16;
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::boolean}) {
    if (name == dtype_name(t)) return t;
  }
  NF_FAIL("unknown dtype '", name, "' (expected f32, f64, bf16, f16, i32, i64 or bool)");
}

// Round-to-nearest-even f32 -> f16 on the bit pattern:
//  - NaN/inf keep their class; values >= 65520 (halfway above the largest half, 65504) overflow to inf;
//  - below 2^-14 the result is subnormal: adding 0.5f lines the half's 2^-24 unit up with the
//    float's last mantissa bit, so the FPU's own rounding is RNE;
//  - normal values re-bias the exponent (127 - 15) and round on bit 13 with ties to even.
uint16_t float_to_f16_bits(float f) {
  uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (x >= 0x477ff000u) return sign | 0x7c00u;
  if (x < 0x38800000u) {
    const float v = bits_float(x) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(v) - 0x3f000000u));
  }
  const uint32_t mantissa_odd = (x >> 13) & 1u;
  x += 0xc8000fffu + mantissa_odd;  // (15 - 127) << 23, plus the rounding bias
  return static_cast<uint16_t>(sign | (x >> 13));
}

float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // mantissa * 2^-24
    return bits_float(float_bits(v) | sign);
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

double load_as_double(const void* p, DType t) {
  switch (t) {
    case DType::f32: return *static_cast<const float*>(p);
    case DType::f64: return *static_cast<const double*>(p);
    case DType::bf16: return bf16_bits_to_float(*static_cast<const uint16_t*>(p));
    case DType::f16: return f16_bits_to_float(*static_cast<const uint16_t*>(p));
    case DType::i32: return *static_cast<const int32_t*>(p);
    case DType::i64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case DType::boolean: return *static_cast<const bool*>(p) ? 1.0 : 0.0;
  }
  return 0.0;
}

void store_from_double(void* p, DType t, double v) {
  switch (t) {
    case DType::f32: *static_cast<float*>(p) = static_cast<float>(v); break;
    case DType::f64: *static_cast<double*>(p) = v; break;
    case DType::bf16: *static_cast<uint16_t*>(p) = float_to_bf16_bits(static_cast<float>(v)); break;
    case DType::f16: *static_cast<uint16_t*>(p) = float_to_f16_bits(static_cast<float>(v)); break;
    case DType::i32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case DType::i64: *static_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case DType::boolean: *static_cast<bool*>(p) = v != 0.0; break;
  }
}

}  // namespace nf
