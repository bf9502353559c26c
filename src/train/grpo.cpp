// GRPO's rollouts (batched decode over one KV cache per completion), rewards, advantages and loss,
// and the grpo objective of training on them.
#include "nanoformer/train/grpo.h"

#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <optional>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/infer/decode_step.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_use.h"
#include "nanoformer/infer/tool_transcript.h"
#include "nanoformer/train/call_reward.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/loss.h"
#include "nanoformer/ops/view.h"
#include "nanoformer/train/dpo.h"
#include "nanoformer/train/objective.h"

namespace nf::train {

std::vector<double> group_advantages(const std::vector<double>& rewards, int64_t group_size, bool scale_by_std) {
  NF_CHECK(group_size > 0 && rewards.size() % static_cast<size_t>(group_size) == 0, "group_advantages: ",
           rewards.size(), " rewards are not groups of ", group_size);
  std::vector<double> out(rewards.size());
  const auto G = static_cast<size_t>(group_size);
  for (size_t g = 0; g < rewards.size(); g += G) {
    double mean = 0, var = 0;
    for (size_t i = g; i < g + G; ++i) mean += rewards[i] / static_cast<double>(G);
    for (size_t i = g; i < g + G; ++i) var += (rewards[i] - mean) * (rewards[i] - mean) / static_cast<double>(G);
    const double scale = scale_by_std ? 1.0 / (std::sqrt(var) + 1e-4) : 1.0;
    for (size_t i = g; i < g + G; ++i) out[i] = (rewards[i] - mean) * scale;
  }
  return out;
}

Tensor token_log_probs(const Tensor& logits, const Tensor& targets, double temperature) {
  NF_CHECK(temperature > 0, "token_log_probs: temperature must be > 0, got ", temperature);
  const int64_t rows = logits.size(0), T = logits.size(1);
  const Tensor scaled = temperature == 1.0 ? logits : div(logits, temperature);  // the distribution sampled from
  const Tensor nll = cross_entropy(scaled.reshape({rows * T, logits.size(2)}), targets.reshape({rows * T}),
                                   data::kIgnoreIndex, Reduction::none);
  return neg(nll.reshape({rows, T}));
}

namespace {

PolicyLossOptions loss_options(const GrpoOptions& g, int64_t max_new_tokens) {
  PolicyLossOptions o;
  if (g.loss == "reinforce") {  // nanochat: token mean of -A logp, nothing clipped
    o.type = {PolicyRatio::clip, PolicyAggregation::token};
    o.epsilon_low = 1.0;
    o.epsilon_high = std::numeric_limits<double>::infinity();
  } else {
    o.type = policy_loss_type_from_name(g.loss);
    o.epsilon_low = g.epsilon_low;
    o.epsilon_high = g.epsilon_high;
  }
  o.beta = g.beta;
  o.max_completion_length = max_new_tokens;
  return o;
}

}  // namespace

GrpoStep::GrpoStep(const TrainConfig& config)
    : config_(config), loss_options_(loss_options(config.grpo, config.grpo.max_new_tokens)),
      verifier_(config.grpo) {
  const std::string& path = config_.data.train_paths.at(0);
  records_ = eval::load_task_records(path, eval::TaskLayout::gsm8k);
  tokenizer_ = tokenizer::load_tokenizer(config_.data.tokenizer);
  const infer::ToolOptions& tools = config_.grpo.tools;
  if (tools.any() && !tokenizer_->token_id("<|python_start|>")) {  // a chat-template model's tools: its template
    const std::string name = config_.data.chat_template.empty()
                                 ? tokenizer::default_chat_template(*tokenizer_, config_.data.tokenizer)
                                 : config_.data.chat_template;
    NF_CHECK(!name.empty(), "train: --tools: the tokenizer ", config_.data.tokenizer,
             " has no chat template to call tools through (a tokenizer_config.json beside it, or --chat-template)");
    chat_template_ = tokenizer::make_chat_template(name, *tokenizer_);
  }
  tools_ = infer::make_tool_use(tools, *tokenizer_, chat_template_.get());  // throws naming what is missing
  const std::string offered = tools_ ? tools_->offered_tools() : std::string();
  for (const eval::TaskRecord& r : records_) {
    std::vector<int64_t> ids;
    const std::vector<tokenizer::TokenId> encoded =
        chat_template_ ? chat_template_->render_for_completion(std::vector<tokenizer::ChatMessage>{{"user", r.question}}, offered)
                       : tokenizer_->encode(eval::task_context(r, {}));
    for (tokenizer::TokenId id : encoded) ids.push_back(static_cast<int64_t>(id));
    const auto n = static_cast<int64_t>(ids.size());
    NF_CHECK(n + config_.grpo.max_new_tokens <= config_.data.context, "train: ", path, ":", r.line, ": the prompt's ",
             n, " tokens and --max-new-tokens ", config_.grpo.max_new_tokens, " exceed --context ",
             config_.data.context);
    for (int64_t id : ids)
      NF_CHECK(config_.data.vocab_size == 0 || id < config_.data.vocab_size, "train: ", path, ":", r.line,
               ": token id ", id, " is not below the model's vocabulary size ", config_.data.vocab_size);
    prompt_ids_.push_back(std::move(ids));
  }
}

GrpoRollouts GrpoStep::rollout(models::DecoderLM& policy, int64_t step) const {
  NoGradGuard no_grad;
  const bool was_training = policy.is_training();
  policy.eval();
  const GrpoOptions& g = config_.grpo;
  const int64_t B = config_.data.batch_size, G = g.group_size, R = B * G, N = prompts();
  const int64_t V = policy.config().vocab_size;
  // the prompts of batch `batch`: positions batch B .. batch B + B - 1 of the passes' shuffles
  const int64_t batch = step / g.iterations;
  std::vector<size_t> chosen;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t k = batch * B + i;
    chosen.push_back(eval::fewshot_indices(config_.data.seed, static_cast<uint64_t>(k / N), static_cast<size_t>(N),
                                     static_cast<size_t>(N))[static_cast<size_t>(k % N)]);
  }
  const auto start = std::chrono::steady_clock::now();
  infer::SamplerConfig sampling;
  sampling.temperature = g.temperature;
  sampling.top_k = g.top_k;
  sampling.vocab_limit = std::min<int64_t>(V, static_cast<int64_t>(tokenizer_->vocab_size()));
  sampling.seed = config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step + 1));
  infer::Sampler sampler(sampling);  // shared: each row takes the next draw, in row order
  const std::vector<std::string> stop =
      g.stop.empty() ? std::vector<std::string>{"Question:", "</s>", "<|im_end|>"} : g.stop;
  // each row's text: the model's own turn by turn (a tool's forced answer ends a turn) with a
  // chat-template model's tools, else all of it (nanochat's calculator: its calls and answers too)
  const bool hermes = chat_template_ != nullptr;
  std::vector<infer::ToolTranscript> texts(static_cast<size_t>(R), infer::ToolTranscript(stop));
  GrpoRollouts out;
  std::vector<infer::CachedSequence> sequences;
  sequences.reserve(static_cast<size_t>(R));
  std::vector<infer::DecodeStream> streams;
  streams.reserve(static_cast<size_t>(R));
  std::vector<std::unique_ptr<infer::ToolUse>> tools(static_cast<size_t>(R));
  infer::StopCriteria stop_criteria{.max_new_tokens = g.max_new_tokens};
  if (hermes) stop_criteria.eos_ids = {static_cast<int64_t>(chat_template_->end_token())};  // forced ones do not end
  for (int64_t r = 0; r < R; ++r) {
    const auto i = static_cast<size_t>(r);
    const std::vector<int64_t>& prompt = prompt_ids_[chosen[static_cast<size_t>(r / G)]];
    sequences.emplace_back(policy, config_.data.context);
    const auto on_token = [&texts, &streams, this, hermes, i](int64_t id) {
      return texts[i].push(tokenizer_->token_bytes(static_cast<tokenizer::TokenId>(id)),
                           hermes && streams[i].forced().back());
    };
    if (tools_) {
      tools[i] = tools_->clone();
      tools[i]->on_turn = [&texts, i](const infer::ToolTurn& turn) { texts[i].record(turn); };
    }
    streams.emplace_back(sequences.back(), sampler, stop_criteria, prompt, nullptr,
                         infer::StreamCallbacks{.on_token = on_token, .tools = tools[i].get()});
  }
  for (int64_t b = 0; b < B; ++b) {  // each group's prompt prefilled once per sequence, in one forward
    std::vector<infer::CachedSequence*> group;
    for (int64_t j = 0; j < G; ++j) group.push_back(&sequences[static_cast<size_t>(b * G + j)]);
    const std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(G), prompt_ids_[chosen[static_cast<size_t>(b)]]);
    const Tensor logits = infer::CachedSequence::feed(group, prompts).to(DType::f32).contiguous();
    for (int64_t j = 0; j < G; ++j)
      streams[static_cast<size_t>(b * G + j)].accept({logits.data<float>() + j * V, static_cast<size_t>(V)});
  }
  std::vector<infer::DecodeStream*> all;
  for (infer::DecodeStream& s : streams) all.push_back(&s);
  infer::decode(all);
  std::vector<std::vector<int64_t>> history(static_cast<size_t>(R)), completion(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    infer::ToolTranscript& text = texts[static_cast<size_t>(r)];
    text.finish();
    out.completions.push_back(hermes ? text.final_answer() : text.turns().front());
    out.tool_calls.push_back(text.calls());
    out.invalid_tool_calls.push_back(text.invalid_calls());
    completion[static_cast<size_t>(r)] = streams[static_cast<size_t>(r)].generated();
    history[static_cast<size_t>(r)] = prompt_ids_[chosen[static_cast<size_t>(r / G)]];
    history[static_cast<size_t>(r)].insert(history[static_cast<size_t>(r)].end(), completion[static_cast<size_t>(r)].begin(),
                                           completion[static_cast<size_t>(r)].end());
  }
  out.rollout_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // prompt + completion as inputs and targets shifted by one, right-padded; loss on the completion
  // tokens the policy sampled (a tool's forced answers left out, as nanochat's chat_rl.py does)
  int64_t L = 0;
  for (int64_t r = 0; r < R; ++r)
    L = std::max<int64_t>(L, static_cast<int64_t>(history[static_cast<size_t>(r)].size()) - 1);
  std::vector<int64_t> inputs(static_cast<size_t>(R * L), 0), targets(static_cast<size_t>(R * L), data::kIgnoreIndex);
  std::vector<float> mask(static_cast<size_t>(R * L), 0.0f);
  for (int64_t r = 0; r < R; ++r) {
    const std::vector<int64_t>& seq = history[static_cast<size_t>(r)];
    const std::vector<bool>& forced = streams[static_cast<size_t>(r)].forced();
    const auto P = static_cast<int64_t>(seq.size() - completion[static_cast<size_t>(r)].size());
    for (int64_t t = 0; t + 1 < static_cast<int64_t>(seq.size()); ++t) {
      inputs[static_cast<size_t>(r * L + t)] = seq[static_cast<size_t>(t)];
      if (t + 1 >= P) {
        targets[static_cast<size_t>(r * L + t)] = seq[static_cast<size_t>(t + 1)];
        mask[static_cast<size_t>(r * L + t)] = forced[static_cast<size_t>(t + 1 - P)] ? 0.0f : 1.0f;
      }
    }
    out.completion_tokens += static_cast<int64_t>(completion[static_cast<size_t>(r)].size());
  }
  out.inputs = Tensor::from_vector(inputs, {R, L});
  out.targets = Tensor::from_vector(targets, {R, L});
  out.mask = Tensor::from_vector(mask, {R, L});
  // rewards and advantages
  const std::string& path = config_.data.train_paths.at(0);
  for (int64_t r = 0; r < R; ++r) {
    const eval::TaskRecord& record = records_[chosen[static_cast<size_t>(r / G)]];
    const double answer = verifier_.reward(record, eval::task_context(record, {}), out.completions[static_cast<size_t>(r)],
                                           path + ":" + std::to_string(record.line));
    out.answer_rewards.push_back(answer);
    out.rewards.push_back(hermes ? answer + call_reward(texts[static_cast<size_t>(r)], g.call_reward) : answer);
  }
  const std::vector<double> advantages =
      group_advantages(out.rewards, G, g.scale_rewards && g.loss != "reinforce");
  out.advantages = Tensor::from_vector(std::vector<float>(advantages.begin(), advantages.end()), {R});
  if (g.iterations > 1)
    out.old_logps = token_log_probs(policy.forward(out.inputs).logits, out.targets, g.temperature).detach();
  policy.train(was_training);
  return out;
}

PolicyLoss GrpoStep::loss(models::DecoderLM& policy, models::DecoderLM* reference, const GrpoRollouts& rollouts) const {
  Tensor ref_logps;
  if (config_.grpo.beta > 0) {
    NoGradGuard no_grad;
    ref_logps = token_log_probs(reference_logits(policy, reference, rollouts.inputs), rollouts.targets,
                                config_.grpo.temperature);
  }
  // at the sampling temperature, as TRL: the policy's log-probs are those of the distribution sampled
  const Tensor logps = token_log_probs(policy.forward(rollouts.inputs).logits, rollouts.targets,
                                       config_.grpo.temperature);
  const DType dtype = logps.dtype();
  return policy_loss(logps, rollouts.old_logps.defined() ? rollouts.old_logps.to(dtype) : Tensor(),
                     ref_logps.defined() ? ref_logps.to(dtype) : Tensor(), rollouts.advantages.to(dtype),
                     rollouts.mask.to(dtype), loss_options_);
}

GrpoMetrics GrpoStep::metrics(const GrpoRollouts& rollouts, const PolicyLoss& loss) const {
  GrpoMetrics m;
  const auto n = static_cast<double>(rollouts.rewards.size());
  for (size_t i = 0; i < rollouts.rewards.size(); ++i) {
    m.reward += rollouts.rewards[i] / n;
    m.accuracy += (rollouts.answer_rewards[i] >= 1.0 ? 1.0 : 0.0) / n;
    m.tool_calls += static_cast<double>(rollouts.tool_calls[i]) / n;
    m.invalid_tool_calls += static_cast<double>(rollouts.invalid_tool_calls[i]) / n;
  }
  for (double r : rollouts.rewards) m.reward_std += (r - m.reward) * (r - m.reward) / n;
  m.reward_std = std::sqrt(m.reward_std);
  m.kl = loss.kl;
  m.clip_fraction = loss.clip_fraction();
  m.completion_length = static_cast<double>(rollouts.completion_tokens) / n;
  m.rollout_tokens_per_s = static_cast<double>(rollouts.completion_tokens) / std::max(rollouts.rollout_seconds, 1e-9);
  return m;
}

namespace {

// One micro-batch a step: the rollouts (sampled anew every `iterations` steps) and their loss.
class GrpoObjective final : public TrainingObjective {
 public:
  explicit GrpoObjective(const TrainConfig& config) : TrainingObjective(config), grpo_(config) {}

  int64_t rows_per_batch() const override { return config_.data.batch_size * config_.grpo.group_size; }
  bool reads_batches() const override { return false; }
  bool needs_reference() const override { return config_.grpo.beta > 0; }
  bool next_loss_is_reproducible() const override { return false; }
  std::string describe_data() const override {
    return std::to_string(grpo_.prompts()) + " prompts of " + config_.data.train_paths[0] + " (gsm8k layout)";
  }
  std::string describe() const override {
    const GrpoOptions& g = config_.grpo;
    char text[600];
    std::snprintf(text, sizeof text, "grpo, %s loss, %lld completions per prompt, advantages %s, epsilon %g / %g, beta %g",
                  g.loss.c_str(), static_cast<long long>(g.group_size),
                  g.scale_rewards && g.loss != "reinforce" ? "(r - mean) / (std + 1e-4)" : "r - mean", g.epsilon_low,
                  g.epsilon_high, g.beta);
    std::string line = text;
    if (g.beta > 0)
      line += std::string(", reference: ") + (in_.reference ? "the starting model (a frozen copy)" : "the base (LoRA adapters off)");
    std::snprintf(text, sizeof text, ", %lld iteration(s) per rollout; sampling: temperature %g, top-k %lld, max new tokens %lld; verifier: %s",
                  static_cast<long long>(g.iterations), g.temperature, static_cast<long long>(g.top_k),
                  static_cast<long long>(g.max_new_tokens), g.verifier.c_str());
    line += text;
    if (g.tools.any()) {
      std::string names;
      for (const std::string& t : g.tools.tools) names += (names.empty() ? "" : ", ") + t;
      for (const std::string& t : g.tools.commands) names += (names.empty() ? "" : ", ") + t.substr(0, t.find('='));
      std::snprintf(text, sizeof text, " up to %lld tool turn(s), call reward %g", static_cast<long long>(g.tools.max_turns),
                    g.call_reward);
      line += "; tools: " + names +
              (grpo_.calls_tools_by_template() ? " (Hermes calls through the chat template," + std::string(text) + ")"
                                               : " (nanochat's calculator)");
    }
    if (g.verifier == "command")
      for (const std::string& a : g.verifier_command) line += " " + a;
    return line;
  }

  std::vector<MicroBatchSize> begin_step(int64_t step) override {
    if (!rollouts_ || step % config_.grpo.iterations == 0) rollouts_ = grpo_.rollout(policy(), step);
    return {{1.0, rollouts_->completion_tokens}};
  }
  MicroBatchLoss loss(size_t) override {
    loss_ = grpo_.loss(policy(), in_.reference, *rollouts_);
    return {loss_.loss, {}};
  }
  ObjectiveMetrics end_step() override {  // TRL's names
    const GrpoMetrics m = grpo_.metrics(*rollouts_, loss_);
    ObjectiveMetrics out{{{"reward", m.reward},
                          {"reward_std", m.reward_std},
                          {"accuracy", m.accuracy},
                          {config_.grpo.loss == "cispo" ? "cispo_clip_ratio" : "clip_ratio/region_mean", m.clip_fraction},
                          {"completions/mean_length", m.completion_length},
                          {"rollout_tokens_per_s", m.rollout_tokens_per_s}},
                         "",
                         ""};
    if (config_.grpo.beta > 0) out.fields.emplace_back("kl", m.kl);
    if (grpo_.calls_tools_by_template()) {
      out.fields.emplace_back("tools/calls", m.tool_calls);
      out.fields.emplace_back("tools/invalid_calls", m.invalid_tool_calls);
    }
    char status[96];
    std::snprintf(status, sizeof status, "reward %.3f acc %.2f len %.1f", m.reward, m.accuracy, m.completion_length);
    out.status = status;
    return out;
  }

 private:
  GrpoStep grpo_;
  std::optional<GrpoRollouts> rollouts_;  // the rollouts the current steps train on
  PolicyLoss loss_;
};

}  // namespace

std::unique_ptr<TrainingObjective> make_grpo_objective(const TrainConfig& config) {
  return std::make_unique<GrpoObjective>(config);
}

}  // namespace nf::train
