#pragma once
// Elementwise math for the activation kernels, branch-free so that GCC vectorises the loops that
// inline it (-O3 -march=native -fno-trapping-math: with trapping math the clamps below stop it). f32 uses polynomial approximations fitted for relative error
// (measured bounds are asserted in tests/ops/test_activations.cpp); f64 uses the std:: functions,
// so gradcheck and the f64 references see exact math. Every function takes and returns T.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

// Forced inline: the loops only vectorise when these bodies are inlined into them, and GCC's
// heuristics otherwise leave the larger ones (gelu's backward) as calls once a translation unit
// holds many loop instantiations. NF_INLINE_LAMBDA does the same for the kernel lambdas that call
// them: [](float v) NF_INLINE_LAMBDA { return vmath::gelu_erf(v); }.
#define NF_VMATH_INLINE [[gnu::always_inline]] inline
#define NF_INLINE_LAMBDA __attribute__((always_inline))

namespace nf::cpu::vmath {

// ---- f32 building blocks ----

// 2^k for an integer k in [-126, 127], built from the exponent bits.
NF_VMATH_INLINE float pow2i(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

// e^(hi + lo), where lo (|lo| << |hi|) carries argument bits below hi's precision. Relative error
// below 2 ulp; 0 below -104 (smaller than the least subnormal), inf above 88.73; NaN propagates.
NF_VMATH_INLINE float exp_f32(float hi, float lo = 0.0f) {
  hi = hi < -104.0f ? -104.0f : hi;
  hi = hi > 89.0f ? 89.0f : hi;
  // hi + lo = n ln2 + r with n = round((hi + lo) / ln2): adding 1.5 * 2^23 rounds to an integer in
  // the low bits
  constexpr float kShifter = 12582912.0f;
  const float shifted = (hi + lo) * 1.44269504f + kShifter;
  const float n = shifted - kShifter;
  const int32_t n_int = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kShifter);
  // Cody-Waite: ln2 = 0.693359375 (9 bits, so n * it is exact) - 2.12194440e-4
  float r = hi - n * 0.693359375f;
  r = r + n * 2.12194440e-4f + lo;
  // e^r = 1 + r + r^2 Q(r) on |r| <= ln2/2 (Q: relative minimax fit, error 3e-9)
  const float q = 4.999999345e-01f +
                  r * (1.666652069e-01f + r * (4.166838742e-02f + r * (8.368710183e-03f + r * 1.381461113e-03f)));
  const float p = 1.0f + r + r * r * q;
  // 2^n in two factors keeps both in the normal range for n in [-150, 128] (subnormal results round once)
  const int32_t n_half = n_int >> 1;
  return p * pow2i(n_half) * pow2i(n_int - n_half);
}

// tanh(x): odd polynomial below 0.625 (no cancellation), 1 - 2 / (e^2|x| + 1) above.
NF_VMATH_INLINE float tanh_f32(float x) {
  const float a = std::fabs(x);
  const float z = x * x;
  const float small =
      x + x * z * (-3.333328194e-01f + z * (1.333144214e-01f + z * (-5.373971082e-02f + z * (2.063907416e-02f + z * -5.704973035e-03f))));
  const float large = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  return a < 0.625f ? small : std::copysign(large, x);
}

// Standard normal tail Phi(-a) for a >= 0, and the density phi(a) = e^(-a^2/2) / sqrt(2 pi).
// Phi(-a) = e^(-a^2/2) t P(t) with t = 1 / (1 + 0.3 a), P of degree 9 (relative fit error 3.5e-9
// over a in [0, 14]; beyond, Phi(-a) < 1e-44 is at the bottom of the subnormals). a^2 is split
// exactly: a = ah + al with ah holding 12 significant bits, so ah^2 is exact and al (ah + a) small.
struct NormalTail {
  float tail;
  float density;
};
NF_VMATH_INLINE NormalTail normal_tail_f32(float a) {
  a = a > 20.0f ? 20.0f : a;
  const float t = 1.0f / (1.0f + 0.3f * a);
  const float poly =
      1.196866345e-01f +
      t * (1.195728334e-01f +
           t * (1.102273886e-01f +
                t * (7.842527981e-02f +
                     t * (9.605868908e-02f +
                          t * (-7.924892479e-02f +
                               t * (1.915835780e-01f +
                                    t * (-2.280689080e-01f + t * (1.123763632e-01f + t * -2.061293553e-02f))))))));
  const float ah = std::bit_cast<float>(std::bit_cast<uint32_t>(a) & 0xfffff000u);
  const float al = a - ah;
  const float gauss = exp_f32(-0.5f * (ah * ah), -0.5f * al * (ah + a));
  return {gauss * t * poly, gauss * 0.398942280f};
}

// ---- generic: f32 approximations, f64 std:: ----

inline constexpr double kSqrtHalf = 0.70710678118654752;        // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143268;      // 1 / sqrt(2 pi)

template <class T>
NF_VMATH_INLINE T exp(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}

template <class T>
NF_VMATH_INLINE T tanh(T x) {
  if constexpr (std::is_same_v<T, float>) return tanh_f32(x);
  else return std::tanh(x);
}

// 1 / (1 + e^-x)
template <class T>
NF_VMATH_INLINE T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

// 1 - s for s = sigmoid(x) = 1 / (1 + e) with e = e^-x, without cancellation: e s when s >= 1/2.
template <class T>
NF_VMATH_INLINE T one_minus_sigmoid(T s, T e) {
  return s < T(0.5) ? T(1) - s : e * s;
}

// silu(x) = x sigmoid(x)
template <class T>
NF_VMATH_INLINE T silu(T x) {
  return x / (T(1) + exp(-x));
}

// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x)
template <class T>
NF_VMATH_INLINE T silu_grad(T x) {
  const T e = exp(-x);
  const T s = T(1) / (T(1) + e);
  return s * (T(1) + x * one_minus_sigmoid(s, e));
}

// gelu(x) = x Phi(x) = x/2 (1 + erf(x / sqrt2)); Phi(x) = 1 - Phi(-x) for x > 0
template <class T>
NF_VMATH_INLINE T gelu_erf(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const float tail = normal_tail_f32(std::fabs(x)).tail;
    return x * (x < 0.0f ? tail : 1.0f - tail);
  } else {
    return T(0.5) * x * std::erfc(-x * T(kSqrtHalf));
  }
}

// gelu'(x) = Phi(x) + x phi(x)
template <class T>
NF_VMATH_INLINE T gelu_erf_grad(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const NormalTail n = normal_tail_f32(std::fabs(x));
    return (x < 0.0f ? n.tail : 1.0f - n.tail) + x * n.density;
  } else {
    return T(0.5) * std::erfc(-x * T(kSqrtHalf)) + x * std::exp(T(-0.5) * x * x) * T(kInvSqrt2Pi);
  }
}

// gelu_tanh(x) = x/2 (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluCubic = 0.044715;

template <class T>
NF_VMATH_INLINE T gelu_tanh(T x) {
  const T two_u = T(2 * kSqrt2OverPi) * x * (T(1) + T(kGeluCubic) * x * x);
  return x / (T(1) + exp(-two_u));
}

// gelu_tanh'(x) = s + 2 x u' s (1 - s), s = sigmoid(2u), u' = sqrt(2/pi) (1 + 3 0.044715 x^2)
template <class T>
NF_VMATH_INLINE T gelu_tanh_grad(T x) {
  const T x2 = x * x;
  const T two_u = T(2 * kSqrt2OverPi) * x * (T(1) + T(kGeluCubic) * x2);
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x2);
  const T e = exp(-two_u);
  const T s = T(1) / (T(1) + e);
  return s * (T(1) + T(2) * x * du * one_minus_sigmoid(s, e));
}

}  // namespace nf::cpu::vmath
