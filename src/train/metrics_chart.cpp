#include "nanoformer/train/metrics_chart.h"

#include "nanoformer/core/error.h"
#include "nanoformer/util/plot.h"

namespace nf::train {

void write_metrics_chart(const std::string& path, const std::vector<NamedRun>& runs, const std::string& title) {
  NF_CHECK(!runs.empty(), "plot '", path, "': no runs to draw");
  plot::LineChart loss{.title = "loss", .x_label = "step", .y_label = "loss (nats per token)", .log_y = true,
                        .legend_above = true};  // the legend never covers a curve
  plot::LineChart lr{.title = "learning rate", .x_label = "step", .y_label = "learning rate"};
  for (size_t i = 0; i < runs.size(); ++i) {
    const NamedRun& run = runs[i];
    NF_CHECK(!run.log.step.empty() || !run.log.val_step.empty(), "plot '", path, "': run '", run.name,
             "' has no steps");
    const int color = static_cast<int>(i);
    const std::string prefix = runs.size() > 1 ? run.name + ": " : "";
    loss.series.push_back({.label = prefix + "train", .x = run.log.step, .y = run.log.loss, .color = color});
    if (!run.log.val_step.empty())
      loss.series.push_back({.label = prefix + "validation", .x = run.log.val_step, .y = run.log.val_loss,
                             .style = run.log.val_step.size() == 1 ? plot::LineStyle::points : plot::LineStyle::dashed,
                             .color = color});
    lr.series.push_back({.label = runs.size() > 1 ? run.name : "", .x = run.log.step, .y = run.log.lr, .color = color});
  }
  plot::write_line_charts(path, {loss, lr}, {.title = title, .columns = 2, .panel_width = 700, .panel_height = 480});
}

}  // namespace nf::train
