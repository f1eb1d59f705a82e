// POST /tokenize and /detokenize (server/tokenize_routes.h).
#include "server/tokenize_routes.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "server/json_fields.h"
#include "tokenizer/unicode.h"

namespace tzero::server {

using nlohmann::json;

namespace {

using namespace json_fields;

// The body as a JSON object holding only `allowed` fields (and `model`, ignored).
json parse_body(const std::string& text, std::initializer_list<const char*> allowed) {
  json body = parse_object(text);
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool known = it.key() == "model";
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known)
      throw bad(it.key(), "Unrecognized request argument supplied: " + it.key(),
                "unknown_parameter");
  }
  return body;
}

bool get_bool(const json& body, const char* name, bool fallback) {
  return json_fields::get_bool(body, name).value_or(fallback);
}

const json& required(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null())
    throw bad(name, std::string("Missing required parameter: '") + name + "'.",
              "missing_required_parameter");
  return *it;
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

json tokenize_response(const tzero::Engine& engine, const std::string& text) {
  const json body = parse_body(text, {"content", "add_special", "parse_special", "with_pieces"});
  const json& content = required(body, "content");
  if (!content.is_string())
    throw bad("content",
              std::string("Invalid type for 'content': expected a string, but got ") +
                  content.type_name() + ".",
              "invalid_type");
  const bool add_special = get_bool(body, "add_special", false);
  const bool parse_special = get_bool(body, "parse_special", true);
  const bool with_pieces = get_bool(body, "with_pieces", false);
  const std::string s = content.get<std::string>();
  const std::vector<int32_t> ids = add_special ? engine.tokenize_prompt(s, parse_special)
                                               : engine.tokenize(s, false, parse_special);
  json tokens = json::array();
  for (const int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = engine.token_text(id);
    tokens.push_back(
        {{"id", id}, {"piece", unicode::is_valid(piece) ? json(piece) : bytes_of(piece)}});
  }
  return json{{"tokens", tokens}};
}

json detokenize_response(const tzero::Engine& engine, const std::string& text) {
  const json body = parse_body(text, {"tokens"});
  const json& tokens = required(body, "tokens");
  if (!tokens.is_array())
    throw bad("tokens",
              std::string("Invalid type for 'tokens': expected an array of token ids, but got ") +
                  tokens.type_name() + ".",
              "invalid_type");
  const int n_vocab = engine.info().n_vocab;
  std::vector<int32_t> ids;
  for (const json& t : tokens) {
    if (!t.is_number_integer())
      throw bad("tokens", "'tokens' must hold integer token ids.", "invalid_type");
    const bool in_range = t.is_number_unsigned()
                              ? t.get<uint64_t>() < uint64_t(n_vocab)
                              : t.get<int64_t>() >= 0 && t.get<int64_t>() < int64_t(n_vocab);
    if (!in_range)
      throw bad("tokens", "Token id " + t.dump() + " is outside the vocabulary of " +
                              std::to_string(n_vocab) + " tokens.");
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  return json{{"content", engine.detokenize(ids, true)}};
}

}  // namespace tzero::server
