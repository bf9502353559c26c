// Hugging Face folders: the fixtures of tools/golden/hf_fixtures.py (GPT2LMHeadModel, LlamaForCausalLM
// with GQA, and with linear rope scaling, saved by transformers' save_pretrained) load with
// transformers' logits, and the gradient of transformers' causal LM loss for every parameter, mapped
// onto our names by the loader's name map, is ours; export -> load is identical, single-file or
// sharded; sharded indexes load and a missing shard or a tensor listed twice is named; bad tensors,
// unknown config keys and inexpressible models are refused by name. NF_HF_EXPORT_DIR=DIR keeps the
// exported folders (<case>/ and the sharded <case>_sharded/) and our logits for
// `tools/golden/hf_fixtures.py check DIR` (transformers loading what we wrote).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

// tools/golden/hf_fixtures.py's, then tools/golden/hf_llama_family_fixtures.py's (Qwen2 with q / k / v
// biases and layer 1 windowed, Qwen3 with learned QK-norm and head_dim 16, Mistral windowed everywhere),
// then tools/golden/yarn_fixtures.py's (LLaMA with YaRN x4 from 16 positions, 40 tokens long)
const char* kCases[] = {"gpt2", "llama_gqa", "llama_linear_rope", "qwen2", "qwen3", "mistral", "llama_yarn"};

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }
std::string read_text_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using HfCheckpointTest = testing::TempDirTest;

Tensor eval_logits(models::DecoderLM& model, const Tensor& ids) {
  model.eval();
  return model.forward(ids).logits;
}

TEST_F(HfCheckpointTest, TransformersFoldersGiveTransformersLogits) {
  for (const std::string name : kCases) {
    ASSERT_TRUE(is_hf_folder(fixture(name))) << name;
    const auto model = load_hf(fixture(name));
    const auto expected = io::load_safetensors(fixture(name + ".logits.safetensors"));
    const Tensor logits = eval_logits(*model, expected.at("ids"));
    EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5) << name;
    std::cout << name << ": max abs logit error vs transformers " << testing::max_abs_diff(logits, expected.at("logits"))
              << "\n";
  }
  EXPECT_EQ(load_hf(fixture("llama_gqa"))->config().n_kv_heads, 2);
  EXPECT_EQ(load_hf(fixture("llama_linear_rope"))->config().rope_scaling, nn::RopeScaling::linear);
  EXPECT_EQ(load_hf(fixture("llama_linear_rope"))->config().rope_theta, 500.0);
  const models::DecoderLMConfig yarn = load_hf(fixture("llama_yarn"))->config();
  EXPECT_EQ(yarn.rope_scaling, nn::RopeScaling::yarn);
  EXPECT_EQ(yarn.rope_scale_factor, 4.0);
  EXPECT_EQ(yarn.rope_original_max_seq_len, 16);
  const models::DecoderLMConfig qwen2 = load_hf(fixture("qwen2"))->config();
  EXPECT_TRUE(qwen2.attention_bias && !qwen2.attention_output_bias);
  EXPECT_EQ(qwen2.sliding_window, 4);
  EXPECT_EQ(qwen2.window_layers, "LS");
  const models::DecoderLMConfig qwen3 = load_hf(fixture("qwen3"))->config();
  EXPECT_TRUE(qwen3.qk_norm && qwen3.qk_norm_weight && !qwen3.attention_bias);
  EXPECT_EQ(qwen3.head_dim, 16);
  EXPECT_EQ(qwen3.window_layers, "LS");
  const models::DecoderLMConfig mistral = load_hf(fixture("mistral"))->config();
  EXPECT_EQ(mistral.sliding_window, 4);
  EXPECT_EQ(mistral.window_layers, "");
}

// The gradient of transformers' loss (model(ids, labels=ids).loss) for every parameter, by its HF
// name, mapped through state_from_hf (GPT-2's c_attn split into q, k, v and its Conv1D weights
// transposed, as the loader maps the weights) equals the gradient of our loss with the same targets.
TEST_F(HfCheckpointTest, GradientsOfTheLossMatchTransformersThroughTheNameMap) {
  for (const std::string name : kCases) {
    const auto model = load_hf(fixture(name));
    const auto golden = io::load_safetensors(fixture(name + ".grads.safetensors"));
    const Tensor ids = io::load_safetensors(fixture(name + ".logits.safetensors")).at("ids");
    model->eval();
    const models::LMOutput out = model->forward(ids, golden.at("targets"));
    EXPECT_TENSOR_CLOSE(out.loss, golden.at("loss"), 1e-6, 1e-6) << name;
    out.loss.backward();
    const nn::StateDict expected = state_from_hf(model->config(), testing::with_prefix(golden, "grad."), name + ".grads");
    const double err = testing::expect_gradients(*model, expected);
    std::cout << name << ": " << expected.size() << " parameters, max abs gradient error vs transformers " << err
              << "\n";
  }
}

// Shards of at most `max_bytes` (a tensor larger than that alone) hold every tensor once.
void expect_shards_within(const std::string& folder, int64_t max_bytes) {
  int64_t shards = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().filename().string().rfind("model-", 0) != 0) continue;
    ++shards;
    const io::SafetensorsFile file = io::SafetensorsFile::open(entry.path().string());
    int64_t bytes = 0;
    for (const auto& e : file.entries()) bytes += file.view(e.name).numel() * 4;
    EXPECT_TRUE(bytes <= max_bytes || file.entries().size() == 1) << entry.path() << ": " << bytes << " bytes";
  }
  EXPECT_GT(shards, 1) << folder;
  EXPECT_FALSE(fs::exists(folder + "/model.safetensors")) << folder;
}

TEST_F(HfCheckpointTest, ExportThenLoadIsIdenticalInOneFileOrInShards) {
  const char* keep = std::getenv("NF_HF_EXPORT_DIR");
  const fs::path out_dir = keep ? fs::path(keep) : dir_;
  for (const std::string name : kCases) {
    const auto model = load_hf(fixture(name));
    const Tensor ids = io::load_safetensors(fixture(name + ".logits.safetensors")).at("ids");
    const Tensor logits = eval_logits(*model, ids);
    for (const int64_t max_shard_bytes : {int64_t{0}, int64_t{16000}}) {
      const std::string folder = name + (max_shard_bytes ? "_sharded" : "");
      save_hf(*model, (out_dir / folder).string(), max_shard_bytes);
      if (max_shard_bytes) expect_shards_within((out_dir / folder).string(), max_shard_bytes);
      const auto loaded = load_hf((out_dir / folder).string());
      models::DecoderLMConfig config = loaded->config();
      config.name = model->config().name;  // the folder's name
      EXPECT_EQ(models::model_config_to_json(config), model_config_to_json(model->config())) << folder;
      EXPECT_TENSOR_CLOSE(eval_logits(*loaded, ids), logits, 0.0, 0.0) << folder;
      if (keep)
        io::save_safetensors((out_dir / (folder + ".logits.safetensors")).string(), {{"ids", ids}, {"logits", logits}});
    }
  }
}

// The shards the folder holds (model-*.safetensors).
std::set<std::string> shard_files(const std::string& folder) {
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind("model-", 0) == 0) files.insert(entry.path().filename().string());
  return files;
}

TEST_F(HfCheckpointTest, ShardIndexListsEveryTensorAndResavingRemovesStaleFiles) {
  const auto model = load_hf(fixture("llama_gqa"));
  const std::string folder = path("out");
  const Tensor ids = Tensor::of({1, 2, 3}, {1, 3}, DType::i64);
  auto read_index = [&] { return nlohmann::json::parse(std::ifstream(folder + "/model.safetensors.index.json")); };
  save_hf(*model, folder, 20000);
  const auto index = read_index();
  EXPECT_EQ(index.at("weight_map").size(), model->state_dict().size());
  std::set<std::string> listed;
  int64_t bytes = 0;
  for (const auto& [tensor, shard] : index.at("weight_map").items()) {
    listed.insert(shard.get<std::string>());
    bytes += io::SafetensorsFile::open(folder + "/" + shard.get<std::string>()).view(tensor).numel() * 4;
  }
  EXPECT_EQ(index.at("metadata").at("total_size").get<int64_t>(), bytes);
  EXPECT_EQ(shard_files(folder), listed);
  EXPECT_EQ(listed.count("model-00001-of-0000" + std::to_string(listed.size()) + ".safetensors"), 1u);

  save_hf(*model, folder, 8000);  // more, smaller shards: the earlier ones go
  const auto reindex = read_index();
  std::set<std::string> relisted;
  for (const auto& [tensor, shard] : reindex.at("weight_map").items()) relisted.insert(shard.get<std::string>());
  EXPECT_GT(relisted.size(), listed.size());
  EXPECT_EQ(shard_files(folder), relisted);
  EXPECT_TENSOR_CLOSE(eval_logits(*load_hf(folder), ids), eval_logits(*model, ids), 0.0, 0.0);

  save_hf(*model, folder);  // one file: the index and the shards go
  EXPECT_TRUE(fs::exists(folder + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(folder + "/model.safetensors.index.json"));
  EXPECT_TRUE(shard_files(folder).empty());
  EXPECT_TENSOR_CLOSE(eval_logits(*load_hf(folder), ids), eval_logits(*model, ids), 0.0, 0.0);
  EXPECT_THROW_WITH(save_hf(*model, folder, -1), "maximum shard size must be >= 0");
}

// Splits gpt2's model.safetensors into two shards and an index; `edit` changes them before loading.
void write_shards(const std::string& folder, const std::string& index_json_extra, bool duplicate_in_shards) {
  const std::string weights = folder + "/model.safetensors";
  std::vector<nn::NamedTensor> first, second;
  std::string weight_map;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(weights);
    for (const auto& e : file.entries()) {
      const bool in_first = e.name.find("transformer.h.1.") == std::string::npos;
      (in_first ? first : second).emplace_back(e.name, file.load(e.name));
      weight_map += (weight_map.empty() ? "" : ", ") + ("\"" + e.name + "\": \"") +
                    (in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") + "\"";
    }
  }
  if (duplicate_in_shards) second.push_back(first.front());
  fs::remove(weights);
  io::save_safetensors(folder + "/model-00001-of-00002.safetensors", first);
  io::save_safetensors(folder + "/model-00002-of-00002.safetensors", second);
  write_text(folder + "/model.safetensors.index.json",
             R"({"metadata": {"total_size": 1}, "weight_map": {)" + weight_map + index_json_extra + "}}");
}

TEST_F(HfCheckpointTest, ShardedFoldersLoadAndBadIndexesAreNamed) {
  const auto expected = io::load_safetensors(fixture("gpt2.logits.safetensors"));
  const std::string folder = copy_folder(fixture("gpt2"));
  write_shards(folder, "", false);
  EXPECT_TENSOR_CLOSE(eval_logits(*load_hf(folder), expected.at("ids")), expected.at("logits"), 1e-5, 1e-5);

  fs::remove(folder + "/model-00002-of-00002.safetensors");
  EXPECT_THROW_WITH(load_hf(folder), "model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'",
                    "is missing");

  fs::remove_all(folder);
  copy_folder(fixture("gpt2"));
  write_shards(folder, "", true);
  EXPECT_THROW_WITH(load_hf(folder), "is in two shards", "model-00001-of-00002.safetensors");

  fs::remove_all(folder);
  copy_folder(fixture("gpt2"));
  write_shards(folder, R"(, "transformer.wte.weight": "model-00001-of-00002.safetensors")", false);
  EXPECT_THROW_WITH(load_hf(folder), "tensor 'transformer.wte.weight' is listed twice");
}

TEST_F(HfCheckpointTest, BadTensorsAreAllNamedInOneError) {
  const std::string folder = copy_folder(fixture("llama_gqa"));
  const std::string weights = folder + "/model.safetensors";
  std::vector<nn::NamedTensor> tensors;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(weights);
    for (const auto& e : file.entries()) {
      if (e.name == "model.layers.1.self_attn.k_proj.weight") continue;
      Tensor t = file.load(e.name);
      if (e.name == "model.norm.weight") t = zeros({33});
      if (e.name == "model.layers.0.input_layernorm.weight") t = t.to(DType::i32);
      tensors.emplace_back(e.name, t);
    }
  }
  tensors.emplace_back("model.layers.7.mlp.gate_proj.weight", zeros({2, 2}));
  io::save_safetensors(weights, tensors);
  EXPECT_THROW_WITH(load_hf(folder), folder, "missing (1): model.layers.1.self_attn.k_proj.weight",
                    "unexpected (1): model.layers.7.mlp.gate_proj.weight",
                    "mis-shaped (1): model.norm.weight (33), expected (32)",
                    "wrong dtype (1): model.layers.0.input_layernorm.weight (i32");
}

TEST_F(HfCheckpointTest, BadConfigsAreNamed) {
  const std::string folder = copy_folder(fixture("gpt2"));
  const std::string config = folder + "/config.json";
  auto with = [&](const std::string& text) {
    write_text(config, text);
    return folder;
  };
  const std::string base = R"("model_type": "gpt2", "vocab_size": 64, "n_embd": 32, "n_layer": 2, "n_head": 4,
                              "n_positions": 16, "n_inner": 64)";
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "n_embdd": 32})")), config, "unknown GPT-2 config key 'n_embdd'");
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "activation_function": "swish"})")),
                    "activation_function 'swish' is not supported");
  EXPECT_THROW_WITH(load_hf(with("{" + base + R"(, "scale_attn_by_inverse_layer_idx": true})")),
                    "scale_attn_by_inverse_layer_idx true");
  EXPECT_THROW_WITH(load_hf(with(R"({"model_type": "roberta"})")), "model_type 'roberta' is not supported");
  EXPECT_THROW_WITH(load_hf(with(R"({"model_type": "gpt2", "n_embd": 32})")), "missing key 'vocab_size'");
  EXPECT_THROW_WITH(load_hf(path("nowhere")), "not a Hugging Face model folder");
  // a config describing ~10^13 parameters beside 40 KB of tensors: the tensors are named as
  // mis-shaped before any model is built (no allocation sized by the config)
  EXPECT_THROW_WITH(load_hf(with(R"({"model_type": "gpt2", "vocab_size": 1000000, "n_embd": 1000000, "n_layer": 2,
                                     "n_head": 4, "n_positions": 16})")),
                    folder, "mis-shaped", "transformer.wte.weight");
}

// Keys of an unexpected JSON type are nf::Errors naming the file, never nlohmann exceptions.
TEST_F(HfCheckpointTest, ConfigKeysOfTheWrongTypeNameTheFile) {
  EXPECT_THROW_WITH(config_from_hf_json(R"({"model_type": "gpt2", "activation_function": 5})", "m/config.json"),
                    "m/config.json");
  EXPECT_THROW_WITH(config_from_hf_json(R"({"model_type": "llama", "hidden_act": [1]})", "l/config.json"),
                    "l/config.json");
}

// A size that is not positive is refused naming the key (a fuzz finding: intermediate_size 0 was
// read as "the default" and written back as the default's value, so read, write, read changed it).
TEST_F(HfCheckpointTest, SizesMustBePositive) {
  const std::string base = R"("model_type": "mistral", "hidden_size": 32, "num_attention_heads": 8, "vocab_size": 16)";
  EXPECT_THROW_WITH(config_from_hf_json("{" + base + R"(, "num_hidden_layers": 1, "intermediate_size": 0})", "m/config.json"),
                    "m/config.json", "intermediate_size 0 must be positive");
  EXPECT_THROW_WITH(config_from_hf_json("{" + base + R"(, "num_hidden_layers": -2, "intermediate_size": 64})", "m/config.json"),
                    "m/config.json", "num_hidden_layers -2 must be positive");
  EXPECT_EQ(config_from_hf_json("{" + base + R"(, "num_hidden_layers": 1, "intermediate_size": 64})", "m/config.json").mlp_hidden, 64);
}

// A ReLU GPT-2 (our FeedForward, linear1 / linear2) goes to GPT2LMHeadModel's c_fc / c_proj and
// back with identical logits; a transformers GPT-2 folder with "activation_function": "relu" loads.
TEST_F(HfCheckpointTest, ReluGpt2GoesToAndFromHuggingFace) {
  Generator gen(3);
  models::DecoderLM relu(models::parse_model_config(R"({"vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 2,
    "max_seq_len": 8, "mlp": "relu"})"), gen);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
  save_hf(relu, path("relu"));
  const auto loaded = load_hf(path("relu"));
  EXPECT_EQ(loaded->config().mlp, nn::MLPKind::relu);
  EXPECT_TENSOR_CLOSE(eval_logits(*loaded, ids), eval_logits(relu, ids), 0.0, 0.0);

  const std::string folder = copy_folder(fixture("gpt2"));
  auto config = nlohmann::json::parse(read_text_file(folder + "/config.json"));
  config["activation_function"] = "relu";
  write_text(folder + "/config.json", config.dump());
  const auto gpt2_relu = load_hf(folder);
  EXPECT_EQ(gpt2_relu->config().mlp, nn::MLPKind::relu);
  EXPECT_TRUE(gpt2_relu->state_dict().count("layers.0.mlp.linear1.weight"));
}

// GPT-2's config.json names bos_token_id and eos_token_id inside the vocabulary (GPT2Config's
// 50256 where the vocabulary holds it, else the last id), so transformers never falls back to an
// id the model does not have.
TEST_F(HfCheckpointTest, Gpt2ExportNamesBosAndEosInsideTheVocabulary) {
  for (const int64_t vocab : {40, 50257, 50304}) {
    const auto config = nlohmann::json::parse(hf_json_from_config(
        models::parse_model_config(R"({"vocab_size": )" + std::to_string(vocab) + R"(, "dim": 16, "n_layers": 1,
          "n_heads": 2, "max_seq_len": 8})"), 64));
    const int64_t expected = vocab > 50256 ? 50256 : vocab - 1;
    EXPECT_EQ(config.at("bos_token_id").get<int64_t>(), expected) << vocab;
    EXPECT_EQ(config.at("eos_token_id").get<int64_t>(), expected) << vocab;
  }
}

// An interleaved-RoPE LLaMA (llama2.c's layout) is written as LlamaForCausalLM (half layout) with
// its q / k rows reordered (formats/rope_rows.h): loaded back, it computes the same logits.
TEST_F(HfCheckpointTest, InterleavedRopeGoesToHuggingFaceWithPermutedRows) {
  Generator gen(4);
  models::DecoderLM interleaved(models::parse_model_config(R"({"vocab_size": 40, "dim": 32, "n_layers": 2, "n_heads": 4,
    "n_kv_heads": 2, "max_seq_len": 8, "norm": "rmsnorm", "position": "rope", "rope_layout": "interleaved",
    "mlp": "swiglu", "attention_bias": false, "mlp_bias": false, "tie_embeddings": false})"), gen);
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
  save_hf(interleaved, path("llama"));
  const auto loaded = load_hf(path("llama"));
  EXPECT_EQ(loaded->config().rope_layout, RopeLayout::half);
  const Tensor expected = eval_logits(interleaved, ids), logits = eval_logits(*loaded, ids);
  EXPECT_TENSOR_CLOSE(logits, expected, 1e-5, 1e-5);
  std::cout << "interleaved -> hf: max abs logit difference " << testing::max_abs_diff(logits, expected) << "\n";
}

// SmolLM2's config.json (HuggingFaceTB/SmolLM2-135M: LlamaForCausalLM written by nanotron's converter)
// carries is_llama_config and rope_interleaved false, which LlamaConfig keeps unread: such a folder
// loads with transformers' logits; rope_interleaved true (nanotron's other layout) is refused by name.
TEST_F(HfCheckpointTest, SmolLM2FoldersLoad) {
  const std::string folder = copy_folder(fixture("llama_gqa"));
  auto config = nlohmann::json::parse(read_text_file(folder + "/config.json"));
  config["is_llama_config"] = true;
  config["rope_interleaved"] = false;
  config["rope_scaling"] = nullptr;
  config["torch_dtype"] = "bfloat16";
  config["pretraining_tp"] = 1;
  write_text(folder + "/config.json", config.dump());
  const auto expected = io::load_safetensors(fixture("llama_gqa.logits.safetensors"));
  EXPECT_TENSOR_CLOSE(eval_logits(*load_hf(folder), expected.at("ids")), expected.at("logits"), 1e-5, 1e-5);
  config["rope_interleaved"] = true;
  write_text(folder + "/config.json", config.dump());
  EXPECT_THROW_WITH(load_hf(folder), folder, "rope_interleaved true is not supported");
}

// A key missing from a Qwen2 / Qwen3 / Mistral config.json takes the default of transformers' own
// config class (5.24: Qwen2Config, Qwen3Config, MistralConfig), windows as their __post_init__ sets them.
TEST_F(HfCheckpointTest, LlamaFamilyConfigsTakeTheirClassDefaults) {
  const models::DecoderLMConfig qwen2 = config_from_hf_json(R"({"model_type": "qwen2"})", "q/config.json");
  EXPECT_EQ(qwen2.vocab_size, 151936);
  EXPECT_EQ(qwen2.dim, 4096);
  EXPECT_EQ(qwen2.mlp_hidden, 22016);
  EXPECT_EQ(qwen2.n_layers, 32);
  EXPECT_EQ(qwen2.n_heads, 32);
  EXPECT_EQ(qwen2.n_kv_heads, 32);
  EXPECT_EQ(qwen2.max_seq_len, 32768);
  EXPECT_EQ(qwen2.norm_eps, 1e-6);
  EXPECT_EQ(qwen2.rope_theta, 10000.0);
  EXPECT_FALSE(qwen2.tie_embeddings);
  EXPECT_TRUE(qwen2.attention_bias && !qwen2.attention_output_bias && !qwen2.mlp_bias);
  EXPECT_EQ(qwen2.sliding_window, 0);  // use_sliding_window false: sliding_window is ignored
  EXPECT_EQ(config_from_hf_json(R"({"model_type": "qwen2", "sliding_window": 8})", "q/config.json").sliding_window, 0);
  // use_sliding_window alone: sliding_window 4096 from layer max_window_layers = 28 on
  const models::DecoderLMConfig windowed =
      config_from_hf_json(R"({"model_type": "qwen2", "use_sliding_window": true})", "q/config.json");
  EXPECT_EQ(windowed.sliding_window, 4096);
  EXPECT_EQ(windowed.window_layers, std::string(28, 'L') + "SSSS");
  EXPECT_EQ(config_from_hf_json(R"({"model_type": "qwen2", "use_sliding_window": true, "max_window_layers": 0,
                                    "num_hidden_layers": 2})", "q/config.json").window_layers, "");  // every layer
  EXPECT_EQ(config_from_hf_json(R"({"model_type": "qwen2", "use_sliding_window": true, "sliding_window": null})",
                                "q/config.json").sliding_window, 0);

  const models::DecoderLMConfig qwen3 =
      config_from_hf_json(R"({"model_type": "qwen3", "hidden_size": 1024, "rms_norm_eps": 1e-5})", "q/config.json");
  EXPECT_EQ(qwen3.head_dim, 128);  // not hidden_size / num_attention_heads = 32
  EXPECT_EQ(qwen3.n_kv_heads, 32);
  EXPECT_TRUE(qwen3.qk_norm && qwen3.qk_norm_weight);
  EXPECT_EQ(qwen3.qk_norm_eps, 1e-5);  // q_norm / k_norm take rms_norm_eps
  EXPECT_FALSE(qwen3.attention_bias);
  EXPECT_TRUE(config_from_hf_json(R"({"model_type": "qwen3", "attention_bias": true})", "q/config.json").attention_bias);

  const models::DecoderLMConfig mistral = config_from_hf_json(R"({"model_type": "mistral"})", "m/config.json");
  EXPECT_EQ(mistral.vocab_size, 32000);
  EXPECT_EQ(mistral.mlp_hidden, 14336);
  EXPECT_EQ(mistral.n_kv_heads, 8);
  EXPECT_EQ(mistral.head_dim, 0);  // hidden_size / num_attention_heads
  EXPECT_EQ(mistral.max_seq_len, 131072);
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_EQ(mistral.window_layers, "");  // every layer
  EXPECT_FALSE(mistral.attention_bias);
  EXPECT_EQ(config_from_hf_json(R"({"model_type": "mistral", "sliding_window": null})", "m/config.json").sliding_window, 0);
}

// What changes the model and is not expressed is refused naming the key (and the file).
TEST_F(HfCheckpointTest, LlamaFamilyKeysThatChangeTheModelAreNamed) {
  auto config = [](const std::string& json) { return config_from_hf_json(json, "f/config.json"); };
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "num_experts": 4})"), "f/config.json",
                    "unknown Qwen2 config key 'num_experts'");
  EXPECT_THROW_WITH(config(R"({"model_type": "mistral", "attention_bias": true})"),
                    "unknown Mistral config key 'attention_bias'");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen3", "use_sliding_window": true, "num_hidden_layers": 2,
                               "layer_types": ["full_attention", "chunked_attention"]})"),
                    "layer_types holds 'chunked_attention'");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "use_sliding_window": true, "num_hidden_layers": 3,
                               "layer_types": ["full_attention"]})"),
                    "layer_types", "one type per layer (3)");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "rope_scaling": {"rope_type": "longrope", "factor": 4}})"),
                    "rope_type 'longrope' is not supported", "yarn");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "rope_scaling": {"rope_type": "yarn", "factor": 4, "mscale": 0.7}})"),
                    "rope scaling key 'mscale' 0.7 is not supported");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "rope_scaling": {"rope_type": "yarn", "factor": 4, "truncate": false}})"),
                    "'truncate' false is not supported");
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen3", "hidden_act": "gelu"})"), "hidden_act 'gelu'");
  // the layers of a per-layer window are bounded before they are spelled out
  EXPECT_THROW_WITH(config(R"({"model_type": "qwen2", "use_sliding_window": true, "num_hidden_layers": 100000000000,
                               "max_window_layers": 3})"),
                    "num_hidden_layers 100000000000", "at most 1048576");
  EXPECT_THROW_WITH(config(R"({"model_type": "gemma"})"), "model_type 'gemma' is not supported",
                    "mistral, qwen2, qwen3");
}

// save_hf picks the LLaMA-family class a model's options need, and refuses what none holds.
TEST_F(HfCheckpointTest, EachModelGoesToTheClassItsOptionsNeed) {
  const std::string base = R"({"vocab_size": 40, "dim": 16, "n_layers": 3, "n_heads": 2, "max_seq_len": 8,
    "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "mlp_bias": false, )";
  auto written = [&](const std::string& extra) {
    const models::DecoderLMConfig c = models::parse_model_config(base + extra + "}");
    return nlohmann::json::parse(hf_json_from_config(c, 32));
  };
  EXPECT_EQ(written(R"("attention_bias": false)")["model_type"], "llama");
  EXPECT_EQ(written(R"("attention_bias": false, "sliding_window": 4)")["model_type"], "mistral");
  EXPECT_EQ(written(R"("attention_bias": false, "sliding_window": 4)")["sliding_window"], 4);
  const auto qwen2 = written(R"("attention_output_bias": false, "sliding_window": 4, "window_layers": "LSL")");
  EXPECT_EQ(qwen2["architectures"][0], "Qwen2ForCausalLM");
  EXPECT_EQ(qwen2["layer_types"], nlohmann::json({"full_attention", "sliding_attention", "full_attention"}));
  EXPECT_EQ(qwen2["use_sliding_window"], true);
  const auto qwen3 = written(R"("attention_bias": false, "qk_norm": true, "qk_norm_weight": true, "qk_norm_eps": 1e-5)");
  EXPECT_EQ(qwen3["model_type"], "qwen3");
  EXPECT_EQ(qwen3["use_sliding_window"], false);
  EXPECT_FALSE(qwen3.contains("layer_types"));  // Qwen2Config's __post_init__ sets them: all full

  auto refused = [&](const std::string& extra) {
    models::DecoderLM model(models::parse_model_config(base + extra + "}"));
    save_hf(model, path("out"));
  };
  EXPECT_THROW_WITH(refused(R"("attention_bias": false, "sliding_window": 4, "window_layers": "LSL")"),
                    "window_layers \"LSL\" cannot be expressed by MistralForCausalLM");
  EXPECT_THROW_WITH(refused(R"("sliding_window": 4)"), "sliding_window 4 (with attention biases)",
                    "LlamaForCausalLM");
  EXPECT_THROW_WITH(refused(R"("attention_bias": false, "qk_norm": true, "qk_norm_weight": true, "qk_norm_eps": 1e-6)"),
                    "qk_norm_eps", "Qwen3ForCausalLM");
  EXPECT_THROW_WITH(refused(R"("attention_bias": false, "sliding_window": 4, "window_pattern": "SL")"),
                    "window_pattern \"SL\"");
}

TEST_F(HfCheckpointTest, ModelsNeitherClassExpressesAreRefused) {
  models::DecoderLM nanochat(models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 2,
    "max_seq_len": 8, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "qk_norm": true})"));
  EXPECT_THROW_WITH(save_hf(nanochat, path("out")), "qk_norm true cannot be expressed by LlamaForCausalLM");
  models::DecoderLM alibi(models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 2,
    "max_seq_len": 8, "position": "alibi"})"));
  EXPECT_THROW_WITH(save_hf(alibi, path("out")), "position alibi");
}

}  // namespace
}  // namespace nf::formats
