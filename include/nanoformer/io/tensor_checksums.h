#pragma once
// Checksums of nanoformer's own files (checkpoints, training checkpoints, LoRA adapters): the
// XXH3-64 hash of every tensor's bytes (libxxhash), kept in the safetensors header metadata under
// "checksums" as one JSON string, {"tensor name": "16 hex digits", ...}, so that a flipped bit
// anywhere in the data is found on load and named. Hashing runs at memory speed, one thread per
// tensor (docs/training.md gives its cost beside a checkpoint's load time).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/tensor.h"
#include "nanoformer/io/safetensors.h"

namespace nf::io {

inline constexpr const char* kChecksumsKey = "checksums";

// XXH3-64 of `bytes` bytes at `data` (seeded: the checksum of what came before, to chain pieces).
uint64_t bytes_checksum(const void* data, size_t bytes, uint64_t seed = 0);
// A checksum as the 16 hex digits files store, and back (an nf::Error naming `what` for other text).
std::string checksum_hex(uint64_t checksum);
uint64_t checksum_from_hex(const std::string& hex, const std::string& what);
// The "checksums" metadata value for tensors about to be written (their bytes in row-major order).
std::string tensor_checksums(const std::vector<std::pair<std::string, Tensor>>& tensors);
// Whether the file carries checksums at all.
bool has_tensor_checksums(const SafetensorsFile& file);
// Checks the named tensors of `file` (all of them when `names` is empty) against its checksums.
// Throws nf::Error naming the file and the first damaged tensor ("tensor 'w' does not match its
// checksum: the file is damaged"), a tensor without a checksum, or a malformed "checksums" value.
void verify_tensor_checksums(const SafetensorsFile& file, const std::vector<std::string>& names = {});

}  // namespace nf::io
