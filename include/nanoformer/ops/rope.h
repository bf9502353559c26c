#pragma once
// Rotary position embedding (RoPE): rotates pairs of channels of each query/key row by angles
// proportional to the row's position. The fused op rotates in one pass (forward and backward); the
// unfused composition of narrow/mul/sub/cat does the same with our ordinary ops (tests, benchmarks).
//
// Layout: x is (B, H, T, D) (any rank >= 2 works: positions run along dim -2, channels along -1).
// A (B, T, H, D) tensor is passed as x.transpose(1, 2), a view: the kernel reads strided rows, so
// nothing is copied; the result is a contiguous (B, H, T, D) tensor. The backward writes the
// gradient in x's memory order, so it flows back through such a view without a copy too.
#include <cstdint>
#include <span>
#include <vector>

#include "nanoformer/core/tensor.h"

namespace nf {

// Which channels form the rotated pairs, and the rotation's direction. With c = cos(angle(t, i)),
// s = sin(angle(t, i)), i in [0, D/2):
enum class RopeLayout {
  // pairs (x[2i], x[2i+1]) rotated as complex numbers by +angle (MiniMind / llama2.c):
  //   y[2i] = x[2i] c - x[2i+1] s,   y[2i+1] = x[2i] s + x[2i+1] c
  interleaved,
  // halves x1 = x[:D/2], x2 = x[D/2:], y = x cos + rotate_half(x) sin (LLaMA / Hugging Face):
  //   y1 = x1 c - x2 s,   y2 = x2 c + x1 s
  half,
  // halves rotated by -angle (nanochat):
  //   y1 = x1 c + x2 s,   y2 = -x1 s + x2 c
  half_negative,
};

const char* rope_layout_name(RopeLayout layout);

// cos and sin tables, each (max_len, D/2): row t holds cos/sin of angle(t, i) for i in [0, D/2).
struct RopeTables {
  Tensor cos, sin;
};

// angle(t, i) = (t / position_divisor) * theta^(-2i / D), computed in f64 and rounded to `dtype`.
// position_divisor > 1 is position interpolation; NTK-aware scaling passes a larger theta.
RopeTables rope_tables(int64_t max_len, int64_t head_dim, double theta, double position_divisor = 1.0,
                       DType dtype = DType::f32);
// The same with each channel pair's inverse frequency given (angle(t, i) = t / position_divisor *
// inv_freq[i], D = 2 inv_freq.size()) and cos and sin both multiplied by `magnitude` (YaRN's
// attention factor; 1 keeps them a rotation).
RopeTables rope_tables(int64_t max_len, const std::vector<double>& inv_freq, double position_divisor, double magnitude,
                       DType dtype = DType::f32);

// y = rotation of x (..., T, D) at positions offset .. offset + T - 1, reading rows offset.. of the
// tables (each (L, D/2), L >= offset + T, x's dtype, f32 or f64). One pass; the backward is the
// inverse rotation of the upstream gradient, also one pass. The tables get no gradient.
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset, RopeLayout layout);
// The same with batch row b of x (B, ..., T, D) at positions offsets[b] .. offsets[b] + T - 1 (the
// sequences of a continuous-batching step, each at its own length), in one pass.
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, std::span<const int64_t> offsets, RopeLayout layout);

// The same result composed of narrow, mul, add/sub and cat (or stack for interleaved pairs).
Tensor rope_unfused(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset, RopeLayout layout);

}  // namespace nf
