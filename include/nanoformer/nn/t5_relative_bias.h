#pragma once
// T5's bucketed relative position bias: score(i, j) += w[bucket(j - i), h], with a learned
// (num_buckets, n_heads) table held as an Embedding child "relative_attention_bias" (PyTorch's
// "relative_attention_bias.weight").
//
// bucket(r), r = key position - query position: bidirectional attention gives half of the buckets
// to r > 0 (offset by num_buckets / 2) and uses |r|; causal attention uses max(-r, 0). Of the n
// buckets left, distances below n / 2 get one bucket each, larger ones share logarithmically
// wider buckets up to max_distance: n/2 + floor(log(d / (n/2)) / log(max_distance / (n/2)) * (n/2)),
// capped at n - 1.
#include <cstdint>
#include <memory>

#include "nanoformer/nn/attention_position.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {

int64_t t5_relative_position_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets,
                                    int64_t max_distance);

class T5RelativeBias : public AttentionPosition {
 public:
  T5RelativeBias(int64_t n_heads, int64_t num_buckets = 32, int64_t max_distance = 128, bool bidirectional = true,
                 Generator& gen = default_generator());
  // (1, H, Tq, Tk): w[bucket((k_offset + b) - (q_offset + a)), h]
  Tensor score_bias(const Tensor& q, const Tensor& k, int64_t q_offset, int64_t k_offset) override;
  bool has_score_bias() const override { return true; }
  std::shared_ptr<Embedding> relative_attention_bias;

 private:
  int64_t n_heads_, num_buckets_, max_distance_;
  bool bidirectional_;
};

}  // namespace nf::nn
