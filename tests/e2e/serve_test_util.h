// Shared pieces of the `tzero serve` tests: a server on the tiny generated model, and the
// generated text, tokens and logprobs of a response read the same way from JSON and SSE.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/serve_process.h"
#include "support/test_support.h"

namespace tzero::test {

// `tzero serve` on the tiny q8_0 model (chat through the chatml template) with extra flags.
inline std::unique_ptr<ServeProcess> serve_tiny(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      "-m", generated_model("tiny", "q8_0"), "-t", "2", "--chat-template", "chatml"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = std::make_unique<ServeProcess>(args);
  EXPECT_TRUE(p->ok()) << "tzero serve did not start: " << p->stderr_text();
  return p;
}

// Streams `body` to /v1/completions and gives up after `keep` bytes (the client drops the
// connection). Returns what arrived.
inline std::string stream_and_drop(int port, const nlohmann::json& body, size_t keep) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string got;
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    got.append(d, n);
    return got.size() < keep;
  };
  c.send(req);
  c.stop();
  return got;
}

// What one choice produced.
struct Gen {
  std::string text, finish;
  std::vector<std::string> tokens;
  std::vector<double> logprobs;     // exact: the server prints floats losslessly
  std::vector<nlohmann::json> top;  // per token
  nlohmann::json usage;
  std::string fingerprint;
  bool operator==(const Gen& o) const {
    return text == o.text && finish == o.finish && tokens == o.tokens && logprobs == o.logprobs &&
           top == o.top;
  }
};

inline std::ostream& operator<<(std::ostream& os, const Gen& g) {
  return os << "text=" << nlohmann::json(g.text).dump() << " finish=" << g.finish
            << " n_tokens=" << g.tokens.size();
}

// Appends a logprobs object (either endpoint's shape) to g.
inline void add_logprobs(Gen& g, const nlohmann::json& lp) {
  if (lp.is_null()) return;
  if (lp.contains("content")) {
    for (const auto& c : lp["content"]) {
      g.tokens.push_back(c["token"]);
      g.logprobs.push_back(c["logprob"]);
      g.top.push_back(c["top_logprobs"]);
    }
  } else {
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
      g.tokens.push_back(lp["tokens"][i]);
      g.logprobs.push_back(lp["token_logprobs"][i]);
      g.top.push_back(lp["top_logprobs"][i]);
    }
  }
}

// Choice `index` of a whole response.
inline Gen gen_of_response(const nlohmann::json& r, size_t index = 0) {
  Gen g;
  const auto& c = r.at("choices").at(index);
  g.text = c.contains("message") ? c["message"]["content"].get<std::string>()
                                 : c["text"].get<std::string>();
  g.finish = c["finish_reason"];
  add_logprobs(g, c["logprobs"]);
  g.usage = r["usage"];
  g.fingerprint = r["system_fingerprint"];
  return g;
}

// Choice `index` of an SSE body; checks the framing (every event JSON, [DONE] last).
inline Gen gen_of_stream(const std::string& body, size_t index = 0) {
  Gen g;
  const std::vector<std::string> data = sse_data(body);
  EXPECT_FALSE(data.empty());
  if (data.empty()) return g;
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_EQ(body.substr(body.size() - 14), "data: [DONE]\n\n");
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    const auto j = nlohmann::json::parse(data[i]);
    if (j.contains("usage") && !j["usage"].is_null()) g.usage = j["usage"];
    if (j.contains("system_fingerprint")) g.fingerprint = j["system_fingerprint"];
    for (const auto& c : j["choices"]) {
      if (c["index"] != index) continue;
      if (c.contains("delta")) {
        if (c["delta"].contains("content")) g.text += c["delta"]["content"].get<std::string>();
      } else {
        g.text += c["text"].get<std::string>();
      }
      if (!c["finish_reason"].is_null()) g.finish = c["finish_reason"];
      add_logprobs(g, c["logprobs"]);
    }
  }
  return g;
}

// POST with stream: true; returns the raw SSE body.
inline std::string post_stream(httplib::Client& c, const std::string& path, nlohmann::json body,
                               int* status = nullptr, std::string* content_type = nullptr) {
  body["stream"] = true;
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  if (status) *status = res ? res->status : -1;
  if (!res) return "";
  if (content_type) *content_type = res->get_header_value("Content-Type");
  return res->body;
}

}  // namespace tzero::test
