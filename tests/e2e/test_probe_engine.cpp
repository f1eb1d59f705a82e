// tzero probe against tzero's batched engine, before `tzero serve` exists: a minimal
// /v1/completions server in this process (httplib + tzero::Engine with a background stepping
// thread, real token streaming) on a generated model. Loaded runs share batches with the fillers,
// and the probe must still find every run identical: the engine's batch invariance, seen from
// the outside.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_support.h"
#include "tzero/engine.h"

namespace {
using oj = nlohmann::ordered_json;

// One request's events, handed from the engine's thread to the HTTP thread.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<tzero::TokenEvent> events;
};

class EngineServer {
 public:
  explicit EngineServer(const std::string& model) {
    tzero::EngineOptions o;
    o.model_path = model;
    o.n_threads = 1;
    o.max_seqs = 16;
    engine_ = std::make_unique<tzero::Engine>(o);
    engine_->start();
    svr_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      const oj body = oj::parse(req.body);
      tzero::RequestParams p;
      p.prompt = body.value("prompt", "");
      p.max_tokens = body.value("max_tokens", 16);
      p.sampling.temperature = body.value("temperature", 0.0f);
      p.sampling.seed = body.value("seed", uint64_t(0));
      const bool logprobs = body.contains("logprobs") && body["logprobs"].is_number();
      p.sampling.logprobs = logprobs;
      p.sampling.top_logprobs = logprobs ? body["logprobs"].get<int>() : 0;
      auto pending = std::make_shared<Pending>();
      engine_->submit(p, [pending](const tzero::TokenEvent& e) {
        std::lock_guard<std::mutex> lock(pending->mu);
        pending->events.push_back(e);
        pending->cv.notify_all();
      });
      const tzero::EngineStats st = engine_->stats();
      for (int busy = st.running + st.waiting, m = max_busy_.load();
           busy > m && !max_busy_.compare_exchange_weak(m, busy);) {
      }
      auto next = [pending] {
        std::unique_lock<std::mutex> lock(pending->mu);
        pending->cv.wait(lock, [&] { return !pending->events.empty(); });
        tzero::TokenEvent e = pending->events.front();
        pending->events.pop_front();
        return e;
      };
      // A choice for these events: text, and logprobs in the legacy layout.
      auto choice = [this, logprobs](const std::vector<tzero::TokenEvent>& events) {
        oj c = {{"index", 0}, {"text", ""}};
        oj tokens = oj::array(), values = oj::array(), tops = oj::array();
        std::string reason;
        for (const auto& e : events) {
          if (e.finished) {
            reason = tzero::to_string(e.finish_reason);
            continue;
          }
          c["text"] = c["text"].get<std::string>() + e.text;
          tokens.push_back(engine_->detokenize({e.token}));
          values.push_back(e.logprob);
          oj top = oj::object();
          for (const auto& t : e.top) top[t.text] = t.logprob;
          tops.push_back(top);
        }
        c["logprobs"] =
            logprobs && !tokens.empty()
                ? oj{{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}}
                : oj(nullptr);
        c["finish_reason"] = reason.empty() ? oj(nullptr) : oj(reason);
        return c;
      };
      const oj head = {{"object", "text_completion"},
                       {"model", "tiny"},
                       {"system_fingerprint", engine_->info().fingerprint}};
      if (!body.value("stream", false)) {
        std::vector<tzero::TokenEvent> events;
        do events.push_back(next());
        while (!events.back().finished);
        oj j = head;
        j["choices"] = oj::array({choice(events)});
        res.set_content(j.dump(-1, ' ', false, oj::error_handler_t::replace), "application/json");
        return;
      }
      res.set_chunked_content_provider("text/event-stream", [next, choice, head](
                                                                size_t, httplib::DataSink& sink) {
        const tzero::TokenEvent e = next();
        oj j = head;
        j["choices"] = oj::array({choice({e})});
        std::string s = "data: " + j.dump(-1, ' ', false, oj::error_handler_t::replace) + "\n\n";
        if (e.finished) s += "data: [DONE]\n\n";
        if (!sink.write(s.data(), s.size())) return false;
        if (e.finished) sink.done();
        return true;
      });
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~EngineServer() {
    svr_.stop();
    thread_.join();
    engine_->stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The most requests the engine held (running or waiting) just after a submit.
  int max_busy() const { return max_busy_.load(); }

 private:
  std::unique_ptr<tzero::Engine> engine_;
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> max_busy_{0};
};
}  // namespace

TEST(ProbeEngine, BatchedEngineIsIdenticalUnderLoad) {
  EngineServer server(tzero::test::generated_model("tiny", "q8_0"));
  const auto r =
      tzero::test::run_tzero({"probe", "--base-url", server.url(), "--model", "tiny", "--runs", "2",
                              "--concurrency", "6", "--max-tokens", "12", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["identical"].get<bool>());
  EXPECT_TRUE(j["logprobs"].get<bool>());
  EXPECT_EQ(j["system_fingerprints"].size(), 1u);
  EXPECT_GE(server.max_busy(), 4) << "the loaded runs shared the engine with the fillers";
  for (const auto& p : j["prompts"]) {
    EXPECT_EQ(p["unique_outputs"], 1) << p["prompt"];
    EXPECT_EQ(p["seeded"]["unique_outputs"], 1) << p["prompt"];
    EXPECT_GT(p["run_details"][0]["tokens"].get<int>(), 0);
  }
}
