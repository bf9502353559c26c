// EncoderDecoder against the PyTorch reference of tools/golden/fixtures_encoder_decoder.py
// (torch.nn.TransformerEncoderLayer / TransformerDecoderLayer stacks with 001's embeddings, scale
// and positions): logits, loss and the gradient of every parameter for post-norm, shared + tied,
// learned-position and pre-norm models. Then what the masks must do, encode/decode against
// forward, the transformer-base preset's parameter count, checkpoints and the config's errors.
#include <cmath>
#include <cstdio>
#include <map>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/encoder_decoder.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/view.h"
#include "support/interop_test_support.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf::models {
namespace {

using testing::Golden;

EncoderDecoderConfig case_config(const Golden& golden, const std::string& case_name) {
  return parse_encoder_decoder_config(golden.cases()[case_name]["config"].get<std::string>(),
                                      "encoder_decoder." + case_name);
}

void check_case(const std::string& case_name) {
  const Golden golden("encoder_decoder");
  EncoderDecoder model(case_config(golden, case_name));
  Tensor logits;
  testing::check_module_case(model, golden, case_name, {{"src", "tgt", "targets", "src_padding", "tgt_padding"}},
                             [&](const std::vector<Tensor>& in) {
                               Seq2SeqOutput out = model.forward(in[0], in[1], in[2], {in[3], in[4]});
                               logits = out.logits;
                               return out.loss;
                             });
  const Tensor expected = golden.get(case_name, "logits");
  EXPECT_TENSOR_CLOSE(logits, expected, 1e-5, 1e-5);
  double grad_error = 0;
  for (const auto& [name, p] : model.named_parameters())
    if (p.grad().defined()) grad_error = std::max(grad_error, testing::max_abs_diff(p.grad(), golden.get(case_name, "grad_" + name)));
  std::printf("%s: max |logits - torch| = %.3g, max |grad - torch| over %zu parameters = %.3g\n", case_name.c_str(),
              testing::max_abs_diff(logits, expected), model.named_parameters().size(), grad_error);
}

TEST(EncoderDecoderGolden, PostNormOf001) { check_case("post"); }
TEST(EncoderDecoderGolden, SharedEmbeddingsAndTiedHead) { check_case("shared_tied"); }
TEST(EncoderDecoderGolden, LearnedPositions) { check_case("learned"); }
TEST(EncoderDecoderGolden, PreNormWithFinalNorms) { check_case("pre_norm"); }

// ids with one element replaced
Tensor with_id(const Tensor& ids, int64_t b, int64_t t, int64_t id) {
  std::vector<int64_t> v = ids.to_vector<int64_t>();
  v[static_cast<size_t>(b * ids.size(1) + t)] = id;
  return Tensor::from_vector(v, ids.shape());
}

// A case's model with its parameters loaded, in eval mode, and the case's inputs.
struct LoadedCase {
  explicit LoadedCase(const std::string& case_name)
      : golden("encoder_decoder"),
        model(case_config(golden, case_name)),
        src(golden.get(case_name, "src")),
        tgt(golden.get(case_name, "tgt")),
        padding{golden.get(case_name, "src_padding"), golden.get(case_name, "tgt_padding")} {
    testing::load_case_parameters(model, golden, case_name);
    model.eval();
  }
  Golden golden;
  EncoderDecoder model;
  Tensor src, tgt;
  PaddingMasks padding;
};

TEST(EncoderDecoder, PaddedSourceTokensChangeNothing) {
  LoadedCase c("post");
  const Tensor changed = with_id(c.src, 1, 5, (c.src.to_vector<int64_t>()[12] + 1) % 40);  // (1, 5) is padding
  const Tensor before = c.model.forward(c.src, c.tgt, {}, c.padding).logits;
  EXPECT_TENSOR_CLOSE(c.model.forward(changed, c.tgt, {}, c.padding).logits, before, 0.0, 0.0);
  // without the mask the same change reaches the second sequence's logits
  EXPECT_GT(testing::max_abs_diff(c.model.forward(changed, c.tgt).logits, c.model.forward(c.src, c.tgt).logits), 1e-3);
}

TEST(EncoderDecoder, LaterTargetTokensDoNotChangeEarlierLogits) {
  LoadedCase c("post");
  const Tensor changed = with_id(c.tgt, 0, 4, (c.tgt.to_vector<int64_t>()[4] + 1) % 48);
  const Tensor before = c.model.forward(c.src, c.tgt).logits, after = c.model.forward(c.src, changed).logits;
  EXPECT_TENSOR_CLOSE(narrow(after, 1, 0, 4), narrow(before, 1, 0, 4), 0.0, 0.0);
  EXPECT_GT(testing::max_abs_diff(narrow(after, 1, 4, 2), narrow(before, 1, 4, 2)), 1e-3);
}

TEST(EncoderDecoder, EncodeThenDecodeEqualsForward) {
  LoadedCase c("pre_norm");
  const Tensor memory = c.model.encode(c.src, c.padding.src);
  EXPECT_EQ(memory.shape(), Shape({2, 7, 16}));
  EXPECT_TENSOR_CLOSE(c.model.decode(c.tgt, memory, c.padding), c.model.forward(c.src, c.tgt, {}, c.padding).logits,
                      0.0, 0.0);
}

EncoderDecoderConfig tiny(const std::string& extra = "") {
  return parse_encoder_decoder_config(R"({"architecture": "encoder_decoder", "src_vocab_size": 24,
      "tgt_vocab_size": 24, "dim": 16, "n_encoder_layers": 1, "n_decoder_layers": 2, "n_heads": 2,
      "max_seq_len": 8)" + (extra.empty() ? "" : ", " + extra) + "}", "tiny");
}

TEST(EncoderDecoder, SharedAndTiedMatricesAreListedOnce) {
  EncoderDecoder shared(tiny(R"("share_embeddings": true, "tie_output": true)"));
  const nn::StateDict state = shared.state_dict();
  EXPECT_EQ(state.count("src_embeddings.weight"), 1u);
  EXPECT_EQ(state.count("tgt_embeddings.weight") + state.count("output.weight"), 0u);
  EXPECT_EQ(shared.head_weight().raw_data(), shared.src_embeddings->weight.raw_data());
  EncoderDecoder separate(tiny(R"("tie_output": false)"));
  EXPECT_EQ(separate.state_dict().count("tgt_embeddings.weight"), 1u);
  EXPECT_EQ(separate.state_dict().count("output.weight"), 1u);
  EXPECT_EQ(separate.num_parameters(), shared.num_parameters() + 2 * 24 * 16);
  EncoderDecoder pre(tiny(R"("norm_placement": "pre")"));
  EXPECT_EQ(pre.state_dict().count("encoder_norm.weight") + pre.state_dict().count("decoder_norm.bias"), 2u);
}

TEST(EncoderDecoder, XavierInitScalesEmbeddingsByDim) {
  EncoderDecoder model(tiny(R"("dim": 64, "n_heads": 4, "src_vocab_size": 512)"));
  const auto w = model.src_embeddings->weight.to_vector<double>();
  double sq = 0;
  for (double x : w) sq += x * x;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(w.size())), 1.0 / 8, 0.01);  // dim^-1/2
  const auto& fc = *(*model.encoder_layers)[0]->attn->q_proj;
  EXPECT_LE(max(abs(fc.weight)).item(), std::sqrt(6.0 / 128));  // U(-a, a), a = sqrt(6 / (64 + 64))
  EXPECT_EQ(max(abs(fc.bias)).item(), 0.0);
}

// 63,082,496 = sum(p.numel()) of the PyTorch reference built as configs/transformer-base.json says
// (tools/golden/fixtures_encoder_decoder.py, transformer_base_parameters(); stored in the fixture as
// shared_tied's base_parameters): 37000 x 512 shared embedding + 6 x 3,152,384 encoder layers +
// 6 x 4,204,032 decoder layers; the paper's "65M" for its base model.
TEST(EncoderDecoder, TransformerBaseCountsAsThePyTorchReference) {
  Generator gen(0);
  const auto model = model_as<EncoderDecoder>(build_model_from("transformer-base", gen), "transformer-base");
  EXPECT_EQ(model->num_parameters(), 63'082'496);
  EXPECT_EQ(model->num_parameters(), Golden("encoder_decoder").cases()["shared_tied"]["base_parameters"].get<int64_t>());
  std::map<std::string, int64_t> parts;
  int64_t total = 0;
  for (const ParameterPart& part : model->parameter_parts()) total += parts[part.name] = part.count;
  EXPECT_EQ(total, model->num_parameters());
  const int64_t attention = 6 * 4 * (512 * 512 + 512), mlp = 6 * (2 * 512 * 2048 + 2048 + 512);
  const std::map<std::string, int64_t> expected{
      {"embeddings", 37000 * 512}, {"positions", 0},          {"encoder attention", attention},
      {"encoder mlp", mlp},        {"decoder self-attn", attention}, {"cross-attention", attention},
      {"decoder mlp", mlp},        {"norms", 6 * 2 * 1024 + 6 * 3 * 1024}, {"head", 0}};
  EXPECT_EQ(parts, expected);
}

// count_parameters reads the count off the config without building the model.
TEST(EncoderDecoder, CountParametersEqualsTheBuiltModel) {
  EXPECT_EQ(count_parameters(parse_encoder_decoder_config(read_config_text(preset_path("transformer-base")))), 63'082'496);
  for (const char* extra : {R"("position": "sinusoidal")", R"("position": "learned", "norm_placement": "pre")",
                            R"("tie_output": false, "mlp": "swiglu")",
                            R"("share_embeddings": true, "mlp_hidden": 24)"}) {
    const EncoderDecoderConfig c = tiny(extra);
    EXPECT_EQ(count_parameters(c), EncoderDecoder(c).num_parameters()) << extra;
  }
}

using EncoderDecoderIo = testing::TempDirTest;

TEST_F(EncoderDecoderIo, NanoformerCheckpointRoundTrips) {
  EncoderDecoder model(tiny(R"("position": "learned", "norm_placement": "pre", "tie_output": false)"));
  model.eval();
  const Tensor src = Tensor::of({1, 2, 3, 4, 5}, {1, 5}, DType::i64), tgt = Tensor::of({6, 7, 8}, {1, 3}, DType::i64);
  formats::save_model(model, path("m.safetensors"), "nanoformer");
  const auto loaded = model_as<EncoderDecoder>(formats::load_model(path("m.safetensors")), "m.safetensors");
  loaded->eval();
  EXPECT_EQ(loaded->config_json(), model.config_json());
  EXPECT_TENSOR_CLOSE(loaded->forward(src, tgt).logits, model.forward(src, tgt).logits, 0.0, 0.0);
}

TEST_F(EncoderDecoderIo, LanguageModelFormatsRefuseIt) {
  EncoderDecoder model(tiny());
  for (const char* format : {"hf", "minimind", "nanochat", "llama2c"})
    EXPECT_THROW_WITH(formats::save_model(model, path("m"), format), std::string("format '") + format + "'",
                      "architecture 'encoder_decoder'");
  EXPECT_THROW_WITH(model_as<DecoderLM>(std::make_shared<EncoderDecoder>(tiny()), "x.safetensors"), "x.safetensors",
                    "'encoder_decoder'", "'decoder_lm'");
}

TEST(EncoderDecoderConfig, RoundTripsThroughJson) {
  const std::string text = encoder_decoder_config_to_json(tiny(R"("position": "learned", "init": "normal")"));
  EXPECT_EQ(encoder_decoder_config_to_json(parse_encoder_decoder_config(text)), text);
  Generator gen(0);
  EXPECT_EQ(build_model(text, "t.json", gen)->architecture(), "encoder_decoder");
}

TEST(EncoderDecoderConfig, BadKeysAndValuesAreNamed) {
  const std::string base = R"({"architecture": "encoder_decoder", "src_vocab_size": 24, "tgt_vocab_size": 32,
      "dim": 16, "n_encoder_layers": 1, "n_decoder_layers": 1, "n_heads": 2, "max_seq_len": 8, )";
  auto parse = [&](const std::string& extra) { return parse_encoder_decoder_config(base + extra + "}", "s.json"); };
  EXPECT_THROW_WITH(parse(R"("n_encoder_layer": 2)"), "s.json", "unknown key 'n_encoder_layer'",
                    "did you mean 'n_encoder_layers'");
  EXPECT_THROW_WITH(parse(R"("vocab_size": 2)"), "unknown key 'vocab_size'");
  EXPECT_THROW_WITH(parse(R"("mlp_hidden": 4194304)"), "s.json", "key 'mlp_hidden' has value 4194304",
                    "at most 1048576");
  EXPECT_THROW_WITH(parse(R"("share_embeddings": true)"), "'tgt_vocab_size'", "32", "share_embeddings");
  EXPECT_THROW_WITH(parse(R"("position": "rope")"), "'position'", "sinusoidal or learned");
  EXPECT_THROW_WITH(parse(R"("norm_placement": "sandwich")"), "'norm_placement'", "post or pre");
  EXPECT_THROW_WITH(parse(R"("n_heads": 3)"), "'n_heads'", "divide dim");
  EXPECT_THROW_WITH(parse(R"("init": "nanochat")"), "'init'", "xavier, normal");
  EXPECT_THROW_WITH(parse_encoder_decoder_config(R"({"vocab_size": 8})", "d.json"), "d.json", "'architecture'",
                    "encoder_decoder");
  Generator gen(0);
  EXPECT_THROW_WITH(build_model(base + R"("colour": 1})", "b.json", gen), "b.json", "unknown key 'colour'");
}

TEST(EncoderDecoder, ForwardChecksItsArguments) {
  EncoderDecoder model(tiny());
  const Tensor src = Tensor::of({1, 2, 3}, {1, 3}, DType::i64), tgt = Tensor::of({4, 5}, {1, 2}, DType::i64);
  EXPECT_THROW_WITH(model.forward(Tensor::of(std::vector<double>(9, 1), {1, 9}, DType::i64), tgt), "source length 9",
                    "max_seq_len 8");
  EXPECT_THROW_WITH(model.forward(src, tgt, Tensor::of({1}, {1, 1}, DType::i64)), "targets", "must match tgt");
  EXPECT_THROW_WITH(model.forward(src, tgt, {}, {.src = Tensor::of({1, 1, 1}, {1, 3})}), "source padding mask",
                    "bool", "f32");
  EXPECT_THROW_WITH(model.decode(tgt, Tensor::empty({1, 3, 8})), "memory must be (B, S, dim)");
}

}  // namespace
}  // namespace nf::models
