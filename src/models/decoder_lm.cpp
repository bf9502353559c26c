// DecoderLM: embedding -> blocks -> norm -> head -> loss, as the config says.
#include "nanoformer/models/decoder_lm.h"

#include "nanoformer/core/error.h"
#include "nanoformer/models/model_stats.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/view.h"

namespace nf::models {

DecoderLM::DecoderLM(const DecoderLMConfig& config, Generator& gen) : Model("DecoderLM"), config_(config) {
  validate_model_config(config_, config_.name.empty() ? "DecoderLM" : config_.name);
  const DecoderLMConfig& c = config_;
  const nn::BlockConfig block = block_config(c);
  const nn::PositionalConfig positions = positional_config(c);
  tok_embeddings = register_module("tok_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.dim, gen));
  if (auto absolute = nn::make_absolute_position(positions, gen))
    pos_embeddings = register_module("pos_embeddings", absolute);
  if (auto d = nn::make_dropout(c.dropout, gen)) dropout_ = register_module("dropout", d);
  if (c.embedding_norm) embedding_norm = register_module("embedding_norm", nn::make_norm(block.norm));
  attention_position = register_module("attention_position", nn::make_attention_position(positions, gen));
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.n_layers; ++i)
    layers->push_back(std::make_shared<nn::TransformerBlock>(block, attention_position, gen));
  norm = register_module("norm", nn::make_norm(block.norm));
  if (!c.tie_embeddings) output = register_module("output", std::make_shared<nn::Linear>(c.dim, c.vocab_size, false, gen));
  init_weights(*this, c.init, gen);
}

std::string DecoderLM::config_json() const { return model_config_to_json(config_); }

std::vector<ParameterPart> DecoderLM::parameter_parts() const {
  const ParameterCounts p = model_stats(config_).parameters;
  std::vector<ParameterPart> parts = {{"embedding", p.embedding}, {"positions", p.positions}, {"attention", p.attention}};
  if (config_.moe)
    parts.insert(parts.end(), {{"routed experts", p.routed_experts}, {"shared experts", p.shared_experts}, {"router", p.router}});
  else
    parts.push_back({"mlp", p.mlp});
  parts.insert(parts.end(), {{"norms", p.norms}, {"head", p.head}});
  return parts;
}

const Tensor& DecoderLM::head_weight() const { return output ? output->weight : tok_embeddings->weight; }

LMOutput DecoderLM::forward(const Tensor& ids, const Tensor& targets, bool return_hidden) {
  const DecoderLMConfig& c = config_;
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(1) <= c.max_seq_len, "DecoderLM: sequence length ", ids.size(1), " exceeds max_seq_len ",
           c.max_seq_len);
  Tensor x = tok_embeddings->forward(ids);  // (B, T, D)
  if (pos_embeddings) x = pos_embeddings->forward(x, 0);
  if (dropout_) x = dropout_->forward(x);
  if (embedding_norm) x = embedding_norm->forward(x);
  LMOutput out;
  for (const auto& layer : *layers) {
    x = layer->forward(x);
    if (return_hidden) out.hidden.push_back(x);
  }
  x = norm->forward(x);
  out.logits = linear(x, head_weight());                                                   // (B, T, V)
  if (c.logit_softcap > 0) out.logits = tanh(out.logits / c.logit_softcap) * c.logit_softcap;  // c tanh(z / c)
  if (!targets.defined()) return out;
  NF_CHECK(targets.shape() == ids.shape(), "DecoderLM: targets ", shape_str(targets.shape()), " must match ids ",
           shape_str(ids.shape()));
  out.token_loss = cross_entropy(reshape(out.logits, {-1, c.vocab_size}), reshape(targets, {-1}), -100);
  out.loss = out.token_loss;
  for (const auto& layer : *layers) {
    const Tensor aux = layer->aux_loss();
    if (!aux.defined()) continue;
    out.aux_loss = out.aux_loss.defined() ? out.aux_loss + aux : aux;
  }
  if (out.aux_loss.defined()) out.loss = out.token_loss + out.aux_loss;
  return out;
}

}  // namespace nf::models
