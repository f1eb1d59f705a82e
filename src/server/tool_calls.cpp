// Tool calls: request, prompt, grammar and reply parsing (server/tool_calls.h).
#include "server/tool_calls.h"

#include <map>

#include "base/bounded_json.h"
#include "base/error.h"
#include "chat/chat_template.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/structured_output.h"

namespace tzero::server {

using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kHermesOpen = "<tool_call>";
constexpr const char* kHermesClose = "</tool_call>";

using json_fields::bad;

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (const char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// Prefixes every rule name of a GBNF text (outside literals, classes and comments), so several
// grammars can live in one.
std::string prefix_rules(const std::string& g, const std::string& prefix) {
  std::string out;
  auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  };
  bool in_braces = false;  // {m,n}: numbers, not names
  for (size_t i = 0; i < g.size();) {
    const char c = g[i];
    if (c == '{' || c == '}') in_braces = c == '{';
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < g.size() && g[j] != close) j += g[j] == '\\' ? 2 : 1;
      out.append(g, i, j + 1 - i);
      i = j + 1;
    } else if (c == '#') {
      const size_t j = g.find('\n', i);
      i = j == std::string::npos ? g.size() : j;
    } else if (word(c)) {
      size_t j = i;
      while (j < g.size() && word(g[j])) ++j;
      if (!in_braces) out += prefix;
      out.append(g, i, j - i);
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// GBNF of any text that does not contain `trigger` (rules PREFIX-0 .. PREFIX-(k-1), one per
// matched prefix length, from the trigger's failure function), starting at PREFIX-0.
std::string avoiding(const std::string& trigger, const std::string& prefix) {
  const size_t k = trigger.size();
  std::vector<size_t> fail(k + 1, 0);
  for (size_t i = 1, j = 0; i < k; ++i) {
    while (j > 0 && trigger[i] != trigger[j]) j = fail[j];
    if (trigger[i] == trigger[j]) ++j;
    fail[i + 1] = j;
  }
  auto next = [&](size_t state, char c) {
    while (state > 0 && trigger[state] != c) state = fail[state];
    return trigger[state] == c ? state + 1 : 0;
  };
  std::string alphabet;
  for (const char c : trigger)
    if (alphabet.find(c) == std::string::npos) alphabet += c;
  auto escaped = [](char c) {
    std::string s;
    if (c == ']' || c == '\\' || c == '^' || c == '-' || c == '[') s += '\\';
    return s + c;
  };
  std::string g;
  for (size_t st = 0; st < k; ++st) {
    std::map<size_t, std::string> by_target;  // target state -> the trigger's chars going there
    for (const char c : alphabet) by_target[next(st, c)] += c;
    std::string rule = prefix + "-" + std::to_string(st) + " ::= \"\"";
    // Every character outside the trigger's alphabet returns to state 0.
    std::string other = "[^";
    for (const char c : alphabet) other += escaped(c);
    rule += " | " + other + "] " + prefix + "-0";
    for (const auto& [target, chars] : by_target) {
      if (target == k) continue;  // would complete the trigger
      std::string cls = "[";
      for (const char c : chars) cls += escaped(c);
      rule += " | " + cls + "] " + prefix + "-" + std::to_string(target);
    }
    g += rule + "\n";
  }
  return g;
}

std::string call_rules(const ToolRequest& t) {
  const char* args_key = t.format == ToolFormat::llama3 ? "parameters" : "arguments";
  std::string g = "space ::= \" \"?\n";
  std::string alts;
  for (size_t i = 0; i < t.tools.size(); ++i) {
    const Tool& tool = t.tools[i];
    if (t.choice == ToolChoice::named && tool.name != t.named) continue;
    const std::string p = "t" + std::to_string(i) + "-";
    const std::string args = tool.parameters.is_null()
                                 ? json_object_gbnf()
                                 : schema_grammar(tool.parameters, "tools[" + std::to_string(i) +
                                                                       "].function.parameters");
    g += prefix_rules(args, p);
    g += "call-" + std::to_string(i) + " ::= \"{\" space " + gbnf_literal("\"name\"") +
         " space \":\" space " + gbnf_literal("\"" + tool.name + "\"") + " space \",\" space " +
         gbnf_literal(std::string("\"") + args_key + "\"") + " space \":\" space " + p +
         "root space \"}\"\n";
    alts += (alts.empty() ? "" : " | ") + std::string("call-") + std::to_string(i);
  }
  return g + "call ::= " + alts + "\n";
}

}  // namespace

std::shared_ptr<ToolRequest> parse_tools(const ojson& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return nullptr;
  if (!it->is_array()) throw bad("tools", "'tools' must be an array.", "invalid_type");
  auto t = std::make_shared<ToolRequest>();
  t->tools_json = *it;
  for (size_t i = 0; i < it->size(); ++i) {
    const ojson& spec = (*it)[i];
    const std::string p = "tools[" + std::to_string(i) + "]";
    if (!spec.is_object() || spec.value("type", "") != "function" || !spec.contains("function") ||
        !spec["function"].is_object())
      throw bad(p, "Each tool must be {\"type\": \"function\", \"function\": {...}}.");
    const ojson& f = spec["function"];
    for (auto k = f.begin(); k != f.end(); ++k)
      if (k.key() != "name" && k.key() != "description" && k.key() != "parameters" &&
          k.key() != "strict")
        throw bad(p + ".function." + k.key(), "Unrecognized function field: " + k.key(),
                  "unknown_parameter");
    Tool tool;
    if (!f.contains("name") || !f["name"].is_string() ||
        !valid_name(tool.name = f["name"].get<std::string>()))
      throw bad(p + ".function.name",
                "A function name is 1 to 64 letters, digits, underscores or dashes.");
    for (const Tool& other : t->tools)
      if (other.name == tool.name)
        throw bad(p + ".function.name", "Two tools are named '" + tool.name + "'.");
    if (f.contains("description") && f["description"].is_string())
      tool.description = f["description"].get<std::string>();
    if (f.contains("parameters") && !f["parameters"].is_null()) {
      if (!f["parameters"].is_object())
        throw bad(p + ".function.parameters", "'parameters' must be a JSON schema object.");
      tool.parameters = f["parameters"];
    }
    t->tools.push_back(std::move(tool));
  }
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "none")
        t->choice = ToolChoice::none;
      else if (s == "auto")
        t->choice = ToolChoice::automatic;
      else if (s == "required")
        t->choice = ToolChoice::required;
      else
        throw bad("tool_choice", "'tool_choice' is none, auto, required or a function object.");
    } else if (c->is_object() && c->value("type", "") == "function" && c->contains("function") &&
               (*c)["function"].is_object() && (*c)["function"].contains("name") &&
               (*c)["function"]["name"].is_string()) {
      t->choice = ToolChoice::named;
      t->named = (*c)["function"]["name"].get<std::string>();
      bool known = false;
      for (const Tool& tool : t->tools) known = known || tool.name == t->named;
      if (!known) throw bad("tool_choice", "tool_choice names '" + t->named + "', not a tool.");
    } else {
      throw bad("tool_choice", "'tool_choice' is none, auto, required or a function object.");
    }
  }
  if (auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) throw bad("parallel_tool_calls", "'parallel_tool_calls' is a boolean.");
    t->parallel = p->get<bool>();
  }
  if (t->tools.empty()) {
    if (t->choice == ToolChoice::required || t->choice == ToolChoice::named)
      throw bad("tool_choice", "tool_choice asks for a call but 'tools' is empty.");
    return nullptr;
  }
  return t;
}

ToolFormat tool_format_of(const std::string& src) {
  if (src.find(kHermesOpen) != std::string::npos) return ToolFormat::hermes;
  if (src.find("<|start_header_id|>") != std::string::npos) return ToolFormat::llama3;
  return ToolFormat::hermes;
}

std::string tool_grammar(const ToolRequest& t) {
  if (t.choice == ToolChoice::none) return "";
  std::string g = call_rules(t);
  const bool forced = t.choice != ToolChoice::automatic;
  if (t.format == ToolFormat::llama3) {
    g += forced ? "root ::= call\n" : "root ::= call | \"\" | [^{] .*\n";
    return g;
  }
  g += "block ::= " + gbnf_literal(std::string(kHermesOpen) + "\n") + " call " +
       gbnf_literal(std::string("\n") + kHermesClose) + "\n";
  g += t.parallel ? "blocks ::= block (\"\\n\" block)*\n" : "blocks ::= block\n";
  if (forced) return g + "root ::= blocks\n";
  return g + avoiding(kHermesOpen, "text") + "root ::= text-0 blocks?\n";
}

// --- the prompt ------------------------------------------------------------------------------

namespace {

std::string content_text(const ojson& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array())
    for (const ojson& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        text += part["text"].get<std::string>();
  return text;
}

// A call as the model writes it in this format.
std::string call_text(ToolFormat f, const ojson& call) {
  const ojson fn = call.value("function", ojson::object());
  ojson args = fn.value("arguments", ojson::object());
  if (args.is_string()) {
    try {
      args = parse_json_bounded<ojson>(args.get<std::string>());
    } catch (const ojson::exception&) {
    }
  }
  ojson c = {{"name", fn.value("name", "")},
             {f == ToolFormat::llama3 ? "parameters" : "arguments", args}};
  const std::string json = c.dump(-1, ' ', false, ojson::error_handler_t::replace);
  if (f == ToolFormat::llama3) return json;
  return std::string(kHermesOpen) + "\n" + json + "\n" + kHermesClose;
}

std::string tools_instructions(const ToolRequest& t) {
  std::string list;
  for (const ojson& spec : t.tools_json)
    list += "\n" + spec.dump(-1, ' ', false, ojson::error_handler_t::replace);
  if (t.format == ToolFormat::llama3)
    return "You have access to the following functions. To call a function, respond with only "
           "a JSON object of the form {\"name\": function name, \"parameters\": an object of "
           "argument names and values}.\n" +
           list.substr(1);
  return "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
         "You are provided with function signatures within <tools></tools> XML tags:\n<tools>" +
         list +
         "\n</tools>\n\nFor each function call, return a json object with function name and "
         "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
         "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
}

}  // namespace

std::string render_tool_prompt(const std::string& source, const ojson& messages,
                               const ToolRequest* tools, const std::string& bos_token,
                               const std::string& eos_token) {
  const ToolFormat format = tools ? tools->format : tool_format_of(source);
  // Templates that know tools read `tools`, tool_calls (arguments as objects) and role "tool".
  const bool native = source.find("tool") != std::string::npos;
  ojson msgs = ojson::array();
  for (const ojson& m : messages) {
    ojson n = m;
    n["content"] = m.contains("content") && !m["content"].is_null()
                       ? ojson(content_text(m["content"]))
                       : ojson("");
    if (n.value("role", "") == "developer") n["role"] = "system";
    if (native && m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (ojson& c : n["tool_calls"])
        if (c.contains("function") && c["function"].contains("arguments") &&
            c["function"]["arguments"].is_string()) {
          try {
            c["function"]["arguments"] =
                parse_json_bounded<ojson>(c["function"]["arguments"].get<std::string>());
          } catch (const ojson::exception&) {
          }
        }
    }
    if (!native) {
      // Written as text: a tool's answer as a user turn, an assistant's calls in its content.
      if (n["role"] == "tool")
        n = {{"role", "user"},
             {"content",
              "<tool_response>\n" + n["content"].get<std::string>() + "\n</tool_response>"}};
      if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
        std::string text = n["content"].get<std::string>();
        for (const ojson& c : m["tool_calls"])
          text += (text.empty() ? "" : "\n") + call_text(format, c);
        n = {{"role", "assistant"}, {"content", text}};
      }
    }
    msgs.push_back(std::move(n));
  }
  ojson vars = ojson::object();
  if (tools && !native && tools->choice != ToolChoice::none) {
    const std::string text = tools_instructions(*tools);
    if (!msgs.empty() && msgs[0].value("role", "") == "system")
      msgs[0]["content"] = msgs[0]["content"].get<std::string>() + "\n\n" + text;
    else
      msgs.insert(msgs.begin(), ojson{{"role", "system"}, {"content", text}});
  }
  vars["messages"] = msgs;
  if (tools && native && tools->choice != ToolChoice::none) vars["tools"] = tools->tools_json;
  vars["add_generation_prompt"] = true;
  vars["bos_token"] = bos_token;
  vars["eos_token"] = eos_token;
  try {
    return ChatTemplate(source).render(vars);
  } catch (const tzero::Error& e) {
    throw bad("messages", std::string("chat template: ") + e.what());
  }
}

// --- the reply --------------------------------------------------------------------------------

ToolCallParser::ToolCallParser(ToolFormat format, std::string id_prefix)
    : format_(format), id_prefix_(std::move(id_prefix)) {}

std::string ToolCallParser::push(const std::string& text) {
  pending_ += text;
  std::string out;
  if (format_ == ToolFormat::llama3) {
    if (in_calls_) return out;
    if (!content_seen_) {
      const size_t first = pending_.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) return out;  // only space so far: undecided
      if (pending_[first] == '{') {
        in_calls_ = true;
        return out;
      }
      content_seen_ = true;
    }
    out.swap(pending_);
    return out;
  }
  if (!in_calls_) {
    const size_t at = pending_.find(kHermesOpen);
    if (at == std::string::npos) {
      // Hold back the longest end that could begin the opening tag.
      const std::string open = kHermesOpen;
      size_t keep = 0;
      for (size_t n = std::min(open.size() - 1, pending_.size()); n > 0; --n)
        if (pending_.compare(pending_.size() - n, n, open, 0, n) == 0) {
          keep = n;
          break;
        }
      out = pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return out;
    }
    out = pending_.substr(0, at);
    pending_.erase(0, at);
    in_calls_ = true;
  }
  scan();
  return out;
}

void ToolCallParser::scan() {
  while (true) {
    const size_t open = pending_.find(kHermesOpen);
    if (open == std::string::npos) return;
    const size_t close = pending_.find(kHermesClose, open);
    if (close == std::string::npos) return;
    const std::string inner = pending_.substr(open + std::string(kHermesOpen).size(),
                                              close - open - std::string(kHermesOpen).size());
    try {
      const ojson c = parse_json_bounded<ojson>(inner);
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return;
      ToolCall call;
      call.id = id_prefix_ + std::to_string(n_calls_++);
      call.name = c["name"].get<std::string>();
      const ojson args = c.value("arguments", ojson::object());
      call.arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
      ready_.push_back(std::move(call));
    } catch (const ojson::exception&) {
      return;  // not a call after all: left as text
    }
    pending_.erase(0, close + std::string(kHermesClose).size());
  }
}

std::vector<ToolCall> ToolCallParser::take() {
  std::vector<ToolCall> out;
  out.swap(ready_);
  return out;
}

std::string ToolCallParser::finish() {
  if (format_ == ToolFormat::llama3 && in_calls_) {
    try {
      const ojson c = parse_json_bounded<ojson>(pending_);
      if (c.is_object() && c.contains("name") && c["name"].is_string()) {
        ToolCall call;
        call.id = id_prefix_ + std::to_string(n_calls_++);
        call.name = c["name"].get<std::string>();
        call.arguments = c.value("parameters", ojson::object())
                             .dump(-1, ' ', false, ojson::error_handler_t::replace);
        ready_.push_back(std::move(call));
        pending_.clear();
      }
    } catch (const ojson::exception&) {
    }
  }
  std::string rest;
  rest.swap(pending_);
  // Between and after calls only line breaks are expected; anything else is content.
  if (n_calls_ > 0 && rest.find_first_not_of(" \t\r\n") == std::string::npos) rest.clear();
  return rest;
}

}  // namespace tzero::server
