// DecoderLM: embedding -> blocks -> norm -> head -> loss, as the config says.
#include "nanoformer/models/decoder_lm.h"

#include <algorithm>

#include "core/thread_team.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/models/model_stats.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/join.h"
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
  for (int64_t i = 0; i < c.n_layers; ++i) {
    nn::BlockConfig layer = block;
    layer.attention.window = layer_window(c, i);
    if (c.value_embeddings && nn::value_embedding_layer(i, c.n_layers)) layer.attention.value_gate_channels = nn::kValueGateChannels;
    layers->push_back(std::make_shared<nn::TransformerBlock>(layer, attention_position, gen));
  }
  norm = register_module("norm", nn::make_norm(block.norm));
  if (!c.tie_embeddings) output = register_module("output", std::make_shared<nn::Linear>(c.dim, c.vocab_size, false, gen));
  if (c.value_embeddings)
    value_embeds = register_module("value_embeds", std::make_shared<nn::ValueEmbeddings>(
        c.vocab_size, block.attention.n_kv_heads * block.attention.head_dim, c.n_layers, gen));
  if (c.residual_scalars) residual_scalars = register_module("residual_scalars", std::make_shared<nn::ResidualScalars>(c.n_layers));
  if (c.smear) smear = register_module("smear", std::make_shared<nn::Smear>(c.dim, gen));
  if (c.backout) backout = register_module("backout", std::make_shared<nn::Backout>());
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
  parts.push_back({"norms", p.norms});
  if (p.value_embeddings > 0) parts.push_back({"value embeddings", p.value_embeddings});
  if (p.scalars > 0) parts.push_back({"scalars", p.scalars});
  parts.push_back({"head", p.head});
  return parts;
}

DType DecoderLM::compute_dtype() const {
  const Tensor& table = tok_embeddings->weight;  // quantised weights compute in f32
  return table.defined() ? table.dtype() : DType::f32;
}

Tensor DecoderLM::embed(const Tensor& ids, const std::vector<int64_t>& positions, int64_t rows_per_position,
                        std::span<nn::KVCache* const> caches) {
  Tensor x = tok_embeddings->forward(ids);  // (B, T, D)
  if (pos_embeddings) {
    if (std::all_of(positions.begin(), positions.end(), [&](int64_t p) { return p == positions[0]; })) {
      x = pos_embeddings->forward(x, positions[0]);
    } else {  // sequences at different lengths decoded together
      std::vector<Tensor> parts;
      for (size_t i = 0; i < positions.size(); ++i)
        parts.push_back(pos_embeddings->forward(narrow(x, 0, static_cast<int64_t>(i) * rows_per_position, rows_per_position),
                                                positions[i]));
      x = cat(parts, 0);
    }
  }
  if (dropout_) x = dropout_->forward(x);
  if (embedding_norm) x = embedding_norm->forward(x);
  if (!smear) return x;
  if (caches.empty()) return smear->forward(x);
  std::vector<Tensor> parts;  // each cache's rows continue from the embedding it carries
  for (size_t i = 0; i < caches.size(); ++i) {
    const Tensor rows = narrow(x, 0, static_cast<int64_t>(i) * rows_per_position, rows_per_position);
    parts.push_back(smear->forward(rows, caches[i]->length() > 0 ? caches[i]->carried() : Tensor()));
    caches[i]->set_carried(narrow(rows, 1, rows.size(1) - 1, 1).contiguous());
  }
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

Tensor DecoderLM::blocks(Tensor x, const Tensor& ids, std::span<nn::KVCache* const> caches,
                         const std::vector<nn::KVCacheStep>& steps, std::vector<Tensor>* hidden) {
  std::vector<nn::CachedAttention> layer_caches(caches.size());
  const Tensor x0 = x;
  Tensor mid;  // the output of layer n_layers / 2, for the backout
  for (int64_t i = 0; i < config_.n_layers; ++i) {
    for (size_t c = 0; c < caches.size(); ++c) layer_caches[c] = caches[c]->at(i, steps[c]);
    if (residual_scalars) x = residual_scalars->forward(x, x0, i);  // resid_i x + x0_i x0
    const Tensor ve = value_embeds ? value_embeds->forward(ids, i) : Tensor();
    x = (*layers)[static_cast<size_t>(i)]->forward(x, {.self = {.caches = layer_caches, .value_embedding = ve}});
    if (i == config_.n_layers / 2) mid = x;
    if (hidden) hidden->push_back(x);
  }
  return backout ? backout->forward(x, mid) : x;  // x - lambda x_mid
}

Tensor DecoderLM::head(const Tensor& x) {
  const Tensor h = norm->forward(x);
  Tensor logits = output ? output->forward(h) : tok_embeddings->attend(h);                           // (B, T, V)
  if (config_.logit_softcap > 0) logits = tanh(logits / config_.logit_softcap) * config_.logit_softcap;  // c tanh(z / c)
  return logits;
}

Tensor DecoderLM::final_hidden(const Tensor& ids) {
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(1) <= config_.max_seq_len, "DecoderLM: sequence length ", ids.size(1), " exceeds max_seq_len ",
           config_.max_seq_len);
  return norm->forward(blocks(embed(ids, {0}, ids.size(0)), ids, {}, {}, nullptr));
}

LMOutput DecoderLM::forward(const Tensor& ids, const Tensor& targets, bool return_hidden) {
  const DecoderLMConfig& c = config_;
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(1) <= c.max_seq_len, "DecoderLM: sequence length ", ids.size(1), " exceeds max_seq_len ",
           c.max_seq_len);
  LMOutput out;
  out.logits = head(blocks(embed(ids, {0}, ids.size(0)), ids, {}, {}, return_hidden ? &out.hidden : nullptr));
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


nn::KVCache DecoderLM::make_cache(int64_t max_batch, int64_t max_len, QuantType cache_type, int64_t block_len) const {
  const nn::AttentionConfig& a = (*layers)[0]->attn->config();  // resolved: n_kv_heads and head_dim set
  if (max_len == 0) max_len = config_.max_seq_len;
  NF_CHECK(max_len <= config_.max_seq_len, "DecoderLM: a cache of ", max_len, " tokens exceeds max_seq_len ",
           config_.max_seq_len);
  std::vector<int64_t> windows;
  for (const auto& layer : *layers) windows.push_back(layer->attn->config().window);
  return nn::KVCache({.n_layers = config_.n_layers, .max_batch = max_batch, .n_kv_heads = a.n_kv_heads,
                      .head_dim = a.head_dim, .max_len = max_len, .dtype = compute_dtype(),
                      .cache_type = cache_type, .windows = windows, .block_len = block_len});
}

Tensor DecoderLM::forward_cached(const Tensor& ids, std::span<nn::KVCache* const> caches, bool last_only) {
  const DecoderLMConfig& c = config_;
  NF_CHECK(!is_training(), "DecoderLM: a cached forward is inference: call eval() first");
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  const auto n = static_cast<int64_t>(caches.size());
  NF_CHECK(n > 0 && ids.size(0) % n == 0, "DecoderLM: ", ids.size(0), " rows of ids for ", n,
           " caches (each cache takes the same number of rows)");
  int64_t chunk = ids.size(1);
  for (nn::KVCache* cache : caches) {
    NF_CHECK(cache->shape().n_layers == c.n_layers, "DecoderLM: the cache has ", cache->shape().n_layers,
             " layers, the model ", c.n_layers);
    cache->check_room(ids.size(0) / n, ids.size(1));  // before any chunk changes the cache
    chunk = std::min(chunk, cache->max_step());
  }
  NoGradGuard no_grad;
  std::vector<Tensor> logits;
  const auto passes = [&] {
    for (int64_t first = 0; first < ids.size(1); first += chunk) {  // one pass unless a ring buffer needs chunks
      const int64_t T = std::min(chunk, ids.size(1) - first);
      std::vector<nn::KVCacheStep> steps;
      std::vector<int64_t> positions;
      for (nn::KVCache* cache : caches) {
        steps.push_back(cache->begin(ids.size(0) / n, T));
        positions.push_back(steps.back().position);
      }
      const Tensor chunk_ids = narrow(ids, 1, first, T);
      Tensor x = blocks(embed(chunk_ids, positions, ids.size(0) / n, caches), chunk_ids, caches, steps, nullptr);
      if (last_only) x = narrow(x, 1, T - 1, 1);
      if (!last_only || first + T == ids.size(1)) logits.push_back(head(x));
      for (size_t i = 0; i < caches.size(); ++i) caches[i]->commit(steps[i]);
    }
  };
  // a decode step: its threads held as one team between its products (core/thread_team.h)
  if (ids.numel() <= kTeamMaxRows) with_thread_team(passes);
  else passes();
  return logits.size() == 1 ? logits[0] : cat(logits, 1);
}

bool DecoderLM::shift_context(nn::KVCache& cache, int64_t keep, int64_t discard) {
  if (pos_embeddings) return false;  // absolute positions are in every layer's hidden states: re-encode
  return cache.shift(keep, discard, [&](const Tensor& keys, int64_t delta) {
    return attention_position->reposition_keys(keys, delta);
  });
}

}  // namespace nf::models
