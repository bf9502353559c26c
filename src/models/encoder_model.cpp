// EncoderModel: embeddings -> bidirectional blocks (-> final norm) (-> pooler), as the config says.
#include "nanoformer/models/encoder_model.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::models {
namespace {

// The padding mask as attention's key_padding: bool (B, T), true = a real token.
Tensor key_padding(const Tensor& attention_mask, const Tensor& ids) {
  NF_CHECK(attention_mask.shape() == ids.shape(), "EncoderModel: attention_mask ", shape_str(attention_mask.shape()),
           " must match ids ", shape_str(ids.shape()));
  return attention_mask.dtype() == DType::boolean ? attention_mask : gt(attention_mask, 0.0);
}

}  // namespace

EncoderModel::EncoderModel(const EncoderConfig& config, Generator& gen) : Model("EncoderModel"), config_(config) {
  validate_encoder_config(config_, config_.name.empty() ? "EncoderModel" : config_.name);
  const EncoderConfig& c = config_;
  const nn::BlockConfig block = encoder_block_config(c);
  tok_embeddings = register_module("tok_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.dim, gen));
  pos_embeddings = register_module("pos_embeddings", nn::make_absolute_position(encoder_positional_config(c), gen));
  if (c.type_vocab_size > 0)
    token_type_embeddings =
        register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.dim, gen));
  if (c.embedding_norm) embedding_norm = register_module("embedding_norm", nn::make_norm(block.norm));
  if (auto d = nn::make_dropout(c.dropout, gen)) dropout_ = register_module("dropout", d);
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.n_layers; ++i) layers->push_back(std::make_shared<nn::TransformerBlock>(block, nullptr, gen));
  if (c.norm_placement == nn::NormPlacement::pre) norm = register_module("norm", nn::make_norm(block.norm));
  if (c.pooler) pooler = register_module("pooler", std::make_shared<nn::Linear>(c.dim, c.dim, true, gen));
  init_weights(gen);
}

void EncoderModel::init_weights(Generator& gen) {
  autograd::NoGradGuard no_grad;
  auto draw = [&](const Tensor& w) { normal_(w, 0.0, config_.init_std, gen); };
  for (const auto& [name, m] : named_modules()) {
    if (auto* table = dynamic_cast<const nn::Embedding*>(m)) draw(table->weight);
    if (auto* learned = dynamic_cast<const nn::LearnedPosition*>(m)) draw(learned->weight);
    if (auto* fc = dynamic_cast<const nn::Linear*>(m)) {
      draw(fc->weight);  // w ~ normal(0, init_std), b = 0
      if (fc->bias.defined()) fill_(fc->bias, 0.0);
    }
  }
  if (config_.pad_token_id >= 0) fill_(narrow(tok_embeddings->weight, 0, config_.pad_token_id, 1), 0.0);
}

std::string EncoderModel::config_json() const { return encoder_config_to_json(config_); }

std::vector<ParameterPart> EncoderModel::parameter_parts() const { return encoder_parameter_parts(config_); }

EncoderOutput EncoderModel::forward(const Tensor& ids, const Tensor& token_type_ids, const Tensor& attention_mask,
                                    bool return_hidden) {
  const EncoderConfig& c = config_;
  NF_CHECK(ids.dim() == 2, "EncoderModel: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(1) <= c.max_seq_len, "EncoderModel: sequence length ", ids.size(1), " exceeds max_seq_len ",
           c.max_seq_len);
  NF_CHECK(token_type_embeddings || !token_type_ids.defined(),
           "EncoderModel: token_type_ids given, but the model has no token types (type_vocab_size 0)");
  Tensor x = tok_embeddings->forward(ids);  // (B, T, D)
  // the pad token's rows pass no gradient to the table (torch's padding_idx)
  if (c.pad_token_id >= 0) x = where(unsqueeze(eq(ids, static_cast<double>(c.pad_token_id)), -1), x.detach(), x);
  if (c.scale_embeddings) x = x * std::sqrt(static_cast<double>(c.dim));  // x sqrt(d)
  x = pos_embeddings->forward(x);
  if (token_type_embeddings) {
    NF_CHECK(!token_type_ids.defined() || token_type_ids.shape() == ids.shape(), "EncoderModel: token_type_ids ",
             shape_str(token_type_ids.shape()), " must match ids ", shape_str(ids.shape()));
    x = x + token_type_embeddings->forward(token_type_ids.defined() ? token_type_ids : zeros_like(ids));
  }
  if (embedding_norm) x = embedding_norm->forward(x);
  if (dropout_) x = dropout_->forward(x);
  nn::BlockInputs inputs;
  if (attention_mask.defined()) inputs.self.masks.key_padding = key_padding(attention_mask, ids);
  EncoderOutput out;
  for (const auto& layer : *layers) {
    x = layer->forward(x, inputs);
    if (return_hidden) out.hidden.push_back(x);
  }
  if (norm) x = norm->forward(x);
  out.last_hidden_state = x;
  if (pooler) out.pooler_output = tanh(pooler->forward(select(x, 1, 0)));  // tanh(W x_0 + b)
  return out;
}

}  // namespace nf::models
