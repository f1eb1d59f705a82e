#include "e2e/fake_openai_server.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace tzero::test {

namespace {
using oj = nlohmann::ordered_json;

struct Tok {
  std::string text;
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;
};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<Tok> make_tokens(const std::string& key, int n, int top_n) {
  static const char* words[] = {" the", " cat", " sat",   " on",  " a",   " warm",
                                " mat", " and", " slept", " all", " day", " long"};
  const int nw = int(sizeof words / sizeof *words);
  std::vector<Tok> out;
  uint64_t h = hash(key);
  for (int i = 0; i < n; ++i) {
    h = mix(h);
    Tok t;
    const int w = int(h % uint64_t(nw));
    t.text = words[w];
    t.logprob = -0.001 - double((h >> 16) % 1000003) / 370001.0;  // full-precision doubles
    for (int j = 0; j < top_n; ++j)
      t.top.push_back({words[(w + j) % nw], j == 0 ? t.logprob : t.logprob - 0.5 * j - 0.01 * i});
    out.push_back(t);
  }
  return out;
}

oj legacy_logprobs(const std::vector<Tok>& toks, size_t from, size_t to, size_t offset) {
  oj tokens = oj::array(), values = oj::array(), tops = oj::array(), offsets = oj::array();
  for (size_t i = from; i < to; ++i) {
    tokens.push_back(toks[i].text);
    values.push_back(toks[i].logprob);
    oj top = oj::object();
    for (const auto& [t, v] : toks[i].top) top[t] = v;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += toks[i].text.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

oj chat_logprobs(const std::vector<Tok>& toks, size_t from, size_t to) {
  oj content = oj::array();
  for (size_t i = from; i < to; ++i) {
    oj top = oj::array();
    for (const auto& [t, v] : toks[i].top) top.push_back({{"token", t}, {"logprob", v}});
    content.push_back(
        {{"token", toks[i].text}, {"logprob", toks[i].logprob}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}
}  // namespace

FakeOpenAIServer::FakeOpenAIServer(FakeServerOptions o)
    : o_(std::move(o)), svr_(std::make_unique<httplib::Server>()) {
  svr_->Post(R"(/v1/(chat/)?completions)", [this](const httplib::Request& req,
                                                  httplib::Response& res) {
    const int n_req = ++requests_;
    ++in_flight_;
    const bool under_load = in_flight_.load() > 1;
    const bool chat = req.path.find("/chat/") != std::string::npos;
    auto fail = [&](int status, const std::string& message) {
      res.status = status;
      res.set_content(
          oj{{"error", {{"message", message}, {"type", "invalid_request_error"}}}}.dump(),
          "application/json");
      --in_flight_;
    };
    if (n_req <= o_.fail_429_first) {
      res.set_header("Retry-After", "0");
      return fail(429, "rate limited, try again");
    }
    oj body;
    try {
      body = oj::parse(req.body);
    } catch (const std::exception&) {
      return fail(400, "the body is not JSON");
    }
    const std::string model = body.value("model", "");
    if (!o_.only_model.empty() && model != o_.only_model)
      return fail(404, "The model `" + model + "` does not exist.");
    std::string prompt;
    if (chat) {
      if (!body.contains("messages") || body["messages"].empty())
        return fail(400, "messages is required");
      prompt = body["messages"].back().value("content", "");
    } else {
      prompt = body.value("prompt", "");
    }
    const int n = std::min(body.value("max_tokens", 16), o_.max_tokens);
    const double temperature = body.value("temperature", 1.0);
    const uint64_t seed = body.value("seed", uint64_t(0));
    const bool stream = body.value("stream", false);
    int top_n = 0;
    bool want_logprobs = false;
    if (chat) {
      want_logprobs = body.value("logprobs", false);
      top_n = body.value("top_logprobs", 0);
    } else if (body.contains("logprobs") && body["logprobs"].is_number()) {
      want_logprobs = true;
      top_n = body["logprobs"].get<int>();
    }
    const bool logprobs = want_logprobs && o_.logprobs;
    const std::string key = prompt + "|" + std::to_string(temperature) + "|" + std::to_string(seed);
    std::vector<Tok> toks = make_tokens(key, n, top_n);
    int count;
    {
      std::lock_guard<std::mutex> lock(mu_);
      count = ++seen_[key];
    }
    const size_t k = size_t(o_.position);
    if (k < toks.size() && o_.perturb_every > 0 && count % o_.perturb_every == 0) {
      toks[k].logprob = std::nextafter(toks[k].logprob, 0.0);  // one ulp
      if (!toks[k].top.empty()) toks[k].top[0].second = toks[k].logprob;
    }
    if (k < toks.size() && o_.token_under_load && under_load) {
      toks[k].text = " CHANGED";
      toks[k].logprob -= 0.25;
      if (!toks[k].top.empty()) toks[k].top[0] = {toks[k].text, toks[k].logprob};
    }
    oj head = {{"id", "fake-" + std::to_string(n_req)},
               {"object",
                chat ? (stream ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
               {"created", 0},
               {"model", model},
               {"system_fingerprint", o_.fingerprint}};
    if (!stream) {
      if (o_.delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(o_.delay_ms));
      std::string text;
      for (const auto& t : toks) text += t.text;
      oj choice = {{"index", 0}};
      if (chat)
        choice["message"] = {{"role", "assistant"}, {"content", text}};
      else
        choice["text"] = text;
      choice["logprobs"] = !logprobs ? oj(nullptr)
                           : chat    ? chat_logprobs(toks, 0, toks.size())
                                     : legacy_logprobs(toks, 0, toks.size(), 0);
      choice["finish_reason"] = "length";
      oj j = head;
      j["choices"] = oj::array({choice});
      res.set_content(j.dump(), "application/json");
      --in_flight_;
      return;
    }
    // Leaves the in-flight count once: on the last event (so the client never sees the answer
    // complete while it still counts), or when the stream is cut off.
    auto left = std::make_shared<std::atomic<bool>>(false);
    auto leave = [this, left] {
      if (!left->exchange(true)) --in_flight_;
    };
    auto step = std::make_shared<size_t>(0);
    auto offset = std::make_shared<size_t>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, toks, head, chat, logprobs, step, offset, leave](size_t, httplib::DataSink& sink) {
          auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
          const size_t i = (*step)++;
          if (i > 0 && o_.token_delay_ms)
            std::this_thread::sleep_for(std::chrono::milliseconds(o_.token_delay_ms));
          oj choice = {{"index", 0}};
          if (i < toks.size()) {
            if (chat)
              choice["delta"] = i == 0 ? oj{{"role", "assistant"}, {"content", toks[i].text}}
                                       : oj{{"content", toks[i].text}};
            else
              choice["text"] = toks[i].text;
            choice["logprobs"] = !logprobs ? oj(nullptr)
                                 : chat    ? chat_logprobs(toks, i, i + 1)
                                           : legacy_logprobs(toks, i, i + 1, *offset);
            choice["finish_reason"] = nullptr;
            *offset += toks[i].text.size();
          } else {
            if (chat)
              choice["delta"] = oj::object();
            else
              choice["text"] = "";
            choice["logprobs"] = nullptr;
            choice["finish_reason"] = "length";
          }
          oj j = head;
          j["choices"] = oj::array({choice});
          if (i >= toks.size()) leave();
          if (!send("data: " + j.dump() + "\n\n")) return false;
          if (i >= toks.size()) {
            if (!send("data: [DONE]\n\n")) return false;
            sink.done();
          }
          return true;
        },
        [leave](bool) { leave(); });
  });
  port_ = svr_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("the fake server cannot bind a port");
  thread_ = std::thread([this] { svr_->listen_after_bind(); });
  while (!svr_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeOpenAIServer::~FakeOpenAIServer() {
  svr_->stop();
  thread_.join();
}

}  // namespace tzero::test
