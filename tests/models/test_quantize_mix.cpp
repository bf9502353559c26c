// llama-quantize's K mixes (models/quantize.h: quantize_spec("q4_k_m"), quantize_weights): every
// tensor's type as mainline llama-quantize chose it for the same shapes, from the committed fixture
// of tools/quant/make_mix_fixtures.py (llama-shaped with 16 layers, a Qwen2.5-like one whose rows of
// 896 are not whole super-blocks, a gpt2-shaped one with its fused attn_qkv), general.file_type,
// and the names a spec is given by.
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/quantize.h"
#include "support/testing.h"

namespace nf::models {
namespace {

using Json = nlohmann::json;

const Json& mix_fixture() {
  static const Json fixture = [] {
    std::ifstream in(std::string(NF_TEST_DATA_DIR) + "/quant/mixes.json");
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str());
  }();
  return fixture;
}

// our weight name -> the GGUF tensor it is written as (formats' gguf_name; GPT-2's q, k, v are one attn_qkv)
std::string gguf_tensor(const std::string& ours, bool gpt2) {
  if (ours == "tok_embeddings.weight") return "token_embd.weight";
  if (ours == "output.weight") return "output.weight";
  const size_t dot = ours.find('.', 7);
  const std::string blk = "blk." + ours.substr(7, dot - 7) + ".", rest = ours.substr(dot + 1);
  static const std::map<std::string, std::string> kLlama = {
      {"attn.q_proj.weight", "attn_q"}, {"attn.k_proj.weight", "attn_k"}, {"attn.v_proj.weight", "attn_v"},
      {"attn.o_proj.weight", "attn_output"}, {"mlp.w1.weight", "ffn_gate"}, {"mlp.w3.weight", "ffn_up"},
      {"mlp.w2.weight", "ffn_down"}};
  static const std::map<std::string, std::string> kGpt2 = {
      {"attn.q_proj.weight", "attn_qkv"}, {"attn.k_proj.weight", "attn_qkv"}, {"attn.v_proj.weight", "attn_qkv"},
      {"attn.o_proj.weight", "attn_output"}, {"mlp.c_fc.weight", "ffn_up"}, {"mlp.c_proj.weight", "ffn_down"}};
  const auto& names = gpt2 ? kGpt2 : kLlama;
  const auto it = names.find(rest);
  return it == names.end() ? "(no GGUF name for " + ours + ")" : blk + it->second + ".weight";
}

// Compares what `ours` (weight name -> type) chose with llama-quantize's file of the same shape and
// mix; returns the tensors compared.
int expect_llama_quantizes_types(const std::vector<QuantizedWeight>& chosen, const Json& want, bool gpt2) {
  std::map<std::string, QuantType> ours;  // GGUF name -> type
  for (const QuantizedWeight& w : chosen) {
    const std::string name = gguf_tensor(w.name, gpt2);
    const auto [it, fresh] = ours.emplace(name, w.type);
    if (!fresh) {
      EXPECT_EQ(quant_type_name(it->second), std::string(quant_type_name(w.type))) << name << ": q, k, v differ";
    }
  }
  int checked = 0;
  const Json& tensors = want.at("tensors");
  for (const auto& [name, type] : tensors.items()) {
    const auto it = ours.find(name);
    if (it == ours.end()) {  // norms, biases, position_embd: dense in both
      EXPECT_EQ(type.get<std::string>(), "f32") << name << " is not quantised here";
      continue;
    }
    EXPECT_EQ(quant_type_name(it->second), type.get<std::string>()) << name;
    ++checked;
  }
  for (const auto& [name, type] : ours) EXPECT_TRUE(tensors.contains(name)) << name << " is not in llama-quantize's file";
  return checked;
}

TEST(QuantizeMix, EveryTensorGetsLlamaQuantizesType) {
  const Json& fixture = mix_fixture();
  ASSERT_EQ(fixture.at("shapes").size(), 3u);
  int checked = 0;
  for (const Json& shape : fixture.at("shapes")) {
    const DecoderLMConfig config = parse_model_config(shape.at("config").dump(), "mixes.json");
    Generator gen(1);
    DecoderLM model(config, gen);
    for (const auto& [mix, want] : shape.at("mixes").items()) {
      SCOPED_TRACE(config.name + " " + mix);
      const QuantizeSpec spec = quantize_spec(mix);
      checked += expect_llama_quantizes_types(quantization_plan(model, spec), want,
                                              config.position == nn::PositionKind::learned);
      EXPECT_EQ(llama_file_type(spec), want.at("file_type").get<uint32_t>()) << "general.file_type";
    }
  }
  EXPECT_GT(checked, 600);  // every 2-D weight of 3 shapes x 6 mixes
}

// quantize_weights quantises each weight to the plan's type (the gpt2-shaped model, the smallest)
TEST(QuantizeMix, QuantizeWeightsHoldsThePlansTypes) {
  const Json& shape = mix_fixture().at("shapes").at(2);
  const DecoderLMConfig config = parse_model_config(shape.at("config").dump(), "mixes.json");
  ASSERT_EQ(config.position, nn::PositionKind::learned);
  Generator gen(1);
  DecoderLM model(config, gen);
  const QuantizeSpec spec = quantize_spec("q4_k_m");
  const std::vector<QuantizedWeight> plan = quantization_plan(model, spec);
  const std::vector<QuantizedWeight> done = quantize_weights(model, spec);
  EXPECT_EQ(expect_llama_quantizes_types(done, shape.at("mixes").at("q4_k_m"), true), 1 + 4 * config.n_layers);
  std::map<std::string, QuantType> held;
  for (const auto& [name, q] : model.named_quantized()) held.emplace(name, q.type());
  ASSERT_EQ(plan.size(), done.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].name, done[i].name);
    EXPECT_EQ(plan[i].type, done[i].type) << plan[i].name;
    ASSERT_TRUE(held.count(done[i].name)) << done[i].name;
    EXPECT_EQ(quant_type_name(held.at(done[i].name)), std::string(quant_type_name(done[i].type))) << done[i].name;
  }
}

TEST(QuantizeMix, SpecsByName) {
  EXPECT_EQ(quantize_spec("Q4_K_M").mix, QuantMix::q4_k_m);
  EXPECT_EQ(quantize_spec("q4_k_m").type, QuantType::q4_k);
  EXPECT_EQ(quantize_spec("q3_k_s").type, QuantType::q3_k);
  EXPECT_EQ(quantize_spec("q5_k_m").type, QuantType::q5_k);
  EXPECT_EQ(quantize_spec("q5_k").mix, QuantMix::none);  // a plain type is pure
  EXPECT_EQ(quantize_spec("q5_k").type, QuantType::q5_k);
  EXPECT_EQ(quantize_spec("F16").type, QuantType::f16);
  EXPECT_EQ(quantize_spec_name(quantize_spec("Q3_K_M")), "q3_k_m");
  EXPECT_EQ(llama_file_type(quantize_spec("q8_0")), 7u);
  EXPECT_EQ(llama_file_type(quantize_spec("q6_k")), 18u);
  EXPECT_THROW_WITH(quantize_spec("q4_k_l"), "q4_k_l", "q4_k_m", "q3_k");
  EXPECT_THROW_WITH(quantize_spec("q8_k"), "q8_k", "activation type");
  EXPECT_THROW_WITH(quantize_spec("f64"), "f64");
}

// The fallbacks of rows that are not whole blocks: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q3_K ->
// Q4_0, then F16 (rows of 48: not whole 32-blocks either).
TEST(QuantizeMix, RowsOfPartialBlocksFallBack) {
  const auto type = [](const char* spec, TensorRole role, int64_t cols) {
    return std::string(quant_type_name(mix_tensor_type(quantize_spec(spec), role, 0, 16, cols, false)));
  };
  EXPECT_EQ(type("q4_k", TensorRole::attn_q, 896), "q5_0");
  EXPECT_EQ(type("q5_k", TensorRole::attn_q, 896), "q5_1");
  EXPECT_EQ(type("q6_k", TensorRole::attn_q, 896), "q8_0");
  EXPECT_EQ(type("q3_k", TensorRole::attn_q, 896), "q4_0");
  EXPECT_EQ(type("q4_k_m", TensorRole::attn_v, 896), "q8_0");  // layer 0: Q6_K, then its fallback
  EXPECT_EQ(type("q4_k_m", TensorRole::output, 896), "q8_0");
  EXPECT_EQ(type("q4_k_m", TensorRole::output, 48), "f16");
  EXPECT_EQ(type("q3_k_m", TensorRole::ffn_down, 48), "f16");
}

}  // namespace
}  // namespace nf::models
