// The error every server failure is reported as: an HTTP status and OpenAI's error object
//   {"error": {"message": ..., "type": ..., "param": ... | null, "code": ... | null}}
// (docs/SERVER.md, "Errors"). Thrown by request parsing and caught by the HTTP layer.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tzero/engine.h"

namespace tzero::server {

struct ApiError : std::runtime_error {
  ApiError(int status_, const std::string& message, std::string param_ = "", std::string code_ = "",
           std::string type_ = "")
      : std::runtime_error(message),
        status(status_),
        param(std::move(param_)),
        code(std::move(code_)),
        type(type_.empty() ? default_type(status_) : std::move(type_)) {}

  int status;
  std::string param;  // the offending request field ("" -> null)
  std::string code;   // a machine-readable code ("" -> null)
  std::string type;   // invalid_request_error, authentication_error, ...

  nlohmann::json to_json() const {
    nlohmann::json e = {{"message", what()},
                        {"type", type},
                        {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                        {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
    return nlohmann::json{{"error", e}};
  }

  static std::string default_type(int status) {
    switch (status) {
      case 401:
        return "authentication_error";
      case 404:
        return "not_found_error";
      case 429:
        return "rate_limit_error";
      case 503:
        return "server_error";
      default:
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
  }
};

// The engine's refusal as OpenAI reports it: 400, the field it names, and the code
// context_length_exceeded (the prompt, or prompt + max_tokens, does not fit),
// grammar_budget_exceeded (the grammar's start alone is over its matching budget) or
// invalid_value.
inline ApiError api_error_of(const tzero::RequestError& e) {
  const char* code = "invalid_value";
  if (e.kind == tzero::RequestErrorKind::context_length_exceeded) code = "context_length_exceeded";
  if (e.kind == tzero::RequestErrorKind::grammar_budget) code = "grammar_budget_exceeded";
  return ApiError(400, e.what(), e.param, code);
}

// JSON text that never throws on invalid UTF-8 (token pieces may be single bytes): bad bytes
// become U+FFFD.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tzero::server
