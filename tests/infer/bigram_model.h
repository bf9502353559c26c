#pragma once
// A model whose next token depends on the last one only, by a table: one layer whose blocks add
// nothing (all their weights 0 but the norms'), one-hot embeddings (dim = vocab) and an untied head
// giving the table's successor of each token the logit `scale` sqrt(vocab), every other logit 0. So
// greedy decoding follows the table's script exactly, with probabilities below 1 when `scale` is
// small (for gradients); tokens outside the table have flat logits. Tests script tool calls with it.
#include <map>
#include <memory>

#include "nanoformer/models/decoder_lm.h"

namespace nf::testing {

inline std::shared_ptr<models::DecoderLM> bigram_model(int64_t vocab, const std::map<int64_t, int64_t>& next,
                                                       double scale, int64_t max_seq_len = 1024) {
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = vocab, c.dim = vocab, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 4, c.head_dim = 0;
  c.max_seq_len = max_seq_len;
  c.tie_embeddings = false;
  Generator gen(1);
  auto model = std::make_shared<models::DecoderLM>(c, gen);
  for (const auto& [name, p] : model->named_parameters()) {
    float* w = p.data<float>();
    if (name == "tok_embeddings.weight") {  // one-hot: after the blocks and the final norm, sqrt(vocab) e_x
      for (int64_t i = 0; i < p.numel(); ++i) w[i] = i / vocab == i % vocab ? 1.0f : 0.0f;
    } else if (name == "output.weight") {  // (vocab, vocab): the logit of `to` after `from`
      for (int64_t i = 0; i < p.numel(); ++i) w[i] = 0.0f;
      for (const auto& [from, to] : next) w[to * vocab + from] = static_cast<float>(scale);
    } else if (name.starts_with("layers.") && !name.ends_with("norm.weight")) {
      for (int64_t i = 0; i < p.numel(); ++i) w[i] = 0.0f;  // the blocks add nothing to the residual
    }
  }
  return model;
}

}  // namespace nf::testing
