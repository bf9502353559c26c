// `nanoformer inspect MODEL`: what a model costs: exact parameter counts by part, active parameters
// per token, FLOPs per token, KV-cache bytes and memory for inference and training (model_stats.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "number_text.h"
#include "weight_table.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/model_stats.h"

namespace nf::cli {
namespace {

using models::DecoderLMConfig;
using models::ModelStats;

// The config JSON of a preset, a config file or a nanoformer checkpoint (read from its header
// without a tensor), or "" for any other file.
std::string config_json_of(const std::string& model, std::string& source) {
  const std::filesystem::path path(model);
  source = model;
  if (!std::filesystem::exists(path) || path.extension() == ".json") {
    source = models::resolve_config_path(model);
    return models::read_config_text(source);
  }
  if (path.extension() == ".safetensors") return formats::read_checkpoint_config_json(model);
  return "";
}

std::string bytes(int64_t n) { return byte_size(n); }
std::string flops(int64_t n) { return scaled(n, 1000, {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP"}); }

std::string architecture(const DecoderLMConfig& c) {
  const nn::AttentionConfig a = models::block_config(c).attention;  // resolved: head_dim, n_kv_heads
  std::string s = "vocab " + std::to_string(c.vocab_size) + ", dim " + std::to_string(c.dim) + ", " +
                  std::to_string(c.n_layers) + " layers, " + std::to_string(a.n_heads) + " heads of " +
                  std::to_string(a.head_dim) + " (" + std::to_string(a.n_kv_heads) + " kv), " + nn::position_kind_name(c.position) + " positions, " + nn::norm_kind_name(c.norm) + ", " +
                  nn::mlp_kind_name(c.mlp) + " MLP";
  if (c.moe)
    s += ", MoE " + std::to_string(c.moe->n_experts) + " routed (top " + std::to_string(c.moe->top_k) + ") + " +
         std::to_string(c.moe->n_shared_experts) + " shared";
  if (c.sliding_window > 0)
    s += ", sliding window " + std::to_string(c.sliding_window) +
         (c.window_pattern.empty() ? std::string() : " (" + c.window_pattern + ")");
  if (c.value_embeddings) s += ", value embeddings";
  if (c.residual_scalars) s += ", residual scalars";
  if (c.smear) s += ", smear";
  if (c.backout) s += ", backout";
  return s + (c.tie_embeddings ? ", tied head" : ", untied head");
}

// FLOPs and KV cache per token, and memory for inference and training (model_stats.h).
void print_costs(const ModelStats& s, const char* flops_formula, const char* kv_formula) {
  std::printf("per token at context %lld (N = %s active matmul weights)\n", static_cast<long long>(s.context),
              grouped(s.active_matmul_weights).c_str());
  std::printf("  forward FLOPs      %15s  (%s)\n", flops(s.forward_flops_per_token).c_str(), flops_formula);
  std::printf("  training FLOPs     %15s  (3 x forward)\n", flops(s.training_flops_per_token).c_str());
  std::printf("  KV cache           %15s  fp32, %s bf16  (%s)\n\n", bytes(s.kv_cache_bytes_per_token_fp32).c_str(),
              bytes(s.kv_cache_bytes_per_token_bf16).c_str(), kv_formula);
  std::printf("memory at batch %lld x context %lld\n", static_cast<long long>(s.batch), static_cast<long long>(s.context));
  auto row = [](const char* name, const std::string& a, const std::string& b) {
    std::printf("  %-26s %13s %13s\n", name, a.c_str(), b.c_str());
  };
  row("", "fp32", "bf16");
  row("inference: weights", bytes(s.fp32.weights), bytes(s.bf16.weights));
  row("           KV cache", bytes(s.fp32.kv_cache), bytes(s.bf16.kv_cache));
  row("           total", bytes(s.fp32.inference), bytes(s.bf16.inference));
  row("training:  weights", bytes(s.fp32.weights), bytes(s.bf16.weights));
  row("           gradients", bytes(s.fp32.gradients), bytes(s.bf16.gradients));
  row("           AdamW moments", bytes(s.fp32.optimizer), bytes(s.bf16.optimizer));
  row("           activations", bytes(s.fp32.activations), bytes(s.bf16.activations));
  row("           total", bytes(s.fp32.training), bytes(s.bf16.training));
}

void print_table(const DecoderLMConfig& c, const ModelStats& s) {
  const models::ParameterCounts& p = s.parameters;
  std::printf("model: %s\n", c.name.empty() ? "(unnamed)" : c.name.c_str());
  std::printf("architecture: %s\n\n", architecture(c).c_str());
  std::printf("parameters by part\n");
  auto part = [&](const char* name, int64_t n, const char* note = "") {
    std::printf("  %-18s %15s  %5.1f%%%s\n", name, grouped(n).c_str(), 100.0 * n / p.total, note);
  };
  part("embedding", p.embedding);
  part("positions", p.positions, c.position == nn::PositionKind::learned ? "" : "  (none learned)");
  part("attention", p.attention);
  if (c.moe) {
    part("routed experts", p.routed_experts);
    part("shared experts", p.shared_experts);
    part("router", p.router);
  } else {
    part("mlp", p.mlp);
  }
  part("norms", p.norms);
  if (p.value_embeddings > 0) part("value embeddings", p.value_embeddings);
  if (p.scalars > 0) part("scalars", p.scalars);
  part("head", p.head, c.tie_embeddings ? "  (tied: the head is the embedding)" : "");
  std::printf("parameters: %lld\n", static_cast<long long>(p.total));
  std::printf("active parameters per token: %lld%s\n\n", static_cast<long long>(s.active_parameters),
              c.moe ? "" : " (dense: all)");
  print_costs(s, "2 N + 2 x 2 x layers x context x heads x head_dim", "2 x layers x kv_heads x head_dim x bytes");
}

nlohmann::ordered_json memory_json(const models::MemoryEstimate& m) {
  return {{"weights", m.weights},     {"kv_cache", m.kv_cache},   {"inference", m.inference},
          {"gradients", m.gradients}, {"optimizer", m.optimizer}, {"activations", m.activations},
          {"training", m.training}};
}

void add_costs_json(nlohmann::ordered_json& j, const ModelStats& s) {
  j["active_parameters"] = s.active_parameters;
  j["active_matmul_weights"] = s.active_matmul_weights;
  j["context"] = s.context;
  j["batch"] = s.batch;
  j["flops_per_token"] = {{"forward", s.forward_flops_per_token}, {"training", s.training_flops_per_token}};
  j["kv_cache_bytes_per_token"] = {{"fp32", s.kv_cache_bytes_per_token_fp32}, {"bf16", s.kv_cache_bytes_per_token_bf16}};
  j["memory_bytes"] = {{"fp32", memory_json(s.fp32)}, {"bf16", memory_json(s.bf16)}};
}

using WeightStats = std::vector<models::WeightTypeStats>;

// The weights as the file holds them (a model loaded from a file: checkpoint folders, GGUF, ...).
void print_weights(const WeightStats& weights) {
  if (weights.empty()) return;
  std::printf("\nweights as held (quantised ones in their block types)\n%s", weight_table(weights).c_str());
}

void add_weights_json(nlohmann::ordered_json& j, const WeightStats& weights) {
  if (weights.empty()) return;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& w : weights)
    list.push_back({{"type", w.type}, {"tensors", w.tensors}, {"parameters", w.parameters}, {"bytes", w.bytes}});
  j["weights_by_type"] = list;
}

void print_json(const DecoderLMConfig& c, const ModelStats& s, const WeightStats& weights) {
  const models::ParameterCounts& p = s.parameters;
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["parameters"] = {{"embedding", p.embedding}, {"positions", p.positions}, {"attention", p.attention},
                     {"mlp", p.mlp},             {"routed_experts", p.routed_experts},
                     {"shared_experts", p.shared_experts}, {"router", p.router}, {"norms", p.norms},
                     {"value_embeddings", p.value_embeddings}, {"scalars", p.scalars}, {"head", p.head},           {"total", p.total}};
  add_costs_json(j, s);
  add_weights_json(j, weights);
  std::cout << j.dump(2) << "\n";
}

// Any architecture: the parts of the built model, its total and its costs.
void print_model_table(const models::Model& model, const std::string& name, const ModelStats& s) {
  const int64_t total = model.num_parameters();
  std::printf("model: %s\n", name.c_str());
  std::printf("architecture: %s\n\n", model.architecture().c_str());
  std::printf("parameters by part\n");
  int width = 18;  // the widest part name
  for (const auto& part : model.parameter_parts()) width = std::max(width, static_cast<int>(part.name.size()));
  for (const auto& part : model.parameter_parts())
    std::printf("  %-*s %15s  %5.1f%%\n", width, part.name.c_str(), grouped(part.count).c_str(),
                100.0 * part.count / total);
  std::printf("parameters: %lld\n\n", static_cast<long long>(total));
  print_costs(s, "2 N + 2 x 2 x context x heads x head_dim per attention",
              "2 x kv_heads x head_dim x bytes per decoder attention");
}

void print_model_json(const models::Model& model, const std::string& name, const ModelStats& s,
                      const WeightStats& weights) {
  nlohmann::ordered_json j;
  j["name"] = name;
  j["architecture"] = model.architecture();
  nlohmann::ordered_json parts;
  for (const auto& part : model.parameter_parts()) parts[part.name] = part.count;
  parts["total"] = model.num_parameters();
  j["parameters"] = parts;
  add_costs_json(j, s);
  add_weights_json(j, weights);
  std::cout << j.dump(2) << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Show what a model costs, from its config alone: exact parameter counts by part and in total\n"
      "(a line 'parameters: N'), active parameters per token (MoE), FLOPs per token, KV-cache bytes per\n"
      "token, and memory for inference and training in fp32 and bf16.\n"
      "  forward FLOPs/token  = 2 x N + 2 x 2 x layers x context x heads x head_dim, N = the weight\n"
      "                         matrices a token multiplies by (attention, MLP or its active experts,\n"
      "                         router, head); training = 3 x forward\n"
      "  KV cache bytes/token = 2 x layers x kv_heads x head_dim x bytes\n"
      "  inference memory     = weights + KV cache of batch x context tokens\n"
      "  training memory      = weights + gradients + AdamW's 2 moments + activations, where activations\n"
      "                         count what the backward reads per token (norm inputs/outputs, q, k, v,\n"
      "                         attention output and weights, MLP pre-activations, logits): a lower bound\n"
      "A model loaded from its file (a model folder, a GGUF, ...; not a preset, config or nanoformer\n"
      "checkpoint, read from its header alone) also gets its weights as held: tensors, parameters and\n"
      "bytes per type (f32, bf16, q8_0, q4_0, ...).\n"
      "Example: nanoformer inspect gpt2-124m --context 1024 --batch 8");
  struct Args {
    std::string model;
    bool json = false;
    int64_t context = 0, batch = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "a preset name (gpt2-124m, ...), a config JSON file, a checkpoint, or a GGUF file")->required();
  cmd->add_flag("--json", a->json, "print JSON instead of the table");
  cmd->add_option("--context", a->context, "tokens per sequence for FLOPs and memory (default: the model's max_seq_len)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--batch", a->batch, "sequences per batch for memory")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->callback([a] {
    std::string source;
    const std::string json = config_json_of(a->model, source);
    std::shared_ptr<models::Model> model;
    if (json.empty()) {
      model = formats::load_model(a->model);
    } else if (models::config_architecture(json, source) != models::DecoderLMConfig::kArchitecture) {
      Generator gen(0);
      model = models::build_model(json, source, gen);
    }
    // a model loaded from its file: its weights as held too
    const WeightStats weights = json.empty() ? models::weight_type_stats(*model) : WeightStats{};
    if (model && !std::dynamic_pointer_cast<models::DecoderLM>(model)) {
      const ModelStats stats = models::built_model_stats(*model, {.context = a->context, .batch = a->batch});
      if (a->json) return print_model_json(*model, a->model, stats, weights);
      print_model_table(*model, a->model, stats);
      return print_weights(weights);
    }
    const DecoderLMConfig config = model ? models::model_as<models::DecoderLM>(model, a->model)->config()
                                         : models::parse_model_config(json, source);
    const ModelStats stats = models::model_stats(config, {.context = a->context, .batch = a->batch});
    if (a->json) return print_json(config, stats, weights);
    print_table(config, stats);
    print_weights(weights);
  });
}

}  // namespace nf::cli
