// Chat SFT data (data/sft_data.h): the input as a JSONL file of conversations, MiniMind's form with
// tools (on a system message or the record, as strings of JSON or lists), tool_calls (strings or
// lists), tool_call_id and reasoning_content, read by read_sft_jsonl with MiniMind's Jinja template
// (which renders them all) and with the built-in chatml template (which refuses them). Bad input must
// end in an nf::Error naming the file; a file that reads reads the same twice, each example's mask
// as long as its ids, its ids within the tokenizer and its mask MiniMind's generate_labels over them.
#include <array>
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "nanoformer/data/sft_data.h"
#include "nanoformer/tokenizer/hf_chat_template.h"

using namespace nf;
using namespace nf::tokenizer;

namespace {

struct Templates {
  std::unique_ptr<Tokenizer> tok = load_tokenizer(fuzz::fixture_path("hf_gpt2.json"));
  std::unique_ptr<HfChatTemplate> minimind = make_minimind();
  std::unique_ptr<ChatTemplate> chatml = make_chat_template("chatml", *tok);
  std::vector<TokenId> open = tok->encode("<|im_start|>assistant\n"), close = tok->encode("<|im_end|>\n");

  std::unique_ptr<HfChatTemplate> make_minimind() const {
    const auto doc = nlohmann::ordered_json::parse(read_file(fuzz::fixture_path("hf_chat_templates.json")));
    const auto& t = doc.at("templates").at(0);
    std::vector<std::pair<std::string, std::string>> special;
    for (const auto& [k, v] : t.at("special_tokens").items()) special.emplace_back(k, v.get<std::string>());
    return std::make_unique<HfChatTemplate>("minimind", t.at("template").get<std::string>(), special, *tok);
  }
};

const Templates& templates() {
  static const Templates t;
  return t;
}

bool starts_at(std::span<const TokenId> ids, size_t i, const std::vector<TokenId>& p) {
  return i + p.size() <= ids.size() && std::equal(p.begin(), p.end(), ids.begin() + static_cast<std::ptrdiff_t>(i));
}

// MiniMind's SFTDataset.generate_labels (d65ef2c) over ids, written out on its own.
std::vector<uint8_t> generate_labels(std::span<const TokenId> ids) {
  const Templates& t = templates();
  std::vector<uint8_t> labels(ids.size(), 0);
  for (size_t i = 0; i < ids.size();) {
    if (!starts_at(ids, i, t.open)) {
      ++i;
      continue;
    }
    const size_t start = i + t.open.size();
    size_t end = start;
    while (end < ids.size() && !starts_at(ids, end, t.close)) ++end;
    for (size_t j = start; j < std::min(end + t.close.size(), ids.size()); ++j) labels[j] = 1;
    i = end < ids.size() ? end + t.close.size() : ids.size();
  }
  return labels;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Templates& t = templates();
  const std::string& path = fuzz::scratch_file(data, size);
  const std::array<const ChatTemplate*, 2> chats{t.minimind.get(), t.chatml.get()};
  for (const ChatTemplate* chat : chats) {
    data::SftExamples first, second;
    const bool ok = fuzz::expect_nf_error_naming(path, [&] { data::read_sft_jsonl(path, *chat, 4096, first); });
    const bool again = fuzz::expect_nf_error_naming(path, [&] { data::read_sft_jsonl(path, *chat, 4096, second); });
    NF_FUZZ_CHECK(ok == again, "a file read once and refused once");
    if (!ok) continue;
    NF_FUZZ_CHECK(first.size() == second.size() && first.tokens() == second.tokens(), "two reads differ in size");
    for (size_t k = 0; k < first.size(); ++k) {
      const auto ids = first.ids(k);
      const auto trained = first.trained(k);
      NF_FUZZ_CHECK(trained.size() == ids.size(), "example ", k, ": a mask of ", trained.size(), " for ", ids.size(), " ids");
      NF_FUZZ_CHECK(std::ranges::equal(ids, second.ids(k)) && std::ranges::equal(trained, second.trained(k)),
                    "example ", k, " read twice differs");
      for (const TokenId id : ids) NF_FUZZ_CHECK(id < t.tok->vocab_size(), "id ", id, " outside the vocabulary");
      if (chat == t.minimind.get()) {
        // the rule looks only forward, so the labels of the cut ids are the cut labels of the whole
        NF_FUZZ_CHECK(std::ranges::equal(generate_labels(ids), trained), "example ", k,
                      ": the mask is not MiniMind's generate_labels over its ids");
      }
    }
  }
  return 0;
}
