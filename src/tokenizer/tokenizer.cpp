#include "nanoformer/tokenizer/tokenizer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/core/error.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  encode(text, ids);
  return ids;
}

void Tokenizer::decode(std::span<const TokenId> ids, std::string& out) const {
  for (TokenId id : ids) out += token_bytes(id);
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  decode(ids, out);
  return out;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  NF_CHECK(!std::filesystem::is_directory(path, ec), path, ": is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  NF_CHECK(f, path, ": cannot open for reading: ", std::strerror(errno));
  std::string data;
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  NF_CHECK(size >= 0, path, ": cannot read (not a regular file?)");
  data.resize(static_cast<size_t>(size));
  f.seekg(0, std::ios::beg);
  f.read(data.data(), size);
  NF_CHECK(f.gcount() == size, path, ": read failed after ", f.gcount(), " of ", size, " bytes");
  return data;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  // a GGUF model file holds its tokenizer in its metadata (checked first: the file may be gigabytes)
  if (io::is_gguf_file(path)) return std::make_unique<BpeTokenizer>(tokenizer_from_gguf(io::GGUFFile::open(path)));
  const std::string text = read_file(path);
  // A character-level vocabulary announces itself in its "type" field; anything else is read as
  // a Hugging Face tokenizer.json (whose errors then name the problem).
  const size_t head = text.find_first_not_of(" \t\r\n");
  if (head != std::string::npos && text[head] == '{' && text.find(CharTokenizer::kFileType) != std::string::npos) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);  // invalid: a discarded value
    // (not j.value("type", ""), which throws a type_error when "type" is not a string)
    if (j.is_object() && j.contains("type") && j["type"] == CharTokenizer::kFileType)
      return std::make_unique<CharTokenizer>(CharTokenizer::from_json(text, path));
  }
  return any_tokenizer_from_json(text, path);
}

}  // namespace nf::tokenizer
