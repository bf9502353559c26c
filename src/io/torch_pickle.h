#pragma once
// The part of Python's pickle that torch.save uses for a state dict, as a data reader: no code is
// ever run. Opcodes of protocols 2-5 that build None, booleans, integers, floats, strings, tuples,
// lists, dicts and the objects below; a global is accepted only when it is one of
//   collections.OrderedDict                       -> a dict
//   torch._utils._rebuild_tensor_v2 (and _rebuild_parameter, which wraps it)  -> a tensor reference
//   torch.<Type>Storage (Float, Double, Half, BFloat16, Int, Long, Bool)      -> a storage's type
// and persistent ids are torch's ('storage', type, key, location, numel). Anything else (another
// global, an opcode outside the subset, a stack that underflows, a memo index never set) is an
// nf::Error naming the file and the byte offset.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/dtype.h"

namespace nf::io {

struct PickledTensor {
  std::string storage_key;  // the member data/<key> of the archive holding its storage
  DType dtype = DType::f32;
  int64_t storage_numel = 0;  // elements in that storage
  int64_t offset = 0;         // of the tensor's first element in the storage, in elements
  std::vector<int64_t> shape, strides;
};

// The state dict a pickle holds: (name, tensor) in the pickle's order; `source` names the file.
std::vector<std::pair<std::string, PickledTensor>> read_pickled_state_dict(const unsigned char* data, size_t size,
                                                                            const std::string& source);

}  // namespace nf::io
