// Learning-rate schedules against PyTorch's schedulers (tools/golden/fixtures_schedules.py): 003's
// warmup + cosine (SequentialLR of LambdaLR and CosineAnnealingLR), nanochat's warmup-stable-decay
// and MiniMind's cosine to 0.1 (LambdaLR), and constant; every step's lr within 1e-12 relative.
#include <cmath>

#include "nanoformer/optim/schedule.h"
#include "support/golden.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const testing::Golden golden("schedules");
  const nlohmann::json& c = golden.cases().at(name);
  ScheduleConfig config{.kind = schedule_kind_from_name(c.at("kind")), .lr = c.at("lr"), .total_steps = c.at("total_steps")};
  config.warmup_steps = c.value("warmup_steps", int64_t{0});
  config.min_lr = c.value("min_lr", 0.0);
  config.warmdown_fraction = c.value("warmdown_fraction", 0.2);
  config.final_lr_fraction = c.value("final_lr_fraction", 0.0);
  const std::vector<double> expected = golden.get(name, "lr").to_vector<double>();
  ASSERT_EQ(static_cast<int64_t>(expected.size()), config.total_steps);
  for (size_t t = 0; t < expected.size(); ++t)
    EXPECT_NEAR(learning_rate(config, static_cast<int64_t>(t)), expected[t], 1e-12 * config.lr) << "step " << t;
}

TEST(Schedules, ConstantMatchesTorch) { check_case("constant"); }
TEST(Schedules, WarmupCosineMatchesTorchsSequentialLR) { check_case("warmup_cosine"); }
TEST(Schedules, WarmupStableDecayMatchesNanochatsMultiplier) { check_case("wsd"); }
TEST(Schedules, MiniMindCosineMatchesItsGetLr) { check_case("minimind_cosine"); }

TEST(Schedules, BadConfigsAreNamed) {
  EXPECT_THROW_WITH(schedule_kind_from_name("cosine"), "schedule 'cosine' is unknown", "warmup_cosine");
  EXPECT_THROW_WITH(learning_rate({.kind = ScheduleKind::warmup_cosine, .total_steps = 10, .warmup_steps = 10}, 0),
                    "warmup_steps 10");
  EXPECT_THROW_WITH(learning_rate({.lr = 1e-3, .min_lr = 1e-2}, 0), "min_lr 0.01");
  EXPECT_THROW_WITH(learning_rate({}, -1), "step -1");
  EXPECT_THROW_WITH(learning_rate({.lr = 0}, 0), "lr 0 (--lr) must be > 0");
  for (const ScheduleKind kind : {ScheduleKind::constant, ScheduleKind::minimind_cosine})
    EXPECT_THROW_WITH(learning_rate({.kind = kind, .total_steps = 10, .warmup_steps = 2}, 0),
                      "schedule " + schedule_kind_name(kind) + " has no warmup", "warmup_steps 2 (--warmup)");
  for (const ScheduleKind kind : {ScheduleKind::warmup_cosine, ScheduleKind::wsd})
    EXPECT_NO_THROW(learning_rate({.kind = kind, .total_steps = 10, .warmup_steps = 2}, 0));
}

}  // namespace
}  // namespace nf::optim
