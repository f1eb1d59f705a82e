// OpenAI response JSON and SSE chunks (server/openai_response.h).
#include "server/openai_response.h"

#include "server/api_error.h"

namespace tzero::server {

using nlohmann::json;

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

json base(const ResponseMeta& m, bool chunk) {
  const char* object = m.endpoint == Endpoint::chat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return json{{"id", m.id},
              {"object", object},
              {"created", m.created},
              {"model", m.model},
              {"system_fingerprint", m.fingerprint}};
}

std::string sse(const json& j) {
  return "data: " + dump_json(j) + "\n\n";
}

}  // namespace

void Usage::add(const tzero::TokenEvent& e, bool prompt) {
  if (prompt) prompt_tokens += e.n_prompt;
  completion_tokens += e.n_generated;
  drafted += e.n_drafted;
  accepted += e.n_accepted;
}

json Usage::to_json() const {
  json j{{"prompt_tokens", prompt_tokens},
         {"completion_tokens", completion_tokens},
         {"total_tokens", prompt_tokens + completion_tokens}};
  if (speculative)
    j["completion_tokens_details"] = {{"accepted_prediction_tokens", accepted},
                                      {"rejected_prediction_tokens", drafted - accepted}};
  return j;
}

json logprobs_json(Endpoint ep, const std::vector<TokenOut>& tokens, size_t offset) {
  if (ep == Endpoint::chat) {
    json content = json::array();
    for (const TokenOut& t : tokens) {
      json top = json::array();
      for (const tzero::TokenLogprob& a : t.top)
        top.push_back({{"token", a.text}, {"logprob", a.logprob}, {"bytes", bytes_of(a.text)}});
      content.push_back({{"token", t.piece},
                         {"logprob", t.logprob},
                         {"bytes", bytes_of(t.piece)},
                         {"top_logprobs", top}});
    }
    return json{{"content", content}, {"refusal", nullptr}};
  }
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const TokenOut& t : tokens) {
    toks.push_back(t.piece);
    if (t.null_logprob) {
      lps.push_back(nullptr);
      tops.push_back(nullptr);
      offs.push_back(offset);
      offset += t.piece.size();
      continue;
    }
    lps.push_back(t.logprob);
    json top = json::object();
    for (const tzero::TokenLogprob& a : t.top)
      if (!top.contains(a.text)) top[a.text] = a.logprob;  // pieces may repeat: the best wins
    tops.push_back(top);
    offs.push_back(offset);
    offset += t.piece.size();
  }
  return json{
      {"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

std::vector<TokenOut> echo_tokens(const ResponseMeta& m, int choice,
                                  const std::vector<TokenOut>& prompt) {
  std::vector<TokenOut> out;
  TokenOut first;
  first.piece = m.prompt_of(choice).first_piece;
  first.null_logprob = true;
  out.push_back(first);
  for (TokenOut t : prompt) {
    if (int(t.top.size()) > m.top_logprobs) t.top.resize(size_t(m.top_logprobs));
    out.push_back(std::move(t));
  }
  return out;
}

static json tool_calls_json(const std::vector<ToolCall>& calls, int first_index, bool indexed) {
  json out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json c = {{"id", calls[k].id},
              {"type", "function"},
              {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (indexed) c["index"] = first_index + int(k);
    out.push_back(std::move(c));
  }
  return out;
}

json prompt_logprobs_json(const std::vector<TokenOut>& prompt, int n) {
  json out = json::array({nullptr});
  for (const TokenOut& t : prompt) {
    json pos = json::object();
    pos[std::to_string(t.token)] = {
        {"logprob", t.logprob}, {"rank", t.rank}, {"decoded_token", t.piece}};
    for (int i = 0; i < n && i < int(t.top.size()); ++i) {
      const tzero::TokenLogprob& a = t.top[size_t(i)];
      const std::string key = std::to_string(a.token);
      if (!pos.contains(key))
        pos[key] = {{"logprob", a.logprob}, {"rank", i + 1}, {"decoded_token", a.text}};
    }
    out.push_back(std::move(pos));
  }
  return out;
}

json tzero_extension(const ResponseMeta& m, int index, const std::string& logits_digest,
                     const std::string& stop_reason, const std::vector<int32_t>& tokens) {
  return json{{"logits_digest", logits_digest},
              {"stop_reason", stop_reason},
              {"seed", m.seed_of(index)},
              {"tokens", tokens}};
}

json tzero_chunk_extension(const ResponseMeta& m, int index, const std::vector<int32_t>& tokens) {
  return json{{"tokens", tokens}, {"seed", m.seed_of(index)}};
}

json full_response(const ResponseMeta& m, const std::vector<ChoiceOut>& choices,
                   const Usage& usage) {
  json j = base(m, false);
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOut& c = choices[i];
    json lp;
    if (m.logprobs && m.echo) {
      std::vector<TokenOut> all = echo_tokens(m, int(i), c.prompt);
      all.insert(all.end(), c.tokens.begin(), c.tokens.end());
      lp = logprobs_json(m.endpoint, all, 0);
    } else if (m.logprobs) {
      lp = logprobs_json(m.endpoint, c.tokens, 0);
    }
    const json ext = tzero_extension(m, int(i), c.logits_digest, c.stop_reason, c.token_ids);
    if (m.endpoint == Endpoint::chat) {
      json message = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) message["content"] = nullptr;
        message["tool_calls"] = tool_calls_json(c.tool_calls, 0, false);
      }
      cs.push_back({{"index", i},
                    {"message", message},
                    {"logprobs", lp},
                    {"finish_reason", c.finish_reason},
                    {"tzero", ext}});
    } else {
      json choice = {{"index", i},
                     {"text", m.echo ? m.prompt_of(int(i)).echo_text + c.text : c.text},
                     {"logprobs", lp},
                     {"finish_reason", c.finish_reason},
                     {"tzero", ext}};
      if (m.prompt_logprobs >= 0)
        choice["prompt_logprobs"] = prompt_logprobs_json(c.prompt, m.prompt_logprobs);
      cs.push_back(std::move(choice));
    }
  }
  j["choices"] = cs;
  j["usage"] = usage.to_json();
  return j;
}

std::string sse_chunk(const ResponseMeta& m, int index, const std::string& text,
                      const std::vector<TokenOut>& tokens, size_t offset, bool role_first,
                      const std::string& finish_reason, bool usage_null, const json& extension) {
  json j = base(m, true);
  json c = {{"index", index}};
  const bool finishing = !finish_reason.empty();
  if (m.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (role_first) delta = {{"role", "assistant"}, {"content", ""}};
    if (!finishing && !role_first) delta["content"] = text;
    c["delta"] = delta;
  } else {
    c["text"] = text;
  }
  c["logprobs"] =
      m.logprobs && !tokens.empty() ? logprobs_json(m.endpoint, tokens, offset) : json();
  c["finish_reason"] = finishing ? json(finish_reason) : json();
  if (!extension.is_null()) c["tzero"] = extension;
  j["choices"] = json::array({c});
  if (usage_null) j["usage"] = nullptr;
  return sse(j);
}

std::string sse_reasoning_chunk(const ResponseMeta& m, int index, const std::string& text,
                                bool usage_null) {
  json j = base(m, true);
  json c = {{"index", index}, {"delta", {{"reasoning_content", text}}}};
  c["logprobs"] = json();
  c["finish_reason"] = json();
  j["choices"] = json::array({c});
  if (usage_null) j["usage"] = nullptr;
  return sse(j);
}

std::string sse_prompt_chunk(const ResponseMeta& m, int index, const std::vector<TokenOut>& prompt,
                             bool usage_null) {
  json j = base(m, true);
  json c = {{"index", index}, {"text", m.echo ? m.prompt_of(index).echo_text : std::string()}};
  c["logprobs"] =
      m.echo && m.logprobs ? logprobs_json(m.endpoint, echo_tokens(m, index, prompt), 0) : json();
  c["finish_reason"] = nullptr;
  if (m.prompt_logprobs >= 0)
    c["prompt_logprobs"] = prompt_logprobs_json(prompt, m.prompt_logprobs);
  j["choices"] = json::array({c});
  if (usage_null) j["usage"] = nullptr;
  return sse(j);
}

std::string sse_tool_calls_chunk(const ResponseMeta& m, int index,
                                 const std::vector<ToolCall>& calls, int first_index,
                                 bool usage_null) {
  json j = base(m, true);
  json c = {{"index", index},
            {"delta", {{"tool_calls", tool_calls_json(calls, first_index, true)}}},
            {"logprobs", nullptr},
            {"finish_reason", nullptr}};
  j["choices"] = json::array({c});
  if (usage_null) j["usage"] = nullptr;
  return sse(j);
}

std::string sse_usage_chunk(const ResponseMeta& m, const Usage& usage) {
  json j = base(m, true);
  j["choices"] = json::array();
  j["usage"] = usage.to_json();
  return sse(j);
}

std::string sse_error(const json& error) {
  return sse(error);
}

}  // namespace tzero::server
