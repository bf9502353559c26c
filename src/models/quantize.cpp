// quantize_weights: which weight gets which type, then nf::quantize on each (models/quantize.h).
#include "nanoformer/models/quantize.h"

#include <algorithm>

#include "nanoformer/core/error.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/ops/quantized.h"

namespace nf::models {
namespace {

// `wanted`, or the fallback llama.cpp's llama_tensor_get_type takes when a row is not whole blocks
// of it: a K type's 32-value relative (q4_k -> q5_0, q6_k -> q8_0), and f16 when that does not fit
// either.
QuantType fitting_type(QuantType wanted, int64_t cols) {
  const auto fits = [cols](QuantType t) { return cols % quant_type_info(t).block_size == 0; };
  if (fits(wanted)) return wanted;
  const QuantType relative = wanted == QuantType::q4_k   ? QuantType::q5_0
                             : wanted == QuantType::q6_k ? QuantType::q8_0
                                                         : wanted;
  return fits(relative) ? relative : QuantType::f16;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

QuantType default_output_type(QuantType type) {
  return type == QuantType::q8_0 || !is_block_quantized(type) ? type : QuantType::q6_k;
}

std::vector<QuantizedWeight> quantize_weights(DecoderLM& model, const QuantizeSpec& spec) {
  const QuantType head_type = spec.output_type.value_or(default_output_type(spec.type));
  const bool tied = model.output == nullptr;
  std::vector<std::string> routers;  // MoE gates stay dense, as llama.cpp keeps ffn_gate_inp in F32
  std::vector<QuantizedWeight> done;
  model.apply([&](const std::string& name, nn::Module& m) {
    if (m.type_name() == "MoE") routers.push_back(name + ".gate");
    if (name.find("lora_") != std::string::npos) return;
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      if (linear->is_quantized() || std::find(routers.begin(), routers.end(), name) != routers.end()) return;
      const QuantType wanted = name == "output" ? head_type : spec.type;
      const QuantType type = fitting_type(wanted, linear->in_features());
      if (type != QuantType::f32) linear->set_quantized_weight(quantize(linear->weight, type));
      done.push_back({name + ".weight", type});
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&m); embedding && ends_with(name, "tok_embeddings")) {
      if (embedding->is_quantized()) return;
      const QuantType wanted = tied ? head_type : spec.embedding_type.value_or(spec.type);
      const QuantType type = fitting_type(wanted, embedding->dim());
      if (type != QuantType::f32) embedding->set_quantized_weight(quantize(embedding->weight, type));
      done.push_back({name + ".weight", type});
    }
  });
  return done;
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
