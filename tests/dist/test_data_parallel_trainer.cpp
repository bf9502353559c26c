// The trainer on two ranks in one process (support/fake_communicator.h, one thread per rank) equals
// one process at twice the batch, for an MoE model whose routing differs between the ranks: many
// experts, top-1, so that some experts get tokens on one rank only and some on none; one bucket per
// parameter, so that every difference in the order gradients become final is a different order
// of all-reduces; with and without ZeRO-1 and accumulation. Red before the fixed bucket order:
// the ranks started their all-reduces in different orders.
#include <filesystem>
#include <thread>

#include "nanoformer/data/sharded_batches.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/train/trainer.h"
#include "support/fake_communicator.h"
#include "support/testing.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 32, kContext = 8, kRowsPerRank = 2;

// Rows [i B, (i + 1) B) of fixed random (N, T) inputs and next-token targets.
class FixedBatches : public data::BatchSource {
 public:
  explicit FixedBatches(int64_t batch) : batch_(batch) {
    Generator gen(11);
    const Tensor tokens = randint(0, kVocab, {32, kContext + 1}, gen);
    inputs_ = tokens.slice(1, 0, kContext).contiguous();
    targets_ = tokens.slice(1, 1, kContext + 1).contiguous();
  }
  data::Batch batch(uint64_t index) const override {
    const int64_t start = static_cast<int64_t>(index) * batch_ % inputs_.shape()[0];
    data::Batch b;
    b.inputs = inputs_.slice(0, start, start + batch_).contiguous();
    b.targets = targets_.slice(0, start, start + batch_).contiguous();
    b.target_tokens = b.targets.numel();
    return b;
  }
  int64_t batch_size() const override { return batch_; }
  int64_t context() const override { return kContext; }
  std::string describe() const override { return "fixed batches"; }

 private:
  Tensor inputs_, targets_;
  int64_t batch_;
};

struct Case {
  int64_t accum;
  int zero;
};

class DataParallelTrainer : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nf_dp_trainer_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(GetParam().accum) + "_" + std::to_string(GetParam().zero));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainConfig config(const std::string& run, int64_t ranks) const {
    TrainConfig c;
    c.model = "llama2c-stories260k";
    c.model_overrides = {"vocab_size=32", "dim=32", "n_layers=2", "n_heads=4", "n_kv_heads=2", "max_seq_len=16",
                         R"(moe={"n_experts": 12, "n_shared_experts": 0, "top_k": 1, "aux_loss_alpha": 0.1,
                                 "seq_aux": true})"};
    c.data.train_paths = {"(fixed)"};
    c.data.batch_size = kRowsPerRank * (3 - ranks);  // one process: both ranks' rows
    c.data.context = kContext;
    c.grad_accum = GetParam().accum;
    // SGD with momentum: an update linear in the gradient, so the comparison is one of gradients
    // (Adam divides by sqrt(v), which turns the float rounding of a gradient element that nearly
    // cancels into an update of up to lr), with a momentum buffer for ZeRO-1 to shard
    c.optimizer.name = "sgd";
    c.optimizer.momentum = 0.9;
    c.optimizer.lr = 1e-2;
    c.optimizer.weight_decay = 0.1;
    c.schedule = {.kind = optim::ScheduleKind::constant, .lr = 1e-2, .total_steps = 4};
    c.eval_every = 0;
    c.out_dir = (dir_ / run).string();
    c.quiet = true;
    c.ranks = ranks;
    c.distributed.zero = GetParam().zero;
    c.distributed.bucket_bytes = 4;  // one parameter per bucket
    return c;
  }
  data::TrainingData data(int rank, int ranks) const {
    data::TrainingData d;
    auto global = std::make_unique<FixedBatches>(kRowsPerRank * 2);
    if (ranks == 1)
      d.train = std::move(global);
    else
      d.train = std::make_unique<data::ShardedBatches>(std::move(global), rank, ranks);
    return d;
  }

  fs::path dir_;
};

TEST_P(DataParallelTrainer, TwoRanksOfAnMoEEqualOneProcessAtTwiceTheBatch) {
  Trainer one(config("one", 1), data(0, 1));
  one.run();

  testing::FakeRanks ranks(2);
  std::vector<std::unique_ptr<Trainer>> trainers(2);
  std::vector<std::exception_ptr> failures(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        trainers[static_cast<size_t>(r)] = std::make_unique<Trainer>(config("rank" + std::to_string(r), 2), data(r, 2),
                                                                   &ranks.rank(r));
        trainers[static_cast<size_t>(r)]->run();
      } catch (...) {
        failures[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const auto& e : failures) {
    if (e) std::rethrow_exception(e);
  }
  EXPECT_TRUE(ranks.errors().empty()) << ranks.errors().front();
  EXPECT_EQ(ranks.started_by(0), ranks.started_by(1));

  // the premise: some expert got tokens on one rank only in the last step
  const auto counts = [](Trainer& t) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& layer : *t.model().layers) out.push_back(layer->moe->tokens_per_expert());
    return out;
  };
  const auto c0 = counts(*trainers[0]), c1 = counts(*trainers[1]);
  bool one_sided = false;
  for (size_t l = 0; l < c0.size(); ++l)
    for (size_t e = 0; e < c0[l].size(); ++e) one_sided |= (c0[l][e] == 0) != (c1[l][e] == 0);
  EXPECT_TRUE(one_sided) << "the routing did not leave an expert idle on one rank only";

  const auto expected = one.model().named_parameters();
  for (const auto& trainer : trainers) {
    const auto got = trainer->model().named_parameters();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(got[i].first);
      EXPECT_TENSOR_CLOSE(got[i].second, expected[i].second, 1e-6, 0.0);
    }
  }
  // the optimizer state too, through the checkpoints (ZeRO-1 gathers it to rank 0)
  const auto a = io::load_safetensors(checkpoint_path((dir_ / "one").string(), 4));
  const auto b = io::load_safetensors(checkpoint_path((dir_ / "rank0").string(), 4));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(b.count(name));
    if (tensor.dtype() == DType::f32) {
      EXPECT_TENSOR_CLOSE(b.at(name), tensor, 1e-6, 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AccumulationAndZero, DataParallelTrainer,
                         ::testing::Values(Case{1, 0}, Case{2, 0}, Case{1, 1}, Case{2, 1}),
                         [](const auto& info) {
                           return "accum" + std::to_string(info.param.accum) + "_zero" + std::to_string(info.param.zero);
                         });

}  // namespace
}  // namespace nf::train
