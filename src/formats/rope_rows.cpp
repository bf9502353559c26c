// q / k rows reordered between the interleaved and half RoPE layouts (see rope_rows.h).
#include "formats/rope_rows.h"

#include <cstring>
#include <vector>

#include "nanoformer/core/error.h"

namespace nf::formats {
namespace {

// Row `j` of a head in layout `to` is row perm[j] of the head in the other layout.
std::vector<int64_t> head_permutation(int64_t head_dim, RopeLayout to) {
  const int64_t half = head_dim / 2;
  std::vector<int64_t> perm(static_cast<size_t>(head_dim));
  for (int64_t i = 0; i < half; ++i) {
    if (to == RopeLayout::half) {  // half i <- interleaved 2i, half i + d/2 <- interleaved 2i + 1
      perm[static_cast<size_t>(i)] = 2 * i;
      perm[static_cast<size_t>(i + half)] = 2 * i + 1;
    } else {  // interleaved 2i <- half i, interleaved 2i + 1 <- half i + d/2
      perm[static_cast<size_t>(2 * i)] = i;
      perm[static_cast<size_t>(2 * i + 1)] = i + half;
    }
  }
  return perm;
}

// The rows of `t` (heads * head_dim, ...) reordered head by head.
Tensor permuted_rows(const Tensor& t, const std::vector<int64_t>& perm) {
  const Tensor src = t.detach().to(DType::f32).contiguous();
  Tensor out = Tensor::empty(src.shape());
  const int64_t head_dim = static_cast<int64_t>(perm.size()), row = src.numel() / src.size(0);
  const float* from = src.data<float>();
  float* to = out.data<float>();
  for (int64_t r = 0; r < src.size(0); ++r) {
    const int64_t source = r - r % head_dim + perm[static_cast<size_t>(r % head_dim)];
    std::memcpy(to + r * row, from + source * row, static_cast<size_t>(row) * sizeof(float));
  }
  return out;
}

// The quantised rows of `q` reordered head by head (whole rows of blocks copied).
QuantizedTensor permuted_rows(const QuantizedTensor& q, const std::vector<int64_t>& perm) {
  QuantizedTensor out = QuantizedTensor::empty(q.type(), q.rows(), q.cols());
  const int64_t head_dim = static_cast<int64_t>(perm.size());
  auto* to = static_cast<unsigned char*>(out.mutable_data());
  for (int64_t r = 0; r < q.rows(); ++r)
    std::memcpy(to + r * q.row_bytes(), q.row(r - r % head_dim + perm[static_cast<size_t>(r % head_dim)]), q.row_bytes());
  return out;
}

// Calls fn(name, perm) for every q / k weight and bias name (and learned q / k norm weight) of `config` when the layouts differ.
template <class F>
void for_each_rotated(const models::DecoderLMConfig& config, RopeLayout to, F&& fn) {
  if (config.rope_layout == to) return;
  auto convertible = [](RopeLayout l) { return l == RopeLayout::interleaved || l == RopeLayout::half; };
  NF_CHECK(convertible(config.rope_layout) && convertible(to), "rope_layout ", rope_layout_name(config.rope_layout),
           " cannot be converted to ", rope_layout_name(to), " (only interleaved <-> half)");
  const std::vector<int64_t> perm = head_permutation(models::block_config(config).attention.head_dim, to);
  for (int64_t l = 0; l < config.n_layers; ++l)
    for (const char* proj : {"q_proj", "k_proj", "q_norm", "k_norm"})  // per-head q / k norm weights too
      for (const char* kind : {"weight", "bias"}) fn("layers." + std::to_string(l) + ".attn." + proj + "." + kind, perm);
}

}  // namespace

nn::StateDict with_rope_layout(nn::StateDict state, const models::DecoderLMConfig& config, RopeLayout to) {
  for_each_rotated(config, to, [&](const std::string& name, const std::vector<int64_t>& perm) {
    auto it = state.find(name);
    if (it != state.end()) it->second = permuted_rows(it->second, perm);
  });
  return state;
}

std::vector<nn::NamedQuantized> with_rope_layout(std::vector<nn::NamedQuantized> weights,
                                                 const models::DecoderLMConfig& config, RopeLayout to) {
  for_each_rotated(config, to, [&](const std::string& name, const std::vector<int64_t>& perm) {
    for (auto& [n, q] : weights)
      if (n == name) q = permuted_rows(q, perm);
  });
  return weights;
}

}  // namespace nf::formats
