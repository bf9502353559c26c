#include "support/golden.h"

#include <filesystem>

#include "nanoformer/core/error.h"

namespace nf::testing {

std::string golden_path(const std::string& fixture) { return std::string(NF_GOLDEN_DIR) + "/" + fixture + ".safetensors"; }

namespace {
io::SafetensorsFile open_fixture(const std::string& fixture) {
  const std::string path = golden_path(fixture);
  NF_CHECK(std::filesystem::exists(path), "golden fixture '", fixture, "' is missing: ", path,
           " (regenerate the fixtures with `make golden`)");
  io::SafetensorsFile file = io::SafetensorsFile::open(path);
  for (const char* key : {"torch_version", "cases"}) {
    NF_CHECK(file.metadata().count(key) != 0, "golden fixture ", path, " has no '", key,
             "' in its metadata (not written by tools/golden/generate_all.py?)");
  }
  return file;
}
}  // namespace

Golden::Golden(const std::string& fixture)
    : fixture_(fixture), file_(open_fixture(fixture)), cases_(nlohmann::json::parse(file_.metadata().at("cases"))) {
  NF_CHECK(cases_.is_object() && !cases_.empty(), "golden fixture ", file_.path(), " lists no cases");
}

bool Golden::has(const std::string& case_name, const std::string& role) const {
  return file_.contains(case_name + "." + role);
}

Tensor Golden::get(const std::string& case_name, const std::string& role) const {
  const std::string key = case_name + "." + role;
  NF_CHECK(file_.contains(key), "golden fixture '", fixture_, "' (", file_.path(), ") has no tensor '", key,
           "' (regenerate the fixtures with `make golden`)");
  return file_.load(key);
}

Tensor Golden::input(const std::string& case_name, const std::string& role) const {
  Tensor t = get(case_name, role);
  t.set_requires_grad(true);
  return t;
}

const std::string& Golden::torch_version() const { return file_.metadata().at("torch_version"); }

}  // namespace nf::testing
