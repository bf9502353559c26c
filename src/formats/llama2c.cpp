// llama2.c's .bin model file: a 7-int32 header and fp32 tensors in a fixed order (see llama2c.h).
#include "nanoformer/formats/llama2c.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "formats/nanochat_options.h"
#include "formats/rope_rows.h"
#include "nanoformer/core/error.h"

namespace nf::formats {
namespace {

static_assert(std::endian::native == std::endian::little, "llama2.c files are little-endian");

constexpr double kLlama2cNormEps = 1e-5;      // run.c's rmsnorm
constexpr double kLlama2cRopeTheta = 10000.0;  // run.c's RoPE base
constexpr int64_t kHeaderBytes = 7 * sizeof(int32_t);
constexpr const char* kHeaderFields[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                                          "seq_len"};

// One tensor of the file in file order; an empty name is a freq_cis table (not a parameter).
struct Piece {
  std::string name;
  Shape shape;
};

// c.mlp_hidden must be resolved (not 0).
std::vector<Piece> file_layout(const models::DecoderLMConfig& c) {
  const int64_t hs = c.dim / c.n_heads, hidden = c.mlp_hidden;
  std::vector<Piece> pieces{{"tok_embeddings.weight", {c.vocab_size, c.dim}}};
  auto per_layer = [&](const std::string& suffix, const Shape& shape) {
    for (int64_t l = 0; l < c.n_layers; ++l) pieces.push_back({"layers." + std::to_string(l) + "." + suffix, shape});
  };
  per_layer("attn_norm.weight", {c.dim});
  per_layer("attn.q_proj.weight", {c.n_heads * hs, c.dim});
  per_layer("attn.k_proj.weight", {c.n_kv_heads * hs, c.dim});
  per_layer("attn.v_proj.weight", {c.n_kv_heads * hs, c.dim});
  per_layer("attn.o_proj.weight", {c.dim, c.n_heads * hs});
  per_layer("mlp_norm.weight", {c.dim});
  per_layer("mlp.w1.weight", {hidden, c.dim});
  per_layer("mlp.w2.weight", {c.dim, hidden});
  per_layer("mlp.w3.weight", {hidden, c.dim});
  pieces.push_back({"norm.weight", {c.dim}});
  pieces.push_back({"", {c.max_seq_len, hs / 2}});  // freq_cis_real
  pieces.push_back({"", {c.max_seq_len, hs / 2}});  // freq_cis_imag
  if (!c.tie_embeddings) pieces.push_back({"output.weight", {c.vocab_size, c.dim}});
  return pieces;
}

// The body's size from the header alone, in floating point (exact below 2^53 bytes). A file shorter
// than this is refused before its layout (one entry per tensor) is built or its exact size summed,
// so a header claiming 2^24 layers of 2^24-wide matrices can neither overflow that sum nor make us
// allocate a list of 150 million tensors.
double approximate_body_bytes(const models::DecoderLMConfig& c) {
  const double dim = static_cast<double>(c.dim), hs = static_cast<double>(c.dim / c.n_heads);
  const double per_layer = 2 * dim + 2 * static_cast<double>(c.n_heads) * hs * dim +
                           2 * static_cast<double>(c.n_kv_heads) * hs * dim + 3 * static_cast<double>(c.mlp_hidden) * dim;
  const double floats = static_cast<double>(c.vocab_size) * dim * (c.tie_embeddings ? 1 : 2) +
                        static_cast<double>(c.n_layers) * per_layer + dim +
                        2 * static_cast<double>(c.max_seq_len) * static_cast<double>(c.dim / c.n_heads / 2);
  return floats * static_cast<double>(sizeof(float));
}

int64_t body_bytes(const std::vector<Piece>& pieces) {
  int64_t n = 0;
  for (const Piece& p : pieces) n += shape_numel(p.shape);
  return n * static_cast<int64_t>(sizeof(float));
}

models::DecoderLMConfig config_from_header(const std::array<int32_t, 7>& h, const std::string& path) {
  for (size_t i = 0; i < h.size(); ++i)
    NF_CHECK(h[i] != 0 && (h[i] > 0 || i == 5), path, ": llama2.c header field ", kHeaderFields[i], " is ", h[i],
             " (must be positive)");
  // every field below 2^24 keeps the size arithmetic far from int64 overflow
  for (size_t i = 0; i < h.size(); ++i)
    NF_CHECK(std::abs(static_cast<int64_t>(h[i])) < (int64_t{1} << 24), path, ": llama2.c header field ",
             kHeaderFields[i], " is ", h[i], " (implausibly large: not a llama2.c file?)");
  NF_CHECK(h[0] % h[3] == 0, path, ": llama2.c dim ", h[0], " is not divisible by n_heads ", h[3]);
  models::DecoderLMConfig c;
  c.name = std::filesystem::path(path).stem().string();
  c.dim = h[0];
  c.mlp_hidden = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = std::abs(h[5]);
  c.tie_embeddings = h[5] > 0;
  c.max_seq_len = h[6];
  c.norm = nn::NormKind::rmsnorm;
  c.norm_eps = kLlama2cNormEps;
  c.norm_bias = false;
  c.position = nn::PositionKind::rope;
  c.rope_layout = RopeLayout::interleaved;
  c.rope_theta = kLlama2cRopeTheta;
  c.mlp = nn::MLPKind::swiglu;
  c.attention_bias = false;
  c.mlp_bias = false;
  models::validate_model_config(c, path);
  return c;
}

std::array<int32_t, 7> read_header(std::ifstream& in, const std::string& path) {
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path));
  NF_CHECK(size >= kHeaderBytes, path, ": truncated llama2.c file (", size, " bytes, the header alone is ",
           kHeaderBytes, ")");
  std::array<int32_t, 7> h{};
  in.read(reinterpret_cast<char*>(h.data()), kHeaderBytes);
  NF_CHECK(in.good(), path, ": cannot read the llama2.c header");
  return h;
}

std::ifstream open_input(const std::string& path) {
  NF_CHECK(std::filesystem::is_regular_file(path), path, ": no such llama2.c file");
  std::ifstream in(path, std::ios::binary);
  NF_CHECK(in.good(), path, ": cannot open");
  return in;
}

// What save_llama2c can express: LLaMA as run.c computes it.
void check_expressible(const models::DecoderLMConfig& c) {
  auto refuse = [](bool ok, const std::string& option, const std::string& value, const std::string& needed) {
    NF_CHECK(ok, "save_llama2c: ", option, " ", value, " cannot be written to a llama2.c file (it needs ", needed,
             ")");
  };
  refuse(nanochat_option_set(c).empty(), nanochat_option_set(c), "(nanochat's current GPT)", "LLaMA's blocks only");
  refuse(c.norm == nn::NormKind::rmsnorm, "norm", nn::norm_kind_name(c.norm), "rmsnorm");
  refuse(c.norm_eps == kLlama2cNormEps, "norm_eps", std::to_string(c.norm_eps), "1e-5");
  refuse(c.norm_placement == nn::NormPlacement::pre, "norm_placement", nn::norm_placement_name(c.norm_placement),
         "pre");
  refuse(!c.embedding_norm, "embedding_norm", "true", "false");
  refuse(c.position == nn::PositionKind::rope, "position", nn::position_kind_name(c.position), "rope");
  // a half model is written with its q / k rows reordered to the interleaved layout (rope_rows.h)
  refuse(c.rope_layout == RopeLayout::interleaved || c.rope_layout == RopeLayout::half, "rope_layout",
         rope_layout_name(c.rope_layout), "interleaved or half");
  refuse(c.rope_theta == kLlama2cRopeTheta, "rope_theta", std::to_string(c.rope_theta), "10000");
  refuse(c.rope_scaling == nn::RopeScaling::none, "rope_scaling", "not none", "none");
  refuse(!c.qk_norm, "qk_norm", "true", "false");
  refuse(c.sliding_window == 0, "sliding_window", std::to_string(c.sliding_window), "0");
  refuse(c.mlp == nn::MLPKind::swiglu, "mlp", nn::mlp_kind_name(c.mlp), "swiglu");
  refuse(!c.attention_bias, "attention_bias", "true", "false");
  refuse(!c.mlp_bias, "mlp_bias", "true", "false");
  refuse(c.logit_softcap == 0.0, "logit_softcap", std::to_string(c.logit_softcap), "0");
  refuse(!c.moe.has_value(), "moe", "set", "null");
  refuse(c.head_dim == 0 || c.head_dim * c.n_heads == c.dim, "head_dim", std::to_string(c.head_dim),
         "dim / n_heads");
}

void write_floats(std::ofstream& out, const float* data, int64_t n) {
  out.write(reinterpret_cast<const char*>(data), n * static_cast<std::streamsize>(sizeof(float)));
}

// cos (real) or sin (imag) of t / theta^(2i / hs) for t < seq_len, i < hs / 2: (seq_len, hs / 2)
void write_freq_table(std::ofstream& out, int64_t seq_len, int64_t hs, bool imaginary) {
  std::vector<float> table(static_cast<size_t>(seq_len * (hs / 2)));
  for (int64_t t = 0; t < seq_len; ++t)
    for (int64_t i = 0; i < hs / 2; ++i) {
      const double angle = static_cast<double>(t) / std::pow(kLlama2cRopeTheta, static_cast<double>(2 * i) / hs);
      table[static_cast<size_t>(t * (hs / 2) + i)] = static_cast<float>(imaginary ? std::sin(angle) : std::cos(angle));
    }
  write_floats(out, table.data(), static_cast<int64_t>(table.size()));
}

}  // namespace

models::DecoderLMConfig read_llama2c_config(const std::string& path) {
  std::ifstream in = open_input(path);
  return config_from_header(read_header(in, path), path);
}

std::shared_ptr<models::DecoderLM> load_llama2c(const std::string& path) {
  std::ifstream in = open_input(path);
  const models::DecoderLMConfig config = config_from_header(read_header(in, path), path);
  const auto actual = static_cast<int64_t>(std::filesystem::file_size(path));
  const double approximate = static_cast<double>(kHeaderBytes) + approximate_body_bytes(config);
  NF_CHECK(approximate <= static_cast<double>(actual), path, ": truncated llama2.c file: ", actual,
           " bytes, the header (dim ", config.dim, ", hidden_dim ", config.mlp_hidden, ", n_layers ", config.n_layers,
           ", vocab_size ", config.vocab_size, ") implies about ", approximate);
  const std::vector<Piece> pieces = file_layout(config);
  const int64_t expected = kHeaderBytes + body_bytes(pieces);
  NF_CHECK(actual == expected, path, ": ", actual < expected ? "truncated" : "oversized", " llama2.c file: ", actual,
           " bytes, the header (dim ", config.dim, ", hidden_dim ", config.mlp_hidden, ", n_layers ", config.n_layers,
           ", n_heads ", config.n_heads, ", n_kv_heads ", config.n_kv_heads, ", vocab_size ", config.vocab_size,
           config.tie_embeddings ? " shared" : " separate", " classifier, seq_len ", config.max_seq_len, ") implies ",
           expected);
  nn::StateDict state;
  for (const Piece& p : pieces) {
    const int64_t n = shape_numel(p.shape);
    if (p.name.empty()) {
      in.seekg(n * static_cast<std::streamoff>(sizeof(float)), std::ios::cur);
      continue;
    }
    Tensor t = Tensor::empty(p.shape);
    in.read(reinterpret_cast<char*>(t.data<float>()), n * static_cast<std::streamsize>(sizeof(float)));
    NF_CHECK(in.good(), path, ": read error in tensor ", p.name);
    state[p.name] = t;
  }
  auto model = std::make_shared<models::DecoderLM>(config);
  model->load_state_dict(state);
  return model;
}

void save_llama2c(const models::DecoderLM& model, const std::string& path) {
  models::DecoderLMConfig c = model.config();
  check_expressible(c);
  const nn::StateDict state = with_rope_layout(model.state_dict(), c, RopeLayout::interleaved);  // run.c's layout
  c.mlp_hidden = state.at("layers.0.mlp.w1.weight").size(0);
  const std::array<int64_t, 7> header{c.dim, c.mlp_hidden, c.n_layers, c.n_heads, c.n_kv_heads,
                                      c.tie_embeddings ? c.vocab_size : -c.vocab_size, c.max_seq_len};
  std::array<int32_t, 7> header32{};
  for (size_t i = 0; i < header.size(); ++i) {
    NF_CHECK(std::abs(header[i]) <= INT32_MAX, "save_llama2c: ", kHeaderFields[i], " ", header[i],
             " does not fit the int32 header");
    header32[i] = static_cast<int32_t>(header[i]);
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    NF_CHECK(out.good(), "save_llama2c: cannot write ", tmp);
    out.write(reinterpret_cast<const char*>(header32.data()), kHeaderBytes);
    bool imaginary = false;
    for (const Piece& p : file_layout(c)) {
      if (p.name.empty()) {
        write_freq_table(out, c.max_seq_len, c.dim / c.n_heads, imaginary);
        imaginary = true;
        continue;
      }
      const Tensor t = state.at(p.name).to(DType::f32).contiguous();
      write_floats(out, t.data<float>(), t.numel());
    }
    out.flush();
    NF_CHECK(out.good(), "save_llama2c: write error on ", tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace nf::formats
