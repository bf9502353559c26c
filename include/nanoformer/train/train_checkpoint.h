#pragma once
// A training checkpoint: a nanoformer model checkpoint (formats/checkpoint.h: load_model and every
// command read it as the model it holds) that also carries what a run needs to continue exactly:
//   tensors "train/optimizer/<name>"  the optimizer state (OptimizerSet::state_dict)
//   metadata "train_state"            {"step", "tokens", "loss_scale", "good_steps", "best_val_loss",
//                                      "generators": {module: [seed, offset]},
//                                      "data_files": [{"path", "size", "hash"}], "next_batch_loss"}
//   metadata "checksums"              every tensor's XXH3-64 (io/tensor_checksums.h), verified on load
//   metadata "train_config"           the TrainConfig (train_config_to_json)
// A LoRA run's checkpoint is an adapter-only file instead (formats/lora_adapter.h: `nanoformer lora
// merge` and load_lora_adapter read it): the adapters, their optimizer state and the same run
// metadata, with the base named by lora_base_path.
// Files are DIR/ckpt_<step, 8 digits>.safetensors, each written to a temporary file, fsynced and
// renamed (io::save_safetensors), so a crash mid-write leaves the previous checkpoint whole.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/data/data_fingerprint.h"
#include "nanoformer/models/model.h"
#include "nanoformer/optim/optimizer_set.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

struct TrainState {
  int64_t step = 0;        // optimizer steps done
  int64_t tokens = 0;      // target tokens trained on
  double loss_scale = 0;   // fp16's dynamic loss scale (0 when unused)
  int64_t good_steps = 0;  // fp16: finite steps since the scale last changed
  double best_val_loss = 0;  // 0 = none yet
  std::map<std::string, std::pair<uint64_t, uint64_t>> generators;  // module -> (seed, offset)
  std::vector<data::FileFingerprint> data_files;  // recorded at the start, in data_files(config.data)'s order
  // The loss of the next step's first micro-batch (eval mode) when the checkpoint was written; a
  // resume computes it again before its first step and refuses to go on when it differs (absent
  // from checkpoints written before it was recorded).
  std::optional<double> next_batch_loss;
};

struct TrainCheckpoint {
  std::string path;
  TrainConfig config;
  TrainState state;
};

// DIR/ckpt_00000500.safetensors
std::string checkpoint_path(const std::string& dir, int64_t step);
// The checkpoints in dir by step, oldest first (temporary files of interrupted writes are not listed).
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir);
// The newest checkpoint in dir that verifies (its run state parses and every tensor matches its
// checksum, and those of PPO's critic beside it). A newer one that does not is renamed to
// "<name>.damaged" (kept, so neither overwritten nor pruned later; its critic too) and reported on
// stderr, naming the file and the damaged tensor. An nf::Error
// naming the directory when it holds no checkpoint, or none that verifies.
std::string newest_intact_checkpoint(const std::string& dir);
// Removes all but the newest `keep` checkpoints, and temporary files left by interrupted writes.
void prune_checkpoints(const std::string& dir, int64_t keep);

// The positions of the model's generators (Module::named_generators), and their restoration
// (an nf::Error naming a generator the model lacks or has in addition).
std::map<std::string, std::pair<uint64_t, uint64_t>> generator_states(models::Model& model);
void restore_generators(models::Model& model, const std::map<std::string, std::pair<uint64_t, uint64_t>>& states,
                        const std::string& source);

void save_train_checkpoint(const std::string& path, const models::Model& model, const optim::OptimizerSet& optimizer,
                           const TrainConfig& config, const TrainState& state);
// The same with the optimizer state given as a state dict (ZeRO-1 gathers it to rank 0).
void save_train_checkpoint(const std::string& path, const models::Model& model, const nn::StateDict& optimizer_state,
                           const TrainConfig& config, const TrainState& state);
// The config and state of a training checkpoint (an nf::Error naming the file when it holds none).
TrainCheckpoint read_train_checkpoint(const std::string& path);
// Loads the optimizer state stored in a training checkpoint.
void load_optimizer_state(const std::string& path, optim::OptimizerSet& optimizer);

}  // namespace nf::train
