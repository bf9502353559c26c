// ShardedBatches: rank r of N gets rows [r B, (r + 1) B) of each global batch of N B rows, so the
// ranks' rows are disjoint and together are the global batch; target tokens are recounted per
// shard (masked targets excluded); bad rank counts are named.
#include <memory>

#include "nanoformer/data/sharded_batches.h"
#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf::data {
namespace {

// Batch i: row b holds 100 i + 10 b + t; targets masked where (b + t + i) % 3 == 0.
class NumberedBatches final : public BatchSource {
 public:
  explicit NumberedBatches(int64_t rows) : rows_(rows) {}
  Batch batch(uint64_t index) const override {
    Batch out;
    out.inputs = Tensor::empty({rows_, 4}, DType::i64);
    out.targets = Tensor::empty({rows_, 4}, DType::i64);
    for (int64_t b = 0; b < rows_; ++b)
      for (int64_t t = 0; t < 4; ++t) {
        const auto i = static_cast<int64_t>(index);
        out.inputs.data<int64_t>()[b * 4 + t] = 100 * i + 10 * b + t;
        const bool masked = (b + t + i) % 3 == 0;
        out.targets.data<int64_t>()[b * 4 + t] = masked ? kIgnoreIndex : 1;
        out.target_tokens += masked ? 0 : 1;
      }
    return out;
  }
  int64_t batch_size() const override { return rows_; }
  int64_t context() const override { return 4; }
  std::string describe() const override { return "numbered"; }

 private:
  int64_t rows_;
};

TEST(ShardedBatches, RanksTakeDisjointRowsThatTogetherAreTheGlobalBatch) {
  const NumberedBatches global(6);
  for (uint64_t index : {0u, 5u}) {
    const Batch whole = global.batch(index);
    int64_t tokens = 0;
    std::vector<int64_t> rows;
    for (int rank = 0; rank < 3; ++rank) {
      const ShardedBatches shard(std::make_unique<NumberedBatches>(6), rank, 3);
      EXPECT_EQ(shard.batch_size(), 2);
      const Batch b = shard.batch(index);
      ASSERT_EQ(b.inputs.shape(), (Shape{2, 4}));
      for (int64_t v : b.inputs.to_vector<int64_t>()) rows.push_back(v);
      int64_t counted = 0;
      for (int64_t y : b.targets.to_vector<int64_t>()) counted += y != kIgnoreIndex ? 1 : 0;
      EXPECT_EQ(b.target_tokens, counted) << "rank " << rank;
      tokens += b.target_tokens;
    }
    EXPECT_EQ(rows, whole.inputs.to_vector<int64_t>());
    EXPECT_EQ(tokens, whole.target_tokens);
  }
}

TEST(ShardedBatches, BadRankOrBatchIsNamed) {
  EXPECT_THROW_WITH(ShardedBatches(std::make_unique<NumberedBatches>(6), 3, 3), "rank 3 of 3");
  EXPECT_THROW_WITH(ShardedBatches(std::make_unique<NumberedBatches>(5), 0, 2), "does not split into 2 ranks");
}

}  // namespace
}  // namespace nf::data
