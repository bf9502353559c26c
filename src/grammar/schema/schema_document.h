#pragma once
// A JSON Schema document as its draft reads it: which draft (from the root's `$schema`), which
// keywords that draft gives meaning to, and where a `$ref` points (JSON pointers with their ~0 ~1
// and %-escapes, `$id` / `id` bases and `$anchor` / "#name" anchors inside the document).
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nf::grammar {

enum class Draft { draft4, draft6, draft7, draft2019, draft2020 };

class SchemaDocument {
 public:
  using json = nlohmann::ordered_json;
  explicit SchemaDocument(const json& root);

  Draft draft() const { return draft_; }
  // Whether `keyword` asserts something in this draft (the rest are annotations or unknown: ignored).
  bool asserts(std::string_view keyword) const;
  // Whether a `$ref` replaces its siblings (drafts 4 to 7) rather than joining them (2019-09 on).
  bool ref_overrides_siblings() const { return draft_ <= Draft::draft7; }
  // The schema `ref` names (found at `where`); throws nf::Error naming it when it is not in this
  // document (remote references are not fetched).
  const json& resolve(const std::string& ref, const std::string& where) const;

 private:
  void index_ids(const json& node, int depth);

  const json& root_;
  Draft draft_ = Draft::draft2020;
  std::map<std::string, const json*> ids_;      // `$id` / `id` (and their last path segment) -> schema
  std::map<std::string, const json*> anchors_;  // `$anchor` and draft-4..7 "#name" ids -> schema
};

}  // namespace nf::grammar
