// llama2.c's .bin: the fixtures of tools/golden/llama2c_fixtures.py (a tied and an untied tiny LLaMA,
// with llama2.c's forward computed in PyTorch) load with equal logits; our writer's bytes equal the
// script's; save -> load is identical; truncated, oversized and nonsensical files and models that
// llama2.c cannot express are refused by name. With NF_LLAMA2C_REFERENCE set (the output of
// tools/llama2c_numpy_reference.py) the real stories260K.bin is checked against numpy too.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

std::string data_path(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/llama2c/" + name; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

using Llama2cTest = testing::TempDirTest;

TEST_F(Llama2cTest, TinyModelsGiveTheLogitsOfLlama2cForward) {
  for (const std::string name : {"tiny_tied", "tiny_untied"}) {
    const auto model = load_llama2c(data_path(name + ".bin"));
    model->eval();
    EXPECT_EQ(model->config().tie_embeddings, name == "tiny_tied");
    EXPECT_EQ(model->config().rope_layout, RopeLayout::interleaved);
    const auto expected = io::load_safetensors(data_path(name + ".logits.safetensors"));
    const Tensor logits = model->forward(expected.at("ids")).logits;
    EXPECT_TENSOR_CLOSE(logits, expected.at("logits"), 1e-5, 1e-5);
    std::cout << name << ": max abs logit error " << testing::max_abs_diff(logits, expected.at("logits")) << "\n";
  }
}

TEST_F(Llama2cTest, WriterBytesEqualTheScripts) {
  for (const std::string name : {"tiny_tied", "tiny_untied"}) {
    save_llama2c(*load_llama2c(data_path(name + ".bin")), path(name + ".bin"));
    EXPECT_TRUE(read_bytes(path(name + ".bin")) == read_bytes(data_path(name + ".bin"))) << name;
  }
}

TEST_F(Llama2cTest, SaveThenLoadIsIdentical) {
  for (const char* tie : {"true", "false"}) {
    models::DecoderLM model(models::parse_model_config(std::string(R"({"vocab_size": 48, "dim": 32, "n_layers": 2, "n_heads": 4,
      "n_kv_heads": 2, "max_seq_len": 16, "norm": "rmsnorm", "norm_bias": false, "position": "rope",
      "rope_layout": "interleaved", "mlp": "swiglu", "mlp_multiple_of": 8, "attention_bias": false,
      "mlp_bias": false, "tie_embeddings": )") + tie + "}"));
    model.eval();
    save_llama2c(model, path("m.bin"));
    const auto loaded = load_llama2c(path("m.bin"));
    loaded->eval();
    EXPECT_EQ(models::count_parameters(loaded->config()), model.num_parameters());
    const Tensor ids = Tensor::of({3, 1, 4, 1, 5, 9, 2, 6, 47, 0}, {1, 10}, DType::i64);
    EXPECT_TENSOR_CLOSE(loaded->forward(ids).logits, model.forward(ids).logits, 0.0, 0.0);
  }
}

// A half-RoPE LLaMA (the Hugging Face layout) is written in run.c's interleaved layout with its
// q / k rows reordered (formats/rope_rows.h): loaded back, it computes the same logits.
TEST_F(Llama2cTest, HalfRopeModelIsWrittenWithPermutedRows) {
  Generator gen(6);
  models::DecoderLM model(models::parse_model_config(R"({"vocab_size": 48, "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
    "max_seq_len": 16, "norm": "rmsnorm", "norm_bias": false, "position": "rope", "rope_layout": "half",
    "mlp": "swiglu", "mlp_multiple_of": 8, "attention_bias": false, "mlp_bias": false})"), gen);
  model.eval();
  save_llama2c(model, path("half.bin"));
  const auto loaded = load_llama2c(path("half.bin"));
  loaded->eval();
  EXPECT_EQ(loaded->config().rope_layout, RopeLayout::interleaved);
  const Tensor ids = Tensor::of({3, 1, 4, 1, 5, 9, 2, 6, 47, 0}, {1, 10}, DType::i64);
  const Tensor expected = model.forward(ids).logits, logits = loaded->forward(ids).logits;
  EXPECT_TENSOR_CLOSE(logits, expected, 1e-5, 1e-5);
  std::cout << "half -> llama2c: max abs logit difference " << testing::max_abs_diff(logits, expected) << "\n";
}

TEST_F(Llama2cTest, TruncatedOversizedAndNonsenseFilesAreRefused) {
  const std::string bytes = read_bytes(data_path("tiny_tied.bin"));
  write_bytes(path("short.bin"), bytes.substr(0, bytes.size() - 4));
  EXPECT_THROW_WITH(load_llama2c(path("short.bin")), path("short.bin"), "truncated llama2.c file: 24152 bytes",
                    "implies about 24156");
  write_bytes(path("long.bin"), bytes + "xxxx");
  EXPECT_THROW_WITH(load_llama2c(path("long.bin")), path("long.bin"), "oversized", "24160 bytes");
  write_bytes(path("header.bin"), bytes.substr(0, 20));
  EXPECT_THROW_WITH(load_llama2c(path("header.bin")), "truncated", "the header alone is 28");
  std::string zero_heads = bytes;
  zero_heads[12] = 0;  // n_heads = 0
  write_bytes(path("heads.bin"), zero_heads);
  EXPECT_THROW_WITH(load_llama2c(path("heads.bin")), "n_heads is 0");
  EXPECT_THROW_WITH(load_llama2c(path("missing.bin")), "no such llama2.c file");
  // a header claiming 2^24 - 2 layers of 2^24 - 2 wide matrices: refused from the header alone,
  // before the tensor list is built or its size summed (that sum would overflow int64): no model
  // this engine builds is that large
  const int32_t huge = (1 << 24) - 2;
  const std::array<int32_t, 7> header{huge, huge, huge, 1, 1, 1, 1};
  write_bytes(path("huge.bin"), std::string(reinterpret_cast<const char*>(header.data()), sizeof(header)) + "pad");
  EXPECT_THROW_WITH(load_llama2c(path("huge.bin")), "huge.bin", "describes 3.30566e+22 parameters, more than the 1e15");
}

TEST_F(Llama2cTest, ModelsLlama2cCannotExpressAreRefused) {
  models::DecoderLM gpt(models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 1, "n_heads": 4, "max_seq_len": 8})"));
  EXPECT_THROW_WITH(save_llama2c(gpt, path("gpt.bin")), "norm layernorm", "rmsnorm");
  EXPECT_FALSE(std::filesystem::exists(path("gpt.bin")));
}

// Opt-in: NF_LLAMA2C_REFERENCE=<file written by tools/llama2c_numpy_reference.py>.
TEST_F(Llama2cTest, Stories260kMatchesTheNumpyReference) {
  const char* reference = std::getenv("NF_LLAMA2C_REFERENCE");
  if (!reference) GTEST_SKIP() << "set NF_LLAMA2C_REFERENCE to run";
  const io::SafetensorsFile file = io::SafetensorsFile::open(reference);
  const std::string bin = file.metadata().at("bin");
  const auto model = load_llama2c(bin);
  model->eval();
  models::DecoderLMConfig architecture = model->config();
  architecture.name = "llama2c-stories260k";
  architecture.mlp_hidden = 0;
  architecture.mlp_multiple_of = 4;
  EXPECT_EQ(models::model_config_to_json(architecture), model_config_to_json(models::preset_config("llama2c-stories260k")));
  const Tensor logits = model->forward(file.load("ids")).logits;
  EXPECT_TENSOR_CLOSE(logits, file.load("logits"), 1e-4, 1e-5);
  std::cout << bin << ": max abs logit error vs numpy " << testing::max_abs_diff(logits, file.load("logits")) << "\n";
}

}  // namespace
}  // namespace nf::formats
