// `nanoformer viz MODEL (--text TEXT --tokenizer FILE | --ids "1 2 3")`: one sequence through a
// decoder LM (a checkpoint, or a fresh config or preset) with every block recording
// (models/block_probe.h), drawn into --out: per-stage statistics (a table on stdout, stats.json,
// stats.png), attention heat maps per layer and head, with --compare CONFIG2 histograms of both
// models' block outputs on the same input, and for an MoE model the tokens each expert received.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/models/block_probe.h"
#include "nanoformer/ops/view.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "nanoformer/util/plot.h"

namespace nf::cli {
namespace {

namespace fs = std::filesystem;
using models::ProbeResult;

struct VizArgs {
  std::string model, text, tokenizer, ids, out = "viz", compare;
  int64_t layer = -1, head = -1;
};

// A token's bytes as a readable label: spaces, newlines and tabs made visible, bytes that are no
// complete UTF-8 character (a byte-level token's piece of one) written as \xNN.
std::string token_label(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool whole = len > 0 && i + len <= bytes.size();
    for (size_t k = 1; whole && k < len; ++k) whole = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (!whole) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
      continue;
    }
    if (c == ' ') out += "␣";
    else if (c == '\n') out += "↵";
    else if (c == '\t') out += "⇥";
    else if (c < 0x20 || c == 0x7F) out += "?";
    else out.append(bytes.substr(i, len));
    i += len;
  }
  return out;
}

// The ids to run and their labels (the tokens' text with a tokenizer, else the ids).
struct Input {
  std::vector<int64_t> ids;
  std::vector<std::string> labels;
};

Input read_input(const VizArgs& a, int64_t vocab_size) {
  NF_CHECK(a.text.empty() != a.ids.empty(), "viz: give either --text (with --tokenizer) or --ids");
  Input in;
  if (!a.ids.empty()) {
    in.ids = infer::parse_prompt_ids(a.ids, vocab_size, "--ids");
    NF_CHECK(!in.ids.empty(), "--ids: no token ids given (example: --ids \"1 2 3\")");
  } else {
    NF_CHECK(!a.tokenizer.empty(), "--text needs --tokenizer FILE (a tokenizer.json or a character vocabulary)");
    const auto tok = tokenizer::load_tokenizer(a.tokenizer);
    for (tokenizer::TokenId id : tok->encode(a.text)) {
      NF_CHECK(id < vocab_size, "--text: token id ", id, " from ", a.tokenizer, " is outside the model's vocabulary of ",
               vocab_size);
      in.ids.push_back(id);
    }
    NF_CHECK(!in.ids.empty(), "--text: the text encodes to no tokens");
  }
  const auto tok = a.tokenizer.empty() ? nullptr : tokenizer::load_tokenizer(a.tokenizer);
  for (int64_t id : in.ids)
    in.labels.push_back(tok ? token_label(tok->token_bytes(static_cast<tokenizer::TokenId>(id))) : std::to_string(id));
  return in;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    NF_CHECK(out.good(), "viz: cannot write ", tmp);
    out << text;
    NF_CHECK(out.good(), "viz: writing ", tmp, " failed");
  }
  fs::rename(tmp, path);
}

// (a) the statistics: a table, stats.json and stats.png (mean, std, RMS above; min and max below).
void write_stats(const ProbeResult& r, const Input& in, const VizArgs& a, const std::string& name) {
  std::printf("%5s  %-16s %11s %11s %11s %11s %11s\n", "layer", "stage", "mean", "std", "min", "max", "rms");
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  plot::LineChart spread{.title = "mean, standard deviation and RMS", .y_label = "value", .legend_above = true};
  plot::LineChart range{.title = "min and max", .x_label = "layer.stage", .y_label = "value", .legend_above = true};
  plot::Series mean{.label = "mean"}, std{.label = "std", .style = plot::LineStyle::dashed}, rms{.label = "RMS"},
      lo{.label = "min"}, hi{.label = "max"};
  for (const models::StageStats& s : r.stages) {
    std::printf("%5lld  %-16s %11.4g %11.4g %11.4g %11.4g %11.4g\n", static_cast<long long>(s.layer), s.stage.c_str(),
                s.mean, s.std, s.min, s.max, s.rms);
    stages.push_back({{"layer", s.layer}, {"stage", s.stage}, {"mean", s.mean}, {"std", s.std}, {"min", s.min},
                      {"max", s.max}, {"rms", s.rms}});
    if (s.layer > 0 && s.stage == "input") continue;  // the chart shows it once: it is the previous output
    const std::string category = std::to_string(s.layer) + "." + s.stage;
    spread.x_categories.push_back(category);
    range.x_categories.push_back(category);
    const auto x = static_cast<double>(spread.x_categories.size() - 1);
    for (auto [series, v] : {std::pair{&mean, s.mean}, {&std, s.std}, {&rms, s.rms}, {&lo, s.min}, {&hi, s.max}})
      series->x.push_back(x), series->y.push_back(v);
  }
  spread.series = {mean, rms, std};  // std dashed over RMS: they coincide when the mean is near 0
  range.series = {lo, hi};
  const nlohmann::ordered_json j = {{"model", name}, {"ids", in.ids}, {"tokens", in.labels}, {"stages", stages}};
  write_text_file((fs::path(a.out) / "stats.json").string(), j.dump(1) + "\n");
  const int width = std::max(900, 40 * static_cast<int>(r.stages.size()) / 2 + 200);
  plot::write_line_charts((fs::path(a.out) / "stats.png").string(), {spread, range},
                          {.title = "per-stage statistics: " + name, .columns = 1, .panel_width = width,
                           .panel_height = 560});
}

// The layers or heads to draw: all, or the one selected (out of range: an error naming the flag).
std::vector<int64_t> selected(int64_t chosen, int64_t count, const char* flag) {
  NF_CHECK(chosen >= -1 && chosen < count, flag, " ", chosen, " is out of range: the model has ", count,
           count == 1 ? " (index 0)" : (" (indices 0 to " + std::to_string(count - 1) + ")").c_str());
  std::vector<int64_t> all;
  for (int64_t i = 0; i < count; ++i)
    if (chosen < 0 || chosen == i) all.push_back(i);
  return all;
}

// (b) one heat-map grid per selected layer, a panel per selected head.
void write_attention(const ProbeResult& r, const Input& in, const VizArgs& a, const std::vector<int64_t>& layers,
                     const std::vector<int64_t>& heads) {
  const int64_t T = static_cast<int64_t>(in.ids.size());
  for (int64_t layer : layers) {
    const Tensor& w = r.attention[layer];  // (H, T, T)
    plot::HeatMapGrid grid{.row_axis = "query", .col_axis = "key", .value_label = "weight", .fixed_range = true, .min = 0};
    double top = 0;
    for (int64_t h : heads) {
      const Tensor head = select(w, 0, h).to(DType::f64).contiguous();
      const double* p = head.data<double>();
      grid.panels.push_back({.title = "head " + std::to_string(h), .rows = T, .cols = T,
                             .values = std::vector<double>(p, p + T * T), .row_labels = in.labels, .col_labels = in.labels});
      top = std::max(top, *std::max_element(p, p + T * T));
    }
    grid.max = top > 0 ? top : 1;
    const int side = static_cast<int>(std::clamp<int64_t>(18 * T + 140, 320, 900));
    const std::string path = (fs::path(a.out) / ("attention_layer" + std::to_string(layer) + ".png")).string();
    plot::write_heat_maps(path, grid,
                          {.title = "attention weights, layer " + std::to_string(layer),
                           .columns = static_cast<int>(std::min<size_t>(heads.size(), 4)), .panel_width = side,
                           .panel_height = side});
    std::printf("wrote %s\n", path.c_str());
  }
}

// The --compare model, checked against the model and the input (before anything is written).
std::shared_ptr<models::DecoderLM> comparison_model(const models::DecoderLMConfig& c, const Input& in, const VizArgs& a) {
  auto other = formats::load_decoder_lm(a.compare);
  NF_CHECK(other->config().n_layers == c.n_layers, "--compare ", a.compare, ": ", other->config().n_layers,
           " layers, the model has ", c.n_layers);
  for (int64_t id : in.ids)
    NF_CHECK(id < other->config().vocab_size, "--compare ", a.compare, ": token id ", id,
             " is outside its vocabulary of ", other->config().vocab_size);
  return other;
}

// (c) histograms of every block's output, this model against --compare.
void write_comparison(const ProbeResult& r, const std::string& name, const Input& in, const VizArgs& a,
                      const std::shared_ptr<models::DecoderLM>& other) {
  const ProbeResult o = models::probe_decoder_lm(*other, in.ids, false);
  const std::string other_name = other->config().name.empty() ? a.compare : other->config().name;
  std::vector<plot::HistogramChart> panels;
  std::printf("block output standard deviation: %s vs %s\n", name.c_str(), other_name.c_str());
  for (size_t l = 0; l < r.block_outputs.size(); ++l) {
    auto values = [](const Tensor& t) {
      const Tensor d = t.to(DType::f64).contiguous();
      return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
    };
    panels.push_back({.title = "layer " + std::to_string(l) + " output", .x_label = "value", .bins = 50,
                      .samples = {{name, values(r.block_outputs[l])}, {other_name, values(o.block_outputs[l])}}});
    auto std_of = [&](const ProbeResult& p) {
      for (const auto& s : p.stages)
        if (s.layer == static_cast<int64_t>(l) && s.stage == "output") return s.std;
      return 0.0;
    };
    std::printf("  layer %zu: %.4g vs %.4g\n", l, std_of(r), std_of(o));
  }
  const std::string path = (fs::path(a.out) / "compare.png").string();
  plot::write_histograms(path, panels,
                         {.title = "block outputs: " + name + " vs " + other_name,
                          .columns = static_cast<int>(std::min<size_t>(panels.size(), 3)), .panel_width = 640,
                          .panel_height = 440});
  std::printf("wrote %s\n", path.c_str());
}

// (d) tokens per routed expert and layer, as a table and a heat map (layers x experts).
void write_expert_load(const ProbeResult& r, const VizArgs& a) {
  plot::HeatMap load{.title = "tokens routed to each expert"};
  for (size_t l = 0; l < r.expert_load.size(); ++l) {
    if (r.expert_load[l].empty()) continue;
    std::printf("layer %zu expert load:", l);
    for (int64_t n : r.expert_load[l]) std::printf(" %lld", static_cast<long long>(n));
    std::printf("\n");
    load.rows += 1;
    load.cols = static_cast<int64_t>(r.expert_load[l].size());
    load.row_labels.push_back("layer " + std::to_string(l));
    for (int64_t n : r.expert_load[l]) load.values.push_back(static_cast<double>(n));
  }
  if (load.rows == 0) return;
  for (int64_t e = 0; e < load.cols; ++e) load.col_labels.push_back("expert " + std::to_string(e));
  const std::string path = (fs::path(a.out) / "moe_load.png").string();
  plot::write_heat_maps(path, {.panels = {load}, .row_axis = "layer", .col_axis = "expert", .value_label = "tokens",
                               .fixed_range = true, .min = 0,
                               .max = std::max(1.0, *std::max_element(load.values.begin(), load.values.end()))},
                        {.panel_width = static_cast<int>(std::max<int64_t>(420, 60 * load.cols + 200)),
                         .panel_height = static_cast<int>(std::max<int64_t>(320, 40 * load.rows + 200))});
  std::printf("wrote %s\n", path.c_str());
}

void run_viz(const VizArgs& a) {
  auto model = formats::load_decoder_lm(a.model);
  const models::DecoderLMConfig& c = model->config();
  const std::vector<int64_t> layers = selected(a.layer, c.n_layers, "--layer");
  const std::vector<int64_t> heads = selected(a.head, c.n_heads, "--head");
  const Input in = read_input(a, c.vocab_size);
  NF_CHECK(static_cast<int64_t>(in.ids.size()) <= c.max_seq_len, "viz: ", in.ids.size(),
           " tokens exceed the model's max_seq_len ", c.max_seq_len);
  const auto other = a.compare.empty() ? nullptr : comparison_model(c, in, a);
  fs::create_directories(a.out);  // every option checked
  const std::string name = c.name.empty() ? a.model : c.name;
  const ProbeResult r = models::probe_decoder_lm(*model, in.ids, true);
  write_stats(r, in, a, name);
  write_attention(r, in, a, layers, heads);
  if (other) write_comparison(r, name, in, a, other);
  write_expert_load(r, a);
  std::printf("wrote %s/stats.json and %s/stats.png\n", a.out.c_str(), a.out.c_str());
}

}  // namespace

void add_viz_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "viz",
      "Look inside a decoder LM on one input: the statistics (mean, std, min, max, RMS) of every stage of\n"
      "every block (table, stats.json, stats.png), attention heat maps per layer and head\n"
      "(attention_layerN.png), with --compare CONFIG2 histograms of both models' block outputs on the\n"
      "same input (compare.png), and for an MoE model the tokens each expert received (moe_load.png).\n"
      "  nanoformer viz runs/chars/ckpt_00002000.safetensors --tokenizer chars.json --text \"ROMEO:\"\n"
      "  nanoformer viz gpt-mini --ids \"1 2 3 4\" --layer 0 --compare post.json");
  auto a = std::make_shared<VizArgs>();
  cmd->add_option("model", a->model, "a checkpoint, a config JSON file or a preset (fresh seed-0 weights)")->required();
  cmd->add_option("--text", a->text, "the input text (needs --tokenizer)");
  cmd->add_option("--tokenizer", a->tokenizer, "a tokenizer.json or character vocabulary; labels the tokens");
  cmd->add_option("--ids", a->ids, "the input as token ids: \"1 2 3\"");
  cmd->add_option("--out", a->out, "the directory to write the pictures and stats.json into")->capture_default_str();
  cmd->add_option("--layer", a->layer, "draw the attention of this layer only (default: every layer)");
  cmd->add_option("--head", a->head, "draw this head only (default: every head)");
  cmd->add_option("--compare", a->compare, "a second model (config, preset or checkpoint) whose block outputs to compare");
  cmd->callback([a] { run_viz(*a); });
}

}  // namespace nf::cli
