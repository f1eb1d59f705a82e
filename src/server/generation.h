// One OpenAI generation request in flight: its n choices are n engine requests whose events
// the engine's stepping thread hands over (Job::callback) and the HTTP thread takes (wait),
// turning them into one JSON response (collect_response) or SSE chunks (StreamWriter).
// Per-choice outcomes and timings go to Metrics from the engine thread, so a choice is counted
// even when its client has gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/harmony.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "tzero/engine.h"

namespace tzero::server {

using Clock = std::chrono::steady_clock;

class Job : public std::enable_shared_from_this<Job> {
 public:
  struct Event {
    int choice = 0;
    tzero::TokenEvent e;
  };

  Job(int n_choices, Clock::time_point arrival, Metrics& metrics);

  // The engine callback of choice i (keeps the job alive while the engine holds it).
  tzero::TokenCallback callback(int choice);
  void add_engine_id(uint64_t id);
  // Cancels every choice still running (idempotent; finished ids are ignored by the engine).
  void cancel(tzero::Engine& engine);
  // Marks the client gone: the choices still running count as "disconnected". True the first
  // time while a choice is still running (count the disconnect then).
  bool mark_disconnected();

  // Takes the events that arrived, waiting up to `timeout` for the first.
  std::vector<Event> take(std::chrono::milliseconds timeout);
  // Every choice has delivered its final event (they may not all be taken yet).
  bool finished() const;

 private:
  void on_event(int choice, const tzero::TokenEvent& e);

  struct Timing {
    Clock::time_point first, last;
    int n = 0;
  };
  Metrics& metrics_;
  const Clock::time_point arrival_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::vector<uint64_t> ids_;
  std::vector<Timing> timing_;
  int open_;
  bool disconnected_ = false;
};

// Folds taken events into per-choice results. `token_text` gives a token's piece.
class ChoiceAccumulator {
 public:
  // n_per_prompt: choices per prompt (a request with several prompts has n of each).
  ChoiceAccumulator(int n_choices, int n_per_prompt, const tzero::Engine& engine, bool logprobs);
  // Chat with tools: each reply is split into content and tool calls (ids from id_prefix).
  void set_tools(std::shared_ptr<const ToolRequest> tools, const std::string& id_prefix);
  // Chat with a harmony model: each reply is split by its channels (server/harmony.h).
  void set_harmony(bool harmony);
  void add(const Job::Event& ev);
  const std::vector<ChoiceOut>& choices() const { return choices_; }
  Usage usage() const;
  bool any_cancelled() const { return cancelled_; }
  // A choice whose grammar went over its matching budget (FinishReason::grammar_budget): the
  // request's answer is this error instead.
  const std::optional<ApiError>& failure() const { return failure_; }

 private:
  const tzero::Engine& engine_;
  bool logprobs_;
  int n_per_prompt_;
  std::vector<ChoiceOut> choices_;
  Usage usage_;
  bool cancelled_ = false;
  std::optional<ApiError> failure_;
  std::shared_ptr<const ToolRequest> tools_;
  std::string id_prefix_;
  bool harmony_ = false;
  std::vector<HarmonySplitter> split_;  // harmony: one per choice
};

// Turns taken events into the SSE bytes of one stream.
class StreamWriter {
 public:
  StreamWriter(ResponseMeta meta, int n_choices, bool include_usage, const tzero::Engine& engine);
  // The opening chunks (chat: the role delta of every choice).
  std::string open();
  // Chunks for these events.
  std::string add(const std::vector<Job::Event>& events);
  // The closing bytes once every choice finished: the usage chunk when asked and [DONE], or an
  // error event (and no [DONE]) when a choice was cancelled (the server shutting down) or
  // failed (its grammar over budget).
  std::string close();
  Usage usage() const { return usage_; }  // so far

 private:
  // The prompt chunk (echo, prompt_logprobs) of a choice, once; "" when none is due.
  std::string prompt_chunk(int choice);
  bool wants_prompt_chunk() const;
  bool prompt_scored() const;  // prompt events arrive (so the chunk waits for them)

  ResponseMeta meta_;
  bool include_usage_;
  const tzero::Engine& engine_;
  std::vector<size_t> offset_;                 // completions text_offset per choice
  std::vector<std::vector<TokenOut>> prompt_;  // per choice: its prompt events so far
  std::vector<bool> prompt_sent_;
  std::vector<ToolCallParser> parsers_;    // chat with tools: one per choice
  std::vector<HarmonySplitter> harmony_;   // chat with a harmony model: one per choice
  std::vector<int> n_calls_;               // tool calls sent per choice
  std::vector<std::vector<int32_t>> ids_;  // per choice: token ids not yet sent in a chunk
  Usage usage_;
  bool cancelled_ = false;
  std::optional<ApiError> failure_;
};

// The error a choice that ended with FinishReason::grammar_budget makes of its request.
ApiError grammar_budget_error(int choice, int n_generated);

}  // namespace tzero::server
