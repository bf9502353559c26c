#pragma once
// JSON Schema's `format` for the formats people use, as ECMA-262 patterns (regex.h) that match only
// strings the format allows: date-time, date, time (RFC 3339), duration (ISO 8601 as JSON Schema
// 2019-09 appendix A), email (a dot-atom local part, RFC 5321), hostname (RFC 1123 labels),
// ipv4, ipv6, uri (RFC 3986, with a scheme), uri-reference, uuid (RFC 4122 hex groups). A pattern may
// match fewer strings than the format (a subset is sound: every answer validates) but should
// cover its common forms.
#include <optional>
#include <string>
#include <string_view>

namespace nf::grammar {

// The anchored pattern (^...$) of `format`; nullopt for a format not listed above (left free).
std::optional<std::string> format_pattern(std::string_view format);

}  // namespace nf::grammar
