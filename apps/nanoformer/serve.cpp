// `nanoformer serve --model MODEL`: an OpenAI-compatible HTTP server (chat completions, completions,
// embeddings, models, health, metrics) with a web chat page at /, decoding concurrent requests
// together (continuous batching, serve/scheduler.h). An encoder model (BERT, a sentence-transformers
// folder) serves embeddings only. Binds loopback by default; Ctrl-C stops it.
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <future>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "command.h"
#include "generation_options.h"
#include "number_text.h"
#include "nanoformer/core/storage.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/formats/sentence_transformers.h"
#include "nanoformer/models/encoder_model.h"
#include "nanoformer/serve/api_error.h"
#include "nanoformer/serve/http_server.h"

namespace nf::cli {
namespace {

struct ServeArgs {
  GenerationFlags flags;  // the model, tokenizer and context (sampling comes with each request)
  std::string chat_template, name;
  serve::HttpOptions http;
  serve::SchedulerOptions scheduler;
  std::string reasoning_format = "auto";  // auto, deepseek or none (llama.cpp's names)
  std::string pooling;  // empty: the folder's sentence-transformers pooling, else mean (encoders) / last (decoders)
  std::string cache_budget = "1G";  // --cache-budget, as parse_byte_count reads it
};

// How /v1/embeddings pools: --pooling over the folder's sentence-transformers modules over the
// default; without a sentence-transformers folder the vectors are normalised.
models::SentenceEmbedding embedding_options(const ServeArgs& a, bool encoder) {
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(a.flags.model, ec);
  models::SentenceEmbedding o = (folder ? formats::read_sentence_transformers(a.flags.model) : std::nullopt)
                                    .value_or(models::SentenceEmbedding{
                                        .pooling = encoder ? models::Pooling::mean : models::Pooling::last,
                                        .normalize = true, .max_tokens = 0});
  if (!a.pooling.empty()) o.pooling = models::pooling_from_name(a.pooling);
  return o;
}

// An encoder model: /v1/embeddings only, each request run at once (one at a time).
void serve_embeddings(ServeArgs& a, const std::shared_ptr<models::Model>& model,
                      const std::function<void(serve::HttpServer&)>& run) {
  const std::string tokenizer_path = a.flags.tokenizer.empty() ? tokenizer_beside(a.flags.model) : a.flags.tokenizer;
  const std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer_path.empty() ? nullptr : tokenizer::load_tokenizer(tokenizer_path);
  const models::SentenceEmbedding options = embedding_options(a, /*encoder=*/true);
  std::mutex one_at_a_time;
  serve::EmbeddingService embeddings(
      *model,
      [&tok](std::string_view text) -> std::vector<int64_t> {
        if (!tok) throw serve::invalid_request("input", "this server has no tokenizer: send token ids");
        std::vector<tokenizer::TokenId> ids;
        tok->encode_with_special_tokens(text, ids);  // a BERT tokenizer's [CLS] ... [SEP], as sentence-transformers feeds it
        return {ids.begin(), ids.end()};
      },
      options, a.name, [&one_at_a_time](const std::function<void()>& job) {
        std::lock_guard lock(one_at_a_time);
        job();
      });
  serve::HttpServer http(nullptr, &embeddings, a.name, options.max_tokens ? options.max_tokens : model->max_context(), a.http);
  std::fprintf(stderr, "nanoformer serve: %s, an encoder: /v1/embeddings only (%s pooling%s, %s)\n", a.name.c_str(),
               models::pooling_name(options.pooling), options.normalize ? ", normalised" : "",
               tok ? ("tokenizer " + tokenizer_path).c_str() : "no tokenizer: token ids only");
  run(http);
}

void run_serve(ServeArgs& a) {
  // SIGINT / SIGTERM are taken by one thread (sigwait), so every other thread blocks them
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  a.scheduler.cache_type = nn::kv_cache_type_from_name(a.flags.cache_type);  // checked before the model loads
  a.scheduler.cache_budget = serve::parse_byte_count(a.cache_budget, "--cache-budget");
  if (!a.pooling.empty()) models::pooling_from_name(a.pooling);
  NF_CHECK(a.reasoning_format == "auto" || a.reasoning_format == "deepseek" || a.reasoning_format == "none",
           "--reasoning-format '", a.reasoning_format, "': auto, deepseek or none");
  if (a.name.empty()) a.name = std::filesystem::path(a.flags.model).filename().string();
  // Freed tensor blocks go back to the allocator at once (unless NANOFORMER_ALLOCATOR_CACHE_MB says
  // otherwise): steps of many streams free blocks of ever other sizes, which the storage cache kept
  // up to its peak. Issue 44's load test, 64 streams of minimind2-small Q4_0: peak RSS 449 -> 354 MiB,
  // 16 streams 169 -> 128, at the same tokens/s (docs/serving.md).
  if (std::getenv("NANOFORMER_ALLOCATOR_CACHE_MB") == nullptr) memory::set_cache_limit(0);
  // Loaded on a thread that then ends: OpenMP keeps a pool of threads per calling thread, and the
  // scheduler decodes on a thread of its own; with two pools on few cores libgomp throttles its
  // spinning and decoding took 1.45x the time (300 tokens of minimind2-small on 2 cores). A
  // thread's pool ends with it.
  const std::shared_ptr<models::Model> model =
      std::async(std::launch::async, [&] { return formats::load_model(a.flags.model); }).get();
  const auto run = [&](serve::HttpServer& http) {
    http.bind();
    std::thread stopper([&] {
      int signal = 0;
      sigwait(&signals, &signal);
      http.stop();
    });
    std::fprintf(stderr, "listening on http://%s:%d (Ctrl-C stops)\n", a.http.host.c_str(), http.port());
    http.serve();
    pthread_kill(stopper.native_handle(), SIGTERM);  // when the server ended on its own
    stopper.join();
    std::fprintf(stderr, "nanoformer serve: stopped\n");
  };
  if (std::dynamic_pointer_cast<models::EncoderModel>(model)) return serve_embeddings(a, model, run);
  LoadedModel loaded = load_model_and_tokenizer(a.flags, /*required=*/true, model);
  const tokenizer::Tokenizer& tok = *loaded.tokenizer;
  const std::string template_name =
      a.chat_template.empty() ? tokenizer::default_chat_template(tok, loaded.tokenizer_path) : a.chat_template;
  const auto chat_template = template_name.empty() ? nullptr : tokenizer::make_chat_template(template_name, tok);
  a.scheduler.context = a.flags.context;
  const int64_t context = a.flags.context > 0 ? a.flags.context : loaded.model->config().max_seq_len;
  const std::shared_ptr<models::DecoderLM> draft =  // on a thread that ends, as the model (above)
      std::async(std::launch::async, [&] { return load_draft_model(a.flags, *loaded.model, context); }).get();
  a.scheduler.draft = draft.get();
  serve::Scheduler scheduler(*loaded.model, a.scheduler);
  // auto: the tokenizer has <think> and </think> as tokens of their own, as reasoning models' have
  const bool split_reasoning = a.reasoning_format == "deepseek" ||
                               (a.reasoning_format == "auto" && tok.token_id("<think>") && tok.token_id("</think>"));
  // --tools / --tool-command: run by the server for every chat (off unless given)
  const std::shared_ptr<const infer::ToolUse> tools = infer::make_tool_use(a.flags.tools, tok, chat_template.get());
  serve::CompletionService service(scheduler, tok, chat_template.get(), a.name, loaded.prompt_bos, split_reasoning, tools);
  serve::EmbeddingService embeddings(
      *loaded.model,
      [&tok, &loaded](std::string_view text) {
        std::vector<int64_t> ids;
        if (loaded.prompt_bos) ids.push_back(*loaded.prompt_bos);
        for (const tokenizer::TokenId id : tok.encode(text)) ids.push_back(id);
        return ids;
      },
      embedding_options(a, /*encoder=*/false), a.name,
      [&scheduler](std::function<void()> job) { scheduler.run_between_steps(std::move(job)); });
  serve::HttpServer http(&service, &embeddings, a.name, scheduler.context(), a.http);
  std::fprintf(stderr,
               "nanoformer serve: %s (chat template %s, context %lld, KV cache %s, prefix cache %s, parallel %lld, "
               "queue %lld, connections %lld, timeout %g s; embeddings: %s pooling; reasoning %s)\n",
               a.name.c_str(), template_name.empty() ? "none: /v1/completions only" : template_name.c_str(),
               static_cast<long long>(scheduler.context()), quant_type_name(a.scheduler.cache_type),
               scheduler.stats().cache_budget > 0 ? byte_size(scheduler.stats().cache_budget).c_str() : "off",
               static_cast<long long>(a.scheduler.parallel),
               static_cast<long long>(a.scheduler.max_queue), static_cast<long long>(a.http.max_connections),
               a.http.timeout_s, models::pooling_name(embeddings.options().pooling),
               split_reasoning ? "<think> split into reasoning_content" : "left in the content");
  run(http);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve a language model over an OpenAI-compatible HTTP API, with a web chat page at /;\n"
      "an encoder (BERT, a sentence-transformers folder) serves /v1/embeddings only.\n"
      "  nanoformer serve -m minimind2-folder --port 8998\n"
      "  curl http://127.0.0.1:8998/v1/chat/completions -H 'Content-Type: application/json' \\\n"
      "       -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}'\n"
      "Concurrent requests are decoded together (--parallel); a full queue answers 503.");
  auto a = std::make_shared<ServeArgs>();
  cmd->add_option("--model,-m", a->flags.model, "Model: a checkpoint, a Hugging Face model folder, a llama2c .bin or a preset")
      ->required();
  cmd->add_option("--tokenizer,-t", a->flags.tokenizer,
                  "tokenizer.json or character vocabulary (default: tokenizer.json beside the model)");
  cmd->add_option("--context", a->flags.context, "Tokens per sequence (default: the model's max_seq_len)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--keep", a->scheduler.keep,
                  "Past the context, the tokens at a sequence's start that stay; the oldest half of the rest is dropped")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_cache_type_flag(*cmd, a->flags.cache_type);
  cmd->add_option("--draft,--model-draft", a->flags.draft,
                  "A draft model with the same vocabulary (any model file, GGUF included): it drafts for every request "
                  "not asking for prompt lookup (speculative.ngram_size_n), up to the request's speculative.n_max tokens "
                  "(default 3), each slot keeping its cache; the same tokens (greedy) or distribution (sampling), sooner");
  cmd->add_option("--chat-template", a->chat_template,
                  "chatml, nanochat, a template file, a tokenizer_config.json or a GGUF file (default: the chat_template of the tokenizer_config.json beside tokenizer.json, or of a GGUF tokenizer, else told by the tokenizer's special tokens)");
  cmd->add_option("--reasoning-format", a->reasoning_format,
                  "deepseek: a chat answer's <think> ... </think> becomes its reasoning_content; none: left in the "
                  "content; auto: deepseek when the tokenizer has <think> and </think> tokens")
      ->capture_default_str();
  cmd->add_option("--pooling", a->pooling,
                  "How /v1/embeddings pools the last hidden states: mean, cls, last or max (default: a "
                  "sentence-transformers folder's pooling, else mean for an encoder and last for a decoder)");
  add_tool_flags(*cmd, a->flags.tools);
  cmd->add_option("--name", a->name, "The model's name in responses and /v1/models (default: the model's file name)");
  cmd->add_option("--host", a->http.host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cmd->add_option("--port", a->http.port, "Port (0: any free port, printed)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", a->http.api_key, "Require 'Authorization: Bearer KEY' on every request but / and /health");
  cmd->add_option("--parallel", a->scheduler.parallel, "Sequences decoded together at most")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--queue", a->scheduler.max_queue, "Requests waiting at most; beyond, 503")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--cache-budget", a->cache_budget,
                  "Bytes of KV blocks the prefix cache keeps for later requests when no sequence uses them, least "
                  "recently used dropped first (512M, 2G; 0: no prefix cache, each slot reuses only its own cache)")
      ->capture_default_str();
  cmd->add_option("--prefill-chunk", a->scheduler.prefill_chunk,
                  "Prompt tokens prefilled per step at most, between decode steps (0: a whole prompt at once)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-body", a->http.max_body_bytes,
                  "Largest request body in bytes; beyond, 413 as soon as its length says so or it passes the limit")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", a->http.timeout_s,
                  "Seconds in which each request, head and body, must arrive (else 408); an idle connection closes after them")
      ->capture_default_str()->check(CLI::Range(0.001, 86400.0));
  cmd->add_option("--max-connections", a->http.max_connections,
                  "Connections served at once, a thread each (also the listen backlog); beyond, 503 at once")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->callback([a] { run_serve(*a); });
}

}  // namespace nf::cli
