#pragma once
// The GEMM limit of a prefill: the machine's measured fp32 SGEMM speed at the GEMM shapes of one
// forward over a T-token prompt at batch 1 (every Linear's y = x W^T with T rows, a routed
// expert's with its share T top_k / n_experts; attention's S = Q K^T and O = P V per head over the
// causal half, T x T/2), turned into tokens/s: T / the measured time of those GEMMs. Prefill is
// compute-bound, so this bounds what any implementation doing the same FLOPs in fp32 reaches here.
#include <string>
#include <vector>

#include "training_gemm_limit.h"

namespace nf::bench {

inline std::vector<StepGemm> prefill_gemms(const models::DecoderLM& lm, int64_t T) {
  const models::DecoderLMConfig& c = lm.config();
  std::vector<StepGemm> gemms;
  for (const auto& [name, m] : lm.named_modules()) {
    const auto* fc = dynamic_cast<const nn::Linear*>(m);
    if (fc == nullptr || name == "output") continue;  // the head sees the last position only
    const bool routed = c.moe && name.find(".experts.") != std::string::npos;
    const int64_t rows = routed ? (T * c.moe->top_k + c.moe->n_experts - 1) / c.moe->n_experts : T;
    gemms.push_back({name, rows, fc->out_features(), fc->in_features(), false, true, 1});
  }
  const int64_t hd = c.head_dim > 0 ? c.head_dim : c.dim / c.n_heads, heads = c.n_heads * c.n_layers;
  gemms.push_back({"attention S=QK^T", T, T / 2, hd, false, true, heads, true});
  gemms.push_back({"attention O=PV", T, hd, T / 2, false, false, heads, true});
  return gemms;
}

// Prompt tokens/s that the measured GEMM speed allows.
inline double prefill_limit_tokens_per_s(const models::DecoderLM& lm, int64_t T) {
  return static_cast<double>(T) / measure_gemm_limit(prefill_gemms(lm, T), DType::f32, /*reps=*/15).seconds_per_step;
}

}  // namespace nf::bench
