#pragma once
// The optimizer fixtures' test problem (tools/golden/fixtures_optimizers.py quadratic_case):
// parameters p_i trained on sum_i sum(0.5 a_i p_i^2 + b_i p_i), whose gradient a_i p_i + b_i moves
// with them. Roles "p{i}", "a{i}", "b{i}" and "p{i}.step{k}", and two groups {p0, p1} and {p2}
// whose lr and weight_decay the case parameters hold.
#include <string>
#include <vector>

#include "nanoformer/nanoformer.h"
#include "nanoformer/optim/optimizer.h"
#include "support/golden.h"

namespace nf::optim {

// "p1", "a1", or "p1.step3" (k > 0).
inline std::string role(char what, int i, int k = 0) {
  std::string r(1, what);
  r += std::to_string(i);
  if (k > 0) r += ".step" + std::to_string(k);
  return r;
}

struct QuadraticProblem {
  static constexpr int kParams = 3, kSteps = 10;

  QuadraticProblem(const testing::Golden& golden, const std::string& name) {
    for (int i = 0; i < kParams; ++i) {
      p.push_back(golden.input(name, role('p', i)));
      a.push_back(golden.get(name, role('a', i)));
      b.push_back(golden.get(name, role('b', i)));
    }
  }

  // The case's two groups over p.
  std::vector<optim::ParamGroup> groups(const nlohmann::json& c) const {
    return {{{p[0], p[1]}, c["groups"][0]["lr"], c["groups"][0]["weight_decay"]},
            {{p[2]}, c["groups"][1]["lr"], c["groups"][1]["weight_decay"]}};
  }

  // Sets every gradient to a p + b (by backward through the loss).
  void backward() const {
    Tensor loss = sum(a[0] * p[0] * p[0] * 0.5 + b[0] * p[0]);
    for (int i = 1; i < kParams; ++i) loss = loss + sum(a[i] * p[i] * p[i] * 0.5 + b[i] * p[i]);
    loss.backward();
  }

  std::vector<Tensor> p, a, b;
};

}  // namespace nf::optim
