// GGUF model files: LLaMA- and GPT-2-style models round-trip through save "gguf" at f32 (identical
// logits) and Q8_0 (the logits of the in-memory quantised model: the same blocks), tied and untied;
// the fixtures of tools/gguf/make_gguf_model_fixtures.py (written by the `gguf` package) load with
// the logits of its numpy forward pass and their tokenizer encodes as Hugging Face tokenizers does;
// quantised and f32 weights are views into the file (f32 ones trainable, the file unchanged); every unsupported key, tensor, tokenizer or model is
// refused in one line naming the file and the key.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/ops/quantized.h"
#include "ops/cpu/quant/panels.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "nanoformer/optim/sgd.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "support/int8_isas.h"
#include "support/interop_test_support.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::formats {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/gguf_model/" + name; }

models::DecoderLMConfig llama_config(bool tied, RopeLayout layout, bool biases) {
  models::DecoderLMConfig c;
  c.name = "tiny-llama";
  c.vocab_size = 64, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.max_seq_len = 32;
  c.norm = nn::NormKind::rmsnorm, c.norm_bias = false, c.norm_eps = 1e-5;
  c.position = nn::PositionKind::rope, c.rope_layout = layout, c.rope_theta = 10000.0;
  c.mlp = nn::MLPKind::swiglu, c.mlp_hidden = 64;
  c.attention_bias = c.mlp_bias = biases;
  c.tie_embeddings = tied;
  return c;
}

models::DecoderLMConfig gpt2_config(bool tied) {
  models::DecoderLMConfig c;
  c.name = "tiny-gpt2";
  c.vocab_size = 64, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.max_seq_len = 32, c.mlp_hidden = 128;
  c.norm = nn::NormKind::layernorm, c.position = nn::PositionKind::learned, c.mlp = nn::MLPKind::gelu_tanh;
  c.tie_embeddings = tied;
  return c;
}

struct Case {
  const char* name;
  models::DecoderLMConfig config;
};

// The models whose GGUF form holds our weights as they are (no row permutation): exact round trips.
std::vector<Case> in_place_cases() {
  models::DecoderLMConfig qkv_biases = llama_config(true, RopeLayout::interleaved, true);
  qkv_biases.attention_output_bias = qkv_biases.mlp_bias = false;  // Qwen2's: q, k and v have biases, o none
  return {{"llama tied", llama_config(true, RopeLayout::interleaved, false)},
          {"llama untied with biases", llama_config(false, RopeLayout::interleaved, true)},
          {"llama with q, k, v biases only", qkv_biases},
          {"gpt2 tied", gpt2_config(true)},
          {"gpt2 untied", gpt2_config(false)}};
}

std::shared_ptr<models::DecoderLM> random_model(const models::DecoderLMConfig& c, uint64_t seed = 7) {
  Generator gen(seed);
  auto model = std::make_shared<models::DecoderLM>(c, gen);
  // random biases and norm weights, so that a bias or norm lost on the way shows in the logits
  NoGradGuard no_grad;
  for (auto& [name, p] : model->named_parameters())
    if (p.dim() == 1) copy_into(p, randn(p.shape(), gen) * 0.1 + (name.find("norm") != std::string::npos ? 1.0 : 0.0));
  return model;
}

const Tensor kIds = Tensor::from_vector(std::vector<int64_t>{3, 17, 42, 5, 63, 0, 9, 31}, {1, 8});

Tensor logits(models::DecoderLM& model, const Tensor& ids = kIds) {
  model.eval();
  NoGradGuard no_grad;
  return model.forward(ids).logits;
}

using GGUFCheckpointTest = testing::TempDirTest;

TEST_F(GGUFCheckpointTest, RoundTripAtF32GivesIdenticalLogits) {
  for (const Case& k : in_place_cases()) {
    auto model = random_model(k.config);
    save_model(*model, path("m.gguf"), "gguf");
    EXPECT_EQ(detect_model_format(path("m.gguf")), ModelFormat::gguf);
    const auto loaded = load_decoder_lm(path("m.gguf"));
    EXPECT_TENSOR_CLOSE(logits(*loaded), logits(*model), 0.0, 0.0) << k.name;
    const models::DecoderLMConfig& c = loaded->config();
    EXPECT_EQ(c.name, k.config.name);
    EXPECT_EQ(c.tie_embeddings, k.config.tie_embeddings) << k.name;
    EXPECT_EQ(c.attention_bias, k.config.attention_bias) << k.name;
    EXPECT_EQ(c.attention_bias && c.attention_output_bias, k.config.attention_bias && k.config.attention_output_bias) << k.name;
    EXPECT_EQ(loaded->num_parameters(), model->num_parameters()) << k.name;
    EXPECT_EQ(c.n_kv_heads == 0 ? c.n_heads : c.n_kv_heads, k.config.n_kv_heads == 0 ? k.config.n_heads : k.config.n_kv_heads);
    EXPECT_TRUE(loaded->named_quantized().empty()) << k.name;
  }
}

// A `half` model is written with its q / k rows in llama.cpp's order and reads back `interleaved`:
// the same function, its dot products summed in another order.
TEST_F(GGUFCheckpointTest, AHalfLayoutModelReadsBackInterleavedWithTheSameLogits) {
  auto model = random_model(llama_config(false, RopeLayout::half, true));
  save_model(*model, path("half.gguf"), "gguf");
  const auto loaded = load_decoder_lm(path("half.gguf"));
  EXPECT_EQ(loaded->config().rope_layout, RopeLayout::interleaved);
  EXPECT_TENSOR_CLOSE(logits(*loaded), logits(*model), 1e-5, 1e-5);
  models::quantize_weights(*model, {.type = QuantType::q8_0});
  save_model(*model, path("half_q8.gguf"), "gguf");
  EXPECT_TENSOR_CLOSE(logits(*load_decoder_lm(path("half_q8.gguf"))), logits(*model), 1e-5, 1e-5);
}

// The model's products' weights as load_gguf lays them out (with_kernel_layout: the kernels'
// panels where the CPU has them), so its decode sums in the loaded model's order.
void with_loads_layout(models::DecoderLM& model) {
  model.apply([&](const std::string&, nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m); linear && linear->is_quantized())
      linear->set_quantized_weight(with_kernel_layout(linear->quantized_weight()));
    if (auto* embedding = dynamic_cast<nn::Embedding*>(&m); embedding && embedding->is_quantized() && model.config().tie_embeddings)
      embedding->set_quantized_weight(with_kernel_layout(embedding->quantized_weight()));
  });
}

TEST_F(GGUFCheckpointTest, RoundTripAtQ8_0GivesTheInMemoryQuantisedLogits) {
  const testing::ScopedPanels panels("1");  // (loaded with panels where the CPU has them)
  for (const Case& k : in_place_cases()) {
    auto model = random_model(k.config);
    const auto done = models::quantize_weights(*model, {.type = QuantType::q8_0});
    save_model(*model, path("q8.gguf"), "gguf");
    const auto loaded = load_decoder_lm(path("q8.gguf"));
    with_loads_layout(*model);
    EXPECT_TENSOR_CLOSE(logits(*loaded), logits(*model), 0.0, 0.0) << k.name;
    // the products' weights carry panels exactly where they pay
    for (const auto& [name, q] : loaded->named_quantized()) {
      if (name.find("embeddings") == std::string::npos) {
        EXPECT_EQ(q.panels() != nullptr, cpu::panels_pay(q.type())) << k.name << ": " << name;  // (forced on)
      }
    }
    const auto expected = model->named_quantized(), actual = loaded->named_quantized();
    ASSERT_EQ(actual.size(), expected.size()) << k.name;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(actual[i].first, expected[i].first);
      EXPECT_EQ(actual[i].second.type(), QuantType::q8_0);
      ASSERT_EQ(actual[i].second.nbytes(), expected[i].second.nbytes());
      EXPECT_EQ(std::memcmp(actual[i].second.data(), expected[i].second.data(), expected[i].second.nbytes()), 0)
          << k.name << ": " << expected[i].first;
    }
  }
}

// The start and end of every mapping of `file` in this process (/proc/self/maps).
std::vector<std::pair<uintptr_t, uintptr_t>> mappings_of(const std::string& file) {
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::ifstream maps("/proc/self/maps");
  const std::string target = fs::canonical(file).string();
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < target.size() || line.compare(line.size() - target.size(), target.size(), target) != 0) continue;
    uintptr_t begin = 0, end = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &begin, &end);
    out.emplace_back(begin, end);
  }
  return out;
}

TEST_F(GGUFCheckpointTest, QuantisedWeightsAreViewsIntoTheMappedFile) {
  auto model = random_model(gpt2_config(true));
  models::quantize_weights(*model, {.type = QuantType::q8_0});
  save_model(*model, path("q8.gguf"), "gguf");
  const auto loaded = load_decoder_lm(path("q8.gguf"));
  const auto maps = mappings_of(path("q8.gguf"));
  ASSERT_FALSE(maps.empty());
  // the fused attn_qkv splits into three row ranges of the file's tensor
  for (const auto& [name, q] : loaded->named_quantized()) {
    const auto at = reinterpret_cast<uintptr_t>(q.data());
    const bool inside =
        std::any_of(maps.begin(), maps.end(), [&](auto m) { return m.first <= at && at + q.nbytes() <= m.second; });
    EXPECT_TRUE(inside) << name;
  }
}

// The resident bytes of the mappings of `file` in this process (/proc/self/smaps' Rss lines).
size_t resident_bytes_of(const std::string& file) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string target = fs::canonical(file).string();
  size_t kib = 0;
  bool in_file = false;
  for (std::string line; std::getline(smaps, line);) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' '))
      in_file = line.size() >= target.size() && line.compare(line.size() - target.size(), target.size(), target) == 0;
    else if (in_file && line.rfind("Rss:", 0) == 0)
      kib += std::stoul(line.substr(4));
  }
  return kib * 1024;
}

// Where the products take panels, the file's pages of their rows are dropped after packing: the
// process holds the weights once (the panels), not the panels and the file's rows.
TEST_F(GGUFCheckpointTest, PanelsLeaveTheFilesRowsOutOfResidentMemory) {
  const testing::ScopedPanels panels("1");
  if (!cpu::panels_pay(QuantType::q8_0)) GTEST_SKIP() << "no panels on this CPU (they need AVX512-VNNI)";
  models::DecoderLMConfig c = gpt2_config(false);
  c.dim = 256, c.mlp_hidden = 1024, c.n_layers = 4;  // weights of many pages
  auto model = random_model(c);
  models::quantize_weights(*model, {.type = QuantType::q8_0});
  save_model(*model, path("q8.gguf"), "gguf");
  const auto loaded = load_decoder_lm(path("q8.gguf"));
  size_t panel_bytes = 0;
  for (const auto& [name, q] : loaded->named_quantized())
    if (q.panels()) panel_bytes += q.nbytes();
  ASSERT_GT(panel_bytes, size_t{2} << 20);
  // what stays: the header, the embedding table's rows and a page at each end of a tensor
  EXPECT_LT(resident_bytes_of(path("q8.gguf")), fs::file_size(path("q8.gguf")) - panel_bytes + (size_t{256} << 10));
  EXPECT_TENSOR_CLOSE(logits(*loaded), logits(*model), 1e-4, 1e-4);
}

// ... and a prefill (its products over more rows than decode's, quant_gemm) reads the panels too,
// on every int8 instruction set that makes them: the file's rows stay out of resident memory. (AVX2's
// prefill had read the file's rows, faulting them in again: minimind2-small Q4_0 +12 MiB.)
TEST_F(GGUFCheckpointTest, PrefillOnPanelsLeavesTheFilesRowsOutOfResidentMemory) {
  const testing::ScopedPanels panels("1");
  models::DecoderLMConfig c = gpt2_config(false);
  c.dim = 256, c.mlp_hidden = 1024, c.n_layers = 4;
  auto model = random_model(c);
  models::quantize_weights(*model, {.type = QuantType::q4_0});
  save_model(*model, path("q4.gguf"), "gguf");
  std::vector<int64_t> prompt(30);  // (more rows than decode's 16: the GEMM)
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>(i * 7 % 64);
  const Tensor ids = Tensor::from_vector(prompt, {1, 30});
  const Tensor expected = logits(*model, ids);
  for (const cpu::Int8Isa isa : testing::all_int8_isas())
    testing::on_int8_isa(isa, [&] {
      if (!cpu::panels_pay(QuantType::q4_0)) return;
      const auto loaded = load_decoder_lm(path("q4.gguf"));
      size_t panel_bytes = 0;
      for (const auto& [name, q] : loaded->named_quantized())
        if (q.panels()) panel_bytes += q.nbytes();
      ASSERT_GT(panel_bytes, size_t{1} << 20) << cpu::int8_isa_name(isa);
      EXPECT_TENSOR_CLOSE(logits(*loaded, ids), expected, 1e-4, 1e-4);
      EXPECT_LT(resident_bytes_of(path("q4.gguf")), fs::file_size(path("q4.gguf")) - panel_bytes + (size_t{256} << 10))
          << cpu::int8_isa_name(isa);
    });
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An F32 file's tensors are the parameters (views of the mapping; gpt2's fused attn_qkv as three row
// ranges), the constructor's storages freed, so the weights add no owned memory. The mapping is
// copy-on-write: an optimizer step writes the parameters where they are, the file stays as written.
TEST_F(GGUFCheckpointTest, F32WeightsAreViewsIntoTheMappedFileThatTrainingLeavesUnchanged) {
  for (const Case& k : {Case{"gpt2 tied", gpt2_config(true)},
                        Case{"llama untied with biases", llama_config(false, RopeLayout::interleaved, true)}}) {
    auto model = random_model(k.config);
    save_model(*model, path("f32.gguf"), "gguf");
    const std::string written = file_bytes(path("f32.gguf"));
    const size_t owned_before = memory::current_bytes();
    const auto loaded = load_decoder_lm(path("f32.gguf"));
    const size_t owned = memory::current_bytes() - owned_before;
    const auto maps = mappings_of(path("f32.gguf"));
    ASSERT_FALSE(maps.empty()) << k.name;
    size_t weight_bytes = 0, buffer_bytes = 0;
    for (const auto& [name, p] : loaded->named_parameters()) {
      const auto at = reinterpret_cast<uintptr_t>(p.raw_data());
      const size_t n = static_cast<size_t>(p.numel()) * p.itemsize();
      weight_bytes += n;
      EXPECT_TRUE(std::any_of(maps.begin(), maps.end(), [&](auto m) { return m.first <= at && at + n <= m.second; }))
          << k.name << ": " << name;
    }
    for (const auto& [name, b] : loaded->named_buffers()) buffer_bytes += static_cast<size_t>(b.numel()) * b.itemsize();
    EXPECT_LE(owned, buffer_bytes) << k.name << ": " << weight_bytes << " bytes of weights";
    EXPECT_EQ(loaded->output == nullptr, k.config.tie_embeddings) << k.name;  // the head reads tok_embeddings
    EXPECT_TENSOR_CLOSE(logits(*loaded), logits(*model), 0.0, 0.0) << k.name;

    loaded->train();
    optim::SGD sgd({{loaded->parameters(), 0.5}});
    const Tensor before = loaded->tok_embeddings->weight.clone();
    loaded->forward(kIds, kIds).loss.backward();
    sgd.step();
    EXPECT_GT(max(abs(loaded->tok_embeddings->weight - before)).item(), 0.0) << k.name;
    EXPECT_TRUE(file_bytes(path("f32.gguf")) == written) << k.name << ": the step wrote the file";
    EXPECT_TENSOR_CLOSE(logits(*load_decoder_lm(path("f32.gguf"))), logits(*model), 0.0, 0.0) << k.name;
  }
}

// tools/gguf/make_gguf_model_fixtures.py: the `gguf` package wrote the files, numpy computed the
// logits in float64 from the dequantised weights, following llama.cpp's graphs (adjacent-pair RoPE,
// GQA, Qwen-style q / k / v biases without an output bias; GPT-2's fused qkv, learned positions,
// GELU tanh). llama.cpp itself gives these logits to 1e-6 (llama; gpt2 3e-3, its GELU is a table)
// when the same models are written in F32. Read with its blocks dequantised, the model is that
// function to float rounding: every name, layout and key of the file is read as meant. As loaded,
// its Q8_0 products quantise the activations per block of 32, as llama.cpp's do, which moves these
// logits (up to 10 in magnitude) by up to about 0.07 (llama.cpp's own Q8_0 / F16 run of llama.gguf
// differs from numpy by 0.06): the looser bound checks only that the quantised model is that model.
TEST_F(GGUFCheckpointTest, PythonWrittenFixturesGiveTheNumpyLogits) {
  const auto expected = io::load_safetensors(fixture("expected.safetensors"));
  for (const std::string name : {"llama", "gpt2"}) {
    const auto model = load_decoder_lm(fixture(name + ".gguf"));
    const Tensor ids = expected.at(name + ".ids").reshape({1, -1});
    const Tensor& numpy = expected.at(name + ".logits");
    const Tensor quantised = logits(*model, ids).reshape({ids.size(1), -1});
    dequantize_weights(*model);
    const Tensor dense = logits(*model, ids).reshape({ids.size(1), -1});
    EXPECT_TENSOR_CLOSE(dense, numpy, 1e-5, 1e-5) << name;
    EXPECT_TENSOR_CLOSE(quantised, numpy, 0.15, 0.0) << name;
    std::cout << name << ": max abs logit error vs numpy " << testing::max_abs_diff(dense, numpy) << " dequantised, "
              << testing::max_abs_diff(quantised, numpy) << " as loaded\n";
  }
  const auto llama = load_decoder_lm(fixture("llama.gguf"));
  const models::DecoderLMConfig& c = llama->config();
  EXPECT_EQ(c.name, "tiny-llama");
  EXPECT_EQ(c.rope_layout, RopeLayout::interleaved);
  EXPECT_EQ(c.rope_theta, 50000.0);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_TRUE((*llama->layers)[1]->attn->q_proj->is_quantized());   // Q8_0, in place
  EXPECT_FALSE((*llama->layers)[0]->attn->q_proj->is_quantized());  // F16, copied to f32
  EXPECT_FALSE(c.attention_output_bias);  // q, k, v biases and none on o, as Qwen2's
  EXPECT_FALSE((*llama->layers)[0]->attn->o_proj->bias.defined());
  const auto gpt2 = load_decoder_lm(fixture("gpt2.gguf"));
  EXPECT_TRUE(gpt2->config().tie_embeddings);
  EXPECT_EQ(gpt2->tok_embeddings->quantized_weight().type(), QuantType::q8_0);
}

TEST_F(GGUFCheckpointTest, TheFixturesTokenizerEncodesAsHuggingFace) {
  const auto tok = tokenizer::load_tokenizer(fixture("llama.gguf"));
  const nlohmann::json expected = nlohmann::json::parse(tokenizer::read_file(fixture("tokenizer.json")));
  ASSERT_EQ(expected["texts"].size(), expected["ids"].size());
  for (size_t i = 0; i < expected["texts"].size(); ++i) {
    const std::string text = expected["texts"][i];
    EXPECT_EQ(tok->encode(text), expected["ids"][i].get<std::vector<tokenizer::TokenId>>()) << text;
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
  }
  EXPECT_EQ(tokenizer::gguf_end_ids(io::GGUFFile::open(fixture("llama.gguf"))), std::vector<tokenizer::TokenId>{2});
}

// hf_gpt4.json (the GPT-4 split, ignore_merges) without its added tokens that GGUF cannot express.
tokenizer::BpeTokenizer expressible(const tokenizer::BpeTokenizer& tok) {
  std::vector<tokenizer::AddedToken> added;
  for (const auto& t : tok.added().tokens())
    if (!t.lstrip && !t.rstrip && !t.single_word) added.push_back(t);
  return tokenizer::BpeTokenizer(tok.model(), added, tok.pre_tokenizer());
}

// `metadata` with `key` set to `value`, or removed when value is empty.
tokenizer::GGUFMetadata with_key(tokenizer::GGUFMetadata metadata, const std::string& key,
                                 std::optional<io::GGUFValue> value) {
  std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
  if (value) metadata.emplace_back(key, *value);
  return metadata;
}

TEST_F(GGUFCheckpointTest, APromptStartsWithBosWhenTheFileSaysToAddOneAsLlamaCppReadsIt) {
  const auto gpt2 = expressible(tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_gpt2.json")));
  const auto gpt4 = expressible(tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_gpt4.json")));
  const auto written_gpt2 = tokenizer::gguf_tokenizer_metadata(gpt2, 610, "gpt2");
  const auto written_llama3 = tokenizer::gguf_tokenizer_metadata(gpt4, 610, "gpt4");
  const auto bos_of = [&](const tokenizer::GGUFMetadata& metadata) {
    io::write_gguf(path("tok.gguf"), metadata, {});
    return tokenizer::gguf_prompt_bos(io::GGUFFile::open(path("tok.gguf")));
  };
  const std::string add_bos = "tokenizer.ggml.add_bos_token", bos_id = "tokenizer.ggml.bos_token_id";
  const auto bos = static_cast<tokenizer::TokenId>(std::get<uint32_t>(
      std::find_if(written_gpt2.begin(), written_gpt2.end(), [&](const auto& kv) { return kv.first == bos_id; })->second));
  EXPECT_EQ(bos_of(written_gpt2), std::nullopt);  // we write add_bos_token false
  EXPECT_EQ(bos_of(written_llama3), std::nullopt);
  EXPECT_EQ(bos_of(with_key(written_gpt2, add_bos, true)), bos);
  // absent: llama.cpp's default, true for the LLaMA-3 split and false for GPT-2's
  EXPECT_EQ(bos_of(with_key(written_llama3, add_bos, std::nullopt)), bos);
  EXPECT_EQ(bos_of(with_key(written_gpt2, add_bos, std::nullopt)), std::nullopt);
  EXPECT_THROW_WITH(bos_of(with_key(with_key(written_gpt2, add_bos, true), bos_id, std::nullopt)), "tok.gguf",
                    "tokenizer.ggml.add_bos_token", "no tokenizer.ggml.bos_token_id");
  EXPECT_THROW_WITH(bos_of(with_key(written_gpt2, add_bos, std::string("yes"))), "tok.gguf", "add_bos_token",
                    "not a bool");
  EXPECT_THROW_WITH(bos_of(with_key(written_gpt2, "tokenizer.ggml.add_eos_token", true)), "tok.gguf",
                    "add_eos_token", "not supported");
}

TEST_F(GGUFCheckpointTest, TokenizerMetadataRoundTripsAndRefusesWhatGGUFCannotHold) {
  for (const char* name : {"hf_gpt2.json", "hf_gpt4.json"}) {
    const auto original = expressible(tokenizer::load_tokenizer_json(tokenizer::testing::fixture(name)));
    io::write_gguf(path("tok.gguf"), tokenizer::gguf_tokenizer_metadata(original, 610, name), {});
    const auto read = tokenizer::tokenizer_from_gguf(io::GGUFFile::open(path("tok.gguf")));
    for (const std::string& text : tokenizer::testing::parity_texts())
      EXPECT_EQ(read.encode(text), original.encode(text)) << name << ": " << text;
    EXPECT_EQ(read.pre_tokenizer().pattern, original.pre_tokenizer().pattern);
  }
  const auto full = tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_gpt4.json"));
  EXPECT_THROW_WITH(tokenizer::gguf_tokenizer_metadata(full, 610, "t.json"), "t.json", "added token '<tool>'",
                    "lstrip", "GGUF cannot express");
  const auto prefix = tokenizer::load_tokenizer_json(tokenizer::testing::fixture("hf_prefix.json"));
  EXPECT_THROW_WITH(tokenizer::gguf_tokenizer_metadata(expressible(prefix), 610, "p.json"), "p.json",
                    "add_prefix_space");
  EXPECT_THROW_WITH(tokenizer::gguf_tokenizer_metadata(expressible(full), 100, "t.json"), "t.json", "600 ids",
                    "the model only 100");
}

// A GGUF file's keys and tensors, to edit and write again.
struct Contents {
  std::vector<std::pair<std::string, io::GGUFValue>> metadata;
  std::vector<io::GGUFTensorSource> tensors;

  static Contents of(const std::string& path) {
    const io::GGUFFile f = io::GGUFFile::open(path);
    Contents c;
    for (const std::string& key : f.keys()) c.metadata.emplace_back(key, f.get(key));
    for (const io::GGUFTensorInfo& t : f.tensors()) {
      io::GGUFTensorSource s{.name = t.name, .dense = {}, .quantized = {}};
      if (is_block_quantized(t.type))
        s.quantized = f.quantized(t.name);
      else
        s.dense = f.dense(t.name).contiguous();
      c.tensors.push_back(s);
    }
    return c;
  }
  Contents& set(const std::string& key, io::GGUFValue value) {
    for (auto& [k, v] : metadata)
      if (k == key) return v = std::move(value), *this;
    metadata.emplace_back(key, std::move(value));
    return *this;
  }
  Contents& erase(const std::string& key) {
    std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
    return *this;
  }
  Contents& rename(const std::string& from, const std::string& to) {
    for (auto& t : tensors)
      if (t.name == from) t.name = to;
    return *this;
  }
  std::string write(const std::string& path) const {
    io::write_gguf(path, metadata, tensors);
    return path;
  }
};

// A tiny llama (interleaved, q8_0 blocks) with a byte-level tokenizer (ChatML's specials).
std::string base_file(const fs::path& dir, const std::string& name) {
  const std::string tokenizer_json = (dir / "tokenizer.json").string(), file = (dir / name).string();
  tokenizer::testing::byte_tokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}).save(tokenizer_json);
  models::DecoderLMConfig c = llama_config(false, RopeLayout::interleaved, false);
  c.vocab_size = 260, c.mlp_hidden = 256;  // ffn_down's rows are whole blocks of the K types
  auto model = random_model(c);
  models::quantize_weights(*model, {.type = QuantType::q8_0});
  save_gguf(*model, file, {.tokenizer = tokenizer_json});
  return file;
}

TEST_F(GGUFCheckpointTest, ATokenizerIsEmbeddedAndAChatMLOneGetsItsTemplate) {
  const std::string file = base_file(dir_, "base.gguf");
  const io::GGUFFile f = io::GGUFFile::open(file);
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "gpt-2");
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 257);  // <|im_start|>, as MiniMind's
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 258);  // <|im_end|>
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("<|im_start|>assistant\\n"), std::string::npos);
  EXPECT_EQ(std::get<std::vector<std::string>>(f.get("tokenizer.ggml.tokens")).size(), 260u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("general.file_type"), 7);  // MOSTLY_Q8_0
  const auto tok = tokenizer::load_tokenizer(file);
  const auto original = tokenizer::load_tokenizer(path("tokenizer.json"));
  const std::string text = "<|im_start|>user\nhello, world<|im_end|>";
  EXPECT_EQ(tok->encode(text), original->encode(text));
  // a GGUF given as the tokenizer of another GGUF: its tokenizer.* keys copied as they are
  auto model = load_decoder_lm(file);
  save_gguf(*model, path("copy.gguf"), {.tokenizer = file});
  const io::GGUFFile copy = io::GGUFFile::open(path("copy.gguf"));
  for (const std::string& key : f.keys())
    if (key.starts_with("tokenizer.")) {
      EXPECT_EQ(copy.get(key), f.get(key)) << key;
    }
}

// tokenizer_config.json's bos, eos and pad tokens become the file's ids (as convert_hf_to_gguf takes
// them), so llama.cpp stops where the template ends a turn, not at GPT-2's <|endoftext|>.
TEST_F(GGUFCheckpointTest, TheTokenizerConfigsSpecialTokensAreTheFilesIds) {
  const std::string tokenizer_json = path("tokenizer.json");
  tokenizer::testing::byte_tokenizer({"<|endoftext|>", "<s>", "</s>"}).save(tokenizer_json);  // ids 256, 257, 258
  models::DecoderLMConfig c = llama_config(false, RopeLayout::interleaved, false);
  c.vocab_size = 259;
  const auto model = random_model(c);
  save_gguf(*model, path("plain.gguf"), {.tokenizer = tokenizer_json});  // no tokenizer_config.json: GPT-2's ids
  EXPECT_EQ(io::GGUFFile::open(path("plain.gguf")).get_int("tokenizer.ggml.eos_token_id"), 256);
  std::ofstream(path("tokenizer_config.json"))
      << R"({"bos_token": "<s>", "eos_token": {"content": "</s>", "special": true}, "pad_token": "<|endoftext|>",)"
      << R"( "chat_template": "{% for m in messages %}{{ bos_token + m['content'] + eos_token }}{% endfor %}"})";
  save_gguf(*model, path("config.gguf"), {.tokenizer = tokenizer_json});
  const io::GGUFFile f = io::GGUFFile::open(path("config.gguf"));
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 257);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 258);
  EXPECT_EQ(f.get_int("tokenizer.ggml.padding_token_id"), 256);
  EXPECT_EQ(tokenizer::gguf_end_ids(f), std::vector<tokenizer::TokenId>{258});
  // a special token the tokenizer does not have keeps the default
  std::ofstream(path("tokenizer_config.json"))
      << R"({"eos_token": "<|eot|>", "chat_template": "{% for m in messages %}{{ m['content'] }}<|endoftext|>{% endfor %}"})";
  save_gguf(*model, path("unknown.gguf"), {.tokenizer = tokenizer_json});
  EXPECT_EQ(io::GGUFFile::open(path("unknown.gguf")).get_int("tokenizer.ggml.eos_token_id"), 256);
}

// Without a tokenizer the file says "none" (llama.cpp refuses a file without tokenizer.ggml.model and
// loads "none" as ids only); nanoformer reads it as a model with no tokenizer.
TEST_F(GGUFCheckpointTest, AFileWrittenWithoutATokenizerSaysNone) {
  for (const models::DecoderLMConfig& c : {llama_config(false, RopeLayout::interleaved, false), gpt2_config(true)}) {
    save_gguf(*random_model(c), path("ids.gguf"));
    const io::GGUFFile f = io::GGUFFile::open(path("ids.gguf"));
    const std::string arch = f.get_string("general.architecture");
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "none") << arch;
    EXPECT_EQ(f.get_int(arch + ".vocab_size"), c.vocab_size) << arch;  // llama.cpp's count of ids without a vocabulary
    EXPECT_FALSE(tokenizer::has_gguf_tokenizer(f));
    EXPECT_THROW_WITH(tokenizer::tokenizer_from_gguf(f), "ids.gguf",
                      "no tokenizer (key 'tokenizer.ggml.model' is 'none')", "--tokenizer");
    EXPECT_NO_THROW(load_gguf(path("ids.gguf")));
  }
}

// Each unsupported file is refused in one line naming the file and the key or tensor.
TEST_F(GGUFCheckpointTest, UnsupportedKeysAreRefusedByName) {
  const std::string base = base_file(dir_, "base.gguf");
  ASSERT_NO_THROW(load_gguf(base));
  struct Bad {
    std::function<void(Contents&)> edit;
    std::vector<std::string> message;
  };
  const std::vector<Bad> cases = {
      {[](Contents& c) { c.set("general.architecture", std::string("qwen2")); },
       {"general.architecture 'qwen2' is not supported (llama, gpt2)"}},
      {[](Contents& c) { c.set("llama.expert_count", uint32_t{8}); },
       {"key 'llama.expert_count' is 8: experts (MoE) are not supported"}},
      {[](Contents& c) { c.set("llama.attention.sliding_window", uint32_t{16}); },
       {"key 'llama.attention.sliding_window' is 16: sliding-window attention is not supported"}},
      {[](Contents& c) { c.set("llama.attention.max_alibi_bias", 8.0f); }, {"'llama.attention.max_alibi_bias'", "ALiBi"}},
      {[](Contents& c) { c.set("llama.rope.scaling.type", std::string("yarn")); },
       {"key 'llama.rope.scaling.type' is 'yarn': rope scaling other than none or linear is not supported"}},
      {[](Contents& c) { c.set("llama.logit_scale", 0.5f); },
       {"key 'llama.logit_scale' is not supported: it changes the llama architecture"}},
      {[](Contents& c) { c.set("llama.rope.dimension_count", uint32_t{8}); },
       {"key 'llama.rope.dimension_count' is 8: rotating part of a head of 16 is not supported"}},
      {[](Contents& c) { c.set("llama.attention.head_count", std::vector<uint32_t>{4, 2}); },
       {"key 'llama.attention.head_count' differs between layers"}},
      {[](Contents& c) { c.set("llama.context_length", uint32_t{1} << 30); },
       {"key 'llama.context_length' is 1073741824: its RoPE tables (6.87195e+10 bytes) would outweigh the file's"}},
      {[](Contents& c) { c.set("llama.block_count", uint32_t{1} << 30); },
       {"key 'llama.block_count' is 1073741824 but the file holds 21 tensors"}},
      {[](Contents& c) { c.set("llama.embedding_length", uint64_t{1} << 40); },
       {"key 'llama.embedding_length' is 1099511627776 (must be in 1..2147483648)"}},
      {[](Contents& c) { c.erase("llama.attention.layer_norm_rms_epsilon"); },
       {"no metadata key 'llama.attention.layer_norm_rms_epsilon'"}},
      {[](Contents& c) { c.set("split.count", uint16_t{2}); }, {"key 'split.count' is 2", "split across files"}},
      {[](Contents& c) { c.rename("blk.1.ffn_up.weight", "blk.1.ffn_up_exps.weight"); },
       {"missing (1): blk.1.ffn_up.weight", "unexpected (1): blk.1.ffn_up_exps.weight"}},
      {[](Contents& c) {
         c.tensors.push_back({.name = "rope_freqs.weight", .dense = ones({8}), .quantized = {}});
       },
       {"unexpected (1): rope_freqs.weight"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Contents c = Contents::of(base);
    cases[i].edit(c);
    const std::string file = c.write(path("bad" + std::to_string(i) + ".gguf"));
    std::vector<std::string> parts = {file + ": "};
    parts.insert(parts.end(), cases[i].message.begin(), cases[i].message.end());
    try {
      load_model(file);
      ADD_FAILURE() << "case " << i << " loaded";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << "case " << i << ": " << what;
    }
  }
}

// A tensor of a type nanoformer has no kernels for (Q2_K): the file's tensor info rewritten in place.
TEST_F(GGUFCheckpointTest, ATensorTypeWithoutKernelsIsRefusedByName) {
  const std::string base = base_file(dir_, "base.gguf");
  std::string bytes = tokenizer::read_file(base);
  const std::string name = "blk.0.ffn_down.weight";  // (64, 256): 64 x 8 Q8_0 blocks, more bytes than Q2_K's
  const size_t info = bytes.find(name + std::string("\x02\x00\x00\x00", 4));  // the name, then n_dims 2
  ASSERT_NE(info, std::string::npos);
  const size_t type_at = info + name.size() + 4 + 2 * 8;
  ASSERT_EQ(bytes[type_at], static_cast<char>(QuantType::q8_0));
  bytes[type_at] = 10;  // GGML_TYPE_Q2_K
  std::ofstream(path("q2_k.gguf"), std::ios::binary) << bytes;
  EXPECT_THROW_WITH(load_model(path("q2_k.gguf")), path("q2_k.gguf") + ": ", "blk.0.ffn_down.weight", "q2_k",
                    "which nanoformer does not read");
}

TEST_F(GGUFCheckpointTest, UnsupportedTokenizersAreRefusedByNameAndQwen2sSplitIsRead) {
  const std::string base = base_file(dir_, "base.gguf");
  const std::string sentencepiece =
      Contents::of(base).set("tokenizer.ggml.model", std::string("llama")).write(path("spm.gguf"));
  EXPECT_THROW_WITH(tokenizer::load_tokenizer(sentencepiece), path("spm.gguf") + ": ",
                    "key 'tokenizer.ggml.model' is 'llama': that tokenizer is not supported (gpt2: byte-level BPE)");
  const std::string glm = Contents::of(base).set("tokenizer.ggml.pre", std::string("chatglm-bpe")).write(path("glm.gguf"));
  EXPECT_THROW_WITH(tokenizer::load_tokenizer(glm), path("glm.gguf") + ": ", "key 'tokenizer.ggml.pre' is 'chatglm-bpe'",
                    "cannot split by");
  // Qwen2's split (and llama.cpp's other names of it) is read
  for (const char* name : {"qwen2", "deepseek-r1-qwen", "megrez"}) {
    const std::string qwen = Contents::of(base).set("tokenizer.ggml.pre", std::string(name)).write(path("qwen.gguf"));
    const auto loaded = tokenizer::load_tokenizer(qwen);  // (held: bpe points into it)
    const auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(loaded.get());
    ASSERT_NE(bpe, nullptr) << name;
    EXPECT_EQ(bpe->pre_tokenizer().pattern, tokenizer::SplitPattern::kQwen2) << name;
  }
  const std::string legacy = Contents::of(base).erase("tokenizer.ggml.pre").write(path("legacy.gguf"));
  EXPECT_THROW_WITH(tokenizer::load_tokenizer(legacy), "no key 'tokenizer.ggml.pre'", "legacy 'default' split");
  const std::string none = Contents::of(base).erase("tokenizer.ggml.model").write(path("none.gguf"));
  EXPECT_THROW_WITH(tokenizer::load_tokenizer(none), path("none.gguf") + ": no tokenizer");
  ASSERT_NO_THROW(load_gguf(none));  // the model alone is fine
}

TEST_F(GGUFCheckpointTest, ModelsGGUFCannotHoldAreRefusedByName) {
  models::DecoderLMConfig qk = llama_config(true, RopeLayout::interleaved, false);
  qk.qk_norm = true;
  EXPECT_THROW_WITH(save_gguf(*random_model(qk), path("x.gguf")),
                    "save_gguf: qk_norm true cannot be expressed by GGUF's llama architecture");
  models::DecoderLMConfig gelu = gpt2_config(true);
  gelu.mlp = nn::MLPKind::gelu;
  EXPECT_THROW_WITH(save_gguf(*random_model(gelu), path("x.gguf")), "save_gguf: mlp gelu cannot be expressed by GGUF's gpt2");
  models::DecoderLMConfig moe = llama_config(true, RopeLayout::interleaved, false);
  moe.moe = nn::MoEConfig{.n_experts = 4, .top_k = 2};
  EXPECT_THROW_WITH(save_gguf(*random_model(moe), path("x.gguf")), "save_gguf: moe", "llama architecture");
  models::DecoderLMConfig nanochat = models::preset_config("nanochat-d6");  // its extras, at a tiny size
  nanochat.vocab_size = 64, nanochat.dim = 64, nanochat.n_heads = 4, nanochat.n_layers = 1, nanochat.max_seq_len = 32;
  EXPECT_THROW_WITH(save_model(*random_model(nanochat), path("x.gguf"), "gguf"), "save_gguf:",
                    "cannot be expressed by GGUF's llama architecture");
  EXPECT_FALSE(fs::exists(path("x.gguf")));
}

TEST_F(GGUFCheckpointTest, AGGUFIsToldByItsBytesWhateverItsName) {
  fs::copy_file(fixture("gpt2.gguf"), path("model.bin"));
  EXPECT_EQ(detect_model_format(path("model.bin")), ModelFormat::gguf);
  EXPECT_NO_THROW(load_decoder_lm(path("model.bin")));
  std::ofstream(path("fake.gguf")) << "not a gguf";
  EXPECT_THROW_WITH(load_model(path("fake.gguf")), path("fake.gguf"), "not a GGUF file");
}

// gpt2 files from older converters hold the tied head twice: identical bytes read as tied.
TEST_F(GGUFCheckpointTest, AGpt2HeadHoldingTheEmbeddingsBytesIsTied) {
  auto model = random_model(gpt2_config(true));
  save_gguf(*model, path("tied.gguf"));
  Contents c = Contents::of(path("tied.gguf"));
  for (const auto& t : Contents::of(path("tied.gguf")).tensors)
    if (t.name == "token_embd.weight") c.tensors.push_back({.name = "output.weight", .dense = t.dense, .quantized = {}});
  const auto twice = load_decoder_lm(c.write(path("twice.gguf")));
  EXPECT_TRUE(twice->config().tie_embeddings);
  EXPECT_TENSOR_CLOSE(logits(*twice), logits(*model), 0.0, 0.0);
  for (auto& t : c.tensors)
    if (t.name == "output.weight") t.dense = t.dense * 2.0;
  const auto untied = load_decoder_lm(c.write(path("untied.gguf")));
  EXPECT_FALSE(untied->config().tie_embeddings);
}

}  // namespace
}  // namespace nf::formats
