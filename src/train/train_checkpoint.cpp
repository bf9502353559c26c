// Training checkpoints: model + optimizer state + run state in one atomically written file.
#include "nanoformer/train/train_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "nanoformer/core/error.h"
#include "nanoformer/formats/checkpoint.h"
#include "nanoformer/formats/lora_adapter.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/io/tensor_checksums.h"
#include "nanoformer/train/critic.h"
#include "util/json_input.h"

namespace nf::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kOptimizerPrefix = "train/optimizer/";

json state_to_json(const TrainState& s) {
  json generators = json::object();
  for (const auto& [name, state] : s.generators) generators[name] = {state.first, state.second};
  json files = json::array();
  for (const data::FileFingerprint& f : s.data_files)
    files.push_back({{"path", f.path}, {"size", f.size}, {"hash", io::checksum_hex(f.hash)}});
  json out = {{"step", s.step},           {"tokens", s.tokens},
              {"loss_scale", s.loss_scale}, {"good_steps", s.good_steps},
              {"best_val_loss", s.best_val_loss}, {"generators", generators},
              {"data_files", files}};
  if (s.next_batch_loss) out["next_batch_loss"] = *s.next_batch_loss;
  return out;
}

TrainState state_from_json(const json& j) {
  TrainState s;
  s.step = j.at("step").get<int64_t>();
  s.tokens = j.at("tokens").get<int64_t>();
  s.loss_scale = j.at("loss_scale").get<double>();
  s.good_steps = j.at("good_steps").get<int64_t>();
  s.best_val_loss = j.at("best_val_loss").get<double>();
  for (auto it = j.at("generators").begin(); it != j.at("generators").end(); ++it)
    s.generators[it.key()] = {it.value().at(0).get<uint64_t>(), it.value().at(1).get<uint64_t>()};
  for (const json& f : j.value("data_files", json::array()))  // absent in checkpoints of older runs
    s.data_files.push_back({f.at("path").get<std::string>(), f.at("size").get<uint64_t>(),
                            io::checksum_from_hex(f.at("hash").get<std::string>(), "train_state: data file hash")});
  if (j.contains("next_batch_loss")) s.next_batch_loss = j.at("next_batch_loss").get<double>();
  return s;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "ckpt_%08lld.safetensors", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir) {
  static const std::regex kName(R"(ckpt_(\d{8,})\.safetensors)");
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(name, m, kName))
      out.emplace_back(std::stoll(m[1].str()), entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string newest_intact_checkpoint(const std::string& dir) {
  const auto all = list_checkpoints(dir);
  NF_CHECK(!all.empty(), "train --resume: no checkpoint (ckpt_*.safetensors) in ", dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const std::string& path = it->second;
    const std::string critic = critic_path(path);  // PPO's critic beside it, if any
    try {
      (void)read_train_checkpoint(path);
      formats::verify_checkpoint_tensors(io::SafetensorsFile::open(path), {});
      if (fs::exists(critic)) io::verify_tensor_checksums(io::SafetensorsFile::open(critic));
      return path;
    } catch (const Error& e) {
      const std::string kept = path + ".damaged";
      std::error_code ec;  // another rank of the run may have renamed it already
      fs::rename(path, kept, ec);
      if (fs::exists(critic)) fs::rename(critic, critic + ".damaged", ec);
      std::fprintf(stderr, "train --resume: %s\n  it is kept as %s; trying the checkpoint before it\n", e.what(),
                   kept.c_str());
    }
  }
  NF_FAIL("train --resume: no checkpoint in ", dir, " verifies (each is kept as <name>.damaged)");
}

void prune_checkpoints(const std::string& dir, int64_t keep) {
  const auto all = list_checkpoints(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) {
    fs::remove(all[i].second);
    fs::remove(critic_path(all[i].second));  // PPO's critic beside it, if any
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ckpt_", 0) == 0 && name.find(".safetensors.tmp.") != std::string::npos) fs::remove(entry.path());
  }
}

std::map<std::string, std::pair<uint64_t, uint64_t>> generator_states(models::Model& model) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  for (const auto& [name, gen] : model.named_generators()) out[name] = {gen->seed(), gen->offset()};
  return out;
}

void restore_generators(models::Model& model, const std::map<std::string, std::pair<uint64_t, uint64_t>>& states,
                        const std::string& source) {
  const auto own = model.named_generators();
  NF_CHECK(own.size() == states.size(), source, ": holds ", states.size(), " random generator states, the model has ",
           own.size());
  for (const auto& [name, gen] : own) {
    auto it = states.find(name);
    NF_CHECK(it != states.end(), source, ": no random generator state for '", name, "'");
    gen->set_state(it->second.first, it->second.second);
  }
}

void save_train_checkpoint(const std::string& path, const models::Model& model, const optim::OptimizerSet& optimizer,
                           const TrainConfig& config, const TrainState& state) {
  save_train_checkpoint(path, model, optimizer.state_dict(), config, state);
}

void save_train_checkpoint(const std::string& path, const models::Model& model, const nn::StateDict& optimizer_state,
                           const TrainConfig& config, const TrainState& state) {
  std::vector<nn::NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
  if (config.lora) {  // the adapters alone: the base stays where lora_base_path says
    tensors = models::lora_parameters(model);
    metadata = formats::lora_adapter_metadata(model, *config.lora, lora_base_path(config));
  } else {
    tensors = model.named_parameters();
    const nn::StateDict model_state = model.state_dict();
    for (auto& buffer : model.named_buffers())
      if (model_state.count(buffer.first)) tensors.push_back(buffer);
    metadata = formats::checkpoint_metadata(model);
  }
  for (const auto& [name, tensor] : optimizer_state) tensors.emplace_back(kOptimizerPrefix + name, tensor);
  metadata[io::kChecksumsKey] = io::tensor_checksums(tensors);  // the optimizer state's too
  metadata["train_state"] = state_to_json(state).dump();
  metadata["train_config"] = train_config_to_json(config);
  io::save_safetensors(path, tensors, metadata);
}

TrainCheckpoint read_train_checkpoint(const std::string& path) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const auto& meta = file.metadata();
  auto state = meta.find("train_state");
  auto config = meta.find("train_config");
  NF_CHECK(state != meta.end() && config != meta.end(), path,
           ": not a training checkpoint (no train_state / train_config in its metadata)");
  TrainCheckpoint c;
  c.path = path;
  c.config = train_config_from_json(config->second, path + ": train_config");
  const json state_json = util::parse_json(state->second, path + ": train_state: ");
  try {
    c.state = state_from_json(state_json);
  } catch (const json::exception& e) {
    NF_FAIL(path, ": train_state is malformed (", e.what(), ")");
  } catch (const Error& e) {
    NF_FAIL(path, ": train_state is malformed (", e.what(), ")");
  }
  return c;
}

void load_optimizer_state(const std::string& path, optim::OptimizerSet& optimizer) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  nn::StateDict state;
  std::vector<std::string> names;
  const std::string prefix = kOptimizerPrefix;
  for (const io::TensorEntry& entry : file.entries())
    if (entry.name.rfind(prefix, 0) == 0) names.push_back(entry.name);
  formats::verify_checkpoint_tensors(file, names);
  for (const std::string& name : names) state[name.substr(prefix.size())] = file.view(name).clone();
  try {
    optimizer.load_state_dict(state);
  } catch (const Error& e) {
    throw Error(path + ": optimizer state: " + e.what());
  }
}

}  // namespace nf::train
