#pragma once
// Shared by the checkpoint-interop tests: a per-test temporary directory, the largest element-wise
// difference of two tensors (printed as the measured error), and the gradient check against an
// oracle's gradients mapped onto our names.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "nanoformer/core/tensor.h"
#include "nanoformer/nn/module.h"
#include "support/testing.h"

namespace nf::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nf_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "_" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A copy of the folder `source` inside the temporary directory (to edit), under its own name.
  std::string copy_folder(const std::string& source) const {
    const std::string name = std::filesystem::path(source).filename().string();
    std::filesystem::copy(source, dir_ / name, std::filesystem::copy_options::recursive);
    return path(name);
  }

  std::filesystem::path dir_;
};

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The tensors of `file` named "<prefix><name>", under <name> ("grad.model.norm.weight" -> "model.norm.weight").
inline std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& file, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : file)
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = t;
  return out;
}

// Every parameter of `model` has a gradient equal to `expected` (the oracle's, mapped onto our names),
// and `expected` holds nothing else; returns the largest absolute difference.
inline double expect_gradients(const nn::Module& model, const nn::StateDict& expected, double atol = 1e-5,
                               double rtol = 1e-5) {
  double worst = 0;
  const auto params = model.named_parameters();
  EXPECT_EQ(params.size(), expected.size());
  for (const auto& [name, p] : params) {
    auto it = expected.find(name);
    if (it == expected.end() || !p.grad().defined()) {
      ADD_FAILURE() << name << ": " << (it == expected.end() ? "no expected gradient" : "no gradient");
      continue;
    }
    EXPECT_TENSOR_CLOSE(p.grad(), it->second, atol, rtol) << name;
    worst = std::max(worst, max_abs_diff(p.grad(), it->second));
  }
  return worst;
}

}  // namespace nf::testing
