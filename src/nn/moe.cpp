// Mixture of Experts: routing (three rules), grouped expert dispatch, shared experts and the
// load-balancing auxiliary loss.
#include "nanoformer/nn/moe.h"

#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/reduce.h"
#include "nanoformer/ops/softmax.h"
#include "nanoformer/ops/topk.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

MoEConfig resolved(const MoEConfig& c) {
  NF_CHECK(c.dim >= 1, "MoE: dim ", c.dim, " must be >= 1");
  NF_CHECK(c.n_experts >= 1, "MoE: n_experts ", c.n_experts, " must be >= 1");
  NF_CHECK(c.n_shared_experts >= 0, "MoE: n_shared_experts ", c.n_shared_experts, " must be >= 0");
  NF_CHECK(c.aux_loss_alpha >= 0.0, "MoE: aux_loss_alpha ", c.aux_loss_alpha, " must be >= 0");
  if (c.routing == MoERouting::dense) {
    NF_CHECK(c.aux_loss_alpha == 0.0, "MoE: aux_loss_alpha ", c.aux_loss_alpha,
             " needs a top-k routing rule (dense gating sends every token to every expert); set it to 0");
  } else {
    NF_CHECK(c.top_k >= 1, "MoE: top_k ", c.top_k, " must be >= 1");
    NF_CHECK(c.top_k <= c.n_experts, "MoE: top_k ", c.top_k, " is larger than n_experts ", c.n_experts);
  }
  return c;
}

MoE::MoE(const MoEConfig& config, const ExpertFactory& make_expert, Generator& gen)
    : UnaryModule("MoE"), config_(resolved(config)) {
  gate = register_module("gate", std::make_shared<Linear>(config.dim, config.n_experts, config.gate_bias, gen));
  experts = register_module("experts", std::make_shared<ModuleList<UnaryModule>>());
  for (int64_t e = 0; e < config.n_experts; ++e) experts->push_back(make_expert(gen));
  shared_experts = register_module("shared_experts", std::make_shared<ModuleList<UnaryModule>>());
  for (int64_t s = 0; s < config.n_shared_experts; ++s) shared_experts->push_back(make_expert(gen));
}

MoEOutput MoE::route(const Tensor& x) {
  const int64_t D = config_.dim, E = config_.n_experts;
  NF_CHECK(x.dim() >= 1 && x.size(-1) == D, "MoE: input ", shape_str(x.shape()), " does not end in dim ", D);
  const int64_t N = x.numel() / D;
  const Tensor xf = reshape(x, {N, D});  // (N, D)
  const Tensor logits = gate->forward(xf);  // (N, E)
  const Tensor probs = softmax(logits, -1);  // (N, E)
  MoEOutput r;
  Tensor y;
  if (config_.routing == MoERouting::dense) {
    // y = sum_e softmax(z)_e E_e(x)
    for (int64_t e = 0; e < E; ++e) {
      const Tensor term = mul((*experts)[static_cast<size_t>(e)]->forward(xf), narrow(probs, 1, e, 1));
      y = y.defined() ? add(y, term) : term;
    }
    r.tokens_per_expert.assign(static_cast<size_t>(E), N);
    r.aux_loss = zeros({}, x.dtype());
  } else {
    const int64_t k = config_.top_k;
    Tensor weights;  // (N, k)
    TopK chosen;
    if (config_.routing == MoERouting::topk_then_softmax) {
      chosen = topk(logits, k);
      weights = softmax(chosen.values, -1);  // w = softmax(topk(z))
    } else {
      chosen = topk(probs, k);
      weights = chosen.values;  // w = topk(softmax(z)), / (sum w + 1e-20) when normalised
      if (config_.norm_topk_prob && k > 1) weights = div(weights, add(sum(weights, {-1}, true), 1e-20));
    }
    const std::vector<int64_t> choice = chosen.indices.to_vector<int64_t>();  // (N * k): expert of (token, slot)
    // The (token, slot) pairs of each expert, in token order.
    std::vector<std::vector<int64_t>> pairs(static_cast<size_t>(E));
    for (int64_t p = 0; p < N * k; ++p) pairs[static_cast<size_t>(choice[static_cast<size_t>(p)])].push_back(p);
    const Tensor flat_weights = reshape(weights, {N * k});
    std::vector<Tensor> rows_of, outputs;
    for (int64_t e = 0; e < E; ++e) {
      const std::vector<int64_t>& ps = pairs[static_cast<size_t>(e)];
      r.tokens_per_expert.push_back(static_cast<int64_t>(ps.size()));
      if (ps.empty()) continue;
      std::vector<int64_t> tokens(ps.size());
      for (size_t i = 0; i < ps.size(); ++i) tokens[i] = ps[i] / k;
      const Tensor token_ids = Tensor::from_vector<int64_t>(tokens, {static_cast<int64_t>(tokens.size())});
      const Tensor pair_ids = Tensor::from_vector<int64_t>(ps, {static_cast<int64_t>(ps.size())});
      // y_e = w[pairs] * E_e(x[tokens]):  one expert call on all of its rows (n_e, D)
      const Tensor expert_out = (*experts)[static_cast<size_t>(e)]->forward(index_select(xf, 0, token_ids));
      outputs.push_back(mul(expert_out, unsqueeze(index_select(flat_weights, 0, pair_ids), 1)));
      rows_of.push_back(token_ids);
    }
    // y[token] += y_e rows, one scatter for all experts
    y = index_add(zeros({N, D}, x.dtype()), 0, cat(rows_of, 0), cat(outputs, 0));
    if (is_training() && config_.aux_loss_alpha > 0.0) {
      // aux = alpha * E / S * sum_{s, i} f_si P_si over S sequences (S = 1: the whole batch)
      const int64_t S = config_.seq_aux && x.dim() == 3 ? x.size(0) : 1, T = N / S;
      std::vector<double> f(static_cast<size_t>(S * E), 0.0);  // f_si = tokens of s choosing i / T
      for (int64_t p = 0; p < N * k; ++p) f[static_cast<size_t>((p / k) / T * E + choice[static_cast<size_t>(p)])] += 1.0 / static_cast<double>(T);
      const Tensor P = mean(reshape(probs, {S, T, E}), {1});  // (S, E)
      r.aux_loss = mul(sum(mul(P, Tensor::of(f, {S, E}, x.dtype()))),
                       config_.aux_loss_alpha * static_cast<double>(E) / static_cast<double>(S));
    } else {
      r.aux_loss = zeros({}, x.dtype());
    }
  }
  // shared experts: y += S_j(x) for every j
  for (const auto& shared : *shared_experts) y = add(y, shared->forward(xf));
  r.output = reshape(y, x.shape());
  return r;
}

Tensor MoE::forward(const Tensor& x) {
  MoEOutput r = route(x);
  last_aux_loss_ = r.aux_loss;
  last_counts_ = std::move(r.tokens_per_expert);
  return r.output;
}

}  // namespace nf::nn
