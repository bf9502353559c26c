#pragma once
// Looking inside a decoder LM during one forward (`nanoformer viz`): the statistics of every stage
// of every block (input, norms, sublayer outputs, residual sums, output; nn/block_recorder.h),
// the self-attention weights of every layer, the block outputs, and the tokens each routed expert
// of an MoE layer received.
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

// Over every element of one stage's value, in double: mean, population standard deviation
// sqrt(mean((x - mean)^2)), min, max and RMS sqrt(mean(x^2)).
struct StageStats {
  int64_t layer = 0;
  std::string stage;
  double mean = 0, std = 0, min = 0, max = 0, rms = 0;
};
StageStats stage_stats(int64_t layer, const std::string& stage, const Tensor& value);

struct ProbeResult {
  std::vector<StageStats> stages;                 // layer by layer, in forward order
  std::vector<Tensor> attention;                  // per layer (H, T, T), with_attention only
  std::vector<Tensor> block_outputs;              // per layer (T, dim)
  std::vector<std::vector<int64_t>> expert_load;  // per layer, tokens per routed expert (MoE layers; else empty)
};

// One sequence through `model` in eval mode without autograd, with every block recording.
ProbeResult probe_decoder_lm(DecoderLM& model, const std::vector<int64_t>& ids, bool with_attention);

}  // namespace nf::models
