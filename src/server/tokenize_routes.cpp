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
  const json body = parse_body(text, {"content", "add_special", "parse_special", "with_pieces",
                                      "prompt", "add_special_tokens"});
  // llama.cpp's {content, add_special} or vLLM's {prompt, add_special_tokens} (what evaluation
  // harnesses' remote tokenizers send); vLLM's shape is answered with its count and
  // max_model_len too.
  const bool vllm = body.contains("prompt");
  if (vllm && body.contains("content"))
    throw bad("prompt", "Give 'content' (llama.cpp) or 'prompt' (vLLM), not both.");
  if (body.contains(vllm ? "add_special" : "add_special_tokens"))
    throw bad(vllm ? "add_special" : "add_special_tokens",
              vllm ? "With 'prompt' the flag is 'add_special_tokens' (vLLM's name)."
                   : "With 'content' the flag is 'add_special' (llama.cpp's name).");
  const json& content = required(body, vllm ? "prompt" : "content");
  if (!content.is_string())
    throw bad(vllm ? "prompt" : "content",
              std::string("Invalid type for '") + (vllm ? "prompt" : "content") +
                  "': expected a string, but got " + content.type_name() + ".",
              "invalid_type");
  const bool add_special =
      vllm ? get_bool(body, "add_special_tokens", true) : get_bool(body, "add_special", false);
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
  if (vllm)
    return json{{"count", ids.size()}, {"max_model_len", engine.info().n_ctx}, {"tokens", tokens}};
  return json{{"tokens", tokens}};
}

json tokenizer_info_response(const tzero::Engine& engine) {
  const tzero::ModelInfo& m = engine.info();
  auto token = [&](int32_t id) { return id >= 0 ? json(engine.token_text(id)) : json(); };
  // The pad token: the file's tokenizer.ggml.padding_token_id when it has one, else null.
  return json{{"tokenizer_class", "tzero"},
              {"bos_token", token(m.bos)},
              {"eos_token", token(m.eos)},
              {"pad_token", token(m.pad)},
              {"eot_token", token(m.eot)},
              {"bos_token_id", m.bos >= 0 ? json(m.bos) : json()},
              {"eos_token_id", m.eos >= 0 ? json(m.eos) : json()},
              {"pad_token_id", m.pad >= 0 ? json(m.pad) : json()},
              {"add_bos_token", m.add_bos},
              {"chat_template", m.chat_template.empty() ? json() : json(m.chat_template)},
              {"model_max_length", m.n_ctx},
              {"vocab_size", m.n_vocab}};
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
  const std::string out = engine.detokenize(ids, true);
  return json{{"content", out}, {"prompt", out}};  // llama.cpp's name and vLLM's
}

}  // namespace tzero::server
