#pragma once
// The mean next-token loss of a language model over windows of a token stream, computed by hand
// from the model's logits (log-sum-exp in double, one window per forward pass), as the reference
// for nanoformer eval (eval/perplexity.h): window k has inputs stream[kL, kL + L) and targets
// stream[kL + 1, kL + L + 1).
#include <cmath>
#include <cstdint>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::testing {

inline double mean_token_loss_by_hand(models::DecoderLM& model, const std::vector<int64_t>& stream, int64_t L,
                                      int64_t windows) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t V = model.config().vocab_size;
  double sum = 0.0;
  for (int64_t k = 0; k < windows; ++k) {
    const std::vector<int64_t> inputs(stream.begin() + k * L, stream.begin() + (k + 1) * L);
    const Tensor logits = model.forward(Tensor::from_vector(inputs, {1, L})).logits.contiguous();
    const float* z = logits.data<float>();
    for (int64_t t = 0; t < L; ++t) {
      const float* row = z + t * V;
      double max = row[0];
      for (int64_t v = 1; v < V; ++v) max = std::max(max, static_cast<double>(row[v]));
      double total = 0.0;
      for (int64_t v = 0; v < V; ++v) total += std::exp(static_cast<double>(row[v]) - max);
      const int64_t target = stream[static_cast<size_t>(k * L + t + 1)];
      sum += max + std::log(total) - static_cast<double>(row[target]);  // -log softmax(z)[target]
    }
  }
  return sum / static_cast<double>(windows * L);
}

}  // namespace nf::testing
