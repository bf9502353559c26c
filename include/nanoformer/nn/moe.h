#pragma once
// Mixture of Experts: a router (the "gate") scores every token against n_experts expert FFNs and
// mixes the outputs of the experts it selects; shared experts, when configured, see every token.
// Tokens are grouped per expert, so each expert runs once on all of its rows (one matmul per
// Linear), never once per token.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {

enum class MoERouting {
  // reference 000: the top-k router logits, then a softmax over those k:  w = softmax(topk(z))
  topk_then_softmax,
  // reference 002 (MiniMind's MoEGate): softmax over all experts, then the top-k probabilities,
  // divided by their sum (+ 1e-20) when norm_topk_prob and top_k > 1:  w = topk(softmax(z))
  softmax_then_topk,
  // reference 001: dense soft gating, every expert on every token:  y = sum_e softmax(z)_e E_e(x)
  dense,
};

struct MoEConfig {
  int64_t dim = 0;                 // model width D (input and output of every expert)
  int64_t n_experts = 4;           // routed experts E >= 1
  int64_t top_k = 2;               // experts per token, 1 <= k <= E (unused by dense gating)
  MoERouting routing = MoERouting::softmax_then_topk;
  bool norm_topk_prob = true;      // softmax_then_topk only
  int64_t n_shared_experts = 0;    // experts applied to every token and added
  bool gate_bias = false;          // a bias on the router Linear (000 and 001 have one, 002 not)
  // Load-balancing loss (reference 002), computed in training mode when alpha > 0 (top-k rules only):
  //   aux = alpha * E * sum_i f_i P_i,  f_i = fraction of tokens with expert i among their top k,
  //   P_i = mean router probability softmax(z)_i;  over the whole batch, or per sequence and
  //   averaged over the batch when seq_aux (x must then be (B, T, D)).
  double aux_loss_alpha = 0.1;
  bool seq_aux = true;
};

// `config` validated: an error naming the option and value when dim, n_experts or top_k is out of
// range, or a load-balancing loss is asked of dense gating. An MoE has no defaults to fill in (a
// block gives it its MLP's dim: see nn::resolved(BlockConfig)).
MoEConfig resolved(const MoEConfig& config);

struct MoEOutput {
  Tensor output;                          // x's shape
  Tensor aux_loss;                        // scalar (0 in eval mode or when alpha is 0)
  std::vector<int64_t> tokens_per_expert; // (token, slot) pairs routed to each expert
};

// Builds one expert (a UnaryModule mapping (N, D) -> (N, D)) from the MoE's generator.
using ExpertFactory = std::function<std::shared_ptr<UnaryModule>(Generator&)>;

// Parameters: gate.weight (E, D) [gate.bias (E)], experts.<e>.<...>, shared_experts.<s>.<...>
// (MiniMind's names). The gate is initialised as torch.nn.Linear (MiniMind's kaiming_uniform,
// a = sqrt(5)); experts come from make_expert, routed ones first, then the shared ones.
class MoE : public UnaryModule {
 public:
  MoE(const MoEConfig& config, const ExpertFactory& make_expert, Generator& gen = default_generator());

  // x (..., D) -> output (..., D), the auxiliary loss and the per-expert counts.
  MoEOutput route(const Tensor& x);
  // route(x).output; keeps the auxiliary loss and counts for aux_loss() / tokens_per_expert(),
  // so an MoE can stand wherever a block expects an MLP.
  Tensor forward(const Tensor& x) override;
  const Tensor& aux_loss() const { return last_aux_loss_; }
  const std::vector<int64_t>& tokens_per_expert() const { return last_counts_; }
  const MoEConfig& config() const { return config_; }

  std::shared_ptr<Linear> gate;
  std::shared_ptr<ModuleList<UnaryModule>> experts, shared_experts;

 private:
  MoEConfig config_;
  Tensor last_aux_loss_;
  std::vector<int64_t> last_counts_;
};

}  // namespace nf::nn
