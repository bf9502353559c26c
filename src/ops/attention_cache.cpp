// scaled_dot_product_attention over a KV cache stored in a type of its own (ops/attention.h): the
// decoding kernel reads its rows in place; longer queries attend over them dequantised.
#include <cmath>

#include "nanoformer/core/error.h"
#include "nanoformer/core/profile.h"
#include "nanoformer/ops/attention.h"
#include "ops/cpu/attention_decode.h"

namespace nf {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

cpu::KVRows rows_of(const QuantizedKV& t) {
  const auto row = static_cast<int64_t>(t.row_bytes());
  return {static_cast<const unsigned char*>(t.row(0, 0, 0)), t.type(), t.heads() * t.columns() * row, t.columns() * row,
          row};
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const QuantizedKV& k, const QuantizedKV& v, int64_t length,
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
  cpu::AttentionProblem p;
  p.B = q.size(0), p.H = q.size(1), p.Hkv = k.heads(), p.Tq = q.size(2), p.Tk = length, p.D = D;
  p.scale = scale;
  p.causal = options.causal;
  p.window = options.window;
  if (!cpu::attention_decode_applies(p, q.dtype()) || !cpu::attention_decode_reads(k.type())) {
    const int64_t B = q.size(0);
    return scaled_dot_product_attention(q, k.read(B, 0, length), v.read(B, 0, length), options);
  }
  const profile::Scope timed(kOp);  // as the kernels called through the dispatch table are
  const Tensor qt = q.stride(3) == 1 ? q.detach() : q.detach().contiguous();
  // out is a (B, Tq, H, D) buffer seen as (B, H, Tq, D), as the fused kernel's
  Tensor out = Tensor::empty({p.B, p.Tq, p.H, D}).transpose(1, 2);
  const Tensor lse = Tensor::empty({p.B, p.H, p.Tq});
  cpu::attention_decode_forward(p, qt, rows_of(k), rows_of(v), out, lse);
  return out;
}

}  // namespace nf
