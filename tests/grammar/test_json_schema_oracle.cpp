// The JSON Schema compiler (grammar/json_schema.h) held to an oracle that is not nanoformer's: the
// Python `jsonschema` package. tests/fixtures/grammar/schema_cases.json, made by
// tools/grammar/make_schema_fixtures.py (rerun it to change the cases), holds schemas grouped by
// keyword, each with instances as the exact text a grammar sees, labelled by jsonschema (with
// format checking) and marked canonical when they are in the form the compiler promises it can
// generate. For every schema a strict json_schema_grammar() followed by compile_gbnf() must succeed,
// and its grammar must be
//   sound:    no text that jsonschema rejects is a sentence of the grammar;
//   complete: every canonical text that jsonschema accepts is a sentence.
// Schemas marked "either" are context-free but hard: a refusal is allowed, a compiled grammar must
// be sound and complete. Schemas whose assertions no context-free grammar expresses must be
// refused with an nf::Error naming the keyword's path.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/grammar.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/grammar/matcher.h"

namespace nf::grammar {
namespace {

using json = nlohmann::ordered_json;  // keeps the properties' order, which the grammar follows

constexpr int kReportedPerSchema = 5;  // failing instances named per schema (then a count)

const json& fixture() {
  static const json doc = [] {
    const std::string path = std::string(NF_TEST_DATA_DIR) + "/grammar/schema_cases.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open " + path + " (made by tools/grammar/make_schema_fixtures.py)");
    return json::parse(in);
  }();
  return doc;
}

// The grammar of `schema` (strict), or the error that refused it in `error`.
std::shared_ptr<const Grammar> compile_schema(const json& schema, std::string& error) {
  try {
    return std::make_shared<const Grammar>(compile_gbnf(json_schema_grammar(schema).gbnf));
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = std::string("not an nf::Error: ") + e.what();
  }
  return nullptr;
}

// Whether `text` is a whole sentence of the grammar.
bool is_sentence(const std::shared_ptr<const Grammar>& grammar, const std::string& text) {
  GrammarMatcher m(grammar);
  return m.accept(text) && GrammarMatcher::can_end(m.state());
}

// Whether the error names `path` ("#/properties/tags/uniqueItems"): the whole pointer (with or
// without "#"), or the keyword (quoted: 'k', "k" or `k`) and the pointer of the schema that holds it.
bool names_path(const std::string& error, const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string parent = path.substr(0, slash), keyword = path.substr(slash + 1);
  const auto has = [&](const std::string& s) { return error.find(s) != std::string::npos; };
  const bool names_keyword = has("'" + keyword + "'") || has("\"" + keyword + "\"") || has("`" + keyword + "`");
  return has(path) || has(path.substr(1)) || (names_keyword && (parent == "#" || has(parent)));
}

struct GroupCount {
  int schemas = 0, compiled = 0, clean = 0;  // clean: compiled, sound and complete on every instance
};

TEST(JsonSchemaOracle, CompiledGrammarsAreSoundAndCompleteAgainstJsonschema) {
  const json& cases = fixture().at("cases");
  ASSERT_FALSE(cases.empty());
  std::map<std::string, GroupCount> groups;
  int checked = 0;
  for (const json& c : cases) {
    const std::string id = c.at("group").get<std::string>() + "/" + c.at("id").get<std::string>();
    const std::string expect = c.at("expect").get<std::string>();
    GroupCount& count = groups[c.at("group").get<std::string>()];
    ++count.schemas;
    std::string error;
    const auto grammar = compile_schema(c.at("schema"), error);
    if (!grammar) {
      if (expect == "compile")
        ADD_FAILURE() << "[" << id << "] a strict compile refused a schema it must compile: " << error
                      << "\n  schema: " << c.at("schema").dump();
      else
        EXPECT_EQ(error.rfind("not an nf::Error", 0), std::string::npos) << "[" << id << "] " << error;
      continue;
    }
    ++count.compiled;
    int failures = 0;
    for (const json& instance : c.at("instances")) {
      const std::string text = instance.at("text").get<std::string>();
      const bool valid = instance.at("valid").get<bool>(), canonical = instance.at("canonical").get<bool>();
      bool ok = false;
      try {
        ok = is_sentence(grammar, text);
      } catch (const Error& e) {
        if (++failures <= kReportedPerSchema) ADD_FAILURE() << "[" << id << "] the matcher failed on " << text << ": " << e.what();
        continue;
      }
      ++checked;
      const char* fault = nullptr;
      if (ok && !valid) fault = "accepts text that jsonschema rejects (unsound)";
      if (!ok && valid && canonical) fault = "rejects canonical text that jsonschema accepts (incomplete)";
      if (fault && ++failures <= kReportedPerSchema)
        ADD_FAILURE() << "[" << id << "] " << fault << ": " << text << "\n  schema: " << c.at("schema").dump();
    }
    if (failures > kReportedPerSchema)
      ADD_FAILURE() << "[" << id << "] and " << failures - kReportedPerSchema << " more failing instances";
    if (failures == 0) ++count.clean;
  }
  EXPECT_GT(checked, 0) << "no instance was matched";
  std::printf("JSON Schema oracle, schemas per keyword group: compiled (strict) / sound and complete / all\n");
  for (const auto& [group, count] : groups)
    std::printf("  %-22s %3d / %3d / %3d\n", group.c_str(), count.compiled, count.clean, count.schemas);
}

TEST(JsonSchemaOracle, InexpressibleSchemasAreRefusedNamingTheKeywordPath) {
  const json& refused = fixture().at("refused");
  ASSERT_FALSE(refused.empty());
  int named = 0;
  for (const json& c : refused) {
    const std::string id = c.at("id").get<std::string>(), path = c.at("path").get<std::string>();
    std::string error;
    if (compile_schema(c.at("schema"), error)) {
      ADD_FAILURE() << "[refused/" << id << "] a strict compile accepted a schema no grammar expresses (" << path
                    << "): " << c.at("schema").dump();
      continue;
    }
    EXPECT_EQ(error.rfind("not an nf::Error", 0), std::string::npos) << "[refused/" << id << "] " << error;
    if (names_path(error, path))
      ++named;
    else
      ADD_FAILURE() << "[refused/" << id << "] the error does not name " << path << ": " << error;
  }
  std::printf("JSON Schema oracle: %d of %zu inexpressible schemas refused naming their keyword path\n", named,
              refused.size());
}

}  // namespace
}  // namespace nf::grammar
