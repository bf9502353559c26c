// `nanoformer plot METRICS.jsonl [MORE.jsonl ...] --out FILE.png`: the training loss, validation
// loss and learning rate of one or more runs (the trainer's metrics.jsonl) on one chart, each run
// named in the legend by its directory (or --names).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/train/metrics_chart.h"

namespace nf::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> metrics, names;
  std::string out, title;
};

// runs/chars/metrics.jsonl -> "chars"; a metrics file named otherwise -> its stem.
std::string run_name(const std::string& metrics_path) {
  const std::filesystem::path p = std::filesystem::absolute(metrics_path).lexically_normal();
  if (p.filename() == "metrics.jsonl" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();
  return p.stem().string();
}

void run_plot(const PlotArgs& a) {
  NF_CHECK(a.names.empty() || a.names.size() == a.metrics.size(), "--names: ", a.names.size(), " names for ",
           a.metrics.size(), " metrics files");
  std::vector<train::NamedRun> runs;
  for (size_t i = 0; i < a.metrics.size(); ++i)
    runs.push_back({a.names.empty() ? run_name(a.metrics[i]) : a.names[i], train::read_metrics_log(a.metrics[i])});
  train::write_metrics_chart(a.out, runs, a.title);
  for (const train::NamedRun& r : runs)
    std::printf("%s: %zu steps%s%s\n", r.name.c_str(), r.log.step.size(),
                r.log.loss.empty() ? "" : (", last loss " + std::to_string(r.log.loss.back())).c_str(),
                r.log.val_loss.empty() ? "" : (", last validation loss " + std::to_string(r.log.val_loss.back())).c_str());
  std::printf("wrote %s\n", a.out.c_str());
}

}  // namespace

void add_plot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plot",
      "Draw training runs from their metrics.jsonl (written by `nanoformer train`): training loss (solid)\n"
      "and validation loss (dashed) on a log scale, and the learning rate; several runs on one chart,\n"
      "one colour each, named by their directory.\n"
      "  nanoformer plot runs/a/metrics.jsonl runs/b/metrics.jsonl --out compare.png");
  auto a = std::make_shared<PlotArgs>();
  cmd->add_option("metrics", a->metrics, "metrics.jsonl files, one per run")->required();
  cmd->add_option("--out", a->out, "the picture to write (.png or .svg)")->required();
  cmd->add_option("--names", a->names, "the runs' names in the legend, one per file (default: their directories)")
      ->delimiter(',');
  cmd->add_option("--title", a->title, "a title over the chart");
  cmd->callback([a] { run_plot(*a); });
}

}  // namespace nf::cli
