// POST /v1/embeddings: the request body parsed and validated into engine requests (one per
// input, RequestParams::embedding), and OpenAI's response shape
//   {object: "list", data: [{object: "embedding", index, embedding}], model,
//    usage: {prompt_tokens, total_tokens}}
// with `embedding` an array of floats (printed so that they parse back to the same float32) or,
// with encoding_format "base64", the base64 of the little-endian float32 bytes (as OpenAI).
// Every problem is an ApiError (400) naming the field, as for the other endpoints
// (server/openai_request.h). docs/SERVER.md lists the fields.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "tzero/engine.h"

namespace tzero::server {

// Most inputs in one request (OpenAI's limit).
constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingsRequest {
  std::string model;                         // as the client named it ("" when omitted)
  std::vector<std::string> texts;            // string inputs (tokenized by resolve_embeddings)
  std::vector<std::vector<int32_t>> tokens;  // token inputs, or the texts' tokens once resolved
  bool base64 = false;                       // encoding_format "base64"
  int dimensions = 0;                        // 0: the model's n_embd
};

// Parses and validates the body: `input` (a string, an array of strings, an array of token
// ids, or an array of arrays of token ids; not empty), `encoding_format` ("float" or
// "base64"), `dimensions` (>= 1), `model` and `user` (accepted); anything else is a 400.
EmbeddingsRequest parse_embeddings_request(const std::string& body);

// Tokenizes the text inputs (BOS and EOS by the completion prompt's rule, runtime/prompt.h) and
// checks every input against the model: token ids inside the vocabulary, at most the context
// (400 context_length_exceeded naming the limit), dimensions at most n_embd.
void resolve_embeddings(EmbeddingsRequest& r, const tzero::Engine& engine);

// The engine request of input i.
tzero::RequestParams embedding_params(const EmbeddingsRequest& r, size_t i);

// The base64 of v's little-endian float32 bytes.
std::string base64_floats(const std::vector<float>& v);

// The response: vectors[i] is input i's embedding.
nlohmann::json embeddings_response(const EmbeddingsRequest& r, const std::string& model,
                                   const std::vector<std::vector<float>>& vectors);

}  // namespace tzero::server
