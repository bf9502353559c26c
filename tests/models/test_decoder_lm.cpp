// DecoderLM against PyTorch reference models written from the documents
// (tools/golden/fixtures_models.py): GPT-2 (000), MiniMind2 dense and MoE (002), nanochat (003),
// each built from the config JSON stored in its case; the loss (with -100 targets and the MoE
// auxiliary loss), the logits and the gradients of every parameter. Then the tied head, the
// initialisation schemes and the forward's argument checks.
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/model_stats.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf::models {
namespace {

using testing::Golden;

void check_family(const std::string& case_name) {
  const Golden golden("models");
  const std::string config = golden.cases()[case_name]["config"].get<std::string>();
  DecoderLM model(parse_model_config(config, "models." + case_name));
  model.train();  // the MoE's auxiliary loss is a training-mode loss
  Tensor logits, token_loss, aux_loss;
  testing::check_module_case(model, golden, case_name, {{"ids", "targets"}}, [&](const std::vector<Tensor>& in) {
    LMOutput out = model.forward(in[0], in[1]);
    logits = out.logits, token_loss = out.token_loss, aux_loss = out.aux_loss;
    return out.loss;
  });
  EXPECT_TENSOR_CLOSE(logits, golden.get(case_name, "logits"), 1e-5, 1e-5);
  EXPECT_TENSOR_CLOSE(token_loss, golden.get(case_name, "token_loss"), 1e-5, 1e-5);
  if (model.config().moe) EXPECT_TENSOR_CLOSE(aux_loss, golden.get(case_name, "aux_loss"), 1e-5, 1e-5);
  else EXPECT_FALSE(aux_loss.defined());
}

TEST(DecoderLMGolden, Gpt2Of000) { check_family("gpt2"); }
TEST(DecoderLMGolden, MiniMind2Of002) { check_family("minimind"); }
TEST(DecoderLMGolden, MiniMind2MoEOf002) { check_family("minimind_moe"); }
TEST(DecoderLMGolden, NanochatOf003) { check_family("nanochat"); }

DecoderLMConfig tiny(const std::string& extra = "") {
  return parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8)" +
                            (extra.empty() ? "" : ", " + extra) + "}");
}

Tensor ids_of(int64_t batch, int64_t t) { return arange(batch * t).reshape({batch, t}); }

TEST(DecoderLM, TiedHeadIsTheEmbeddingListedOnce) {
  DecoderLM tied(tiny());
  const nn::StateDict state = tied.state_dict();
  EXPECT_EQ(state.count("output.weight"), 0u);
  EXPECT_EQ(state.count("tok_embeddings.weight"), 1u);
  Generator gen(7);
  const Tensor h = randn({2, 3, tied.config().dim}, gen);
  EXPECT_TENSOR_CLOSE(tied.tok_embeddings->attend(h), linear(h, tied.tok_embeddings->weight), 0.0, 0.0);
  EXPECT_EQ(tied.num_parameters(), count_parameters(tied.config()));
  DecoderLM untied(tiny(R"("tie_embeddings": false)"));
  EXPECT_EQ(untied.state_dict().count("output.weight"), 1u);
  EXPECT_EQ(untied.num_parameters(), tied.num_parameters() + 32 * 16);
}

TEST(DecoderLM, NamesFollowTheModelTree) {
  DecoderLM model(tiny());
  const nn::StateDict state = model.state_dict();
  for (const char* name : {"tok_embeddings.weight", "pos_embeddings.weight", "layers.0.attn_norm.weight",
                           "layers.1.attn.q_proj.weight", "layers.1.mlp.c_fc.bias", "norm.weight", "norm.bias"})
    EXPECT_EQ(state.count(name), 1u) << name;
}

double std_of(const Tensor& t) { return std::sqrt(mean(square(t)).item()); }

// T5's bias in a causal decoder: one learned scalar per (causal bucket of i - j, head), counted
// as the model's position parameters, drawn normal(0, init_std) like the embeddings.
TEST(DecoderLM, T5BiasUsesCausalBuckets) {
  DecoderLM model(tiny(R"("position": "t5_bias", "max_seq_len": 300, "init_std": 0.5)"));
  EXPECT_EQ(model.num_parameters(), count_parameters(model.config()));
  EXPECT_EQ(model_stats(model.config()).parameters.positions, 32 * 4);
  const auto t5 = std::dynamic_pointer_cast<nn::T5RelativeBias>(model.attention_position);
  ASSERT_TRUE(t5);
  const Tensor& table = t5->relative_attention_bias->weight;  // (32 buckets, 4 heads)
  EXPECT_NEAR(std_of(table), 0.5, 0.1);
  const int64_t T = 300;
  const Tensor qk = zeros({1, 4, T, 4});                           // only their shapes matter
  const Tensor bias = t5->score_bias(qk, qk, 0, 0).contiguous();  // (1, H, T, T)
  ASSERT_EQ(bias.shape(), Shape({1, 4, T, T}));
  for (int64_t i : {0, 5, 40, 299})
    for (int64_t j : {0, 3, 40, 299}) {
      const int64_t bucket = nn::t5_relative_position_bucket(j - i, /*bidirectional=*/false, 32, 128);
      EXPECT_EQ(bias.data<float>()[(2 * T + i) * T + j], table.data<float>()[bucket * 4 + 2]) << i << ", " << j;
    }
  EXPECT_NE(nn::t5_relative_position_bucket(-40, false, 32, 128), nn::t5_relative_position_bucket(-40, true, 32, 128));
}

TEST(DecoderLM, NormalInitDrawsStd002AndZeroBiases) {
  DecoderLM model(parse_model_config(R"({"vocab_size": 512, "dim": 64, "n_layers": 1, "n_heads": 4,
      "max_seq_len": 64})"));
  EXPECT_NEAR(std_of(model.tok_embeddings->weight), 0.02, 0.002);
  EXPECT_NEAR(std_of(model.layers->operator[](0)->attn->q_proj->weight), 0.02, 0.002);
  EXPECT_EQ(max(abs(model.layers->operator[](0)->attn->q_proj->bias)).item(), 0.0);
}

TEST(DecoderLM, NanochatInitZeroesHeadAndOutputProjections) {
  DecoderLM model(parse_model_config(R"({"vocab_size": 512, "dim": 64, "n_layers": 2, "n_heads": 4,
      "max_seq_len": 64, "mlp": "relu2", "tie_embeddings": false, "init": "nanochat"})"));
  EXPECT_NEAR(std_of(model.tok_embeddings->weight), 1.0, 0.05);
  EXPECT_EQ(max(abs(model.output->weight)).item(), 0.0);
  for (const auto& layer : *model.layers) {
    EXPECT_EQ(max(abs(layer->attn->o_proj->weight)).item(), 0.0);
    const auto* mlp = dynamic_cast<const nn::TwoLayerMLP*>(layer->mlp.get());
    ASSERT_NE(mlp, nullptr);
    EXPECT_EQ(max(abs(mlp->proj->weight)).item(), 0.0);
    // c_fc: fan_in 64, fan_out 256 -> std 1/8
    EXPECT_NEAR(std_of(mlp->fc->weight), 1.0 / 8, 0.01);
  }
}

TEST(DecoderLM, DeepNetSetsAlphaAndInit) {
  DecoderLM model(tiny(R"("norm_placement": "deepnorm", "init": "deepnet")"));
  const double alpha = std::pow(2.0 * 2, 0.25);
  EXPECT_DOUBLE_EQ(model.layers->operator[](0)->config().deepnorm_alpha, alpha);
  EXPECT_TRUE(std::isfinite(sum(model.forward(ids_of(1, 4)).logits).item()));
}

TEST(DecoderLM, SoftcapBoundsTheLogits) {
  DecoderLM model(tiny(R"("logit_softcap": 0.5, "init_std": 1.0)"));
  EXPECT_LE(max(abs(model.forward(ids_of(2, 8)).logits)).item(), 0.5);
}

TEST(DecoderLM, LossOnlyWithTargetsAndAuxZeroInEval) {
  DecoderLM model(tiny(R"("mlp": "swiglu", "moe": {"n_experts": 2, "top_k": 1, "n_shared_experts": 1})"));
  const Tensor ids = ids_of(2, 8);
  EXPECT_FALSE(model.forward(ids).loss.defined());
  const LMOutput trained = model.forward(ids, ids);
  EXPECT_GT(trained.aux_loss.item(), 0.0);
  model.eval();
  const LMOutput evaluated = model.forward(ids, ids);
  EXPECT_EQ(evaluated.aux_loss.item(), 0.0);
  EXPECT_DOUBLE_EQ(evaluated.loss.item(), evaluated.token_loss.item());
}

// A few plain gradient steps on one batch must fit it: the loss and its gradients are wired to
// every parameter of a RoPE/SwiGLU/untied model (w -= lr * dL/dw).
TEST(DecoderLM, GradientStepsFitABatch) {
  DecoderLM model(tiny(R"("position": "rope", "norm": "rmsnorm", "mlp": "swiglu", "tie_embeddings": false,
      "init_std": 0.1)"));
  const Tensor ids = ids_of(2, 8), targets = ids_of(2, 8) + 1;
  const double first = model.forward(ids, targets).loss.item();
  for (int step = 0; step < 30; ++step) {
    model.zero_grad();
    model.forward(ids, targets).loss.backward();
    autograd::NoGradGuard no_grad;
    for (const Tensor& p : model.parameters()) copy_into(p, p - p.grad() * 0.5);
  }
  EXPECT_LT(model.forward(ids, targets).loss.item(), 0.5 * first);
}

TEST(DecoderLM, ForwardChecksItsArguments) {
  DecoderLM model(tiny());
  EXPECT_THROW_WITH(model.forward(ids_of(1, 9)), "sequence length 9", "max_seq_len 8");
  EXPECT_THROW_WITH(model.forward(arange(4)), "ids must be (B, T)");
  EXPECT_THROW_WITH(model.forward(ids_of(2, 4), ids_of(1, 8)), "targets", "must match ids");
  EXPECT_THROW_WITH(DecoderLM(DecoderLMConfig{}), "'vocab_size'", "0");
}

}  // namespace
}  // namespace nf::models
