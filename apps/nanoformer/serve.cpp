// `nanoformer serve --model MODEL`: an OpenAI-compatible HTTP server (chat completions, completions,
// models, health) with a web chat page at /, decoding concurrent requests together (continuous
// batching, serve/scheduler.h). Binds loopback by default; Ctrl-C stops it.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "command.h"
#include "generation_options.h"
#include "nanoformer/serve/http_server.h"

namespace nf::cli {
namespace {

struct ServeArgs {
  GenerationFlags flags;  // the model, tokenizer and context (sampling comes with each request)
  std::string chat_template, name;
  serve::HttpOptions http;
  serve::SchedulerOptions scheduler;
};

void run_serve(ServeArgs& a) {
  // SIGINT / SIGTERM are taken by one thread (sigwait), so every other thread blocks them
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  a.scheduler.cache_type = nn::kv_cache_type_from_name(a.flags.cache_type);  // checked before the model loads
  LoadedModel loaded = load_model_and_tokenizer(a.flags, /*required=*/true);
  const tokenizer::Tokenizer& tok = *loaded.tokenizer;
  const std::string template_name =
      a.chat_template.empty() ? tokenizer::default_chat_template(tok, loaded.tokenizer_path) : a.chat_template;
  const auto chat_template = template_name.empty() ? nullptr : tokenizer::make_chat_template(template_name, tok);
  a.scheduler.context = a.flags.context;
  serve::Scheduler scheduler(*loaded.model, a.scheduler);
  const std::string name = a.name.empty() ? std::filesystem::path(a.flags.model).filename().string() : a.name;
  serve::CompletionService service(scheduler, tok, chat_template.get(), name, loaded.prompt_bos);
  serve::HttpServer server(service, a.http);
  server.bind();
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    server.stop();
  });
  std::fprintf(stderr,
               "nanoformer serve: %s (chat template %s, context %lld, KV cache %s, parallel %lld, queue %lld, "
               "connections %lld, timeout %g s)\n"
               "listening on http://%s:%d (Ctrl-C stops)\n",
               name.c_str(), template_name.empty() ? "none: /v1/completions only" : template_name.c_str(),
               static_cast<long long>(scheduler.context()), quant_type_name(a.scheduler.cache_type),
               static_cast<long long>(a.scheduler.parallel),
               static_cast<long long>(a.scheduler.max_queue), static_cast<long long>(a.http.max_connections),
               a.http.timeout_s, a.http.host.c_str(), server.port());
  server.serve();
  pthread_kill(stopper.native_handle(), SIGTERM);  // when the server ended on its own
  stopper.join();
  std::fprintf(stderr, "nanoformer serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve a language model over an OpenAI-compatible HTTP API, with a web chat page at /.\n"
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
  cmd->add_option("--chat-template", a->chat_template,
                  "chatml, nanochat, a template file or a tokenizer_config.json (default: the chat_template of the tokenizer_config.json beside tokenizer.json, else told by the tokenizer's special tokens)");
  cmd->add_option("--name", a->name, "The model's name in responses and /v1/models (default: the model's file name)");
  cmd->add_option("--host", a->http.host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
  cmd->add_option("--port", a->http.port, "Port (0: any free port, printed)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", a->http.api_key, "Require 'Authorization: Bearer KEY' on every request but / and /health");
  cmd->add_option("--parallel", a->scheduler.parallel, "Sequences decoded together at most")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--queue", a->scheduler.max_queue, "Requests waiting at most; beyond, 503")
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
