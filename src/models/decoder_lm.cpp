// DecoderLM: embedding -> blocks -> norm -> head -> loss, as the config says.
#include "nanoformer/models/decoder_lm.h"

#include <algorithm>

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

Tensor DecoderLM::embed(const Tensor& ids, const std::vector<int64_t>& positions) {
  Tensor x = tok_embeddings->forward(ids);  // (B, T, D)
  if (pos_embeddings) {
    x = nn::at_row_positions(positions, [&](int64_t r, int64_t n, int64_t p) {
      return pos_embeddings->forward(narrow(x, 0, r, n), p);
    });
  }
  if (dropout_) x = dropout_->forward(x);
  if (embedding_norm) x = embedding_norm->forward(x);
  return x;
}

Tensor DecoderLM::head(const Tensor& x) {
  Tensor logits = linear(norm->forward(x), head_weight());                                           // (B, T, V)
  if (config_.logit_softcap > 0) logits = tanh(logits / config_.logit_softcap) * config_.logit_softcap;  // c tanh(z / c)
  return logits;
}

LMOutput DecoderLM::forward(const Tensor& ids, const Tensor& targets, bool return_hidden) {
  const DecoderLMConfig& c = config_;
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(1) <= c.max_seq_len, "DecoderLM: sequence length ", ids.size(1), " exceeds max_seq_len ",
           c.max_seq_len);
  Tensor x = embed(ids, std::vector<int64_t>(static_cast<size_t>(ids.size(0)), 0));
  LMOutput out;
  for (const auto& layer : *layers) {
    x = layer->forward(x);
    if (return_hidden) out.hidden.push_back(x);
  }
  out.logits = head(x);
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


nn::KVCache DecoderLM::make_cache(int64_t max_batch, int64_t max_len) const {
  const nn::AttentionConfig& a = (*layers)[0]->attn->config();  // resolved: n_kv_heads and head_dim set
  if (max_len == 0) max_len = config_.max_seq_len;
  NF_CHECK(max_len <= config_.max_seq_len, "DecoderLM: a cache of ", max_len, " tokens exceeds max_seq_len ",
           config_.max_seq_len);
  return nn::KVCache({.n_layers = config_.n_layers, .max_batch = max_batch, .n_kv_heads = a.n_kv_heads,
                      .head_dim = a.head_dim, .max_len = max_len, .dtype = head_weight().dtype()});
}

Tensor DecoderLM::forward_cached(const Tensor& ids, nn::KVCache& cache, bool last_only) {
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  nn::KVCache* const caches[] = {&cache};
  return forward_steps(ids, caches, {cache.begin(ids.size(0), ids.size(1))}, last_only);
}

Tensor DecoderLM::forward_cached_rows(const Tensor& ids, std::span<nn::KVCache* const> caches, bool last_only) {
  NF_CHECK(ids.dim() == 2, "DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  NF_CHECK(ids.size(0) == static_cast<int64_t>(caches.size()), "DecoderLM: ", ids.size(0), " rows of ids for ",
           caches.size(), " caches (one sequence per cache)");
  std::vector<nn::KVCacheStep> steps;
  for (nn::KVCache* cache : caches) steps.push_back(cache->begin(1, ids.size(1)));
  return forward_steps(ids, caches, steps, last_only);
}

Tensor DecoderLM::forward_steps(const Tensor& ids, std::span<nn::KVCache* const> caches,
                                const std::vector<nn::KVCacheStep>& steps, bool last_only) {
  const DecoderLMConfig& c = config_;
  NF_CHECK(!is_training(), "DecoderLM: a cached forward is inference: call eval() first");
  std::vector<int64_t> positions;
  for (size_t i = 0; i < caches.size(); ++i) {
    NF_CHECK(caches[i]->shape().n_layers == c.n_layers, "DecoderLM: the cache has ", caches[i]->shape().n_layers,
             " layers, the model ", c.n_layers);
    positions.insert(positions.end(), steps[i].positions.begin(), steps[i].positions.end());
  }
  NoGradGuard no_grad;
  const int64_t new_tokens = ids.size(1);
  const int64_t last_position = *std::max_element(positions.begin(), positions.end()) + new_tokens;
  NF_CHECK(last_position <= c.max_seq_len, "DecoderLM: positions up to ", last_position - 1,
           " exceed max_seq_len ", c.max_seq_len);
  Tensor x = embed(ids, positions);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    nn::BlockInputs inputs;
    for (size_t j = 0; j < caches.size(); ++j) inputs.caches.push_back({caches[j]->layer(i), &steps[j]});
    x = (*layers)[static_cast<size_t>(i)]->forward(x, inputs);
  }
  if (last_only) x = narrow(x, 1, new_tokens - 1, 1);
  Tensor logits = head(x);
  for (size_t i = 0; i < caches.size(); ++i) caches[i]->commit(steps[i]);
  return logits;
}

Tensor DecoderLM::prefill_ragged(const std::vector<std::vector<int64_t>>& prompts, nn::KVCache& cache) {
  NF_CHECK(!prompts.empty(), "DecoderLM: prefill_ragged needs at least one prompt");
  NF_CHECK(cache.length() == 0, "DecoderLM: prefill_ragged needs an empty cache, this one holds ", cache.length(),
           " tokens");
  const auto rows = static_cast<int64_t>(prompts.size());
  NF_CHECK(rows <= cache.shape().max_batch, "KVCache: batch ", rows, " exceeds the cache's maximum batch ",
           cache.shape().max_batch);
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const auto length = static_cast<int64_t>(longest);
  NF_CHECK(length <= cache.shape().max_len, "KVCache: a prompt of ", length,
           " tokens exceeds the cache's maximum context ", cache.shape().max_len);
  std::vector<int64_t> starts;
  std::vector<Tensor> last_logits;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t>& prompt = prompts[static_cast<size_t>(r)];
    NF_CHECK(!prompt.empty(), "DecoderLM: prompt ", r, " of prefill_ragged is empty");
    starts.push_back(length - static_cast<int64_t>(prompt.size()));
    nn::KVCache row = cache.row_view(r, starts.back());
    Tensor ids = Tensor::empty({1, static_cast<int64_t>(prompt.size())}, DType::i64);
    std::copy(prompt.begin(), prompt.end(), ids.data<int64_t>());
    last_logits.push_back(forward_cached(ids, row, /*last_only=*/true));
  }
  cache.set_row_starts(length, starts);
  return cat(last_logits, 0);
}

}  // namespace nf::models
