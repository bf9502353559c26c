// The weights-by-type table of `inspect` and `quantize` (weight_table.h).
#include "weight_table.h"

#include <cstdio>

#include "number_text.h"

namespace nf::cli {

int64_t total_bytes(const std::vector<models::WeightTypeStats>& stats) {
  int64_t n = 0;
  for (const auto& s : stats) n += s.bytes;
  return n;
}

std::string weight_table(const std::vector<models::WeightTypeStats>& stats, const std::string& indent) {
  std::string out;
  char line[160];
  auto row = [&](const std::string& type, const std::string& tensors, const std::string& parameters,
                 const std::string& bytes) {
    std::snprintf(line, sizeof line, "%s%-8s %9s %16s %14s\n", indent.c_str(), type.c_str(), tensors.c_str(),
                  parameters.c_str(), bytes.c_str());
    out += line;
  };
  row("type", "tensors", "parameters", "bytes");
  models::WeightTypeStats total{.type = "total"};
  for (const auto& s : stats) {
    row(s.type, grouped(s.tensors), grouped(s.parameters), byte_size(s.bytes));
    total.tensors += s.tensors, total.parameters += s.parameters, total.bytes += s.bytes;
  }
  row(total.type, grouped(total.tensors), grouped(total.parameters), byte_size(total.bytes));
  return out;
}

}  // namespace nf::cli
