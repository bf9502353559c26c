// `nanoformer demo`: the end-to-end proof of the engine until language-model training lands.
// Trains a small MLP with SGD on a synthetic spiral task, shows progress, writes the loss curve.
#include <cstdio>
#include <memory>

#include "command.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/train/spiral_mlp.h"
#include "nanoformer/util/progress_bar.h"
#include "nanoformer/util/svg_plot.h"

namespace nf::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "demo",
      "End-to-end proof of the engine: train a 3-layer MLP with plain SGD to classify 3 interleaved\n"
      "spirals (300 points), then print the final loss and accuracy and write the loss curve as SVG.");
  auto cfg = std::make_shared<train::SpiralMlpConfig>();
  auto plot = std::make_shared<std::string>("demo_loss.svg");
  cmd->add_option("--steps", cfg->steps, "SGD steps (full batch)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lr", cfg->learning_rate, "learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--hidden", cfg->hidden, "hidden width of the two hidden layers")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", cfg->seed, "seed for data and initialisation")->capture_default_str();
  cmd->add_option("--plot", *plot, "where to write the loss curve (SVG)")->capture_default_str();
  cmd->callback([cfg, plot] {
    std::printf("nanoformer demo: MLP 2 -> %lld -> %lld -> 3, SGD lr %g, %lld steps, %d threads, BLAS: %s\n",
                static_cast<long long>(cfg->hidden), static_cast<long long>(cfg->hidden), cfg->learning_rate,
                static_cast<long long>(cfg->steps), num_threads(), blas_info());
    ProgressBar bar(cfg->steps, "train", "steps");
    const train::SpiralMlpResult r = train::train_spiral_mlp(*cfg, [&](int64_t step, double loss) {
      char status[32];
      std::snprintf(status, sizeof status, "loss %.4f", loss);
      bar.update(step + 1, status);
    });
    bar.finish();
    std::printf("initial loss %.4f, final loss %.4f, training accuracy %.1f%%\n", r.losses.front(), r.losses.back(),
                100.0 * r.accuracy);
    PlotSeries series{"cross-entropy", {}, r.losses};
    for (size_t i = 0; i < r.losses.size(); ++i) series.x.push_back(static_cast<double>(i));
    write_line_plot_svg(*plot, {series}, {.title = "nanoformer demo: spiral MLP, SGD", .y_label = "loss", .log_y = true});
    std::printf("loss curve written to %s\n", plot->c_str());
  });
}

}  // namespace nf::cli
