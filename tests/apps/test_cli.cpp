// The `nanoformer` binary end to end (its path is NF_CLI, set by CMakeLists.txt): `inspect` prints
// the exact parameter count and parseable JSON; `forward` writes the library's logits and hidden
// states (an encoder's last_hidden_state, matching transformers) and refuses out-of-range ids;
// `convert` round-trips to identical logits and says which formats are not written yet; bad flags
// and bad model names give a one-line error and a non-zero exit; every subcommand's --help shows an
// example; `lora merge` folds an adapter into its base.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nanoformer/nanoformer.h"
#include "support/cli_test.h"
#include "support/testing.h"

namespace nf {
namespace {

using testing::CliRun;
using testing::read_text;
using CliTest = testing::CliTest;

int64_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST_F(CliTest, InspectPrintsTheExactParameterCount) {
  const CliRun r = cli("inspect gpt-mini");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nparameters: 12368064\n"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectJsonParsesAndAgreesWithModelStats) {
  const CliRun r = cli("inspect minimind2-moe --json --context 512 --batch 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const models::ModelStats s = models::model_stats(models::preset_config("minimind2-moe"), {.context = 512, .batch = 4});
  EXPECT_EQ(j["parameters"]["total"].get<int64_t>(), 145029760);
  EXPECT_EQ(j["parameters"]["routed_experts"].get<int64_t>(), s.parameters.routed_experts);
  EXPECT_EQ(j["active_parameters"].get<int64_t>(), s.active_parameters);
  EXPECT_EQ(j["flops_per_token"]["forward"].get<int64_t>(), s.forward_flops_per_token);
  EXPECT_EQ(j["memory_bytes"]["bf16"]["training"].get<int64_t>(), s.bf16.training);
  EXPECT_EQ(j["context"].get<int64_t>(), 512);
  EXPECT_EQ(j["batch"].get<int64_t>(), 4);
}

TEST_F(CliTest, InspectReadsAConfigFile) {
  std::ofstream(path("tiny.json")) << R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";
  const CliRun r = cli("inspect '" + path("tiny.json") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t expected = models::count_parameters(models::load_model_config(path("tiny.json")));
  EXPECT_NE(r.out.find("\nparameters: " + std::to_string(expected) + "\n"), std::string::npos) << r.out;
}

// A small config every forward / convert test uses: untied head, RoPE, GQA, SwiGLU.
std::string write_tiny_config(const std::string& path) {
  std::ofstream(path) << R"({"vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "tie_embeddings": false})";
  return path;
}

Tensor ids_tensor() { return Tensor::of({3, 1, 4, 1, 5, 9, 2, 6, 39, 0}, {1, 10}, DType::i64); }
const char* kIds = "\"3 1 4 1 5 9 2 6 39 0\"";

TEST_F(CliTest, ForwardWritesTheLibrarysLogitsAndHiddenStates) {
  const std::string config = write_tiny_config(path("tiny.json"));
  const CliRun r = cli("forward --model '" + config + "' --ids " + kIds + " --out '" + path("out.safetensors") + "' --hidden");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto model = formats::load_decoder_lm(config);
  model->eval();
  const models::LMOutput expected = model->forward(ids_tensor(), {}, true);
  const auto written = io::load_safetensors(path("out.safetensors"));
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written.at("logits").shape(), (Shape{10, 40}));
  EXPECT_EQ(written.at("logits").dtype(), DType::f32);
  EXPECT_TENSOR_CLOSE(written.at("logits"), reshape(expected.logits, {10, 40}), 1e-6, 1e-6);
  for (int i = 0; i < 2; ++i)
    EXPECT_TENSOR_CLOSE(written.at("hidden." + std::to_string(i)), reshape(expected.hidden[i], {10, 16}), 1e-6, 1e-6);
}

TEST_F(CliTest, ForwardRefusesAnOutOfRangeId) {
  const std::string config = write_tiny_config(path("tiny.json"));
  const CliRun r = cli("forward --model '" + config + "' --ids \"1 40 2\" --out '" + path("out.safetensors") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("token id 40 (position 1) is outside the model's vocabulary [0, 40)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out.safetensors")));
}

// config -> convert -> checkpoint: forward on both gives bit-identical logits, twice converted
// gives the same bytes, and inspect reads the checkpoint's config.
TEST_F(CliTest, ConvertRoundTripGivesIdenticalLogits) {
  const std::string config = write_tiny_config(path("tiny.json"));
  const std::string ckpt = path("tiny.safetensors"), again = path("again.safetensors");
  ASSERT_EQ(cli("convert '" + config + "' '" + ckpt + "' --to nanoformer").exit_code, 0);
  ASSERT_EQ(cli("convert '" + ckpt + "' '" + again + "' --to nanoformer").exit_code, 0);
  EXPECT_EQ(read_text(ckpt), read_text(again));
  ASSERT_EQ(cli("forward --model '" + config + "' --ids " + kIds + " --out '" + path("a.safetensors") + "'").exit_code, 0);
  ASSERT_EQ(cli("forward --model '" + ckpt + "' --ids " + kIds + " --out '" + path("b.safetensors") + "'").exit_code, 0);
  EXPECT_TENSOR_CLOSE(io::load_safetensors(path("a.safetensors")).at("logits"),
                      io::load_safetensors(path("b.safetensors")).at("logits"), 0.0, 0.0);
  const CliRun r = cli("inspect '" + ckpt + "'");
  EXPECT_NE(r.out.find("\nparameters: " + std::to_string(formats::load_decoder_lm(config)->num_parameters()) + "\n"),
            std::string::npos) << r.out;
}

// The tiny config (biases, `half` RoPE) is a LlamaForCausalLM: --to hf round-trips to identical logits,
// in one file or in shards (--max-shard-size); the formats that cannot express it say which option
// in one line, as do a shard size for a format without shards and a size that is no size.
TEST_F(CliTest, ConvertToEachFormatLoadsBackOrNamesWhatItCannotExpress) {
  const std::string config = write_tiny_config(path("tiny.json"));
  ASSERT_EQ(cli("convert '" + config + "' '" + path("hf") + "' --to hf").exit_code, 0);
  ASSERT_EQ(cli("forward --model '" + config + "' --ids " + kIds + " --out '" + path("a.safetensors") + "'").exit_code, 0);
  ASSERT_EQ(cli("forward --model '" + path("hf") + "' --ids " + kIds + " --out '" + path("b.safetensors") + "'").exit_code, 0);
  EXPECT_TENSOR_CLOSE(io::load_safetensors(path("a.safetensors")).at("logits"),
                      io::load_safetensors(path("b.safetensors")).at("logits"), 0.0, 0.0);
  ASSERT_EQ(cli("convert '" + config + "' '" + path("shards") + "' --to hf --max-shard-size 2KB").exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(path("shards") + "/model.safetensors.index.json"));
  EXPECT_FALSE(std::filesystem::exists(path("shards") + "/model.safetensors"));
  ASSERT_EQ(cli("forward --model '" + path("shards") + "' --ids " + kIds + " --out '" + path("c.safetensors") + "'").exit_code, 0);
  EXPECT_TENSOR_CLOSE(io::load_safetensors(path("c.safetensors")).at("logits"),
                      io::load_safetensors(path("a.safetensors")).at("logits"), 0.0, 0.0);
  const std::pair<const char*, const char*> refused[] = {{"minimind", "attention_bias / mlp_bias true"},
                                                         {"minimind-hf", "attention_bias / mlp_bias true"},
                                                         {"nanochat", "norm rmsnorm"},
                                                         {"llama2c", "attention_bias true"},
                                                         {"nanoformer --max-shard-size 1MB", "is not written in shards"},
                                                         {"hf --max-shard-size 2XB", "--max-shard-size"}};
  for (const auto& [format, reason] : refused) {
    const CliRun r = cli("convert '" + config + "' '" + path("out") + "' --to " + format);
    EXPECT_NE(r.exit_code, 0) << format;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  }
  const CliRun r = cli("convert '" + config + "' '" + path("out") + "' --to onnx");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nanoformer,hf,minimind,minimind-hf,nanochat,llama2c"), std::string::npos) << r.err;
}

// The ViT fixture of tools/golden/hf_vit_fixtures.py: forward on its first image gives transformers'
// logits and hidden states; convert hf -> nanoformer -> hf keeps the logits bit for bit.
const std::string kViT = std::string(NF_TEST_DATA_DIR) + "/hf/vit";

std::string write_pixels(const std::string& path, const std::string& name, const Tensor& pixels) {
  io::save_safetensors(path, {{name, pixels}});
  return path;
}

TEST_F(CliTest, ForwardOnAViTGivesTransformersLogitsAndHiddenStates) {
  const auto expected = io::load_safetensors(kViT + ".logits.safetensors");
  const std::string input = write_pixels(path("in.safetensors"), "pixel_values", select(expected.at("pixel_values"), 0, 0));
  const CliRun r = cli("forward --model '" + kViT + "' --input '" + input + "' --out '" + path("out.safetensors") + "' --hidden");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto written = io::load_safetensors(path("out.safetensors"));
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written.at("logits").shape(), (Shape{10}));
  EXPECT_TENSOR_CLOSE(written.at("logits"), select(expected.at("logits"), 0, 0), 1e-5, 1e-5);
  for (int i = 0; i < 2; ++i) {
    const std::string name = "hidden." + std::to_string(i);
    EXPECT_TENSOR_CLOSE(written.at(name), select(expected.at(name), 0, 0), 1e-5, 1e-5) << name;
  }
}

TEST_F(CliTest, ForwardOnAViTNamesABadInput) {
  const std::string out = " --out '" + path("out.safetensors") + "'";
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"--input '" + write_pixels(path("a.safetensors"), "pixels", zeros({3, 16, 16})) + "'",
       {path("a.safetensors"), "no tensor 'pixel_values'"}},
      {"--input '" + write_pixels(path("b.safetensors"), "pixel_values", zeros({3, 8, 8})) + "'",
       {path("b.safetensors"), "'pixel_values' is (3, 8, 8)", "takes (3, 16, 16)"}},
      {"--ids \"1 2\"", {"--ids", "image classifier", "--input"}},
      {"", {"--input FILE.safetensors"}}};
  for (const auto& [args, parts] : cases) {
    const CliRun r = cli("forward --model '" + kViT + "' " + args + out);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    for (const auto& part : parts) EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("out.safetensors")));
}

TEST_F(CliTest, ConvertAViTBetweenHfAndNanoformer) {
  const auto expected = io::load_safetensors(kViT + ".logits.safetensors");
  const std::string input = write_pixels(path("in.safetensors"), "pixel_values", select(expected.at("pixel_values"), 0, 1));
  ASSERT_EQ(cli("convert '" + kViT + "' '" + path("vit.safetensors") + "' --to nanoformer").exit_code, 0);
  ASSERT_EQ(cli("convert '" + path("vit.safetensors") + "' '" + path("hf") + "' --to hf").exit_code, 0);
  for (const std::string& model : {kViT, path("vit.safetensors"), path("hf")}) {
    ASSERT_EQ(cli("forward --model '" + model + "' --input '" + input + "' --out '" + path("out.safetensors") + "'").exit_code, 0);
    EXPECT_TENSOR_CLOSE(io::load_safetensors(path("out.safetensors")).at("logits"), select(expected.at("logits"), 0, 1),
                        1e-5, 1e-5) << model;
  }
  const CliRun r = cli("convert '" + kViT + "' '" + path("out") + "' --to llama2c");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("architecture 'vit'"), std::string::npos) << r.err;
}

// transformers' sum(p.numel()) of ViTForImageClassification with vit-tiny's config.
TEST_F(CliTest, InspectVitTinyPrintsTransformersParameterCount) {
  const CliRun r = cli("inspect vit-tiny");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nparameters: 5717416\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("patch embedding"), std::string::npos) << r.out;
}

// "1 2 3" from the integer tensor t.
std::string spaced(const Tensor& t) {
  std::string out;
  for (int64_t v : t.to_vector<int64_t>()) {
    if (!out.empty()) out += ' ';
    out += std::to_string(v);
  }
  return out;
}

// An encoder: the BertModel fixture of tools/golden/hf_bert_fixtures.py gives transformers'
// last_hidden_state for its unpadded sequence with token types; hf -> nanoformer -> hf keeps the
// outputs bit for bit; inspect reads the converted checkpoint.
TEST_F(CliTest, ForwardOnABertFolderGivesTransformersOutput) {
  const std::string bert = std::string(NF_TEST_DATA_DIR) + "/hf/bert";
  const auto expected = io::load_safetensors(bert + ".outputs.safetensors");
  const std::string inputs = " --ids \"" + spaced(expected.at("short_ids")) + "\" --token-type-ids \"" +
                             spaced(expected.at("short_token_type_ids")) + "\"";
  const CliRun r = cli("forward --model '" + bert + "'" + inputs + " --out '" + path("a.safetensors") + "' --hidden");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto written = io::load_safetensors(path("a.safetensors"));
  const int64_t T = expected.at("short_ids").size(1);
  EXPECT_TENSOR_CLOSE(written.at("last_hidden_state"), reshape(expected.at("short_last_hidden_state"), {T, 32}), 1e-5,
                      1e-5);
  EXPECT_TENSOR_CLOSE(written.at("hidden.1"), written.at("last_hidden_state"), 0.0, 0.0);  // post-norm: the last layer's
  EXPECT_EQ(written.at("pooler_output").shape(), (Shape{32}));
  const std::string ckpt = path("bert.safetensors"), hf = path("bert_hf");
  ASSERT_EQ(cli("convert '" + bert + "' '" + ckpt + "' --to nanoformer").exit_code, 0);
  ASSERT_EQ(cli("convert '" + ckpt + "' '" + hf + "' --to hf").exit_code, 0);
  ASSERT_EQ(cli("forward --model '" + hf + "'" + inputs + " --out '" + path("b.safetensors") + "'").exit_code, 0);
  const auto again = io::load_safetensors(path("b.safetensors"));
  EXPECT_TENSOR_CLOSE(again.at("last_hidden_state"), written.at("last_hidden_state"), 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(again.at("pooler_output"), written.at("pooler_output"), 0.0, 0.0);
  const CliRun info = cli("inspect '" + ckpt + "'");
  EXPECT_NE(info.out.find("\nparameters: " + std::to_string(formats::load_model(bert)->num_parameters()) + "\n"),
            std::string::npos) << info.out;
  const CliRun bad = cli("forward --model '" + bert + "' --ids \"1 2\" --token-type-ids \"0 2\" --out '" +
                         path("c.safetensors") + "'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--token-type-ids: token id 2"), std::string::npos) << bad.err;
}

// lora merge: an adapter made by the library on a checkpoint folds into a model whose logits equal
// the adapted model's, as a nanoformer checkpoint or (--base taken from the adapter) a Hugging Face
// folder; an adapter for another base is refused in one line naming the mismatch, writing nothing.
TEST_F(CliTest, LoraMergeFoldsAnAdapterIntoItsBase) {
  const std::string base = path("base.safetensors"), adapter = path("adapter.safetensors");
  ASSERT_EQ(cli("convert '" + write_tiny_config(path("tiny.json")) + "' '" + base + "' --to nanoformer").exit_code, 0);
  auto model = formats::load_decoder_lm(base);
  const models::LoRAOptions options{.rank = 2, .alpha = 4.0, .targets = {"q", "v", "gate", "down"}};
  models::apply_lora(*model, options);
  Generator gen(5);
  {
    autograd::NoGradGuard no_grad;
    for (const auto& [name, t] : models::lora_parameters(*model)) copy_into(t, mul(randn(t.shape(), gen), 0.3));
  }
  model->eval();
  const Tensor adapted = model->forward(ids_tensor()).logits;
  formats::save_lora_adapter(*model, options, adapter, base);
  CliRun r = cli("lora merge --base '" + base + "' --adapter '" + adapter + "' --out '" + path("merged.safetensors") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(rank 2, alpha 4)"), std::string::npos) << r.out;
  r = cli("lora merge --adapter '" + adapter + "' --out '" + path("merged_hf") + "' --to hf");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* merged : {"merged.safetensors", "merged_hf"}) {
    auto plain = formats::load_decoder_lm(path(merged));
    EXPECT_FALSE(models::has_lora(*plain));
    plain->eval();
    EXPECT_TENSOR_CLOSE(plain->forward(ids_tensor()).logits, adapted, 1e-5, 0.0) << merged;
  }
  std::ofstream(path("wide.json")) << R"({"vocab_size": 40, "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "tie_embeddings": false})";
  r = cli("lora merge --base '" + path("wide.json") + "' --adapter '" + adapter + "' --out '" + path("x.safetensors") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("mis-shaped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dim (16 there, 32 here)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("x.safetensors")));
  // every shape agrees, but the base computes something else: refused, naming the key; a base that
  // differs only in dropout (nothing the merged weights compute) is accepted
  std::ofstream(path("theta.json")) << R"({"vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "tie_embeddings": false,
      "rope_theta": 1000000.0})";
  r = cli("lora merge --base '" + path("theta.json") + "' --adapter '" + adapter + "' --out '" + path("x.safetensors") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("trained on another base"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rope_theta (10000.0 there, 1000000.0 here)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("x.safetensors")));
  std::ofstream(path("dropout.json")) << R"({"vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "tie_embeddings": false,
      "dropout": 0.1})";
  r = cli("lora merge --base '" + path("dropout.json") + "' --adapter '" + adapter + "' --out '" + path("x.safetensors") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliTest, BadModelNameIsOneLineAndNonZero) {
  const CliRun r = cli("inspect gpt5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("preset 'gpt5' is unknown"), std::string::npos) << r.err;
}

// A model path that does not exist is named as a missing file, not as an unknown preset, wherever a
// model or config is read (inspect, convert, --model, --config, --init-from: one shared resolver).
TEST_F(CliTest, AMissingModelFileIsNamedAsMissing) {
  for (const std::string missing : {"x.json", "runs/none", "model.safetensors", "stories.bin"})
    for (const std::string& args : {"inspect " + missing, "convert " + missing + " out.safetensors --to nanoformer",
                                   "generate -m " + missing + " --ids -n 1",
                                   "train --config " + missing + " --data d.bin --out " + path("run"),
                                   "train --init-from " + missing + " --data d.bin --out " + path("run")}) {
      const CliRun r = cli(args);
      EXPECT_NE(r.exit_code, 0) << args;
      EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
      EXPECT_NE(r.err.find(missing + ": no such file or folder"), std::string::npos) << args << ": " << r.err;
      EXPECT_EQ(r.err.find("preset"), std::string::npos) << args << ": " << r.err;
    }
  EXPECT_FALSE(std::filesystem::exists(path("run")));
}

TEST_F(CliTest, BadFlagIsOneLineAndNonZero) {
  for (const char* args : {"inspect gpt-mini --bogus", "inspect gpt-mini --batch 0", "inspect", "frobnicate",
                           "forward --model gpt-mini --out x.safetensors", "forward --model gpt-mini --ids \"1 x\" --out x.st",
                           "convert gpt-mini out.safetensors", "convert no-such-model out.safetensors --to nanoformer",
                           "lora", "lora merge --base gpt-mini --out x.safetensors",
                           "lora merge --adapter no-such-file.safetensors --out x.safetensors",
                           "forward --model gpt-mini --ids \"1 2\" --token-type-ids \"0 0\" --out x.safetensors"}) {
    const CliRun r = cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
}

TEST_F(CliTest, EveryNewSubcommandHelpShowsAnExample) {
  for (const char* command : {"inspect", "forward", "convert", "lora merge"}) {
    const CliRun r = cli(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("Example: nanoformer " + std::string(command)), std::string::npos) << r.out;
  }
}

// An encoder-decoder: --ids is the source, --target-ids the decoder input; logits (T, tgt_vocab)
// equal the library's; without --target-ids the error says what is missing.
TEST_F(CliTest, ForwardRunsAnEncoderDecoder) {
  std::ofstream(path("seq2seq.json")) << R"({"architecture": "encoder_decoder", "src_vocab_size": 30,
      "tgt_vocab_size": 20, "dim": 16, "n_encoder_layers": 2, "n_decoder_layers": 1, "n_heads": 4, "max_seq_len": 8})";
  const CliRun r = cli("forward --model '" + path("seq2seq.json") + "' --ids \"3 29 4\" --target-ids \"1 19\" --out '" +
                       path("out.safetensors") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto model = models::model_as<models::EncoderDecoder>(formats::load_model(path("seq2seq.json")), "seq2seq.json");
  model->eval();
  const Tensor expected = model->forward(Tensor::of({3, 29, 4}, {1, 3}, DType::i64), Tensor::of({1, 19}, {1, 2}, DType::i64)).logits;
  EXPECT_TENSOR_CLOSE(io::load_safetensors(path("out.safetensors")).at("logits"), reshape(expected, {2, 20}), 0.0, 0.0);
  const CliRun missing = cli("forward --model '" + path("seq2seq.json") + "' --ids \"3 4\" --out '" + path("x.safetensors") + "'");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("--target-ids"), std::string::npos) << missing.err;
}

TEST_F(CliTest, InspectShowsTheTransformerBaseParts) {
  const CliRun r = cli("inspect transformer-base");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nparameters: 63082496\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cross-attention"), std::string::npos) << r.out;
}

// A BERT tokenizer (all-MiniLM-L6-v2's tokenizer.json): plain ids, ids with [CLS] ... [SEP] as
// Hugging Face's encode gives them, and decoding with and without the special tokens.
TEST_F(CliTest, TokenizerEncodesAndDecodesWithABertTokenizer) {
  const std::string tok = "-t tests/fixtures/tokenizer/wp_minilm.json";
  CliRun r = cli("tokenizer encode " + tok + " --text 'Hello, World!'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "7592 1010 2088 999\n");
  r = cli("tokenizer encode " + tok + " --special-tokens --text 'Hello, World!'");
  EXPECT_EQ(r.out, "101 7592 1010 2088 999 102\n") << r.err;
  r = cli("tokenizer decode " + tok + " --ids 101 7592 1010 2088 999 102");
  EXPECT_EQ(r.out, "[CLS] hello, world! [SEP]") << r.err;
  r = cli("tokenizer decode " + tok + " --skip-special --ids 101 7592 1010 2088 999 102");
  EXPECT_EQ(r.out, "hello, world!") << r.err;
  r = cli("tokenizer info tests/fixtures/tokenizer/wp_minilm.json");
  EXPECT_NE(r.out.find("kind: wordpiece\nvocabulary size: 30522\n"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace nf
