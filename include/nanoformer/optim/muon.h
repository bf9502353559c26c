#pragma once
// Muon (MomentUm Orthogonalized by Newton-Schulz), as nanochat's nanochat/muon.py, the optimizer
// 003's setup_optimizers builds for the block matrices (Keller Jordan's Muon):
//   b = lerp(b, g, 1 - momentum) = momentum b + (1 - momentum) g
//   u = lerp(g, b, momentum) with Nesterov, else b
//   O = NewtonSchulz5(u)                      (an approximately orthogonal matrix, see newton_schulz)
//   p = p (1 - lr weight_decay)               (decoupled decay, Keller Jordan's; nanochat's is 0)
//   p = p - lr max(1, rows / cols)^0.5 O      (nanochat's aspect-ratio scale)
// Only 2-D parameters. Newton-Schulz runs in fp32 on BLAS (nanochat: bf16 on CUDA, fp32 elsewhere).
#include <cstdint>

#include "nanoformer/optim/optimizer.h"

namespace nf::optim {

struct MuonOptions {
  double momentum = 0.95;  // in [0, 1)
  bool nesterov = true;
  int ns_steps = 5;        // Newton-Schulz iterations, >= 1
};

// The quintic Newton-Schulz iteration nanochat calls zeropower_via_newtonschulz5, in fp32: on
// X = G / (||G||_F + 1e-7) (transposed when rows > cols, so X X^T is the smaller Gram matrix),
// `steps` times  A = X X^T,  B = b A + (c A) A,  X = a X + B X  with (a, b, c) = (3.4445, -4.7750,
// 2.0315), then transposed back. Its singular values land near 1 (roughly in [0.7, 1.2]), not on
// 1: the coefficients trade exactness for speed. G: a 2-D f32 tensor.
Tensor newton_schulz(const Tensor& g, int steps = 5);

class Muon : public Optimizer {
 public:
  // Throws nf::Error naming a parameter that is not 2-D (its group, index and shape) or a bad option.
  Muon(std::vector<ParamGroup> groups, const MuonOptions& options = {});
  std::string kind() const override { return "muon"; }
  std::vector<std::string> slot_names() const override { return {"momentum_buffer"}; }
  bool slices() const override { return false; }  // Newton-Schulz orthogonalises whole matrices

 private:
  void update(size_t group, size_t index, float* p, const float* g, int64_t n) override;
  MuonOptions options_;
};

}  // namespace nf::optim
