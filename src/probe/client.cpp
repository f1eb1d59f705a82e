#include "probe/client.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "base/bounded_json.h"
#include "base/excerpt.h"

namespace tzero::probe {

namespace {
using Clock = std::chrono::steady_clock;

const ojson* find(const ojson& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string str(const ojson* j) {
  return j && j->is_string() ? j->get<std::string>() : "";
}

ExactNumber number_or_throw(const ojson& j, const char* what) {
  auto n = exact_number(j);
  if (!n) throw ProbeError(std::string("the response has a ") + what + " that is not a number");
  return *n;
}

// logprobs.content[]: {token, logprob, top_logprobs: [{token, logprob}]}
void read_chat_logprobs(const ojson& content, std::vector<SampledToken>& out) {
  for (const auto& item : content) {
    SampledToken t;
    t.text = str(find(item, "token"));
    const ojson* lp = find(item, "logprob");
    if (!lp) throw ProbeError("the response has a logprobs entry without a logprob");
    t.logprob = number_or_throw(*lp, "logprob");
    if (const ojson* top = find(item, "top_logprobs"); top && top->is_array())
      for (const auto& a : *top) {
        const ojson* v = find(a, "logprob");
        if (v) t.top.push_back({str(find(a, "token")), number_or_throw(*v, "top logprob")});
      }
    out.push_back(std::move(t));
  }
}

// logprobs: {tokens[], token_logprobs[], top_logprobs[] of {text: logprob} (or null)}
void read_legacy_logprobs(const ojson& lp, std::vector<SampledToken>& out) {
  const ojson* tokens = find(lp, "tokens");
  const ojson* values = find(lp, "token_logprobs");
  const ojson* tops = find(lp, "top_logprobs");
  if (!tokens || !tokens->is_array() || !values || !values->is_array() ||
      values->size() != tokens->size())
    throw ProbeError("the response's logprobs have no tokens/token_logprobs of the same length");
  for (size_t i = 0; i < tokens->size(); ++i) {
    SampledToken t;
    t.text = str(&(*tokens)[i]);
    t.logprob = number_or_throw((*values)[i], "token_logprob");
    if (tops && tops->is_array() && i < tops->size()) {
      const ojson& top = (*tops)[i];
      if (top.is_object())
        for (auto it = top.begin(); it != top.end(); ++it)
          t.top.push_back({it.key(), number_or_throw(it.value(), "top logprob")});
      else if (top.is_array())
        for (const auto& a : top)
          if (const ojson* v = find(a, "logprob"))
            t.top.push_back({str(find(a, "token")), number_or_throw(*v, "top logprob")});
    }
    out.push_back(std::move(t));
  }
}

// Appends a choice's logprobs to out; returns false when the choice has none (missing or null).
bool read_logprobs(const ojson& choice, std::vector<SampledToken>& out) {
  const ojson* lp = find(choice, "logprobs");
  if (!lp || !lp->is_object()) return false;
  if (lp->contains("content")) {
    const ojson* content = find(*lp, "content");
    if (!content || !content->is_array()) return false;
    read_chat_logprobs(*content, out);
    return true;
  }
  if (!find(*lp, "tokens")) return false;
  read_legacy_logprobs(*lp, out);
  return true;
}

// The message of an error body already parsed: error.message, error (a string), detail or
// message, as the server wrote it; nullopt when it has none of these.
template <class Json>
std::optional<std::string> message_of(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  auto pick = [](const Json& v) -> std::string {
    return v.is_string() ? v.template get<std::string>() : v.is_null() ? "" : v.dump();
  };
  if (auto e = j.find("error"); e != j.end()) {
    if (e->is_object())
      if (auto m = e->find("message"); m != e->end()) return pick(*m);
    return pick(*e);
  }
  if (auto d = j.find("detail"); d != j.end()) return pick(*d);
  if (auto m = j.find("message"); m != j.end()) return pick(*m);
  return std::nullopt;
}

void throw_if_error(const ojson& j) {
  if (!find(j, "error")) return;
  ProbeError e("the server answered an error: " + server_text(message_of(j).value_or("")));
  e.answer_error = true;
  throw e;
}

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = char(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}
}  // namespace

std::string request_body(const CompletionRequest& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model;
  if (r.chat)
    j["messages"] = nlohmann::ordered_json::array({{{"role", "user"}, {"content", r.prompt}}});
  else
    j["prompt"] = r.prompt;
  j["max_tokens"] = r.max_tokens;
  j["temperature"] = r.temperature;
  if (r.seed) j["seed"] = *r.seed;
  j["stream"] = r.stream;
  if (r.logprobs) {
    if (r.chat) {
      j["logprobs"] = true;
      j["top_logprobs"] = r.top_logprobs;
    } else {
      j["logprobs"] = r.top_logprobs;
    }
  }
  return j.dump();
}

std::string server_text(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  // Flattened up to the cut only: the text may be a 64 MiB body.
  size_t cut = std::min(text.size(), kMaxQuotedChars);
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;  // not inside a UTF-8 character
  std::string head(text.substr(0, cut));
  for (char& c : head)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string out = excerpt(head);
  if (cut < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

Completion parse_completion(const std::string& body, bool chat, const ParseLimits& limits) {
  const ojson j = parse_exact(body, "the response", limits);
  throw_if_error(j);
  const ojson* choices = find(j, "choices");
  if (!choices || !choices->is_array() || choices->empty())
    throw ProbeError("the response has no choices: " + server_text(body));
  const ojson& c0 = (*choices)[0];
  Completion c;
  if (!chat)
    c.text = str(find(c0, "text"));
  else if (const ojson* message = find(c0, "message"))
    c.text = str(find(*message, "content"));
  c.finish_reason = str(find(c0, "finish_reason"));
  c.system_fingerprint = str(find(j, "system_fingerprint"));
  c.has_logprobs = read_logprobs(c0, c.tokens);
  if (const ojson* ext = find(c0, "tzero")) c.tzero_extension = ext->dump();
  return c;
}

bool apply_chunk(const std::string& json_text, bool chat, Completion& c,
                 const ParseLimits& limits) {
  const ojson j = parse_exact(json_text, "a streamed event", limits);
  throw_if_error(j);
  if (c.system_fingerprint.empty()) c.system_fingerprint = str(find(j, "system_fingerprint"));
  const ojson* choices = find(j, "choices");
  if (!choices || !choices->is_array() || choices->empty()) return false;  // a usage chunk
  const ojson& c0 = (*choices)[0];
  if (chat) {
    if (const ojson* delta = find(c0, "delta")) c.text += str(find(*delta, "content"));
  } else {
    c.text += str(find(c0, "text"));
  }
  if (const std::string fr = str(find(c0, "finish_reason")); !fr.empty()) c.finish_reason = fr;
  if (const ojson* ext = find(c0, "tzero")) c.tzero_extension = ext->dump();
  return read_logprobs(c0, c.tokens);
}

void SseAccumulator::feed(const char* data, size_t n) {
  auto too_long = [] {
    return ProbeError("the streamed response has a line longer than " +
                      std::to_string(kMaxLineBytes >> 20) + " MiB");
  };
  size_t from = buf_.size();  // buf_ holds no '\n' before this feed: scan only the new bytes
  buf_.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = buf_.find('\n', from)) != std::string::npos; start = from = nl + 1) {
    if (nl - start > kMaxLineBytes) throw too_long();
    std::string l = buf_.substr(start, nl - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    line(l);
  }
  buf_.erase(0, start);
  if (buf_.size() > kMaxLineBytes) throw too_long();
}

void SseAccumulator::line(const std::string& l) {
  if (done_) return;
  if (l.empty()) return dispatch();
  if (l[0] == ':') return;  // a comment (keep-alive)
  const size_t colon = l.find(':');
  const std::string field = l.substr(0, colon);
  std::string value = colon == std::string::npos ? "" : l.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.erase(0, 1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_ += value;
    has_data_ = true;
  } else if (field == "error") {  // llama.cpp's server reports a failure mid-stream this way
    ProbeError e("the server reported an error in the stream: " + error_message(value));
    e.answer_error = true;
    throw e;
  }
}

void SseAccumulator::dispatch() {
  if (!has_data_) return;
  const std::string d = std::move(data_);
  data_.clear();
  has_data_ = false;
  if (d == "[DONE]") {
    done_ = true;
    return;
  }
  ++events_;
  try {
    if (apply_chunk(d, chat_, c_, limits_)) any_logprobs_ = true;
  } catch (ProbeError& e) {  // a malformed event or an error object: the server's answer
    if (!e.limit) e.answer_error = true;
    throw;
  }
}

Completion SseAccumulator::partial() const {
  Completion c = c_;
  c.has_logprobs = any_logprobs_;
  if (!any_logprobs_) c.tokens.clear();
  return c;
}

Completion SseAccumulator::finish() {
  if (!buf_.empty()) {
    std::string l = buf_;
    buf_.clear();
    if (!l.empty() && l.back() == '\r') l.pop_back();
    line(l);
  }
  if (!done_) dispatch();
  if (events_ == 0) throw ProbeError("the streamed response has no events");
  if (!done_ && c_.finish_reason.empty())
    throw ProbeError("the streamed response was cut off (no finish_reason and no data: [DONE])");
  c_.has_logprobs = any_logprobs_;
  if (!any_logprobs_) c_.tokens.clear();
  return c_;
}

std::string error_message(const std::string& body) {
  // Bounded: a body nested too deeply is quoted as text, never built.
  const auto j = parse_json_bounded_or_discarded(body);
  if (const auto m = message_of(j)) return server_text(*m);
  const std::string s = server_text(body);
  return s.empty() ? "(empty body)" : s;
}

double retry_delay_s(const std::string& retry_after, int attempt) {
  if (!retry_after.empty()) {
    char* end = nullptr;
    const double v = std::strtod(retry_after.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(v) && v >= 0) return std::min(v, kMaxRetryAfterS);
  }
  return std::min(0.5 * std::pow(2.0, attempt), 8.0);
}

Client::Client(const std::string& base_url, std::string api_key, double timeout_s, int max_retries)
    : api_key_(std::move(api_key)), timeout_s_(timeout_s), max_retries_(max_retries) {
  static const std::regex re(R"(^(https?)://(\[[^\]]+\]|[^/:?#]+)(?::(\d+))?(/[^?#]*)?$)",
                             std::regex::icase);
  std::smatch m;
  if (!std::regex_match(base_url, m, re))
    throw ProbeError("--base-url " + base_url + ": not an http:// or https:// URL");
  std::string scheme = m[1].str();
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::tolower);
  host_ = m[2].str();
  port_ = m[3].matched ? std::atoi(m[3].str().c_str()) : scheme == "https" ? 443 : 80;
  if (port_ <= 0 || port_ > 65535) throw ProbeError("--base-url " + base_url + ": bad port");
  origin_ = scheme + "://" + host_ + ":" + std::to_string(port_);
  path_ = m[4].matched ? m[4].str() : "";
  while (!path_.empty() && path_.back() == '/') path_.pop_back();
  if (path_.size() < 3 || path_.compare(path_.size() - 3, 3, "/v1") != 0) path_ += "/v1";
}

std::string Client::endpoint(bool chat) const {
  return origin_ + path_ + (chat ? "/chat/completions" : "/completions");
}

Completion Client::complete(const CompletionRequest& r, const std::atomic<bool>* abort,
                            std::atomic<bool>* first_byte) const {
  const std::string body = r.raw_body.empty() ? request_body(r) : r.raw_body;
  const std::string path = path_ + (r.chat ? "/chat/completions" : "/completions");
  const auto secs = std::chrono::duration<double>(timeout_s_);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(secs);
  auto timed_out = [&] {
    std::ostringstream t;
    t << timeout_s_;
    return ProbeError(endpoint(r.chat) + ": no answer within " + t.str() + " s (--timeout)");
  };
  // Parsing is part of the request: it stops at the deadline too.
  ParseLimits limits;
  limits.deadline = deadline;
  for (int attempt = 0;; ++attempt) {
    httplib::Client cli(origin_);
    cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(secs));
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(secs));
    cli.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(secs));
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    req.set_header("Accept", r.stream ? "text/event-stream" : "application/json");
    if (!api_key_.empty()) req.set_header("Authorization", "Bearer " + api_key_);
    int status = 0;
    bool sse = false;
    std::string retry_after, raw;
    SseAccumulator acc(r.chat, limits);
    std::optional<ProbeError> failed;  // why the receiver stopped reading
    size_t received = 0;
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      retry_after = res.get_header_value("Retry-After");
      sse = r.stream && status == 200 &&
            res.get_header_value("Content-Type").find("text/event-stream") != std::string::npos;
      // The body in one allocation (growing by doubling would briefly hold twice the body).
      const uint64_t length = res.get_header_value<uint64_t>("Content-Length");
      if (!sse && length > 0) raw.reserve(size_t(std::min<uint64_t>(length, kMaxResponseBytes)));
      return true;
    };
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      if (first_byte) first_byte->store(true);
      received += n;
      if (received > kMaxResponseBytes) {
        failed = ProbeError(endpoint(r.chat) + ": the response is larger than " +
                            std::to_string(kMaxResponseBytes >> 20) + " MiB");
        return false;
      }
      if (sse) {
        try {
          acc.feed(d, n);
        } catch (const ProbeError& e) {
          if (Clock::now() >= deadline) {
            failed = timed_out();
          } else {
            failed = ProbeError(endpoint(r.chat) + ": " + e.what());
            failed->answer_error = e.answer_error;
            failed->limit = e.limit;
          }
          return false;
        }
      } else {
        raw.append(d, n);
      }
      return !(abort && abort->load()) && !(sse && acc.done()) && Clock::now() < deadline;
    };
    // The deadline holds whatever the server sends (a header dripped byte by byte resets every
    // read timeout): a watchdog shuts the connection down when it passes.
    std::mutex mu;
    std::condition_variable cv;
    bool sent = false, expired = false;
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_until(lock, deadline, [&] { return sent; })) {
        expired = true;
        cli.stop();
      }
    });
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const auto t0 = Clock::now();
    const bool ok = cli.send(req, res, err);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(mu);
      sent = true;
    }
    cv.notify_all();
    watchdog.join();
    if (failed) throw *failed;
    if (!ok && err == httplib::Error::Canceled && (acc.done() || (abort && abort->load()))) {
      // We stopped reading: after [DONE], or because the caller no longer needs the answer.
    } else if (expired || Clock::now() >= deadline) {
      throw timed_out();
    } else if (!ok) {
      if (err == httplib::Error::Connection || err == httplib::Error::ConnectionTimeout) {
        const double left_s = std::chrono::duration<double>(deadline - Clock::now()).count();
        std::string why = connect_failure(host_, port_, std::clamp(left_s, 0.001, 5.0));
        if (why.empty())
          why = err == httplib::Error::ConnectionTimeout ? "timed out" : "connection failed";
        throw ProbeError("cannot reach " + origin_ + path_ + ": " + why);
      }
      if (err == httplib::Error::Read)
        throw ProbeError(endpoint(r.chat) + ": the server closed the connection without answering");
      throw ProbeError(endpoint(r.chat) + ": " + lower_first(httplib::to_string(err)));
    }
    if (status == 429 && attempt < max_retries_) {
      const double wait_s = retry_delay_s(retry_after, attempt);
      const auto wait = std::chrono::duration<double>(wait_s);
      if (Clock::now() + wait >= deadline) {
        std::ostringstream m;
        m << endpoint(r.chat) << ": HTTP 429: " << error_message(raw) << " (a retry after "
          << wait_s << " s would pass the " << timeout_s_ << " s --timeout)";
        ProbeError e(m.str());
        e.http_status = status;
        e.answer_error = true;
        throw e;
      }
      std::this_thread::sleep_for(wait);
      continue;
    }
    if (status != 200) {
      ProbeError e(endpoint(r.chat) + ": HTTP " + std::to_string(status) + ": " +
                   error_message(raw));
      e.http_status = status;
      e.answer_error = true;
      throw e;
    }
    Completion c;
    try {
      // Cut off by the caller (a filler no longer needed): what arrived, unchecked.
      const bool aborted = sse && abort && abort->load() && !acc.done();
      c = aborted ? acc.partial() : sse ? acc.finish() : parse_completion(raw, r.chat, limits);
    } catch (ProbeError& e) {
      if (Clock::now() >= deadline) throw timed_out();
      if (e.limit) throw ProbeError(endpoint(r.chat) + ": " + e.what());  // ends the probe
      e.answer_error = true;  // malformed, empty or cut off: the server answered, unusably
      throw;
    }
    if (Clock::now() >= deadline && !(abort && abort->load())) throw timed_out();
    c.latency_ms = ms;
    c.retries = attempt;
    return c;
  }
}

std::string connect_failure(const std::string& host_in, int port, double timeout_s) {
  std::string host = host_in;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int g = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (g != 0) return g == EAI_NONAME ? "no such host" : lower_first(gai_strerror(g));
  std::string why = "connection failed";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int e = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      e = errno;
      if (e == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int pr = poll(&p, 1, int(timeout_s * 1000));
        socklen_t len = sizeof e;
        if (pr == 0)
          e = ETIMEDOUT;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
          e = errno;
      }
    }
    close(fd);
    if (e == 0) {
      freeaddrinfo(res);
      return "";
    }
    why = e == ETIMEDOUT ? "timed out" : lower_first(std::strerror(e));
  }
  freeaddrinfo(res);
  return why;
}

}  // namespace tzero::probe
