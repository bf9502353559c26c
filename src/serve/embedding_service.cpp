// OpenAI embeddings requests to pooled vectors (serve/embedding_service.h).
#include "nanoformer/serve/embedding_service.h"

#include <bit>
#include <cstring>

#include "nanoformer/serve/api_error.h"
#include "nanoformer/serve/json_depth.h"

namespace nf::serve {
namespace {

using json = nlohmann::json;
constexpr size_t kMaxInputs = 2048;  // OpenAI's limit

// RFC 4648 base64 of bytes, with '=' padding.
std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t word = 0;
    for (size_t k = 0; k < 3; ++k) word = word << 8 | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(word >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// An array of token ids, each a non-negative integer.
std::vector<int64_t> token_ids(const json& v, const std::string& param) {
  std::vector<int64_t> ids;
  for (const json& id : v) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      throw invalid_request(param, "'" + param + "' must hold token ids (integers >= 0), got " + id.dump());
    ids.push_back(id.get<int64_t>());
  }
  if (ids.empty()) throw invalid_request(param, "'" + param + "' must not be empty");
  return ids;
}

void parse_input(const json& input, EmbeddingRequest& r) {
  if (input.is_string()) {
    r.texts.push_back(input.get<std::string>());
  } else if (input.is_array() && !input.empty() && input[0].is_number()) {
    r.ids.push_back(token_ids(input, "input"));
  } else if (input.is_array() && !input.empty()) {
    if (input.size() > kMaxInputs)
      throw invalid_request("input", "'input' holds " + std::to_string(input.size()) + " inputs, over the limit of " +
                                         std::to_string(kMaxInputs));
    const bool text = input[0].is_string();
    for (size_t i = 0; i < input.size(); ++i) {
      const std::string param = "input[" + std::to_string(i) + "]";
      if (text && input[i].is_string()) r.texts.push_back(input[i].get<std::string>());
      else if (!text && input[i].is_array()) r.ids.push_back(token_ids(input[i], param));
      else throw invalid_request(param, "'input' must be all strings or all arrays of token ids, got " + input[i].dump().substr(0, 80));
    }
  } else {
    throw invalid_request("input", "'input' must be a string, an array of strings or of token ids, got " +
                                       input.dump().substr(0, 80));
  }
  for (size_t i = 0; i < r.texts.size(); ++i)
    if (r.texts[i].empty()) throw invalid_request("input", "'input' strings must not be empty (input " + std::to_string(i) + ")");
}

}  // namespace

EmbeddingRequest parse_embedding_request(std::string_view text) {
  if (json_depth(text) > kMaxJsonDepth)
    throw invalid_request("", "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw invalid_request("", "the request body is not valid JSON");
  if (!body.is_object()) throw invalid_request("", std::string("the request body must be a JSON object, got ") + body.type_name());
  EmbeddingRequest r;
  if (const auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw invalid_request("model", std::string("'model' must be a string, got ") + it->type_name());
    r.model = it->get<std::string>();
  }
  const auto input = body.find("input");
  if (input == body.end() || input->is_null()) throw invalid_request("input", "'input' is required");
  parse_input(*input, r);
  if (const auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (*it != "float" && *it != "base64")
      throw invalid_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\", got " + it->dump());
    r.base64 = *it == "base64";
  }
  if (const auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1)
      throw invalid_request("dimensions", "'dimensions' must be an integer >= 1, got " + it->dump());
    r.dimensions = it->get<int64_t>();
  }
  return r;
}

EmbeddingService::EmbeddingService(models::Model& model, Encode encode, models::SentenceEmbedding options,
                                   std::string model_name, Runner run)
    : model_(model),
      encode_(std::move(encode)),
      options_(options),
      model_name_(std::move(model_name)),
      run_(std::move(run)),
      width_(models::embedding_width(model)) {}

json EmbeddingService::embed(const EmbeddingRequest& r) {
  if (!r.model.empty() && r.model != model_name_)
    throw ApiError(404, "the model '" + r.model + "' does not exist: this server serves '" + model_name_ + "'",
                   "invalid_request_error", "model", "model_not_found");
  if (r.dimensions && r.dimensions != width_)
    throw invalid_request("dimensions", "'dimensions' is " + std::to_string(r.dimensions) + ", but this model's embeddings have " +
                                            std::to_string(width_) + " (they cannot be cut)");
  std::vector<std::vector<int64_t>> inputs = r.ids;
  for (const std::string& text : r.texts) inputs.push_back(encode_(text));
  int64_t tokens = 0;
  for (const auto& ids : inputs) tokens += static_cast<int64_t>(ids.size());
  std::vector<std::vector<float>> vectors;
  try {
    run_([&] { vectors = models::embed(model_, inputs, options_); });
  } catch (const Error& e) {  // an input too long, empty, or out of the vocabulary
    throw invalid_request("input", e.what());
  }
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json embedding;
    if (r.base64) {
      static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian f32");
      std::string bytes(vectors[i].size() * sizeof(float), '\0');
      std::memcpy(bytes.data(), vectors[i].data(), bytes.size());
      embedding = base64(bytes);
    } else {
      embedding = vectors[i];
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model_name_},
          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

}  // namespace nf::serve
