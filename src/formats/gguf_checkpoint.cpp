// GGUF model files: {arch}.* keys <-> DecoderLMConfig, tensors <-> parameters, quantised ones used in
// place (see gguf_checkpoint.h).
#include "nanoformer/formats/gguf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "formats/hf_name_maps.h"
#include "formats/nanochat_options.h"
#include "formats/rope_rows.h"
#include "nanoformer/core/error.h"
#include "nanoformer/nn/linear.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/join.h"
#include "nanoformer/ops/quantized.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::formats {
namespace {

enum class GGUFArch { llama, gpt2 };

const char* arch_name(GGUFArch arch) { return arch == GGUFArch::llama ? "llama" : "gpt2"; }

std::string at(const io::GGUFFile& f) { return f.path() + ": "; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The {arch}.* keys each architecture reads; any other one changes the model in a way we do not build.
const std::set<std::string> kLlamaKeys = {
    "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon",
    "attention.key_length", "attention.value_length", "rope.dimension_count", "rope.freq_base",
    "rope.scaling.type", "rope.scaling.factor", "rope.scale_linear", "rope.scaling.original_context_length",
    "rope.scaling.finetuned", "expert_count", "expert_used_count", "attention.sliding_window",
    "attention.max_alibi_bias", "attention.causal", "tensor_data_layout"};
const std::set<std::string> kGpt2Keys = {
    "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_epsilon", "expert_count",
    "expert_used_count", "attention.causal", "tensor_data_layout"};

// Sizes above this are refused before anything is built: every GGUF size is a u32 in llama.cpp.
constexpr int64_t kMaxSize = int64_t{1} << 31;
// RoPE tables (cos and sin, context x head_dim / 2 floats each) are built for the whole context; a
// context whose tables would outweigh the file's tensors (and 64 MiB) is a lying key, refused
// before they are allocated. Real files hold far more than their tables (1M positions of 128
// channels, 512 MiB, come with a 7B model).
constexpr int64_t kMinTableBudget = int64_t{64} << 20;

// {arch}.* keys of one file, with errors naming the file and the key.
class ArchKeys {
 public:
  ArchKeys(const io::GGUFFile& file, GGUFArch arch) : f_(file), prefix_(std::string(arch_name(arch)) + ".") {}
  std::string key(const std::string& k) const { return prefix_ + k; }
  bool has(const std::string& k) const { return f_.has(key(k)); }

  // A positive size, given once or per layer (llama.cpp allows arrays for head counts and FFN widths)
  // with every layer the same.
  int64_t size(const std::string& k, int64_t limit = kMaxSize) const {
    const int64_t v = uniform_int(key(k));
    NF_CHECK(v > 0 && v <= limit, at(f_), "key '", key(k), "' is ", v, " (must be in 1..", limit, ")");
    return v;
  }
  int64_t size_or(const std::string& k, int64_t fallback) const { return has(k) ? size(k) : fallback; }
  double number(const std::string& k) const { return f_.get_float(key(k)); }
  double number_or(const std::string& k, double fallback) const { return has(k) ? number(k) : fallback; }

  // Every {arch}.* key is one this reader knows.
  void check_known(const std::set<std::string>& known) const {
    for (const std::string& k : f_.keys())
      if (starts_with(k, prefix_))
        NF_CHECK(known.count(k.substr(prefix_.size())), at(f_), "key '", k, "' is not supported: it changes the ",
                 prefix_.substr(0, prefix_.size() - 1), " architecture in a way nanoformer does not build");
  }
  // A key that is only supported at one value.
  void require(const std::string& k, int64_t expected, const std::string& what) const {
    if (has(k)) NF_CHECK(uniform_int(key(k)) == expected, at(f_), "key '", key(k), "' is ", uniform_int(key(k)), ": ",
                         what, " not supported");
  }

 private:
  int64_t uniform_int(const std::string& key) const {
    const io::GGUFValue& value = f_.get(key);
    std::optional<int64_t> first;
    bool array = false, uniform = true;
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<int32_t>> || std::is_same_v<V, std::vector<uint32_t>> ||
                        std::is_same_v<V, std::vector<int64_t>> || std::is_same_v<V, std::vector<uint16_t>> ||
                        std::is_same_v<V, std::vector<int16_t>> || std::is_same_v<V, std::vector<uint8_t>> ||
                        std::is_same_v<V, std::vector<int8_t>>) {
            array = true;
            for (const auto item : v) {
              if (!first) first = static_cast<int64_t>(item);
              uniform = uniform && static_cast<int64_t>(item) == *first;
            }
          }
        },
        value);
    if (!array) return f_.get_int(key);
    NF_CHECK(first, at(f_), "key '", key, "' is an empty array");
    NF_CHECK(uniform, at(f_), "key '", key, "' differs between layers, which nanoformer's identical blocks cannot express");
    return *first;
  }

  const io::GGUFFile& f_;
  std::string prefix_;
};

GGUFArch arch_of(const io::GGUFFile& f) {
  const std::string arch = f.get_string("general.architecture");
  if (arch == "llama") return GGUFArch::llama;
  if (arch == "gpt2") return GGUFArch::gpt2;
  NF_FAIL(at(f), "general.architecture '", arch, "' is not supported (llama, gpt2)");
}

// GGUF's name of a Hugging Face tensor name (llama.cpp's gguf-py/gguf/tensor_mapping.py, for the
// tensors of GPT2LMHeadModel and LlamaForCausalLM).
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kModel[] = {
      {"model.embed_tokens.", "token_embd."}, {"transformer.wte.", "token_embd."}, {"transformer.wpe.", "position_embd."},
      {"model.norm.", "output_norm."},        {"transformer.ln_f.", "output_norm."}, {"lm_head.", "output."}};
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm.", "attn_norm."},     {"ln_1.", "attn_norm."},          {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."},       {"self_attn.v_proj.", "attn_v."}, {"self_attn.o_proj.", "attn_output."},
      {"attn.c_attn.", "attn_qkv."},          {"attn.c_proj.", "attn_output."}, {"post_attention_layernorm.", "ffn_norm."},
      {"ln_2.", "ffn_norm."},                 {"mlp.gate_proj.", "ffn_gate."},  {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."},        {"mlp.c_fc.", "ffn_up."},         {"mlp.c_proj.", "ffn_down."}};
  for (const auto& [from, to] : kModel)
    if (starts_with(hf, from)) return to + hf.substr(std::strlen(from));
  for (const char* layers : {"model.layers.", "transformer.h."}) {
    if (!starts_with(hf, layers)) continue;
    const size_t number_end = hf.find('.', std::strlen(layers));
    const std::string number = hf.substr(std::strlen(layers), number_end - std::strlen(layers));
    const std::string rest = hf.substr(number_end + 1);
    for (const auto& [from, to] : kLayer)
      if (starts_with(rest, from)) return "blk." + number + "." + to + rest.substr(std::strlen(from));
  }
  NF_FAIL("gguf: no GGUF name for tensor ", hf);
}

// The Hugging Face name map of `c` renamed to GGUF's names, with shapes as ours (GGUF keeps GPT-2's
// Conv1D weights as (out, in), as convert_hf_to_gguf transposes them).
NameMap gguf_name_map(const models::DecoderLMConfig& c) {
  NameMap map = hf_decoder_name_map(c);
  for (MappedTensor& m : map) {
    m.external = gguf_name(m.external);
    if (m.transposed) m.external_shape = {m.external_shape[1], m.external_shape[0]};
    m.transposed = false;
  }
  return map;
}

bool is_layer_tensor(const std::string& name, const std::vector<std::string>& kinds) {
  if (!starts_with(name, "blk.")) return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return false;
  const std::string rest = name.substr(dot + 1);
  return std::find(kinds.begin(), kinds.end(), rest) != kinds.end();
}

bool has_layer_tensor(const io::GGUFFile& f, const std::vector<std::string>& kinds) {
  return std::any_of(f.tensors().begin(), f.tensors().end(),
                     [&](const io::GGUFTensorInfo& t) { return is_layer_tensor(t.name, kinds); });
}

const std::vector<std::string> kAttentionBiases = {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"};
const std::vector<std::string> kFfnBiases = {"ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"};

// gpt2's head: tied when output.weight is absent or holds token_embd's bytes (older converters
// wrote the tied matrix twice).
bool gpt2_tied(const io::GGUFFile& f) {
  if (!f.contains("output.weight")) return true;
  const io::GGUFTensorInfo& out = f.tensor("output.weight");
  const io::GGUFTensorInfo& embd = f.tensor("token_embd.weight");
  if (out.type != embd.type || out.shape != embd.shape) return false;
  const QuantizedTensor a = f.quantized("output.weight"), b = f.quantized("token_embd.weight");
  return std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Keys both architectures may carry that change the model into one nanoformer does not build.
void refuse_moe_and_non_causal(const ArchKeys& k, const io::GGUFFile& f) {
  k.require("expert_count", 0, "experts (MoE) are");
  k.require("expert_used_count", 0, "experts (MoE) are");
  if (k.has("attention.causal"))
    NF_CHECK(f.get_bool(k.key("attention.causal")), at(f), "key '", k.key("attention.causal"),
             "' is false: non-causal attention is not supported");
}

models::DecoderLMConfig llama_config(const io::GGUFFile& f) {
  const ArchKeys k(f, GGUFArch::llama);
  k.check_known(kLlamaKeys);
  refuse_moe_and_non_causal(k, f);
  k.require("attention.sliding_window", 0, "sliding-window attention is");
  if (k.has("attention.max_alibi_bias"))
    NF_CHECK(k.number("attention.max_alibi_bias") == 0.0, at(f), "key '", k.key("attention.max_alibi_bias"), "' is ",
             k.number("attention.max_alibi_bias"), ": ALiBi is not supported");
  models::DecoderLMConfig c;
  c.dim = k.size("embedding_length");
  c.n_layers = k.size("block_count");
  c.n_heads = k.size("attention.head_count");
  c.n_kv_heads = k.size_or("attention.head_count_kv", c.n_heads);
  c.mlp_hidden = k.size("feed_forward_length");
  c.max_seq_len = k.size("context_length");
  const int64_t head = k.size_or("attention.key_length", c.dim / c.n_heads);
  NF_CHECK(k.size_or("attention.value_length", head) == head, at(f), "key '", k.key("attention.value_length"),
           "' differs from the key length ", head, ", which nanoformer's attention does not support");
  NF_CHECK(k.size_or("rope.dimension_count", head) == head, at(f), "key '", k.key("rope.dimension_count"), "' is ",
           k.size("rope.dimension_count"), ": rotating part of a head of ", head, " is not supported");
  c.head_dim = head * c.n_heads == c.dim ? 0 : head;  // 0: dim / n_heads, as our configs say it
  c.norm = nn::NormKind::rmsnorm;
  c.norm_eps = k.number("attention.layer_norm_rms_epsilon");
  c.norm_bias = false;
  c.position = nn::PositionKind::rope;
  c.rope_layout = RopeLayout::interleaved;  // convert_hf_to_gguf's permuted q / k rows
  c.rope_theta = k.number_or("rope.freq_base", 10000.0);
  // llama.cpp: no type means linear; a factor of 0 (absent) or 1 scales nothing
  const std::string scaling = k.has("rope.scaling.type") ? f.get_string(k.key("rope.scaling.type")) : "linear";
  NF_CHECK(scaling == "none" || scaling == "linear", at(f), "key '", k.key("rope.scaling.type"), "' is '", scaling,
           "': rope scaling other than none or linear is not supported");
  const double factor = k.number_or("rope.scaling.factor", k.number_or("rope.scale_linear", 0.0));
  if (scaling == "linear" && factor != 0.0 && factor != 1.0) {
    c.rope_scaling = nn::RopeScaling::linear;
    c.rope_scale_factor = factor;
  }
  c.mlp = nn::MLPKind::swiglu;
  c.attention_bias = has_layer_tensor(f, kAttentionBiases);
  c.attention_output_bias = has_layer_tensor(f, {"attn_output.bias"});  // Qwen2's: q, k, v only
  c.mlp_bias = has_layer_tensor(f, kFfnBiases);
  c.tie_embeddings = !f.contains("output.weight");
  return c;
}

models::DecoderLMConfig gpt2_config(const io::GGUFFile& f) {
  const ArchKeys k(f, GGUFArch::gpt2);
  k.check_known(kGpt2Keys);
  refuse_moe_and_non_causal(k, f);
  models::DecoderLMConfig c;
  c.dim = k.size("embedding_length");
  c.n_layers = k.size("block_count");
  c.n_heads = k.size("attention.head_count");
  NF_CHECK(k.size_or("attention.head_count_kv", c.n_heads) == c.n_heads, at(f), "key '",
           k.key("attention.head_count_kv"), "' differs from the head count ", c.n_heads,
           ": grouped-query attention is not supported for gpt2");
  c.mlp_hidden = k.size("feed_forward_length");
  c.max_seq_len = k.size("context_length");
  c.norm = nn::NormKind::layernorm;
  c.norm_eps = k.number("attention.layer_norm_epsilon");
  c.norm_bias = true;
  c.position = nn::PositionKind::learned;
  c.mlp = nn::MLPKind::gelu_tanh;  // llama.cpp's gpt2 GELU is the tanh approximation
  c.attention_bias = c.mlp_bias = true;
  c.tie_embeddings = gpt2_tied(f);
  return c;
}

// The tensor names llama.cpp may find beside the map's: a tied gpt2 head written out anyway.
std::set<std::string> ignored_tensors(GGUFArch arch, const models::DecoderLMConfig& c) {
  if (arch == GGUFArch::gpt2 && c.tie_embeddings) return {"output.weight"};
  return {};
}

// Tensors that may be absent: llama's biases (zero then), when the model has some.
bool is_optional(GGUFArch arch, const std::string& name) {
  return arch == GGUFArch::llama && (is_layer_tensor(name, kAttentionBiases) || is_layer_tensor(name, kFfnBiases));
}

// Every tensor of the map is in the file with its shape, and the file holds nothing else: one error
// listing every problem. (The reader refused the types nanoformer has no kernels for.)
void check_tensors(const io::GGUFFile& f, GGUFArch arch, const models::DecoderLMConfig& c, const NameMap& map) {
  NameMapProblems problems;
  std::set<std::string> used = ignored_tensors(arch, c);
  for (const MappedTensor& m : map) {
    if (!f.contains(m.external)) {
      if (!is_optional(arch, m.external)) problems.missing.push_back(m.external);
      continue;
    }
    used.insert(m.external);
    const io::GGUFTensorInfo& info = f.tensor(m.external);
    if (info.shape != m.external_shape) {
      problems.add_misshaped(m.external, info.shape, m.external_shape);
      continue;
    }
  }
  for (const io::GGUFTensorInfo& t : f.tensors())
    if (!used.count(t.name)) problems.unexpected.push_back(t.name);
  if (!problems.empty()) problems.fail(f.path());
}

// Rows [begin, begin + rows) of q, viewing its bytes (the file's mapping stays alive through q's storage).
QuantizedTensor row_range(const QuantizedTensor& q, int64_t begin, int64_t rows) {
  if (begin == 0 && rows == q.rows()) return q;
  auto storage = std::make_shared<Storage>(const_cast<void*>(q.row(begin)), q.row_bytes() * static_cast<size_t>(rows),
                                           q.storage());
  return QuantizedTensor::from_storage(std::move(storage), q.type(), rows, q.cols());
}

// Sizes the tensors do not check before the model is built: layers (the name map has a dozen entries
// per layer) and a RoPE context (its tables).
void check_sizes_against_the_file(const io::GGUFFile& f, GGUFArch arch, const models::DecoderLMConfig& c) {
  const ArchKeys k(f, arch);
  NF_CHECK(c.n_layers <= static_cast<int64_t>(f.tensors().size()), at(f), "key '", k.key("block_count"), "' is ",
           c.n_layers, " but the file holds ", f.tensors().size(), " tensors");
  if (c.position != nn::PositionKind::rope) return;
  int64_t tensor_bytes = 0;
  for (const io::GGUFTensorInfo& t : f.tensors()) tensor_bytes += static_cast<int64_t>(t.nbytes);
  const long double table_bytes = static_cast<long double>(c.max_seq_len) *
                                  static_cast<long double>(c.head_dim > 0 ? c.head_dim : c.dim / c.n_heads) * 4;
  NF_CHECK(table_bytes <= static_cast<long double>(std::max(tensor_bytes, kMinTableBudget)), at(f), "key '",
           k.key("context_length"), "' is ", c.max_seq_len, ": its RoPE tables (", static_cast<double>(table_bytes),
           " bytes) would outweigh the file's ", tensor_bytes, " bytes of tensors");
}

}  // namespace

models::DecoderLMConfig config_from_gguf(const io::GGUFFile& f) {
  if (f.has("split.count"))
    NF_CHECK(f.get_int("split.count") <= 1, at(f), "key 'split.count' is ", f.get_int("split.count"),
             ": a model split across files is not supported (join it with llama-gguf-split --merge)");
  const GGUFArch arch = arch_of(f);
  models::DecoderLMConfig c = arch == GGUFArch::llama ? llama_config(f) : gpt2_config(f);
  const io::GGUFTensorInfo& embedding = f.tensor("token_embd.weight");
  NF_CHECK(embedding.shape.size() == 2, at(f), "tensor 'token_embd.weight' has ", embedding.shape.size(),
           " dimensions, not 2 (vocabulary, width)");
  c.vocab_size = embedding.shape.front();
  check_sizes_against_the_file(f, arch, c);
  if (const ArchKeys k(f, arch); k.has("vocab_size"))
    NF_CHECK(k.size("vocab_size") == c.vocab_size, at(f), "key '", k.key("vocab_size"), "' is ", k.size("vocab_size"),
             " but token_embd.weight has ", c.vocab_size, " rows");
  c.name = f.has("general.name") ? f.get_string("general.name") : std::filesystem::path(f.path()).stem().string();
  models::validate_model_config(c, f.path());
  check_tensors(f, arch, c, gguf_name_map(c));
  return c;
}

std::shared_ptr<models::DecoderLM> load_gguf(const std::string& path) {
  const io::GGUFFile f = io::GGUFFile::open(path);
  const models::DecoderLMConfig c = config_from_gguf(f);
  std::shared_ptr<models::DecoderLM> model;
  {
    const SkipRandomInitGuard every_weight_is_loaded;  // load_state_dict below refuses a missing one
    model = std::make_shared<models::DecoderLM>(c);
  }
  // the modules that hold a weight quantised, by the weight's name
  std::map<std::string, std::function<void(QuantizedTensor)>> holders;
  std::set<std::string> products;  // the weights products read: the linears', and a tied head's embedding
  model->apply([&](const std::string& name, nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      holders[name + ".weight"] = [linear](QuantizedTensor q) { linear->set_quantized_weight(std::move(q)); };
      products.insert(name + ".weight");
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&m)) {
      holders[name + ".weight"] = [embedding](QuantizedTensor q) { embedding->set_quantized_weight(std::move(q)); };
      if (c.tie_embeddings) products.insert(name + ".weight");
    }
  });
  nn::StateDict dense;
  for (const MappedTensor& m : gguf_name_map(c)) {
    const auto parts = static_cast<int64_t>(m.ours.size());
    const int64_t rows = m.external_shape[0] / parts;
    Shape part_shape = m.external_shape;
    part_shape[0] = rows;
    if (!f.contains(m.external)) {  // an optional bias: zero
      for (const std::string& ours : m.ours) dense[ours] = zeros(part_shape);
      continue;
    }
    const io::GGUFTensorInfo& info = f.tensor(m.external);
    const bool in_place = is_block_quantized(info.type) && info.shape.size() == 2 &&
                          std::all_of(m.ours.begin(), m.ours.end(), [&](const auto& n) { return holders.count(n); });
    if (in_place) {
      // a product's weight also as the kernels' panels where they pay (with_kernel_layout); when
      // every part has them, the file's pages of the rows are dropped, so the process holds W once
      const QuantizedTensor q = f.quantized(m.external);
      bool all_panels = true;
      for (int64_t i = 0; i < parts; ++i) {
        const std::string& ours = m.ours[static_cast<size_t>(i)];
        QuantizedTensor part = row_range(q, i * rows, rows);
        if (products.count(ours)) part = with_kernel_layout(part);
        all_panels = all_panels && part.panels() != nullptr;
        holders.at(ours)(std::move(part));
      }
      if (all_panels) f.release(q);
      continue;
    }
    const Tensor t = is_block_quantized(info.type) ? dequantize(f.quantized(m.external)).reshape(info.shape)
                                                   : f.dense(m.external);
    // an f32 tensor's parts stay views of the mapping (rows of a contiguous tensor are contiguous)
    for (int64_t i = 0; i < parts; ++i)
      dense[m.ours[static_cast<size_t>(i)]] = t.narrow(0, i * rows, rows).to(DType::f32).contiguous();
  }
  model->load_state_dict(dense, true, nn::LoadMode::adopt);  // the parameters take those views: no copy
  return model;
}

namespace {

// Which GGUF architecture holds `c`; throws naming the first option it cannot express.
GGUFArch arch_for(const models::DecoderLMConfig& c) {
  auto need = [](bool ok, const char* arch, const std::string& option, const std::string& value) {
    NF_CHECK(ok, "save_gguf: ", option, " ", value, " cannot be expressed by GGUF's ", arch, " architecture");
  };
  need(c.position == nn::PositionKind::learned || c.position == nn::PositionKind::rope, "llama or gpt2", "position",
       nn::position_kind_name(c.position));
  const bool gpt2 = c.position == nn::PositionKind::learned;
  const char* arch = gpt2 ? "gpt2" : "llama";
  need(nanochat_option_set(c).empty(), arch, nanochat_option_set(c), "(nanochat's current GPT)");
  need(c.norm_placement == nn::NormPlacement::pre, arch, "norm_placement", nn::norm_placement_name(c.norm_placement));
  need(!c.embedding_norm, arch, "embedding_norm", "true");
  need(!c.qk_norm, arch, "qk_norm", "true");
  need(c.sliding_window == 0, arch, "sliding_window", std::to_string(c.sliding_window));
  need(c.logit_softcap == 0.0, arch, "logit_softcap", std::to_string(c.logit_softcap));
  need(!c.moe.has_value(), arch, "moe", "(experts)");
  if (gpt2) {
    need(c.norm == nn::NormKind::layernorm && c.norm_bias, arch, "norm", nn::norm_kind_name(c.norm) +
         std::string(c.norm_bias ? "" : " without bias"));
    need(c.mlp == nn::MLPKind::gelu_tanh, arch, "mlp", nn::mlp_kind_name(c.mlp));
    need(c.attention_bias && c.attention_output_bias && c.mlp_bias, arch,
         "attention_bias / attention_output_bias / mlp_bias", "false");
    need(c.n_kv_heads == 0 || c.n_kv_heads == c.n_heads, arch, "n_kv_heads", std::to_string(c.n_kv_heads));
    need(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, arch, "head_dim", std::to_string(c.head_dim));
    return GGUFArch::gpt2;
  }
  need(c.norm == nn::NormKind::rmsnorm, arch, "norm", nn::norm_kind_name(c.norm));
  need(c.rope_layout == RopeLayout::interleaved || c.rope_layout == RopeLayout::half, arch, "rope_layout",
       rope_layout_name(c.rope_layout));
  need(c.rope_scaling == nn::RopeScaling::none || c.rope_scaling == nn::RopeScaling::linear, arch, "rope_scaling",
       "ntk");
  need(c.mlp == nn::MLPKind::swiglu, arch, "mlp", nn::mlp_kind_name(c.mlp));
  return GGUFArch::llama;
}

using Metadata = tokenizer::GGUFMetadata;

template <class T>
void add(Metadata& md, const std::string& key, T value) {
  md.emplace_back(key, io::GGUFValue(std::move(value)));
}

uint32_t u32(int64_t v, const char* what) {
  NF_CHECK(v >= 0 && v <= std::numeric_limits<uint32_t>::max(), "save_gguf: ", what, " ", v,
           " does not fit GGUF's u32");
  return static_cast<uint32_t>(v);
}

// llama.cpp's llama_ftype of a file whose blocks are mostly `type` (general.file_type).
uint32_t file_type(QuantType type) {
  switch (type) {
    case QuantType::f32: return 0;    // ALL_F32
    case QuantType::f16: return 1;    // MOSTLY_F16
    case QuantType::q4_0: return 2;
    case QuantType::q4_1: return 3;
    case QuantType::q8_0: return 7;
    case QuantType::q5_0: return 8;
    case QuantType::q5_1: return 9;
    case QuantType::q2_k: return 10;
    case QuantType::q3_k: return 11;  // Q3_K_S: every block tensor Q3_K
    case QuantType::q4_k: return 14;  // Q4_K_S
    case QuantType::q5_k: return 16;  // Q5_K_S
    case QuantType::q6_k: return 18;
    case QuantType::bf16: return 32;
    default: return 1024;             // GUESSED
  }
}

// The type most of the blocks' quantised weights have (f32 when none is quantised).
QuantType main_type(const std::vector<io::GGUFTensorSource>& tensors) {
  std::map<QuantType, int64_t> count;
  for (const auto& t : tensors)
    if (t.quantized.defined() && starts_with(t.name, "blk.")) ++count[t.quantized.type()];
  QuantType best = QuantType::f32;
  int64_t most = 0;
  for (const auto& [type, n] : count)
    if (n > most) best = type, most = n;
  return best;
}

Metadata architecture_metadata(const models::DecoderLMConfig& c, GGUFArch arch, uint32_t ftype) {
  const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
  const std::string p = std::string(arch_name(arch)) + ".";
  Metadata md;
  add(md, p + "block_count", u32(c.n_layers, "n_layers"));
  add(md, p + "context_length", u32(c.max_seq_len, "max_seq_len"));
  add(md, p + "embedding_length", u32(c.dim, "dim"));
  add(md, p + "feed_forward_length", u32(nn::mlp_hidden_dim(block_config(c).mlp), "mlp_hidden"));
  add(md, p + "attention.head_count", u32(a.n_heads, "n_heads"));
  add(md, p + "vocab_size", u32(c.vocab_size, "vocab_size"));  // what a file without a vocabulary is read by
  if (arch == GGUFArch::gpt2) {
    add(md, p + "attention.layer_norm_epsilon", static_cast<float>(c.norm_eps));
    add(md, "general.file_type", ftype);
    return md;
  }
  add(md, p + "attention.head_count_kv", u32(a.n_kv_heads, "n_kv_heads"));
  add(md, p + "rope.freq_base", static_cast<float>(c.rope_theta));
  add(md, p + "attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  add(md, "general.file_type", ftype);
  add(md, p + "rope.dimension_count", u32(a.head_dim, "head_dim"));
  if (a.head_dim * a.n_heads != c.dim) {
    add(md, p + "attention.key_length", u32(a.head_dim, "head_dim"));
    add(md, p + "attention.value_length", u32(a.head_dim, "head_dim"));
  }
  if (c.rope_scaling == nn::RopeScaling::linear) {
    add(md, p + "rope.scaling.type", std::string("linear"));
    add(md, p + "rope.scaling.factor", static_cast<float>(c.rope_scale_factor));
  }
  return md;
}

// The tokenizer.* keys for `path`: a GGUF file's copied, a tokenizer file's built with its folder's
// chat template (vocab_size < 0: the tokenizer's own, to check it alone).
Metadata tokenizer_metadata(const std::string& path, int64_t vocab_size) {
  if (io::is_gguf_file(path)) {
    const io::GGUFFile f = io::GGUFFile::open(path);
    NF_CHECK(tokenizer::has_gguf_tokenizer(f), "save_gguf: ", path, " holds no tokenizer (no tokenizer.ggml.model)");
    const auto tokens = static_cast<int64_t>(tokenizer::tokenizer_from_gguf(f).vocab_size());
    NF_CHECK(vocab_size < 0 || tokens == vocab_size, "save_gguf: the tokenizer of ", path, " has ", tokens,
             " tokens but the model ", vocab_size, " ids");
    Metadata md;
    for (const std::string& key : f.keys())
      if (starts_with(key, "tokenizer.")) md.emplace_back(key, f.get(key));
    return md;
  }
  const std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(path);
  const auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(tok.get());
  NF_CHECK(bpe, "save_gguf: ", path, " is a ", tok->kind(), " tokenizer; GGUF holds byte-level BPE ones");
  const std::string template_file = tokenizer::hf_chat_template_file(path);
  tokenizer::HfChatTemplate::Source config;  // the folder's tokenizer_config.json: template and special tokens
  if (!template_file.empty()) config = tokenizer::HfChatTemplate::read_source(template_file);
  return tokenizer::gguf_tokenizer_metadata(*bpe, vocab_size < 0 ? bpe->vocab_size() : static_cast<size_t>(vocab_size),
                                            path, config.text, config.special_tokens);
}

// One GGUF tensor from our parts (stacked along rows): their blocks when every part is quantised to
// the same type, else f32.
io::GGUFTensorSource assemble(const MappedTensor& m, const nn::StateDict& dense,
                              const std::map<std::string, QuantizedTensor>& quantized) {
  std::vector<QuantizedTensor> blocks;
  for (const std::string& name : m.ours)
    if (auto it = quantized.find(name); it != quantized.end()) blocks.push_back(it->second);
  if (blocks.size() == m.ours.size() &&
      std::all_of(blocks.begin(), blocks.end(), [&](const auto& q) { return q.type() == blocks[0].type(); })) {
    if (blocks.size() == 1) return {.name = m.external, .dense = {}, .quantized = blocks[0]};
    int64_t rows = 0;
    for (const auto& q : blocks) rows += q.rows();
    QuantizedTensor all = QuantizedTensor::empty(blocks[0].type(), rows, blocks[0].cols());
    auto* to = static_cast<unsigned char*>(all.mutable_data());
    for (const auto& q : blocks) to = static_cast<unsigned char*>(std::memcpy(to, q.data(), q.nbytes())) + q.nbytes();
    return {.name = m.external, .dense = {}, .quantized = all};
  }
  std::vector<Tensor> parts;
  for (const std::string& name : m.ours) {
    if (auto it = quantized.find(name); it != quantized.end()) {
      parts.push_back(dequantize(it->second));
    } else {
      auto d = dense.find(name);
      NF_CHECK(d != dense.end(), "save_gguf: the model has no tensor ", name, " (for ", m.external, ")");
      parts.push_back(d->second.detach().to(DType::f32).contiguous());
    }
  }
  Tensor t = parts.size() == 1 ? parts[0] : cat(parts, 0);
  return {.name = m.external, .dense = t.reshape(m.external_shape).contiguous(), .quantized = {}};
}

}  // namespace

void check_gguf_tokenizer(const std::string& tokenizer) { (void)tokenizer_metadata(tokenizer, -1); }

void save_gguf(const models::DecoderLM& model, const std::string& path, const GGUFSaveOptions& options) {
  const models::DecoderLMConfig& c = model.config();
  const GGUFArch arch = arch_for(c);
  const Metadata tokenizer_keys =
      options.tokenizer.empty() ? tokenizer::gguf_no_tokenizer_metadata() : tokenizer_metadata(options.tokenizer, c.vocab_size);
  // llama.cpp's llama rotates adjacent pairs: a half-layout model's q / k rows are reordered
  const RopeLayout layout = arch == GGUFArch::llama ? RopeLayout::interleaved : c.rope_layout;
  const nn::StateDict dense = with_rope_layout(model.state_dict(), c, layout);
  std::map<std::string, QuantizedTensor> quantized;
  for (auto& [name, q] : with_rope_layout(model.named_quantized(), c, layout)) quantized.emplace(name, q);
  std::vector<io::GGUFTensorSource> tensors;
  for (const MappedTensor& m : gguf_name_map(c)) tensors.push_back(assemble(m, dense, quantized));

  Metadata md;
  add(md, "general.architecture", std::string(arch_name(arch)));
  add(md, "general.type", std::string("model"));
  add(md, "general.name", c.name.empty() ? std::filesystem::path(path).stem().string() : c.name);
  const uint32_t ftype = options.file_type.value_or(file_type(main_type(tensors)));
  for (auto& kv : architecture_metadata(c, arch, ftype)) md.push_back(std::move(kv));
  add(md, "general.quantization_version", uint32_t{2});  // GGML_QNT_VERSION
  for (const auto& kv : tokenizer_keys) md.push_back(kv);
  io::write_gguf(path, md, tensors);
}

}  // namespace nf::formats
