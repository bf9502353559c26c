// PositionalConfig names, the factories that build a scheme from it, and its parameter count.
#include "nanoformer/nn/positional.h"

#include <array>
#include <utility>

#include "nanoformer/core/error.h"
#include "nanoformer/nn/linear.h"

namespace nf::nn {
namespace {

constexpr std::array<std::pair<const char*, PositionKind>, 7> kKinds{{{"none", PositionKind::none},
                                                                     {"learned", PositionKind::learned},
                                                                     {"sinusoidal", PositionKind::sinusoidal},
                                                                     {"rope", PositionKind::rope},
                                                                     {"alibi", PositionKind::alibi},
                                                                     {"t5_bias", PositionKind::t5_bias},
                                                                     {"xl_relative", PositionKind::xl_relative}}};
constexpr std::array<std::pair<const char*, RopeLayout>, 3> kLayouts{{{"interleaved", RopeLayout::interleaved},
                                                                     {"half", RopeLayout::half},
                                                                     {"half_negative", RopeLayout::half_negative}}};
constexpr std::array<std::pair<const char*, RopeScaling>, 4> kScalings{{{"none", RopeScaling::none},
                                                                        {"linear", RopeScaling::linear},
                                                                        {"ntk", RopeScaling::ntk},
                                                                        {"yarn", RopeScaling::yarn}}};

template <class E, size_t N>
E parse_name(const char* what, const std::array<std::pair<const char*, E>, N>& table, const std::string& name) {
  std::string accepted;
  for (const auto& [text, value] : table) {
    if (name == text) return value;
    accepted += accepted.empty() ? text : std::string(", ") + text;
  }
  NF_FAIL("PositionalConfig: unknown ", what, " '", name, "' (expected one of ", accepted, ")");
}

void require_positive(const char* kind, const char* option, int64_t value) {
  NF_CHECK(value > 0, "PositionalConfig: ", kind, " needs ", option, " > 0, got ", value);
}

}  // namespace

const char* position_kind_name(PositionKind kind) {
  for (const auto& [text, value] : kKinds) {
    if (value == kind) return text;
  }
  return "?";
}

PositionKind parse_position_kind(const std::string& name) { return parse_name("kind", kKinds, name); }
RopeLayout parse_rope_layout(const std::string& name) { return parse_name("rope_layout", kLayouts, name); }
RopeScaling parse_rope_scaling(const std::string& name) { return parse_name("scaling", kScalings, name); }

std::shared_ptr<AttentionPosition> make_attention_position(const PositionalConfig& cfg, Generator& gen) {
  const char* kind = position_kind_name(cfg.kind);
  switch (cfg.kind) {
    case PositionKind::rope:
      return std::make_shared<RotaryPosition>(RopeOptions{.head_dim = cfg.head_dim,
                                                          .max_len = cfg.max_len,
                                                          .theta = cfg.theta,
                                                          .layout = cfg.rope_layout,
                                                          .scaling = cfg.scaling,
                                                          .scale_factor = cfg.scale_factor,
                                                          .original_max_len = cfg.original_max_len,
                                                          .beta_fast = cfg.beta_fast,
                                                          .beta_slow = cfg.beta_slow,
                                                          .attention_factor = cfg.attention_factor});
    case PositionKind::alibi:
      require_positive(kind, "n_heads", cfg.n_heads);
      return std::make_shared<AlibiBias>(cfg.n_heads);
    case PositionKind::t5_bias:
      require_positive(kind, "n_heads", cfg.n_heads);
      return std::make_shared<T5RelativeBias>(cfg.n_heads, cfg.num_buckets, cfg.max_distance, cfg.bidirectional, gen);
    case PositionKind::xl_relative:
      require_positive(kind, "dim", cfg.dim);
      require_positive(kind, "n_heads", cfg.n_heads);
      require_positive(kind, "head_dim", cfg.head_dim);
      return std::make_shared<XLRelativePosition>(cfg.dim, cfg.n_heads, cfg.head_dim, cfg.xl_score_scale, gen);
    case PositionKind::none:
    case PositionKind::learned:
    case PositionKind::sinusoidal: return std::make_shared<AttentionPosition>("NoAttentionPosition");
  }
  NF_FAIL("make_attention_position: unknown kind");
}

std::shared_ptr<AbsolutePosition> make_absolute_position(const PositionalConfig& cfg, Generator& gen) {
  const char* kind = position_kind_name(cfg.kind);
  switch (cfg.kind) {
    case PositionKind::learned:
      require_positive(kind, "dim", cfg.dim);
      require_positive(kind, "max_len", cfg.max_len);
      return std::make_shared<LearnedPosition>(cfg.max_len, cfg.dim, gen);
    case PositionKind::sinusoidal:
      require_positive(kind, "dim", cfg.dim);
      require_positive(kind, "max_len", cfg.max_len);
      return std::make_shared<SinusoidalPosition>(cfg.dim, cfg.max_len, cfg.scale_input);
    default: return nullptr;
  }
}

template <class N>
N positional_parameter_count(const PositionalConfig& cfg) {
  switch (cfg.kind) {
    case PositionKind::learned: return embedding_parameter_count(N(cfg.max_len), N(cfg.dim));
    case PositionKind::t5_bias: return embedding_parameter_count(N(cfg.num_buckets), N(cfg.n_heads));
    case PositionKind::xl_relative: {
      const N width = N(cfg.n_heads) * N(cfg.head_dim);
      return N(2) * width + linear_parameter_count(N(cfg.dim), width, false);  // u, v, pos_proj
    }
    case PositionKind::none:
    case PositionKind::sinusoidal:
    case PositionKind::rope:
    case PositionKind::alibi: return N(0);
  }
  NF_FAIL("positional_parameter_count: unknown kind");
}
template int64_t positional_parameter_count<int64_t>(const PositionalConfig&);
template long double positional_parameter_count<long double>(const PositionalConfig&);

}  // namespace nf::nn
