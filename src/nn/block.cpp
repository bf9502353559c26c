// TransformerBlock: residual sublayers with their norm placement; its config resolved and counted;
// the encoder-decoder layers (001, 004) as configs; DeepNet's constants and initialisation.
#include "nanoformer/nn/block.h"

#include <array>
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {
namespace {

constexpr std::array<std::pair<NormPlacement, const char*>, 4> kPlacementNames{{
    {NormPlacement::pre, "pre"},
    {NormPlacement::post, "post"},
    {NormPlacement::sandwich, "sandwich"},
    {NormPlacement::deepnorm, "deepnorm"},
}};

// The MLP, or an MoE of MLP experts; `c` resolved.
std::shared_ptr<UnaryModule> make_feed_forward(const BlockConfig& c, Generator& gen) {
  if (!c.moe) return make_mlp(c.mlp, gen);
  const MLPConfig expert = c.mlp;
  return std::make_shared<MoE>(*c.moe, [expert](Generator& g) { return make_mlp(expert, g); }, gen);
}

}  // namespace

BlockConfig resolved(const BlockConfig& config) {
  BlockConfig c = config;
  NF_CHECK(c.attention.dim == c.norm.dim && c.mlp.dim == c.norm.dim, "TransformerBlock: attention.dim ",
           c.attention.dim, ", mlp.dim ", c.mlp.dim, " and norm.dim ", c.norm.dim, " must be equal");
  NF_CHECK(!c.cross || c.cross->dim == c.norm.dim, "TransformerBlock: cross.dim ", c.cross ? c.cross->dim : 0,
           " differs from norm.dim ", c.norm.dim);
  NF_CHECK(c.residual_dropout >= 0.0 && c.residual_dropout < 1.0, "TransformerBlock: residual_dropout ",
           c.residual_dropout, " outside [0, 1)");
  NF_CHECK(c.deepnorm_alpha > 0.0 && std::isfinite(c.deepnorm_alpha), "TransformerBlock: deepnorm_alpha ",
           c.deepnorm_alpha, " must be positive");
  NF_CHECK(c.placement == NormPlacement::deepnorm || c.deepnorm_alpha == 1.0, "TransformerBlock: deepnorm_alpha ",
           c.deepnorm_alpha, " is set but norm placement is ", norm_placement_name(c.placement));
  c.attention = resolved(c.attention);
  if (c.cross) c.cross = resolved(*c.cross);
  c.mlp = resolved(c.mlp);
  if (c.moe) {
    if (c.moe->dim == 0) c.moe->dim = c.mlp.dim;
    NF_CHECK(c.moe->dim == c.mlp.dim, "TransformerBlock: moe.dim ", c.moe->dim, " differs from mlp.dim ", c.mlp.dim);
    c.moe = resolved(*c.moe);
  }
  return c;
}

template <class N>
BasicBlockParameterCounts<N> block_parameter_counts(const BlockConfig& config) {
  const BlockConfig c = resolved(config);
  const N norm = N(norm_parameter_count(c.norm));
  const N sublayers = N(c.cross ? 3 : 2);  // attention, [cross-attention,] MLP
  BasicBlockParameterCounts<N> p;
  const N qk_norms = N(qk_norm_parameter_count(c.attention));  // counted with the norms (q_norm, k_norm)
  p.attention = attention_parameter_count<N>(c.attention) - qk_norms;
  if (c.cross) p.cross_attention = attention_parameter_count<N>(*c.cross);
  const N mlp = mlp_parameter_count<N>(c.mlp);
  if (c.moe) {
    p.routed_experts = N(c.moe->n_experts) * mlp;
    p.shared_experts = N(c.moe->n_shared_experts) * mlp;
    p.router = linear_parameter_count(N(c.moe->dim), N(c.moe->n_experts), c.moe->gate_bias);  // the gate
  } else {
    p.mlp = mlp;
  }
  // a norm per sublayer, and sandwich placement's *_out_norm after each
  p.norms = sublayers * norm * N(c.placement == NormPlacement::sandwich ? 2 : 1) + qk_norms;
  p.total = p.attention + p.cross_attention + p.mlp + p.routed_experts + p.shared_experts + p.router + p.norms;
  return p;
}
template BasicBlockParameterCounts<int64_t> block_parameter_counts<int64_t>(const BlockConfig&);
template BasicBlockParameterCounts<long double> block_parameter_counts<long double>(const BlockConfig&);

std::string norm_placement_name(NormPlacement placement) {
  for (const auto& [p, name] : kPlacementNames)
    if (p == placement) return name;
  NF_FAIL("norm_placement_name: unknown placement ", static_cast<int>(placement));
}

NormPlacement norm_placement_from_name(const std::string& name) {
  for (const auto& [p, n] : kPlacementNames)
    if (name == n) return p;
  NF_FAIL("norm placement '", name, "' is unknown (known: pre, post, sandwich, deepnorm)");
}

TransformerBlock::TransformerBlock(const BlockConfig& config, std::shared_ptr<AttentionPosition> position,
                                   Generator& gen)
    : Module("TransformerBlock"), config_(resolved(config)) {
  const BlockConfig& c = config_;
  const bool sandwich = c.placement == NormPlacement::sandwich;
  attn_norm = register_module("attn_norm", make_norm(c.norm));
  attn = register_module("attn", std::make_shared<MultiHeadAttention>(c.attention, position, gen));
  if (sandwich) attn_out_norm = register_module("attn_out_norm", make_norm(c.norm));
  if (c.cross) {
    cross_attn_norm = register_module("cross_attn_norm", make_norm(c.norm));
    cross_attn = register_module("cross_attn", std::make_shared<MultiHeadAttention>(*c.cross, nullptr, gen));
    if (sandwich) cross_attn_out_norm = register_module("cross_attn_out_norm", make_norm(c.norm));
  }
  mlp_norm = register_module("mlp_norm", make_norm(c.norm));
  mlp = register_module("mlp", make_feed_forward(c, gen));
  moe = std::dynamic_pointer_cast<MoE>(mlp);
  if (sandwich) mlp_out_norm = register_module("mlp_out_norm", make_norm(c.norm));
  if (auto d = make_dropout(c.residual_dropout, gen)) dropout_ = register_module("dropout", d);
}

Tensor TransformerBlock::note(const char* sublayer, const char* what, Tensor value) const {
  if (recorder_) recorder_->stage(*sublayer ? std::string(sublayer) + "_" + what : std::string(what), value);
  return value;
}

Tensor TransformerBlock::residual(const Tensor& x, UnaryModule& norm, UnaryModule* out_norm, const char* name,
                                  const std::function<Tensor(const Tensor&)>& f) {
  auto sublayer = [&](const Tensor& h) { return note(name, "out", dropout_ ? dropout_->forward(f(h)) : f(h)); };
  auto normed = [&](UnaryModule& n, const char* what, const Tensor& h) { return note(name, what, n(h)); };
  switch (config_.placement) {
    case NormPlacement::pre:  // x + f(norm(x))
      return note(name, "residual", x + sublayer(normed(norm, "norm", x)));
    case NormPlacement::post:  // norm(x + f(x))
      return normed(norm, "norm", note(name, "residual", x + sublayer(x)));
    case NormPlacement::sandwich:  // x + norm_out(f(norm(x)))
      return note(name, "residual", x + normed(*out_norm, "out_norm", sublayer(normed(norm, "norm", x))));
    case NormPlacement::deepnorm:  // norm(alpha x + f(x))
      return normed(norm, "norm", note(name, "residual", mul(x, config_.deepnorm_alpha) + sublayer(x)));
  }
  NF_FAIL("TransformerBlock: unknown norm placement");
}

Tensor TransformerBlock::self_attention(const Tensor& x, const AttentionInputs& in) {
  if (!recorder_ || !recorder_->wants_attention_weights() || !in.caches.empty()) return attn->forward(x, in);
  Tensor weights;
  const Tensor out = attn->forward(x, in, &weights);
  recorder_->attention_weights(weights);
  return out;
}

Tensor TransformerBlock::forward(const Tensor& x, const BlockInputs& in) {
  note("", "input", x);
  Tensor h = residual(x, *attn_norm, attn_out_norm.get(), "attn", [&](const Tensor& t) { return self_attention(t, in.self); });
  if (cross_attn) {
    NF_CHECK(in.cross.context.defined() || in.cross.context_kv,
             "TransformerBlock: a block with cross-attention needs the encoder output (context)");
    h = residual(h, *cross_attn_norm, cross_attn_out_norm.get(), "cross_attn",
                 [&](const Tensor& t) { return cross_attn->forward(t, in.cross); });
  }
  return note("", "output", residual(h, *mlp_norm, mlp_out_norm.get(), "mlp", [&](const Tensor& t) { return mlp->forward(t); }));
}

Tensor TransformerBlock::aux_loss() const { return moe ? moe->aux_loss() : Tensor(); }

BlockConfig encoder_layer(int64_t dim, int64_t n_heads, int64_t ffn_hidden, double dropout) {
  BlockConfig c;
  c.attention = {.dim = dim, .n_heads = n_heads, .bias = true, .dropout = dropout, .causal = false};
  c.mlp = {.kind = MLPKind::relu, .dim = dim, .hidden = ffn_hidden, .bias = true, .dropout = dropout};
  c.norm = {.kind = NormKind::layernorm, .dim = dim, .eps = 1e-5};
  c.placement = NormPlacement::post;
  c.residual_dropout = dropout;
  return c;
}

BlockConfig decoder_layer(int64_t dim, int64_t n_heads, int64_t ffn_hidden, double dropout) {
  BlockConfig c = encoder_layer(dim, n_heads, ffn_hidden, dropout);
  c.attention.causal = true;
  c.cross = AttentionConfig{.dim = dim, .n_heads = n_heads, .bias = true, .dropout = dropout, .causal = false};
  return c;
}

DeepNormConstants deepnorm_constants(int64_t encoder_layers, int64_t decoder_layers) {
  const double N = static_cast<double>(encoder_layers), M = static_cast<double>(decoder_layers);
  NF_CHECK(N >= 0 && M >= 0 && N + M > 0, "deepnorm_constants: layer counts must be non-negative and not both 0, got ",
           encoder_layers, " and ", decoder_layers);
  DeepNormConstants k;
  if (N > 0 && M > 0) {
    k.encoder_alpha = 0.81 * std::pow(std::pow(N, 4) * M, 1.0 / 16);
    k.encoder_beta = 0.87 * std::pow(std::pow(N, 4) * M, -1.0 / 16);
    k.decoder_alpha = std::pow(3 * M, 0.25);
    k.decoder_beta = std::pow(12 * M, -0.25);
  } else if (N > 0) {
    k.encoder_alpha = std::pow(2 * N, 0.25);
    k.encoder_beta = std::pow(8 * N, -0.25);
  } else {
    k.decoder_alpha = std::pow(2 * M, 0.25);
    k.decoder_beta = std::pow(8 * M, -0.25);
  }
  return k;
}

void deepnorm_init(TransformerBlock& block, double beta, Generator& gen) {
  NF_CHECK(beta > 0.0 && std::isfinite(beta), "deepnorm_init: beta must be positive, got ", beta);
  autograd::NoGradGuard no_grad;
  // xavier_normal: w ~ normal(0, gain sqrt(2 / (fan_in + fan_out)))
  auto xavier = [&](const Linear& fc, double gain) {
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fc.in_features() + fc.out_features()));
    normal_(fc.weight, 0.0, std, gen);
    if (fc.bias.defined()) fill_(fc.bias, 0.0);
  };
  for (const auto& attention : {block.attn, block.cross_attn}) {
    if (!attention) continue;
    xavier(*attention->q_proj, 1.0);
    xavier(*attention->k_proj, 1.0);
    xavier(*attention->v_proj, beta);
    xavier(*attention->o_proj, beta);
  }
  for (const auto& [name, m] : block.mlp->named_modules())
    if (auto* fc = dynamic_cast<const Linear*>(m); fc && !(block.moe && m == block.moe->gate.get())) xavier(*fc, beta);
}

}  // namespace nf::nn
