#pragma once
// Transformer blocks, composed from the component modules: self-attention, optional
// cross-attention, and an MLP (or a Mixture of Experts), each a residual sublayer whose norm sits
// where the config says (001, "norm placement"):
//   pre:       x + f(norm(x))                 (GPT-2, LLaMA, MiniMind, nanochat)
//   post:      norm(x + f(x))                 (the original Transformer, 001/004, BERT)
//   sandwich:  x + norm_out(f(norm(x)))
//   deepnorm:  norm(alpha x + f(x))           (DeepNet, with deepnorm_constants and deepnorm_init)
// The block never asks which norm, MLP or positional scheme it holds: make_norm, make_mlp and the
// AttentionPosition it is handed decide that once, at construction.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/attention.h"
#include "nanoformer/nn/block_recorder.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/nn/mlp.h"
#include "nanoformer/nn/moe.h"
#include "nanoformer/nn/norm.h"

namespace nf::nn {

enum class NormPlacement { pre, post, sandwich, deepnorm };
// "pre", "post", "sandwich", "deepnorm"; parsing an unknown name throws listing the known ones.
std::string norm_placement_name(NormPlacement placement);
NormPlacement norm_placement_from_name(const std::string& name);

struct BlockConfig {
  AttentionConfig attention;               // self-attention (causal in a decoder)
  std::optional<AttentionConfig> cross;    // cross-attention over an encoder's output (a decoder layer)
  MLPConfig mlp;                           // the MLP, or the expert of an MoE
  std::optional<MoEConfig> moe;            // when set, an MoE of make_mlp(mlp) experts replaces the MLP
  NormConfig norm;                         // every norm of the block
  NormPlacement placement = NormPlacement::pre;
  double residual_dropout = 0.0;           // on each sublayer's output before the residual sum (001, 004)
  double deepnorm_alpha = 1.0;             // the residual scale of deepnorm placement
};

// `config` validated (the widths agree, dropout and deepnorm_alpha in range) with every component
// resolved (nn::resolved of the attentions, the MLP and the MoE, whose dim 0 = the MLP's): the one
// place a block's defaults are filled in. TransformerBlock, block_parameter_counts and the models'
// block configs call it, so a resolved config's fields are the built modules' sizes.
BlockConfig resolved(const BlockConfig& config);

// What a block is given per call besides x: what its self-attention and its cross-attention
// read (cross.context or cross.context_kv, the encoder output, for a block with cross-attention).
struct BlockInputs {
  AttentionInputs self{};
  AttentionInputs cross{};
};

// Parameters: attn_norm, attn, [attn_out_norm], [cross_attn_norm, cross_attn, [cross_attn_out_norm]],
// mlp_norm, mlp, [mlp_out_norm] (the *_out_norm only with sandwich placement).
class TransformerBlock : public Module {
 public:
  // `position` acts inside both attentions' self-attention (RoPE, ALiBi, ...); null = none. It is
  // not registered here: a model shares one among its layers and owns it.
  explicit TransformerBlock(const BlockConfig& config, std::shared_ptr<AttentionPosition> position = nullptr,
                            Generator& gen = default_generator());
  // x (B, T, dim) -> (B, T, dim)
  Tensor forward(const Tensor& x, const BlockInputs& inputs = {});
  // The MoE's load-balancing loss of the last forward (a scalar), undefined without an MoE.
  Tensor aux_loss() const;

  const BlockConfig& config() const { return config_; }  // resolved
  // Reports every stage (and, if it asks, the attention weights) to `recorder` until reset with
  // nullptr; the caller keeps the recorder alive meanwhile. Not with a KV cache.
  void set_recorder(BlockRecorder* recorder) { recorder_ = recorder; }
  std::shared_ptr<UnaryModule> attn_norm, attn_out_norm, cross_attn_norm, cross_attn_out_norm, mlp_norm, mlp_out_norm;
  std::shared_ptr<MultiHeadAttention> attn, cross_attn;
  std::shared_ptr<UnaryModule> mlp;  // an MLP, or the MoE
  std::shared_ptr<MoE> moe;          // the same module as mlp when the block has an MoE, else null

 private:
  // One residual sublayer `name` (attn, cross_attn, mlp), placed as config_.placement says.
  Tensor residual(const Tensor& x, UnaryModule& norm, UnaryModule* out_norm, const char* name,
                  const std::function<Tensor(const Tensor&)>& f);
  // value, reported as stage `sublayer`_`what` (or `what` alone) when a recorder is installed.
  Tensor note(const char* sublayer, const char* what, Tensor value) const;
  Tensor self_attention(const Tensor& x, const AttentionInputs& in);

  BlockConfig config_;
  BlockRecorder* recorder_ = nullptr;
  std::shared_ptr<Dropout> dropout_;  // null when residual_dropout is 0
};

// TransformerBlock(config)'s parameters by part, without building it (the sums of the component
// counts: attention_parameter_count, mlp_parameter_count, norm_parameter_count), in arithmetic N:
// int64_t, or long double to bound a config whose count might not fit.
template <class N>
struct BasicBlockParameterCounts {
  N attention = 0;        // self-attention: q, k, v, o
  N cross_attention = 0;  // cross-attention: q, k, v, o (0 without)
  N mlp = 0;              // the MLP (0 with an MoE)
  N routed_experts = 0;   // the MoE's routed experts
  N shared_experts = 0;   // the MoE's shared experts
  N router = 0;           // the MoE's gate
  N norms = 0;            // every norm of the block (the self-attention's learned QK-norm included)
  N total = 0;
};
using BlockParameterCounts = BasicBlockParameterCounts<int64_t>;
template <class N = int64_t>
BasicBlockParameterCounts<N> block_parameter_counts(const BlockConfig& config);

// The layers of the encoder-decoder Transformer (001/004), as configurations of TransformerBlock
// (the decoder-only families' blocks come from their model configs: models::block_config):
//   encoder layer: post-norm LayerNorm, bidirectional MHA with biases, ReLU FFN, dropout;
//   decoder layer: the same with causal self-attention and cross-attention.
BlockConfig encoder_layer(int64_t dim, int64_t n_heads, int64_t ffn_hidden, double dropout = 0.1);
BlockConfig decoder_layer(int64_t dim, int64_t n_heads, int64_t ffn_hidden, double dropout = 0.1);

// DeepNet's constants (Wang et al. 2022, table 1): the residual scale alpha and the init gain beta.
//   encoder-only (N) or decoder-only (M):  alpha = (2N)^(1/4),              beta = (8N)^(-1/4)
//   encoder-decoder, encoder:              alpha = 0.81 (N^4 M)^(1/16),     beta = 0.87 (N^4 M)^(-1/16)
//   encoder-decoder, decoder:              alpha = (3M)^(1/4),              beta = (12M)^(-1/4)
struct DeepNormConstants {
  double encoder_alpha = 1.0, encoder_beta = 1.0, decoder_alpha = 1.0, decoder_beta = 1.0;
};
// One of the two counts may be 0 (an encoder-only or decoder-only stack).
DeepNormConstants deepnorm_constants(int64_t encoder_layers, int64_t decoder_layers);
// DeepNet's initialisation of a block: xavier_normal with gain beta for the value and output
// projections and every MLP (or expert) Linear, gain 1 for the query and key projections; biases 0.
void deepnorm_init(TransformerBlock& block, double beta, Generator& gen);

}  // namespace nf::nn
