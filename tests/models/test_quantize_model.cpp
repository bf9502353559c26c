// Quantised weights in modules and models (models/quantize.h, nn::Linear / nn::Embedding holding a
// QuantizedTensor): which weights get which type, parameters and names, the forward against the
// dequantised weights, and LoRA over a quantised base (QLoRA): only adapters train, the loss
// falls, merging gives the dense base plus the update with equal logits.
#include <algorithm>
#include <cmath>
#include <map>

#include "nanoformer/nanoformer.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/optim/adam.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

DecoderLMConfig llama(const std::string& extra = "") {
  return parse_model_config(R"({"vocab_size": 48, "dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
      "max_seq_len": 16, "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "mlp_hidden": 96,
      "attention_bias": false, "mlp_bias": false)" + (extra.empty() ? "" : ", " + extra) + "}");
}

const Tensor kIds = Tensor::of({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}, {2, 8}, DType::i64);
const Tensor kTargets = Tensor::of({1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2}, {2, 8}, DType::i64);

Tensor logits_of(DecoderLM& model) {
  autograd::NoGradGuard no_grad;
  model.eval();
  return model.forward(kIds).logits;
}

// The bound on |x W^T - x~ W^T| when x~ is x quantised to Q8_0 per block of 32: each value moves by
// at most d (1/2 + 127 2^-11) (d = max|x_block| / 127, itself rounded to f16), so a row moves by at
// most sum_j |W_ij| max|x_block(j)| (1/254 + 2^-11).
double q8_activation_bound(const Tensor& x, const Tensor& w) {
  const auto xs = x.contiguous().to_vector<float>();
  const auto ws = w.contiguous().to_vector<float>();
  const int64_t k = w.size(1), n = w.size(0), m = x.numel() / k;
  double worst = 0.0;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t o = 0; o < n; ++o) {
      double bound = 0.0;
      for (int64_t b = 0; b < k; b += 32) {
        double amax = 0.0, wsum = 0.0;
        for (int64_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(double(xs[r * k + j])));
        for (int64_t j = b; j < b + 32; ++j) wsum += std::fabs(double(ws[o * k + j]));
        bound += amax * (1.0 / 254.0 + std::ldexp(1.0, -11)) * wsum;
      }
      worst = std::max(worst, bound);
    }
  return worst * 1.001 + 1e-5;  // + f32 rounding of the sums
}

TEST(QuantizedLinear, ForwardMultipliesByTheBlocksAndTheWeightLeavesTheParameters) {
  Generator gen(1);
  for (QuantType type : {QuantType::q8_0, QuantType::q4_0}) {
    SCOPED_TRACE(quant_type_name(type));
    nn::Linear layer(64, 24, true, gen);
    const Tensor dense = layer.weight;
    layer.set_quantized_weight(quantize(dense, type));
    EXPECT_TRUE(layer.is_quantized());
    EXPECT_FALSE(layer.weight.defined());
    std::vector<std::string> names;
    for (const auto& [n, t] : layer.named_parameters()) names.push_back(n);
    EXPECT_EQ(names, std::vector<std::string>{"bias"});
    ASSERT_EQ(layer.named_quantized().size(), 1u);
    EXPECT_EQ(layer.named_quantized()[0].first, "weight");
    EXPECT_EQ(layer.state_dict().count("weight"), 0u);
    EXPECT_EQ(layer.num_parameters(), 64 * 24 + 24);
    EXPECT_NE(nn::describe(layer).find(std::string("weight (24, 64) ") + quant_type_name(type)), std::string::npos);
    const Tensor w = dequantize(layer.quantized_weight());
    for (int64_t rows : {1, 5, 70}) {  // decode's matrix-vector kernel, a few rows, prefill's GEMM
      const Tensor x = randn({rows, 64}, gen);
      EXPECT_TENSOR_CLOSE(layer(x), linear(x, w, layer.bias), q8_activation_bound(x, w), 0.0) << rows << " rows";
    }
  }
}

TEST(QuantizedLinear, WrongShapeIsRefusedNamingBoth) {
  Generator gen(2);
  nn::Linear layer(64, 24, true, gen);
  EXPECT_THROW_WITH(layer.set_quantized_weight(quantize(randn({24, 32}, gen), QuantType::q8_0)), "weight", "(24, 64)",
                    "(24, 32)");
}

TEST(QuantizeWeights, TypesFollowLlamaCppsChoices) {
  DecoderLM tied(llama());
  const auto done = quantize_weights(tied, {.type = QuantType::q4_0});
  for (const QuantizedWeight& w : done) {
    SCOPED_TRACE(w.name);
    // the tied table is the head: Q6_K, llama.cpp's output type for every type but Q8_0, whose
    // super-blocks of 256 do not fit rows of 64 values: Q8_0 then, as llama.cpp falls back
    EXPECT_EQ(w.type, w.name == "tok_embeddings.weight" ? QuantType::q8_0 : QuantType::q4_0);
  }
  EXPECT_EQ(done.size(), 1u + 2u * 7u);  // the table, and q k v o gate up down per layer
  EXPECT_EQ(tied.num_parameters(), count_parameters(tied.config()));
  for (const auto& [name, p] : tied.named_parameters()) EXPECT_EQ(p.dim(), 1) << name;  // norms only

  DecoderLM untied(llama(R"("tie_embeddings": false)"));
  quantize_weights(untied, {.type = QuantType::q8_0, .output_type = QuantType::f32});
  EXPECT_TRUE(untied.output->weight.defined());  // --output-type f32 keeps the head dense
  EXPECT_EQ(untied.tok_embeddings->quantized_weight().type(), QuantType::q8_0);
}

// As llama.cpp's llama_tensor_get_type: a K type falls back to its 32-value relative (q4_k -> q5_0,
// q6_k -> q8_0), and a row that is not whole blocks of that either to f16.
TEST(QuantizeWeights, RowsThatAreNotWholeBlocksFallBack) {
  struct Case {
    const char* hidden;  // the down projection's row length
    QuantType wanted, down;
  };
  for (const Case& c : {Case{R"("mlp_hidden": 80)", QuantType::q4_0, QuantType::f16},
                        Case{R"("mlp_hidden": 96)", QuantType::q4_k, QuantType::q5_0},
                        Case{R"("mlp_hidden": 96)", QuantType::q6_k, QuantType::q8_0},
                        Case{R"("mlp_hidden": 80)", QuantType::q6_k, QuantType::f16}}) {
    SCOPED_TRACE(std::string(c.hidden) + " " + quant_type_name(c.wanted));
    DecoderLM model(llama(c.hidden));
    const int64_t hidden = nn::mlp_hidden_dim(models::block_config(model.config()).mlp);
    int down = 0;
    for (const QuantizedWeight& w : quantize_weights(model, {.type = c.wanted, .output_type = c.wanted})) {
      const nn::Module* m = nullptr;
      for (const auto& [name, module] : model.named_modules())
        if (name + ".weight" == w.name) m = module;
      ASSERT_NE(m, nullptr) << w.name;
      const auto* layer = dynamic_cast<const nn::Linear*>(m);
      if (layer && layer->in_features() == hidden) {
        EXPECT_EQ(w.type, c.down) << w.name;
        EXPECT_EQ(layer->quantized_weight().type(), c.down) << w.name;
        ++down;
      } else if (is_block_quantized(c.wanted) && quant_type_info(c.wanted).block_size == 32) {
        EXPECT_EQ(w.type, c.wanted) << w.name;
      }
    }
    EXPECT_EQ(down, 2);
  }
}

TEST(QuantizeWeights, LogitsStayCloseToTheDenseModel) {
  Generator gen(3);
  for (QuantType type : {QuantType::q8_0, QuantType::q4_0}) {
    SCOPED_TRACE(quant_type_name(type));
    DecoderLM model(llama(), gen);
    const Tensor dense = logits_of(model);
    quantize_weights(model, {.type = type, .output_type = type});
    const Tensor quantized = logits_of(model);
    const double spread = max(abs(dense)).item();
    const double err = testing::max_abs_diff(quantized, dense);
    std::printf("%s: max |logit error| %.4f of max |logit| %.3f\n", quant_type_name(type), err, spread);
    EXPECT_GT(err, 0.0);
    EXPECT_LT(err, (type == QuantType::q8_0 ? 0.02 : 0.25) * spread);
  }
}

TEST(QuantizeWeights, DequantisingGivesTheDenseModelOfTheBlocks) {
  Generator gen(4);
  DecoderLM model(llama(), gen);
  quantize_weights(model, {.type = QuantType::q4_0});
  std::map<std::string, Tensor> expected;
  for (const auto& [name, q] : model.named_quantized()) expected[name] = dequantize(q);
  EXPECT_THROW_WITH(check_dense(model, "save_model: x", "write gguf"), "save_model: x", "the model holds 15 quantised",
                    "q4_0", "write gguf");
  dequantize_weights(model);
  EXPECT_TRUE(model.named_quantized().empty());
  EXPECT_NO_THROW(check_dense(model, "save_model: x", "write gguf"));
  const nn::StateDict state = model.state_dict();
  for (const auto& [name, w] : expected) EXPECT_TENSOR_CLOSE(state.at(name), w, 0.0, 0.0) << name;
  EXPECT_EQ(model.num_parameters(), count_parameters(model.config()));
}

TEST(QLoRA, AdaptersTrainOverAQ4_0BaseAndMergeIntoTheDequantisedBase) {
  Generator gen(5);
  DecoderLM model(llama(), gen);
  quantize_weights(model, {.type = QuantType::q4_0});
  const size_t n_quantized = model.named_quantized().size();
  apply_lora(model, {.rank = 4, .alpha = 8.0, .targets = {"q", "v", "gate", "down"}}, gen);
  std::vector<Tensor> trainable;
  for (const auto& [name, p] : model.named_parameters())
    if (p.requires_grad()) trainable.push_back(p);
  EXPECT_EQ(trainable.size(), 2u * 2u * 4u);  // A and B of 4 targets in 2 layers; the base is frozen
  optim::Adam optimizer({optim::ParamGroup(trainable, 1e-2)});
  model.train();
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 30; ++step) {
    optimizer.zero_grad();
    const Tensor loss = model.forward(kIds, kTargets).loss;
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item();
  }
  std::printf("QLoRA loss %.4f -> %.4f\n", first, last);
  EXPECT_LT(last, 0.8 * first);
  EXPECT_EQ(model.named_quantized().size(), n_quantized);  // the base stays quantised while training

  // merging: W = dequantise(base) + (alpha / r) B A, dense, on every adapted layer
  std::map<std::string, Tensor> expected;
  model.apply([&](const std::string& name, nn::Module& m) {
    auto* layer = dynamic_cast<nn::Linear*>(&m);
    if (!layer || !layer->has_lora()) return;
    autograd::NoGradGuard no_grad;
    expected[name] = dequantize(layer->quantized_weight()) +
                     matmul(layer->lora_B->weight, layer->lora_A->weight) * layer->lora_scaling();
  });
  ASSERT_EQ(expected.size(), 2u * 4u);
  const Tensor adapted = logits_of(model);
  merge_lora(model);
  EXPECT_GT(n_quantized, 0u);
  EXPECT_TRUE(model.named_quantized().empty());  // the merged model is dense: the dequantised base + the adapters
  model.apply([&](const std::string& name, nn::Module& m) {
    if (auto* layer = dynamic_cast<nn::Linear*>(&m); layer && expected.count(name)) {
      EXPECT_FALSE(layer->is_quantized()) << name;
      EXPECT_TENSOR_CLOSE(layer->weight, expected.at(name), 1e-6, 0.0) << name;
    }
  });
  // the adapted model quantises its activations in the quantised layers, the merged one does not
  const Tensor merged = logits_of(model);
  std::printf("QLoRA merged vs adapted logits: max abs %.3g of %.3g\n", testing::max_abs_diff(merged, adapted),
              max(abs(adapted)).item());
  EXPECT_LT(testing::max_abs_diff(merged, adapted), 0.02 * max(abs(adapted)).item());
}

}  // namespace
}  // namespace nf::models
