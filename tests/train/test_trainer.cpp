// The training loop (train/trainer.h) on a tiny LLaMA-style model:
// - accumulating 4 micro-batches of 2 gives the update of one batch of 8 (uneven ignored targets
//   included, so the token weighting matters);
// - stopping after 3 steps and resuming from the checkpoint ends bit-identical to 6 uninterrupted
//   steps, dropout included (its generators are part of the checkpoint);
// - a resume with another batch size, a run into a directory that holds checkpoints, and a model
//   that cannot fit in memory are refused with errors naming the numbers;
// - with LoRA, only the adapters train (the base stays bit-identical to the base file the run
//   names), checkpoints hold the adapters and their optimizer state alone, a resume continues bit
//   for bit (adapter dropout included), and the merged final checkpoint gives the trained logits;
// - a resume whose newest checkpoint has a flipped bit names it, keeps it as .damaged and resumes
//   from the one before, still ending bit-identical; one whose data changed since the checkpoint
//   (the next batch's loss differs from the one recorded) is refused.
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "nanoformer/nanoformer.h"
#include "nanoformer/train/trainer.h"
#include "support/damaged_file.h"
#include "support/testing.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 32, kContext = 8;

// Rows [i B, (i + 1) B) of fixed (N, T) inputs and targets.
class FixedBatches : public data::BatchSource {
 public:
  FixedBatches(Tensor inputs, Tensor targets, int64_t batch) : inputs_(inputs), targets_(targets), batch_(batch) {}
  data::Batch batch(uint64_t index) const override {
    const int64_t rows = inputs_.shape()[0];
    const int64_t start = static_cast<int64_t>(index) * batch_ % rows;
    data::Batch b;
    b.inputs = inputs_.slice(0, start, start + batch_).contiguous();
    b.targets = targets_.slice(0, start, start + batch_).contiguous();
    const Tensor counted = ne(b.targets, Tensor::scalar(-100, DType::i64));
    b.target_tokens = static_cast<int64_t>(sum(counted.to(DType::f64)).item());
    return b;
  }
  int64_t batch_size() const override { return batch_; }
  int64_t context() const override { return inputs_.shape()[1]; }
  std::string describe() const override { return "fixed batches"; }

 private:
  Tensor inputs_, targets_;
  int64_t batch_;
};

// 32 rows of random tokens; targets are the next token, with a few ignored (-100), unevenly.
data::TrainingData fixed_data(int64_t batch, uint64_t seed = 7) {
  Generator gen(seed);
  const Tensor tokens = randint(0, kVocab, {32, kContext + 1}, gen);
  Tensor inputs = tokens.slice(1, 0, kContext).contiguous();
  Tensor targets = tokens.slice(1, 1, kContext + 1).contiguous();
  int64_t* t = targets.data<int64_t>();
  for (int64_t i = 0; i < targets.numel(); i += 3 + (i % 5)) t[i] = -100;
  data::TrainingData data;
  data.train = std::make_unique<FixedBatches>(inputs, targets, batch);
  data.val = std::make_unique<FixedBatches>(inputs, targets, batch);
  return data;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nf_trainer_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainConfig config(const std::string& run, int64_t batch, int64_t accum, int64_t steps) const {
    TrainConfig c;
    c.model = "llama2c-stories260k";
    c.model_overrides = {"vocab_size=32", "dim=32", "n_layers=2", "n_heads=4", "n_kv_heads=2", "max_seq_len=16",
                         "dropout=0.1"};
    c.data.train_paths = {"(fixed)"};
    c.data.batch_size = batch;
    c.data.context = kContext;
    c.grad_accum = accum;
    c.optimizer.name = "adamw";
    c.optimizer.lr = 1e-2;
    c.optimizer.weight_decay = 0.1;
    c.schedule = {.kind = optim::ScheduleKind::warmup_cosine, .lr = 1e-2, .total_steps = steps, .warmup_steps = steps > 2 ? 2 : 0,
                  .min_lr = 1e-3};
    c.eval_every = 2;
    c.eval_batches = 2;
    c.out_dir = (dir_ / run).string();
    c.quiet = true;
    return c;
  }

  fs::path dir_;
};

void expect_same_parameters(models::DecoderLM& a, models::DecoderLM& b, double atol) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE(pa[i].first);
    if (atol == 0) {
      ASSERT_EQ(0, std::memcmp(pa[i].second.raw_data(), pb[i].second.raw_data(), pa[i].second.numel() * sizeof(float)));
    } else {
      EXPECT_TENSOR_CLOSE(pa[i].second, pb[i].second, atol, 0.0);
    }
  }
}

TEST_F(TrainerTest, AccumulatingFourMicroBatchesEqualsOneBatchOfFour) {
  // SGD with lr 1 moves each parameter by its gradient, so the comparison is one of gradients.
  TrainConfig big = config("big", 8, 1, 3), small = config("small", 2, 4, 3);
  for (TrainConfig* c : {&big, &small}) {
    c->optimizer.name = "sgd";
    c->optimizer.momentum = 0;
    c->optimizer.weight_decay = 0;
    c->optimizer.lr = c->schedule.lr = 1.0;
    c->schedule.kind = optim::ScheduleKind::constant;
    c->schedule.warmup_steps = 0;  // constant has none
    c->grad_clip = 0;
    c->model_overrides.back() = "dropout=0";
  }
  Trainer a(big, fixed_data(8)), b(small, fixed_data(2));
  for (int step = 0; step < 3; ++step) {
    const StepResult ra = a.train_step(), rb = b.train_step();
    EXPECT_EQ(ra.tokens, rb.tokens);
    EXPECT_NEAR(ra.loss, rb.loss, 1e-6);
    EXPECT_NEAR(ra.grad_norm, rb.grad_norm, 1e-5);
  }
  expect_same_parameters(a.model(), b.model(), 1e-6);
}

// Runs `split` for 3 steps, saves, resumes it to the end and checks that it ends bit-identical to
// `uninterrupted` (which has run to the end).
void expect_resume_is_exact(TrainConfig split, Trainer& uninterrupted) {
  {
    Trainer first(split, fixed_data(4));
    for (int i = 0; i < 3; ++i) first.train_step();
    first.save();
  }
  split.resume = true;
  Trainer resumed(split, fixed_data(4));
  EXPECT_EQ(resumed.state().step, 3);
  EXPECT_EQ(resumed.run(), Trainer::Outcome::finished);
  expect_same_parameters(uninterrupted.model(), resumed.model(), 0.0);
  EXPECT_EQ(uninterrupted.state().tokens, resumed.state().tokens);
}

TEST_F(TrainerTest, ResumeContinuesBitForBit) {
  const TrainConfig whole = config("whole", 4, 2, 6);
  Trainer uninterrupted(whole, fixed_data(4));
  EXPECT_EQ(uninterrupted.run(), Trainer::Outcome::finished);

  expect_resume_is_exact(config("split", 4, 2, 6), uninterrupted);
}

TEST_F(TrainerTest, ADamagedCheckpointIsKeptAndTheRunResumesFromTheOneBefore) {
  const TrainConfig whole = config("whole", 4, 1, 6);
  Trainer uninterrupted(whole, fixed_data(4));
  EXPECT_EQ(uninterrupted.run(), Trainer::Outcome::finished);

  TrainConfig split = config("split", 4, 1, 6);
  std::string damaged;
  {
    Trainer first(split, fixed_data(4));
    for (int i = 0; i < 2; ++i) first.train_step();
    first.save();
    first.train_step();
    damaged = first.save();
  }
  const std::string moment = [&] {  // a tensor of the optimizer state
    const io::SafetensorsFile file = io::SafetensorsFile::open(damaged);
    for (const io::TensorEntry& e : file.entries())
      if (e.name.rfind("train/optimizer/", 0) == 0 && shape_numel(e.shape) >= 4) return e.name;
    return std::string();
  }();
  ASSERT_FALSE(moment.empty());
  testing::flip_lowest_bit(damaged, moment, 3);
  EXPECT_THROW_WITH(load_optimizer_state(damaged, *std::make_unique<optim::OptimizerSet>(split.optimizer, uninterrupted.model())),
                    damaged, "does not match its checksum");
  split.resume = true;
  Trainer resumed(split, fixed_data(4));
  EXPECT_EQ(resumed.state().step, 2);
  EXPECT_FALSE(fs::exists(damaged));
  EXPECT_TRUE(fs::exists(damaged + ".damaged"));
  EXPECT_EQ(resumed.run(), Trainer::Outcome::finished);
  expect_same_parameters(uninterrupted.model(), resumed.model(), 0.0);
  EXPECT_TRUE(fs::exists(damaged + ".damaged")) << "a later save or prune removed the damaged file";
}

TEST_F(TrainerTest, AResumeRefusesDataThatChangedSinceTheCheckpoint) {
  TrainConfig c = config("changed", 4, 1, 6);
  {
    Trainer first(c, fixed_data(4));
    first.train_step();
    first.save();
    EXPECT_TRUE(read_train_checkpoint(checkpoint_path(c.out_dir, 1)).state.next_batch_loss.has_value());
  }
  c.resume = true;
  EXPECT_THROW_WITH(Trainer(c, fixed_data(4, /*seed=*/8)), "the loss of the next batch (step 2)",
                    "when the checkpoint was written");
  EXPECT_NO_THROW(Trainer(c, fixed_data(4)));
}

TEST_F(TrainerTest, StopFlagWritesACheckpoint) {
  const std::atomic<bool> stop{true};
  Trainer t(config("stop", 4, 1, 10), fixed_data(4));
  EXPECT_EQ(t.run(&stop), Trainer::Outcome::stopped);
  EXPECT_EQ(t.state().step, 1);
  const auto saved = list_checkpoints((dir_ / "stop").string());
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].first, 1);
  EXPECT_EQ(read_train_checkpoint(saved[0].second).state.step, 1);
  // The training checkpoint is a model checkpoint too.
  const auto model = formats::load_decoder_lm(saved[0].second);
  expect_same_parameters(t.model(), *model, 0.0);
}

TEST_F(TrainerTest, KeepsTheNewestCheckpoints) {
  TrainConfig c = config("keep", 4, 1, 5);
  c.save_every = 1;
  c.keep = 2;
  Trainer(c, fixed_data(4)).run();
  const auto saved = list_checkpoints(c.out_dir);
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].first, 4);
  EXPECT_EQ(saved[1].first, 5);
}

TEST_F(TrainerTest, RefusesWhatWouldLoseWork) {
  TrainConfig c = config("guard", 4, 1, 2);
  Trainer(c, fixed_data(4)).run();
  // Another run into the same directory would overwrite its checkpoints.
  EXPECT_THROW_WITH(Trainer(c, fixed_data(4)), "already holds checkpoints", "--resume");
  // A resume with another batch size would not continue the same run.
  TrainConfig other = c;
  other.resume = true;
  other.data.batch_size = 2;
  EXPECT_THROW_WITH(Trainer(other, fixed_data(2)), "other settings", "data.batch_size: 4 -> 2");
  // Nothing to resume from.
  TrainConfig empty = config("empty", 4, 1, 2);
  empty.resume = true;
  EXPECT_THROW_WITH(Trainer(empty, fixed_data(4)), "no checkpoint", empty.out_dir);
  EXPECT_EQ(list_checkpoints(c.out_dir).size(), 1u);
}

TEST_F(TrainerTest, RefusesAModelThatCannotFit) {
  models::DecoderLMConfig big = models::preset_config("gpt2-124m");
  EXPECT_THROW_WITH(check_training_memory(big, 8, 1024, int64_t{1} << 30), "needs about", "weights",
                    "activations", "for batch 8 x context 1024", "only 1.00 GiB");
  EXPECT_NO_THROW(check_training_memory(big, 1, 64, int64_t{64} << 30));
  TrainConfig huge = config("huge", 4, 1, 2);
  huge.model_overrides.push_back("dim=65536");
  huge.model_overrides.push_back("n_heads=64");
  huge.model_overrides.push_back("n_kv_heads=64");
  huge.model_overrides.push_back("n_layers=512");
  EXPECT_THROW_WITH(Trainer(huge, fixed_data(4)), "needs about", "memory is available");
  // LoRA: the base frozen, the adapters counted (value, gradient, two moments)
  EXPECT_NO_THROW(check_training_memory(big, 1, 64, int64_t{1} << 30, int64_t{1} << 20));
  EXPECT_THROW_WITH(check_training_memory(big, 1, 64, int64_t{1} << 30, int64_t{1} << 28), "this LoRA run needs about",
                    "LoRA adapters 268435456 parameters: 4.00 GiB", "only 1.00 GiB");
  TrainConfig huge_rank = config("huge_rank", 4, 1, 2);
  huge_rank.lora = models::LoRAOptions{.rank = int64_t{1} << 40};
  EXPECT_THROW_WITH(Trainer(huge_rank, fixed_data(4)), "this LoRA run needs about", "--lora-rank");
  EXPECT_FALSE(fs::exists(huge_rank.out_dir));
}

const models::LoRAOptions kLoRA{.rank = 2, .alpha = 4.0, .dropout = 0.1, .targets = {"q", "v", "gate", "down"}};

// The parameters of `model` that are not adapters equal `base`'s bit for bit.
void expect_base_unchanged(models::DecoderLM& model, const models::Model& base) {
  const nn::StateDict own = model.state_dict();
  for (const auto& [name, t] : base.state_dict()) {
    SCOPED_TRACE(name);
    ASSERT_EQ(0, std::memcmp(own.at(name).raw_data(), t.raw_data(), t.numel() * sizeof(float)));
  }
}

TEST_F(TrainerTest, LoRATrainsOnlyAdaptersAndResumesBitForBit) {
  TrainConfig whole = config("whole", 4, 2, 6);
  whole.lora = kLoRA;
  Trainer uninterrupted(whole, fixed_data(4));
  const auto adapters = models::lora_parameters(uninterrupted.model());
  EXPECT_EQ(adapters.size(), 2u * 4u * 2u);  // 2 layers x 4 targets x (A, B)
  int64_t adapter_values = 0;
  for (const auto& [name, t] : adapters) adapter_values += t.numel();
  EXPECT_EQ(uninterrupted.model().num_parameters(/*trainable_only=*/true), adapter_values);
  EXPECT_EQ(uninterrupted.run(), Trainer::Outcome::finished);
  const auto base = formats::load_checkpoint(lora_base_path(whole));  // the fresh base the run wrote
  expect_base_unchanged(uninterrupted.model(), *base);

  TrainConfig split = whole;
  split.out_dir = (dir_ / "split").string();
  expect_resume_is_exact(split, uninterrupted);

  // The checkpoint: the adapters and their optimizer state, nothing of the base.
  const std::string last = list_checkpoints(whole.out_dir).back().second;
  const io::SafetensorsFile file = io::SafetensorsFile::open(last);
  std::set<std::string> adapter_names;
  for (const auto& [name, t] : adapters) adapter_names.insert(name);
  for (const io::TensorEntry& entry : file.entries())
    EXPECT_TRUE(adapter_names.count(entry.name) || entry.name.rfind("train/optimizer/", 0) == 0) << entry.name;
  EXPECT_EQ(formats::read_lora_adapter_info(last).base_path, lora_base_path(whole));
  EXPECT_THROW_WITH(formats::load_checkpoint(last), "nanoformer-lora", "nanoformer lora merge");

  // Merging the final checkpoint into the base gives the trained model's logits.
  const auto merged = formats::load_decoder_lm(lora_base_path(whole));
  formats::load_lora_adapter(*merged, last);
  models::merge_lora(*merged);
  const Tensor ids = fixed_data(4).val->batch(0).inputs;
  uninterrupted.model().eval();
  merged->eval();
  EXPECT_TENSOR_CLOSE(merged->forward(ids).logits, uninterrupted.model().forward(ids).logits, 1e-5, 0.0);
}

TEST_F(TrainerTest, LoRAFineTunesAnInitFromModelAndRefusesAnotherLoRAOnResume) {
  models::DecoderLM pretrained(models::parse_model_config(
      models::model_config_with_overrides("llama2c-stories260k", config("x", 4, 1, 1).model_overrides)));
  const std::string init = (dir_ / "pretrained.safetensors").string();
  fs::create_directories(dir_);
  formats::save_checkpoint(pretrained, init);
  TrainConfig c = config("ft", 4, 1, 2);
  c.init_from = init;
  c.model_overrides.clear();  // init_from as it is: the adapters name it as their base
  c.lora = kLoRA;
  Trainer t(c, fixed_data(4));
  t.run();
  expect_base_unchanged(t.model(), pretrained);
  EXPECT_FALSE(fs::exists(lora_base_path(config("ft", 4, 1, 2))));  // the base is init_from, not a copy
  EXPECT_EQ(formats::read_lora_adapter_info(list_checkpoints(c.out_dir).back().second).base_path, init);

  TrainConfig other = c;
  other.resume = true;
  other.lora->rank = 4;
  EXPECT_THROW_WITH(Trainer(other, fixed_data(4)), "other settings", "lora.rank: 2 -> 4");
  other.lora.reset();
  EXPECT_THROW_WITH(Trainer(other, fixed_data(4)), "other settings", "lora: {");
  TrainConfig bad = config("bad", 4, 1, 2);
  bad.lora = models::LoRAOptions{.rank = 0};
  EXPECT_THROW_WITH(Trainer(bad, fixed_data(4)), "rank 0 must be >= 1");
  bad.lora = models::LoRAOptions{.targets = {"fc"}};
  EXPECT_THROW_WITH(Trainer(bad, fixed_data(4)), "target 'fc' names no layer", "q, k, v, o, gate, up, down");
}

}  // namespace
}  // namespace nf::train
