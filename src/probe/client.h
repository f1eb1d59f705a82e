// The probe's OpenAI-compatible HTTP client: one completion request to /v1/completions or
// /v1/chat/completions, streamed (server-sent events) or not, parsed into the sampled tokens
// with their log probabilities exactly as the server wrote them.
//
// Contracts:
//  - Numbers are kept exactly: every logprob is parsed to the double nearest its JSON text (the
//    same for every correct parser) and its text is kept too, so two responses can be compared
//    bit for bit and character for character.
//  - Both logprob layouts are read at either endpoint: the legacy completions layout
//    (logprobs.tokens / token_logprobs / top_logprobs as {text: logprob} objects) and the chat
//    layout (logprobs.content[] of {token, logprob, top_logprobs[]}), which some servers
//    (llama.cpp) also use for /v1/completions.
//  - A response without logprobs (field missing or null) gives has_logprobs = false and the
//    text only; the caller decides what to compare.
//  - Errors throw ProbeError (a tzero::Error: exit status 2) with one line that says what: the
//    server cannot be reached ("cannot reach URL: connection refused"), it timed out, or it
//    answered an HTTP error (its own error message is quoted; answer_error is then set, as for
//    any answer that cannot be used). 429 is retried with backoff,
//    honoring Retry-After (at most kMaxRetryAfterS), up to max_retries times.
//  - A hostile or broken server cannot hold the probe: one request, its retries included, ends
//    by its deadline (timeout_s), from sending to the parsed answer, however the bytes arrive (a
//    drip, an endless stream, keep-alive comments) and however long the answer takes to parse;
//    a response over kMaxResponseBytes, a line over kMaxLineBytes and JSON nested deeper than
//    kMaxJsonDepth or taking more than kMaxDocumentBytes as a document (exact_json.h) are refused,
//    and a stream that ends with neither `data: [DONE]` nor a finish_reason (cut off) is an error.
//  - Text from the server in a message (its error message, a piece of a malformed body) is
//    server_text(): one line of at most kMaxQuotedChars bytes, control bytes as \xHH, so that it
//    cannot drive the terminal it is printed on.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "probe/exact_json.h"

namespace tzero::probe {

constexpr size_t kMaxResponseBytes = size_t(64) << 20;  // one response body
constexpr size_t kMaxLineBytes = size_t(4) << 20;       // one line of a streamed response
constexpr double kMaxRetryAfterS = 10.0;                // the longest Retry-After honoured

struct ProbeError : Error {
  using Error::Error;
  int http_status = 0;  // the server's status when it answered with an error, else 0
  // The server answered, but with an error or with an answer that cannot be used: an HTTP error
  // status, an error object or event, a malformed body, a cut-off stream. The probe records such
  // a request and goes on. False for a server that cannot be reached, a timeout and the
  // limits: those end the probe.
  bool answer_error = false;
  // The answer passed one of the client's JSON limits (nesting, document memory: exact_json.h):
  // never an answer_error.
  bool limit = false;
};

// Text from the server quoted in a message: one line (line breaks and tabs as spaces, trailing
// white space dropped), then excerpt() (base/excerpt.h): at most kMaxQuotedChars bytes, cut with
// "... (N bytes)", control bytes and invalid UTF-8 as \xHH.
std::string server_text(std::string_view text);

struct TopLogprob {
  std::string token;
  ExactNumber logprob;
};

struct SampledToken {
  std::string text;
  ExactNumber logprob;
  std::vector<TopLogprob> top;  // in the order the server listed them
};

struct Completion {
  std::string text;  // the generated text (streamed: the concatenated deltas)
  bool has_logprobs = false;
  std::vector<SampledToken> tokens;  // empty unless has_logprobs
  std::string finish_reason;
  std::string system_fingerprint;  // "" when the server sent none
  // Choice 0's "tzero" field as JSON text (tzero servers: logits_digest, stop_reason, seed; the
  // finish chunk's when streamed), "" when the server sent none.
  std::string tzero_extension;
  double latency_ms = 0;  // from sending the request to the last byte
  int retries = 0;        // 429 answers retried before this one
};

struct CompletionRequest {
  std::string model;
  std::string prompt;  // the prompt text, or the user message with chat
  bool chat = false;
  bool stream = false;
  int max_tokens = 32;
  double temperature = 0;
  std::optional<uint64_t> seed;
  bool logprobs = true;  // ask for the sampled tokens' logprobs
  int top_logprobs = 5;  // and this many alternatives
  // When not empty, the whole request body as sent (tzero lock: a prompt set's line); the
  // fields above then serve only to pick the endpoint (chat) and the transport (stream).
  std::string raw_body;
};

// The request body as JSON text (exposed for tests).
std::string request_body(const CompletionRequest& r);

// Parses one complete (non-streamed) response body. Throws ProbeError on malformed JSON, JSON
// past the limits (exact_json.h) or a body with no choices.
Completion parse_completion(const std::string& body, bool chat, const ParseLimits& limits = {});

// Incremental server-sent events parser: feed bytes as they arrive; each complete `data:` event
// is appended to the completion. Lines other than data (comments, event:, id:) are ignored; a
// multi-line event joins its data lines with '\n'; `data: [DONE]` ends the stream. feed()
// throws ProbeError for a line longer than kMaxLineBytes or an event past the JSON limits
// (each event is parsed within `limits`); finish() for a stream with no event, or one that
// ended with neither [DONE] nor a finish_reason.
class SseAccumulator {
 public:
  explicit SseAccumulator(bool chat, ParseLimits limits = {}) : chat_(chat), limits_(limits) {}
  void feed(const char* data, size_t n);
  // Flushes an event not yet ended by a blank line; throws when no event arrived at all.
  Completion finish();
  // What the complete events so far hold, unchecked: for a stream the caller stopped reading.
  Completion partial() const;
  bool done() const { return done_; }

 private:
  void line(const std::string& l);
  void dispatch();
  bool chat_;
  ParseLimits limits_;
  bool done_ = false;
  int events_ = 0;
  bool any_logprobs_ = false;
  std::string buf_, data_;
  bool has_data_ = false;
  Completion c_;
};

// Folds one streamed chunk (a chat.completion.chunk or a text_completion chunk) into c. Returns
// whether the chunk carried logprobs. Throws ProbeError for an error object inside the stream.
bool apply_chunk(const std::string& json_text, bool chat, Completion& c,
                 const ParseLimits& limits = {});

// The message of an error response body: error.message, error (a string), detail, message, or
// the body itself; as server_text() (one line, cut, control bytes escaped).
std::string error_message(const std::string& body);

// Seconds to wait before retrying after 429 (attempt counts from 0): Retry-After when it is a
// number of seconds (capped at kMaxRetryAfterS), else 0.5 s doubling up to 8 s.
double retry_delay_s(const std::string& retry_after, int attempt);

class Client {
 public:
  // base_url: scheme://host[:port][/path]; "/v1" is appended to the path unless it ends with it
  // (so http://host:8080 and http://host:8000/v1 both work). Throws ProbeError for a URL that
  // is not http or https.
  Client(const std::string& base_url, std::string api_key, double timeout_s, int max_retries = 5);

  // Sends one request and waits for the whole answer, at most timeout_s in all (429 retries
  // included). `abort`, when given and set while a streamed answer arrives, stops reading: the
  // result is then the partial answer, not an error (a cut-off stream is the caller's doing).
  Completion complete(const CompletionRequest& r, const std::atomic<bool>* abort = nullptr,
                      std::atomic<bool>* first_byte = nullptr) const;

  const std::string& url() const { return origin_; }  // scheme://host:port, for messages
  std::string endpoint(bool chat) const;              // the full URL of the endpoint

 private:
  std::string origin_, path_, host_, api_key_;
  int port_ = 0;
  double timeout_s_;
  int max_retries_;
};

// Why a TCP connection to host:port fails, in a few lowercase words ("connection refused",
// "no such host", "timed out"), or "" when it succeeds.
std::string connect_failure(const std::string& host, int port, double timeout_s);

}  // namespace tzero::probe
