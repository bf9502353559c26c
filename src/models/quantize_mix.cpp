// Which type each weight gets (models/quantize.h): llama.cpp's llama_tensor_get_type and
// tensor_type_fallback (src/llama-quant.cpp of llama.cpp 0c1e570) for the dense llama-, qwen2- and
// gpt2-shaped models nanoformer writes, without an importance matrix: the rules of the K mixes that
// such a model meets (none of the Falcon, 70B, MoE or IQ-type cases), and the names of the specs.
#include <algorithm>
#include <cctype>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/models/quantize.h"

namespace nf::models {
namespace {

struct MixName {
  const char* name;
  QuantMix mix;
  QuantType type;     // llama_ftype_get_default_type
  uint32_t ftype;     // llama_ftype
};

constexpr MixName kMixes[] = {
    {"q3_k_s", QuantMix::q3_k_s, QuantType::q3_k, 11}, {"q3_k_m", QuantMix::q3_k_m, QuantType::q3_k, 12},
    {"q4_k_s", QuantMix::q4_k_s, QuantType::q4_k, 14}, {"q4_k_m", QuantMix::q4_k_m, QuantType::q4_k, 15},
    {"q5_k_s", QuantMix::q5_k_s, QuantType::q5_k, 16}, {"q5_k_m", QuantMix::q5_k_m, QuantType::q5_k, 17},
};

// the weight types a spec may name, and llama_ftype's number of a file mostly of them
constexpr std::pair<QuantType, uint32_t> kPlain[] = {
    {QuantType::f32, 0},   {QuantType::f16, 1},   {QuantType::bf16, 32}, {QuantType::q8_0, 7},
    {QuantType::q6_k, 18}, {QuantType::q5_k, 16}, {QuantType::q5_1, 9},  {QuantType::q5_0, 8},
    {QuantType::q4_k, 14}, {QuantType::q4_1, 3},  {QuantType::q4_0, 2},  {QuantType::q3_k, 11},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// use_more_bits: the first and last eighth of the layers and every third between
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool fits(QuantType t, int64_t cols) { return cols % quant_type_info(t).block_size == 0; }

// tensor_type_fallback: a 256-block type whose rows are not whole blocks -> its 32-value relative,
// then F16 when that does not fit either
QuantType fallback(QuantType wanted, int64_t cols) {
  if (fits(wanted, cols)) return wanted;
  const QuantType relative = wanted == QuantType::q4_k   ? QuantType::q5_0
                             : wanted == QuantType::q5_k ? QuantType::q5_1
                             : wanted == QuantType::q6_k ? QuantType::q8_0
                             : wanted == QuantType::q3_k ? QuantType::q4_0
                                                         : wanted;
  return fits(relative, cols) ? relative : QuantType::f16;
}

// llama_tensor_get_type_impl's rules for the roles a dense model has (`type` the mix's base type)
QuantType mix_rule(QuantMix mix, QuantType type, TensorRole role, int64_t i, int64_t n) {
  switch (role) {
    case TensorRole::attn_v:
    case TensorRole::attn_qkv:  // category_is_attn_v: the fused projection takes attn_v's rules
      if (mix == QuantMix::q3_k_m) return i < 2 ? QuantType::q5_k : QuantType::q4_k;
      if ((mix == QuantMix::q4_k_m || mix == QuantMix::q5_k_m) && use_more_bits(i, n)) return QuantType::q6_k;
      if (mix == QuantMix::q4_k_s && i < 4) return QuantType::q5_k;
      return type;
    case TensorRole::ffn_down:
      if (mix == QuantMix::q3_k_m) return i < n / 16 ? QuantType::q5_k : QuantType::q4_k;
      if ((mix == QuantMix::q4_k_m || mix == QuantMix::q5_k_m) && use_more_bits(i, n)) return QuantType::q6_k;
      if (mix == QuantMix::q4_k_s && i < n / 8) return QuantType::q5_k;
      return type;
    case TensorRole::attn_output: return mix == QuantMix::q3_k_m ? QuantType::q4_k : type;
    default: return type;
  }
}

}  // namespace

QuantizeSpec quantize_spec(std::string_view name) {
  const std::string text = lower(name);
  for (const MixName& m : kMixes)
    if (text == m.name) return {.type = m.type, .mix = m.mix};
  std::string known;
  for (const MixName& m : kMixes) known.append(m.name).append(", ");
  for (const auto& [type, ftype] : kPlain) {
    if (text == quant_type_name(type)) return {.type = type};
    known.append(quant_type_name(type)).append(type == kPlain[std::size(kPlain) - 1].first ? "" : ", ");
  }
  std::string why;
  if (text == "q8_1" || text == "q8_k") why = ": an activation type, which llama.cpp does not multiply weights in";
  else if (text == "f64") why = ": weights are f32, f16, bf16 or a quantised type";
  else if (text == "q2_k") why = ": a type nanoformer has no kernels for";
  NF_FAIL(why.empty() ? "unknown quantisation '" : "quantisation '", name, "'", why, " (known: ", known, ")");
}

std::string quantize_spec_name(const QuantizeSpec& spec) {
  for (const MixName& m : kMixes)
    if (m.mix == spec.mix) return m.name;
  return quant_type_name(spec.type);
}

uint32_t llama_file_type(const QuantizeSpec& spec) {
  for (const MixName& m : kMixes)
    if (m.mix == spec.mix) return m.ftype;
  for (const auto& [type, ftype] : kPlain)
    if (type == spec.type) return ftype;
  NF_FAIL("llama_file_type: no llama_ftype for ", quant_type_name(spec.type));
}

QuantType default_output_type(QuantType type) {
  return type == QuantType::q8_0 || !is_block_quantized(type) ? type : QuantType::q6_k;
}

QuantType mix_tensor_type(const QuantizeSpec& spec, TensorRole role, int64_t layer, int64_t n_layers, int64_t cols,
                          bool tied) {
  const bool head = role == TensorRole::output || (tied && role == TensorRole::token_embd);
  if (head) {
    if (spec.output_type) return fallback(*spec.output_type, cols);
    // the default output type: Q6_K, or Q8_0 when a row is not whole blocks of the base type
    if (spec.mix != QuantMix::none && !fits(spec.type, cols)) return fallback(QuantType::q8_0, cols);
    return fallback(default_output_type(spec.type), cols);
  }
  if (role == TensorRole::token_embd) return fallback(spec.embedding_type.value_or(spec.type), cols);
  if (spec.mix == QuantMix::none) return fallback(spec.type, cols);
  return fallback(mix_rule(spec.mix, spec.type, role, layer, n_layers), cols);
}

}  // namespace nf::models
