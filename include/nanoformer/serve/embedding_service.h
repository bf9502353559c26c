#pragma once
// POST /v1/embeddings, in OpenAI's shapes: the request
//   {"input": a string, an array of strings, an array of token ids, or an array of arrays of ids
//             (at most 2048 inputs, none empty),
//    "model": optional, as for completions (404 model_not_found for another name),
//    "encoding_format": "float" (default) or "base64" (each vector's little-endian f32 bytes, as
//             the openai Python client asks by default),
//    "dimensions": optional, must equal the model's width (no model here is trained to be cut)}
// and the answer
//   {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...] or "..."}],
//    "model", "usage": {"prompt_tokens", "total_tokens"}}.
// The vectors are models/sentence_embedding.h's: the folder's sentence-transformers pooling, or
// the server's --pooling. An input over the model's limit is refused (400, as OpenAI), not cut.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nanoformer/models/sentence_embedding.h"

namespace nf::serve {

struct EmbeddingRequest {
  std::string model;
  std::vector<std::string> texts;             // the inputs given as text, or
  std::vector<std::vector<int64_t>> ids;      // as token ids
  bool base64 = false;
  int64_t dimensions = 0;                     // 0: not asked
};

// Throws ApiError 400 naming the field at fault.
EmbeddingRequest parse_embedding_request(std::string_view body);

class EmbeddingService {
 public:
  // Text to the ids the model embeds (a BERT tokenizer's [CLS] ... [SEP], a decoder's own ids).
  using Encode = std::function<std::vector<int64_t>(std::string_view text)>;
  // Runs a job where the model may run (the scheduler's thread between steps, or at once).
  using Runner = std::function<void(std::function<void()>)>;
  // The model, encode and runner must outlive the service.
  EmbeddingService(models::Model& model, Encode encode, models::SentenceEmbedding options, std::string model_name,
                   Runner run);
  // The answer's body; throws ApiError (400 for an input too long or out of the vocabulary, 404
  // for another model's name).
  nlohmann::json embed(const EmbeddingRequest& request);
  const models::SentenceEmbedding& options() const { return options_; }
  int64_t width() const { return width_; }

 private:
  models::Model& model_;
  Encode encode_;
  models::SentenceEmbedding options_;
  std::string model_name_;
  Runner run_;
  int64_t width_;
};

}  // namespace nf::serve
