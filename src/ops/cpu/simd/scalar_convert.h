#pragma once
// convert<To>(from): one element from any dtype's C++ type to another's. 16-bit floats go through
// float, rounding to nearest even on the way in.
#include <type_traits>

#include "nanoformer/core/dtype.h"

namespace nf::cpu {

template <class T>
inline auto widen(T v) {
  if constexpr (std::is_same_v<T, bf16>) return bf16_bits_to_float(v.bits);
  else if constexpr (std::is_same_v<T, f16>) return f16_bits_to_float(v.bits);
  else return v;
}

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bf16>) {
    return bf16{float_to_bf16_bits(static_cast<float>(widen(v)))};
  } else if constexpr (std::is_same_v<To, f16>) {
    return f16{float_to_f16_bits(static_cast<float>(widen(v)))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return widen(v) != 0;
  } else {
    return static_cast<To>(widen(v));
  }
}

}  // namespace nf::cpu
