#pragma once
// The picture of one or more training runs (`nanoformer plot`, the demo's loss.png): training loss
// (solid) and validation loss (dashed) on a log scale in one panel, the learning rate in another;
// each run has one colour, named in the legend.
#include <string>
#include <vector>

#include "nanoformer/train/metrics_log.h"

namespace nf::train {

struct NamedRun {
  std::string name;
  MetricsLog log;
};

// Writes path (.png or .svg); throws nf::Error naming the path, or a run without any step.
void write_metrics_chart(const std::string& path, const std::vector<NamedRun>& runs, const std::string& title);

}  // namespace nf::train
