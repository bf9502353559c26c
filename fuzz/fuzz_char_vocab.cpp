// Character vocabulary: parse the input as a nanoformer-char file; when it loads, it must save and
// load back to the same characters, and encode/decode must round-trip every text it can encode.
#include "fuzz_support.h"
#include "nanoformer/tokenizer/char_tokenizer.h"

using namespace nf;
using namespace nf::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_nf_error_naming("fuzz.json", [&] {
    const CharTokenizer tok = CharTokenizer::from_json(text, "fuzz.json");
    NF_FUZZ_CHECK(CharTokenizer::from_json(tok.to_json()).characters() == tok.characters(), "save and reload");
    fuzz::exercise_tokenizer(tok, text.substr(0, 256), true);
  });
  return 0;
}
