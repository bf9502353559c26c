#pragma once
// PyTorch checkpoint files as torch.save writes them since PyTorch 1.6 (nanochat's model_<step>.pt,
// MiniMind's .pth): a zip archive of stored members, <archive>/data.pkl (the pickled state dict)
// and <archive>/data/<key> (each storage's bytes, little-endian). Read without Python and without
// running any pickled code (io/torch_pickle.h); every tensor is checked against its storage (its
// type, size, offset and strides inside it) before anything is allocated, and an error names the
// file and the tensor. The legacy format (PyTorch < 1.6, or _use_new_zipfile_serialization=False)
// is refused by name. Tensors come out contiguous in their own dtype (f32, f64, f16, bf16, i32,
// i64, bool), named as in the state dict.
#include <map>
#include <string>

#include "nanoformer/core/tensor.h"

namespace nf::io {

std::map<std::string, Tensor> load_torch_checkpoint(const std::string& path);

}  // namespace nf::io
