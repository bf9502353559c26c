// Parameter groups: nanoGPT's decay rule, the Muon split and nanochat's preset (param_groups.h).
#include "nanoformer/optim/param_groups.h"

#include <cmath>
#include <set>

#include "nanoformer/core/error.h"

namespace nf::optim {
namespace {

// Trainable parameters in registration order, each tensor once.
std::vector<nn::NamedTensor> trainable(const nn::Module& model) {
  std::vector<nn::NamedTensor> out;
  std::set<const TensorImpl*> seen;
  for (auto& [name, p] : model.named_parameters())
    if (p.requires_grad() && seen.insert(p.impl()).second) out.emplace_back(name, p);
  return out;
}

bool is_block_matrix(const nn::NamedTensor& p) { return p.first.starts_with("layers.") && p.second.dim() == 2; }

// Appends the group unless it is empty.
void add_group(std::vector<ParamGroup>& groups, ParamGroup group) {
  if (!group.params.empty()) groups.push_back(std::move(group));
}

std::vector<ParamGroup> decay_groups(const std::vector<nn::NamedTensor>& params, double lr, double weight_decay) {
  ParamGroup decay({}, lr, weight_decay, "decay"), no_decay({}, lr, 0.0, "no_decay");
  for (const auto& [name, p] : params) (p.dim() >= 2 ? decay : no_decay).params.push_back(p);
  std::vector<ParamGroup> groups;
  add_group(groups, std::move(decay));
  add_group(groups, std::move(no_decay));
  return groups;
}

}  // namespace

std::vector<ParamGroup> default_param_groups(const nn::Module& model, double lr, double weight_decay) {
  return decay_groups(trainable(model), lr, weight_decay);
}

HybridParamGroups muon_param_groups(const nn::Module& model, double adamw_lr, double matrix_lr, double weight_decay) {
  ParamGroup matrices({}, matrix_lr, weight_decay, "matrices");
  std::vector<nn::NamedTensor> rest;
  for (const nn::NamedTensor& p : trainable(model)) {
    if (is_block_matrix(p)) matrices.params.push_back(p.second);
    else rest.push_back(p);
  }
  HybridParamGroups groups{.adamw = decay_groups(rest, adamw_lr, weight_decay), .muon = {}};
  add_group(groups.muon, std::move(matrices));
  return groups;
}

double nanochat_lr_scale(int64_t d_model) { return std::pow(static_cast<double>(d_model) / 768.0, -0.5); }

HybridParamGroups nanochat_param_groups(const nn::Module& model, const NanochatLearningRates& rates) {
  const nn::StateDict state = model.state_dict();
  const auto embedding = state.find("tok_embeddings.weight");
  NF_CHECK(embedding != state.end() && embedding->second.dim() == 2,
           "optimizer nanochat: the model has no 2-D tok_embeddings.weight (the preset groups a decoder LM's "
           "parameters by their names)");
  const bool tied = !state.count("output.weight");
  const double scale = nanochat_lr_scale(embedding->second.size(1));  // (d / 768)^-0.5
  ParamGroup unembedding({}, rates.unembedding_lr * scale, rates.weight_decay, "unembedding");
  ParamGroup embeddings({}, rates.embedding_lr * scale, rates.weight_decay, "embedding");
  ParamGroup vectors({}, rates.vector_lr, 0.0, "vectors");
  ParamGroup matrices({}, rates.matrix_lr, 0.0, "matrices");
  for (const nn::NamedTensor& p : trainable(model)) {
    const std::string& name = p.first;
    if (name == "output.weight" || (tied && name == "tok_embeddings.weight")) unembedding.params.push_back(p.second);
    else if (name == "tok_embeddings.weight" || name == "pos_embeddings.weight") embeddings.params.push_back(p.second);
    else if (is_block_matrix(p)) matrices.params.push_back(p.second);
    else vectors.params.push_back(p.second);
  }
  HybridParamGroups groups;
  add_group(groups.adamw, std::move(unembedding));
  add_group(groups.adamw, std::move(embeddings));
  add_group(groups.adamw, std::move(vectors));
  add_group(groups.muon, std::move(matrices));
  return groups;
}

}  // namespace nf::optim
