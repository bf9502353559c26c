#pragma once
// Positional encodings: one config naming the scheme and its options, and two factories. Absolute
// schemes (learned, sinusoidal) add to the token embeddings before the blocks; the others act
// inside attention through nn::AttentionPosition (RoPE on queries and keys; ALiBi, T5 bias and
// Transformer-XL on the scores). Each scheme lives in its own header, included here.
#include <cstdint>
#include <memory>
#include <string>

#include "nanoformer/nn/absolute_position.h"
#include "nanoformer/nn/alibi.h"
#include "nanoformer/nn/attention_position.h"
#include "nanoformer/nn/rotary_position.h"
#include "nanoformer/nn/t5_relative_bias.h"
#include "nanoformer/nn/xl_relative_position.h"
#include "nanoformer/ops/rope.h"

namespace nf::nn {

enum class PositionKind { none, learned, sinusoidal, rope, alibi, t5_bias, xl_relative };

struct PositionalConfig {
  PositionKind kind = PositionKind::none;
  int64_t max_len = 2048;   // positions 0 .. max_len - 1 (learned, sinusoidal, rope tables)
  int64_t dim = 0;          // model width (learned, sinusoidal, xl_relative)
  int64_t n_heads = 0;      // alibi, t5_bias, xl_relative
  int64_t head_dim = 0;     // rope, xl_relative
  // rope
  RopeLayout rope_layout = RopeLayout::half;
  double theta = 10000.0;
  RopeScaling scaling = RopeScaling::none;
  double scale_factor = 1.0;
  int64_t original_max_len = 0;               // yarn (RopeOptions)
  double beta_fast = 32.0, beta_slow = 1.0;   // yarn
  double attention_factor = 0.0;              // yarn; 0 = 0.1 ln(scale_factor) + 1
  // sinusoidal: multiply x by sqrt(dim) before adding the encoding (004's embedding scale)
  bool scale_input = false;
  // t5_bias
  int64_t num_buckets = 32;
  int64_t max_distance = 128;
  bool bidirectional = true;
  // xl_relative: the factor attention applies to q k^T, applied to the bias too; 0 = 1/sqrt(head_dim)
  double xl_score_scale = 0.0;
};

// Names as written in config files ("rope", "half_negative", "ntk"); parsing an unknown name
// throws nf::Error listing the accepted ones.
const char* position_kind_name(PositionKind kind);
PositionKind parse_position_kind(const std::string& name);
RopeLayout parse_rope_layout(const std::string& name);
RopeScaling parse_rope_scaling(const std::string& name);

// The scheme acting inside attention: RotaryPosition, AlibiBias, T5RelativeBias or
// XLRelativePosition; for learned, sinusoidal and none the identity AttentionPosition (it rotates
// nothing and adds no bias), so attention always holds one.
std::shared_ptr<AttentionPosition> make_attention_position(const PositionalConfig& cfg, Generator& gen = default_generator());

// The scheme adding to the embeddings: LearnedPosition or SinusoidalPosition; nullptr for the
// kinds that add nothing there (none and the in-attention ones).
std::shared_ptr<AbsolutePosition> make_absolute_position(const PositionalConfig& cfg, Generator& gen = default_generator());

// The parameters of both factories' modules without building them: a learned table max_len x dim,
// a T5 bias table num_buckets x n_heads, Transformer-XL's u, v and position projection; 0 for the
// others (sinusoidal tables and RoPE's are buffers). In arithmetic N (int64_t, or long double to
// bound a config whose count might not fit).
template <class N = int64_t>
N positional_parameter_count(const PositionalConfig& cfg);

}  // namespace nf::nn
