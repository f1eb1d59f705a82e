#include "lock/prompt_set.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/bounded_json.h"
#include "base/error.h"

namespace tzero::lock {

const char* endpoint_name(server::Endpoint e) {
  return e == server::Endpoint::chat ? "chat" : "completions";
}

LockRequest parse_lock_request(const std::string& json_text, const std::string& where, int line,
                               const std::string& default_id) {
  nlohmann::ordered_json body;
  try {
    body = parse_json_bounded<nlohmann::ordered_json>(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(where + ": not valid JSON: " + e.what());
  }
  if (!body.is_object()) throw Error(where + ": a request must be a JSON object");
  LockRequest r;
  r.where = where;
  r.line = line;
  r.id = default_id;
  if (auto it = body.find("id"); it != body.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      throw Error(where + ": id: must be a non-empty string");
    r.id = it->get<std::string>();
    body.erase("id");
  }
  const bool chat = body.contains("messages"), completions = body.contains("prompt");
  if (chat && completions)
    throw Error(where + ": give \"prompt\" (completions) or \"messages\" (chat), not both");
  if (!chat && !completions)
    throw Error(where + ": no \"prompt\" (completions) or \"messages\" (chat)");
  r.endpoint = chat ? server::Endpoint::chat : server::Endpoint::completions;
  for (const char* refused : {"tools", "tool_choice", "echo", "prompt_logprobs"})
    if (body.contains(refused))
      throw Error(where + ": " + refused +
                  ": not supported by tzero lock (a lock records one plain answer per request)");
  if (!body.contains("seed") || body["seed"].is_null()) body["seed"] = 0;
  r.body = body.dump();
  try {
    r.parsed = server::parse_request(r.endpoint, r.body);
  } catch (const server::ApiError& e) {
    throw Error(where + ": " + (e.param.empty() ? "" : e.param + ": ") + e.what());
  }
  if (r.parsed.n != 1)
    throw Error(where + ": n: tzero lock records one choice per request (leave n out or give 1)");
  if (r.parsed.prompts.size() > 1)
    throw Error(where + ": prompt: tzero lock records one prompt per request (one line each)");
  return r;
}

std::vector<LockRequest> read_prompt_set(const std::string& path) {
  std::ifstream file;
  if (path != "-") {  // "-": standard input
    file.open(path, std::ios::binary);
    if (!file) throw Error(path + ": cannot open the prompt set");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<LockRequest> out;
  std::set<std::string> ids;
  std::string text;
  int n = 0;
  while (std::getline(in, text)) {
    ++n;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    LockRequest r = parse_lock_request(text, where, n, "line " + std::to_string(n));
    if (!ids.insert(r.id).second) throw Error(where + ": id: \"" + r.id + "\" is used twice");
    out.push_back(std::move(r));
  }
  if (in.bad()) throw Error(path + ": read error");
  if (out.empty()) throw Error(path + ": no requests in the prompt set (one JSON object a line)");
  return out;
}

}  // namespace tzero::lock
