// Rotary position embedding: the cos/sin tables, the fused rotation (forward and its inverse as
// the backward) and the same rotation composed of ordinary ops.
#include "nanoformer/ops/rope.h"

#include <cmath>
#include <span>
#include <vector>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/view.h"
#include "ops/cpu/rope.h"
#include "ops/reduce_internal.h"

namespace nf {
namespace {

using RotateKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, std::span<const int64_t>,
                              RopeLayout, bool);
const DeviceKernels<RotateKernel> kRotate{.cpu = cpu::rope_rotate};

// x (..., T, D) with D even, tables (L, D/2) of x's dtype with L >= offset + T for every offset (one,
// or one per batch row of x).
void check_rope_inputs(const char* op, const Tensor& x, const Tensor& cos, const Tensor& sin,
                       std::span<const int64_t> offsets) {
  require_floating_input(x, op);
  NF_CHECK(x.dim() >= 2, op, ": x must be (..., T, D), got ", shape_str(x.shape()));
  const int64_t T = x.size(-2), D = x.size(-1);
  NF_CHECK(D % 2 == 0, op, ": head size D ", D, " is odd (x ", shape_str(x.shape()), "); RoPE rotates channel pairs");
  NF_CHECK(cos.defined() && sin.defined() && cos.shape() == sin.shape(), op, ": cos and sin must be defined tables of one shape");
  NF_CHECK(cos.dim() == 2 && cos.size(1) == D / 2, op, ": tables ", shape_str(cos.shape()), " are not (L, D/2) for D ", D);
  NF_CHECK(cos.dtype() == x.dtype() && sin.dtype() == x.dtype(), op, ": tables are ", dtype_name(cos.dtype()),
           " but x is ", dtype_name(x.dtype()));
  NF_CHECK(offsets.size() == 1 || (x.dim() >= 3 && static_cast<int64_t>(offsets.size()) == x.size(0)), op, ": ",
           offsets.size(), " offsets for x ", shape_str(x.shape()), ": one, or one per batch row of a (B, ..., T, D) x");
  for (const int64_t offset : offsets)
    NF_CHECK(offset >= 0 && offset + T <= cos.size(0), op, ": positions ", offset, " .. ", offset + T - 1,
             " are outside the table's ", cos.size(0), " rows");
}

// The rotation of x into `out` (any layout with unit channel stride).
void rotate_into(const char* op, const Tensor& out, const Tensor& x, const Tensor& cos, const Tensor& sin,
                 std::span<const int64_t> offsets, RopeLayout layout, bool inverse) {
  const Tensor rows = x.stride(-1) == 1 ? x : contiguous(x);
  kRotate.get(x.device(), op)(out, rows, contiguous(cos), contiguous(sin), offsets, layout, inverse);
}

}  // namespace

const char* rope_layout_name(RopeLayout layout) {
  switch (layout) {
    case RopeLayout::interleaved: return "interleaved";
    case RopeLayout::half: return "half";
    case RopeLayout::half_negative: return "half_negative";
  }
  return "?";
}

// inv_freq_i = theta^(-2i/D);  angle(t, i) = (t / position_divisor) inv_freq_i
RopeTables rope_tables(int64_t max_len, int64_t head_dim, double theta, double position_divisor, DType dtype) {
  NF_CHECK(head_dim > 0 && head_dim % 2 == 0, "rope_tables: head size ", head_dim, " must be positive and even");
  NF_CHECK(theta > 0, "rope_tables: theta ", theta, " must be positive");
  std::vector<double> inv_freq(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  return rope_tables(max_len, inv_freq, position_divisor, 1.0, dtype);
}

RopeTables rope_tables(int64_t max_len, const std::vector<double>& inv_freq, double position_divisor, double magnitude,
                       DType dtype) {
  NF_CHECK(max_len > 0, "rope_tables: max_len ", max_len, " must be positive");
  NF_CHECK(!inv_freq.empty(), "rope_tables: no frequencies");
  NF_CHECK(position_divisor > 0, "rope_tables: position_divisor ", position_divisor, " must be positive");
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  Tensor cos = Tensor::empty({max_len, half}, DType::f64), sin = Tensor::empty({max_len, half}, DType::f64);
  double* pc = cos.data<double>();
  double* ps = sin.data<double>();
  for (int64_t i = 0; i < half; ++i) {
    for (int64_t t = 0; t < max_len; ++t) {
      const double angle = static_cast<double>(t) / position_divisor * inv_freq[static_cast<size_t>(i)];
      pc[t * half + i] = magnitude * std::cos(angle);
      ps[t * half + i] = magnitude * std::sin(angle);
    }
  }
  return {cos.to(dtype), sin.to(dtype)};
}

// forward: y = R(angle) x;  backward: dx = R(angle)^T dy = R(-angle) dy (a rotation's inverse)
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, std::span<const int64_t> offsets, RopeLayout layout) {
  check_rope_inputs("rope", x, cos, sin, offsets);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  rotate_into("rope", out, x, cos, sin, offsets, layout, false);
  // dx in x's memory order: for x a transposed view of a projection, the gradient flows back
  // through the view without a copy (unit channel stride kept, as the kernel writes rows)
  const Shape x_strides = x.stride(-1) == 1 ? x.strides() : contiguous_strides(x.shape());
  autograd::record("rope", out, {x}, [cos = cos.detach(), sin = sin.detach(), offsets = std::vector<int64_t>(offsets.begin(), offsets.end()), layout, x_strides](
                                         const Tensor& g, const autograd::Node&) {
    Tensor dx = empty_in_order(g.shape(), x_strides, g.dtype(), g.device());
    rotate_into("rope backward", dx, g, cos, sin, offsets, layout, true);
    return std::vector<Tensor>{dx};
  });
  return out;
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset, RopeLayout layout) {
  return rope(x, cos, sin, std::span<const int64_t>(&offset, 1), layout);
}

Tensor rope_unfused(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t offset, RopeLayout layout) {
  check_rope_inputs("rope_unfused", x, cos, sin, {&offset, 1});
  const int64_t T = x.size(-2), D = x.size(-1), half = D / 2;
  const Tensor c = narrow(cos, 0, offset, T), s = narrow(sin, 0, offset, T);  // (T, D/2)
  if (layout == RopeLayout::interleaved) {
    Shape pairs = x.shape();
    pairs.back() = half;
    pairs.push_back(2);
    const Tensor xp = reshape(x, pairs);  // (..., T, D/2, 2)
    const Tensor a = select(xp, -1, 0), b = select(xp, -1, 1);
    // y[2i] = a c - b s,  y[2i+1] = a s + b c
    return reshape(stack({a * c - b * s, a * s + b * c}, -1), x.shape());
  }
  const Tensor x1 = narrow(x, -1, 0, half), x2 = narrow(x, -1, half, half);
  if (layout == RopeLayout::half) return cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);  // y1 = x1 c - x2 s, y2 = x2 c + x1 s
  return cat({x1 * c + x2 * s, x2 * c - x1 * s}, -1);                                  // y1 = x1 c + x2 s, y2 = x2 c - x1 s
}

}  // namespace nf
