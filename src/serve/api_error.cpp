// OpenAI-shaped errors (serve/api_error.h).
#include "nanoformer/serve/api_error.h"

namespace nf::serve {

ApiError::ApiError(int status, std::string message, std::string type, std::string param, std::string code)
    : std::runtime_error(std::move(message)), status_(status), type_(std::move(type)), param_(std::move(param)),
      code_(std::move(code)) {}

nlohmann::json ApiError::body() const {
  const auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", what()}, {"type", type_}, {"param", or_null(param_)}, {"code", or_null(code_)}}}};
}

ApiError invalid_request(const std::string& param, const std::string& message, const std::string& code) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

}  // namespace nf::serve
