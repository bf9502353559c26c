// A model with its tokenizer (infer/loaded_model.h).
#include "nanoformer/infer/loaded_model.h"

#include <algorithm>
#include <filesystem>

#include "nanoformer/core/error.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/jsonl.h"

namespace nf::infer {

namespace fs = std::filesystem;

std::string tokenizer_beside(const std::string& model) {
  if (io::is_gguf_file(model) && tokenizer::has_gguf_tokenizer(io::GGUFFile::open(model))) return model;
  std::error_code ec;
  const fs::path path(model);
  if (!fs::exists(path, ec)) return {};  // a preset
  const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
  const fs::path candidate = (folder.empty() ? fs::path(".") : folder) / "tokenizer.json";
  return fs::is_regular_file(candidate, ec) ? candidate.string() : std::string();
}

std::vector<int64_t> default_end_ids(const LoadedModel& loaded) {
  std::vector<int64_t> ids = loaded.end_ids;
  if (const auto eot = tokenizer::end_of_text_id(*loaded.tokenizer))
    if (std::find(ids.begin(), ids.end(), *eot) == ids.end()) ids.push_back(*eot);
  return ids;
}

LoadedModel with_tokenizer(const std::shared_ptr<models::Model>& model, const std::string& model_path,
                           const std::string& tokenizer_path, bool required) {
  LoadedModel out;
  out.model = models::model_as<models::DecoderLM>(model, model_path);
  out.tokenizer_path = tokenizer_path.empty() ? tokenizer_beside(model_path) : tokenizer_path;
  NF_CHECK(!required || !out.tokenizer_path.empty(), "no tokenizer: ", model_path,
           " has no tokenizer.json beside it (nor one of its own, for a GGUF file); give --tokenizer FILE",
           " (or --ids with --prompt-ids for a model without one)");
  if (out.tokenizer_path.empty()) return out;
  out.tokenizer = tokenizer::load_tokenizer(out.tokenizer_path);
  if (io::is_gguf_file(out.tokenizer_path)) {
    const io::GGUFFile file = io::GGUFFile::open(out.tokenizer_path);
    for (const tokenizer::TokenId id : tokenizer::gguf_end_ids(file)) out.end_ids.push_back(id);
    out.prompt_bos = tokenizer::gguf_prompt_bos(file);
  }
  const auto tokenizer_vocab = static_cast<int64_t>(out.tokenizer->vocab_size());
  const int64_t model_vocab = out.model->config().vocab_size;
  NF_CHECK(tokenizer_vocab <= model_vocab, "tokenizer ", out.tokenizer_path, " has ", tokenizer_vocab,
           " tokens but the model ", model_path, " has a vocabulary of ", model_vocab,
           ": they do not belong together (give the model's own tokenizer with --tokenizer)");
  return out;
}

}  // namespace nf::infer
