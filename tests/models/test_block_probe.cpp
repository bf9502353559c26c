// Looking inside a decoder LM (models/block_probe.h): the recorded statistics equal those of the
// block's pieces run by hand on a fixed small model, for each norm placement; the attention maps
// are softmax(Q K^T / sqrt(d) + causal mask) computed directly, rows summing to 1; an MoE layer's
// load equals the router's top-k counts; recording changes nothing in the forward.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/block_probe.h"
#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf::models {
namespace {

DecoderLMConfig small_config(const std::string& extra = "") {
  return parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8,
                                "position": "learned", "norm": "layernorm", "mlp": "gelu")" + extra + "}");
}

const std::vector<int64_t> kIds = {3, 17, 5, 9, 30, 1};

// Direct computation over a tensor's values in double.
StageStats direct(const Tensor& t) {
  const Tensor x = t.to(DType::f64).contiguous();
  const double* p = x.data<double>();
  const auto n = static_cast<double>(x.numel());
  StageStats s;
  s.min = s.max = p[0];
  for (int64_t i = 0; i < x.numel(); ++i) s.mean += p[i] / n;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s.std += (p[i] - s.mean) * (p[i] - s.mean) / n;
    s.rms += p[i] * p[i] / n;
    s.min = std::min(s.min, p[i]);
    s.max = std::max(s.max, p[i]);
  }
  s.std = std::sqrt(s.std), s.rms = std::sqrt(s.rms);
  return s;
}

void expect_stats(const ProbeResult& r, size_t at, int64_t layer, const std::string& stage, const Tensor& value) {
  ASSERT_LT(at, r.stages.size());
  const StageStats& got = r.stages[at];
  EXPECT_EQ(got.layer, layer);
  EXPECT_EQ(got.stage, stage);
  const StageStats want = direct(value);
  for (auto [g, w, what] : {std::tuple{got.mean, want.mean, "mean"}, {got.std, want.std, "std"}, {got.min, want.min, "min"},
                            {got.max, want.max, "max"}, {got.rms, want.rms, "rms"}})
    EXPECT_NEAR(g, w, 1e-5 * std::max(1.0, std::abs(w))) << "layer " << layer << " " << stage << " " << what;
}

// The first layer's input: token embeddings plus learned positions.
Tensor embedded(DecoderLM& model) {
  const int64_t T = static_cast<int64_t>(kIds.size());
  return model.pos_embeddings->forward(model.tok_embeddings->forward(Tensor::from_vector(kIds, {1, T})), 0);
}

TEST(BlockProbe, PreNormStagesEqualTheBlockRunByHand) {
  DecoderLM model(small_config());
  const ProbeResult r = probe_decoder_lm(model, kIds, false);
  NoGradGuard no_grad;
  Tensor x = embedded(model);
  // input, attn_norm, attn_out, attn_residual, mlp_norm, mlp_out, mlp_residual, output
  ASSERT_EQ(r.stages.size(), 2u * 8u);
  for (int64_t l = 0; l < 2; ++l) {
    nn::TransformerBlock& b = *(*model.layers)[l];
    const Tensor n1 = b.attn_norm->forward(x), a = b.attn->forward(n1);
    const Tensor h = x + a, n2 = b.mlp_norm->forward(h), m = b.mlp->forward(n2), out = h + m;
    const size_t at = static_cast<size_t>(l) * 8;
    expect_stats(r, at + 0, l, "input", x);
    expect_stats(r, at + 1, l, "attn_norm", n1);
    expect_stats(r, at + 2, l, "attn_out", a);
    expect_stats(r, at + 3, l, "attn_residual", h);
    expect_stats(r, at + 4, l, "mlp_norm", n2);
    expect_stats(r, at + 5, l, "mlp_out", m);
    expect_stats(r, at + 6, l, "mlp_residual", out);
    expect_stats(r, at + 7, l, "output", out);
    EXPECT_TENSOR_CLOSE(r.block_outputs[l], select(out, 0, 0), 1e-6, 1e-5);
    x = out;
  }
}

TEST(BlockProbe, PostNormStagesInTheirOrder) {
  DecoderLM model(small_config(R"(, "norm_placement": "post")"));
  const ProbeResult r = probe_decoder_lm(model, kIds, false);
  NoGradGuard no_grad;
  const Tensor x = embedded(model);
  nn::TransformerBlock& b = *(*model.layers)[0];
  const Tensor a = b.attn->forward(x), h = x + a, n1 = b.attn_norm->forward(h);
  const Tensor m = b.mlp->forward(n1), h2 = n1 + m, out = b.mlp_norm->forward(h2);
  expect_stats(r, 1, 0, "attn_out", a);
  expect_stats(r, 2, 0, "attn_residual", h);
  expect_stats(r, 3, 0, "attn_norm", n1);
  expect_stats(r, 4, 0, "mlp_out", m);
  expect_stats(r, 5, 0, "mlp_residual", h2);
  expect_stats(r, 6, 0, "mlp_norm", out);
  expect_stats(r, 7, 0, "output", out);
}

TEST(BlockProbe, AttentionMapsAreTheCausalSoftmaxOfScaledScores) {
  DecoderLM model(small_config());
  const ProbeResult r = probe_decoder_lm(model, kIds, true);
  ASSERT_EQ(r.attention.size(), 2u);
  NoGradGuard no_grad;
  const int64_t T = static_cast<int64_t>(kIds.size()), H = 4, D = 4;
  nn::TransformerBlock& b = *(*model.layers)[0];
  const Tensor n1 = select(b.attn_norm->forward(embedded(model)), 0, 0);  // (T, dim)
  const Tensor q = b.attn->q_proj->forward(n1).to(DType::f64).contiguous();
  const Tensor k = b.attn->k_proj->forward(n1).to(DType::f64).contiguous();
  const Tensor w = r.attention[0].to(DType::f64).contiguous();  // (H, T, T)
  ASSERT_EQ(w.shape(), (Shape{H, T, T}));
  const double* qp = q.data<double>();
  const double* kp = k.data<double>();
  const double* wp = w.data<double>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> e(T, 0.0);
      double z = 0, row = 0;
      for (int64_t j = 0; j <= i; ++j) {  // causal: keys j <= i
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qp[i * H * D + h * D + d] * kp[j * H * D + h * D + d];
        e[j] = std::exp(dot / std::sqrt(static_cast<double>(D)));
        z += e[j];
      }
      for (int64_t j = 0; j < T; ++j) {
        EXPECT_NEAR(wp[(h * T + i) * T + j], e[j] / z, 1e-5) << "head " << h << " query " << i << " key " << j;
        row += wp[(h * T + i) * T + j];
      }
      EXPECT_NEAR(row, 1.0, 1e-5);
    }
}

TEST(BlockProbe, RecordingLeavesTheForwardUnchanged) {
  DecoderLM model(small_config());
  NoGradGuard no_grad;
  model.eval();
  const Tensor ids = Tensor::from_vector(kIds, {1, static_cast<int64_t>(kIds.size())});
  const Tensor before = model.forward(ids, {}, true).hidden.back();
  const ProbeResult r = probe_decoder_lm(model, kIds, true);
  EXPECT_TENSOR_CLOSE(r.block_outputs.back(), select(before, 0, 0), 1e-6, 1e-5);
  EXPECT_TENSOR_CLOSE(model.forward(ids, {}, true).hidden.back(), before, 0.0, 0.0);  // recorders removed
}

TEST(BlockProbe, ExpertLoadEqualsTheRoutersTopKCounts) {
  DecoderLM model(small_config(R"(, "moe": {"n_experts": 4, "top_k": 2, "routing": "topk_then_softmax"})"));
  const ProbeResult r = probe_decoder_lm(model, kIds, false);
  ASSERT_EQ(r.expert_load.size(), 2u);
  NoGradGuard no_grad;
  Tensor x = embedded(model);
  for (int64_t l = 0; l < 2; ++l) {
    nn::TransformerBlock& b = *(*model.layers)[l];
    const Tensor h = x + b.attn->forward(b.attn_norm->forward(x));
    const Tensor logits = b.moe->gate->forward(b.mlp_norm->forward(h)).to(DType::f64).contiguous();  // (1, T, E)
    std::vector<int64_t> counts(4, 0);
    const double* z = logits.data<double>();
    for (size_t t = 0; t < kIds.size(); ++t) {  // the two largest logits of each token
      std::vector<int> order = {0, 1, 2, 3};
      std::sort(order.begin(), order.end(), [&](int a, int c) { return z[t * 4 + a] > z[t * 4 + c]; });
      ++counts[order[0]], ++counts[order[1]];
    }
    EXPECT_EQ(r.expert_load[l], counts) << "layer " << l;
    x = h + b.mlp->forward(b.mlp_norm->forward(h));
  }
  EXPECT_EQ(probe_decoder_lm(*std::make_shared<DecoderLM>(small_config()), kIds, false).expert_load[0].size(), 0u);
}

}  // namespace
}  // namespace nf::models
