#pragma once
// Golden fixtures: safetensors files written by tools/golden/generate_all.py from PyTorch, one per
// op family, under tests/golden (NF_GOLDEN_DIR). A case "<case>" stores its tensors as
// "<case>.<role>": inputs ("x", "a", ...), "out", the upstream gradient "grad_out" and the input
// gradients "grad_<input>" (see tools/golden/README.md).
#include <nlohmann/json.hpp>
#include <string>

#include "nanoformer/io/safetensors.h"

namespace nf::testing {

std::string golden_path(const std::string& fixture);  // NF_GOLDEN_DIR/<fixture>.safetensors

class Golden {
 public:
  // Opens the fixture; throws nf::Error naming the path and how to regenerate it when missing.
  explicit Golden(const std::string& fixture);

  // An owned copy of "<case>.<role>"; throws naming the fixture and the key when absent.
  Tensor get(const std::string& case_name, const std::string& role) const;
  // The same, as a leaf that requires grad (an input of the op under test).
  Tensor input(const std::string& case_name, const std::string& role) const;
  bool has(const std::string& case_name, const std::string& role) const;
  // The torch version that wrote the fixture (its __metadata__ "torch_version").
  const std::string& torch_version() const;
  // {case: {parameter: value}} from the __metadata__ "cases" JSON (the op's arguments per case).
  const nlohmann::json& cases() const { return cases_; }
  const std::string& name() const { return fixture_; }

 private:
  std::string fixture_;
  io::SafetensorsFile file_;
  nlohmann::json cases_;
};

}  // namespace nf::testing
