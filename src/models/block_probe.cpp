#include "nanoformer/models/block_probe.h"

#include <algorithm>
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/nn/block_recorder.h"
#include "nanoformer/ops/view.h"

namespace nf::models {
namespace {

// Collects one layer's stages as statistics and its attention weights.
class ProbeRecorder : public nn::BlockRecorder {
 public:
  ProbeRecorder(int64_t layer, bool with_attention, ProbeResult& result)
      : layer_(layer), with_attention_(with_attention), result_(result) {}
  void stage(const std::string& name, const Tensor& value) override {
    result_.stages.push_back(stage_stats(layer_, name, value));
    if (name == "output") result_.block_outputs.push_back(select(value, 0, 0).contiguous());
  }
  bool wants_attention_weights() const override { return with_attention_; }
  void attention_weights(const Tensor& weights) override { result_.attention.push_back(select(weights, 0, 0).contiguous()); }

 private:
  int64_t layer_;
  bool with_attention_;
  ProbeResult& result_;
};

// Installs recorders on every layer for its lifetime (removed even when the forward throws).
class RecordersInstalled {
 public:
  RecordersInstalled(DecoderLM& model, bool with_attention, ProbeResult& result) : model_(model) {
    for (size_t i = 0; i < model.layers->size(); ++i) recorders_.emplace_back(static_cast<int64_t>(i), with_attention, result);
    for (size_t i = 0; i < model.layers->size(); ++i) (*model.layers)[i]->set_recorder(&recorders_[i]);
  }
  ~RecordersInstalled() {
    for (size_t i = 0; i < model_.layers->size(); ++i) (*model_.layers)[i]->set_recorder(nullptr);
  }
  RecordersInstalled(const RecordersInstalled&) = delete;
  RecordersInstalled& operator=(const RecordersInstalled&) = delete;

 private:
  DecoderLM& model_;
  std::vector<ProbeRecorder> recorders_;
};

}  // namespace

StageStats stage_stats(int64_t layer, const std::string& stage, const Tensor& value) {
  const Tensor x = value.to(DType::f64).contiguous();
  const double* p = x.data<double>();
  const int64_t n = x.numel();
  NF_CHECK(n > 0, "stage_stats: stage '", stage, "' of layer ", layer, " is empty");
  double sum = 0, sum_sq = 0, lo = p[0], hi = p[0];
  for (int64_t i = 0; i < n; ++i) {
    sum += p[i];
    sum_sq += p[i] * p[i];
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  const double mean = sum / static_cast<double>(n);
  double centred = 0;
  for (int64_t i = 0; i < n; ++i) centred += (p[i] - mean) * (p[i] - mean);
  return {layer, stage, mean, std::sqrt(centred / static_cast<double>(n)), lo, hi, std::sqrt(sum_sq / static_cast<double>(n))};
}

ProbeResult probe_decoder_lm(DecoderLM& model, const std::vector<int64_t>& ids, bool with_attention) {
  NF_CHECK(!ids.empty(), "viz: no token ids given");
  model.eval();
  NoGradGuard no_grad;
  ProbeResult result;
  {
    RecordersInstalled installed(model, with_attention, result);
    model.forward(Tensor::from_vector(ids, {1, static_cast<int64_t>(ids.size())}));
  }
  for (const auto& layer : *model.layers)
    result.expert_load.push_back(layer->moe ? layer->moe->tokens_per_expert() : std::vector<int64_t>{});
  return result;
}

}  // namespace nf::models
