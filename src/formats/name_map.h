#pragma once
// A name map between another implementation's state dict and ours: for each external tensor, its
// name and shape, our tensor(s) it holds and how (as is, transposed like GPT-2's Conv1D, several
// of ours fused along the output dimension like GPT-2's c_attn, or reshaped like ViT's patch kernel). Importing checks every name and
// shape and throws one nf::Error listing all missing, unexpected, mis-shaped and wrongly typed
// tensors; exporting assembles the external tensors from ours. Internal to src/formats.
#include <set>
#include <string>
#include <vector>

#include "nanoformer/nn/module.h"

namespace nf::formats {

struct MappedTensor {
  std::string external;            // e.g. "transformer.h.0.attn.c_attn.weight"
  Shape external_shape;            // its shape in the external file
  bool transposed = false;         // external = ours^T (Conv1D's (in, out) layout)
  std::vector<std::string> ours;   // one name, or the parts fused along our dim 0 (q, k, v)
  Shape ours_shape{};              // when set, our one tensor is the external one reshaped to this
                                   // (ViT's Conv2d kernel (D, C, P, P) as a Linear weight (D, C*P*P))
};
using NameMap = std::vector<MappedTensor>;

// What does not match a name map, reported as one nf::Error by fail(): "<source>: the tensors do not
// match the model's name map; missing (n): ...; unexpected (n): ...; mis-shaped (n): ...; <label> (n): ...".
struct NameMapProblems {
  std::vector<std::string> missing, unexpected, misshaped, mistyped;
  bool empty() const { return missing.empty() && unexpected.empty() && misshaped.empty() && mistyped.empty(); }
  // Adds "name (a, b), expected (c, d)" to misshaped.
  void add_misshaped(const std::string& name, const Shape& actual, const Shape& expected);
  [[noreturn]] void fail(const std::string& source, const char* mistyped_label = "wrong dtype") const;
};

// External tensors -> our state dict. Names in `ignored` may be present or absent (buffers such as
// GPT-2's attn.bias, a tied lm_head). Floating tensors of any float dtype convert to f32; others
// are "wrong dtype". `source` (a path) prefixes the error.
nn::StateDict import_tensors(const NameMap& map, const std::map<std::string, Tensor>& external,
                             const std::set<std::string>& ignored, const std::string& source);
// Our state dict -> the external tensors, in the map's order (f32, contiguous).
std::vector<nn::NamedTensor> export_tensors(const NameMap& map, const nn::StateDict& ours);

}  // namespace nf::formats
