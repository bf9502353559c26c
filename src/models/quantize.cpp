// quantize_weights: each weight's role and layer, its type (quantize_mix.cpp), then nf::quantize on it
// (models/quantize.h).
#include "nanoformer/models/quantize.h"

#include <algorithm>

#include "nanoformer/core/error.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/ops/quantized.h"

namespace nf::models {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A weight's role and layer from its module name (layers.N.attn.v_proj, layers.N.mlp.w2, output,
// ...), as llama.cpp's tensor_get_category names the GGUF tensor it is written as (formats'
// gguf_name: v_proj -> attn_v, w2 / c_proj / linear2 -> ffn_down, ...). `fused_qkv`: GPT-2, whose
// q, k and v are one attn_qkv tensor in GGUF and take its type together.
std::pair<TensorRole, int64_t> role_of(const std::string& name, bool fused_qkv) {
  if (name == "output") return {TensorRole::output, 0};
  if (ends_with(name, "tok_embeddings")) return {TensorRole::token_embd, 0};
  if (name.rfind("layers.", 0) != 0) return {TensorRole::other, 0};
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos) return {TensorRole::other, 0};
  const int64_t layer = std::stoll(name.substr(7, dot - 7));
  const std::string rest = name.substr(dot + 1);
  const auto role = [&]() {
    if (rest == "attn.q_proj") return fused_qkv ? TensorRole::attn_qkv : TensorRole::attn_q;
    if (rest == "attn.k_proj") return fused_qkv ? TensorRole::attn_qkv : TensorRole::attn_k;
    if (rest == "attn.v_proj") return fused_qkv ? TensorRole::attn_qkv : TensorRole::attn_v;
    if (rest == "attn.o_proj") return TensorRole::attn_output;
    if (rest == "mlp.w1") return TensorRole::ffn_gate;
    if (rest == "mlp.w3" || rest == "mlp.c_fc" || rest == "mlp.linear1") return TensorRole::ffn_up;
    if (rest == "mlp.w2" || rest == "mlp.c_proj" || rest == "mlp.linear2") return TensorRole::ffn_down;
    return TensorRole::other;
  }();
  return {role, layer};
}

// Each 2-D weight's type, in module order; `apply`: quantised to it as well.
std::vector<QuantizedWeight> visit_weights(DecoderLM& model, const QuantizeSpec& spec, bool apply) {
  const bool tied = model.output == nullptr;
  const bool fused_qkv = model.config().position == nn::PositionKind::learned;  // GPT-2 (formats' family_for)
  const int64_t n_layers = model.config().n_layers;
  std::vector<std::string> routers;  // MoE gates stay dense, as llama.cpp keeps ffn_gate_inp in F32
  std::vector<QuantizedWeight> done;
  model.apply([&](const std::string& name, nn::Module& m) {
    if (m.type_name() == "MoE") routers.push_back(name + ".gate");
    if (name.find("lora_") != std::string::npos) return;
    const auto [role, layer] = role_of(name, fused_qkv);
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      if (linear->is_quantized() || std::find(routers.begin(), routers.end(), name) != routers.end()) return;
      const QuantType type = mix_tensor_type(spec, role, layer, n_layers, linear->in_features(), tied);
      if (apply && type != QuantType::f32) linear->set_quantized_weight(quantize(linear->weight, type));
      done.push_back({name + ".weight", type});
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&m); embedding && role == TensorRole::token_embd) {
      if (embedding->is_quantized()) return;
      const QuantType type = mix_tensor_type(spec, role, 0, n_layers, embedding->dim(), tied);
      if (apply && type != QuantType::f32) embedding->set_quantized_weight(quantize(embedding->weight, type));
      done.push_back({name + ".weight", type});
    }
  });
  return done;
}

}  // namespace

std::vector<QuantizedWeight> quantize_weights(DecoderLM& model, const QuantizeSpec& spec) {
  return visit_weights(model, spec, true);
}

std::vector<QuantizedWeight> quantization_plan(DecoderLM& model, const QuantizeSpec& spec) {
  return visit_weights(model, spec, false);
}

void dequantize_weights(nn::Module& model) {
  model.apply([](const std::string&, nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m); linear && linear->is_quantized())
      linear->set_dense_weight(dequantize(linear->quantized_weight()));
    else if (auto* embedding = dynamic_cast<nn::Embedding*>(&m); embedding && embedding->is_quantized())
      embedding->set_dense_weight(dequantize(embedding->quantized_weight()));
  });
}

void check_dense(const nn::Module& model, const std::string& what, const std::string& advice) {
  const std::vector<nn::NamedQuantized> quantized = model.named_quantized();
  if (quantized.empty()) return;
  std::string names;
  for (size_t i = 0; i < std::min<size_t>(quantized.size(), 3); ++i)
    names += (i ? ", " : "") + quantized[i].first + " " + quant_type_name(quantized[i].second.type());
  NF_FAIL(what, ": the model holds ", quantized.size(), " quantised weights (", names, quantized.size() > 3 ? ", ..." : "",
          "); ", advice);
}

}  // namespace nf::models
