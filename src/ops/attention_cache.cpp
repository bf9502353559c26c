// scaled_dot_product_attention over a KV cache's rows (ops/attention.h): checks, then the device's
// kernel (on the CPU: the decoding kernel reads the rows in place; longer queries attend over them
// in place where they are f32, else dequantised, ops/cpu/attention/attention_decode.h).
#include <cmath>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/attention.h"
#include "ops/cpu/attention/attention_decode.h"
#include "ops/kv_storage_rows.h"

namespace nf {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

using CachedKernel = void (*)(const AttentionProblem& p, const Tensor& q, const KVRows& k, const KVRows& v,
                              const Tensor& out, const Tensor& lse);
const DeviceKernels<CachedKernel> kCached{.cpu = cpu::attention_cached_forward};

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const KVStorage& k, const KVStorage& v, int64_t length,
                                    const AttentionOptions& options) {
  NF_CHECK(k.defined() && v.defined() && k.type() == v.type() && k.batch() == v.batch() && k.heads() == v.heads() &&
               k.columns() == v.columns() && k.head_dim() == v.head_dim(),
           kOp, ": the cache's keys and values must share a type and shape");
  NF_CHECK(q.defined() && q.dim() == 4 && q.dtype() == DType::f32 && q.size(0) <= k.batch() && q.size(3) == k.head_dim() &&
               q.size(1) % k.heads() == 0,
           kOp, ": q must be f32 (B <= ", k.batch(), ", H a multiple of ", k.heads(), ", Tq, D = ", k.head_dim(),
           ") over the cache's keys, got ", dtype_name(q.dtype()), " ", shape_str(q.shape()));
  NF_CHECK(length > 0 && length <= k.columns(), kOp, ": ", length, " keys of a cache of ", k.columns(), " columns");
  NF_CHECK(!options.mask.defined() && !options.key_padding.defined() && options.dropout_p == 0.0, kOp,
           ": attention over a cache takes no mask, key padding or dropout");
  NF_CHECK(options.window >= 0 && (options.window == 0 || options.causal), kOp, ": window = ", options.window,
           " needs causal = true and must be >= 0");
  const int64_t D = k.head_dim();
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));
  NF_CHECK(std::isfinite(scale), kOp, ": scale = ", scale, " is not finite");
  AttentionProblem p;
  p.B = q.size(0), p.H = q.size(1), p.Hkv = k.heads(), p.Tq = q.size(2), p.Tk = length, p.D = D;
  p.scale = scale;
  p.causal = options.causal;
  p.window = options.window;
  const Tensor qt = q.stride(3) == 1 ? q.detach() : q.detach().contiguous();
  // out is a (B, Tq, H, D) buffer seen as (B, H, Tq, D), as the fused kernel's
  Tensor out = Tensor::empty({p.B, p.Tq, p.H, D}).transpose(1, 2);
  const Tensor lse = Tensor::empty({p.B, p.H, p.Tq});
  kCached.get(q.device(), kOp)(p, qt, kv_rows_of(k, 0), kv_rows_of(v, 0), out, lse);
  return out;
}

}  // namespace nf
