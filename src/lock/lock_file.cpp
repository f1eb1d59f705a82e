#include "lock/lock_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/bounded_json.h"
#include "base/error.h"

namespace tzero::lock {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// 1-based line of byte offset `at` in text.
int line_at(const std::string& text, size_t at) {
  int line = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

// The line where "key" first appears in the text (1 when it does not).
int line_of_key(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  return at == std::string::npos ? 1 : line_at(text, at);
}

struct Reader {
  std::string path;
  int line;
  std::string what;  // "requests[3].result"
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw Error(path + ":" + std::to_string(line) + ": " + what + (what.empty() ? "" : ".") +
                field + ": " + msg);
  }
  const json& need(const json& obj, const std::string& field) const {
    auto it = obj.find(field);
    if (it == obj.end()) fail(field, "missing");
    return *it;
  }
  std::string str(const json& obj, const std::string& field, bool required = true) const {
    auto it = obj.find(field);
    if (it == obj.end()) {
      if (required) fail(field, "missing");
      return "";
    }
    if (!it->is_string()) fail(field, "must be a string, not " + std::string(it->type_name()));
    return it->get<std::string>();
  }
  int integer(const json& obj, const std::string& field, bool required = true, int dflt = 0) const {
    auto it = obj.find(field);
    if (it == obj.end()) {
      if (required) fail(field, "missing");
      return dflt;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > (1 << 30))
      fail(field, "must be an integer");
    return it->get<int>();
  }
  const json& object(const json& obj, const std::string& field) const {
    const json& v = need(obj, field);
    if (!v.is_object()) fail(field, "must be an object, not " + std::string(v.type_name()));
    return v;
  }
};

LockResult read_result(const Reader& rd, const json& j) {
  LockResult r;
  r.text = rd.str(j, "text");
  r.finish_reason = rd.str(j, "finish_reason");
  r.logits_digest = rd.str(j, "logits_digest", false);
  r.stop_reason = rd.str(j, "stop_reason", false);
  r.n_prompt = rd.integer(j, "n_prompt", false, -1);
  if (auto it = j.find("tokens"); it != j.end()) {
    if (!it->is_array()) rd.fail("tokens", "must be an array of token ids");
    std::vector<int32_t> t;
    for (const json& v : *it) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
        rd.fail("tokens", "must be an array of token ids (integers >= 0)");
      t.push_back(v.get<int32_t>());
    }
    r.tokens = std::move(t);
  }
  if (auto it = j.find("logprobs"); it != j.end()) {
    if (!it->is_array()) rd.fail("logprobs", "must be an array of strings");
    std::vector<std::string> l;
    for (const json& v : *it) {
      if (!v.is_string()) rd.fail("logprobs", "must be an array of strings");
      l.push_back(v.get<std::string>());
    }
    r.logprobs = std::move(l);
  }
  return r;
}

}  // namespace

json result_json(const LockResult& r) {
  ojson j;
  j["text"] = r.text;
  j["finish_reason"] = r.finish_reason;
  if (r.tokens) j["tokens"] = *r.tokens;
  if (!r.logits_digest.empty()) j["logits_digest"] = r.logits_digest;
  if (!r.stop_reason.empty()) j["stop_reason"] = r.stop_reason;
  if (r.n_prompt >= 0) j["n_prompt"] = r.n_prompt;
  if (r.logprobs) j["logprobs"] = *r.logprobs;
  return json::parse(j.dump());
}

json config_json(const EngineConfig& c) {
  return json{{"kind", "local"},      {"model", c.model},
              {"ctx", c.ctx},         {"kernels", c.kernels},
              {"mode", c.mode},       {"kv_type", c.kv_type},
              {"threads", c.threads}, {"chat_template", c.chat_template}};
}

std::string lock_text(const LockFile& lock) {
  std::ostringstream o;
  o << "{\"tzero_lock\": " << lock.version << ",\n";
  json source =
      lock.kind == "local"
          ? config_json(lock.engine)
          : json{{"kind", "server"}, {"base_url", lock.base_url}, {"model_name", lock.model_name}};
  o << "\"source\": " << source.dump() << ",\n";
  o << "\"fingerprint\": " << json(lock.fingerprint).dump() << ",\n";
  o << "\"manifest\": " << lock.manifest.dump() << ",\n";
  o << "\"environment\": " << lock.environment.dump() << ",\n";
  o << "\"prompt_set\": " << json(lock.prompt_set).dump() << ",\n";
  o << "\"requests\": [\n";
  for (size_t i = 0; i < lock.entries.size(); ++i) {
    const LockEntry& e = lock.entries[i];
    ojson line;
    line["id"] = e.request.id;
    line["line"] = e.request.line;
    line["endpoint"] = endpoint_name(e.request.endpoint);
    line["request"] = parse_json_bounded<ojson>(e.request.body);
    line["result"] = ojson::parse(result_json(e.result).dump());
    o << line.dump() << (i + 1 < lock.entries.size() ? ",\n" : "\n");
  }
  o << "]}\n";
  return o.str();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot write");
    out << text;
    out.flush();
    if (!out) throw Error(path + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(path + ": cannot write: " + ec.message());
}

void write_lock_file(const std::string& path, const LockFile& lock) {
  write_file_atomic(path, lock_text(lock));
}

LockFile parse_lock_text(const std::string& text, const std::string& path) {
  json j;
  try {
    j = parse_json_bounded(text);  // nested deeper than kMaxJsonDepth: a parse_error too
  } catch (const json::parse_error& e) {
    const bool at_end = e.byte >= text.size();
    throw Error(path + ":" + std::to_string(line_at(text, e.byte == 0 ? 0 : e.byte - 1)) + ": " +
                (at_end ? "the lock file ends early (truncated?)" : "the lock file is damaged") +
                ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("tzero_lock"))
    throw Error(path + ":1: not a tzero lock file (no \"tzero_lock\" field)");
  Reader rd{path, line_of_key(text, "tzero_lock"), ""};
  const json& v = j["tzero_lock"];
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    rd.fail("tzero_lock", "must be a version number (1)");
  if (v.get<int64_t>() > kLockVersion)
    rd.fail("tzero_lock", "version " + std::to_string(v.get<int64_t>()) +
                              " is newer than this tzero reads (" + std::to_string(kLockVersion) +
                              "): verify it with the tzero that wrote it, or a newer one");
  LockFile lock;
  lock.version = v.get<int>();
  rd.line = line_of_key(text, "source");
  const json& src = rd.object(j, "source");
  rd.what = "source";
  lock.kind = rd.str(src, "kind");
  if (lock.kind == "local") {
    EngineConfig& c = lock.engine;
    c.model = rd.str(src, "model");
    c.ctx = rd.integer(src, "ctx");
    c.kernels = rd.str(src, "kernels");
    c.mode = rd.str(src, "mode");
    c.kv_type = rd.str(src, "kv_type");
    c.threads = rd.integer(src, "threads");
    c.chat_template = rd.str(src, "chat_template", false);
  } else if (lock.kind == "server") {
    lock.base_url = rd.str(src, "base_url");
    lock.model_name = rd.str(src, "model_name", false);
  } else {
    rd.fail("kind", "must be \"local\" or \"server\", not \"" + lock.kind + "\"");
  }
  rd.what = "";
  rd.line = line_of_key(text, "fingerprint");
  lock.fingerprint = rd.str(j, "fingerprint");
  rd.line = line_of_key(text, "manifest");
  lock.manifest = rd.object(j, "manifest");
  rd.line = line_of_key(text, "environment");
  lock.environment = rd.object(j, "environment");
  rd.line = line_of_key(text, "prompt_set");
  lock.prompt_set = rd.str(j, "prompt_set", false);
  rd.line = line_of_key(text, "requests");
  const json& reqs = rd.need(j, "requests");
  if (!reqs.is_array()) rd.fail("requests", "must be an array");
  if (reqs.empty()) rd.fail("requests", "the lock holds no requests");

  // The writer puts request i on line first + i; a file reformatted since names the key's line.
  const int first = rd.line + 1;
  int text_lines = 1;
  for (char ch : text) text_lines += ch == '\n';
  const bool one_per_line = text_lines >= first + int(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Reader r{path, one_per_line ? first + int(i) : rd.line, "requests[" + std::to_string(i) + "]"};
    const json& e = reqs[i];
    if (!e.is_object()) r.fail("", "must be an object");
    LockEntry entry;
    const std::string id = r.str(e, "id");
    const int line = r.integer(e, "line", false, 0);
    const std::string ep = r.str(e, "endpoint");
    if (ep != "completions" && ep != "chat")
      r.fail("endpoint", "must be \"completions\" or \"chat\", not \"" + ep + "\"");
    const json& body = r.object(e, "request");
    const std::string where = path + ":" + std::to_string(r.line);
    entry.request = parse_lock_request(body.dump(), where + ": " + r.what + ".request", line, id);
    entry.request.where = where;
    entry.request.id = id;
    if (endpoint_name(entry.request.endpoint) != ep)
      r.fail("endpoint", "\"" + ep + "\" does not match the request's fields");
    const json& res = r.object(e, "result");
    r.what += ".result";
    entry.result = read_result(r, res);
    lock.entries.push_back(std::move(entry));
  }
  return lock;
}

LockFile read_lock_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the lock file");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_lock_text(s.str(), path);
}

}  // namespace tzero::lock
