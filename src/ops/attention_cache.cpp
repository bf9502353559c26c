// scaled_dot_product_attention over a KV cache's rows (ops/attention.h): checks, then the device's
// kernel (on the CPU: the decoding kernel reads the rows in place; longer queries attend over them
// in place where they are f32, else dequantised, ops/cpu/attention/attention_decode.h).
#include <cmath>
#include <span>
#include <vector>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/attention.h"
#include "ops/cpu/attention/attention_decode.h"
#include "ops/kv_storage_rows.h"

namespace nf {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

using CachedKernel = void (*)(std::span<const cpu::CachedPart> parts, const Tensor& q, const Tensor& out, const Tensor& lse);
const DeviceKernels<CachedKernel> kCached{.cpu = cpu::attention_cached_forward};

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, std::span<const CachedKV> caches, const AttentionOptions& options) {
  NF_CHECK(!caches.empty(), kOp, ": no caches");
  NF_CHECK(q.defined() && q.dim() == 4 && q.dtype() == DType::f32, kOp, ": q must be f32 (B, H, Tq, D), got ",
           q.defined() ? dtype_name(q.dtype()) : "undefined", " ", q.defined() ? shape_str(q.shape()) : "");
  NF_CHECK(!options.mask.defined() && !options.key_padding.defined() && options.dropout_p == 0.0, kOp,
           ": attention over a cache takes no mask, key padding or dropout");
  NF_CHECK(options.window >= 0 && (options.window == 0 || options.causal), kOp, ": window = ", options.window,
           " needs causal = true and must be >= 0");
  std::vector<cpu::CachedPart> parts;
  parts.reserve(caches.size());
  int64_t rows = 0;
  for (const CachedKV& cache : caches) {
    NF_CHECK(cache.keys && cache.values, kOp, ": a cache without keys or values");
    const KVStorage &k = *cache.keys, &v = *cache.values;
    NF_CHECK(k.defined() && v.defined() && k.type() == v.type() && k.batch() == v.batch() && k.heads() == v.heads() &&
                 k.columns() == v.columns() && k.head_dim() == v.head_dim(),
             kOp, ": the cache's keys and values must share a type and shape");
    NF_CHECK(cache.rows > 0 && cache.rows <= k.batch() && q.size(3) == k.head_dim() && q.size(1) % k.heads() == 0, kOp,
             ": q must be (B, H a multiple of ", k.heads(), ", Tq, D = ", k.head_dim(), ") over a cache's ", cache.rows,
             " rows of ", k.batch(), ", got ", shape_str(q.shape()));
    NF_CHECK(cache.length > 0 && cache.length <= k.columns(), kOp, ": ", cache.length, " keys of a cache of ",
             k.columns(), " columns");
    const int64_t D = k.head_dim();
    const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));
    NF_CHECK(std::isfinite(scale), kOp, ": scale = ", scale, " is not finite");
    cpu::CachedPart& part = parts.emplace_back();
    AttentionProblem& p = part.p;
    p.B = cache.rows, p.H = q.size(1), p.Hkv = k.heads(), p.Tq = q.size(2), p.Tk = cache.length, p.D = D;
    p.scale = scale;
    p.causal = options.causal;
    p.window = options.window;
    part.k = kv_rows_of(k, 0);
    part.v = kv_rows_of(v, 0);
    part.row0 = rows;
    rows += cache.rows;
  }
  NF_CHECK(rows == q.size(0), kOp, ": the caches hold ", rows, " rows of q's ", q.size(0));
  const Tensor qt = q.stride(3) == 1 ? q.detach() : q.detach().contiguous();
  // out is a (B, Tq, H, D) buffer seen as (B, H, Tq, D), as the fused kernel's
  Tensor out = Tensor::empty({q.size(0), q.size(2), q.size(1), q.size(3)}).transpose(1, 2);
  const Tensor lse = Tensor::empty({q.size(0), q.size(1), q.size(2)});
  kCached.get(q.device(), kOp)(parts, qt, out, lse);
  return out;
}

Tensor scaled_dot_product_attention(const Tensor& q, const KVStorage& k, const KVStorage& v, int64_t length,
                                    const AttentionOptions& options) {
  const CachedKV cache{&k, &v, length, q.defined() && q.dim() == 4 ? q.size(0) : 1};
  return scaled_dot_product_attention(q, {&cache, 1}, options);
}

}  // namespace nf
