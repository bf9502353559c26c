#pragma once
// Shared by the safetensors reader and writer.
#include <string>

namespace nf::io {

// "safetensors: <path>: ", the start of every error message about a file.
std::string file_context(const std::string& path);

}  // namespace nf::io
