// A prompt set: the requests `tzero lock` runs, one JSON object per line (JSONL). A line is an
// OpenAI request body, read by the server's own parser (server/openai_request.h), so every field
// means what it means to `tzero serve`: "prompt" makes it a /v1/completions request, "messages"
// a /v1/chat/completions one; max_tokens, temperature, seed, top_k, top_p, stop, ... as
// docs/SERVER.md lists them. One field of its own: "id", a string naming the request in reports
// (default: "line N"). A missing seed is seed 0 (written into the request), so a sampled request
// is reproducible by default.
//
// Refused, because a lock records one answer per request in one shape: n other than 1, tools,
// echo and prompt_logprobs. Blank lines are skipped.
//
// Every problem is a tzero::Error "FILE:LINE: what" (malformed JSON, an unknown field, a wrong
// type, a value out of range, a duplicate id): the CLI exits 2.
#pragma once

#include <string>
#include <vector>

#include "server/openai_request.h"

namespace tzero::lock {

struct LockRequest {
  std::string id;
  std::string where;  // "FILE:LINE", for messages
  int line = 0;       // in the prompt set (or the lock file it came back from)
  server::Endpoint endpoint = server::Endpoint::completions;
  std::string body;              // the request as sent: the line without "id", with the seed
  server::OpenAiRequest parsed;  // parse_request(endpoint, body); the prompt not resolved yet
};

// Parses one request body (an object). where names it in errors ("FILE:LINE"). Throws
// tzero::Error "where: ...".
LockRequest parse_lock_request(const std::string& json_text, const std::string& where, int line,
                               const std::string& default_id);

// Reads a whole prompt set ("-": standard input). Throws tzero::Error naming the file and line; an
// empty set is an error too.
std::vector<LockRequest> read_prompt_set(const std::string& path);

const char* endpoint_name(server::Endpoint e);  // "completions" or "chat"

}  // namespace tzero::lock
