// EncoderDecoder: source -> encoder -> memory; target + memory -> decoder -> head -> loss (001, 004).
#include "nanoformer/models/encoder_decoder.h"

#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/matmul.h"
#include "nanoformer/ops/view.h"

namespace nf::models {
namespace {

// A padding mask, when given, is bool (B, L) over the ids it describes.
void check_padding(const Tensor& padding, const Tensor& ids, const char* what) {
  if (!padding.defined()) return;
  NF_CHECK(padding.dtype() == DType::boolean && padding.shape() == ids.shape(), "EncoderDecoder: the ", what,
           " padding mask must be bool ", shape_str(ids.shape()), " (true = a real token), got ",
           dtype_name(padding.dtype()), " ", shape_str(padding.shape()));
}

// The parts of parameter_parts, in its order, and the part a parameter belongs to by its name.
enum Part { embeddings, positions, encoder_attention, encoder_mlp, decoder_self_attention, cross_attention,
            decoder_mlp, norms, head };
constexpr const char* kPartNames[] = {"embeddings", "positions", "encoder attention", "encoder mlp",
                                      "decoder self-attn", "cross-attention", "decoder mlp", "norms", "head"};

Part part_of(const std::string& name) {
  const auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (starts("src_embeddings.") || starts("tgt_embeddings.")) return embeddings;
  if (starts("encoder_positions.") || starts("decoder_positions.")) return positions;
  if (starts("output.")) return head;
  if (starts("encoder_layers.") && has(".attn.")) return encoder_attention;
  if (starts("encoder_layers.") && has(".mlp.")) return encoder_mlp;
  if (starts("decoder_layers.") && has(".attn.")) return decoder_self_attention;
  if (starts("decoder_layers.") && has(".cross_attn.")) return cross_attention;
  if (starts("decoder_layers.") && has(".mlp.")) return decoder_mlp;
  return norms;  // the layers' attn_norm, cross_attn_norm, mlp_norm and the final norms
}

// Sets the weights as `c.init` says (see Seq2SeqInit); norms keep their ones and zeros. The
// constructors drew embeddings and learned positions from normal(0, 1) and Linear weights from
// U(-1/sqrt(in), 1/sqrt(in)), so scaling those gives the wanted distributions without a second draw.
void init_weights(EncoderDecoder& model, const EncoderDecoderConfig& c, Generator& gen) {
  autograd::NoGradGuard no_grad;
  const bool xavier = c.init == Seq2SeqInit::xavier;
  const double embedding_std = xavier ? 1.0 / std::sqrt(static_cast<double>(c.dim)) : c.init_std;
  const auto scale = [](const Tensor& t, double factor) { copy_into(t, t * factor); };
  for (const auto& [name, m] : model.named_modules()) {
    if (auto* fc = dynamic_cast<const nn::Linear*>(m)) {
      const double in = static_cast<double>(fc->in_features()), out = static_cast<double>(fc->out_features());
      if (xavier)
        scale(fc->weight, std::sqrt(6.0 / (in + out)) * std::sqrt(in));  // U(-a, a), a = sqrt(6 / (fan_in + fan_out))
      else
        normal_(fc->weight, 0.0, c.init_std, gen);
      if (fc->bias.defined()) fill_(fc->bias, 0.0);
    } else if (auto* embedding = dynamic_cast<const nn::Embedding*>(m)) {
      scale(embedding->weight, embedding_std);
    } else if (auto* learned = dynamic_cast<const nn::LearnedPosition*>(m)) {
      scale(learned->weight, embedding_std);
    }
  }
}

}  // namespace

EncoderDecoder::EncoderDecoder(const EncoderDecoderConfig& config, Generator& gen)
    : Model("EncoderDecoder"), config_(config) {
  validate_encoder_decoder_config(config_, config_.name.empty() ? "EncoderDecoder" : config_.name);
  const EncoderDecoderConfig& c = config_;
  const nn::BlockConfig encoder_block = encoder_block_config(c), decoder_block = decoder_block_config(c);
  const nn::PositionalConfig positions = encoder_decoder_positional_config(c);
  src_embeddings = register_module("src_embeddings", std::make_shared<nn::Embedding>(c.src_vocab_size, c.dim, gen));
  tgt_embeddings = c.share_embeddings ? src_embeddings
                                      : register_module("tgt_embeddings",
                                                        std::make_shared<nn::Embedding>(c.tgt_vocab_size, c.dim, gen));
  encoder_positions = register_module("encoder_positions", nn::make_absolute_position(positions, gen));
  decoder_positions = register_module("decoder_positions", nn::make_absolute_position(positions, gen));
  if (auto d = nn::make_dropout(c.dropout, gen)) dropout_ = register_module("dropout", d);
  encoder_layers = register_module("encoder_layers", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.n_encoder_layers; ++i)
    encoder_layers->push_back(std::make_shared<nn::TransformerBlock>(encoder_block, nullptr, gen));
  decoder_layers = register_module("decoder_layers", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.n_decoder_layers; ++i)
    decoder_layers->push_back(std::make_shared<nn::TransformerBlock>(decoder_block, nullptr, gen));
  if (c.norm_placement == nn::NormPlacement::pre) {
    encoder_norm = register_module("encoder_norm", nn::make_norm(encoder_block.norm));
    decoder_norm = register_module("decoder_norm", nn::make_norm(decoder_block.norm));
  }
  if (!c.tie_output)
    output = register_module("output", std::make_shared<nn::Linear>(c.dim, c.tgt_vocab_size, false, gen));
  init_weights(*this, c, gen);
}

std::string EncoderDecoder::config_json() const { return encoder_decoder_config_to_json(config_); }

const Tensor& EncoderDecoder::head_weight() const { return output ? output->weight : tgt_embeddings->weight; }

std::vector<ParameterPart> EncoderDecoder::parameter_parts() const {
  std::vector<ParameterPart> parts;
  for (const char* name : kPartNames) parts.push_back({name, 0});
  for (const auto& [name, p] : named_parameters()) parts[part_of(name)].count += p.numel();
  return parts;
}

Tensor EncoderDecoder::embed(nn::Embedding& embedding, nn::AbsolutePosition& positions, const Tensor& ids,
                             const char* what, int64_t offset) {
  NF_CHECK(ids.dim() == 2, "EncoderDecoder: ", what, " ids must be (B, L), got ", shape_str(ids.shape()));
  NF_CHECK(offset + ids.size(1) <= config_.max_seq_len, "EncoderDecoder: ", what, " length ", offset + ids.size(1),
           " exceeds max_seq_len ", config_.max_seq_len);
  Tensor x = embedding.forward(ids);                                                     // (B, L, D)
  if (config_.scale_embeddings) x = x * std::sqrt(static_cast<double>(config_.dim));    // sqrt(d) e
  x = positions.forward(x, offset);                                                      // + p_(offset + t)
  return dropout_ ? dropout_->forward(x) : x;
}

Tensor EncoderDecoder::encode(const Tensor& src, const Tensor& src_padding) {
  check_padding(src_padding, src, "source");
  Tensor x = embed(*src_embeddings, *encoder_positions, src, "source");
  const nn::BlockInputs inputs{.self = {.masks = {.key_padding = src_padding}}};
  for (const auto& layer : *encoder_layers) x = layer->forward(x, inputs);
  return encoder_norm ? encoder_norm->forward(x) : x;
}

Tensor EncoderDecoder::decode(const Tensor& tgt, const Tensor& memory, const PaddingMasks& padding) {
  check_padding(padding.tgt, tgt, "target");
  NF_CHECK(memory.dim() == 3 && memory.size(0) == tgt.size(0) && memory.size(2) == config_.dim,
           "EncoderDecoder: memory must be (B, S, dim) = (", tgt.size(0), ", S, ", config_.dim, "), got ",
           shape_str(memory.shape()));
  NF_CHECK(!padding.src.defined() || padding.src.shape() == Shape({memory.size(0), memory.size(1)}),
           "EncoderDecoder: the source padding mask ", shape_str(padding.src.shape()), " does not match memory ",
           shape_str(memory.shape()));
  Tensor y = embed(*tgt_embeddings, *decoder_positions, tgt, "target");
  const nn::BlockInputs inputs{.self = {.masks = {.key_padding = padding.tgt}},  // causal by the decoder layer's config
                               .cross = {.context = memory, .masks = {.key_padding = padding.src}}};
  for (const auto& layer : *decoder_layers) y = layer->forward(y, inputs);
  if (decoder_norm) y = decoder_norm->forward(y);
  return linear(y, head_weight());  // (B, T, V)
}

DecoderState EncoderDecoder::start_decoding(const Tensor& memory, int64_t rows, int64_t max_len,
                                           const Tensor& src_padding) {
  NF_CHECK(!is_training(), "EncoderDecoder: cached decoding is inference: call eval() first");
  NF_CHECK(memory.dim() == 3 && memory.size(2) == config_.dim && (memory.size(0) == 1 || memory.size(0) == rows),
           "EncoderDecoder: memory must be (1 or ", rows, ", S, dim = ", config_.dim, "), got ", shape_str(memory.shape()));
  NF_CHECK(!src_padding.defined() || (src_padding.dtype() == DType::boolean &&
                                      src_padding.shape() == Shape({memory.size(0), memory.size(1)})),
           "EncoderDecoder: the source padding mask must be bool ", shape_str({memory.size(0), memory.size(1)}),
           ", got ", shape_str(src_padding.shape()));
  if (max_len == 0) max_len = config_.max_seq_len;
  NF_CHECK(max_len <= config_.max_seq_len, "EncoderDecoder: a cache of ", max_len, " target tokens exceeds max_seq_len ",
           config_.max_seq_len);
  const nn::AttentionConfig& a = (*decoder_layers)[0]->attn->config();  // resolved: n_kv_heads and head_dim set
  DecoderState state{.memory_kv = {},
                     .src_padding = src_padding,
                     .cache = nn::KVCache({.n_layers = config_.n_decoder_layers, .max_batch = rows,
                                           .n_kv_heads = a.n_kv_heads, .head_dim = a.head_dim, .max_len = max_len,
                                           .dtype = head_weight().dtype()})};
  for (const auto& layer : *decoder_layers) state.memory_kv.push_back(layer->cross_attn->context_kv(memory));
  return state;
}

void DecoderState::select_rows(const std::vector<int64_t>& rows) {
  cache.select_rows(rows);
  if (memory_kv.empty() || memory_kv[0].keys.size(0) == 1) return;  // one memory row serves every row
  const Tensor index = Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())});
  for (nn::ContextKV& kv : memory_kv) kv = {index_select(kv.keys, 0, index), index_select(kv.values, 0, index)};
  if (src_padding.defined()) src_padding = index_select(src_padding, 0, index);
}

Tensor EncoderDecoder::decode_cached(const Tensor& tgt, DecoderState& state, bool last_only) {
  NF_CHECK(!is_training(), "EncoderDecoder: cached decoding is inference: call eval() first");
  NF_CHECK(tgt.dim() == 2, "EncoderDecoder: target ids must be (B, T), got ", shape_str(tgt.shape()));
  NoGradGuard no_grad;
  const nn::KVCacheStep step = state.cache.begin(tgt.size(0), tgt.size(1));
  const int64_t rows = tgt.size(0);
  Tensor y = embed(*tgt_embeddings, *decoder_positions, tgt, "target", step.position);
  // one memory row for every target row: a stride-0 view, never copied
  const auto rows_of = [&](const Tensor& t) {
    if (!t.defined() || t.size(0) == rows) return t;
    Shape shape = t.shape();
    shape[0] = rows;
    return t.expand(shape);
  };
  const Tensor src_padding = rows_of(state.src_padding);
  for (size_t i = 0; i < decoder_layers->size(); ++i) {
    const nn::ContextKV memory{rows_of(state.memory_kv[i].keys), rows_of(state.memory_kv[i].values)};
    const nn::CachedAttention cache = state.cache.at(static_cast<int64_t>(i), step);
    y = (*decoder_layers)[i]->forward(y, {.self = {.caches = {&cache, 1}},
                                          .cross = {.context_kv = &memory, .masks = {.key_padding = src_padding}}});
  }
  if (last_only) y = narrow(y, 1, step.new_tokens - 1, 1);
  if (decoder_norm) y = decoder_norm->forward(y);
  state.cache.commit(step);
  return linear(y, head_weight());  // (B, T, V)
}

Seq2SeqOutput EncoderDecoder::forward(const Tensor& src, const Tensor& tgt, const Tensor& targets,
                                      const PaddingMasks& padding) {
  NF_CHECK(src.dim() == 2 && tgt.dim() == 2 && src.size(0) == tgt.size(0), "EncoderDecoder: src ",
           shape_str(src.shape()), " and tgt ", shape_str(tgt.shape()), " must be (B, S) and (B, T)");
  Seq2SeqOutput out;
  out.logits = decode(tgt, encode(src, padding.src), padding);
  if (!targets.defined()) return out;
  NF_CHECK(targets.shape() == tgt.shape(), "EncoderDecoder: targets ", shape_str(targets.shape()),
           " must match tgt ", shape_str(tgt.shape()));
  out.loss = cross_entropy(reshape(out.logits, {-1, config_.tgt_vocab_size}), reshape(targets, {-1}), -100);
  return out;
}

}  // namespace nf::models
