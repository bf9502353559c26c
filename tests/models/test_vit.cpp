// The ViT image classifier against Hugging Face ViTForImageClassification: the fixture of
// tools/golden/hf_vit_fixtures.py (random unit-scale weights, saved by save_pretrained) gives
// transformers' logits, hidden states, loss and the gradient of every parameter; export -> load and
// nanoformer checkpoints are identical; load_model / save_model dispatch on model_type; the preset's
// parameter count is transformers'; bad tensors, configs and images are refused by name.
// NF_HF_EXPORT_DIR=DIR keeps the exported folder and our logits for
// `tools/golden/hf_vit_fixtures.py check DIR` (transformers loading what we wrote).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

const std::map<std::string, Tensor>& expected() {
  static const auto tensors = io::load_safetensors(fixture("vit.logits.safetensors"));
  return tensors;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

Tensor eval_logits(ViTClassifier& model, const Tensor& pixel_values) {
  model.eval();
  return model.forward(pixel_values).logits;
}

const char* kSmall = R"({"architecture": "vit", "image_size": 8, "patch_size": 4, "dim": 16, "n_layers": 2,
                         "n_heads": 2, "n_classes": 5})";

using ViTTest = testing::TempDirTest;

TEST_F(ViTTest, TransformersFolderGivesTransformersLogitsHiddenStatesAndLoss) {
  const auto model = formats::load_hf_vit(fixture("vit"));
  model->eval();
  const ViTOutput out = model->forward(expected().at("pixel_values"), expected().at("labels"), true);
  EXPECT_TENSOR_CLOSE(out.logits, expected().at("logits"), 1e-5, 1e-5);
  std::cout << "vit: max abs logit error vs transformers " << testing::max_abs_diff(out.logits, expected().at("logits")) << "\n";
  EXPECT_NEAR(out.loss.item(), expected().at("loss").item(), 1e-5);
  ASSERT_EQ(out.hidden.size(), 2u);
  for (size_t i = 0; i < out.hidden.size(); ++i)
    EXPECT_TENSOR_CLOSE(out.hidden[i], expected().at("hidden." + std::to_string(i)), 1e-5, 1e-5) << i;
  EXPECT_EQ(model->config().n_classes, 10);
  EXPECT_EQ(model->config().norm_eps, 1e-12);
}

// transformers' gradients are stored under the checkpoint's names, so the same reader maps them onto
// ours: a folder with the fixture's config.json and the gradients as its weights.
TEST_F(ViTTest, EveryParameterGradientMatchesTransformers) {
  const std::string grads = path("grads");
  fs::create_directories(grads);
  fs::copy_file(fixture("vit/config.json"), grads + "/config.json");
  fs::copy_file(fixture("vit.grads.safetensors"), grads + "/model.safetensors");
  const nn::StateDict want = formats::load_hf_vit(grads)->state_dict();

  const auto model = formats::load_hf_vit(fixture("vit"));
  model->eval();
  model->forward(expected().at("pixel_values"), expected().at("labels")).loss.backward();
  double worst = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TENSOR_CLOSE(p.grad(), want.at(name), 1e-5, 1e-4) << name;
    worst = std::max(worst, testing::max_abs_diff(p.grad(), want.at(name)));
  }
  EXPECT_EQ(model->named_parameters().size(), want.size());
  std::cout << "vit: max abs gradient error vs transformers over " << want.size() << " parameters " << worst << "\n";
}

// The fixture, and the fixture without the query, key and value biases (qkv_bias false).
TEST_F(ViTTest, ExportThenLoadIsIdenticalAndTransformersReadsIt) {
  const char* keep = std::getenv("NF_HF_EXPORT_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : dir_;
  const auto with_bias = formats::load_hf_vit(fixture("vit"));
  ViTConfig c = with_bias->config();
  c.qkv_bias = false;
  c.name = "vit_no_qkv_bias";  // the folder's name, as load_hf_vit names it
  auto without_bias = std::make_shared<ViTClassifier>(c);
  without_bias->load_state_dict(with_bias->state_dict(), /*strict=*/false);
  for (const auto& [name, model] : {std::pair{"vit", with_bias}, std::pair{"vit_no_qkv_bias", without_bias}}) {
    const Tensor pixels = expected().at("pixel_values");
    const Tensor logits = eval_logits(*model, pixels);
    formats::save_hf_vit(*model, (out_dir / name).string());
    const auto loaded = formats::load_hf_vit((out_dir / name).string());
    EXPECT_EQ(loaded->config_json(), model->config_json()) << name;
    EXPECT_TENSOR_CLOSE(eval_logits(*loaded, pixels), logits, 0.0, 0.0) << name;
    if (keep)
      io::save_safetensors((out_dir / (std::string(name) + ".pixels.safetensors")).string(),
                           {{"pixel_values", pixels}, {"logits", logits}});
  }
}

TEST_F(ViTTest, LoadModelAndSaveModelDispatchOnTheArchitecture) {
  const auto model = model_as<ViTClassifier>(formats::load_model(fixture("vit")), "vit");
  const Tensor pixels = expected().at("pixel_values");
  const Tensor logits = eval_logits(*model, pixels);
  formats::save_model(*model, path("vit.safetensors"), "nanoformer");
  const auto from_checkpoint = model_as<ViTClassifier>(formats::load_model(path("vit.safetensors")), "checkpoint");
  EXPECT_EQ(from_checkpoint->config_json(), model->config_json());
  EXPECT_TENSOR_CLOSE(eval_logits(*from_checkpoint, pixels), logits, 0.0, 0.0);
  formats::save_model(*from_checkpoint, path("hf"), "hf");
  EXPECT_TENSOR_CLOSE(eval_logits(*model_as<ViTClassifier>(formats::load_model(path("hf")), "hf"), pixels), logits, 0.0, 0.0);
  EXPECT_THROW_WITH(formats::save_model(*model, path("mm"), "minimind"), "format 'minimind'", "architecture 'vit'");
  EXPECT_THROW_WITH(formats::load_decoder_lm(fixture("vit")), "'vit'", "'decoder_lm'");
  EXPECT_THROW_WITH(formats::load_hf(fixture("vit")), "model_type 'vit' is not supported");
}

TEST_F(ViTTest, BadTensorsAreAllNamedInOneError) {
  const std::string folder = copy_folder(fixture("vit"));
  const std::string weights = folder + "/model.safetensors";
  std::vector<nn::NamedTensor> tensors;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(weights);
    for (const auto& e : file.entries()) {
      if (e.name == "vit.encoder.layer.1.attention.attention.key.bias") continue;
      Tensor t = file.load(e.name);
      if (e.name == "vit.embeddings.patch_embeddings.projection.weight") t = zeros({32, 3, 2, 2});
      tensors.emplace_back(e.name, t);
    }
  }
  tensors.emplace_back("vit.encoder.layer.2.output.dense.weight", zeros({2, 2}));
  io::save_safetensors(weights, tensors);
  EXPECT_THROW_WITH(formats::load_hf_vit(folder), folder, "missing (1): vit.encoder.layer.1.attention.attention.key.bias",
                    "unexpected (1): vit.encoder.layer.2.output.dense.weight",
                    "mis-shaped (1): vit.embeddings.patch_embeddings.projection.weight (32, 3, 2, 2), expected (32, 3, 4, 4)");
}

TEST_F(ViTTest, BadConfigsAreNamed) {
  const std::string folder = copy_folder(fixture("vit"));
  const std::string config = folder + "/config.json";
  auto with = [&](const std::string& extra) {
    write_text(config, R"({"model_type": "vit", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 64, "image_size": 16, "patch_size": 4, "num_labels": 10)" + extra + "}");
    return folder;
  };
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "hidden_sizes": 32)")), config, "unknown ViT config key 'hidden_sizes'");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "hidden_act": "relu")")), config, "hidden_act 'relu' is not supported");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "image_size": [16, 32])")), config, "'image_size'", "square");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "patch_size": 5)")), config, "'image_size'", "multiple of patch_size");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "id2label": {"0": "cat"})")), config, "'num_labels' is 10",
                    "'id2label' has 1");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "problem_type": "multi_label_classification")")), config, "problem_type");
  EXPECT_THROW_WITH(formats::load_hf_vit(with(R"(, "qkv_bias": "yes")")), config, "'qkv_bias'");
  // a square list is an image size too
  EXPECT_EQ(formats::load_hf_vit(with(R"(, "image_size": [16, 16], "num_channels": 3, "encoder_stride": 4)"))->config().image_size, 16);
}

TEST_F(ViTTest, ImagesOfAnotherSizeOrChannelCountAreRefused) {
  Generator gen(1);
  ViTClassifier model(parse_vit_config(kSmall), gen);
  EXPECT_THROW_WITH(model.forward(zeros({1, 3, 12, 12})), "pixel_values (1, 3, 12, 12)", "(B, 3, 8, 8)", "image_size");
  EXPECT_THROW_WITH(model.forward(zeros({1, 1, 8, 8})), "pixel_values (1, 1, 8, 8)");
  EXPECT_THROW_WITH(model.forward(zeros({3, 8, 8})), "pixel_values (3, 8, 8)");
  EXPECT_THROW_WITH(model.forward(zeros({2, 3, 8, 8}), Tensor::from_vector<int64_t>({1}, {1})), "labels (1)");
}

TEST_F(ViTTest, ConfigKeysRoundTripAndBadOnesAreNamed) {
  const ViTConfig c = parse_vit_config(kSmall, "small.json");
  EXPECT_EQ(vit_config_to_json(parse_vit_config(vit_config_to_json(c))), vit_config_to_json(c));
  EXPECT_EQ(config_architecture(vit_config_to_json(c), "x"), "vit");
  EXPECT_THROW_WITH(parse_vit_config(R"({"architecture": "vit", "n_class": 3})", "v.json"), "v.json",
                    "unknown key 'n_class'", "did you mean 'n_classes'");
  EXPECT_THROW_WITH(parse_vit_config(R"({"architecture": "vit", "image_size": 30, "patch_size": 4, "dim": 8,
      "n_layers": 1, "n_heads": 2, "n_classes": 2})", "v.json"), "'image_size' has value 30", "multiple of patch_size");
  EXPECT_THROW_WITH(parse_vit_config(R"({"architecture": "vit", "dim": 9, "n_layers": 1, "n_heads": 2,
      "n_classes": 2})", "v.json"), "'n_heads'", "divide dim");
  EXPECT_THROW_WITH(parse_vit_config(R"({"dim": 8})", "v.json"), "'architecture'", "\"vit\"");
  EXPECT_THROW_WITH(parse_vit_config(R"({"architecture": "vit", "image_size": 1048576, "patch_size": 4, "dim": 8,
      "n_layers": 1, "n_heads": 2, "n_classes": 2})", "v.json"), "'image_size' has value 1048576", "at most 16384");
}

// 5,717,416 = sum(p.numel()) of transformers' ViTForImageClassification(image 224, patch 16, dim 192,
// 12 layers, 3 heads, intermediate 768, 1000 labels), as timm's vit_tiny_patch16_224.
TEST_F(ViTTest, PresetParameterCountIsTransformers) {
  Generator gen(0);
  const auto tiny = model_as<ViTClassifier>(build_model_from("vit-tiny", gen), "vit-tiny");
  EXPECT_EQ(tiny->config().name, "vit-tiny");
  EXPECT_EQ(tiny->num_parameters(), 5'717'416);
  EXPECT_EQ(count_parameters(tiny->config()), 5'717'416);
  EXPECT_EQ(preset_names_of(ViTConfig::kArchitecture), std::vector<std::string>{"vit-tiny"});
}

// The parts of parameter_parts() equal the built model's parameters grouped by name.
TEST_F(ViTTest, PartsEqualTheBuiltModelsParametersByName) {
  for (const bool qkv_bias : {true, false}) {
    ViTConfig c = parse_vit_config(kSmall);
    c.qkv_bias = qkv_bias;
    c.mlp_hidden = 24;
    Generator gen(0);
    const ViTClassifier model(c, gen);
    std::map<std::string, int64_t> built;
    for (const auto& [name, t] : model.named_parameters()) {
      const std::string part = name.starts_with("patch_embed.")                                   ? "patch embedding"
                               : name == "class_token" || name.starts_with("pos_embeddings.")      ? "class token + positions"
                               : name.find(".attn.") != std::string::npos                          ? "attention"
                               : name.find(".mlp.") != std::string::npos                           ? "mlp"
                               : name.find("norm.") != std::string::npos                           ? "norms"
                                                                                                   : "head";
      built[part] += t.numel();
    }
    for (const ParameterPart& p : model.parameter_parts()) EXPECT_EQ(p.count, built[p.name]) << p.name;
    EXPECT_EQ(count_parameters(c), model.num_parameters());
    EXPECT_EQ((*model.layers)[0]->attn->q_proj->bias.defined(), qkv_bias);
    EXPECT_TRUE((*model.layers)[0]->attn->o_proj->bias.defined());
  }
}

}  // namespace
}  // namespace nf::models
