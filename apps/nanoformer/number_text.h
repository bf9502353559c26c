#pragma once
// Numbers as the CLI prints them: digits grouped by thousands, and sizes in binary or decimal units.
#include <cstdint>
#include <string>
#include <vector>

namespace nf::cli {

// 12368064 -> "12,368,064"
std::string grouped(int64_t n);
// n in units of `base`: scaled(1536, 1024, {"B", "KiB", ...}) -> "1.50 KiB"
std::string scaled(int64_t n, double base, const std::vector<const char*>& units);
// scaled(n, 1024, {"B", "KiB", "MiB", "GiB", "TiB"})
std::string byte_size(int64_t n);

}  // namespace nf::cli
