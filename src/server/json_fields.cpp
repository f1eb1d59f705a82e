// Request fields with OpenAI's errors (server/json_fields.h).
#include "server/json_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "base/bounded_json.h"

namespace tzero::server::json_fields {

using nlohmann::json;

json parse_object(const std::string& text) {
  json body;
  try {
    body = parse_json_bounded<json>(text);  // nested past kMaxJsonDepth: a parse error
  } catch (const json::exception& e) {
    throw ApiError(400,
                   std::string("We could not parse the JSON body of your request: ") + e.what(), "",
                   "invalid_json");
  }
  if (!body.is_object())
    throw ApiError(400, "The request body must be a JSON object.", "", "invalid_json");
  return body;
}

std::optional<double> get_number(const json& body, const char* name, double lo, double hi,
                                 bool lo_open) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, *v, "a number");
  const double x = v->get<double>();
  const bool lo_ok = lo_open ? x > lo : x >= lo;
  if (!std::isfinite(x) || !lo_ok || x > hi) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "'%s' must be in %s%g, %g]; got %g.", name, lo_open ? "(" : "[",
                  lo, hi, x);
    throw bad(name, buf);
  }
  return x;
}

std::optional<double> get_finite(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, *v, "a number");
  const double x = v->get<double>();
  if (!std::isfinite(x)) throw bad(name, "'" + std::string(name) + "' must be finite.");
  return x;
}

std::optional<int64_t> get_int(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(name, *v, "an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw bad(name, "'" + std::string(name) + "' is too large.");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    throw bad(name, "'" + std::string(name) + "' must be in [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]; got " + std::to_string(x) + ".");
  return x;
}

std::optional<bool> get_bool(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(name, *v, "a boolean");
  return v->get<bool>();
}

}  // namespace tzero::server::json_fields
