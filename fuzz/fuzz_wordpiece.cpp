// WordPiece (BERT) tokenizers. An input starting with '{' is a tokenizer.json: when
// wordpiece_tokenizer_from_json loads it, a few texts and the input itself are encoded and
// decoded, and it is saved and loaded back (the same file again, the same ids). Any other input
// is text (after a selector byte) encoded by the fixture tokenizers (all-MiniLM-L6-v2's, and a
// small cased one with added tokens): ids in range, encode_with_special_tokens is the template
// around encode, and cutting after '\n' before an ASCII letter or digit does not change the ids.
#include <cctype>

#include "fuzz_support.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

using namespace nf;
using namespace nf::tokenizer;

namespace {

const std::vector<WordPieceTokenizer>& fixtures() {
  static const std::vector<WordPieceTokenizer> tokenizers = [] {
    std::vector<WordPieceTokenizer> out;
    for (const char* name : {"wp_minilm.json", "wp_small.json"})
      out.push_back(wordpiece_tokenizer_from_json(read_file(fuzz::fixture_path(name)), name));
    return out;
  }();
  return tokenizers;
}

void check_encoding(const WordPieceTokenizer& tok, std::string_view text) {
  const std::vector<TokenId> ids = tok.encode(text);
  (void)fuzz::decode_checked(tok, ids);
  std::string skipped;
  tok.decode(ids, skipped, true);
  std::vector<TokenId> with_special;
  tok.encode_with_special_tokens(text, with_special);
  std::vector<TokenId> expected = tok.config().prefix_ids;
  expected.insert(expected.end(), ids.begin(), ids.end());
  expected.insert(expected.end(), tok.config().suffix_ids.begin(), tok.config().suffix_ids.end());
  NF_FUZZ_CHECK(with_special == expected, "encode_with_special_tokens is not the template around encode");
  if (!tok.splittable_after_newline()) return;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const unsigned char next = static_cast<unsigned char>(text[i + 1]);
    if (text[i] != '\n' || !(std::isalnum(next) && next < 128)) continue;
    std::vector<TokenId> parts = tok.encode(text.substr(0, i + 1));
    tok.encode(text.substr(i + 1), parts);
    NF_FUZZ_CHECK(parts == ids, "cutting after the '\\n' at ", i, " changes the ids");
    break;
  }
}

void check_file(std::string_view text) {
  fuzz::expect_nf_error_naming("fuzz.json", [&] {
    const WordPieceTokenizer tok = wordpiece_tokenizer_from_json(text, "fuzz.json");
    fuzz::exercise_tokenizer(tok, text.substr(0, 256), false);
    for (std::string_view sample : fuzz::kSampleTexts) check_encoding(tok, sample);
    const std::string saved = tokenizer_to_json(tok);
    const WordPieceTokenizer again = [&] {
      try {
        return wordpiece_tokenizer_from_json(saved, "saved.json");
      } catch (const Error& e) {
        fuzz::finding(std::string("a loaded tokenizer saves to a file that does not load: ") + e.what());
      }
    }();
    NF_FUZZ_CHECK(tokenizer_to_json(again) == saved, "saving the reloaded tokenizer gives another file");
    for (std::string_view sample : fuzz::kSampleTexts) {
      std::vector<TokenId> a, b;
      tok.encode_with_special_tokens(sample, a);
      again.encode_with_special_tokens(sample, b);
      NF_FUZZ_CHECK(a == b, "the reloaded tokenizer encodes differently");
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == '{') {
    check_file(fuzz::as_text(data, size));
    return 0;
  }
  const WordPieceTokenizer& tok = fixtures()[data[0] % 2];
  check_encoding(tok, fuzz::as_text(data + 1, size - 1));
  return 0;
}
