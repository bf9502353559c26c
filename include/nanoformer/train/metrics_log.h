#pragma once
// Reading back a training run's metrics.jsonl (written by train::Trainer): one JSON object per
// line, either a training step {"step", "loss", "lr", ...} or a validation {"step", "val_loss", ...}.
#include <string>
#include <vector>

namespace nf::train {

struct MetricsLog {
  std::vector<double> step, loss, lr;   // one entry per training step
  std::vector<double> val_step, val_loss;  // one entry per validation
};

// Throws nf::Error naming the file and the line number for a line that is not a JSON object, lacks
// "step", or has neither "loss" and "lr" nor "val_loss" as numbers; blank lines are skipped. A null
// value (the JSON of a loss that overflowed) reads as NaN.
MetricsLog read_metrics_log(const std::string& path);

}  // namespace nf::train
