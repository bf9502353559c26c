#pragma once
// A recorder a TransformerBlock reports its intermediate values to while one is installed
// (TransformerBlock::set_recorder): what `nanoformer viz` looks at. Without one the block's forward
// is unchanged (one null-pointer test per stage).
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf::nn {

class BlockRecorder {
 public:
  virtual ~BlockRecorder() = default;
  // One stage of the block, in forward order: "input", then per sublayer S (attn, cross_attn, mlp)
  // S_norm, S_out, S_out_norm (sandwich), S_residual in the order the placement computes them,
  // then "output". Values are (B, T, dim).
  virtual void stage(const std::string& name, const Tensor& value) = 0;
  // Whether self-attention should run through the plain kernel to report its weights.
  virtual bool wants_attention_weights() const { return false; }
  // Self-attention's weights (B, H, Tq, Tk), rows summing to 1 (before dropout in eval mode).
  virtual void attention_weights(const Tensor& weights) {}
};

}  // namespace nf::nn
