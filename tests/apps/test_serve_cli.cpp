// `nanoformer serve` end to end (tests/apps/serve_cli_support.h: the binary started on a free
// loopback port with a tiny chat model, called over HTTP): a streamed answer equals the non-streamed
// greedy one (chat and text completions); structured output; a GGUF tokenizer with add_bos_token puts
// its bos before a completion prompt; the folder's Jinja template; max_tokens and stop strings cut the
// answer where they should; a padded vocabulary; q8_0 and q4_0 KV caches answer as the f32 one does;
// prompt lookup; the API key; logprobs; /metrics; /v1/models.
#include "serve_cli_support.h"

namespace nf {
namespace {

TEST_F(ServeCliTest, StreamedAnswersEqualTheNonStreamedOnes) {
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  const json models = json::parse(client.Get("/v1/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["context_length"], 256);
  EXPECT_EQ(json::parse(client.Get("/health")->body)["status"], "ok");

  const json whole = post(client, "/v1/chat/completions", chat("Hello"), 200);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["model"], "tiny");
  const std::string answer = whole["choices"][0]["message"]["content"];
  EXPECT_EQ(answer.size(), 16u);  // ASCII only: a byte per token, and no end token
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 16);
  EXPECT_GT(whole["usage"]["prompt_tokens"].get<int>(), 5);
  EXPECT_EQ(whole["usage"]["total_tokens"], whole["usage"]["prompt_tokens"].get<int>() + 16);

  const Streamed s = stream(client, "/v1/chat/completions", chat("Hello", {{"stream_options", {{"include_usage", true}}}}));
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.text, answer);
  EXPECT_TRUE(s.done);
  ASSERT_GE(s.chunks.size(), 3u);
  EXPECT_EQ(s.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(s.chunks[s.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.chunks.back()["usage"], whole["usage"]);

  const json text_body = {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 12}};
  const json text = post(client, "/v1/completions", text_body, 200);
  EXPECT_EQ(text["object"], "text_completion");
  const Streamed ts = stream(client, "/v1/completions", text_body);
  EXPECT_EQ(ts.text, text["choices"][0]["text"]);
  EXPECT_EQ(ts.text.size(), 12u);
  EXPECT_TRUE(ts.done);
}

// response_format json_schema and the grammar field, over HTTP: chat and text, plain and streamed,
// seeded sampling; every answer is a sentence of the grammar and ends with finish_reason stop.
TEST_F(ServeCliTest, StructuredOutputFollowsTheSchemaAndTheGrammar) {
  ServerProcess server = serve("--context 512");
  httplib::Client client = server.client();
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}}}, {"ok", {{"type", "boolean"}}},
                                       {"tag", {{"enum", {"a", "b"}}}}}},
                       {"required", {"n", "ok", "tag"}},
                       {"additionalProperties", false}};
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}, {"strict", true}}}};
  for (int seed = 0; seed < 4; ++seed) {
    const json sampling = {{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 300}, {"response_format", format}};
    const json whole = post(client, "/v1/chat/completions", chat("Hi", sampling), 200);
    json text_body = sampling;
    text_body["prompt"] = "JSON:";
    const Streamed streamed = stream(client, "/v1/completions", text_body);
    for (const auto& [answer, finish] : {std::pair{whole["choices"][0]["message"]["content"].get<std::string>(),
                                                   whole["choices"][0]["finish_reason"]},
                                         std::pair{streamed.text, streamed.chunks.back()["choices"][0]["finish_reason"]}}) {
      const json parsed = json::parse(answer, nullptr, false);
      ASSERT_TRUE(parsed.is_object()) << answer;
      EXPECT_TRUE(parsed["n"].is_number_integer() && parsed["ok"].is_boolean() && (parsed["tag"] == "a" || parsed["tag"] == "b") &&
                  parsed.size() == 3)
          << answer;
      EXPECT_EQ(finish, "stop") << answer;
    }
  }
  const json grammar = {{"prompt", "Well?"}, {"grammar", "root ::= \"yes\" | \"no\" | \"maybe \" [0-9]{1,2}"},
                        {"temperature", 1.0}, {"seed", 5}};
  const std::string text = post(client, "/v1/completions", grammar, 200)["choices"][0]["text"];
  EXPECT_TRUE(text == "yes" || text == "no" || (text.rfind("maybe ", 0) == 0 && text.size() >= 7 && text.size() <= 8)) << text;
  EXPECT_EQ(stream(client, "/v1/completions", grammar).text, text);
  expect_error(post(client, "/v1/chat/completions", chat("Hi", {{"grammar", "root ::= x"}}), 400),
               "the rule 'x' is used but never defined", "grammar");
}

TEST_F(ServeCliTest, ACompletionPromptStartsWithBosWhenTheGGUFTokenizerSaysTo) {
  const auto tok = tokenizer::load_tokenizer_json(path("model/tokenizer.json"));
  auto metadata = tokenizer::gguf_tokenizer_metadata(tok, tok.vocab_size(), "tokenizer.json");
  for (auto& [key, value] : metadata)
    if (key == "tokenizer.ggml.add_bos_token") value = true;
  io::write_gguf(path("bos.gguf"), metadata, {});
  ServerProcess server = serve("--context 256 --tokenizer " + path("bos.gguf"));
  httplib::Client client = server.client();
  const json body = {{"prompt", "Hello"}, {"max_tokens", 1}, {"temperature", 0}};
  EXPECT_EQ(post(client, "/v1/completions", body, 200)["usage"]["prompt_tokens"].get<size_t>(),
            tok.encode("Hello").size() + 1);
}

// A folder whose tokenizer_config.json has a Jinja chat_template serves chats in it (SmolLM2's,
// whose default system message makes the prompt longer than ChatML's).
TEST_F(ServeCliTest, AChatIsRenderedByTheFoldersJinjaTemplate) {
  const json smol = use_golden_template("smollm2");
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  const auto tok = tokenizer::load_tokenizer(path("model/tokenizer.json"));
  const tokenizer::HfChatTemplate smol_template("smollm2", smol.at("template").get<std::string>(), {}, *tok);
  const size_t prompt = smol_template.render_for_completion(std::vector<tokenizer::ChatMessage>{{"user", "Hello"}}).size();
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hello"), 200)["usage"]["prompt_tokens"].get<size_t>(), prompt);
}

TEST_F(ServeCliTest, MaxTokensAndStopStringsCutTheAnswer) {
  ServerProcess server = serve("");
  httplib::Client client = server.client();
  const std::string full = post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 24}}), 200)["choices"][0]["message"]["content"];
  ASSERT_EQ(full.size(), 24u);
  const json short_answer = post(client, "/v1/chat/completions", chat("Hi", {{"max_tokens", 5}}), 200);
  EXPECT_EQ(short_answer["choices"][0]["message"]["content"], full.substr(0, 5));
  EXPECT_EQ(short_answer["usage"]["completion_tokens"], 5);
  // a stop string from the middle of the answer: the answer ends before it, finish_reason stop
  const std::string stop = full.substr(10, 3);
  const size_t at = full.find(stop);
  for (const bool streamed : {false, true}) {
    const json body = chat("Hi", {{"max_tokens", 24}, {"stop", json::array({"\x01\x02 never", stop})}});
    std::string text, reason;
    if (streamed) {
      const Streamed s = stream(client, "/v1/chat/completions", body);
      text = s.text;
      reason = s.chunks[s.chunks.size() - 1]["choices"][0]["finish_reason"];
    } else {
      const json r = post(client, "/v1/chat/completions", body, 200);
      text = r["choices"][0]["message"]["content"];
      reason = r["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, full.substr(0, at)) << "streamed " << streamed;
    EXPECT_EQ(reason, "stop") << "streamed " << streamed;
  }
}

// A model whose vocabulary (320) is padded beyond its tokenizer's (259), the padded ids' logits the
// largest: sampled and greedy answers never draw a padded id, so the server answers 200, not 500.
TEST_F(ServeCliTest, APaddedVocabularyIsNeverSampledBeyondTheTokenizer) {
  testing::save_tiny_chat_model(path("padded"), /*ascii_only=*/false, /*max_seq_len=*/256, /*padded_vocab=*/320);
  ServerProcess server(path("padded.log"), {"--model", path("padded/model.safetensors")});
  httplib::Client client = server.client();
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 1.0}, {"seed", 7}},
                               json{{"temperature", 1.5}, {"top_k", 400}, {"seed", 8}}}) {
    json text_body = {{"prompt", "Once upon"}, {"max_tokens", 48}};
    text_body.update(sampling);
    const json text = post(client, "/v1/completions", text_body, 200);
    EXPECT_GT(text["usage"]["completion_tokens"].get<int>(), 0) << text;
    EXPECT_TRUE(stream(client, "/v1/completions", text_body).done) << sampling;
    const json answer = post(client, "/v1/chat/completions", chat("Hello", sampling), 200);
    EXPECT_TRUE(answer["choices"][0]["message"].contains("content")) << answer;
  }
}

// --cache-type q8_0 and q4_0 (a model of head_dim 32: one block per row) answer a greedy request
// with what the f32 cache answers; a bad cache type is one line before the model loads.
TEST_F(ServeCliTest, Q8_0AndQ4_0CachesAnswerAsTheF32CacheDoes) {
  testing::save_tiny_chat_model(path("wide"), /*ascii_only=*/true, /*max_seq_len=*/256, 0, /*head_dim=*/32);
  std::vector<json> answers;
  for (const std::string type : {"f32", "q8_0", "q4_0"}) {
    ServerProcess server(path(type + ".log"), {"--model", path("wide/model.safetensors"), "--cache-type", type});
    httplib::Client client = server.client();
    answers.push_back(post(client, "/v1/chat/completions", chat("Hello there", {{"max_tokens", 24}}), 200));
    EXPECT_NE(testing::read_text(path(type + ".log")).find("KV cache " + type), std::string::npos) << type;
  }
  EXPECT_EQ(answers[1]["choices"][0]["message"]["content"], answers[0]["choices"][0]["message"]["content"]);
  EXPECT_EQ(answers[2]["choices"][0]["message"]["content"], answers[0]["choices"][0]["message"]["content"]);
  const auto bad = cli("serve --model '" + path("none/model.safetensors") + "' --cache-type q4 --port 0");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--cache-type: 'q4' is not a KV cache type"), std::string::npos) << bad.err;
}

// llama-server's per-request speculative fields turn prompt lookup on: the same answers (greedy,
// and sampled with a seed), the drafts counted in /metrics.
TEST_F(ServeCliTest, PromptLookupAnswersAsPlainDecodingDoes) {
  testing::save_tiny_chat_model(path("m"), /*ascii_only=*/true, /*max_seq_len=*/256);
  ServerProcess server(path("serve.log"), {"--model", path("m/model.safetensors")});
  httplib::Client client = server.client();
  const json lookup = {{"speculative.ngram_size_n", 2}, {"speculative.n_max", 4}, {"max_tokens", 48}};
  for (const json& sampling : {json{{"temperature", 0}}, json{{"temperature", 0.8}, {"seed", 5}}}) {
    json plain_body = chat("Hello there, hello there, hello there", {{"max_tokens", 48}}), spec_body = plain_body;
    plain_body.update(sampling), spec_body.update(sampling), spec_body.update(lookup);
    const json plain = post(client, "/v1/chat/completions", plain_body, 200);
    const json spec = post(client, "/v1/chat/completions", spec_body, 200);
    EXPECT_EQ(spec["choices"][0]["message"]["content"], plain["choices"][0]["message"]["content"]) << sampling.dump();
    EXPECT_EQ(spec["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
  }
  const std::string metrics = client.Get("/metrics")->body;
  const auto at = metrics.find("\nnanoformer_draft_tokens_total ");
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::stod(metrics.substr(at + 31)), 0) << metrics.substr(at, 60);
}

TEST_F(ServeCliTest, TheApiKeyIsRequired) {
  ServerProcess server = serve("--api-key s3cret");
  httplib::Client client = server.client();
  expect_error(post(client, "/v1/chat/completions", chat("Hi"), 401), "API key");
  auto models = client.Get("/v1/models");
  EXPECT_EQ(models->status, 401);
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/health")->status, 200);  // open: health checks and the page
  EXPECT_EQ(client.Get("/")->status, 200);
  client.set_bearer_token_auth("wrong");
  EXPECT_EQ(client.Get("/v1/models")->status, 401);
  client.set_bearer_token_auth("s3cret");
  EXPECT_EQ(client.Get("/v1/models")->status, 200);
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi"), 200)["object"], "chat.completion");
  // the scheme is case-insensitive (RFC 7235); the key is not
  for (const auto& [header, status] : {std::pair{"bearer s3cret", 200}, std::pair{"BEARER  s3cret", 200},
                                       std::pair{"Basic s3cret", 401}, std::pair{"bearer S3CRET", 401},
                                       std::pair{"bearers3cret", 401}}) {
    httplib::Client plain = server.client();
    EXPECT_EQ(plain.Get("/v1/models", {{"Authorization", header}})->status, status) << header;
  }
}

// logprobs: one entry per token of the answer, whose tokens spell it (an end token and a stop
// string's tokens are not in it), each with its top_logprobs most likely first; greedy picks the
// first of them; streamed chunks carry the same entries as the whole answer.
TEST_F(ServeCliTest, LogprobsComeWithEachTokenOfTheAnswer) {
  ServerProcess server = serve("--context 256");
  httplib::Client client = server.client();
  EXPECT_TRUE(post(client, "/v1/chat/completions", chat("Hello"), 200)["choices"][0]["logprobs"].is_null());
  const json asked = chat("Hello", {{"logprobs", true}, {"top_logprobs", 3}});
  const json whole = post(client, "/v1/chat/completions", asked, 200);
  const std::string content = whole["choices"][0]["message"]["content"];
  const json entries = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(entries.size(), 16u) << whole;
  std::string spelled;
  for (const json& e : entries) {
    spelled += e["token"].get<std::string>();
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);  // greedy: the most likely
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(e["top_logprobs"][1]["logprob"].get<double>(), e["top_logprobs"][2]["logprob"].get<double>());
  }
  EXPECT_EQ(spelled, content);

  const Streamed s = stream(client, "/v1/chat/completions", asked);
  json streamed = json::array();
  for (const json& chunk : s.chunks)
    if (!chunk["choices"].empty() && chunk["choices"][0]["logprobs"].is_object())
      for (const json& e : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(e);
  EXPECT_EQ(streamed, entries);

  // a stop string from the middle: the entries spell the answer, which ends before it
  json cut_body = asked;
  cut_body["stop"] = content.substr(6, 3);
  const json cut = post(client, "/v1/chat/completions", cut_body, 200);
  std::string cut_spelled;
  for (const json& e : cut["choices"][0]["logprobs"]["content"]) cut_spelled += e["token"].get<std::string>();
  EXPECT_EQ(cut_spelled, cut["choices"][0]["message"]["content"]);
  EXPECT_EQ(cut_spelled, content.substr(0, content.find(content.substr(6, 3))));

  // text completions: the legacy columns
  const json text = post(client, "/v1/completions", {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 8}, {"logprobs", 2}}, 200);
  const json& columns = text["choices"][0]["logprobs"];
  ASSERT_EQ(columns["tokens"].size(), 8u) << text;
  std::string joined;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(columns["text_offset"][i], joined.size());
    joined += columns["tokens"][i].get<std::string>();
    EXPECT_EQ(columns["top_logprobs"][i][columns["tokens"][i].get<std::string>()], columns["token_logprobs"][i]);
  }
  EXPECT_EQ(joined, text["choices"][0]["text"]);
}

// GET /metrics in Prometheus's text format: every line a sample with its HELP and TYPE, requests
// counted by endpoint and status, tokens equal to the answers' usage, the time-to-first-token
// histogram's buckets cumulative and its count one per sequence, the queue and slots idle after.
TEST_F(ServeCliTest, MetricsCountRequestsTokensAndTheTimeToFirstToken) {
  ServerProcess server = serve("--context 256 --parallel 3");
  httplib::Client client = server.client();
  const json chat_answer = post(client, "/v1/chat/completions", chat("Hello"), 200);
  const Streamed text = stream(client, "/v1/completions",
                               {{"prompt", "Once upon"}, {"temperature", 0}, {"max_tokens", 7}, {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(client.Get("/v1/models/other")->status, 404);
  EXPECT_EQ(client.Get("/nowhere")->status, 404);

  // a request is counted once its answer is written, which the client may see first: wait for
  // every one of them (on a loaded machine the 404s were once not counted yet)
  const auto all_counted = [](const std::string& body) {
    for (const char* line : {"endpoint=\"/v1/completions\",code=\"200\"", "endpoint=\"/v1/models/{id}\",code=\"404\"",
                             "endpoint=\"other\",code=\"404\""})
      if (body.find(line) == std::string::npos) return false;
    return true;
  };
  httplib::Result res = client.Get("/metrics");
  for (int i = 0; i < 100 && res && !all_counted(res->body); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    res = client.Get("/metrics");
  }
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u) << res->get_header_value("Content-Type");
  std::map<std::string, double> sample;  // "name{labels}" -> value
  std::set<std::string> described, typed;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(# HELP ([a-z_]+) .+)"))) described.insert(m[1]);
    else if (std::regex_match(line, m, std::regex(R"(# TYPE ([a-z_]+) (counter|gauge|histogram))"))) typed.insert(m[1]);
    else if (std::regex_match(line, m, std::regex(R"(([a-z_]+)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+))"))) {
      const std::string name = m[1];
      const std::string family = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
      EXPECT_TRUE(typed.count(name) || typed.count(family)) << "no TYPE before " << line;
      sample[name + m[2].str()] = std::stod(m[3]);
    } else {
      ADD_FAILURE() << "not a line of the text format: '" << line << "'";
    }
  }
  EXPECT_EQ(described, typed);
  EXPECT_EQ(sample["nanoformer_info{model=\"tiny\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/chat/completions\",code=\"200\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/completions\",code=\"200\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"/v1/models/{id}\",code=\"404\"}"], 1);
  EXPECT_EQ(sample["nanoformer_requests_total{endpoint=\"other\",code=\"404\"}"], 1);
  const json& text_usage = text.chunks.back()["usage"];
  EXPECT_EQ(sample["nanoformer_prompt_tokens_total"],
            chat_answer["usage"]["prompt_tokens"].get<int>() + text_usage["prompt_tokens"].get<int>());
  EXPECT_EQ(sample["nanoformer_generated_tokens_total"], 16 + 7);
  EXPECT_EQ(text_usage["completion_tokens"], 7);
  EXPECT_EQ(sample["nanoformer_decoded_rows_total"], 16 + 7 - 2);  // the first token of each comes from its prefill
  EXPECT_GT(sample["nanoformer_decode_seconds_total"], 0);
  for (const char* drafts : {"nanoformer_draft_tokens_total", "nanoformer_draft_tokens_accepted_total"})
    EXPECT_EQ(sample.count(drafts), 1u) << drafts;  // 0: neither request asked for speculative decoding
  EXPECT_GT(sample["nanoformer_prefill_seconds_total"], 0);
  EXPECT_GT(sample["nanoformer_prefill_step_seconds_max"], 0);
  EXPECT_LE(sample["nanoformer_prefill_step_seconds_max"], sample["nanoformer_prefill_seconds_total"]);
  EXPECT_GT(sample["nanoformer_decode_tokens_per_second"], 0);
  EXPECT_EQ(sample["nanoformer_sequences_completed_total"], 2);
  EXPECT_EQ(sample["nanoformer_queue_depth"], 0);
  EXPECT_EQ(sample["nanoformer_slots_busy"], 0);
  EXPECT_EQ(sample["nanoformer_slots"], 3);
  EXPECT_GT(sample["nanoformer_tensor_bytes"], 0);  // the model's weights at least
  EXPECT_GE(sample["nanoformer_tensor_bytes_peak"], sample["nanoformer_tensor_bytes"]);
  EXPECT_EQ(sample["nanoformer_time_to_first_token_seconds_count"], 2);
  EXPECT_EQ(sample["nanoformer_time_to_first_token_seconds_bucket{le=\"+Inf\"}"], 2);
  EXPECT_GT(sample["nanoformer_time_to_first_token_seconds_sum"], 0);
  double previous = 0;
  for (const char* le : {"0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}) {
    const std::string key = std::string("nanoformer_time_to_first_token_seconds_bucket{le=\"") + le + "\"}";
    ASSERT_TRUE(sample.count(key)) << key << "\n" << res->body;
    EXPECT_GE(sample[key], previous) << key;
    previous = sample[key];
  }
}

// /v1/models/{id} answers the model served and 404 model_not_found for any other; a request naming
// another model is refused the same way (as OpenAI and vLLM do), one naming none is served.
TEST_F(ServeCliTest, OnlyTheModelServedIsFoundByItsName) {
  ServerProcess server = serve("");
  httplib::Client client = server.client();
  auto found = client.Get("/v1/models/tiny");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->status, 200) << found->body;
  EXPECT_EQ(json::parse(found->body)["id"], "tiny");
  EXPECT_EQ(json::parse(found->body)["object"], "model");
  auto missing = client.Get("/v1/models/gpt-4o");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << missing->body;
  expect_error(json::parse(missing->body), "the model 'gpt-4o' does not exist: this server serves 'tiny'", "model");
  EXPECT_EQ(json::parse(missing->body)["error"]["code"], "model_not_found");

  json refused = post(client, "/v1/chat/completions", chat("Hi", {{"model", "gpt-4o"}}), 404);
  expect_error(refused, "the model 'gpt-4o' does not exist", "model");
  EXPECT_EQ(refused["error"]["code"], "model_not_found");
  EXPECT_EQ(post(client, "/v1/completions", {{"prompt", "Hi"}, {"model", "other"}}, 404)["error"]["code"], "model_not_found");
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi", {{"model", "tiny"}}), 200)["model"], "tiny");
  EXPECT_EQ(post(client, "/v1/chat/completions", chat("Hi"), 200)["model"], "tiny");
}

}  // namespace
}  // namespace nf
