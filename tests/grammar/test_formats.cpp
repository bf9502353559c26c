// format_pattern (grammar/schema/formats.h) compiled by Automaton::regex (grammar/regex.h), against
// tests/fixtures/grammar/format_cases.json (tools/grammar/make_format_fixtures.py: strings labelled
// by Python's jsonschema FormatChecker and the RFCs). Sound: every string a pattern's automaton
// matches is valid. Useful: it matches the common valid forms. And it agrees with Python's
// re.fullmatch of the same pattern on every string.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/schema/formats.h"
#include "nanoformer/grammar/regex.h"

namespace nf::grammar {
namespace {

using json = nlohmann::json;

json format_cases() {
  const std::string path = std::string(NF_TEST_DATA_DIR) + "/grammar/format_cases.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return json::parse(in);
}

TEST(Formats, PatternsMatchOnlyValidStringsAndTheCommonForms) {
  const json fixture = format_cases();
  std::map<std::string, Automaton> automata;
  for (const auto& [format, entry] : fixture["formats"].items()) {
    SCOPED_TRACE(format);
    const std::optional<std::string> pattern = format_pattern(format);
    ASSERT_TRUE(pattern.has_value());
    ASSERT_EQ(*pattern, entry["pattern"].get<std::string>()) << "the fixture is stale: rerun make_format_fixtures.py";
    automata.emplace(format, Automaton::regex(*pattern));
  }
  EXPECT_EQ(automata.size(), 11u);
  ASSERT_GT(fixture["cases"].size(), 1000u);
  for (const json& c : fixture["cases"]) {
    const std::string format = c["format"], s = c["string"];
    SCOPED_TRACE(format + " '" + s + "'");
    const bool matches = automata.at(format).matches(s);
    if (matches) {
      EXPECT_TRUE(c["valid"].get<bool>()) << "matches a string the format refuses";
    }
    if (c["common"].get<bool>()) {
      EXPECT_TRUE(matches) << "misses a common form";
    }
    EXPECT_EQ(matches, c["matches"].get<bool>()) << "differs from Python's re.fullmatch";
  }
}

TEST(Formats, UnlistedFormatsAreLeftFree) {
  EXPECT_FALSE(format_pattern("color").has_value());
  EXPECT_FALSE(format_pattern("").has_value());
  EXPECT_FALSE(format_pattern("Date").has_value());
}

}  // namespace
}  // namespace nf::grammar
