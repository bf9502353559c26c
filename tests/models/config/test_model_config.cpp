// DecoderLMConfig: parsing (every key round-trips, unknown and misspelled keys and bad values are
// errors naming them), the presets of configs/ and their exact parameter counts against the
// figures derived by hand from the reference documents (docs/models.md shows the sums).
#include <filesystem>
#include <fstream>

#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/decoder_lm.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf::models {
namespace {

const char* kTiny = R"({"vocab_size": 64, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";

TEST(ModelConfig, DefaultsAreGpt2Choices) {
  const DecoderLMConfig c = parse_model_config(kTiny);
  EXPECT_EQ(c.vocab_size, 64);
  EXPECT_EQ(c.norm, nn::NormKind::layernorm);
  EXPECT_EQ(c.position, nn::PositionKind::learned);
  EXPECT_EQ(c.mlp, nn::MLPKind::gelu_tanh);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_FALSE(c.moe.has_value());
}

TEST(ModelConfig, EveryPresetRoundTripsThroughJson) {
  for (const std::string& name : preset_names_of(DecoderLMConfig::kArchitecture)) {
    const DecoderLMConfig c = preset_config(name);
    EXPECT_EQ(c.name, name);
    const std::string text = model_config_to_json(c);
    EXPECT_EQ(model_config_to_json(parse_model_config(text, name)), text) << name;
  }
}

// A name from a folder or a GGUF's general.name may hold bytes that are not UTF-8: the JSON gets
// U+FFFD for them (nlohmann::json's dump threw a type_error, no nf::Error, and took the CLI down).
TEST(ModelConfig, ANameThatIsNotUtf8BecomesReplacementCharacters) {
  DecoderLMConfig c = preset_config("gpt-mini");
  c.name = "tiny\x99model";
  DecoderLMConfig back;
  ASSERT_NO_THROW(back = parse_model_config(model_config_to_json(c)));
  EXPECT_EQ(back.name, "tiny\xef\xbf\xbdmodel");
}

TEST(ModelConfig, UnknownKeyIsNamedWithTheNearestKnownOne) {
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 64, "n_layer": 2})", "my.json"), "my.json",
                    "unknown key 'n_layer'", "did you mean 'n_layers'");
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 64, "colour": 2})", "my.json"), "unknown key 'colour'");
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 64, "dim": 16, "n_layers": 1, "n_heads": 1,
      "max_seq_len": 4, "moe": {"n_expert": 4}})", "m.json"), "m.json: moe", "unknown key 'n_expert'");
}

// Found by fuzz/fuzz_model_config.cpp: numbers nlohmann cannot hold and deep nesting are nf::Errors
// naming the file, never nlohmann exceptions or a recursion through the nesting.
TEST(ModelConfig, MalformedJsonIsAnErrorNamingTheFile) {
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 32, "norm_eps": 1.19E55078125})", "my.json"), "my.json",
                    "not valid JSON");
  EXPECT_THROW_WITH(parse_model_config(std::string(100, '[') + std::string(100, ']'), "deep.json"), "deep.json",
                    "nests deeper than 64");
}

TEST(ModelConfig, BadValuesNameKeyAndValue) {
  auto with = [](const std::string& extra) {
    return parse_model_config(R"({"vocab_size": 64, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8, )" +
                                  extra + "}",
                              "c.json");
  };
  EXPECT_THROW_WITH(with(R"("dim2": 1)"), "unknown key 'dim2'");
  EXPECT_THROW_WITH(with(R"("n_kv_heads": 3)"), "c.json", "'n_kv_heads'", "3");
  EXPECT_THROW_WITH(with(R"("norm": "batchnorm")"), "'norm'", "batchnorm");
  EXPECT_THROW_WITH(with(R"("mlp": "swish")"), "'mlp'", "swish");
  EXPECT_THROW_WITH(with(R"("position": "xl_relative")"), "'position'", "xl_relative", "t5_bias");
  EXPECT_THROW_WITH(with(R"("rope_layout": "sideways")"), "'rope_layout'", "sideways");
  EXPECT_THROW_WITH(with(R"("dropout": 1.5)"), "'dropout'", "1.5");
  EXPECT_THROW_WITH(with(R"("tie_embeddings": "yes")"), "'tie_embeddings'", "expected true or false");
  EXPECT_THROW_WITH(with(R"("init": "xavier")"), "'init'", "xavier");
  EXPECT_THROW_WITH(with(R"("init": "nanochat")"), "'init'", "tie_embeddings false");
  EXPECT_THROW_WITH(with(R"("logit_softcap": -1)"), "'logit_softcap'", "-1");
  EXPECT_THROW_WITH(with(R"("moe": {"n_experts": 2, "top_k": 3})"), "'moe.top_k'", "3");
  // dense gating has no load-balancing loss: refused while parsing, not when the MoE is built
  EXPECT_THROW_WITH(with(R"("moe": {"n_experts": 2, "top_k": 1, "routing": "dense"})"), "c.json",
                    "'moe.aux_loss_alpha'", "0.1", "dense routing");
  EXPECT_THROW_WITH(with(R"("position": "rope", "head_dim": 5)"), "c.json", "'head_dim'", "5", "even for RoPE");
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 64, "dim": 15, "n_layers": 2, "n_heads": 4,
      "max_seq_len": 8})"), "'n_heads'", "divide dim");
  EXPECT_THROW_WITH(parse_model_config("{\"dim\": 16,", "broken.json"), "broken.json", "not valid JSON");
  EXPECT_THROW_WITH(parse_model_config("[1, 2]", "list.json"), "list.json", "expected a JSON object");
}

TEST(ModelConfig, UnknownPresetListsTheKnownOnes) {
  EXPECT_THROW_WITH(preset_config("gpt5"), "preset 'gpt5' is unknown", "gpt2-124m", "minimind2-small");
}

TEST(ModelConfig, LoadsAFileNamingItInErrors) {
  const testing::TempDir dir;
  const std::string path = dir.file("bad_model_config.json");
  std::ofstream(path) << R"({"vocab_size": 64, "heads": 4})";
  EXPECT_THROW_WITH(resolve_model_config(path), path, "unknown key 'heads'");
}

// The figures of docs/models.md, summed by hand from the documents' shapes:
//   gpt2-124m: 50257*768 + 1024*768 + 12*(2*1536 + 4*(768*768+768) + 768*3072+3072 + 3072*768+768) + 1536
//   minimind2-small: 6400*512 + 8*(2*512 + 512*512*2 + 512*128*2 + 3*512*1408) + 512 (tied)
//   minimind2: 6400*768 + 16*(2*768 + 768*768*2 + 768*192*2 + 3*768*2048) + 768 (tied)
//   minimind2-moe: 6400*640 + 8*(2*640 + 640*640*2 + 640*160*2 + (4+1)*3*640*1728 + 640*4) + 640 (tied)
//   nanochat-d20: 2*65536*1280 + 20*(4*1280*1280 + 2*1280*5120) (untied, no norm parameters)
//   nanochat-d6: 2*65536*384 + 6*(4*384*384 + 2*384*1536) (nanochat-d6-sssl: the same, sliding windows of 513
//     in layers 1-3 of every 4, as nanochat's window_pattern "SSSL" at sequence_len 2048)
//   llama2c-stories260k: 512*64 + 5*(2*64 + 64*64*2 + 64*32*2 + 3*64*172) + 64 (tied)
//   gpt-mini: 50257*192 + 256*192 + 6*(2*384 + 4*(192*192+192) + 192*768+768 + 768*192+192) + 384
//   qwen2.5-0.5b: 151936*896 + 24*(2*896 + 896*896+896 + 2*(896*128+128) + 896*896 + 3*896*4864) + 896 (tied;
//     q, k, v biases, none on o: Qwen2.5-0.5B's 494,032,768)
TEST(ModelConfig, PresetParameterCountsMatchTheDocuments) {
  const std::map<std::string, int64_t> expected{
      {"gpt2-124m", 124'439'808},       {"minimind2-small", 25'829'888}, {"minimind2", 104'030'976},
      {"minimind2-moe", 145'029'760},   {"nanochat-d20", 560'988'160},   {"nanochat-d6", 60'948'480},
      {"nanochat-d6-sssl", 60'948'480}, {"llama2c-stories260k", 260'032}, {"gpt-mini", 12'368'064},
      {"qwen2.5-0.5b", 494'032'768},
  };
  EXPECT_EQ(preset_names_of(DecoderLMConfig::kArchitecture).size(), expected.size());
  for (const auto& [name, count] : expected) EXPECT_EQ(count_parameters(preset_config(name)), count) << name;
}

// The count equals the built model's for every preset (reduced, and the small ones at full size):
// ModelStats.PartsEqualTheBuiltModelsParametersByName, part by part.

TEST(ModelConfig, SizesBeyondAnyBuildableModelAreRefusedBeforeCounting) {
  const std::string base = R"("n_layers": 2, "n_heads": 4, "max_seq_len": 8)";
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 10000000000, "dim": 10000000000, )" + base + "}", "big.json"),
                    "big.json", "describes 2.5e+21 parameters, more than the 1e15");
  EXPECT_THROW_WITH(parse_model_config(R"({"vocab_size": 2000000000000, "dim": 8, )" + base + "}", "wide.json"),
                    "wide.json", "key 'vocab_size' has value 2000000000000", "at most 2^40");
}

}  // namespace
}  // namespace nf::models
