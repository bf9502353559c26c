// scaled_dot_product_attention: checks, and the fused FlashAttention-2 style kernel with its
// backward (the plain composition is in attention_plain.cpp).
#include "nanoformer/ops/attention.h"

#include <cmath>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "ops/attention_internal.h"
#include "ops/cpu/attention/attention.h"

namespace nf {
namespace attention_detail {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

using ForwardKernel = void (*)(const AttentionProblem&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&);
using BackwardKernel = void (*)(const AttentionProblem&, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&);
const DeviceKernels<ForwardKernel> kForward{.cpu = cpu::attention_forward};
const DeviceKernels<BackwardKernel> kBackward{.cpu = cpu::attention_backward};

std::string shapes_str(const Tensor& q, const Tensor& k, const Tensor& v) {
  return detail::concat("q ", shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ", shape_str(v.shape()));
}

// Whether `s` broadcasts to `full` (trailing dims aligned, sizes equal or 1).
bool broadcasts_to(const Shape& s, const Shape& full) {
  if (s.size() > full.size()) return false;
  const size_t lead = full.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] != 1 && s[d] != full[lead + d]) return false;
  }
  return true;
}

// The kernels read rows of D contiguous elements at a stride of at least D; otherwise copy.
Tensor tile_ready(const Tensor& x) {
  return x.stride(3) == 1 && x.stride(2) >= x.size(3) ? x : contiguous(x);
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                       const AttentionProblem& s, Generator& gen) {
  AttentionProblem p = s;
  const Tensor& mask = options.mask;
  const bool has_bias = mask.defined() && mask.dtype() != DType::boolean;
  if (mask.defined()) (has_bias ? p.bias : p.keep) = mask.detach();
  if (options.key_padding.defined()) p.key_padding = options.key_padding.detach();
  if (options.dropout_p > 0.0) {
    p.keep_prob = 1.0 - options.dropout_p;
    p.seed = gen.seed();
    p.first = gen.reserve(static_cast<uint64_t>(s.B * s.H * s.Tq * s.Tk));
  }
  const Tensor qt = tile_ready(q.detach()), kt = tile_ready(k.detach()), vt = tile_ready(v.detach());
  // out is a (B, Tq, H, D) buffer seen as (B, H, Tq, D) (as PyTorch's CPU flash attention): viewed
  // back as (B, Tq, H * D) for the output projection it needs no copy
  Tensor out = Tensor::empty({s.B, s.Tq, s.H, s.D}, q.dtype(), q.device()).transpose(1, 2);
  const Tensor lse = Tensor::empty({s.B, s.H, s.Tq}, q.dtype(), q.device());
  kForward.get(q.device(), kOp)(p, qt, kt, vt, out, lse);

  // Backward recomputes P = e^(S - lse) tile by tile (FlashAttention-2):
  //   dV = P^T dO,  dP = dO V^T,  dS = P (dP - rowsum(dO O)),  dQ = scale dS K,  dK = scale dS^T Q,  dbias = dS
  std::vector<Tensor> inputs{q, k, v};
  if (has_bias) inputs.push_back(mask);
  autograd::record(kOp, out, inputs,
                   [p, qt, kt, vt, lse, o = out.detach(), bias_shape = has_bias ? mask.shape() : Shape{}](
                       const Tensor& g, const autograd::Node& n) {
                     // each gradient in its input's memory order, so the views it flows back through copy nothing
                     Tensor dq = empty_like(qt), dk = empty_like(kt), dv = empty_like(vt);
                     const bool bias_grad = n.needs_input_grad(3);
                     Tensor dbias = bias_grad ? zeros({p.B, p.H, p.Tq, p.Tk}, o.dtype()) : Tensor();
                     kBackward.get(o.device(), "scaled_dot_product_attention backward")(p, qt, kt, vt, o, lse,
                                                                                       tile_ready(g), dq, dk, dv, dbias);
                     std::vector<Tensor> grads{dq, dk, dv};
                     if (!bias_shape.empty()) grads.push_back(bias_grad ? sum_to(dbias, bias_shape) : Tensor());
                     return grads;
                   });
  return out;
}

}  // namespace

AttentionProblem check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options) {
  NF_CHECK(q.defined() && k.defined() && v.defined(), kOp, ": q, k and v must be defined");
  NF_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kOp, ": q, k and v must be 4-D (B, H, T, D), got ",
           shapes_str(q, k, v));
  NF_CHECK((q.dtype() == DType::f32 || q.dtype() == DType::f64) && k.dtype() == q.dtype() && v.dtype() == q.dtype(),
           kOp, ": q, k and v must share an f32 or f64 dtype, got ", dtype_name(q.dtype()), ", ", dtype_name(k.dtype()),
           ", ", dtype_name(v.dtype()), " (", shapes_str(q, k, v), ")");
  AttentionProblem s;
  s.B = q.size(0), s.H = q.size(1), s.Hkv = k.size(1), s.Tq = q.size(2), s.Tk = k.size(2), s.D = q.size(3);
  NF_CHECK(k.shape() == v.shape(), kOp, ": k and v must have the same shape (B, Hkv, Tk, D), got ", shapes_str(q, k, v));
  NF_CHECK(k.size(0) == s.B && k.size(3) == s.D, kOp, ": k and v must match q's batch and head size, got ",
           shapes_str(q, k, v));
  NF_CHECK(s.Hkv > 0 && s.H % s.Hkv == 0, kOp, ": q's ", s.H, " heads are not a multiple of k's ", s.Hkv, " heads (",
           shapes_str(q, k, v), ")");
  NF_CHECK(s.D > 0 && s.Tk > 0, kOp, ": head size and key count must be positive, got ", shapes_str(q, k, v));
  const Shape full{s.B, s.H, s.Tq, s.Tk};
  if (options.mask.defined()) {
    const Tensor& m = options.mask;
    NF_CHECK(m.dtype() == DType::boolean || m.dtype() == q.dtype(), kOp, ": mask must be bool or ",
             dtype_name(q.dtype()), " like q, got ", dtype_name(m.dtype()), " ", shape_str(m.shape()));
    NF_CHECK(broadcasts_to(m.shape(), full), kOp, ": mask ", shape_str(m.shape()), " does not broadcast to (B, H, Tq, Tk) ",
             shape_str(full), " (", shapes_str(q, k, v), ")");
  }
  if (options.key_padding.defined()) {
    const Tensor& kp = options.key_padding;
    NF_CHECK(kp.dtype() == DType::boolean && kp.shape() == Shape({s.B, s.Tk}), kOp,
             ": key_padding must be bool (B, Tk) = ", shape_str({s.B, s.Tk}), ", got ", dtype_name(kp.dtype()), " ",
             shape_str(kp.shape()));
  }
  NF_CHECK(options.window >= 0, kOp, ": window = ", options.window, " is negative (0 = every key)");
  NF_CHECK(options.window == 0 || options.causal, kOp, ": window = ", options.window,
           " needs causal = true (a sliding window over the earlier keys)");
  NF_CHECK(options.dropout_p >= 0.0 && options.dropout_p < 1.0, kOp, ": dropout_p = ", options.dropout_p,
           " outside [0, 1)");
  s.scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.D)));
  NF_CHECK(std::isfinite(s.scale), kOp, ": scale = ", s.scale, " is not finite");
  s.causal = options.causal;
  s.window = options.window;
  return s;
}

}  // namespace attention_detail

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                                    Generator& gen) {
  const AttentionProblem s = attention_detail::check_attention(q, k, v, options);
  if (options.kernel == AttentionKernel::plain) return attention_detail::plain_attention(q, k, v, options, s, gen).out;
  return attention_detail::fused_attention(q, k, v, options, s, gen);
}

AttentionWithWeights scaled_dot_product_attention_with_weights(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const AttentionOptions& options, Generator& gen) {
  return attention_detail::plain_attention(q, k, v, options, attention_detail::check_attention(q, k, v, options), gen);
}

}  // namespace nf
