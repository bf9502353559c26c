// Updating a slice of a parameter (Optimizer::set_owned_range, the basis of ZeRO-1): two optimizers
// that own the two halves of the same parameters, each stepping on its copy, together give
// bit for bit the parameters and state one optimizer gives over the whole; a rule that needs
// whole matrices (Muon) refuses a slice.
#include <cstring>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/adam.h"
#include "nanoformer/optim/muon.h"
#include "nanoformer/optim/sgd.h"
#include "support/testing.h"

namespace nf::optim {
namespace {

Tensor parameter(uint64_t seed, Shape shape) {
  Generator gen(seed);
  Tensor p = randn(shape, gen);
  p.set_requires_grad(true);
  return p;
}

// Five steps of `make(groups)` on (a, b) with gradients tanh(p + step); `owned(opt)` shards it.
template <class Make, class Shard>
std::vector<Tensor> train(Make make, Shard shard, std::vector<Tensor>& slots) {
  std::vector<Tensor> params = {parameter(1, {5, 7}), parameter(2, {9})};
  auto opt = make(std::vector<ParamGroup>{ParamGroup({params[0]}, 0.01, 0.1, "decay"), ParamGroup({params[1]}, 0.02)});
  shard(*opt);
  for (int step = 0; step < 5; ++step) {
    for (Tensor& p : params) p.set_grad(tanh(add(p.detach(), static_cast<double>(step))));
    opt->step();
  }
  for (size_t g = 0; g < 2; ++g)
    for (const Tensor& s : opt->param_state(g, 0).slots) slots.push_back(s);
  return params;
}

template <class Make>
void expect_halves_match_whole(Make make) {
  std::vector<Tensor> whole_slots, low_slots, high_slots;
  const std::vector<Tensor> whole = train(make, [](Optimizer&) {}, whole_slots);
  const std::vector<Tensor> low = train(make, [](Optimizer& o) { o.set_owned_range(0, 0, 0, 20), o.set_owned_range(1, 0, 0, 4); }, low_slots);
  const std::vector<Tensor> high = train(make, [](Optimizer& o) { o.set_owned_range(0, 0, 20, 35), o.set_owned_range(1, 0, 4, 9); }, high_slots);
  const int64_t split[2] = {20, 4};
  for (size_t i = 0; i < 2; ++i) {
    const auto w = whole[i].to_vector<float>(), l = low[i].to_vector<float>(), h = high[i].to_vector<float>();
    for (size_t k = 0; k < w.size(); ++k)
      EXPECT_EQ(w[k], static_cast<int64_t>(k) < split[i] ? l[k] : h[k]) << "parameter " << i << " value " << k;
  }
  ASSERT_EQ(whole_slots.size(), low_slots.size());
  for (size_t s = 0; s < whole_slots.size(); ++s) {
    const auto w = whole_slots[s].to_vector<float>(), l = low_slots[s].to_vector<float>(), h = high_slots[s].to_vector<float>();
    ASSERT_EQ(w.size(), l.size() + h.size()) << "a sharded slot holds its slice only";
    for (size_t k = 0; k < w.size(); ++k) EXPECT_EQ(w[k], k < l.size() ? l[k] : h[k - l.size()]) << "slot " << s;
  }
}

TEST(OptimizerSlices, AdamWHalvesMatchTheWholeBitForBit) {
  expect_halves_match_whole([](std::vector<ParamGroup> g) { return std::make_unique<AdamW>(std::move(g), AdamOptions{}); });
}

TEST(OptimizerSlices, AdamAndSgdHalvesMatchTheWholeBitForBit) {
  expect_halves_match_whole([](std::vector<ParamGroup> g) { return std::make_unique<Adam>(std::move(g), AdamOptions{}); });
  expect_halves_match_whole(
      [](std::vector<ParamGroup> g) { return std::make_unique<SGD>(std::move(g), SGDOptions{.momentum = 0.9}); });
}

TEST(OptimizerSlices, FullStateLoadsIntoASlice) {
  Tensor p = parameter(3, {4, 3});
  Adam full({ParamGroup({p}, 0.01)});
  p.set_grad(tanh(p.detach()));
  full.step();
  Adam sliced({ParamGroup({p}, 0.01)});
  sliced.set_owned_range(0, 0, 5, 9);
  sliced.load_param_state(0, 0, full.param_state(0, 0));
  const auto whole = full.param_state(0, 0).slots[0].to_vector<float>();
  EXPECT_EQ(sliced.param_state(0, 0).slots[0].to_vector<float>(), std::vector<float>(whole.begin() + 5, whole.begin() + 9));
}

TEST(OptimizerSlices, MuonRefusesASlice) {
  Muon muon({ParamGroup({parameter(4, {4, 4})}, 0.02)});
  EXPECT_THROW(muon.set_owned_range(0, 0, 0, 8), Error);
}

}  // namespace
}  // namespace nf::optim
