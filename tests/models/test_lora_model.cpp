// LoRA on whole models (models/lora.h, lora_adapter.h): fresh adapters leave the forward exactly
// as the base's, names are PEFT's beside the untouched base names, only adapters train, merging
// keeps the logits, adapter-only files round-trip, errors name what is wrong; and the adapted
// tiny LLaMA of tests/fixtures/hf/llama_gqa against Hugging Face PEFT (tools/golden/peft_lora_fixtures.py):
// logits, loss, every adapter's gradient, merge_and_unload()'s weights and logits.
#include <algorithm>
#include <cstdio>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/adam.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

using LoRATest = testing::TempDirTest;

DecoderLMConfig tiny(const std::string& extra = "") {
  return parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8)" +
                            (extra.empty() ? "" : ", " + extra) + "}");
}
const std::string kLlama = R"("n_kv_heads": 2, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu",
                              "mlp_multiple_of": 8, "attention_bias": false, "mlp_bias": false)";
const std::string kMoE = kLlama + R"(, "moe": {"n_experts": 2, "n_shared_experts": 1, "top_k": 1})";

const Tensor kIds = Tensor::of({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}, {2, 8}, DType::i64);
const Tensor kTargets = Tensor::of({1, 4, 1, 5, 9, 2, 6, -100, 3, 5, 8, 9, 7, 9, 3, -100}, {2, 8}, DType::i64);

Tensor logits_of(DecoderLM& model) {
  model.eval();
  return model.forward(kIds).logits;
}

std::vector<std::string> names_of(const std::vector<nn::NamedTensor>& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

// Trained-looking adapters: B drawn at random instead of zero.
void randomise_adapters(const Model& model, Generator& gen) {
  autograd::NoGradGuard no_grad;
  for (const auto& [name, t] : lora_parameters(model)) copy_into(t, mul(randn(t.shape(), gen), 0.3));
}

TEST_F(LoRATest, FreshAdaptersLeaveTheForwardExactlyTheBase) {
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"", {"q", "k", "v", "o", "fc", "proj"}},
      {kLlama, {"q", "k", "v", "o", "gate", "up", "down"}},
      {kMoE, {"q", "v", "gate", "up", "down"}}};
  for (const auto& [extra, targets] : cases) {
    SCOPED_TRACE(extra);
    Generator gen(1);
    DecoderLM model(tiny(extra), gen);
    const Tensor base = logits_of(model);
    const int64_t base_parameters = model.num_parameters();
    const std::vector<std::string> adapted = apply_lora(model, {.rank = 2, .alpha = 4.0, .targets = targets}, gen);
    EXPECT_EQ(adapted.size(), lora_parameters(model).size() / 2);
    EXPECT_GT(model.num_parameters(), base_parameters);
    EXPECT_EQ(model.num_parameters(/*trainable_only=*/true), model.num_parameters() - base_parameters);
    EXPECT_TENSOR_CLOSE(logits_of(model), base, 0.0, 0.0);
  }
}

TEST_F(LoRATest, NamesArePeftsBesideTheBaseNamesSoABaseCheckpointLoads) {
  Generator gen(2);
  DecoderLM model(tiny(), gen);
  const std::vector<std::string> base_names = names_of(model.named_parameters());
  EXPECT_EQ(apply_lora(model, {.rank = 3, .alpha = 6.0, .targets = {"q", "v"}}, gen),
            (std::vector<std::string>{"layers.0.attn.q_proj", "layers.0.attn.v_proj", "layers.1.attn.q_proj",
                                      "layers.1.attn.v_proj"}));
  const nn::StateDict state = model.state_dict();
  EXPECT_EQ(state.at("layers.0.attn.q_proj.lora_A.weight").shape(), (Shape{3, 16}));
  EXPECT_EQ(state.at("layers.1.attn.v_proj.lora_B.weight").shape(), (Shape{16, 3}));
  for (const auto& name : base_names) EXPECT_EQ(state.count(name), 1u) << name;
  EXPECT_EQ(state.size(), base_names.size() + 8);
  EXPECT_TRUE(has_lora(model));

  DecoderLM other(tiny(), gen);  // a base checkpoint of other weights loads into the adapted model
  formats::save_checkpoint(other, path("base.safetensors"));
  const auto loaded = formats::load_checkpoint(path("base.safetensors"));
  model.load_state_dict(loaded->state_dict(), /*strict=*/false);
  EXPECT_TENSOR_CLOSE(logits_of(model), logits_of(other), 0.0, 0.0);
}

TEST_F(LoRATest, OnlyTheAdaptersGetGradientsAndChange) {
  Generator gen(3);
  DecoderLM model(tiny(kLlama), gen);
  apply_lora(model, {.rank = 2, .alpha = 2.0, .dropout = 0.1, .targets = {"q", "k", "v", "o", "gate", "up", "down"}}, gen);
  nn::StateDict before;
  for (const auto& [name, p] : model.named_parameters()) before[name] = clone(p);
  // every parameter handed to AdamW with weight decay: a frozen one has no gradient, so no step
  optim::AdamW optimizer({optim::ParamGroup(model.parameters(), 1e-2, 0.1)});
  model.train();
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    model.forward(kIds, kTargets).loss.backward();
    optimizer.step();
  }
  const auto adapters = names_of(lora_parameters(model));
  for (const auto& [name, p] : model.named_parameters()) {
    const bool is_adapter = std::find(adapters.begin(), adapters.end(), name) != adapters.end();
    EXPECT_EQ(p.requires_grad(), is_adapter) << name;
    EXPECT_EQ(p.grad().defined(), is_adapter) << name;
    if (is_adapter) EXPECT_GT(testing::max_abs_diff(p, before.at(name)), 0.0) << name;
    else EXPECT_TENSOR_CLOSE(p, before.at(name), 0.0, 0.0) << name;  // bit-identical base
  }
}

TEST_F(LoRATest, MergedLogitsEqualTheAdaptedOnes) {
  for (const std::string& extra : {std::string(), kLlama, kMoE}) {
    SCOPED_TRACE(extra);
    Generator gen(4);
    DecoderLM model(tiny(extra), gen);
    const int64_t base_parameters = model.num_parameters();
    const std::vector<std::string> names = names_of(model.named_parameters());
    apply_lora(model, {.rank = 4, .alpha = 8.0, .targets = extra.empty() ? std::vector<std::string>{"q", "o", "fc", "proj"}
                                                                        : std::vector<std::string>{"k", "gate", "down"}},
               gen);
    randomise_adapters(model, gen);
    const Tensor adapted = logits_of(model);
    merge_lora(model);
    const Tensor merged = logits_of(model);
    std::printf("merged vs adapted logits: max abs %.3g\n", testing::max_abs_diff(merged, adapted));
    EXPECT_TENSOR_CLOSE(merged, adapted, 1e-5, 0.0);
    EXPECT_FALSE(has_lora(model));
    EXPECT_EQ(names_of(model.named_parameters()), names);
    EXPECT_EQ(model.num_parameters(/*trainable_only=*/true), base_parameters);
    EXPECT_THROW_WITH(merge_lora(model), "merge_lora", "without adapters");
  }
}

TEST_F(LoRATest, MLPRolesReachEveryExpertButNotTheRouter) {
  Generator gen(5);
  DecoderLM model(tiny(kMoE), gen);
  const auto adapted = apply_lora(model, {.rank = 2, .alpha = 2.0, .targets = {"up"}}, gen);
  EXPECT_EQ(adapted, (std::vector<std::string>{"layers.0.mlp.experts.0.w3", "layers.0.mlp.experts.1.w3",
                                               "layers.0.mlp.shared_experts.0.w3", "layers.1.mlp.experts.0.w3",
                                               "layers.1.mlp.experts.1.w3", "layers.1.mlp.shared_experts.0.w3"}));
}

TEST_F(LoRATest, AdapterFilesHoldOnlyTheAdaptersAndRoundTrip) {
  Generator gen(6);
  DecoderLM model(tiny(kLlama), gen);
  const std::string base_config = model.config_json();
  const LoRAOptions options{.rank = 2, .alpha = 3.0, .dropout = 0.05, .targets = {"q", "v", "down"}};
  apply_lora(model, options, gen);
  randomise_adapters(model, gen);
  const Tensor adapted = logits_of(model);
  formats::save_lora_adapter(model, options, path("adapter.safetensors"), "base.safetensors");

  const io::SafetensorsFile file = io::SafetensorsFile::open(path("adapter.safetensors"));
  std::vector<std::string> stored;
  for (const auto& entry : file.entries()) stored.push_back(entry.name);
  EXPECT_EQ(stored, names_of(lora_parameters(model)));
  const formats::LoRAAdapterInfo info = formats::read_lora_adapter_info(path("adapter.safetensors"));
  EXPECT_EQ(info.options.rank, 2);
  EXPECT_EQ(info.options.alpha, 3.0);
  EXPECT_EQ(info.options.dropout, 0.05);
  EXPECT_EQ(info.options.targets, options.targets);
  EXPECT_EQ(info.base_model, "DecoderLM");
  EXPECT_EQ(info.base_config_json, base_config);
  EXPECT_EQ(info.base_path, "base.safetensors");

  Generator same(6);
  DecoderLM base(tiny(kLlama), same);
  formats::load_lora_adapter(base, path("adapter.safetensors"));
  EXPECT_TENSOR_CLOSE(logits_of(base), adapted, 0.0, 0.0);
  EXPECT_EQ(base.num_parameters(/*trainable_only=*/true), model.num_parameters(/*trainable_only=*/true));
}

TEST_F(LoRATest, ErrorsNameTheCulprit) {
  Generator gen(7);
  DecoderLM gpt(tiny(), gen);
  EXPECT_THROW_WITH(parse_lora_targets("q,qkv"), "unknown target 'qkv'", "known: q, k, v, o, gate, up, down, fc, proj");
  EXPECT_THROW_WITH(parse_lora_targets("q,,v"), "unknown target ''");
  EXPECT_THROW_WITH(parse_lora_targets("q,v,q"), "target 'q' named twice");
  EXPECT_EQ(parse_lora_targets("q,k,v,o"), (std::vector<std::string>{"q", "k", "v", "o"}));
  EXPECT_THROW_WITH(apply_lora(gpt, {.rank = 0}), "rank 0 must be >= 1");
  EXPECT_THROW_WITH(apply_lora(gpt, {.rank = -3}), "rank -3 must be >= 1");
  EXPECT_THROW_WITH(apply_lora(gpt, {.targets = {"q", "gate"}}), "target 'gate' names no layer of this DecoderLM",
                    "its layers take: q, k, v, o, fc, proj");
  EXPECT_FALSE(has_lora(gpt));  // refused before any change
  EXPECT_TRUE(gpt.tok_embeddings->weight.requires_grad());
  apply_lora(gpt, {}, gen);
  EXPECT_THROW_WITH(apply_lora(gpt, {}, gen), "already has adapters");
  EXPECT_THROW_WITH(lora_options_from_json(R"({"rank": 4, "alhpa": 2})", "meta"), "meta", "unknown key 'alhpa'",
                    "did you mean 'alpha'");
  EXPECT_THROW_WITH(lora_options_from_json(R"({"rank": 0})", "meta"), "meta", "rank 0");
  EXPECT_THROW_WITH(lora_options_from_json(R"({"targets": "q"})", "meta"), "meta", "an array of strings");

  // an adapter for another base: its shapes and the config keys that differ are named
  formats::save_lora_adapter(gpt, {}, path("adapter.safetensors"));
  DecoderLM wider(tiny(R"("dim": 32)"), gen);
  const Tensor wider_base = logits_of(wider);
  EXPECT_THROW_WITH(formats::load_lora_adapter(wider, path("adapter.safetensors")), "adapter.safetensors",
                    "does not fit this DecoderLM", "mis-shaped (16):",
                    "layers.0.attn.q_proj.lora_A.weight (the base needs (8, 32), the file has (8, 16))",
                    "differs from this model's in: dim (16 there, 32 here)");
  EXPECT_FALSE(has_lora(wider));  // left as it was
  EXPECT_TENSOR_CLOSE(logits_of(wider), wider_base, 0.0, 0.0);

  // a missing adapter tensor
  std::vector<nn::NamedTensor> partial = lora_parameters(gpt);
  partial.pop_back();
  io::save_safetensors(path("partial.safetensors"), partial,
                       io::SafetensorsFile::open(path("adapter.safetensors")).metadata());
  DecoderLM base(tiny(), gen);
  EXPECT_THROW_WITH(formats::load_lora_adapter(base, path("partial.safetensors")),
                    "missing adapter tensors (1): layers.1.attn.o_proj.lora_B.weight");
  // a full checkpoint is no adapter; an adapter needs a base without adapters of its own
  formats::save_checkpoint(base, path("full.safetensors"));
  EXPECT_THROW_WITH(formats::read_lora_adapter_info(path("full.safetensors")), "full.safetensors",
                    "this is a full checkpoint, not an adapter");
  formats::load_lora_adapter(base, path("adapter.safetensors"));
  EXPECT_THROW_WITH(formats::load_lora_adapter(base, path("adapter.safetensors")), "adapter.safetensors", "already has adapters");
  DecoderLM plain(tiny(), gen);
  EXPECT_THROW_WITH(formats::save_lora_adapter(plain, {}, path("none.safetensors")), "has no LoRA adapters to save");
}

// The tiny LLaMA of tests/fixtures/hf/llama_gqa with PEFT's adapters on every projection.
TEST(LoRAAgainstPeft, LogitsLossGradientsAndMergeEqualPefts) {
  const std::string data = std::string(NF_TEST_DATA_DIR) + "/hf/";
  const auto expected = io::load_safetensors(data + "llama_gqa_lora.safetensors");
  const auto adapters = testing::with_prefix(expected, "lora.");
  const auto grads = testing::with_prefix(expected, "grad.");
  const auto model = formats::load_decoder_lm(data + "llama_gqa");
  apply_lora(*model, {.rank = 4, .alpha = 8.0, .targets = {"q", "k", "v", "o", "gate", "up", "down"}});
  std::vector<std::string> peft_names;
  for (const auto& [name, t] : adapters) peft_names.push_back(name);
  std::vector<std::string> ours = names_of(lora_parameters(*model));
  std::sort(ours.begin(), ours.end());
  ASSERT_EQ(ours, peft_names);  // the same layers adapted, under the same names
  for (const auto& [name, t] : lora_parameters(*model)) copy_into(t, adapters.at(name));

  model->eval();
  const LMOutput out = model->forward(expected.at("ids"), expected.at("targets"));
  const double logit_error = testing::max_abs_diff(out.logits, expected.at("logits"));
  EXPECT_TENSOR_CLOSE(out.logits, expected.at("logits"), 1e-4, 0.0);
  EXPECT_TENSOR_CLOSE(out.loss, expected.at("loss"), 1e-5, 1e-5);
  out.loss.backward();
  double grad_error = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    if (!grads.count(name)) {
      EXPECT_FALSE(p.grad().defined()) << name;
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TENSOR_CLOSE(p.grad(), grads.at(name), 1e-5, 1e-5) << name;
    grad_error = std::max(grad_error, testing::max_abs_diff(p.grad(), grads.at(name)));
  }
  merge_lora(*model);
  const auto merged = testing::with_prefix(expected, "merged.");
  double weight_error = 0;
  for (const auto& [name, w] : merged) {
    EXPECT_TENSOR_CLOSE(model->state_dict().at(name), w, 1e-6, 0.0) << name;
    weight_error = std::max(weight_error, testing::max_abs_diff(model->state_dict().at(name), w));
  }
  const double merged_error = testing::max_abs_diff(model->forward(expected.at("ids")).logits, expected.at("merged_logits"));
  EXPECT_LE(merged_error, 1e-4);
  std::printf("PEFT: logits %.3g, adapter gradients %.3g, merged weights %.3g, merged logits %.3g (max abs)\n",
              logit_error, grad_error, weight_error, merged_error);
}

}  // namespace
}  // namespace nf::models
