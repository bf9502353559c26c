// Hugging Face chat templates: the Jinja interpreter and HfChatTemplate against transformers'
// apply_chat_template (tests/fixtures/tokenizer/hf_chat_templates.json, written by
// tools/golden/hf_chat_template_fixtures.py: MiniMind's, Qwen2.5's, Qwen3's, SmolLM2's and
// Llama 3.3's templates, conversations with tools for the first three, and small templates over
// every construct); the SFT mask, the end token,
// the choice of template for a tokenizer folder, and the errors and limits.
#include "nanoformer/tokenizer/hf_chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/jinja/template.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::tokenizer {
namespace {

using testing::fixture;

nlohmann::ordered_json golden() {
  return nlohmann::ordered_json::parse(read_file(fixture("hf_chat_templates.json")));
}

std::vector<ChatMessage> messages_of(const nlohmann::ordered_json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  return out;
}

std::vector<std::pair<std::string, std::string>> special_of(const nlohmann::ordered_json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : j.items()) out.emplace_back(k, v.get<std::string>());
  return out;
}

std::string render(std::string_view source, const jinja::Value& context = jinja::Value::dict({})) {
  return jinja::Template(source).render(context);
}

TEST(HfChatTemplate, PublishedTemplatesRenderAsTransformers) {
  const auto doc = golden();
  const auto tok = load_tokenizer(fixture(doc.at("tokenizer").get<std::string>()));
  size_t texts = 0, ids = 0;
  for (const auto& t : doc.at("templates")) {
    const std::string name = t.at("name").get<std::string>();
    const jinja::Template compiled(t.at("template").get<std::string>());
    std::unique_ptr<HfChatTemplate> hf;
    if (t.at("cases").at(0).contains("ids"))
      hf = std::make_unique<HfChatTemplate>(name, t.at("template").get<std::string>(), special_of(t.at("special_tokens")), *tok);
    for (const auto& c : t.at("cases")) {
      const auto messages = messages_of(c.at("messages"));
      const bool gen = c.at("add_generation_prompt").get<bool>();
      jinja::Value context = jinja::from_json(nlohmann::ordered_json{{"messages", c.at("messages")},
                                                                     {"add_generation_prompt", gen},
                                                                     {"tools", nullptr},
                                                                     {"documents", nullptr}});
      jinja::Dict d = context.as_dict();
      for (const auto& [k, v] : t.at("special_tokens").items()) d.set(k, jinja::Value::string(v.get<std::string>()));
      const std::string expected = c.at("text").get<std::string>();
      EXPECT_EQ(compiled.render(jinja::Value::dict(d)), expected) << name << " " << c.at("messages").dump();
      ++texts;
      if (!hf) continue;
      EXPECT_EQ(hf->render_text(messages, gen), expected) << name;
      const auto want = c.at("ids").get<std::vector<TokenId>>();
      EXPECT_EQ(gen ? hf->render_for_completion(messages) : hf->render(messages).ids, want) << name << " " << c.at("messages").dump();
      ++ids;
    }
  }
  EXPECT_EQ(texts, 80u);
  EXPECT_EQ(ids, 64u);
}

// Conversations with tools, tool calls (arguments as objects) and tool results render as
// apply_chat_template(tools=...) does, for the templates with tools (MiniMind's, Qwen2.5's, Qwen3's).
TEST(HfChatTemplate, ToolsToolCallsAndToolResultsRenderAsTransformers) {
  const auto doc = golden();
  const auto tok = load_tokenizer(fixture(doc.at("tokenizer").get<std::string>()));
  size_t cases = 0;
  for (const auto& t : doc.at("templates")) {
    if (!t.contains("tool_cases")) continue;
    const std::string name = t.at("name").get<std::string>();
    const HfChatTemplate hf(name, t.at("template").get<std::string>(), special_of(t.at("special_tokens")), *tok);
    for (const auto& c : t.at("tool_cases")) {
      std::vector<ChatMessage> messages;
      for (const auto& m : c.at("messages"))
        messages.push_back({.role = m.at("role").get<std::string>(), .content = m.at("content").get<std::string>(),
                            .tool_calls = m.contains("tool_calls") ? m.at("tool_calls").dump() : "",
                            .tool_call_id = m.value("tool_call_id", "")});
      const std::vector<TokenId> ids = hf.render_for_completion(messages, c.at("tools").dump());
      EXPECT_EQ(tok->decode(ids), c.at("text").get<std::string>()) << name << " " << c.at("messages").dump();
      ++cases;
    }
  }
  EXPECT_EQ(cases, 9u);
}

TEST(HfChatTemplate, ConstructsRenderAsJinja2) {
  const auto doc = golden();
  const jinja::Value context = jinja::from_json(doc.at("context"));
  for (const auto& s : doc.at("snippets"))
    EXPECT_EQ(jinja::Template(s.at("template").get<std::string>()).render(context), s.at("text").get<std::string>())
        << s.at("template").get<std::string>();
}

// The messages of a fixture's conversation as the SFT reader makes them: tool_calls as their JSON
// text (keys in order), a null content as "", reasoning_content when the message has one.
std::vector<ChatMessage> tool_messages_of(const nlohmann::ordered_json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) {
    ChatMessage message{.role = m.at("role").get<std::string>(),
                        .content = m.at("content").is_null() ? "" : m.at("content").get<std::string>(),
                        .tool_calls = m.contains("tool_calls") ? m.at("tool_calls").dump() : "",
                        .tool_call_id = m.value("tool_call_id", "")};
    if (m.contains("reasoning_content")) message.reasoning_content = m.at("reasoning_content").get<std::string>();
    out.push_back(std::move(message));
  }
  return out;
}

// MiniMind's SFTDataset.generate_labels (jingyaogong/minimind@d65ef2c dataset/lm_dataset.py) written
// out again over the ids, on its own: bos_id = the ids of "<|im_start|>assistant\n", eos_id = those of
// "<|im_end|>\n"; from after each bos_id through the next eos_id is labelled.
std::vector<uint8_t> minimind_generate_labels(const Tokenizer& tok, const std::vector<TokenId>& input_ids) {
  const std::vector<TokenId> bos_id = tok.encode("<|im_start|>assistant\n"), eos_id = tok.encode("<|im_end|>\n");
  auto at = [&](size_t i, const std::vector<TokenId>& p) {
    return i + p.size() <= input_ids.size() && std::vector<TokenId>(input_ids.begin() + i, input_ids.begin() + i + p.size()) == p;
  };
  std::vector<uint8_t> labels(input_ids.size(), 0);
  size_t i = 0;
  while (i < input_ids.size()) {
    if (at(i, bos_id)) {
      const size_t start = i + bos_id.size();
      size_t end = start;
      while (end < input_ids.size()) {
        if (at(end, eos_id)) break;
        end += 1;
      }
      for (size_t j = start; j < std::min(end + eos_id.size(), input_ids.size()); ++j) labels[j] = 1;
      i = end < input_ids.size() ? end + eos_id.size() : input_ids.size();
    } else {
      i += 1;
    }
  }
  return labels;
}

// The trained tokens' text, one string a run.
std::vector<std::string> trained_runs(const Tokenizer& tok, const RenderedChat& r) {
  std::vector<std::string> out;
  std::vector<TokenId> run;
  for (size_t i = 0; i <= r.ids.size(); ++i) {
    if (i < r.ids.size() && r.trained[i]) {
      run.push_back(r.ids[i]);
    } else if (!run.empty()) {
      out.push_back(tok.decode(run));
      run.clear();
    }
  }
  return out;
}

// Training conversations with tools, tool calls (MiniMind's {"name", "arguments"} with arguments a JSON
// string too), tool results and reasoning_content render as apply_chat_template(tools=...,
// add_generation_prompt=False) does: text and ids, for MiniMind's, Qwen2.5's and Qwen3's templates.
// The mask trains each assistant reply (its calls included) and none of the tools, the user's or the
// tools' messages.
TEST(HfChatTemplate, SftToolConversationsRenderAsTransformers) {
  const auto doc = golden();
  const auto tok = load_tokenizer(fixture(doc.at("tokenizer").get<std::string>()));
  size_t cases = 0;
  for (const auto& t : doc.at("templates")) {
    if (!t.contains("sft_tool_cases")) continue;
    const std::string name = t.at("name").get<std::string>();
    const HfChatTemplate hf(name, t.at("template").get<std::string>(), special_of(t.at("special_tokens")), *tok);
    for (const auto& c : t.at("sft_tool_cases")) {
      const auto messages = tool_messages_of(c.at("messages"));
      const std::string tools = c.at("tools").dump();
      EXPECT_EQ(hf.render_text(messages, false, tools), c.at("text").get<std::string>()) << name << " " << c.at("messages").dump();
      ++cases;
      if (name == "qwen3" && messages.size() == 9) {
        // Qwen3 renders a turn's reasoning only after the last user query: the conversation before
        // message 4 shows message 2's thinking, the whole one does not, so its replies cannot be found
        EXPECT_EQ(tok->encode(c.at("text").get<std::string>()), c.at("ids").get<std::vector<TokenId>>());
        EXPECT_THROW_WITH(hf.render(messages, tools), "qwen3: message 4", "does not begin with the conversation before it");
        continue;
      }
      const RenderedChat r = hf.render(messages, tools);
      EXPECT_EQ(r.ids, c.at("ids").get<std::vector<TokenId>>()) << name << " " << c.at("messages").dump();
      const auto runs = trained_runs(*tok, r);
      size_t replies = 0;
      for (const auto& m : c.at("messages")) replies += m.at("role") == "assistant";
      ASSERT_EQ(runs.size(), replies) << name;
      for (size_t k = 0, run = 0; k < messages.size(); ++k) {
        if (messages[k].role != "assistant") continue;
        const std::string& trained = runs[run++];
        // the reply's text and calls are trained on, through its end token; nothing of another message
        const std::string reply = messages[k].content.substr(messages[k].content.rfind('\n') + 1);
        EXPECT_NE(trained.find(reply + (messages[k].tool_calls.empty() ? "<|im_end|>" : "")), std::string::npos)
            << name << " " << k << ": " << trained;
        EXPECT_EQ(trained.find("<tool_call>") != std::string::npos, !messages[k].tool_calls.empty()) << name << " " << trained;
        for (const char* other : {"<tool_response>", "<tools>", "<|im_start|>", "Paris, then", "Thanks"})
          EXPECT_EQ(trained.find(other), std::string::npos) << name << " " << k << ": " << trained;
      }
    }
  }
  EXPECT_EQ(cases, 10u);
}

// MiniMind's template is masked as MiniMind's trainer masks it: the mask equals generate_labels
// computed over the same ids, on a multi-turn conversation with tools, calls, results and thinking.
TEST(HfChatTemplate, MiniMindMaskIsMiniMindsGenerateLabels) {
  const auto doc = golden();
  const auto tok = load_tokenizer(fixture("hf_gpt2.json"));
  const auto& minimind = doc.at("templates").at(0);
  ASSERT_EQ(minimind.at("name"), "minimind");
  const HfChatTemplate hf("minimind", minimind.at("template").get<std::string>(), special_of(minimind.at("special_tokens")), *tok);
  size_t checked = 0;
  for (const auto& c : minimind.at("sft_tool_cases")) {
    const RenderedChat r = hf.render(tool_messages_of(c.at("messages")), c.at("tools").dump());
    ASSERT_EQ(r.ids, c.at("ids").get<std::vector<TokenId>>());
    EXPECT_EQ(r.trained, minimind_generate_labels(*tok, r.ids)) << c.at("messages").dump();
    checked += std::count(r.trained.begin(), r.trained.end(), 1) > 0;
  }
  EXPECT_EQ(checked, 4u);
  // the longest one, by hand: every reply from its <think> block through <|im_end|> and the newline
  const auto& c = minimind.at("sft_tool_cases").at(2);
  const auto runs = trained_runs(*tok, hf.render(tool_messages_of(c.at("messages")), c.at("tools").dump()));
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0], "<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                     "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call><|im_end|>\n");
  EXPECT_EQ(runs[1], "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n");
  EXPECT_EQ(runs[3], "<think>\nshort\n</think>\n\nBye.<|im_end|>\n");
}

// The trained tokens: for MiniMind's template MiniMind's generate_labels; for the others, each
// assistant reply after its generation prompt through its end token.
TEST(HfChatTemplate, MaskTrainsTheAssistantRepliesAndTheirEndToken) {
  const auto doc = golden();
  const auto tok = load_tokenizer(fixture("hf_gpt2.json"));
  const std::vector<ChatMessage> conversation{{"system", "Be brief."}, {"user", "q1"}, {"assistant", "a1 first"},
                                              {"user", "q2"}, {"assistant", "<think>\nr\n</think>\n\na2"}};
  for (const auto& t : doc.at("templates")) {
    if (!t.at("cases").at(0).contains("ids")) continue;
    const std::string name = t.at("name").get<std::string>();
    const HfChatTemplate hf(name, t.at("template").get<std::string>(), special_of(t.at("special_tokens")), *tok);
    EXPECT_EQ(hf.end_token(), *tok->token_id("<|im_end|>")) << name;
    const RenderedChat r = hf.render(conversation);
    ASSERT_EQ(r.trained.size(), r.ids.size());
    std::vector<TokenId> trained;
    for (size_t i = 0; i < r.ids.size(); ++i)
      if (r.trained[i]) trained.push_back(r.ids[i]);
    std::string expected;
    const std::string text = hf.render_text(conversation, false);
    const bool minimind_rule = name == "minimind";
    for (size_t i : {size_t{2}, size_t{4}}) {
      const std::string before = hf.render_text(std::span(conversation).first(i), true);
      size_t begin = 0;
      if (minimind_rule) {  // after the reply's "<|im_start|>assistant\n", through "<|im_end|>\n"
        begin = hf.render_text(std::span(conversation).first(i), false).size() + 22;
      } else {  // what the template renders after each reply's generation prompt, up to its end token
        while (begin < before.size() && before[begin] == text[begin]) ++begin;
      }
      const size_t end = text.find("<|im_end|>", begin) + 10 + minimind_rule;
      expected += text.substr(begin, end - begin);
    }
    EXPECT_EQ(tok->decode(trained), expected) << name;
    EXPECT_NE(expected.find("a1 first<|im_end|>"), std::string::npos) << name;
    EXPECT_EQ(expected.find("q2"), std::string::npos) << name;
    if (minimind_rule) {
      EXPECT_EQ(r.trained, minimind_generate_labels(*tok, r.ids)) << name;
    }
  }
}

// Tools and tool calls are refused, in one line naming the template, by a template that cannot render
// them; a Jinja template refuses tools or tool_calls that are not JSON.
TEST(HfChatTemplate, ToolsTheTemplateCannotRenderAreOneLine) {
  const auto tok = load_tokenizer(fixture("hf_gpt2.json"));
  const auto chatml = make_chat_template("chatml", *tok);
  const std::vector<ChatMessage> plain{{"user", "q"}, {"assistant", "a"}};
  const std::string tools = R"([{"type": "function", "function": {"name": "now"}}])";
  EXPECT_THROW_WITH(chatml->render(plain, tools), "the chat template 'chatml' cannot render tools");
  EXPECT_THROW_WITH(chatml->render_for_completion(plain, tools), "the chat template 'chatml' cannot render tools");
  std::vector<ChatMessage> calls = plain;
  calls[1].tool_calls = R"([{"name": "now", "arguments": {}}])";
  EXPECT_THROW_WITH(chatml->render(calls), "message 1: the chat template 'chatml' cannot render tool calls");
  std::vector<ChatMessage> thinking = plain;
  thinking[1].reasoning_content = "hm";
  EXPECT_THROW_WITH(chatml->render(thinking), "message 1: the chat template 'chatml' cannot render reasoning_content");
  thinking[1].reasoning_content = "";  // renders as without
  EXPECT_EQ(chatml->render(thinking).ids, chatml->render(plain).ids);
  const auto doc = golden();
  const auto& minimind = doc.at("templates").at(0);
  const HfChatTemplate hf("minimind", minimind.at("template").get<std::string>(), special_of(minimind.at("special_tokens")), *tok);
  EXPECT_THROW_WITH(hf.render(plain, "[{"), "tools is not valid JSON");
  EXPECT_THROW_WITH(hf.render(plain, R"({"type": "function"})"), "tools is not a JSON array");
  calls[1].tool_calls = "[{";
  EXPECT_THROW_WITH(hf.render(calls), "message 1: tool_calls is not valid JSON");
}

TEST(HfChatTemplate, AFolderWithAChatTemplateUsesIt) {
  const auto dir = std::filesystem::path(testing::temp_path("hf_chat_folder"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture("hf_gpt2.json"), dir / "tokenizer.json");
  const auto doc = golden();
  const auto& minimind = doc.at("templates").at(0);
  ASSERT_EQ(minimind.at("name"), "minimind");
  nlohmann::ordered_json config = minimind.at("special_tokens");
  config["chat_template"] = minimind.at("template");
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  const auto tok = load_tokenizer((dir / "tokenizer.json").string());
  const std::string chosen = default_chat_template(*tok, (dir / "tokenizer.json").string());
  EXPECT_EQ(chosen, (dir / "tokenizer_config.json").string());
  const auto tmpl = make_chat_template(chosen, *tok);
  const auto& c = minimind.at("cases").at(3);  // [user, assistant] with the generation prompt
  ASSERT_TRUE(c.at("add_generation_prompt").get<bool>());
  EXPECT_EQ(tmpl->render_for_completion(messages_of(c.at("messages"))), c.at("ids").get<std::vector<TokenId>>());
  // --chat-template FILE: a tokenizer_config.json by its content (a chat_template key), whatever its name
  std::ofstream(dir / "qwen_template.json") << config.dump();
  EXPECT_EQ(make_chat_template((dir / "qwen_template.json").string(), *tok)->render_for_completion(messages_of(c.at("messages"))),
            c.at("ids").get<std::vector<TokenId>>());
  // chat_template.jinja beside it wins, as in transformers
  std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}[{{ m.content }}]<|im_end|>{% endfor %}";
  EXPECT_EQ(tok->decode(make_chat_template(chosen, *tok)->render_for_completion(std::vector<ChatMessage>{{"user", "x"}})), "[x]<|im_end|>");
  // without a chat template, the special tokens decide as before
  std::filesystem::remove(dir / "chat_template.jinja");
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|im_end|>", "chat_template": null})";
  EXPECT_EQ(default_chat_template(*tok, (dir / "tokenizer.json").string()), "chatml");
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": )";
  EXPECT_THROW_WITH(default_chat_template(*tok, (dir / "tokenizer.json").string()), "tokenizer_config.json", "not valid JSON");
  std::filesystem::remove_all(dir);
}

// A GGUF file's tokenizer.chat_template goes the folder's way: the same text, ids, mask and end
// token as the tokenizer_config.json it was written from (Qwen2.5's template); a construct outside
// the subset is refused naming the file, as a folder's is.
TEST(HfChatTemplate, AGGUFWithAChatTemplateRendersAsTheFolderItCameFrom) {
  const auto dir = std::filesystem::path(testing::temp_path("hf_chat_gguf"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // the fixture's added tokens without the options GGUF cannot spell (none of them is in the cases)
  auto tokenizer_json = nlohmann::ordered_json::parse(read_file(fixture("hf_gpt2.json")));
  for (auto& added : tokenizer_json.at("added_tokens")) added["lstrip"] = added["rstrip"] = added["single_word"] = false;
  std::ofstream(dir / "tokenizer.json") << tokenizer_json.dump();
  const auto doc = golden();
  const auto& qwen = doc.at("templates").at(1);
  ASSERT_EQ(qwen.at("name"), "qwen2.5");
  auto write_folder = [&](const std::string& source) {
    nlohmann::ordered_json config = qwen.at("special_tokens");
    config["chat_template"] = source;
    std::ofstream(dir / "tokenizer_config.json") << config.dump();
  };
  const std::string folder_tokenizer = (dir / "tokenizer.json").string(), gguf = (dir / "model.gguf").string();
  const auto folder_tok = load_tokenizer(folder_tokenizer);
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(folder_tok.get());
  ASSERT_NE(bpe, nullptr);
  auto write_gguf = [&](const std::string& source) {
    io::write_gguf(gguf, gguf_tokenizer_metadata(*bpe, bpe->vocab_size(), folder_tokenizer, source), {});
  };
  write_folder(qwen.at("template").get<std::string>());
  write_gguf(HfChatTemplate::read_source(hf_chat_template_file(folder_tokenizer)).text);
  const auto gguf_tok = load_tokenizer(gguf);
  EXPECT_EQ(default_chat_template(*gguf_tok, gguf), gguf);
  const auto from_folder = make_chat_template(default_chat_template(*folder_tok, folder_tokenizer), *folder_tok);
  const auto from_gguf = make_chat_template(default_chat_template(*gguf_tok, gguf), *gguf_tok);
  EXPECT_EQ(from_gguf->name(), gguf + " (tokenizer.chat_template)");
  EXPECT_EQ(from_gguf->end_token(), from_folder->end_token());
  const auto& folder_hf = dynamic_cast<const HfChatTemplate&>(*from_folder);
  const auto& gguf_hf = dynamic_cast<const HfChatTemplate&>(*from_gguf);
  for (const auto& c : qwen.at("cases")) {
    const auto messages = messages_of(c.at("messages"));
    const bool gen = c.at("add_generation_prompt").get<bool>();
    EXPECT_EQ(gguf_hf.render_text(messages, gen), c.at("text").get<std::string>()) << c.at("messages").dump();
    EXPECT_EQ(gguf_hf.render_text(messages, gen), folder_hf.render_text(messages, gen));
    if (gen) {
      EXPECT_EQ(from_gguf->render_for_completion(messages), from_folder->render_for_completion(messages));
    } else {
      EXPECT_EQ(from_gguf->render(messages).ids, from_folder->render(messages).ids);
      EXPECT_EQ(from_gguf->render(messages).trained, from_folder->render(messages).trained);
    }
  }
  // outside the subset: both routes refuse, naming their file and the construct
  const std::string macro = "{% macro turn(m) %}{{ m.content }}{% endmacro %}{% for m in messages %}{{ turn(m) }}{% endfor %}";
  write_folder(macro);
  write_gguf(macro);
  EXPECT_THROW_WITH(make_chat_template(default_chat_template(*folder_tok, folder_tokenizer), *folder_tok),
                    (dir / "tokenizer_config.json").string() + ": chat template line 1 col 4: unsupported construct: {% macro %}");
  EXPECT_THROW_WITH(make_chat_template(default_chat_template(*gguf_tok, gguf), *gguf_tok),
                    gguf + " (tokenizer.chat_template): chat template line 1 col 4: unsupported construct: {% macro %}");
  // without the key, the special tokens decide as before
  io::write_gguf(gguf, gguf_tokenizer_metadata(*bpe, bpe->vocab_size(), folder_tokenizer), {});
  EXPECT_FALSE(io::GGUFFile::open(gguf).get_string("tokenizer.chat_template").empty());  // ChatML's, for ChatML tokens
  std::vector<std::pair<std::string, io::GGUFValue>> keys;
  const io::GGUFFile with_chatml = io::GGUFFile::open(gguf);
  for (const std::string& key : with_chatml.keys())
    if (key != "tokenizer.chat_template") keys.emplace_back(key, with_chatml.get(key));
  io::write_gguf(gguf, keys, {});
  EXPECT_EQ(default_chat_template(*gguf_tok, gguf), "chatml");
  std::filesystem::remove_all(dir);
}

TEST(HfChatTemplate, ConstructsOutsideTheSubsetAreOneLineErrorsWithTheirPlace) {
  EXPECT_THROW_WITH(render("ab\n{% macro f() %}x{% endmacro %}"), "chat template line 2 col 4",
                    "unsupported construct: {% macro %}");
  EXPECT_THROW_WITH(render("{{ 'x' | wordwrap }}"), "line 1 col 10", "unsupported construct: the filter 'wordwrap'");
  EXPECT_THROW_WITH(render("{{ 'x'.format(1) }}"), "unsupported construct: the method str.format()");
  EXPECT_THROW_WITH(render("{% if x is callable_thing %}{% endif %}"), "unsupported construct: the test 'callable_thing'");
  EXPECT_THROW_WITH(render("{% include 'other.j2' %}"), "unsupported construct: {% include %}");
  EXPECT_THROW_WITH(render("{{ '%s' % 1 }}"), "unsupported construct: '%' string formatting");
  EXPECT_THROW_WITH(render("{% if true %}x"), "a block is not closed: expected {% elif %} or {% else %} or {% endif %}");
  EXPECT_THROW_WITH(render("{{ 1 + }}"), "line 1 col 8", "expected an expression but found '}}'");
  EXPECT_THROW_WITH(render("{{ x.y }}"), "'x' is undefined");
  // found by fuzz_chat_template: an attribute index past int64 escaped as std::out_of_range
  EXPECT_THROW_WITH(render("{{ ns.88888888888888888888 }}"), "line 1 col 7", "the number 88888888888888888888 is out of range");
  EXPECT_THROW_WITH(render("{{ 99999999999999999999 }}"), "is out of range");
  EXPECT_THROW_WITH(render("{{ 1e999 }}"), "the number 1e999 is out of range");
  EXPECT_THROW_WITH(render("{{ raise_exception('Conversation roles must alternate') }}"),
                    "raise_exception: Conversation roles must alternate");
  try {
    render("{% for a in [1] %}\n  {{ a | nope }}\n{% endfor %}");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// Filters iterate over undefined as over nothing (the list they build must outlive the loop: the
// fuzzer found a read of a freed list here, fuzz/corpus/chat_template/crash-undefined-map-*).
TEST(HfChatTemplate, FiltersIterateUndefinedAsEmpty) {
  EXPECT_EQ(render("{{ nothing | map(attribute='role') | join(', ') }}|{{ nothing | select | list }}|"
                   "{{ nothing | selectattr('a') | list }}|{{ nothing | unique | list }}|{{ nothing | map('upper') | list }}|"
                   "{{ 'ab' | map('upper') | join }}|{{ {'k': 1} | list }}"),
            "|[]|[]|[]|[]|AB|['k']");
}

// Arithmetic on a real beyond int64's range stays a real, as Python's: an infinity prints as inf.
// (A fuzz finding: the binary operators took every operand's integer value first, an undefined
// conversion for inf that UBSan, make test-asan, reports.)
TEST(HfChatTemplate, RealsBeyondTheIntegersStayReals) {
  EXPECT_EQ(render("{{ 1e308 * 10 + 1 }}|{{ -1e308 * 10 - 1 }}"), "inf|-inf");
}

TEST(HfChatTemplate, RunawayTemplatesStopAtTheLimits) {
  EXPECT_THROW_WITH(render("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}"),
                    "rendering took more than 1000000 steps");
  // the output limits, at 1 MiB to keep the test quick (the default is 64 MiB)
  const jinja::Limits small{.max_output = 1u << 20};
  auto render_small = [&](std::string_view source) { return jinja::Template(source, small).render(jinja::Value::dict({})); };
  EXPECT_THROW_WITH(render_small("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"),
                    "would pass the limit of 1048576");
  EXPECT_THROW_WITH(render("{% for i in range(40000000) %}{% endfor %}"), "passes the limit of 1000000");
  EXPECT_THROW_WITH(render("{{ 'x' * 100000000 }}"), "would pass the limit of 16777216");
  // lists count items, not bytes: doubling a list, or looping over a long string's characters
  EXPECT_THROW_WITH(render("{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"),
                    "a list of 1048576 items would pass the limit of 1000000");
  EXPECT_THROW_WITH(render("{% for c in 'ab' * 600000 %}{% endfor %}"), "a list of 1200000 items");
  EXPECT_THROW_WITH(render("{{ ('ab' * 600000) | list | length }}"), "a list of 1200000 items");
  // ** takes log2(exponent) steps: 1 ** (a huge exponent) is quick, 3 ** 41 overflows
  EXPECT_EQ(render("{{ 1 ** 9000000000000000000 }} {{ (-1) ** 9000000000000000001 }} {{ 3 ** 39 }} {{ 0 ** 0 }}"),
            "1 -1 4052555153018976267 1");
  EXPECT_THROW_WITH(render("{{ 3 ** 41 }}"), "integer overflow in **");
  EXPECT_THROW_WITH(render_small("{% for i in range(70) %}{{ 'x' * 100000 }}{% endfor %}"), "the output passes the limit of 1048576");
  EXPECT_THROW_WITH(render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), "nests deeper than 200");
  // 100,000 levels of each kind of nesting: refused by the parser's depth, never by the stack
  constexpr size_t kDeep = 100'000;
  EXPECT_THROW_WITH(render("{{ " + std::string(kDeep, '(') + "1" + std::string(kDeep, ')') + " }}"), "nests deeper than 200");
  EXPECT_THROW_WITH(render("{{ " + std::string(kDeep, '[') + "1" + std::string(kDeep, ']') + " }}"), "nests deeper than 200");
  EXPECT_THROW_WITH(render("{{ " + std::string(kDeep, '-') + "1 }}"), "nests deeper than 200");
  std::string blocks;
  for (size_t i = 0; i < kDeep; ++i) blocks += "{% if true %}";
  for (size_t i = 0; i < kDeep; ++i) blocks += "{% endif %}";
  EXPECT_THROW_WITH(render(blocks), "nests deeper than 200");
  EXPECT_THROW_WITH(render(std::string(3000, '{') + std::string(3000, '%')), "chat template");
  EXPECT_THROW_WITH(render("{% set ns = namespace(x=1) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}{% endfor %}"),
                    "lists and dicts nest deeper than 200");
  // a namespace holding itself is freed when rendering ends (the leak checker of `make fuzz` sees it)
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"), "True");
}

TEST(HfChatTemplate, TemplatesWithoutAnEndTokenOrPrefixAreRefused) {
  const auto tok = load_tokenizer(fixture("hf_gpt2.json"));
  EXPECT_THROW_WITH(HfChatTemplate("plain", "{% for m in messages %}{{ m.content }}\n{% endfor %}", {}, *tok),
                    "plain: no special token ends the assistant's turn");
  // earlier turns that change when a later one is added cannot be masked
  const HfChatTemplate changing("changing",
                                "{% for m in messages %}{{ m.content }}{% if not loop.last %}!{% endif %}<|im_end|>{% endfor %}"
                                "{% if add_generation_prompt %}<|im_start|>{% endif %}",
                                {}, *tok);
  const std::vector<ChatMessage> exchange{{"user", "u"}, {"assistant", "a"}};
  EXPECT_THROW_WITH(changing.render(exchange), "changing: message 1",
                    "does not begin with the conversation before it");
}

}  // namespace
}  // namespace nf::tokenizer
