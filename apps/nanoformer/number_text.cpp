// Numbers as the CLI prints them (number_text.h).
#include "number_text.h"

#include <cstdio>

namespace nf::cli {

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string scaled(int64_t n, double base, const std::vector<const char*>& units) {
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= base && u + 1 < units.size()) v /= base, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string byte_size(int64_t n) { return scaled(n, 1024, {"B", "KiB", "MiB", "GiB", "TiB"}); }

}  // namespace nf::cli
