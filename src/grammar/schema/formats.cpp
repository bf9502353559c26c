// JSON Schema formats as ECMA-262 patterns (grammar/schema/formats.h).
//
// Each pattern is one literal in kFormats, in the form {"<name>", R"re(^...$)re"}, so that
// tools/grammar/make_format_fixtures.py reads the very same text (and checks it against Python's
// jsonschema). The patterns use only classes, groups, alternation and counted repetition (no
// lookaround), and [0-9] rather than \d (Python's \d also matches non-ASCII digits).
#include "grammar/schema/formats.h"

#include <utility>

namespace nf::grammar {
namespace {

constexpr std::pair<std::string_view, std::string_view> kFormats[] = {
    // RFC 3339 section 5.6 full-date: years 0001-9999 (Python's date has no year 0); days 01-28 of
    // every month, 29-30 but in February, 31 in the long months, February 29 in Gregorian leap
    // years (divisible by 4 and not by 100, or by 400): exactly the calendar's dates.
    {"date", R"re(^(?:(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)$)re"},
    // RFC 3339 section 5.6 full-time: hours 00-23, seconds 00-59 (no leap second 60: Python's
    // rfc3339-validator refuses it), any fraction, Z or a +hh:mm / -hh:mm offset (lower-case z allowed, RFC 3339 section 5.6 note).
    {"time", R"re(^(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$)re"},
    // RFC 3339 section 5.6 date-time: the date above, T (or t), the time above.
    {"date-time", R"re(^(?:(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$)re"},
    // RFC 3339 appendix A duration (JSON Schema 2019-09 appendix A): P then years-months-days
    // (each optional after the first given, in order) with an optional T time part, a time part
    // alone, or weeks.
    {"duration", R"re(^P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)$)re"},
    // RFC 5321 section 4.1.2 Mailbox, ASCII: a dot-atom local part (RFC 5322 section 3.2.3 atext)
    // of at most 64 characters (section 4.5.3.1.1) as one atom of 1-64 or 2-4 atoms of 1-15, "@",
    // a domain as the hostname below.
    {"email", R"re(^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,64}|[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,15}(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,15}){1,3})@(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,57}[A-Za-z0-9])?\.){0,3}[A-Za-z](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,57}[A-Za-z0-9])?|(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,25}[A-Za-z0-9])?\.){0,7}[A-Za-z](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,25}[A-Za-z0-9])?)$)re"},
    // RFC 1123 section 2.1 host names: labels of letters, digits and hyphens, neither first nor last
    // a hyphen, the last label starting with a letter (not a dotted number), no "--" as a label's
    // 3rd and 4th characters (RFC 5891 section 4.2.3.1 keeps those for IDNA's xn-- labels, which are
    // left out); the total of at most 253 characters (RFC 1035 section 2.3.4) kept by a regular
    // subset: up to 4 labels of 1-62 characters, or up to 8 labels of 1-30 (63 is left out).
    {"hostname", R"re(^(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,57}[A-Za-z0-9])?\.){0,3}[A-Za-z](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,57}[A-Za-z0-9])?|(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,25}[A-Za-z0-9])?\.){0,7}[A-Za-z](?:[A-Za-z0-9-]{0,2}[A-Za-z0-9]|[A-Za-z0-9-](?:[A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,25}[A-Za-z0-9])?)$)re"},
    // RFC 2673 section 3.2 dotted quad: four decimal octets 0-255 without leading zeros.
    {"ipv4", R"re(^(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$)re"},
    // RFC 3986 section 3.2.2 IPv6address (RFC 4291 section 2.2): eight groups of 1-4 hex digits,
    // one run of them compressed to "::", the last two groups possibly a dotted quad; no zone.
    {"ipv6", R"re(^(?:(?:[0-9A-Fa-f]{1,4}:){6}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|::(?:[0-9A-Fa-f]{1,4}:){5}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){4}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:(?:[0-9A-Fa-f]{1,4}:){0,1}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){3}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:(?:[0-9A-Fa-f]{1,4}:){0,2}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:){2}(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:(?:[0-9A-Fa-f]{1,4}:){0,3}[0-9A-Fa-f]{1,4})?::[0-9A-Fa-f]{1,4}:(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:(?:[0-9A-Fa-f]{1,4}:){0,4}[0-9A-Fa-f]{1,4})?::(?:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})|(?:(?:[0-9A-Fa-f]{1,4}:){0,5}[0-9A-Fa-f]{1,4})?::[0-9A-Fa-f]{1,4}|(?:(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{1,4})?::)$)re"},
    // RFC 3986 section 3 URI: scheme ":" hier-part ["?" query] ["#" fragment], with RFC 3986's
    // characters (unreserved, sub-delims, ":" "@" where allowed, %HH); hosts are reg-names (a dotted
    // quad is one too), without the bracketed IP literals.
    {"uri", R"re(^[A-Za-z][A-Za-z0-9+.-]*:(?://(?:(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*@)?(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*(?::[0-9]*)?(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*|/(?:(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?|(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?(?:\?(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?(?:#(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$)re"},
    // RFC 3986 section 4.1 URI-reference: a URI as above, or a relative-ref (section 4.2): "//"
    // authority and path, an absolute path, or a path whose first segment has no ":" (or none), then
    // the optional query and fragment.
    {"uri-reference", R"re(^(?:[A-Za-z][A-Za-z0-9+.-]*:(?://(?:(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*@)?(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*(?::[0-9]*)?(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*|/(?:(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?|(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?|//(?:(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*@)?(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*(?::[0-9]*)?(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*|/(?:(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?|(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})+(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*)?(?:\?(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?(?:#(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$)re"},
    // RFC 4122 section 3 string representation: 8-4-4-4-12 hex digits, either case.
    {"uuid", R"re(^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$)re"},
};

}  // namespace

std::optional<std::string> format_pattern(std::string_view format) {
  for (const auto& [name, pattern] : kFormats)
    if (name == format) return std::string(pattern);
  return std::nullopt;
}

}  // namespace nf::grammar
