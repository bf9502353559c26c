#pragma once
// Element types. bf16 and f16 are storage types held as raw 16-bit patterns; conversion from
// f32 rounds to nearest, ties to even.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace nf {

enum class DType : uint8_t { f32, f64, bf16, f16, i32, i64, boolean };

size_t dtype_size(DType t);
const char* dtype_name(DType t);        // "f32", "bf16", "bool", ...
bool is_floating(DType t);              // f32, f64, bf16, f16
DType dtype_from_name(const std::string& name);  // inverse of dtype_name; throws on unknown

// 16-bit float storage types. Arithmetic goes through float.
struct bf16 { uint16_t bits; };
struct f16 { uint16_t bits; };

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// bf16 = top 16 bits of the f32 pattern, rounded to nearest even; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_bits_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// IEEE binary16 with round-to-nearest-even, overflow to inf, gradual underflow to subnormals.
uint16_t float_to_f16_bits(float f);
float f16_bits_to_float(uint16_t h);

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

// Calls fn(T{}) with T the C++ type of `t` (bf16/f16 map to the storage structs).
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::bf16: return fn(bf16{});
    case DType::f16: return fn(f16{});
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    case DType::boolean: return fn(bool{});
  }
  return fn(float{});
}

// Reads/writes one element of any dtype as double (the universal slow path: printing, item()).
double load_as_double(const void* p, DType t);
void store_from_double(void* p, DType t, double v);

}  // namespace nf
