// T5's bucketed relative position bias.
#include "nanoformer/nn/t5_relative_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "nanoformer/core/error.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {
namespace {

void check_buckets(const char* where, int64_t num_buckets, int64_t max_distance, bool bidirectional) {
  NF_CHECK(num_buckets >= 2, where, ": num_buckets ", num_buckets, " must be at least 2");
  NF_CHECK(!bidirectional || num_buckets >= 4, where, ": bidirectional needs num_buckets >= 4 (half per direction), got ",
           num_buckets);
  const int64_t max_exact = (bidirectional ? num_buckets / 2 : num_buckets) / 2;
  NF_CHECK(max_distance > max_exact, where, ": max_distance ", max_distance, " must exceed the ", max_exact,
           " exact buckets");
}

}  // namespace

// The large-distance branch is computed in f32 as T5 does (log(d / e) / log(max_distance / e) * (n - e),
// truncated), so distances on a bucket boundary land where PyTorch puts them.
int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets,
                                    int64_t max_distance) {
  check_buckets("t5_relative_position_bucket", num_buckets, max_distance, bidirectional);
  int64_t bucket = 0, n = num_buckets, distance = 0;
  if (bidirectional) {
    n /= 2;
    if (relative_position > 0) bucket += n;
    distance = std::llabs(relative_position);
  } else {
    distance = std::max<int64_t>(-relative_position, 0);
  }
  const int64_t max_exact = n / 2;
  if (distance < max_exact) return bucket + distance;
  const float ratio = std::log(static_cast<float>(distance) / static_cast<float>(max_exact));
  const float range = static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  const auto large = max_exact + static_cast<int64_t>(ratio / range * static_cast<float>(n - max_exact));
  return bucket + std::min(large, n - 1);
}

T5RelativeBias::T5RelativeBias(int64_t n_heads, int64_t num_buckets, int64_t max_distance, bool bidirectional,
                               Generator& gen)
    : AttentionPosition("T5RelativeBias"),
      n_heads_(n_heads),
      num_buckets_(num_buckets),
      max_distance_(max_distance),
      bidirectional_(bidirectional) {
  NF_CHECK(n_heads > 0, "T5RelativeBias: n_heads ", n_heads, " must be positive");
  check_buckets("T5RelativeBias", num_buckets, max_distance, bidirectional);
  relative_attention_bias = register_module("relative_attention_bias", std::make_shared<Embedding>(num_buckets, n_heads, gen));
}

// bias(h, a, b) = w[bucket((k_offset + b) - (q_offset + a)), h]:  buckets (Tq, Tk) -> w rows (Tq, Tk, H)
Tensor T5RelativeBias::score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) {
  NF_CHECK(q.defined() && k.defined() && q.dim() == 4 && k.dim() == 4 && q.size(1) == n_heads_,
           "T5RelativeBias: q must be (B, ", n_heads_, ", Tq, D) and k (B, Hkv, Tk, D), got q ",
           q.defined() ? shape_str(q.shape()) : "undefined", " and k ", k.defined() ? shape_str(k.shape()) : "undefined");
  const int64_t Tq = q.size(2), Tk = k.size(2);
  Tensor buckets = Tensor::empty({Tq, Tk}, DType::i64);
  int64_t* p = buckets.data<int64_t>();
  for (int64_t a = 0; a < Tq; ++a) {
    for (int64_t b = 0; b < Tk; ++b) {
      p[a * Tk + b] = t5_relative_position_bucket((k_offset + b) - (q_offset + a), bidirectional_, num_buckets_, max_distance_);
    }
  }
  return unsqueeze(permute(relative_attention_bias->forward(buckets), {2, 0, 1}), 0);
}

}  // namespace nf::nn
