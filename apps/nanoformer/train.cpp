// `nanoformer train`: train a language model from a preset or config (or fine-tune any model file)
// on token files, text or JSONL, with checkpoints that resume exactly (train/trainer.h).
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/dist/communicator.h"
#include "nanoformer/models/lora.h"
#include "nanoformer/train/teacher_logits.h"
#include "nanoformer/train/trainer.h"

namespace nf::cli {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_signals{0};       // SIGINT, SIGTERM and SIGHUP received
std::atomic<int> g_first_signal{0};  // the first of them: the exit status is 128 + it

// Async-signal-safe: atomics, write(2) and _exit only.
void say(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

// The first SIGINT, SIGTERM or SIGHUP asks the loop to write a checkpoint at the end of the step
// and stop; a second is acknowledged and changes nothing (the checkpoint is still written whole);
// a third exits at once: a checkpoint being written is then abandoned atomically (its temporary
// file is never renamed into place), so the newest complete checkpoint is what a resume finds.
void on_stop_signal(int signal) {
  const int n = ++g_signals;
  if (n == 1) {
    g_first_signal.store(signal);
    g_stop_requested.store(true);
    say("\nnanoformer train: stopping at the end of this step, after writing a checkpoint (a third signal exits "
        "at once, keeping the last complete checkpoint)\n");
  } else if (n == 2) {
    say("\nnanoformer train: still stopping: the checkpoint is being written or is next (a third signal exits at "
        "once)\n");
  } else {
    say("\nnanoformer train: exiting now; the last complete checkpoint is kept\n");
    ::_exit(128 + g_first_signal.load());
  }
}

// Installs on_stop_signal for the stop signals this process does not ignore (nohup ignores SIGHUP,
// a background job of a non-interactive shell SIGINT: they stay ignored); its destructor puts the
// previous handlers back.
class StopSignals {
 public:
  StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction action {};
      action.sa_handler = on_stop_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      ::sigaction(kSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_{};
};

// An option and how to copy its value from the parsed flags into a config: with --resume, only the
// flags given on the command line override the checkpoint's config.
struct Flag {
  CLI::Option* option;
  std::function<void(train::TrainConfig& to, const train::TrainConfig& from)> copy;
};

// `field(config)` names the config's member the option sets, for the parsed config and the target.
template <class Field>
Flag flag(CLI::App* cmd, const std::string& names, train::TrainConfig& parsed, const std::string& help, Field field) {
  CLI::Option* o = cmd->add_option(names, field(parsed), help)->capture_default_str();
  return {o, [field](train::TrainConfig& to, const train::TrainConfig& from) { field(to) = field(from); }};
}

// Flags that the chosen schedule or optimizer would not use are refused rather than ignored.
void refuse_unused_flags(const CLI::App& cmd, const train::TrainConfig& c) {
  const std::string schedule = "--schedule " + optim::schedule_kind_name(c.schedule.kind);
  const std::string optimizer = "--optimizer " + c.optimizer.name;
  // `flag` given although `chosen` does not use it: only `users` do
  auto refuse_unless = [&](bool used, const char* flag, const std::string& chosen, const char* users) {
    NF_CHECK(cmd.count(flag) == 0 || used, "train: ", flag, " would be ignored: ", chosen, " does not use it (",
             users, " do)");
  };
  const bool adam = c.optimizer.name == "adam" || c.optimizer.name == "adamw" || c.optimizer.name == "muon";
  refuse_unless(c.schedule.kind == optim::ScheduleKind::warmup_cosine, "--min-lr", schedule, "warmup_cosine");
  refuse_unless(c.schedule.kind == optim::ScheduleKind::wsd, "--warmdown-fraction", schedule, "wsd");
  refuse_unless(c.optimizer.name == "sgd", "--momentum", optimizer, "sgd");
  refuse_unless(adam, "--beta1", optimizer, "adam, adamw and muon");
  refuse_unless(adam, "--beta2", optimizer, "adam, adamw and muon");
  refuse_unless(c.objective == train::Objective::dpo, "--dpo-beta", "--objective " + train::objective_name(c.objective),
                "dpo");
  refuse_unless(c.objective == train::Objective::dpo, "--dpo-loss", "--objective " + train::objective_name(c.objective),
                "dpo");
  for (const char* distill_flag :
       {"--teacher", "--teacher-logits", "--write-teacher-logits", "--distill-temperature", "--distill-alpha"})
    refuse_unless(c.objective == train::Objective::distill, distill_flag,
                  "--objective " + train::objective_name(c.objective), "distill");
  for (const char* grpo_flag : {"--grpo-loss", "--grpo-beta", "--grpo-scale-rewards", "--grpo-iterations"})
    refuse_unless(c.objective == train::Objective::grpo, grpo_flag, "--objective " + train::objective_name(c.objective),
                  "grpo");
  const bool samples = c.objective == train::Objective::grpo || c.objective == train::Objective::ppo;
  for (const char* sampling_flag : {"--grpo-group", "--grpo-epsilon", "--grpo-epsilon-high", "--temperature", "--top-k",
                                    "--max-new-tokens", "--stop", "--verifier", "--verifier-command", "--verifier-timeout",
                                    "--tools", "--tool-command", "--tool-timeout", "--tool-output-limit",
                                    "--max-tool-turns", "--call-reward"})
    refuse_unless(samples, sampling_flag, "--objective " + train::objective_name(c.objective), "grpo and ppo");
  for (const char* ppo_flag : {"--ppo-style", "--ppo-kl-coef", "--ppo-gamma", "--ppo-lambda", "--ppo-cliprange-value",
                               "--ppo-vf-coef", "--ppo-critic-lr", "--ppo-epochs", "--ppo-minibatches", "--ppo-early-stop-kl"})
    refuse_unless(c.objective == train::Objective::ppo, ppo_flag, "--objective " + train::objective_name(c.objective),
                  "ppo");
  refuse_unless(c.optimizer.name != "nanochat", "--lr", optimizer + ", whose groups have their own rates,",
                "sgd, adam, adamw and muon");
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train",
      "Train a language model (or fine-tune one) and write checkpoints that resume exactly.\n"
      "  nanoformer train --config gpt-mini --data corpus.bin --steps 2000 --out runs/mini\n"
      "  nanoformer train --config gpt-mini --set vocab_size=65 --data input.txt --tokenizer chars.txt --out runs/c\n"
      "  nanoformer train --out runs/mini --resume          (continue after a crash or Ctrl-C)\n"
      "  nanoformer train --init-from model.safetensors --data chat.jsonl --tokenizer tokenizer.json --out runs/sft\n"
      "  nanoformer train --init-from base.safetensors --lora-rank 8 --lora-targets q,k,v,o --data d.txt -t t.json --out runs/lora\n"
      "  nanoformer train --objective dpo --init-from runs/sft/ckpt_1000.safetensors --data dpo.jsonl -t tokenizer.json --out runs/dpo\n"
      "  nanoformer train --objective grpo --init-from runs/sft/ckpt_1000.safetensors --data gsm8k.jsonl -t tokenizer.json --out runs/grpo\n"
      "  nanoformer train --objective ppo --init-from runs/sft/ckpt_1000.safetensors --data gsm8k.jsonl -t tokenizer.json --out runs/ppo\n"
      "  nanoformer train --objective distill --teacher big.safetensors --init-from small.safetensors --data chat.jsonl -t tokenizer.json --out runs/kd\n"
      "LoRA (--lora-rank): trains adapters only; checkpoints hold the adapters alone, and\n"
      "`nanoformer lora merge --adapter runs/lora/ckpt_<step>.safetensors --out merged.safetensors` folds one\n"
      "into its base (--init-from, or the fresh base written to <out>/base.safetensors).\n"
      "QLoRA (--lora-base-type q4_0): the frozen base's Linear weights held in 4 or 8 bits while the adapters\n"
      "train over them (a base too large for fp32 training memory); merging folds them into the dequantised base.\n"
      "Data: token files (nanoformer tokenizer prepare), text files or JSONL ({\"text\": ...} per line;\n"
      "{\"conversations\": [...]} for chat fine-tuning, loss on the assistant's tokens only; or\n"
      "{\"prompt\": ..., \"completion\": ...}, loss on the completion only;\n"
      "{\"chosen\": [...], \"rejected\": [...]} conversation pairs with --objective dpo: docs/post-training.md).\n"
      "Ctrl-C (or SIGTERM, SIGHUP) writes a checkpoint and stops (exit 130, 143, 129); a third signal exits at\n"
      "once, keeping the last complete checkpoint. Run again with --resume to continue.");
  auto c = std::make_shared<train::TrainConfig>();
  c->schedule.kind = optim::ScheduleKind::warmup_cosine;
  auto schedule = std::make_shared<std::string>("warmup_cosine");
  auto precision = std::make_shared<std::string>("fp32");
  auto objective = std::make_shared<std::pair<std::string, std::string>>("lm", "sigmoid");  // objective, DPO loss
  auto flags = std::make_shared<std::vector<Flag>>();
  using TC = train::TrainConfig;
  auto& f = *flags;
  f.push_back(flag(cmd, "--config,-c", *c, "Model preset or config JSON (fresh weights)", [](auto& t) -> auto& { return t.model; }));
  f.push_back({cmd->add_option("--set", c->model_overrides, "Override a model config key: --set vocab_size=65 (repeatable)"),
               [](TC& t, const TC& s) { t.model_overrides = s.model_overrides; }});
  f.push_back(flag(cmd, "--init-from", *c, "Start from this model (checkpoint, HF / MiniMind / nanochat folder, llama2.c .bin)", [](auto& t) -> auto& { return t.init_from; }));
  f.push_back({cmd->add_option("--data,-d", c->data.train_paths, "Training data: token files, text files or JSONL"),
               [](TC& t, const TC& s) { t.data.train_paths = s.data.train_paths; }});
  f.push_back({cmd->add_option("--val-data", c->data.val_paths, "Validation data (default: the end of --data)"),
               [](TC& t, const TC& s) { t.data.val_paths = s.data.val_paths; }});
  f.push_back(flag(cmd, "--val-fraction", *c, "Share of --data held out for validation", [](auto& t) -> auto& { return t.data.val_fraction; }));
  f.push_back(flag(cmd, "--tokenizer,-t", *c, "tokenizer.json or character vocabulary (text and JSONL data)", [](auto& t) -> auto& { return t.data.tokenizer; }));
  f.push_back(flag(cmd, "--chat-template", *c, "Chat data rendering: chatml, nanochat, a template file or a tokenizer_config.json (default: the tokenizer's own)", [](auto& t) -> auto& { return t.data.chat_template; }));
  f.push_back(flag(cmd, "--batch-size,-b", *c, "Sequences per micro-batch", [](auto& t) -> auto& { return t.data.batch_size; }));
  f.push_back(flag(cmd, "--context,-T", *c, "Tokens per sequence", [](auto& t) -> auto& { return t.data.context; }));
  f.push_back(flag(cmd, "--grad-accum", *c, "Micro-batches per optimizer step", [](auto& t) -> auto& { return t.grad_accum; }));
  f.push_back(flag(cmd, "--data-seed", *c, "Seed of the batch order", [](auto& t) -> auto& { return t.data.seed; }));
  f.push_back(flag(cmd, "--steps", *c, "Optimizer steps", [](auto& t) -> auto& { return t.schedule.total_steps; }));
  f.push_back({cmd->add_option("--lr", c->optimizer.lr, "Peak learning rate")->capture_default_str(),
               [](TC& t, const TC& s) { t.optimizer.lr = s.optimizer.lr; }});
  f.push_back(flag(cmd, "--min-lr", *c, "warmup_cosine's floor (default lr / 10)", [](auto& t) -> auto& { return t.schedule.min_lr; }));
  f.push_back(flag(cmd, "--warmup", *c, "Linear warmup steps", [](auto& t) -> auto& { return t.schedule.warmup_steps; }));
  f.push_back({cmd->add_option("--schedule", *schedule, "constant, warmup_cosine, wsd or minimind_cosine")->capture_default_str(),
               [](TC& t, const TC& s) { t.schedule.kind = s.schedule.kind; }});
  f.push_back(flag(cmd, "--warmdown-fraction", *c, "wsd: final share of steps that decays", [](auto& t) -> auto& { return t.schedule.warmdown_fraction; }));
  f.push_back(flag(cmd, "--optimizer", *c, "sgd, adam, adamw, muon or nanochat", [](auto& t) -> auto& { return t.optimizer.name; }));
  f.push_back(flag(cmd, "--weight-decay", *c, "Weight decay, not on norms and biases (default: 0.1 for sgd, adam, adamw; 0 for muon, nanochat)", [](auto& t) -> auto& { return t.optimizer.weight_decay; }));
  f.push_back(flag(cmd, "--beta1", *c, "Adam beta1", [](auto& t) -> auto& { return t.optimizer.beta1; }));
  f.push_back(flag(cmd, "--beta2", *c, "Adam beta2", [](auto& t) -> auto& { return t.optimizer.beta2; }));
  f.push_back(flag(cmd, "--momentum", *c, "SGD momentum", [](auto& t) -> auto& { return t.optimizer.momentum; }));
  f.push_back(flag(cmd, "--grad-clip", *c, "Max gradient norm (0 = off)", [](auto& t) -> auto& { return t.grad_clip; }));
  f.push_back({cmd->add_option("--precision", *precision, "fp32, bf16 (autocast) or fp16 (autocast + loss scaling)")->capture_default_str(),
               [](TC& t, const TC& s) { t.precision = s.precision; }});
  f.push_back({cmd->add_option("--objective", objective->first,
                               "lm (next-token cross-entropy: pretraining, SFT), dpo (preference pairs against the "
                               "starting model, frozen), distill (cross-entropy and KL from --teacher, frozen), grpo "
                               "(completions sampled for a gsm8k-layout task file, rewarded by --verifier) or ppo "
                               "(the same rollouts, with a critic: docs/post-training.md)")
                   ->capture_default_str(),
               [](TC& t, const TC& s) { t.objective = s.objective; }});
  f.push_back(flag(cmd, "--dpo-beta", *c, "DPO: beta, the strength of the pull to the reference (rewards are beta (log pi - log ref))", [](auto& t) -> auto& { return t.dpo.beta; }));
  f.push_back({cmd->add_option("--dpo-loss", objective->second, "DPO: sigmoid (-log sigmoid(beta z)) or ipo ((z - 1/(2 beta))^2)")->capture_default_str(),
               [](TC& t, const TC& s) { t.dpo.loss = s.dpo.loss; }});
  f.push_back(flag(cmd, "--teacher", *c, "Distillation: the frozen teacher (what --init-from takes), of the student's vocabulary", [](auto& t) -> auto& { return t.distill.teacher; }));
  f.push_back(flag(cmd, "--teacher-logits", *c, "Distillation: the teacher's logits on the run's batches, read from this file (written by --write-teacher-logits) instead of --teacher", [](auto& t) -> auto& { return t.distill.teacher_logits; }));
  f.push_back(flag(cmd, "--distill-temperature", *c, "Distillation: T > 0, both distributions softened as softmax(logits / T)", [](auto& t) -> auto& { return t.distill.temperature; }));
  f.push_back(flag(cmd, "--distill-alpha", *c, "Distillation: in [0, 1]; loss = alpha CE + (1 - alpha) T^2 KL(teacher || student)", [](auto& t) -> auto& { return t.distill.alpha; }));
  f.push_back(flag(cmd, "--grpo-group", *c, "GRPO, PPO: completions sampled per prompt (GRPO: G >= 2)", [](auto& t) -> auto& { return t.grpo.group_size; }));
  f.push_back(flag(cmd, "--grpo-loss", *c, "GRPO: grpo, bnpo, dr_grpo, dapo, cispo (TRL's loss_type) or reinforce (nanochat)", [](auto& t) -> auto& { return t.grpo.loss; }));
  f.push_back(flag(cmd, "--grpo-epsilon", *c, "GRPO, PPO: the ratio's lower clip, 1 - epsilon", [](auto& t) -> auto& { return t.grpo.epsilon_low; }));
  f.push_back(flag(cmd, "--grpo-epsilon-high", *c, "GRPO, PPO: the ratio's upper clip, 1 + epsilon_high (cispo: the IS weight's bound)", [](auto& t) -> auto& { return t.grpo.epsilon_high; }));
  f.push_back(flag(cmd, "--grpo-beta", *c, "GRPO: weight of the k3 KL to the starting model (0: no reference)", [](auto& t) -> auto& { return t.grpo.beta; }));
  f.push_back(flag(cmd, "--grpo-scale-rewards", *c, "GRPO: advantages divided by the group's std (false: r - mean, Dr. GRPO)", [](auto& t) -> auto& { return t.grpo.scale_rewards; }));
  f.push_back(flag(cmd, "--grpo-iterations", *c, "GRPO: optimizer steps on each step's rollouts (TRL's num_iterations)", [](auto& t) -> auto& { return t.grpo.iterations; }));
  f.push_back(flag(cmd, "--temperature", *c, "GRPO, PPO: sampling temperature of the rollouts", [](auto& t) -> auto& { return t.grpo.temperature; }));
  f.push_back(flag(cmd, "--top-k", *c, "GRPO, PPO: sample from the k likeliest tokens (0 = all)", [](auto& t) -> auto& { return t.grpo.top_k; }));
  f.push_back(flag(cmd, "--max-new-tokens", *c, "GRPO, PPO: the longest completion", [](auto& t) -> auto& { return t.grpo.max_new_tokens; }));
  f.push_back({cmd->add_option("--stop", c->grpo.stop, "GRPO, PPO: a stop string ending a completion (repeatable; default Question:, </s>, <|im_end|>)"),
               [](TC& t, const TC& s) { t.grpo.stop = s.grpo.stop; }});
  f.push_back(flag(cmd, "--verifier", *c, "GRPO, PPO: numeric (GSM8K's final number), exact, or command", [](auto& t) -> auto& { return t.grpo.verifier; }));
  auto verifier_command = std::make_shared<std::string>();
  f.push_back({cmd->add_option("--verifier-command", *verifier_command,
                               "GRPO, PPO: PROGRAM ARGS split at spaces, run without a shell per completion: JSON on stdin, {\"reward\": R} on stdout"),
               [](TC& t, const TC& s) { t.grpo.verifier_command = s.grpo.verifier_command; }});
  f.push_back(flag(cmd, "--verifier-timeout", *c, "GRPO, PPO: seconds the verifier command may take per completion", [](auto& t) -> auto& { return t.grpo.verifier_timeout; }));
  f.push_back(flag(cmd, "--tools", *c, "GRPO, PPO: tools the rollouts call while they decode (calculator): a nanochat model's is nanochat's calculator; a chat-template model's are called in the Hermes syntax, offered in its prompts by the template and answered as its tool messages (MiniMind's agent RL); their answers are left out of the loss", [](auto& t) -> auto& { return t.grpo.tools.tools; }));
  f.push_back(flag(cmd, "--tool-command", *c, "GRPO, PPO: a tool NAME run as PROGRAM (NAME=PROGRAM [ARGS...], split at spaces, no shell) with the call's JSON on its standard input, its standard output the answer (repeatable; chat-template models)", [](auto& t) -> auto& { return t.grpo.tools.commands; }));
  f.push_back(flag(cmd, "--tool-timeout", *c, "GRPO, PPO: the command tool's time limit in milliseconds", [](auto& t) -> auto& { return t.grpo.tools.timeout_ms; }));
  f.push_back(flag(cmd, "--tool-output-limit", *c, "GRPO, PPO: the command tool's output limit in bytes", [](auto& t) -> auto& { return t.grpo.tools.output_limit; }));
  f.push_back(flag(cmd, "--max-tool-turns", *c, "GRPO, PPO: tool turns per rollout at most; a later call is not run and the rollout counts as unfinished", [](auto& t) -> auto& { return t.grpo.tools.max_turns; }));
  f.push_back(flag(cmd, "--call-reward", *c, "GRPO, PPO with a chat-template model's tools: the weight w of MiniMind's terms for well-formed calls, added to the final answer's reward: -w per unbalanced <tool_call> tag, +w when every call was valid (-w per invalid one), -w when unfinished (0: off)", [](auto& t) -> auto& { return t.grpo.call_reward; }));
  f.push_back(flag(cmd, "--ppo-style", *c, "PPO: minimind (train_ppo.py: score at the last token, k3 KL as a loss term) or trl (PPOTrainer: score one past the end, k1 KL in the reward)", [](auto& t) -> auto& { return t.ppo.style; }));
  f.push_back(flag(cmd, "--ppo-kl-coef", *c, "PPO: weight of the KL to the starting model (0: no reference)", [](auto& t) -> auto& { return t.ppo.kl_coef; }));
  f.push_back(flag(cmd, "--ppo-gamma", *c, "PPO: GAE's discount", [](auto& t) -> auto& { return t.ppo.gamma; }));
  f.push_back(flag(cmd, "--ppo-lambda", *c, "PPO: GAE's lambda", [](auto& t) -> auto& { return t.ppo.lam; }));
  f.push_back(flag(cmd, "--ppo-cliprange-value", *c, "PPO: the critic's values clipped to the sampled ones +- this", [](auto& t) -> auto& { return t.ppo.cliprange_value; }));
  f.push_back(flag(cmd, "--ppo-vf-coef", *c, "PPO: the value loss's weight", [](auto& t) -> auto& { return t.ppo.vf_coef; }));
  f.push_back(flag(cmd, "--ppo-critic-lr", *c, "PPO: the critic's AdamW learning rate (the run's schedule shape)", [](auto& t) -> auto& { return t.ppo.critic_lr; }));
  f.push_back(flag(cmd, "--ppo-epochs", *c, "PPO: passes over each rollout", [](auto& t) -> auto& { return t.ppo.epochs; }));
  f.push_back(flag(cmd, "--ppo-minibatches", *c, "PPO: optimizer steps per pass (divides --batch-size x --grpo-group)", [](auto& t) -> auto& { return t.ppo.minibatches; }));
  f.push_back(flag(cmd, "--ppo-early-stop-kl", *c, "PPO: end a rollout's updates when a minibatch's approx KL exceeds this (0 = never)", [](auto& t) -> auto& { return t.ppo.early_stop_kl; }));
  f.push_back(flag(cmd, "--eval-every", *c, "Steps between validations (0 = at the end)", [](auto& t) -> auto& { return t.eval_every; }));
  f.push_back(flag(cmd, "--eval-batches", *c, "Batches per validation", [](auto& t) -> auto& { return t.eval_batches; }));
  f.push_back(flag(cmd, "--save-every", *c, "Steps between checkpoints (0 = at the end)", [](auto& t) -> auto& { return t.save_every; }));
  f.push_back(flag(cmd, "--keep", *c, "Checkpoints kept (the newest)", [](auto& t) -> auto& { return t.keep; }));
  f.push_back(flag(cmd, "--seed", *c, "Seed of the initialisation and dropout", [](auto& t) -> auto& { return t.seed; }));
  struct LoRAFlags {
    int64_t rank = 0;
    double alpha = 0, dropout = 0;
    std::string targets = "q,k,v,o";
    std::string base_type;
  };
  auto lora = std::make_shared<LoRAFlags>();
  cmd->add_option("--lora-rank", lora->rank, "LoRA: train rank-R adapters only, the base frozen (models/lora.h)");
  cmd->add_option("--lora-alpha", lora->alpha, "LoRA: updates scaled by alpha / rank (default 2 x rank)");
  cmd->add_option("--lora-targets", lora->targets,
                  "LoRA: layers by role, of q, k, v, o, gate, up, down (SwiGLU), fc, proj (2-layer MLPs)")
      ->capture_default_str();
  cmd->add_option("--lora-dropout", lora->dropout, "LoRA: dropout on the adapters' input")->capture_default_str();
  cmd->add_option("--lora-base-type", lora->base_type,
                  "QLoRA: hold the frozen base's Linear weights in this type (q8_0, q4_0, ...) while the adapters train");
  cmd->add_option("--out,-o", c->out_dir, "Run directory: checkpoints and metrics.jsonl")->capture_default_str();
  cmd->add_flag("--resume", c->resume, "Continue the run in --out from its newest checkpoint");
  auto dist_flags = std::make_shared<std::pair<double, double>>(25.0, 300.0);  // bucket MiB, timeout s
  cmd->add_option("--zero", c->distributed.zero, "Under mpirun: 1 shards the optimizer state across ranks (ZeRO-1)")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", dist_flags->first, "Under mpirun: gradient all-reduce bucket size (MiB)")
      ->capture_default_str();
  cmd->add_option("--dist-timeout", dist_flags->second,
                  "Under mpirun: seconds a collective may wait before the job ends with an error")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", c->quiet, "No progress bar");
  auto write_logits = std::make_shared<std::string>();
  cmd->add_option("--write-teacher-logits", *write_logits,
                  "Distillation: instead of training, write --teacher's logits on the batches this run would train on "
                  "(--steps x --grad-accum, its data order) to this file, for --teacher-logits");
  cmd->callback([c, flags, schedule, precision, objective, lora, dist_flags, verifier_command, write_logits, cmd] {
    NF_CHECK(dist_flags->second > 0, "train: --dist-timeout must be > 0 seconds, got ", dist_flags->second);
    dist::Communicator& world = dist::world(dist_flags->second);
    c->ranks = world.size();
    NF_CHECK(c->distributed.zero == 0 || cmd->count("--zero") == 0 || world.size() > 1,
             "train: --zero 1 shards the optimizer state across the ranks of mpirun, but this process runs alone "
             "(start it with mpirun -n N, or drop --zero)");
    c->distributed.bucket_bytes = static_cast<int64_t>(dist_flags->first * (1 << 20));
    if (world.rank() != 0) c->quiet = true;  // rank 0 alone shows progress
    c->schedule.kind = optim::schedule_kind_from_name(*schedule);
    c->precision = train::precision_from_name(*precision);
    // "--objective: unknown objective 'x' (known: lm, dpo)"
    auto parse = [](const char* flag_name, const auto& from_name, const std::string& value) {
      try {
        return from_name(value);
      } catch (const Error& e) {
        NF_FAIL("train: ", flag_name, ": ", e.what());
      }
    };
    c->objective = parse("--objective", train::objective_from_name, objective->first);
    c->dpo.loss = parse("--dpo-loss", preference_loss_from_name, objective->second);
    c->schedule.lr = c->optimizer.lr;
    if (cmd->count("--min-lr") == 0) c->schedule.min_lr = c->optimizer.lr / 10;
    if (cmd->count("--init-from") > 0) {
      NF_CHECK(cmd->count("--config") == 0, "train: --config builds a fresh model and --init-from loads one: give one ",
               "of them (--set changes the settings of an --init-from model that keep its weights, such as dropout)");
      c->model.clear();
    }
    if (cmd->count("--weight-decay") == 0) c->optimizer.weight_decay = optim::default_weight_decay(c->optimizer.name);
    if (!c->resume) refuse_unused_flags(*cmd, *c);
    const size_t lora_flags = cmd->count("--lora-rank") + cmd->count("--lora-alpha") + cmd->count("--lora-targets") +
                              cmd->count("--lora-dropout") + cmd->count("--lora-base-type");
    if (cmd->count("--lora-rank") > 0)
      c->lora = models::LoRAOptions{.rank = lora->rank,
                                    .alpha = cmd->count("--lora-alpha") > 0 ? lora->alpha : 2.0 * static_cast<double>(lora->rank),
                                    .dropout = lora->dropout,
                                    .targets = models::parse_lora_targets(lora->targets),
                                    .base_type = lora->base_type.empty() ? std::nullopt
                                                                         : std::optional(quant_type_from_name(lora->base_type))};
    else
      NF_CHECK(lora_flags == 0, "train: --lora-alpha, --lora-targets, --lora-dropout and --lora-base-type need --lora-rank");
    if (cmd->count("--verifier-command") > 0) {  // argv without a shell: words split at white space
      std::istringstream words(*verifier_command);
      c->grpo.verifier_command.clear();
      for (std::string w; words >> w;) c->grpo.verifier_command.push_back(w);
    }
    if (cmd->count("--write-teacher-logits") > 0) {  // no run: the teacher's logits on its batches
      NF_CHECK(!c->resume, "train: --write-teacher-logits writes a file for a new run; it does not take --resume");
      const int64_t batches = train::write_teacher_logits(train::with_resolved_paths(*c), *write_logits);
      std::printf("wrote the logits of %s on %lld batches to %s\n", c->distill.teacher.c_str(),
                  static_cast<long long>(batches), write_logits->c_str());
      return;
    }
    train::TrainConfig config = *c;
    if (c->resume && !train::list_checkpoints(c->out_dir).empty()) {
      // the run's options, from the checkpoint the trainer will resume (a damaged newer one is set aside)
      config = train::read_train_checkpoint(train::newest_intact_checkpoint(c->out_dir)).config;
      for (const Flag& fl : *flags)
        if (fl.option->count() > 0) fl.copy(config, *c);
      if (cmd->count("--lr") > 0) config.schedule.lr = c->optimizer.lr;
      if (lora_flags > 0) config.lora = c->lora;  // a change is refused as a conflict
      config.out_dir = c->out_dir;
      config.resume = true;
      config.quiet = c->quiet;
      config.ranks = c->ranks;
      config.distributed = c->distributed;
    }
    train::Trainer trainer(config, {}, &world);
    if (world.rank() == 0)
      std::fprintf(stderr, "nanoformer train: %d threads, BLAS: %s\n%s", num_threads(), blas_info(),
                   trainer.describe().c_str());
    g_stop_requested.store(false);
    g_signals.store(0);
    const auto start = std::chrono::steady_clock::now();
    const int64_t first_step = trainer.state().step;
    const int64_t first_tokens = trainer.state().tokens;
    train::Trainer::Outcome outcome;
    {
      const StopSignals signals;
      outcome = trainer.run(&g_stop_requested);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& s = trainer.state();
    char validation[64] = "no validation";  // best_val_loss 0: no validation pass ran
    if (s.best_val_loss != 0) std::snprintf(validation, sizeof validation, "best val loss %.4f", s.best_val_loss);
    if (world.rank() == 0)
      std::printf("%s at step %lld of %lld: %lld steps in %.1f s, %.0f tokens/s; %s\n",
                  outcome == train::Trainer::Outcome::stopped ? "stopped" : "finished", static_cast<long long>(s.step),
                  static_cast<long long>(config.schedule.total_steps), static_cast<long long>(s.step - first_step),
                  seconds, static_cast<double>(s.tokens - first_tokens) / std::max(seconds, 1e-9), validation);
    if (outcome == train::Trainer::Outcome::stopped) throw CLI::RuntimeError(128 + g_first_signal.load());
  });
}

}  // namespace nf::cli
