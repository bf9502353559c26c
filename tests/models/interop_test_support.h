#pragma once
// Shared by the checkpoint-interop tests: a per-test temporary directory and the largest
// element-wise difference of two tensors (printed as the measured error).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "nanoformer/core/tensor.h"

namespace nf::models {

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

}  // namespace nf::models
