// A sentence-transformers folder's files (formats/sentence_transformers.h): the input is parsed as
// its modules.json, as a Pooling module's config.json and as its sentence_bert_config.json. Each
// parse succeeds or ends in an nf::Error naming the file; what parses gives the same result when
// its JSON is written out again and parsed (the parse depends on the values, not the spelling), and
// its values are in range (a Pooling mode of ours, a positive max_seq_length or none).
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "nanoformer/formats/sentence_transformers.h"

using namespace nf;
using namespace nf::models;

namespace {

// The text re-serialised, indented (nlohmann accepts only what it can write back).
std::string respelled(std::string_view text) { return nlohmann::json::parse(text).dump(2); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_nf_error_naming("modules.json", [&] {
    const formats::SentenceTransformersModules m = formats::parse_sentence_transformers_modules(text, "modules.json");
    const formats::SentenceTransformersModules again = formats::parse_sentence_transformers_modules(respelled(text), "modules.json");
    NF_FUZZ_CHECK(again.pooling_path == m.pooling_path && again.normalize == m.normalize,
                  "modules.json read differently once re-serialised");
  });
  fuzz::expect_nf_error_naming("1_Pooling/config.json", [&] {
    const Pooling p = formats::parse_sentence_transformers_pooling(text, "1_Pooling/config.json");
    NF_FUZZ_CHECK(p == Pooling::mean || p == Pooling::cls || p == Pooling::max || p == Pooling::last,
                  "a pooling mode out of range: ", static_cast<int>(p));
    NF_FUZZ_CHECK(formats::parse_sentence_transformers_pooling(respelled(text), "1_Pooling/config.json") == p,
                  "the Pooling config read differently once re-serialised");
  });
  fuzz::expect_nf_error_naming("sentence_bert_config.json", [&] {
    const int64_t max_tokens = formats::parse_sentence_bert_config(text, "sentence_bert_config.json");
    NF_FUZZ_CHECK(max_tokens >= 0, "max_seq_length ", max_tokens, " accepted");
    NF_FUZZ_CHECK(formats::parse_sentence_bert_config(respelled(text), "sentence_bert_config.json") == max_tokens,
                  "sentence_bert_config.json read differently once re-serialised");
  });
  return 0;
}
