#include "nanoformer/train/metrics_log.h"

#include <cmath>
#include <fstream>

#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::train {
namespace {

// A number, or NaN for null (how the trainer's JSON writes a loss that overflowed).
double number(const nlohmann::json& line, const char* key, const std::string& where) {
  const auto it = line.find(key);
  NF_CHECK(it != line.end(), where, ": no \"", key, "\"");
  if (it->is_null()) return std::nan("");
  NF_CHECK(it->is_number(), where, ": \"", key, "\" is ", util::json_excerpt(*it), ", expected a number");
  return it->get<double>();
}

}  // namespace

MetricsLog read_metrics_log(const std::string& path) {
  std::ifstream in(path);
  NF_CHECK(in.good(), path, ": cannot read the metrics file");
  MetricsLog log;
  int64_t line_number = 0;
  for (std::string text; std::getline(in, text);) {
    ++line_number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(line_number);
    const nlohmann::json line = util::parse_json(text, where + ": ", 4);
    NF_CHECK(line.is_object(), where, ": expected a JSON object, got ", util::json_excerpt(line));
    const double step = number(line, "step", where);
    if (line.contains("val_loss")) {
      log.val_step.push_back(step);
      log.val_loss.push_back(number(line, "val_loss", where));
    } else {
      log.step.push_back(step);
      log.loss.push_back(number(line, "loss", where));
      log.lr.push_back(number(line, "lr", where));
    }
  }
  return log;
}

}  // namespace nf::train
