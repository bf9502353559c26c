// PPO's critic: the policy's model with a value head, and its file beside the training checkpoint.
#include "nanoformer/train/critic.h"

#include <filesystem>

#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/tensor_checksums.h"
#include "nanoformer/ops/view.h"

namespace nf::train {
namespace {

constexpr const char* kFormat = "nanoformer-ppo-critic";
constexpr const char* kCriticPrefix = "critic/";
constexpr const char* kOptimizerPrefix = "critic_optimizer/";
constexpr const char* kRolloutPrefix = "rollout/";

}  // namespace

Critic::Critic(const models::DecoderLM& policy, Generator& gen) : nn::Module("Critic") {
  model = register_module("model", std::make_shared<models::DecoderLM>(policy.config(), gen));
  model->load_state_dict(policy.state_dict());
  if (model->output) model->output->requires_grad_(false);  // replaced by the value head
  value_head = register_module("value_head", std::make_shared<nn::Linear>(policy.config().dim, 1, true, gen));
}

// value_head(norm(h)).squeeze(-1), as CriticModel.forward
Tensor Critic::values(const Tensor& ids) { return squeeze(value_head->forward(model->final_hidden(ids)), -1); }

std::string critic_path(const std::string& checkpoint) {
  std::filesystem::path p(checkpoint);
  p.replace_extension();
  return p.string() + ".critic.safetensors";
}

void save_critic(const std::string& path, const Critic& critic, const optim::OptimizerSet& optimizer, int64_t step,
                 const PpoRunState& run) {
  std::vector<nn::NamedTensor> tensors;
  for (const auto& [name, t] : critic.state_dict()) tensors.emplace_back(kCriticPrefix + name, t);
  for (const auto& [name, t] : optimizer.state_dict()) tensors.emplace_back(kOptimizerPrefix + name, t);
  for (const auto& [name, t] : run.rollout) tensors.emplace_back(kRolloutPrefix + name, t);
  std::map<std::string, std::string> metadata{
      {"format", kFormat}, {"step", std::to_string(step)}, {"ppo_state", run.counters}};
  metadata[io::kChecksumsKey] = io::tensor_checksums(tensors);
  io::save_safetensors(path, tensors, metadata);
}

PpoRunState load_critic(const std::string& path, Critic& critic, optim::OptimizerSet& optimizer, int64_t step) {
  NF_CHECK(std::filesystem::exists(path), "train --resume: ", path,
           " is missing: a PPO checkpoint's critic is saved beside it");
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const auto& meta = file.metadata();
  const auto format = meta.find("format");
  NF_CHECK(format != meta.end() && format->second == kFormat, path, ": not a PPO critic (its metadata has no \"format\": \"",
           kFormat, "\")");
  const auto saved_step = meta.find("step");
  NF_CHECK(saved_step != meta.end() && saved_step->second == std::to_string(step), path, ": the critic of step ",
           saved_step == meta.end() ? std::string("?") : saved_step->second, ", not of the checkpoint's step ", step);
  NF_CHECK(io::has_tensor_checksums(file), path, ": no checksums in its metadata");
  io::verify_tensor_checksums(file);
  const auto counters = meta.find("ppo_state");
  NF_CHECK(counters != meta.end(), path, ": no \"ppo_state\" in its metadata");
  PpoRunState run;
  run.counters = counters->second;
  nn::StateDict weights, state;
  const std::string critic_prefix = kCriticPrefix, optimizer_prefix = kOptimizerPrefix, rollout_prefix = kRolloutPrefix;
  for (const io::TensorEntry& e : file.entries()) {
    if (e.name.rfind(critic_prefix, 0) == 0) {
      weights[e.name.substr(critic_prefix.size())] = file.load(e.name);
    } else if (e.name.rfind(optimizer_prefix, 0) == 0) {
      state[e.name.substr(optimizer_prefix.size())] = file.load(e.name);
    } else if (e.name.rfind(rollout_prefix, 0) == 0) {
      run.rollout[e.name.substr(rollout_prefix.size())] = file.load(e.name);
    } else {
      NF_FAIL(path, ": unexpected tensor '", e.name, "' (a critic holds critic/*, critic_optimizer/* and rollout/*)");
    }
  }
  try {
    critic.load_state_dict(weights);
    optimizer.load_state_dict(state);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return run;
}

}  // namespace nf::train
