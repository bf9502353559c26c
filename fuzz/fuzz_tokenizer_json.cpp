// tokenizer.json: parse the input as a Hugging Face tokenizer file; when it loads, encode and
// decode a few texts (and the input itself), then save it and load it back: a file we accept must
// be written in a form we accept, encoding identically.
#include "fuzz_support.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

using namespace nf;
using namespace nf::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_nf_error_naming("fuzz.json", [&] {
    const BpeTokenizer tok = tokenizer_from_json(text, "fuzz.json");
    fuzz::exercise_tokenizer(tok, text.substr(0, 256), false);
    const std::string saved = tokenizer_to_json(tok);
    const BpeTokenizer again = [&] {
      try {
        return tokenizer_from_json(saved, "saved.json");
      } catch (const Error& e) {
        fuzz::finding(std::string("a loaded tokenizer saves to a file that does not load: ") + e.what());
      }
    }();
    NF_FUZZ_CHECK(tokenizer_to_json(again) == saved, "saving the reloaded tokenizer gives another file");
    for (std::string_view sample : fuzz::kSampleTexts) {
      std::vector<TokenId> a, b;
      const bool ok_a = fuzz::expect_nf_error([&] { a = tok.encode(sample); });
      const bool ok_b = fuzz::expect_nf_error([&] { b = again.encode(sample); });
      NF_FUZZ_CHECK(ok_a == ok_b && a == b, "the reloaded tokenizer encodes differently");
    }
  });
  return 0;
}
