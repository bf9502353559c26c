#pragma once
// The weights of a model by how they are stored (models::weight_type_stats), as `inspect` and
// `quantize` print them: one line per type, then the total.
//   type        tensors     parameters         bytes
//   q8_0             14      1,234,567      1.23 MiB
#include <string>
#include <vector>

#include "nanoformer/models/model_stats.h"

namespace nf::cli {

// The table, each line indented by `indent`.
std::string weight_table(const std::vector<models::WeightTypeStats>& stats, const std::string& indent = "  ");
// The stats' total bytes.
int64_t total_bytes(const std::vector<models::WeightTypeStats>& stats);

}  // namespace nf::cli
