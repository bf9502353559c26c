// The training loop: build or restore, step, validate, checkpoint.
#include "nanoformer/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/data/data_fingerprint.h"
#include "nanoformer/data/sharded_batches.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/formats/lora_adapter.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/config/config_overrides.h"
#include "nanoformer/models/model_stats.h"
#include "nanoformer/ops/autocast.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/optim/grad_clip.h"
#include "nanoformer/util/progress_bar.h"
#include "nanoformer/util/system_memory.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// The autocast a precision asks for (none for fp32).
std::optional<AutocastGuard> autocast_for(Precision precision) {
  switch (precision) {
    case Precision::bf16: return std::optional<AutocastGuard>(std::in_place, DType::bf16);
    case Precision::fp16: return std::optional<AutocastGuard>(std::in_place, DType::f16);
    case Precision::fp32: break;
  }
  return std::nullopt;
}

}  // namespace

void check_training_memory(const models::DecoderLMConfig& config, int64_t batch, int64_t context,
                           int64_t available_bytes, int64_t lora_parameters) {
  const models::ModelStats stats = models::model_stats(config, {.context = context, .batch = batch});
  const models::MemoryEstimate& m = stats.fp32;
  if (lora_parameters < 0) {
    NF_CHECK(m.training <= available_bytes, "train: this run needs about ", gib(m.training), " (weights ", gib(m.weights),
             ", gradients ", gib(m.gradients), ", optimizer state ", gib(m.optimizer), ", activations ",
             gib(m.activations), " for batch ", batch, " x context ", context, "; ", stats.parameters.total,
             " parameters), but only ", gib(available_bytes),
             " of memory is available: use a smaller model, batch or context");
    return;
  }
  // LoRA: the base frozen (weights only); each adapter parameter has its value, gradient and AdamW's two moments
  const double adapters = 4.0 * 4.0 * static_cast<double>(lora_parameters);
  const double needed = static_cast<double>(m.weights + m.activations) + adapters;
  NF_CHECK(needed <= static_cast<double>(available_bytes), "train: this LoRA run needs about ",
           gib(static_cast<int64_t>(std::min(needed, 9e18))), " (frozen weights ", gib(m.weights), ", LoRA adapters ",
           lora_parameters, " parameters: ", gib(static_cast<int64_t>(std::min(adapters, 9e18))),
           " with their gradients and optimizer state, activations ", gib(m.activations), " for batch ", batch,
           " x context ", context, "), but only ", gib(available_bytes),
           " of memory is available: use a smaller --lora-rank, fewer --lora-targets, or a smaller batch or context");
}

Trainer::Trainer(TrainConfig config, data::TrainingData data, dist::Communicator* comm)
    : config_(std::move(config)), own_comm_(comm ? nullptr : dist::single_process()),
      comm_(comm ? comm : own_comm_.get()), data_(std::move(data)) {
  config_ = with_resolved_paths(std::move(config_));  // stored and compared so: a resume may run anywhere
  if (config_.resume) {  // first: a resume takes its options from the checkpoint it needs
    std::error_code ec;
    NF_CHECK(!list_checkpoints(config_.out_dir).empty(), "train --resume: no checkpoint (ckpt_*.safetensors) in ",
             config_.out_dir, fs::is_directory(config_.out_dir, ec) ? "" : " (no such directory)",
             ": nothing to resume; check --out, or start the run without --resume");
  }
  validate_train_config(config_);
  objective_ = make_objective(config_);
  NF_CHECK(config_.ranks == comm_->size(), "train: the run is configured for ", config_.ranks, " ranks but ",
           comm_->size(), " are running");
  const auto existing = list_checkpoints(config_.out_dir);
  Generator init(config_.seed);  // a fresh run's weights, then its adapters
  if (config_.resume) {
    resume_from(newest_intact_checkpoint(config_.out_dir));
  } else {
    NF_CHECK(existing.empty(), "train: ", config_.out_dir, " already holds checkpoints (the newest: ",
             existing.empty() ? "" : existing.back().second,
             "): pass --resume to continue that run, or choose another --out so nothing is overwritten");
    start_fresh(init);
  }
  const int64_t max_seq_len = model_->config().max_seq_len;
  NF_CHECK(config_.data.context <= max_seq_len, "train: --context ", config_.data.context,
           " exceeds the model's max_seq_len ", max_seq_len, ": give --context ", max_seq_len, " or less");
  config_.data.vocab_size = model_->config().vocab_size;
  objective_->prepare(*model_);  // a teacher: before the run's directory is made
  config_.data.preference_pairs = objective_->reads_pairs();
  config_.data.show_progress = !config_.quiet && is_root();
  if (!objective_->reads_batches()) {  // GRPO: prompts, not batches
    if (state_.data_files.empty()) state_.data_files = data::fingerprint_data_files(config_.data);
  } else if (!data_.train) {
    data::DataOptions global = config_.data;  // the batches of all ranks together; each takes its rows
    global.batch_size *= config_.ranks;
    data_ = data::load_training_data(global);
    if (config_.ranks > 1) {
      const int ranks = static_cast<int>(config_.ranks);
      data_.train = std::make_unique<data::ShardedBatches>(std::move(data_.train), comm_->rank(), ranks);
      if (data_.val) data_.val = std::make_unique<data::ShardedBatches>(std::move(data_.val), comm_->rank(), ranks);
    }
    if (state_.data_files.empty()) state_.data_files = data::fingerprint_data_files(config_.data);
  }
  fs::create_directories(config_.out_dir);  // every option checked: the run's files from here on
  if (config_.lora && !config_.resume) {
    // the adapters' base is kept beside them unless it is the --init-from file as it is
    const std::string base = lora_base_path(config_);
    if (base != config_.init_from && is_root()) formats::save_checkpoint(*model_, base);
    models::apply_lora(*model_, *config_.lora, init);
  }
  if (objective_->needs_reference() && !config_.lora) {  // LoRA: the reference is the adapters off
    Generator start(config_.seed);  // the starting model again, also when resuming
    reference_ = build_start_model(start);
    reference_->requires_grad_(false);
    reference_->eval();
  }
  objective_->bind({.policy = model_.get(), .reference = reference_.get(), .train = data_.train.get()});
  optimizer_ = std::make_unique<optim::OptimizerSet>(config_.optimizer, *model_);
  if (config_.distributed.zero == 1) zero_ = std::make_unique<optim::ZeroSharding>(*optimizer_, *comm_);
  buckets_ = std::make_unique<dist::GradientBuckets>(optimizer_->parameters(), *comm_, config_.distributed.bucket_bytes);
  if (config_.precision == Precision::fp16) scaler_ = std::make_unique<optim::DynamicLossScaler>();
  if (!resumed_from_.empty()) {
    load_optimizer_state(resumed_from_, *optimizer_);
    if (scaler_)
      scaler_->load_state_dict({{"loss_scaler.scale", Tensor::scalar(state_.loss_scale)},
                                {"loss_scaler.growth_tracker", Tensor::scalar(static_cast<double>(state_.good_steps), DType::i64)}});
    check_next_batch_loss();
  }
  // metrics.jsonl: a resumed run drops the lines of steps after its checkpoint, then appends.
  metrics_path_ = (fs::path(config_.out_dir) / "metrics.jsonl").string();
  std::vector<std::string> kept;
  if (!resumed_from_.empty()) {
    std::ifstream in(metrics_path_);
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("step", int64_t{0}) <= state_.step) kept.push_back(line);
    }
  }
  if (!is_root()) return;  // rank 0 alone writes metrics
  metrics_.open(metrics_path_, std::ios::trunc);
  NF_CHECK(metrics_.good(), "train: cannot write ", metrics_path_, ": ", std::strerror(errno));
  for (const std::string& line : kept) log_metrics(line);
}

Trainer::~Trainer() = default;

std::shared_ptr<models::DecoderLM> Trainer::build_start_model(Generator& gen) const {
  if (!config_.init_from.empty())
    return models::with_model_overrides(formats::load_decoder_lm(config_.init_from), config_.model_overrides,
                                        config_.init_from, gen);
  const std::string json_text = models::model_config_with_overrides(config_.model, config_.model_overrides);
  return std::make_shared<models::DecoderLM>(models::parse_model_config(json_text, config_.model), gen);
}

void Trainer::start_fresh(Generator& gen) {
  const int64_t batch = objective_->rows_per_batch(), context = config_.data.context;
  const int64_t frozen = config_.lora ? 0 : -1;  // LoRA: the base's weights do not train
  if (config_.init_from.empty()) {  // the config's memory checked before its weights are drawn
    const std::string json_text = models::model_config_with_overrides(config_.model, config_.model_overrides);
    check_training_memory(models::parse_model_config(json_text, config_.model), batch, context,
                          util::available_memory_bytes(), frozen);
  }
  model_ = build_start_model(gen);
  if (!config_.init_from.empty())
    check_training_memory(model_->config(), batch, context, util::available_memory_bytes(), frozen);
  if (config_.lora)
    check_training_memory(model_->config(), batch, context, util::available_memory_bytes(),
                          models::lora_parameter_count(*model_, *config_.lora));
  else
    models::check_dense(*model_, "train: " + config_.init_from,
                        "full training needs dense weights: train LoRA adapters over them (--lora-rank)");
}

void Trainer::resume_from(const std::string& checkpoint) {
  TrainCheckpoint saved = read_train_checkpoint(checkpoint);
  TrainConfig previous = with_resolved_paths(saved.config);  // older runs stored paths as typed
  std::vector<std::string> conflicts;
  if (!data_.train)  // files, not batches given by the caller: moved ones are found by their content
    conflicts = data::reconcile_data_files(previous.data, saved.state.data_files, config_.data, resume_notes_);
  const int64_t reached = saved.state.step, steps = config_.schedule.total_steps;
  if (steps != previous.schedule.total_steps) {
    NF_CHECK(steps >= reached, "train --resume: --steps ", steps, " is below step ", reached, ", which ", checkpoint,
             " has reached: give --steps ", reached, " or more");
    char note[200];
    if (steps == reached)
      std::snprintf(note, sizeof note, "--steps %lld -> %lld: the run ends at the step it has reached",
                    static_cast<long long>(previous.schedule.total_steps), static_cast<long long>(steps));
    else
      std::snprintf(note, sizeof note, "--steps %lld -> %lld: the %s schedule is recomputed over %lld steps; "
                    "the lr goes from %.4g (step %lld) to %.4g (step %lld)",
                    static_cast<long long>(previous.schedule.total_steps), static_cast<long long>(steps),
                    optim::schedule_kind_name(config_.schedule.kind).c_str(), static_cast<long long>(steps),
                    optim::learning_rate(previous.schedule, std::max<int64_t>(reached - 1, 0)),
                    static_cast<long long>(reached), learning_rate(config_.schedule, reached),
                    static_cast<long long>(reached + 1));
    resume_notes_.push_back(note);
  }
  for (std::string& c : resume_conflicts(previous, config_)) conflicts.push_back(std::move(c));
  if (!conflicts.empty()) {
    std::ostringstream os;
    os << "train --resume: " << checkpoint << " was written by a run with other settings; resuming would not "
       << "continue it (start a new run with another --out, or fine-tune with --init-from):";
    for (const std::string& c : conflicts) os << "\n  " << c;
    throw Error(os.str());
  }
  if (config_.lora) {  // an adapter-only checkpoint: the base again, then its adapters
    model_ = formats::load_decoder_lm(lora_base_path(config_));
    check_training_memory(model_->config(), objective_->rows_per_batch(), config_.data.context,
                          util::available_memory_bytes());
    Generator gen(config_.seed);
    formats::load_lora_adapter(*model_, checkpoint, gen);
  } else {
    check_training_memory(formats::read_checkpoint_config(checkpoint), objective_->rows_per_batch(), config_.data.context,
                          util::available_memory_bytes());
    model_ = models::model_as<models::DecoderLM>(formats::load_checkpoint(checkpoint), checkpoint);
  }
  restore_generators(*model_, saved.state.generators, checkpoint);
  objective_->resume(checkpoint, saved.state.step);
  state_ = saved.state;
  resumed_from_ = checkpoint;
}

std::string Trainer::describe() const {
  std::ostringstream os;
  const auto& c = model_->config();
  os << "model: " << (c.name.empty() ? config_.model : c.name) << ", " << model_->num_parameters() << " parameters ("
     << model_->num_parameters(true) << " trained), " << c.n_layers << " layers, dim " << c.dim << ", vocab "
     << c.vocab_size << "\n";
  os << "data: " << (data_.train ? data_.train->describe() : objective_->describe_data()) << "\n";
  if (!data_.vocab_check.empty()) os << data_.vocab_check << "\n";
  os << "validation: " << (data_.val ? data_.val->describe() : "none") << "\n";
  if (config_.lora)
    os << "lora: rank " << config_.lora->rank << ", alpha " << config_.lora->alpha << ", dropout " << config_.lora->dropout
       << ", " << models::lora_parameters(*model_).size() / 2 << " adapted layers; base " << lora_base_path(config_)
       << (config_.lora->base_type ? std::string(" held in ") + quant_type_name(*config_.lora->base_type) : "") << "\n";
  os << "optimizer:\n" << optimizer_->describe();
  os << "steps: " << config_.schedule.total_steps << " x " << config_.grad_accum << " x " << config_.data.batch_size
     << " x " << config_.data.context << " tokens, " << optim::schedule_kind_name(config_.schedule.kind) << " lr "
     << config_.schedule.lr << ", " << precision_name(config_.precision) << "\n";
  const std::string objective = objective_->describe();
  if (!objective.empty()) os << "objective: " << objective << "\n";
  if (comm_->size() > 1) {
    os << "data-parallel: " << comm_->describe() << ", global batch " << config_.ranks * config_.data.batch_size
       << ", " << buckets_->num_buckets() << " gradient buckets of up to "
       << config_.distributed.bucket_bytes / (1 << 20) << " MiB";
    if (zero_) os << ", ZeRO-1: optimizer state of " << zero_->owned_values() << " of " << zero_->total_values()
                  << " values on this rank";
    os << "\n";
  }
  if (!resumed_from_.empty()) os << "resumed from " << resumed_from_ << " at step " << state_.step << "\n";
  for (const std::string& note : resume_notes_) os << "resume: " << note << "\n";
  return os.str();
}

void Trainer::backward(int64_t t, StepResult& r) {
  const std::vector<MicroBatchSize> sizes = objective_->begin_step(t);
  double step[2] = {0, 0};  // N: the units of the step on every rank; and its target tokens
  for (const MicroBatchSize& m : sizes) {
    step[0] += m.units;
    step[1] += static_cast<double>(m.tokens);
  }
  comm_->allreduce_sum(step, 2, "the all-reduce of the step's token count");
  const double total = std::max(step[0], 1.0);
  r.tokens = static_cast<int64_t>(step[1]);
  const double loss_scale = scaler_ ? scaler_->scale() : 1.0;
  model_->train();
  // One guard for every micro-batch: each weight is rounded once per step (ops/autocast.h); the
  // optimizer steps outside it.
  const auto autocast = autocast_for(config_.precision);
  // aux losses are means over micro-batches and ranks
  const double aux_weight = 1.0 / static_cast<double>(sizes.size() * static_cast<size_t>(config_.ranks));
  for (size_t m = 0; m < sizes.size(); ++m) {
    if (m + 1 == sizes.size()) buckets_->arm();  // ranks communicate on the last micro-batch only
    const MicroBatchLoss loss = objective_->loss(m);
    const double weight = sizes[m].units / total;  // n_m / N
    Tensor objective = mul(loss.loss, weight);
    r.token_loss += loss.loss.item() * weight;
    if (loss.aux.defined()) {
      objective = add(objective, mul(loss.aux, aux_weight));
      r.aux_loss += loss.aux.item() * aux_weight;
    }
    if (loss_scale != 1.0) objective = mul(objective, loss_scale);
    objective.backward();
  }
  r.metrics = objective_->end_step();
}

StepResult Trainer::train_step() {
  const int64_t t = state_.step;
  StepResult r;
  r.lr = optim::learning_rate(config_.schedule, t);
  optimizer_->set_lr_factor(r.lr / config_.schedule.lr);

  backward(t, r);
  buckets_->finish();  // grad = sum over ranks of each rank's token-weighted gradient
  r.comm_wait_seconds = buckets_->last_wait_seconds();
  double losses[2] = {r.token_loss, r.aux_loss};
  comm_->allreduce_sum(losses, 2, "the all-reduce of the step's loss");
  r.token_loss = losses[0];
  r.aux_loss = losses[1];
  r.loss = r.token_loss + r.aux_loss;

  const std::vector<Tensor> params = optimizer_->parameters();
  bool finite = scaler_ ? scaler_->unscale(params) : true;
  if (config_.grad_clip > 0) {
    r.grad_norm = optim::clip_grad_norm(params, config_.grad_clip);
  } else {
    for (const Tensor& p : params)
      if (p.grad().defined()) r.grad_norm += optim::sum_of_squares(p.grad());
    r.grad_norm = std::sqrt(r.grad_norm);
  }
  if (!scaler_)
    NF_CHECK(std::isfinite(r.grad_norm), "train: step ", t + 1, ": the gradient is not finite (loss ", r.loss,
             "); the last checkpoint is intact: lower --lr, or use --grad-clip");
  finite = finite && std::isfinite(r.grad_norm);
  if (finite) {
    optimizer_->step();
    if (zero_) zero_->gather_parameters();
  }
  if (scaler_) {
    scaler_->update(!finite);
    state_.loss_scale = scaler_->scale();
    state_.good_steps = scaler_->growth_tracker();
  }
  optimizer_->zero_grad();
  r.skipped = !finite;
  ++state_.step;
  state_.tokens += r.tokens;
  return r;
}

double Trainer::evaluate(ObjectiveMetrics* metrics) {
  NF_CHECK(data_.val, "train: no validation data (--val-data, or --val-fraction above 0)");
  NoGradGuard no_grad;
  model_->eval();
  double sums[2] = {0, 0};  // every rank evaluates its rows
  const auto autocast = autocast_for(config_.precision);
  objective_->begin_validation();
  for (int64_t i = 0; i < config_.eval_batches; ++i) {
    const auto [loss_sum, weight] = objective_->eval_loss(data_.val->batch(static_cast<uint64_t>(i)));
    sums[0] += loss_sum;
    sums[1] += weight;
  }
  model_->train();
  comm_->allreduce_sum(sums, 2, "the all-reduce of the validation loss");
  const double loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  if (metrics) *metrics = objective_->end_validation(loss);
  return loss;
}

double Trainer::next_batch_loss() {
  NoGradGuard no_grad;
  model_->eval();
  const auto autocast = autocast_for(config_.precision);
  const auto [loss_sum, weight] =
      objective_->eval_loss(data_.train->batch(static_cast<uint64_t>(state_.step * config_.grad_accum)));
  model_->train();
  double sums[2] = {loss_sum, weight};
  comm_->allreduce_sum(sums, 2, "the all-reduce of the next batch's loss");
  return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
}

// |now - saved| <= 1e-3 |saved|: the same state on the same data gives the same loss up to the
// float rounding of another thread count or BLAS kernel.
void Trainer::check_next_batch_loss() {
  if (!state_.next_batch_loss) return;  // a checkpoint written before the loss was recorded
  const double saved = *state_.next_batch_loss, now = next_batch_loss();
  NF_CHECK(std::fabs(now - saved) <= 1e-3 * std::max(1.0, std::fabs(saved)), "train --resume: ", resumed_from_,
           ": the loss of the next batch (step ", state_.step + 1, ") is ", now, " now but was ", saved,
           " when the checkpoint was written: the model or its data differ from that run's (a data file changed "
           "in place, a checkpoint edited)");
}

std::string Trainer::save() {
  state_.generators = generator_states(*model_);
  // collective: every rank saves; GRPO's next loss depends on its sampled rollouts: not checked
  if (objective_->next_loss_is_reproducible()) state_.next_batch_loss = next_batch_loss();
  const std::string path = checkpoint_path(config_.out_dir, state_.step);
  // the objective's own file first (PPO's critic): a crash between the two leaves the checkpoint
  // before this one as the newest, with its own file
  if (is_root()) objective_->save(path, state_.step);
  if (zero_) {
    const nn::StateDict optimizer_state = zero_->state_dict_on_root();  // collective
    if (is_root()) save_train_checkpoint(path, *model_, optimizer_state, config_, state_);
  } else if (is_root()) {
    save_train_checkpoint(path, *model_, *optimizer_, config_, state_);
  }
  if (is_root()) prune_checkpoints(config_.out_dir, config_.keep);
  return path;
}

void Trainer::log_metrics(const std::string& json_line) {
  if (!is_root()) return;
  metrics_ << json_line << '\n';
  metrics_.flush();
  NF_CHECK(metrics_.good(), "train: cannot write ", metrics_path_, " (", std::strerror(errno),
           "); the last checkpoint is intact");
}

void Trainer::check_replicas_agree() {
  if (comm_->size() == 1) return;
  uint64_t hash = 14695981039346656037ull;  // FNV-1a over every parameter's bytes
  for (const Tensor& p : optimizer_->parameters()) {
    const auto* bytes = static_cast<const unsigned char*>(p.contiguous().raw_data());
    for (size_t i = 0; i < static_cast<size_t>(p.numel()) * p.itemsize(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  // four 16-bit pieces h_k: all ranks agree iff (sum h_k)^2 = N sum h_k^2 for each (exact in double)
  double sums[8];
  for (int k = 0; k < 4; ++k) {
    const auto piece = static_cast<double>((hash >> (16 * k)) & 0xffff);
    sums[k] = piece;
    sums[4 + k] = piece * piece;
  }
  comm_->allreduce_sum(sums, 8, "the comparison of the ranks' parameters");
  for (int k = 0; k < 4; ++k)
    NF_CHECK(sums[k] * sums[k] == static_cast<double>(comm_->size()) * sums[4 + k],
             "train: the ranks' parameters differ after step ", state_.step, " (a bug in data-parallel training)");
}

Trainer::Outcome Trainer::run(const std::atomic<bool>* stop) {
  const int64_t total = config_.schedule.total_steps;
  std::optional<util::ProgressBar> bar;
  if (!config_.quiet && is_root()) bar.emplace(total, "train", "steps", state_.step);
  auto report = [&](const std::string& line) {
    if (!is_root()) return;
    if (bar) {
      bar->message(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  double smoothed_rate = 0;
  while (state_.step < total) {
    const auto start = std::chrono::steady_clock::now();
    const StepResult r = train_step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = static_cast<double>(r.tokens) / std::max(seconds, 1e-9);
    smoothed_rate = smoothed_rate == 0 ? rate : 0.9 * smoothed_rate + 0.1 * rate;
    json line = {{"step", state_.step},   {"loss", r.loss},         {"lr", r.lr},
                 {"grad_norm", r.grad_norm}, {"tokens", state_.tokens}, {"tokens_per_s", rate}};
    if (r.aux_loss != 0) line["aux_loss"] = r.aux_loss;
    if (comm_->size() > 1) line["comm_wait_s"] = r.comm_wait_seconds;
    if (scaler_) {
      line["loss_scale"] = scaler_->scale();
      line["skipped"] = r.skipped;
    }
    for (const auto& [name, value] : r.metrics.fields) line[name] = value;
    if (!r.metrics.warning.empty()) report(r.metrics.warning);
    log_metrics(line.dump());
    if (bar) {
      const std::string objective = r.metrics.status.empty() ? "" : " " + r.metrics.status;
      char status[200];
      std::snprintf(status, sizeof status, "loss %.4f%s%s lr %.2e %s tok/s", r.loss, objective.c_str(),
                    r.skipped ? " (skipped)" : "", r.lr, util::human_count(smoothed_rate).c_str());
      bar->update(state_.step, status);
    }
    const bool at_end = state_.step == total;
    if (data_.val && ((config_.eval_every > 0 && state_.step % config_.eval_every == 0) || at_end)) {
      ObjectiveMetrics metrics;
      const double val = evaluate(&metrics);
      if (state_.best_val_loss == 0 || val < state_.best_val_loss) state_.best_val_loss = val;
      json val_line = {{"step", state_.step}, {"val_loss", val}};
      for (const auto& [name, value] : metrics.fields) val_line[name] = value;
      char text[200];
      std::snprintf(text, sizeof text, "step %lld: val loss %.4f, %s", static_cast<long long>(state_.step), val,
                    metrics.status.c_str());
      log_metrics(val_line.dump());
      report(text);
    }
    bool stopping = stop && stop->load();
    if (comm_->size() > 1) {  // every rank stops at the same step (mpirun forwards Ctrl-C to all)
      double any = stopping ? 1 : 0;
      comm_->allreduce_sum(&any, 1, "the agreement to stop");
      stopping = any > 0;
    }
    if ((config_.save_every > 0 && state_.step % config_.save_every == 0) || at_end || stopping) {
      const std::string path = save();
      if (stopping || at_end) report("checkpoint written: " + path);
    }
    if (stopping) {
      if (bar) bar->finish();
      check_replicas_agree();
      return Outcome::stopped;
    }
  }
  if (bar) bar->finish();
  check_replicas_agree();
  if (comm_->size() > 1) report("parameters identical on all " + std::to_string(comm_->size()) + " ranks");
  return Outcome::finished;
}

}  // namespace nf::train
