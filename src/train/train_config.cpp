// TrainConfig: validation, JSON round trip, and what a resume may not change.
#include "nanoformer/train/train_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::train {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<Precision, const char*>, 3> kPrecisions = {
    {{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}}};

json data_to_json(const data::DataOptions& d) {
  return {{"train_paths", d.train_paths}, {"val_paths", d.val_paths}, {"val_fraction", d.val_fraction},
          {"tokenizer", d.tokenizer},     {"batch_size", d.batch_size}, {"context", d.context},
          {"seed", d.seed},               {"vocab_size", d.vocab_size}, {"chat_template", d.chat_template},
          {"pad_id", d.pad_id},           {"jsonl_field", d.jsonl_field}, {"pad_to_context", d.pad_to_context}};
}

data::DataOptions data_from_json(const json& j) {
  data::DataOptions d;
  d.train_paths = j.at("train_paths").get<std::vector<std::string>>();
  d.val_paths = j.at("val_paths").get<std::vector<std::string>>();
  d.val_fraction = j.at("val_fraction").get<double>();
  d.tokenizer = j.at("tokenizer").get<std::string>();
  d.batch_size = j.at("batch_size").get<int64_t>();
  d.context = j.at("context").get<int64_t>();
  d.seed = j.at("seed").get<uint64_t>();
  d.vocab_size = j.at("vocab_size").get<int64_t>();
  d.chat_template = j.at("chat_template").get<std::string>();
  d.pad_id = j.at("pad_id").get<int64_t>();
  d.jsonl_field = j.at("jsonl_field").get<std::string>();
  d.pad_to_context = j.at("pad_to_context").get<bool>();
  return d;
}

json schedule_to_json(const optim::ScheduleConfig& s) {
  return {{"kind", optim::schedule_kind_name(s.kind)}, {"lr", s.lr},
          {"total_steps", s.total_steps},       {"warmup_steps", s.warmup_steps},
          {"min_lr", s.min_lr},                 {"warmdown_fraction", s.warmdown_fraction},
          {"final_lr_fraction", s.final_lr_fraction}};
}

optim::ScheduleConfig schedule_from_json(const json& j) {
  optim::ScheduleConfig s;
  s.kind = optim::schedule_kind_from_name(j.at("kind").get<std::string>());
  s.lr = j.at("lr").get<double>();
  s.total_steps = j.at("total_steps").get<int64_t>();
  s.warmup_steps = j.at("warmup_steps").get<int64_t>();
  s.min_lr = j.at("min_lr").get<double>();
  s.warmdown_fraction = j.at("warmdown_fraction").get<double>();
  s.final_lr_fraction = j.at("final_lr_fraction").get<double>();
  return s;
}

json to_json(const TrainConfig& c) {
  return {{"model", c.model},
          {"model_overrides", c.model_overrides},
          {"init_from", c.init_from},
          {"data", data_to_json(c.data)},
          {"optimizer", json::parse(optim::optimizer_config_to_json(c.optimizer))},
          {"schedule", schedule_to_json(c.schedule)},
          {"grad_accum", c.grad_accum},
          {"grad_clip", c.grad_clip},
          {"precision", precision_name(c.precision)},
          {"eval_every", c.eval_every},
          {"eval_batches", c.eval_batches},
          {"save_every", c.save_every},
          {"keep", c.keep},
          {"out_dir", c.out_dir},
          {"seed", c.seed},
          {"ranks", c.ranks},
          {"lora", c.lora ? json::parse(models::lora_options_to_json(*c.lora)) : json(nullptr)},
          {"objective", objective_name(c.objective)},
          {"dpo", c.objective == Objective::dpo
                      ? json{{"beta", c.dpo.beta}, {"loss", preference_loss_name(c.dpo.loss)}}
                      : json(nullptr)},
          {"distill", c.objective == Objective::distill
                          ? json{{"teacher", c.distill.teacher},
                                 {"teacher_logits", c.distill.teacher_logits},
                                 {"temperature", c.distill.temperature},
                                 {"alpha", c.distill.alpha}}
                          : json(nullptr)},
          {"grpo", c.objective == Objective::grpo || c.objective == Objective::ppo
                       ? json{{"group_size", c.grpo.group_size},
                              {"loss", c.grpo.loss},
                              {"epsilon_low", c.grpo.epsilon_low},
                              {"epsilon_high", c.grpo.epsilon_high},
                              {"beta", c.grpo.beta},
                              {"scale_rewards", c.grpo.scale_rewards},
                              {"iterations", c.grpo.iterations},
                              {"temperature", c.grpo.temperature},
                              {"top_k", c.grpo.top_k},
                              {"max_new_tokens", c.grpo.max_new_tokens},
                              {"stop", c.grpo.stop},
                              {"verifier", c.grpo.verifier},
                              {"verifier_command", c.grpo.verifier_command},
                              {"verifier_timeout", c.grpo.verifier_timeout},
                              {"tools", c.grpo.tools.tools},
                              {"tool_commands", c.grpo.tools.commands},
                              {"tool_timeout_ms", c.grpo.tools.timeout_ms},
                              {"tool_output_limit", c.grpo.tools.output_limit},
                              {"max_tool_turns", c.grpo.tools.max_turns},
                              {"call_reward", c.grpo.call_reward}}
                       : json(nullptr)},
          {"ppo", c.objective == Objective::ppo
                      ? json{{"style", c.ppo.style},
                             {"kl_coef", c.ppo.kl_coef},
                             {"gamma", c.ppo.gamma},
                             {"lam", c.ppo.lam},
                             {"cliprange_value", c.ppo.cliprange_value},
                             {"vf_coef", c.ppo.vf_coef},
                             {"critic_lr", c.ppo.critic_lr},
                             {"epochs", c.ppo.epochs},
                             {"minibatches", c.ppo.minibatches},
                             {"early_stop_kl", c.ppo.early_stop_kl}}
                      : json(nullptr)}};
}

}  // namespace

std::string precision_name(Precision precision) {
  for (const auto& [p, name] : kPrecisions)
    if (p == precision) return name;
  NF_FAIL("precision_name: unknown precision");
}

Precision precision_from_name(const std::string& name) {
  for (const auto& [p, n] : kPrecisions)
    if (name == n) return p;
  NF_FAIL("unknown precision '", name, "' (known: fp32, bf16, fp16)");
}

std::string objective_name(Objective objective) {
  switch (objective) {
    case Objective::dpo: return "dpo";
    case Objective::distill: return "distill";
    case Objective::grpo: return "grpo";
    case Objective::ppo: return "ppo";
    case Objective::lm: break;
  }
  return "lm";
}

Objective objective_from_name(const std::string& name) {
  if (name == "lm") return Objective::lm;
  if (name == "dpo") return Objective::dpo;
  if (name == "distill") return Objective::distill;
  if (name == "grpo") return Objective::grpo;
  if (name == "ppo") return Objective::ppo;
  NF_FAIL("unknown objective '", name, "' (known: lm, dpo, distill, grpo, ppo)");
}

void validate_train_config(const TrainConfig& c) {
  NF_CHECK(!c.model.empty() || !c.init_from.empty(), "train: give a model (preset or config) or --init-from");
  NF_CHECK(!c.data.train_paths.empty(), "train: no training data (--data)");
  NF_CHECK(c.data.batch_size > 0, "train: --batch-size must be > 0, got ", c.data.batch_size);
  NF_CHECK(c.data.context > 0, "train: --context must be > 0, got ", c.data.context);
  NF_CHECK(c.grad_accum > 0, "train: --grad-accum must be > 0, got ", c.grad_accum);
  NF_CHECK(c.grad_clip >= 0, "train: --grad-clip must be >= 0, got ", c.grad_clip);
  NF_CHECK(c.eval_every >= 0, "train: --eval-every must be >= 0, got ", c.eval_every);
  NF_CHECK(c.eval_batches > 0, "train: --eval-batches must be > 0, got ", c.eval_batches);
  NF_CHECK(c.save_every >= 0, "train: --save-every must be >= 0, got ", c.save_every);
  NF_CHECK(c.keep > 0, "train: --keep must be > 0, got ", c.keep);
  NF_CHECK(!c.out_dir.empty(), "train: --out must name a directory");
  NF_CHECK(c.ranks > 0, "train: the number of ranks must be > 0, got ", c.ranks);
  NF_CHECK(c.distributed.zero == 0 || c.distributed.zero == 1, "train: --zero must be 0 or 1, got ", c.distributed.zero);
  NF_CHECK(c.distributed.bucket_bytes > 0, "train: --bucket-mb must be > 0, got ",
           static_cast<double>(c.distributed.bucket_bytes) / (1 << 20));
  optim::validate_schedule(c.schedule);
  if (c.objective == Objective::dpo) {
    NF_CHECK(c.dpo.beta > 0 && std::isfinite(c.dpo.beta), "train: --dpo-beta must be > 0, got ", c.dpo.beta);
    NF_CHECK(c.ranks == 1, "train: --objective dpo runs in one process (", c.ranks,
             " ranks asked for): data-parallel DPO is not supported yet");
  }
  if (c.objective == Objective::distill) {
    NF_CHECK(!c.distill.teacher.empty() || !c.distill.teacher_logits.empty(),
             "train: --objective distill needs --teacher MODEL (the frozen teacher) or --teacher-logits FILE");
    NF_CHECK(c.distill.teacher.empty() || c.distill.teacher_logits.empty(), "train: --teacher ", c.distill.teacher,
             " and --teacher-logits ", c.distill.teacher_logits, " both give the teacher: give one of them");
    NF_CHECK(c.distill.temperature > 0 && std::isfinite(c.distill.temperature),
             "train: --distill-temperature must be > 0, got ", c.distill.temperature);
    NF_CHECK(c.distill.alpha >= 0 && c.distill.alpha <= 1, "train: --distill-alpha must be in [0, 1], got ",
             c.distill.alpha);
    NF_CHECK(c.ranks == 1, "train: --objective distill runs in one process (", c.ranks,
             " ranks asked for): data-parallel distillation is not supported yet");
  }
  if (c.objective == Objective::ppo) {
    const PpoOptions& p = c.ppo;
    NF_CHECK(p.style == "minimind" || p.style == "trl", "train: --ppo-style: unknown style '", p.style,
             "' (known: minimind, trl)");
    NF_CHECK(p.kl_coef >= 0 && std::isfinite(p.kl_coef), "train: --ppo-kl-coef must be >= 0, got ", p.kl_coef);
    NF_CHECK(p.gamma >= 0 && p.gamma <= 1, "train: --ppo-gamma must be in [0, 1], got ", p.gamma);
    NF_CHECK(p.lam >= 0 && p.lam <= 1, "train: --ppo-lambda must be in [0, 1], got ", p.lam);
    NF_CHECK(p.cliprange_value >= 0 && std::isfinite(p.cliprange_value), "train: --ppo-cliprange-value must be >= 0, got ",
             p.cliprange_value);
    NF_CHECK(p.vf_coef >= 0 && std::isfinite(p.vf_coef), "train: --ppo-vf-coef must be >= 0, got ", p.vf_coef);
    NF_CHECK(p.critic_lr > 0 && std::isfinite(p.critic_lr), "train: --ppo-critic-lr must be > 0, got ", p.critic_lr);
    NF_CHECK(p.epochs >= 1, "train: --ppo-epochs must be >= 1, got ", p.epochs);
    NF_CHECK(p.minibatches >= 1 && (c.data.batch_size * c.grpo.group_size) % p.minibatches == 0,
             "train: --ppo-minibatches ", p.minibatches, " must be >= 1 and divide the rollout's ",
             c.data.batch_size * c.grpo.group_size, " responses (--batch-size x --grpo-group)");
    NF_CHECK(p.early_stop_kl >= 0, "train: --ppo-early-stop-kl must be >= 0, got ", p.early_stop_kl);
    NF_CHECK(c.grpo.group_size >= 1, "train: --grpo-group must be >= 1, got ", c.grpo.group_size);
    NF_CHECK(!c.lora, "train: --objective ppo does not train LoRA adapters yet (the critic is a full copy)");
  }
  if (c.objective == Objective::grpo || c.objective == Objective::ppo) {
    const GrpoOptions& g = c.grpo;
    const std::string objective = objective_name(c.objective);
    NF_CHECK(c.objective == Objective::ppo || g.group_size >= 2,
             "train: --grpo-group must be >= 2 (advantages compare a prompt's completions), got ", g.group_size);
    static const std::set<std::string> kLosses = {"grpo", "bnpo", "dr_grpo", "dapo", "cispo", "reinforce"};
    NF_CHECK(kLosses.count(g.loss), "train: --grpo-loss: unknown loss '", g.loss,
             "' (known: grpo, bnpo, dr_grpo, dapo, cispo, reinforce)");
    NF_CHECK(g.epsilon_low >= 0 && g.epsilon_low < 1, "train: --grpo-epsilon must be in [0, 1), got ", g.epsilon_low);
    NF_CHECK(g.epsilon_high > 0, "train: --grpo-epsilon-high must be > 0, got ", g.epsilon_high);
    NF_CHECK(g.beta >= 0 && std::isfinite(g.beta), "train: --grpo-beta must be >= 0, got ", g.beta);
    NF_CHECK(g.iterations >= 1, "train: --grpo-iterations must be >= 1, got ", g.iterations);
    NF_CHECK(g.temperature > 0, "train: --temperature must be > 0 for the rollouts, got ", g.temperature);
    NF_CHECK(g.top_k >= 0, "train: --top-k must be >= 0, got ", g.top_k);
    NF_CHECK(g.max_new_tokens >= 1, "train: --max-new-tokens must be >= 1, got ", g.max_new_tokens);
    for (const std::string& s : g.stop) NF_CHECK(!s.empty(), "train: --stop: a stop string is empty");
    NF_CHECK(g.verifier == "numeric" || g.verifier == "exact" || g.verifier == "command",
             "train: --verifier: unknown verifier '", g.verifier, "' (known: numeric, exact, command)");
    NF_CHECK(g.verifier != "command" || !g.verifier_command.empty(),
             "train: --verifier command needs --verifier-command PROGRAM [ARGS...]");
    NF_CHECK(g.verifier == "command" || g.verifier_command.empty(),
             "train: --verifier-command is for --verifier command, not ", g.verifier);
    NF_CHECK(g.verifier_timeout > 0, "train: --verifier-timeout must be > 0, got ", g.verifier_timeout);
    for (const std::string& t : g.tools.tools)
      NF_CHECK(std::find(infer::builtin_tool_names().begin(), infer::builtin_tool_names().end(), t) !=
                   infer::builtin_tool_names().end(),
               "train: --tools: unknown tool '", t, "' (known: calculator)");

    NF_CHECK(g.tools.timeout_ms > 0, "train: --tool-timeout must be > 0, got ", g.tools.timeout_ms);
    NF_CHECK(g.tools.output_limit > 0, "train: --tool-output-limit must be > 0, got ", g.tools.output_limit);
    NF_CHECK(g.tools.max_turns >= 0, "train: --max-tool-turns must be >= 0, got ", g.tools.max_turns);
    NF_CHECK(g.call_reward >= 0 && std::isfinite(g.call_reward), "train: --call-reward must be >= 0, got ", g.call_reward);
    NF_CHECK(!c.data.tokenizer.empty(), "train: --objective ", objective, " needs --tokenizer (completions are scored as text)");
    NF_CHECK(c.data.train_paths.size() == 1, "train: --objective ", objective, " reads one task file (--data), got ",
             c.data.train_paths.size());
    NF_CHECK(c.data.val_paths.empty(), "train: --val-data is not used by --objective ", objective, " (no validation pass)");
    NF_CHECK(c.grad_accum == 1, "train: --grad-accum is not supported by --objective ", objective, " (raise --batch-size)");
    NF_CHECK(c.precision == Precision::fp32, "train: --objective ", objective, " trains in fp32 only, got --precision ",
             precision_name(c.precision));
    NF_CHECK(c.ranks == 1, "train: --objective ", objective, " runs in one process (", c.ranks,
             " ranks asked for): data-parallel ", objective, " is not supported yet");
  }
  if (c.lora) {
    try {
      models::check_lora_options(*c.lora);
    } catch (const Error& e) {
      NF_FAIL("train: ", e.what());
    }
  }
}

std::string lora_base_path(const TrainConfig& config) {
  const bool init_from_as_is = !config.init_from.empty() && config.model_overrides.empty();
  return init_from_as_is ? config.init_from : (std::filesystem::path(config.out_dir) / "base.safetensors").string();
}

std::string resolved_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  return ec ? std::filesystem::absolute(path).lexically_normal().string() : resolved.string();
}

TrainConfig with_resolved_paths(TrainConfig c) {
  for (std::string& path : c.data.train_paths) path = resolved_path(path);
  for (std::string& path : c.data.val_paths) path = resolved_path(path);
  c.data.tokenizer = resolved_path(c.data.tokenizer);
  c.init_from = resolved_path(c.init_from);
  c.distill.teacher = resolved_path(c.distill.teacher);
  c.distill.teacher_logits = resolved_path(c.distill.teacher_logits);
  c.out_dir = resolved_path(c.out_dir);
  std::error_code ec;
  if (std::filesystem::is_regular_file(c.model, ec)) c.model = resolved_path(c.model);  // else a preset's name
  return c;
}

std::string train_config_to_json(const TrainConfig& config) { return to_json(config).dump(2); }

TrainConfig train_config_from_json(const std::string& json_text, const std::string& source) {
  const json j = util::parse_json(json_text, source + ": ");
  try {
    TrainConfig c;
    c.model = j.at("model").get<std::string>();
    c.model_overrides = j.at("model_overrides").get<std::vector<std::string>>();
    c.init_from = j.at("init_from").get<std::string>();
    c.data = data_from_json(j.at("data"));
    c.optimizer = optim::optimizer_config_from_json(j.at("optimizer").dump(), source + ": optimizer");
    c.schedule = schedule_from_json(j.at("schedule"));
    c.grad_accum = j.at("grad_accum").get<int64_t>();
    c.grad_clip = j.at("grad_clip").get<double>();
    c.precision = precision_from_name(j.at("precision").get<std::string>());
    c.eval_every = j.at("eval_every").get<int64_t>();
    c.eval_batches = j.at("eval_batches").get<int64_t>();
    c.save_every = j.at("save_every").get<int64_t>();
    c.keep = j.at("keep").get<int64_t>();
    c.out_dir = j.at("out_dir").get<std::string>();
    c.seed = j.at("seed").get<uint64_t>();
    c.ranks = j.value("ranks", int64_t{1});  // checkpoints from before data parallelism: one process
    if (const json lora = j.value("lora", json(nullptr)); !lora.is_null())
      c.lora = models::lora_options_from_json(lora.dump(), source + ": lora");
    c.objective = objective_from_name(j.value("objective", std::string("lm")));  // older runs: lm
    if (const json dpo = j.value("dpo", json(nullptr)); !dpo.is_null()) {
      c.dpo.beta = dpo.at("beta").get<double>();
      c.dpo.loss = preference_loss_from_name(dpo.at("loss").get<std::string>());
    }
    if (const json distill = j.value("distill", json(nullptr)); !distill.is_null()) {
      c.distill.teacher = distill.at("teacher").get<std::string>();
      c.distill.teacher_logits = distill.value("teacher_logits", std::string());  // older runs: none
      c.distill.temperature = distill.at("temperature").get<double>();
      c.distill.alpha = distill.at("alpha").get<double>();
    }
    if (const json g = j.value("grpo", json(nullptr)); !g.is_null()) {
      c.grpo.group_size = g.at("group_size").get<int64_t>();
      c.grpo.loss = g.at("loss").get<std::string>();
      c.grpo.epsilon_low = g.at("epsilon_low").get<double>();
      c.grpo.epsilon_high = g.at("epsilon_high").get<double>();
      c.grpo.beta = g.at("beta").get<double>();
      c.grpo.scale_rewards = g.at("scale_rewards").get<bool>();
      c.grpo.iterations = g.at("iterations").get<int64_t>();
      c.grpo.temperature = g.at("temperature").get<double>();
      c.grpo.top_k = g.at("top_k").get<int64_t>();
      c.grpo.max_new_tokens = g.at("max_new_tokens").get<int64_t>();
      c.grpo.stop = g.at("stop").get<std::vector<std::string>>();
      c.grpo.verifier = g.at("verifier").get<std::string>();
      c.grpo.verifier_command = g.at("verifier_command").get<std::vector<std::string>>();
      c.grpo.verifier_timeout = g.at("verifier_timeout").get<double>();
      // older runs: "tools" a name or "" (none), and no other tool keys
      if (const json tools = g.value("tools", json::array()); tools.is_string()) {
        if (!tools.get<std::string>().empty()) c.grpo.tools.tools = {tools.get<std::string>()};
      } else {
        c.grpo.tools.tools = tools.get<std::vector<std::string>>();
      }
      c.grpo.tools.commands = g.value("tool_commands", std::vector<std::string>());
      c.grpo.tools.timeout_ms = g.value("tool_timeout_ms", infer::ToolOptions{}.timeout_ms);
      c.grpo.tools.output_limit = g.value("tool_output_limit", infer::ToolOptions{}.output_limit);
      c.grpo.tools.max_turns = g.value("max_tool_turns", infer::ToolOptions{}.max_turns);
      c.grpo.call_reward = g.value("call_reward", GrpoOptions{}.call_reward);
    }
    if (const json p = j.value("ppo", json(nullptr)); !p.is_null()) {
      c.ppo.style = p.at("style").get<std::string>();
      c.ppo.kl_coef = p.at("kl_coef").get<double>();
      c.ppo.gamma = p.at("gamma").get<double>();
      c.ppo.lam = p.at("lam").get<double>();
      c.ppo.cliprange_value = p.at("cliprange_value").get<double>();
      c.ppo.vf_coef = p.at("vf_coef").get<double>();
      c.ppo.critic_lr = p.at("critic_lr").get<double>();
      c.ppo.epochs = p.at("epochs").get<int64_t>();
      c.ppo.minibatches = p.at("minibatches").get<int64_t>();
      c.ppo.early_stop_kl = p.at("early_stop_kl").get<double>();
    }
    return c;
  } catch (const json::exception& e) {
    NF_FAIL(source, ": not a training config (", e.what(), ")");
  }
}

std::vector<std::string> resume_conflicts(const TrainConfig& saved, const TrainConfig& requested) {
  // What may change on resume: where and how often it reports and saves, and the run's length
  // (the trainer checks and logs a new length). data.vocab_size is the model's, filled in when the
  // run starts.
  static const std::set<std::string> kFree = {"eval_every", "eval_batches", "save_every", "keep", "out_dir",
                                              "data.vocab_size", "schedule.total_steps"};
  const json a = to_json(saved), b = to_json(requested);
  std::vector<std::string> conflicts;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (kFree.count(it.key()) || b.at(it.key()) == it.value()) continue;
    if (it.value().is_object() && b.at(it.key()).is_object()) {
      for (auto sub = it.value().begin(); sub != it.value().end(); ++sub) {
        const json& other = b.at(it.key()).at(sub.key());
        if (other != sub.value() && !kFree.count(it.key() + "." + sub.key()))
          conflicts.push_back(it.key() + "." + sub.key() + ": " + sub.value().dump() + " -> " + other.dump());
      }
    } else {
      conflicts.push_back(it.key() + ": " + it.value().dump() + " -> " + b.at(it.key()).dump());
    }
  }
  return conflicts;
}

}  // namespace nf::train
