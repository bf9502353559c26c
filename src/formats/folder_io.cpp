// Folder helpers shared by the interop readers and writers (see folder_io.h).
#include "formats/folder_io.h"

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "formats/pretrained_config_keys.h"
#include "util/json_input.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/torch_checkpoint.h"

namespace nf::formats {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  NF_CHECK(in.good(), path.string(), ": cannot open");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text_atomic(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    NF_CHECK(out.good(), "cannot write ", tmp.string());
  }
  fs::rename(tmp, path);
}

Json parse_json_object(const std::string& text, const std::string& source) {
  const Json j = util::parse_json(text, source + ": ");
  NF_CHECK(j.is_object(), source, ": expected a JSON object");
  return j;
}

const Json& required(const Json& j, const std::string& key, const std::string& source) {
  NF_CHECK(j.contains(key) && !j.at(key).is_null(), source, ": missing key '", key, "'");
  return j.at(key);
}

int64_t int_key(const Json& j, const std::string& key, const std::string& source) {
  const Json& v = required(j, key, source);
  NF_CHECK(v.is_number_integer(), source, ": '", key, "' is ", util::json_excerpt(v), ", expected an integer");
  return v.get<int64_t>();
}

int64_t int_key(const Json& j, const std::string& key, int64_t fallback, const std::string& source) {
  return j.contains(key) && !j.at(key).is_null() ? int_key(j, key, source) : fallback;
}

double number_key(const Json& j, const std::string& key, double fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  NF_CHECK(j.at(key).is_number(), source, ": '", key, "' is ", util::json_excerpt(j.at(key)), ", expected a number");
  return j.at(key).get<double>();
}

bool bool_key(const Json& j, const std::string& key, bool fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  NF_CHECK(j.at(key).is_boolean(), source, ": '", key, "' is ", util::json_excerpt(j.at(key)), ", expected true or false");
  return j.at(key).get<bool>();
}

// Every key of `j` is mapped or one of transformers' generic keys; otherwise an error naming the first that is not.
void check_known_keys(const Json& j, const std::set<std::string>& mapped, const std::string& family,
                      const std::string& source) {
  for (const auto& [key, value] : j.items())
    NF_CHECK(mapped.count(key) || is_generic_pretrained_config_key(key, value, source), source, ": unknown ", family,
             " config key '", key, "'");
}

namespace {

// The weight_map of a shard index, refusing a tensor listed twice.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  std::set<std::string> seen;
  std::string duplicate;
  bool in_weight_map = false;
  const Json::parser_callback_t on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1) in_weight_map = parsed.get<std::string>() == "weight_map";
    if (event == Json::parse_event_t::key && depth == 2 && in_weight_map && !seen.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  const std::string text = read_text(index_path);
  NF_CHECK(util::json_depth(text, util::kMaxJsonDepth) <= util::kMaxJsonDepth, index_path.string(), ": nests deeper than ",
           util::kMaxJsonDepth, " levels");
  try {
    const Json index = Json::parse(text, on_event);
    NF_CHECK(duplicate.empty(), index_path.string(), ": tensor '", duplicate, "' is listed twice in the weight_map");
    NF_CHECK(index.contains("weight_map") && index.at("weight_map").is_object(), index_path.string(),
             ": no 'weight_map' object");
    return index.at("weight_map").get<std::map<std::string, std::string>>();
  } catch (const Json::exception& e) {
    NF_FAIL(index_path.string(), ": not a valid shard index (", e.what(), ")");
  }
}

std::map<std::string, Tensor> read_sharded(const fs::path& dir, const std::string& index_file) {
  const fs::path index_path = dir / index_file;
  std::map<std::string, std::string> shard_of = read_weight_map(index_path);
  std::map<std::string, io::SafetensorsFile> shards;
  for (const auto& [tensor, shard] : shard_of)
    if (!shards.count(shard)) {
      NF_CHECK(fs::is_regular_file(dir / shard), index_path.string(), ": shard '", shard, "' (holding ", tensor,
               ") is missing");
      shards.emplace(shard, io::SafetensorsFile::open((dir / shard).string()));
    }
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> found_in;
  for (const auto& [shard, file] : shards)
    for (const io::TensorEntry& e : file.entries()) {
      NF_CHECK(!found_in.count(e.name), index_path.string(), ": tensor '", e.name, "' is in two shards, ",
               found_in[e.name], " and ", shard);
      found_in[e.name] = shard;
      NF_CHECK(shard_of.count(e.name) && shard_of.at(e.name) == shard, index_path.string(), ": tensor '", e.name,
               "' is in shard ", shard, " but the weight_map says ",
               shard_of.count(e.name) ? shard_of.at(e.name) : std::string("nothing"));
      tensors[e.name] = file.view(e.name);
    }
  for (const auto& [tensor, shard] : shard_of)
    NF_CHECK(found_in.count(tensor), index_path.string(), ": tensor '", tensor, "' is not in its shard ", shard);
  return tensors;
}

}  // namespace

std::map<std::string, Tensor> read_folder_tensors(const fs::path& dir, const std::string& weights_file,
                                                  const std::string& index_file) {
  if (!fs::exists(dir / weights_file)) {
    if (const std::string torch_file = torch_weights_in(dir); !torch_file.empty() && !fs::exists(dir / index_file))
      return io::load_torch_checkpoint(torch_file);
    return read_sharded(dir, index_file);
  }
  const io::SafetensorsFile file = io::SafetensorsFile::open((dir / weights_file).string());
  std::map<std::string, Tensor> tensors;
  for (const io::TensorEntry& e : file.entries()) tensors[e.name] = file.view(e.name);
  return tensors;
}

std::string torch_weights_in(const fs::path& dir) {
  if (fs::is_regular_file(dir / kTorchWeightsFile)) return (dir / kTorchWeightsFile).string();
  std::vector<fs::path> pth;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".pth" && entry.is_regular_file()) pth.push_back(entry.path());
  NF_CHECK(pth.size() <= 1, dir.string(), ": ", pth.size(), " .pth files (", pth[0].filename().string(), ", ",
           pth[1].filename().string(), ", ...): keep the one to load");
  return pth.empty() ? std::string() : pth[0].string();
}

namespace {

std::string shard_name(size_t k, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k, n);
  return name;
}

bool is_weights_file(const std::string& name) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  return name == kWeightsFile || name == kIndexFile || std::regex_match(name, shard);
}

}  // namespace

void write_folder_tensors(const fs::path& dir, const std::vector<nn::NamedTensor>& tensors, int64_t max_shard_bytes) {
  NF_CHECK(max_shard_bytes >= 0, dir.string(), ": the maximum shard size must be >= 0 bytes (0 = one file), got ",
           max_shard_bytes);
  std::vector<std::vector<nn::NamedTensor>> shards(1);
  int64_t shard_bytes = 0, total_bytes = 0;
  for (const auto& named : tensors) {
    const int64_t bytes = named.second.numel() * static_cast<int64_t>(named.second.itemsize());
    if (max_shard_bytes > 0 && !shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(named);
    shard_bytes += bytes;
    total_bytes += bytes;
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  std::set<std::string> written;
  if (shards.size() == 1) {
    io::save_safetensors((dir / kWeightsFile).string(), tensors, metadata);
    written.insert(kWeightsFile);
  } else {
    Json weight_map = Json::object();
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string name = shard_name(k + 1, shards.size());
      io::save_safetensors((dir / name).string(), shards[k], metadata);
      for (const auto& named : shards[k]) weight_map[named.first] = name;
      written.insert(name);
    }
    const Json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    write_text_atomic(dir / kIndexFile, index.dump(2) + "\n");
    written.insert(kIndexFile);
  }
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir))
    if (is_weights_file(entry.path().filename().string()) && !written.count(entry.path().filename().string()))
      stale.push_back(entry.path());
  for (const fs::path& path : stale) fs::remove(path);
}

}  // namespace nf::formats
