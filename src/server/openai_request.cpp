// OpenAI request bodies to engine requests (server/openai_request.h).
#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/bounded_json.h"
#include "base/error.h"
#include "chat/chat_template.h"
#include "chat/template_choice.h"
#include "server/extension_fields.h"
#include "server/json_fields.h"
#include "server/structured_output.h"

namespace tzero::server {

using nlohmann::json;

namespace {

using namespace json_fields;

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// Fields both endpoints take. "Ignored" ones are accepted and have no effect.
const std::set<std::string> kCommon = {
    "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop",
    "presence_penalty", "frequency_penalty", "seed", "logprobs", "logit_bias",
    // tzero extensions
    "top_k", "min_p", "repetition_penalty", "ignore_eos", "tzero_resume",
    // accepted and ignored
    "user"};
const std::set<std::string> kCompletionOnly = {"prompt", "echo", "best_of", "suffix",
                                               // vLLM's extension
                                               "prompt_logprobs"};
const std::set<std::string> kChatOnly = {"messages", "max_completion_tokens", "top_logprobs",
                                         "tools", "tool_choice", "parallel_tool_calls",
                                         // accepted and ignored
                                         "store", "metadata", "service_tier"};

bool structured_field(const std::string& key) {
  for (const char* const* f = kStructuredOutputFields; *f; ++f)
    if (key == *f) return true;
  return false;
}

void check_fields(const json& body, Endpoint ep) {
  const auto& own = ep == Endpoint::chat ? kChatOnly : kCompletionOnly;
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!kCommon.count(it.key()) && !own.count(it.key()) && !is_extension_field(it.key(), ep) &&
        !structured_field(it.key()))
      throw bad(it.key(), "Unrecognized request argument supplied: " + it.key(),
                "unknown_parameter");
}

void parse_stop(const json& body, tzero::RequestParams& p) {
  const json* v = field(body, "stop");
  if (!v) return;
  if (v->is_string()) {
    p.stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > 4) throw bad("stop", "'stop' takes at most 4 sequences.");
    for (const json& s : *v) {
      if (!s.is_string()) throw wrong_type("stop", s, "a string or an array of strings");
      p.stop.push_back(s.get<std::string>());
    }
  } else {
    throw wrong_type("stop", *v, "a string or an array of strings");
  }
  for (const std::string& s : p.stop)
    if (s.empty()) throw bad("stop", "'stop' sequences must not be empty.");
}

void parse_prompt(const json& body, OpenAiRequest& r) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null())
    throw bad("prompt", "Missing required parameter: 'prompt'.", "missing_required_parameter");
  const json& v = *it;
  auto tokens_of = [](const json& a) {
    std::vector<int32_t> out;
    for (const json& t : a) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > kIntMax)
        throw bad("prompt", "'prompt' token ids must be non-negative integers.", "invalid_type");
      out.push_back(int32_t(t.get<int64_t>()));
    }
    return out;
  };
  // A string, a list of token ids, or a list of prompts (strings or lists of token ids): the
  // shapes of OpenAI's API, and of evaluation harnesses that batch their prompts.
  if (v.is_string()) {
    r.prompts.push_back({v.get<std::string>(), {}});
  } else if (v.is_array() && !v.empty() && v[0].is_number()) {
    r.prompts.push_back({"", tokens_of(v)});
  } else if (v.is_array() && !v.empty()) {
    for (const json& one : v) {
      if (one.is_string())
        r.prompts.push_back({one.get<std::string>(), {}});
      else if (one.is_array() && !one.empty() && one[0].is_number())
        r.prompts.push_back({"", tokens_of(one)});
      else
        throw wrong_type("prompt", one,
                         "a string or a non-empty array of token ids in a list of prompts");
    }
  } else {
    throw wrong_type("prompt", v, "a string, an array of token ids, or an array of these");
  }
}

std::string message_text(const json& content, size_t i) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (!content.is_array()) throw wrong_type(param, content, "a string or an array of parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      throw bad(param,
                "Only text content parts ({\"type\": \"text\", \"text\": ...}) are "
                "supported.");
    text += part["text"].get<std::string>();
  }
  return text;
}

// A call's `arguments` given as a string is JSON text the prompt renders as a value
// (server/tool_calls.h): nested past kMaxJsonDepth it is refused here, as a body would be.
void check_arguments_depth(const json& function, const std::string& call) {
  auto a = function.find("arguments");
  if (a == function.end() || !a->is_string()) return;
  const std::string& text = a->get_ref<const std::string&>();
  const size_t at = json_depth_exceeded_at(text);
  if (at != std::string::npos)
    throw bad(call + ".function.arguments",
              "'arguments' is JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels (arrays and objects inside each other), past the limit at byte " +
                  std::to_string(at + 1) + ".");
}

void parse_messages(const json& body, OpenAiRequest& r) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null())
    throw bad("messages", "Missing required parameter: 'messages'.", "missing_required_parameter");
  if (!it->is_array()) throw wrong_type("messages", *it, "an array");
  if (it->empty()) throw bad("messages", "'messages' must hold at least one message.");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(p, m, "an object");
    for (auto f = m.begin(); f != m.end(); ++f)
      if (f.key() != "role" && f.key() != "content" && f.key() != "name" &&
          f.key() != "tool_calls" && f.key() != "tool_call_id" && f.key() != "refusal" &&
          f.key() != "type")
        throw bad(p + "." + f.key(), "Unrecognized message field: " + f.key(), "unknown_parameter");
    // lm-evaluation-harness's chat model marks each message {"type": "text"}: accepted, unused.
    if (m.contains("type") && !(m["type"].is_string() && m["type"] == "text"))
      throw bad(p + ".type", "A message's 'type' may only be \"text\".");
    if (!m.contains("role") || !m["role"].is_string())
      throw bad(p + ".role", "Each message needs a string 'role'.", "missing_required_parameter");
    std::string role = m["role"].get<std::string>();
    if (!roles.count(role))
      throw bad(p + ".role", "Unsupported role '" + role +
                                 "' (supported: system, developer, user, assistant, tool).");
    if (role == "developer") role = "system";
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (role != "assistant")
        throw bad(p + ".tool_calls", "Only assistant messages have tool_calls.");
      if (!m["tool_calls"].is_array())
        throw wrong_type(p + ".tool_calls", m["tool_calls"], "an array");
      for (size_t k = 0; k < m["tool_calls"].size(); ++k) {
        const json& c = m["tool_calls"][k];
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
            !c["function"].contains("name") || !c["function"]["name"].is_string())
          throw bad(p + ".tool_calls", "Each tool call needs a 'function' with a 'name'.");
        check_arguments_depth(c["function"], p + ".tool_calls[" + std::to_string(k) + "]");
      }
      r.tool_turns = true;
    }
    if (role == "tool") {
      r.tool_turns = true;
      if (m.contains("tool_call_id") && !m["tool_call_id"].is_string())
        throw wrong_type(p + ".tool_call_id", m["tool_call_id"], "a string");
    }
    const bool may_be_empty = role == "assistant" && m.contains("tool_calls");
    if ((!m.contains("content") && !may_be_empty) ||
        (m.contains("content") && m["content"].is_null() && role != "assistant"))
      throw bad(p + ".content", "Each message needs 'content'.", "missing_required_parameter");
    if (!m.contains("content")) {
      r.messages.push_back({role, ""});
      continue;
    }
    r.messages.push_back({role, message_text(m["content"], i)});
  }
}

void parse_unsupported(const json& body, Endpoint ep) {
  if (const json* v = field(body, "logit_bias")) {
    if (!v->is_object()) throw wrong_type("logit_bias", *v, "an object");
    if (!v->empty()) throw bad("logit_bias", "'logit_bias' is not supported by tzero.");
  }
  if (ep == Endpoint::completions) {
    get_bool(body, "echo");  // a type check; parse_request reads it
    if (const json* v = field(body, "suffix")) {
      if (!v->is_string()) throw wrong_type("suffix", *v, "a string");
      if (!v->get<std::string>().empty())
        throw bad("suffix", "'suffix' is not supported by tzero.");
    }
  } else {
  }
}

// tzero_resume (docs/REPLICAS.md): {"tokens": [ids]}; what it cannot be combined with.
void parse_resume(const json& body, OpenAiRequest& r) {
  const json* v = field(body, "tzero_resume");
  if (!v) return;
  if (!v->is_object()) throw wrong_type("tzero_resume", *v, "an object");
  for (auto it = v->begin(); it != v->end(); ++it)
    if (it.key() != "tokens")
      throw bad("tzero_resume." + it.key(), "Unrecognized field of 'tzero_resume': " + it.key(),
                "unknown_parameter");
  auto t = v->find("tokens");
  if (t == v->end() || !t->is_array())
    throw bad("tzero_resume.tokens", "'tzero_resume' needs 'tokens', an array of token ids.",
              t == v->end() ? "missing_required_parameter" : "invalid_type");
  for (const json& id : *t) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kIntMax)
      throw bad("tzero_resume.tokens", "'tzero_resume.tokens' must be non-negative token ids.",
                "invalid_type");
    r.resume_tokens.push_back(int32_t(id.get<int64_t>()));
  }
  r.resume = true;
  auto refuse = [](const std::string& what) {
    throw bad("tzero_resume", "'tzero_resume' cannot be combined with " + what + ".");
  };
  if (r.n != 1) refuse("'n' > 1 (resume each choice as its own request, with its seed)");
  if (r.prompts.size() > 1) refuse("several prompts (resume each as its own request)");
  if (r.echo || r.prompt_logprobs >= 0) refuse("'echo' or 'prompt_logprobs'");
  if (!r.params.grammar.empty() || (r.tools && r.tools->choice != ToolChoice::none))
    refuse("a grammar, a response_format or tools");
}

}  // namespace

OpenAiRequest parse_request(Endpoint ep, const std::string& body_text) {
  const json body = json_fields::parse_object(body_text);
  check_fields(body, ep);

  OpenAiRequest r;
  r.endpoint = ep;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) throw wrong_type("model", *m, "a string");
    r.model = m->get<std::string>();
  }
  if (ep == Endpoint::chat)
    parse_messages(body, r);
  else
    parse_prompt(body, r);
  parse_unsupported(body, ep);

  // Structured output and tools read the body again with its key order kept (a schema's
  // properties are generated in order).
  bool ordered = r.tool_turns || body.contains("tools") || body.contains("tool_choice");
  for (const char* const* f = kStructuredOutputFields; *f; ++f)
    ordered = ordered || body.contains(*f);
  if (ordered) {
    const auto ob = parse_json_bounded<nlohmann::ordered_json>(body_text);  // bounded above
    r.params.grammar = structured_output_grammar(ob);
    if (ep == Endpoint::chat) {
      r.tools = parse_tools(ob);
      r.chat_messages = ob["messages"];
      if (r.tools && r.tools->choice != ToolChoice::none && !r.params.grammar.empty())
        throw bad("tools",
                  "Give 'tools' or a structured output format (response_format, "
                  "grammar, json_schema), not both.");
    } else if (body.contains("tools") || body.contains("tool_choice")) {
      throw bad("tools", "Unrecognized request argument supplied: tools", "unknown_parameter");
    }
  }

  tzero::RequestParams& p = r.params;
  tzero::SamplingParams& s = p.sampling;
  const char* max_name = "max_tokens";
  if (ep == Endpoint::chat && field(body, "max_completion_tokens")) {
    max_name = "max_completion_tokens";
    if (field(body, "max_tokens"))
      throw bad("max_tokens", "Give 'max_tokens' or 'max_completion_tokens', not both.");
  }
  // Completions may ask for 0 tokens to score the prompt (checked below).
  if (auto v = get_int(body, max_name, ep == Endpoint::completions ? 0 : 1, kIntMax))
    r.max_tokens = int(*v);
  if (auto v = get_int(body, "n", 1, 128)) r.n = int(*v);
  if (ep == Endpoint::completions)
    if (auto v = get_int(body, "best_of", 1, 128); v && *v != r.n)
      throw bad("best_of", "'best_of' must equal 'n' (tzero returns every choice).");
  if (auto v = get_bool(body, "stream")) r.stream = *v;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", *so, "an object");
    if (!r.stream)
      throw bad("stream_options", "'stream_options' is only allowed when 'stream' is true.");
    for (auto it = so->begin(); it != so->end(); ++it)
      if (it.key() != "include_usage")
        throw bad("stream_options." + it.key(), "Unrecognized stream option: " + it.key(),
                  "unknown_parameter");
    if (auto v = get_bool(*so, "include_usage")) r.include_usage = *v;
  }
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) throw wrong_type("seed", *v, "an integer");
    r.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
  }
  s.temperature = float(get_number(body, "temperature", 0.0, 2.0).value_or(1.0));
  s.top_p = float(get_number(body, "top_p", 0.0, 1.0, true).value_or(1.0));
  s.frequency_penalty = float(get_number(body, "frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.presence_penalty = float(get_number(body, "presence_penalty", -2.0, 2.0).value_or(0.0));
  s.top_k =
      int(std::max<int64_t>(0, get_int(body, "top_k", -1, kIntMax).value_or(0)));  // vLLM: -1 off
  s.min_p = float(get_number(body, "min_p", 0.0, 1.0).value_or(0.0));
  s.repetition_penalty =
      float(get_number(body, "repetition_penalty", 0.0, 100.0, true).value_or(1.0));
  if (auto v = get_bool(body, "ignore_eos")) p.ignore_eos = *v;
  parse_stop(body, p);

  if (ep == Endpoint::completions) {
    if (auto v = get_int(body, "logprobs", 0, 20)) {
      r.want_logprobs = true;
      r.top_logprobs = int(*v);
    }
  } else {
    r.want_logprobs = get_bool(body, "logprobs").value_or(false);
    if (auto v = get_int(body, "top_logprobs", 0, 20)) {
      if (!r.want_logprobs)
        throw bad("top_logprobs", "'top_logprobs' needs 'logprobs' set to true.");
      r.top_logprobs = int(*v);
    }
  }
  parse_extension_fields(body, r);  // llama.cpp's and vLLM's (server/extension_fields.h)
  s.logprobs = r.want_logprobs;
  s.top_logprobs = r.top_logprobs;
  if (ep == Endpoint::completions) {
    r.echo = get_bool(body, "echo").value_or(false);
    if (auto v = get_int(body, "prompt_logprobs", 0, 20)) r.prompt_logprobs = int(*v);
    p.prompt_logprobs = (r.echo && r.want_logprobs) || r.prompt_logprobs >= 0;
    p.prompt_top_logprobs =
        std::max(r.echo && r.want_logprobs ? r.top_logprobs : 0, std::max(r.prompt_logprobs, 0));
    if (r.max_tokens == 0 && !p.prompt_logprobs)
      throw bad("max_tokens",
                "'max_tokens' must be >= 1; 0 only scores the prompt, with 'echo' and "
                "'logprobs' or with 'prompt_logprobs'.");
  }
  parse_resume(body, r);
  return r;
}

namespace {

// One prompt's engine request: its tokens checked against the vocabulary and the context, and
// max_tokens fixed. `which` names the prompt in messages when the request has several.
tzero::RequestParams resolve_one(const OpenAiRequest& r, std::vector<int32_t> tokens,
                                 const tzero::Engine& engine, const std::string& which) {
  const int n_ctx = engine.info().n_ctx;
  const std::string param = r.endpoint == Endpoint::chat ? "messages" : "prompt";
  const int n_vocab = engine.info().n_vocab;
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab)
      throw bad(param, which + "Token id " + std::to_string(t) + " is outside the vocabulary of " +
                           std::to_string(n_vocab) + " tokens.");
  if (tokens.empty()) {
    if (engine.info().bos < 0) throw bad(param, which + "The prompt is empty.");
    tokens.push_back(engine.info().bos);
  }
  tzero::RequestParams p = r.params;
  const int n_prompt = int(tokens.size());
  if (r.max_tokens == 0) {  // scoring only: the whole context may be prompt
    if (n_prompt > n_ctx)
      throw bad(param,
                which + "This model's maximum context length is " + std::to_string(n_ctx) +
                    " tokens. However, your prompt is " + std::to_string(n_prompt) + " tokens.",
                "context_length_exceeded");
    p.prompt_tokens = std::move(tokens);
    p.max_tokens = 0;
    return p;
  }
  if (n_prompt >= n_ctx)
    throw bad(param,
              which + "This model's maximum context length is " + std::to_string(n_ctx) +
                  " tokens. However, your prompt is " + std::to_string(n_prompt) +
                  " tokens, which leaves no room for a completion.",
              "context_length_exceeded");
  const int room = n_ctx - n_prompt;
  int max_tokens =
      r.max_tokens.value_or(r.endpoint == Endpoint::chat || r.until_context ? room : 16);
  if (!r.max_tokens) max_tokens = std::min(max_tokens, room);
  if (max_tokens > room)
    throw bad("max_tokens",
              which + "This model's maximum context length is " + std::to_string(n_ctx) +
                  " tokens. However, you requested " +
                  std::to_string(int64_t(n_prompt) + max_tokens) + " tokens (" +
                  std::to_string(n_prompt) + " in the prompt, " + std::to_string(max_tokens) +
                  " for the completion).",
              "context_length_exceeded");
  for (int32_t t : r.params.stop_tokens)
    if (t >= n_vocab)
      throw bad("stop_token_ids", "Token id " + std::to_string(t) +
                                      " is outside the vocabulary of " + std::to_string(n_vocab) +
                                      " tokens.");
  if (r.resume) {
    for (int32_t t : r.resume_tokens)
      if (t >= n_vocab)
        throw bad("tzero_resume.tokens", "Token id " + std::to_string(t) +
                                             " is outside the vocabulary of " +
                                             std::to_string(n_vocab) + " tokens.");
    if (int64_t(r.resume_tokens.size()) > max_tokens)
      throw bad("tzero_resume.tokens",
                std::to_string(r.resume_tokens.size()) + " resumed tokens are more than " +
                    "max_tokens (" + std::to_string(max_tokens) +
                    "): they count as generated, so max_tokens must be the original request's.");
    tokens.insert(tokens.end(), r.resume_tokens.begin(), r.resume_tokens.end());
    p.n_resumed = int(r.resume_tokens.size());
  }
  p.prompt_tokens = std::move(tokens);
  p.max_tokens = max_tokens;
  return p;
}

}  // namespace

void resolve_prompt(OpenAiRequest& r, const tzero::Engine& engine,
                    const std::string& chat_template) {
  r.resolved.clear();
  if (r.endpoint == Endpoint::chat) {
    std::string text;
    if (r.tools || r.tool_turns) {
      std::string source;
      try {
        // The one rule (chat/template_choice.h): the named format or file, the model's, chatml.
        source = tzero::choose_chat_template(engine.info().chat_template, chat_template).source;
      } catch (const tzero::Error& e) {
        throw bad("messages", e.what());
      }
      if (r.tools) {
        r.tools->format = tool_format_of(source);
        r.params.grammar = tool_grammar(*r.tools);
      }
      const int32_t bos = engine.info().bos, eos = engine.info().eos;
      text = render_tool_prompt(source, r.chat_messages, r.tools.get(),
                                bos >= 0 ? engine.token_text(bos) : "",
                                eos >= 0 ? engine.token_text(eos) : "");
    } else {
      try {
        text = engine.apply_chat_template(r.messages, chat_template);
      } catch (const tzero::RequestError& e) {
        throw bad("messages", e.what());
      }
    }
    // The template spells the turn markers as text: parse them as the special tokens. BOS by
    // the one rule (runtime/prompt.h): the vocabulary's add_bos_token, none when the template
    // wrote it.
    r.resolved.push_back(resolve_one(r, engine.tokenize_chat(text), engine, ""));
  } else {
    const bool several = r.prompts.size() > 1;
    for (size_t i = 0; i < r.prompts.size(); ++i) {
      const OpenAiRequest::PromptInput& in = r.prompts[i];
      std::vector<int32_t> tokens =
          in.tokens.empty() ? engine.tokenize_prompt(in.text, false) : in.tokens;
      r.resolved.push_back(resolve_one(r, std::move(tokens), engine,
                                       several ? "prompt[" + std::to_string(i) + "]: " : ""));
    }
  }
  r.params = r.resolved.front();
}

}  // namespace tzero::server
