#pragma once
// An error answered to an HTTP client in OpenAI's shape, with its status:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "messages", "code": null}}
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace nf::serve {

class ApiError : public std::runtime_error {
 public:
  // status: the HTTP status (400, 401, 404, 413, 503, ...); type: OpenAI's error type
  // ("invalid_request_error", "authentication_error", "server_error"); param: the request field at
  // fault, or empty; code: a machine-readable code ("context_length_exceeded"), or empty.
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "");
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // The body: {"error": {"message", "type", "param", "code"}}, param and code null when empty.
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// A 400 invalid_request_error naming the field at fault.
ApiError invalid_request(const std::string& param, const std::string& message, const std::string& code = "");

}  // namespace nf::serve
