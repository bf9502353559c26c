// The ppo objective: rollouts by GRPO's sampling and verifier (train/grpo.h), the critic's values,
// PPO's targets (train/ppo.h), then epochs x minibatches optimizer steps on them, one minibatch a
// trainer step; the critic steps with its own optimizer after each.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/eval/task_records.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/indexing.h"
#include "nanoformer/optim/grad_clip.h"
#include "nanoformer/optim/schedule.h"
#include "nanoformer/train/critic.h"
#include "nanoformer/train/dpo.h"
#include "nanoformer/train/grpo.h"
#include "nanoformer/train/objective.h"
#include "nanoformer/train/ppo.h"

namespace nf::train {
namespace {

// One rollout as the losses read it: prompt + response rows of C = L + 1 columns (ppo_rows).
struct PpoRollout {
  Tensor inputs, targets;          // (R, C) i64; targets -100 outside the responses
  Tensor old_logps, ref_logps;     // (R, C) f32, as sampled; ref undefined without KL
  PpoTargets ppo;                  // masks, rewards, values, advantages, returns
  std::vector<double> scores;
  int64_t response_tokens = 0;
  double rollout_seconds = 0;
};

class PpoObjective final : public TrainingObjective {
 public:
  explicit PpoObjective(const TrainConfig& config) : TrainingObjective(config), grpo_(config) {}

  int64_t rows_per_batch() const override { return config_.data.batch_size * config_.grpo.group_size; }
  bool reads_batches() const override { return false; }
  bool needs_reference() const override { return config_.ppo.kl_coef > 0; }
  bool next_loss_is_reproducible() const override { return false; }
  std::string describe_data() const override {
    return std::to_string(grpo_.prompts()) + " prompts of " + config_.data.train_paths[0] + " (gsm8k layout)";
  }
  std::string describe() const override {
    const PpoOptions& p = config_.ppo;
    const GrpoOptions& g = config_.grpo;
    char text[700];
    std::snprintf(text, sizeof text,
                  "ppo (%s style), %lld response(s) per prompt, gamma %g, lambda %g, clip %g / %g, value clip %g, "
                  "vf_coef %g, kl_coef %g (%s), %lld epoch(s) x %lld minibatch(es) per rollout, early stop at "
                  "approx KL %g; critic: a copy of the starting model with a value head, AdamW lr %g; sampling: "
                  "temperature %g, top-k %lld, max new tokens %lld; verifier: %s",
                  p.style.c_str(), static_cast<long long>(g.group_size), p.gamma, p.lam, g.epsilon_low, g.epsilon_high,
                  p.cliprange_value, p.vf_coef, p.kl_coef,
                  p.kl_coef == 0 ? "no reference" : p.style == "trl" ? "in the reward" : "a loss term",
                  static_cast<long long>(p.epochs), static_cast<long long>(p.minibatches), p.early_stop_kl,
                  p.critic_lr, g.temperature, static_cast<long long>(g.top_k),
                  static_cast<long long>(g.max_new_tokens), g.verifier.c_str());
    return text;
  }

  void prepare(const models::DecoderLM& policy) override {
    Generator gen(config_.seed ^ 0xC0FFEEull);  // the value head's draw
    critic_ = std::make_unique<Critic>(policy, gen);
    optim::OptimizerConfig oc = config_.optimizer;
    oc.name = "adamw";  // MiniMind's critic optimizer
    oc.lr = config_.ppo.critic_lr;
    critic_optimizer_ = std::make_unique<optim::OptimizerSet>(oc, *critic_);
    if (resumed_from_.empty()) return;
    const std::string path = critic_path(resumed_from_);
    restore(load_critic(path, *critic_, *critic_optimizer_, resumed_step_), path);
  }
  void resume(const std::string& checkpoint, int64_t step) override {
    resumed_from_ = checkpoint;
    resumed_step_ = step;
  }
  void save(const std::string& checkpoint, int64_t step) const override {
    PpoRunState run;
    nlohmann::json counters = {{"next_rollout", next_rollout_}, {"has_rollout", rollout_.has_value()}};
    if (rollout_) {  // the rollout the next steps train on, so that a resumed run continues it
      const PpoRollout& r = *rollout_;
      const PpoTargets& t = r.ppo;
      run.rollout = {{"inputs", r.inputs},           {"targets", r.targets},         {"old_logps", r.old_logps},
                     {"policy_mask", t.policy_mask}, {"value_mask", t.value_mask},   {"rewards", t.rewards},
                     {"values", t.values},           {"advantages", t.advantages},   {"returns", t.returns},
                     {"scores", Tensor::from_vector(r.scores, {static_cast<int64_t>(r.scores.size())})}};
      if (r.ref_logps.defined()) run.rollout["ref_logps"] = r.ref_logps;
      counters.update({{"rollout_step", rollout_step_}, {"stopped", stopped_}, {"response_tokens", r.response_tokens},
                       {"rollout_seconds", r.rollout_seconds}});
    }
    run.counters = counters.dump();
    save_critic(critic_path(checkpoint), *critic_, *critic_optimizer_, step, run);
  }

  std::vector<MicroBatchSize> begin_step(int64_t step) override {
    const int64_t per_rollout = config_.ppo.epochs * config_.ppo.minibatches;
    if (!rollout_ || stopped_ || step - rollout_step_ >= per_rollout) {
      rollout_ = make_rollout(next_rollout_++);
      rollout_step_ = step;
      stopped_ = false;
    }
    step_ = step;
    return {{1.0, rollout_->response_tokens}};
  }

  MicroBatchLoss loss(size_t) override {
    const PpoOptions& p = config_.ppo;
    const PpoRollout& r = *rollout_;
    const int64_t R = r.inputs.size(0), local = step_ - rollout_step_;
    const int64_t epoch = local / p.minibatches, mb = local % p.minibatches, size = R / p.minibatches;
    // MiniMind: a new permutation of the responses each epoch, minibatches of consecutive ones
    const std::vector<size_t> order = eval::fewshot_indices(config_.seed ^ static_cast<uint64_t>(next_rollout_),
                                                            static_cast<uint64_t>(epoch), static_cast<size_t>(R),
                                                            static_cast<size_t>(R));
    std::vector<int64_t> rows;
    for (int64_t i = mb * size; i < (mb + 1) * size; ++i) rows.push_back(static_cast<int64_t>(order[static_cast<size_t>(i)]));
    const Tensor idx = Tensor::from_vector(rows, {size});
    const auto pick = [&idx](const Tensor& t) { return t.defined() ? index_select(t, 0, idx) : Tensor(); };
    PpoTargets t{pick(r.ppo.policy_mask), pick(r.ppo.value_mask), pick(r.ppo.rewards),
                 pick(r.ppo.values),      pick(r.ppo.advantages), pick(r.ppo.returns)};
    const Tensor inputs = pick(r.inputs);
    const Tensor logps = token_log_probs(policy().forward(inputs).logits, pick(r.targets), config_.grpo.temperature);
    critic_->train();
    const Tensor values = critic_->values(inputs);
    loss_ = ppo_loss(logps, values, pick(r.old_logps), pick(r.ref_logps), t, p, config_.grpo.epsilon_low,
                     config_.grpo.epsilon_high);
    // MiniMind: past the threshold this minibatch's loss counts 0 and the rollout's updates end
    if (p.early_stop_kl > 0 && loss_.approx_kl > p.early_stop_kl) {
      stopped_ = true;
      return {mul(loss_.loss, 0.0), {}};
    }
    return {loss_.loss, {}};
  }

  ObjectiveMetrics end_step() override {
    // the critic's step: its gradient clipped on its own (MiniMind), the run's schedule shape
    const std::vector<Tensor> params = critic_optimizer_->parameters();
    double value_grad_norm = 0;
    if (config_.grad_clip > 0) {
      value_grad_norm = optim::clip_grad_norm(params, config_.grad_clip);
    } else {
      for (const Tensor& p : params)
        if (p.grad().defined()) value_grad_norm += optim::sum_of_squares(p.grad());
      value_grad_norm = std::sqrt(value_grad_norm);
    }
    critic_optimizer_->set_lr_factor(optim::learning_rate(config_.schedule, step_) / config_.schedule.lr);
    critic_optimizer_->step();
    critic_optimizer_->zero_grad();
    const PpoRollout& r = *rollout_;
    double reward = 0, accuracy = 0;
    for (double s : r.scores) {
      reward += s / static_cast<double>(r.scores.size());
      accuracy += (s >= 1.0 ? 1.0 : 0.0) / static_cast<double>(r.scores.size());
    }
    const double length = static_cast<double>(r.response_tokens) / static_cast<double>(r.scores.size());
    ObjectiveMetrics out{{{"reward", reward},
                          {"accuracy", accuracy},
                          {"policy_loss", loss_.policy.loss.item()},
                          {"value_loss", loss_.value.loss.item()},
                          {"approx_kl", loss_.approx_kl},
                          {"clipfrac", loss_.policy.clip_fraction()},
                          {"vf_clipfrac", loss_.value.clip_fraction},
                          {"critic_grad_norm", value_grad_norm},
                          {"completions/mean_length", length},
                          {"rollout_tokens_per_s", static_cast<double>(r.response_tokens) / std::max(r.rollout_seconds, 1e-9)},
                          {"early_stop", stopped_ ? 1.0 : 0.0}},
                         "",
                         ""};
    if (config_.ppo.kl_coef > 0 && config_.ppo.style == "minimind") out.fields.emplace_back("kl_ref", loss_.policy.kl);
    char status[120];
    std::snprintf(status, sizeof status, "reward %.3f acc %.2f vloss %.3f kl %.4f", reward, accuracy,
                  loss_.value.loss.item(), loss_.approx_kl);
    out.status = status;
    return out;
  }

 private:
  PpoRollout make_rollout(int64_t index) {
    GrpoRollouts g = grpo_.rollout(policy(), index);
    NoGradGuard no_grad;
    const PpoRows rows = ppo_rows(g.inputs, g.targets, g.mask);
    PpoRollout out;
    out.inputs = rows.inputs;
    out.targets = rows.targets;
    for (int64_t n : rows.lengths) out.response_tokens += n;
    out.scores = g.rewards;
    out.rollout_seconds = g.rollout_seconds;
    const bool was_training = policy().is_training();
    policy().eval();
    critic_->eval();
    out.old_logps =
        token_log_probs(policy().forward(out.inputs).logits, out.targets, config_.grpo.temperature).to(DType::f32);
    if (config_.ppo.kl_coef > 0)
      out.ref_logps = token_log_probs(reference_logits(policy(), in_.reference, out.inputs), out.targets,
                                      config_.grpo.temperature).to(DType::f32);
    const Tensor values = critic_->values(out.inputs).to(DType::f32);
    policy().train(was_training);
    out.ppo = ppo_targets(out.old_logps, out.ref_logps, values, out.scores, rows.starts, rows.lengths,
                          config_.grpo.max_new_tokens, config_.ppo, rows.sampled);
    return out;
  }

  // A resumed run's counters and rollout, as save() wrote them.
  void restore(const PpoRunState& run, const std::string& path) {
    try {
      const nlohmann::json c = nlohmann::json::parse(run.counters);
      next_rollout_ = c.at("next_rollout").get<int64_t>();
      if (!c.at("has_rollout").get<bool>()) return;
      const auto at = [&](const char* name) {
        NF_CHECK(run.rollout.count(name), path, ": no rollout tensor '", name, "'");
        return run.rollout.at(name);
      };
      PpoRollout r;
      r.inputs = at("inputs");
      r.targets = at("targets");
      r.old_logps = at("old_logps");
      if (config_.ppo.kl_coef > 0) r.ref_logps = at("ref_logps");
      r.ppo = {at("policy_mask"), at("value_mask"), at("rewards"), at("values"), at("advantages"), at("returns")};
      r.scores = at("scores").to_vector<double>();
      r.response_tokens = c.at("response_tokens").get<int64_t>();
      r.rollout_seconds = c.at("rollout_seconds").get<double>();
      NF_CHECK(run.rollout.size() == (r.ref_logps.defined() ? 11u : 10u), path, ": ", run.rollout.size(),
               " rollout tensors, not those of this run's rollout");
      rollout_ = std::move(r);
      rollout_step_ = c.at("rollout_step").get<int64_t>();
      stopped_ = c.at("stopped").get<bool>();
    } catch (const nlohmann::json::exception& e) {
      NF_FAIL(path, ": ppo_state is malformed (", e.what(), ")");
    }
  }

  GrpoStep grpo_;
  std::unique_ptr<Critic> critic_;
  std::unique_ptr<optim::OptimizerSet> critic_optimizer_;
  std::optional<PpoRollout> rollout_;
  int64_t rollout_step_ = 0, next_rollout_ = 0, step_ = 0;
  bool stopped_ = false;
  PpoLoss loss_;
  std::string resumed_from_;
  int64_t resumed_step_ = 0;
};

}  // namespace

std::unique_ptr<TrainingObjective> make_ppo_objective(const TrainConfig& config) {
  return std::make_unique<PpoObjective>(config);
}

}  // namespace nf::train
