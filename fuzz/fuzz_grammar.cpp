// Constrained decoding's parsers (grammar/grammar.h, grammar/json_schema.h), as `nanoformer serve`
// reaches them from a request's `grammar` (GBNF text) and `response_format.json_schema.schema`: the
// input as GBNF, and, when it is JSON, as a schema (strict and not). Bad input must end in a one-line nf::Error; a
// schema that converts must give GBNF that compiles; a grammar that compiles is walked for a few
// steps with token masks over a small vocabulary, each step taking an allowed token, which the
// matcher must then accept.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/json_schema.h"

using namespace nf;
using namespace nf::grammar;

namespace {

const std::shared_ptr<const TokenTrie>& trie() {
  static const std::shared_ptr<const TokenTrie> t = [] {
    std::vector<std::string> v;
    for (int c = 0; c < 256; ++c) v.emplace_back(1, static_cast<char>(c));
    for (const char* piece : {"{\"", "\":", "\",", "true", "false", "null", "ab", "\xC3\xA9", "\\n", "12", "  "})
      v.emplace_back(piece);
    v.emplace_back("");  // the end id
    return std::make_shared<const TokenTrie>(std::move(v));
  }();
  return t;
}

void walk(const std::shared_ptr<const Grammar>& grammar, size_t pick) {
  const auto end = static_cast<int64_t>(trie()->vocab_size()) - 1;
  try {
    GrammarConstraint constraint(grammar, trie(), {end});
    for (int step = 0; step < 32 && !constraint.finished(); ++step) {
      std::vector<int64_t> allowed;
      for (int64_t id = 0; id <= end; ++id)
        if (constraint.allowed(id)) allowed.push_back(id);
      if (allowed.empty()) return;  // a dead end for this vocabulary: apply() refuses it
      const int64_t id = allowed[(pick + static_cast<size_t>(step) * 7919) % allowed.size()];
      if (id == end) return;
      constraint.accept(id);
    }
  } catch (const Error& e) {
    const std::string_view what = e.what();
    NF_FUZZ_CHECK(what.find("not allowed") == std::string_view::npos && what.find("do not continue") == std::string_view::npos,
                  "the mask and the matcher disagree: ", what);
  }
}

void compile_and_walk(std::string_view gbnf, size_t pick, bool must_compile) {
  try {
    walk(std::make_shared<const Grammar>(compile_gbnf(gbnf)), pick);
  } catch (const Error& e) {
    NF_FUZZ_CHECK(!must_compile, "the schema's GBNF does not compile: ", e.what());
    NF_FUZZ_CHECK(std::string_view(e.what()).find('\n') == std::string_view::npos, "a multi-line error: ", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  compile_and_walk(text, size, false);
  const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  // strict and approximating: what converts compiles, and the approximating compiler refuses no
  // more than the strict one
  std::string gbnf;
  const bool strict = fuzz::expect_nf_error([&] { gbnf = json_schema_grammar(schema).gbnf; });
  if (strict) compile_and_walk(gbnf, size, true);
  const bool loose = fuzz::expect_nf_error([&] { gbnf = json_schema_grammar(schema, {.strict = false}).gbnf; });
  if (loose) compile_and_walk(gbnf, size, true);
  NF_FUZZ_CHECK(loose || !strict, "strict false refused a schema strict compiled");
  return 0;
}
