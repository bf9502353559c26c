// BPE round trip on the tokenizers Hugging Face trained for the test fixtures (GPT-2 split,
// GPT-4 split, prefix space; special and added tokens with lstrip/rstrip/single_word): the first
// input byte picks the tokenizer and whether added tokens are looked for, the rest is the text.
// decode(encode(x)) must be x, exactly, except where the format itself changes the text: an added
// token with lstrip/rstrip swallows the whitespace beside it, and add_prefix_space puts a space
// before each span between added tokens that does not start with one. Also: a second encode
// (served from the word cache) gives the same ids, a StreamDecoder fed the ids one by one gives
// the same bytes, and cutting the text after a newline as `tokenizer prepare` does leaves the
// ids unchanged.
#include <vector>

#include "fuzz_support.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

using namespace nf;
using namespace nf::tokenizer;

namespace {

const std::vector<BpeTokenizer>& fixtures() {
  static const std::vector<BpeTokenizer> tokenizers = [] {
    std::vector<BpeTokenizer> out;
    for (const char* name : {"hf_gpt2.json", "hf_gpt4.json", "hf_prefix.json"})
      out.push_back(load_tokenizer_json(fuzz::fixture_path(name)));
    return out;
  }();
  return tokenizers;
}

// What decode(encode(text)) must give (see the top of the file); checks on the way that the
// added-token segments tile the text and each holds its token's content.
std::string expected_round_trip(const BpeTokenizer& tok, std::string_view text, bool ordinary) {
  const auto span = [&](std::string_view piece) {
    std::string out(tok.pre_tokenizer().add_prefix_space && !piece.empty() && piece[0] != ' ' ? 1 : 0, ' ');
    return out.append(piece);
  };
  if (ordinary || tok.added().empty()) return span(text);
  std::vector<AddedVocabulary::Segment> segments;
  tok.added().split(text, segments);
  std::string out;
  size_t pos = 0;
  for (const AddedVocabulary::Segment& s : segments) {
    NF_FUZZ_CHECK(s.begin == pos && s.begin <= s.end && s.end <= text.size(), "segments do not tile the text at ", pos);
    const std::string_view piece = text.substr(s.begin, s.end - s.begin);
    if (s.is_token) {
      const AddedToken* token = nullptr;
      for (const AddedToken& t : tok.added().tokens())
        if (t.id == s.id) token = &t;
      NF_FUZZ_CHECK(token, "segment of unknown added token ", s.id);
      const size_t at = piece.find(token->content);
      NF_FUZZ_CHECK(at != std::string_view::npos && (token->lstrip || at == 0) &&
                        (token->rstrip || at + token->content.size() == piece.size()),
                    "segment [", s.begin, ", ", s.end, ") does not hold '", token->content, "'");
      out += token->content;
    } else {
      out += span(piece);
    }
    pos = s.end;
  }
  NF_FUZZ_CHECK(pos == text.size(), "segments end at ", pos, " of ", text.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const BpeTokenizer& tok = fixtures()[data[0] % 3];
  const bool ordinary = data[0] & 4;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  const auto encode = [&] {
    std::vector<TokenId> ids;
    if (ordinary)
      tok.encode_ordinary(text, ids);
    else
      tok.encode(text, ids);
    return ids;
  };
  const std::vector<TokenId> ids = encode();
  NF_FUZZ_CHECK(encode() == ids, "a second encode (word cache) gives other ids");
  const std::string decoded = fuzz::decode_checked(tok, ids);
  const std::string expected = expected_round_trip(tok, text, ordinary);
  NF_FUZZ_CHECK(decoded == expected, "decode(encode(x)) differs from x: ", decoded.size(), " bytes back for ",
                text.size(), " (", expected.size(), " expected)");
  // What `tokenizer prepare` relies on to encode chunks in parallel: cutting after a '\n' that is
  // followed by an ASCII letter or digit does not change the ids.
  if (ordinary || !tok.splittable_after_newline()) return 0;
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (text[i - 1] != '\n' || !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) continue;
    std::vector<TokenId> parts = tok.encode(text.substr(0, i));
    tok.encode(text.substr(i), parts);
    NF_FUZZ_CHECK(parts == ids, "cutting after the newline at byte ", i, " changes the ids");
    break;
  }
  return 0;
}
