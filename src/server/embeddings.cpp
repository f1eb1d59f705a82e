// The embeddings endpoint's request and response (server/embeddings.h).
#include "server/embeddings.h"

#include <cstring>
#include <limits>

#include "server/json_fields.h"

namespace tzero::server {

using nlohmann::json;

namespace {

using namespace json_fields;

const char* kInputKinds =
    "a string, an array of strings, an array of token ids, or an array of arrays of token ids";

std::vector<int32_t> token_list(const json& a, const std::string& param) {
  if (a.empty()) throw bad(param, "'" + param + "' must not be an empty array of token ids.");
  std::vector<int32_t> out;
  out.reserve(a.size());
  for (const json& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw bad(param, "'" + param + "' token ids must be non-negative integers.", "invalid_type");
    out.push_back(int32_t(t.get<int64_t>()));
  }
  return out;
}

void parse_input(const json& body, EmbeddingsRequest& r) {
  auto it = body.find("input");
  if (it == body.end() || it->is_null())
    throw bad("input", "Missing required parameter: 'input'.", "missing_required_parameter");
  const json& v = *it;
  if (v.is_string()) {
    r.texts.push_back(v.get<std::string>());
  } else if (!v.is_array()) {
    throw wrong_type("input", v, kInputKinds);
  } else if (v.empty()) {
    throw bad("input", "'input' must not be an empty array.");
  } else if (v.size() > kMaxEmbeddingInputs) {
    throw bad("input", "'input' holds " + std::to_string(v.size()) + " items; at most " +
                           std::to_string(kMaxEmbeddingInputs) + " are allowed.");
  } else if (v[0].is_number()) {
    r.tokens.push_back(token_list(v, "input"));
  } else if (v[0].is_string()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        throw wrong_type("input[" + std::to_string(i) + "]", v[i], "a string like input[0]");
      r.texts.push_back(v[i].get<std::string>());
    }
  } else if (v[0].is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string param = "input[" + std::to_string(i) + "]";
      if (!v[i].is_array()) throw wrong_type(param, v[i], "an array of token ids like input[0]");
      r.tokens.push_back(token_list(v[i], param));
    }
  } else {
    throw wrong_type("input[0]", v[0], kInputKinds);
  }
  for (size_t i = 0; i < r.texts.size(); ++i)
    if (r.texts[i].empty())
      throw bad(r.texts.size() == 1 && v.is_string() ? "input" : "input[" + std::to_string(i) + "]",
                "'input' must not hold an empty string.");
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const std::string& body_text) {
  const json body = json_fields::parse_object(body_text);
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (k != "input" && k != "model" && k != "encoding_format" && k != "dimensions" && k != "user")
      throw bad(k, "Unrecognized request argument supplied: " + k, "unknown_parameter");
  }
  EmbeddingsRequest r;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw wrong_type("model", *it, "a string");
    r.model = it->get<std::string>();
  }
  if (auto it = body.find("user"); it != body.end() && !it->is_null() && !it->is_string())
    throw wrong_type("user", *it, "a string");
  parse_input(body, r);
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw wrong_type("encoding_format", *it, "a string");
    const std::string f = it->get<std::string>();
    if (f != "float" && f != "base64")
      throw bad("encoding_format",
                "'encoding_format' must be 'float' or 'base64', not '" + f + "'.");
    r.base64 = f == "base64";
  }
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer()) throw wrong_type("dimensions", *it, "an integer");
    const int64_t d = it->get<int64_t>();
    if (d < 1 || d > std::numeric_limits<int32_t>::max())
      throw bad("dimensions", "'dimensions' must be >= 1; got " + std::to_string(d) + ".");
    r.dimensions = int(d);
  }
  return r;
}

void resolve_embeddings(EmbeddingsRequest& r, const tzero::Engine& engine) {
  const tzero::ModelInfo& info = engine.info();
  if (info.pooling == tzero::Pooling::none)
    throw bad("model", "Embeddings are not available for this model: " + info.pooling_note);
  if (r.dimensions > info.n_embd)
    throw bad("dimensions", "'dimensions' must be in [1, " + std::to_string(info.n_embd) +
                                "] for this model (its embedding length); got " +
                                std::to_string(r.dimensions) + ".");
  const bool texts = !r.texts.empty();
  for (const std::string& t : r.texts) r.tokens.push_back(engine.tokenize_prompt(t, false));
  r.texts.clear();
  const bool single = r.tokens.size() == 1;
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    const std::string param = single ? "input" : "input[" + std::to_string(i) + "]";
    const std::vector<int32_t>& toks = r.tokens[i];
    if (toks.empty()) throw bad(param, "'" + param + "' is empty once tokenized.");
    for (int32_t t : toks)
      if (t < 0 || t >= info.n_vocab)
        throw bad(param, "Token id " + std::to_string(t) + " in '" + param +
                             "' is outside the vocabulary of " + std::to_string(info.n_vocab) +
                             " tokens.");
    if (int(toks.size()) > info.n_ctx)
      throw bad(param,
                "This model's maximum context length is " + std::to_string(info.n_ctx) +
                    " tokens. However, '" + param + "' is " + std::to_string(toks.size()) +
                    " tokens" + (texts ? " once tokenized" : "") + ".",
                "context_length_exceeded");
  }
}

tzero::RequestParams embedding_params(const EmbeddingsRequest& r, size_t i) {
  tzero::RequestParams p;
  p.prompt_tokens = r.tokens[i];
  p.embedding = tzero::Pooling::model;
  p.embedding_dims = r.dimensions;
  p.max_tokens = 0;
  return p;
}

std::string base64_floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = (u >> (8 * b)) & 0xff;  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 |
                       (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

json embeddings_response(const EmbeddingsRequest& r, const std::string& model,
                         const std::vector<std::vector<float>>& vectors) {
  json data = json::array();
  int n_tokens = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    json e = r.base64 ? json(base64_floats(vectors[i])) : json(vectors[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(e)}});
    n_tokens += int(r.tokens[i].size());
  }
  return json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

}  // namespace tzero::server
