// Reading request bodies field by field, with OpenAI's errors: every problem is an ApiError
// (400) naming the field. Absent and null both mean "not given". Shared by every route that
// takes a JSON body (completions and chat, embeddings, tokenize, the extension fields,
// structured output, tools).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace tzero::server::json_fields {

// A 400 for `param` (code: invalid_value unless said).
inline ApiError bad(const std::string& param, const std::string& message,
                    const std::string& code = "invalid_value") {
  return ApiError(400, message, param, code);
}

// "Invalid type for 'param': expected WANT, but got TYPE." (code invalid_type).
template <class Json>
ApiError wrong_type(const std::string& param, const Json& v, const std::string& want) {
  return bad(
      param,
      "Invalid type for '" + param + "': expected " + want + ", but got " + v.type_name() + ".",
      "invalid_type");
}

// The field, or nullptr when absent or null.
template <class Json>
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// The body parsed as a JSON object (invalid_json otherwise: not JSON, nested deeper than
// kMaxJsonDepth (base/bounded_json.h; the message names the limit), or not an object).
nlohmann::json parse_object(const std::string& text);

// A number in [lo, hi] ((lo, hi] when lo_open), finite.
std::optional<double> get_number(const nlohmann::json& body, const char* name, double lo, double hi,
                                 bool lo_open = false);
// Any finite number.
std::optional<double> get_finite(const nlohmann::json& body, const char* name);
// An integer in [lo, hi].
std::optional<int64_t> get_int(const nlohmann::json& body, const char* name, int64_t lo,
                               int64_t hi);
std::optional<bool> get_bool(const nlohmann::json& body, const char* name);

}  // namespace tzero::server::json_fields
