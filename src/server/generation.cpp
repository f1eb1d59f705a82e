// Requests in flight and their responses (server/generation.h).
#include "server/generation.h"

#include "grammar/token_mask.h"
#include "server/api_error.h"

namespace tzero::server {

namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

TokenOut token_out(const tzero::TokenEvent& e, const tzero::Engine& engine) {
  return TokenOut{e.token, engine.token_text(e.token), e.logprob, e.top, e.rank};
}

}  // namespace

Job::Job(int n_choices, Clock::time_point arrival, Metrics& metrics)
    : metrics_(metrics), arrival_(arrival), timing_(size_t(n_choices)), open_(n_choices) {}

tzero::TokenCallback Job::callback(int choice) {
  std::shared_ptr<Job> self = shared_from_this();
  return [self, choice](const tzero::TokenEvent& e) { self->on_event(choice, e); };
}

void Job::on_event(int choice, const tzero::TokenEvent& e) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Timing& t = timing_[size_t(choice)];
  if (!e.finished) {
    if (t.n == 0) t.first = now;
    t.last = now;
    ++t.n;
  } else {
    const std::string reason = disconnected_ && e.finish_reason == tzero::FinishReason::cancelled
                                   ? "disconnected"
                                   : to_string(e.finish_reason);
    metrics_.count_choice(reason, e.n_prompt, e.n_generated, seconds(t.first - arrival_),
                          t.n >= 2 ? seconds(t.last - t.first) / (t.n - 1) : 0, t.n >= 1, t.n >= 2);
    --open_;
  }
  events_.push_back({choice, e});
  cv_.notify_all();
}

void Job::add_engine_id(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  ids_.push_back(id);
}

void Job::cancel(tzero::Engine& engine) {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_ == 0) return;
    ids = ids_;
  }
  for (uint64_t id : ids) engine.cancel(id);
}

bool Job::mark_disconnected() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool first = !disconnected_ && open_ > 0;
  disconnected_ = true;
  return first;
}

std::vector<Job::Event> Job::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<Event> out(std::make_move_iterator(events_.begin()),
                         std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool Job::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_ == 0;
}

// --- ChoiceAccumulator ------------------------------------------------------------------------

ChoiceAccumulator::ChoiceAccumulator(int n_choices, int n_per_prompt, const tzero::Engine& engine,
                                     bool logprobs)
    : engine_(engine),
      logprobs_(logprobs),
      n_per_prompt_(n_per_prompt),
      choices_(size_t(n_choices)) {
  usage_.speculative = engine.options().spec_type != "none";
}

void ChoiceAccumulator::add(const Job::Event& ev) {
  ChoiceOut& c = choices_[size_t(ev.choice)];
  if (ev.e.prompt) {  // a prompt token's score (echo with logprobs, prompt_logprobs)
    c.prompt.push_back(token_out(ev.e, engine_));
    return;
  }
  c.text += ev.e.text;
  if (harmony_) {  // the same split as the stream's (StreamWriter::add), text as it arrived
    const HarmonySplitter::Piece p = split_[size_t(ev.choice)].push(
        ev.e.finished ? std::string() : harmony_marker(engine_, ev.e.token), ev.e.text);
    c.reasoning += p.reasoning;
    c.harmony_content += p.content;
  }
  if (!ev.e.finished) {
    c.token_ids.push_back(ev.e.token);
    if (logprobs_) c.tokens.push_back(token_out(ev.e, engine_));
    return;
  }
  c.finish_reason = to_string(ev.e.finish_reason);
  c.logits_digest = ev.e.logits_digest;
  c.stop_reason = to_string(ev.e.stop_reason);
  if (ev.e.finish_reason == tzero::FinishReason::cancelled) cancelled_ = true;
  if (ev.e.finish_reason == tzero::FinishReason::grammar_budget && !failure_)
    failure_ = grammar_budget_error(ev.choice, ev.e.n_generated);
  if (harmony_) {  // split by channels as the text arrived: reasoning, content, tool calls
    HarmonySplitter& split = split_[size_t(ev.choice)];
    const HarmonySplitter::Piece p = split.finish();
    c.reasoning += p.reasoning;
    c.harmony_content += p.content;
    c.text = c.harmony_content;
    c.tool_calls = split.take();
    if (!c.tool_calls.empty() && ev.e.finish_reason == tzero::FinishReason::stop)
      c.finish_reason = "tool_calls";
  } else if (tools_) {
    ToolCallParser parser(tools_->format, id_prefix_ + std::to_string(ev.choice) + "_");
    std::string content = parser.push(c.text);
    content += parser.finish();
    c.tool_calls = parser.take();
    if (!c.tool_calls.empty()) {
      c.text = content;
      if (ev.e.finish_reason == tzero::FinishReason::stop) c.finish_reason = "tool_calls";
    }
  }
  usage_.add(ev.e, ev.choice % n_per_prompt_ == 0);
}

void ChoiceAccumulator::set_tools(std::shared_ptr<const ToolRequest> tools,
                                  const std::string& id_prefix) {
  if (tools && tools->choice == ToolChoice::none) tools = nullptr;
  tools_ = std::move(tools);
  id_prefix_ = id_prefix;
}

void ChoiceAccumulator::set_harmony(bool harmony) {
  harmony_ = harmony;
  split_.clear();
  if (harmony)
    for (size_t i = 0; i < choices_.size(); ++i)
      split_.emplace_back(id_prefix_ + std::to_string(i) + "_");
}

Usage ChoiceAccumulator::usage() const {
  return usage_;
}

// --- StreamWriter -----------------------------------------------------------------------------

StreamWriter::StreamWriter(ResponseMeta meta, int n_choices, bool include_usage,
                           const tzero::Engine& engine)
    : meta_(std::move(meta)),
      include_usage_(include_usage),
      engine_(engine),
      offset_(size_t(n_choices), 0),
      prompt_(size_t(n_choices)),
      prompt_sent_(size_t(n_choices), false),
      ids_(size_t(n_choices)) {
  usage_.speculative = engine.options().spec_type != "none";
  const std::string call_prefix = "call_" + meta_.id.substr(meta_.id.find('-') + 1) + "_";
  if (meta_.harmony) {
    for (int i = 0; i < n_choices; ++i)
      harmony_.emplace_back(call_prefix + std::to_string(i) + "_");
    n_calls_.assign(size_t(n_choices), 0);
  } else if (meta_.tools && meta_.tools->choice != ToolChoice::none) {
    const std::string prefix = "call_" + meta_.id.substr(meta_.id.find('-') + 1) + "_";
    for (int i = 0; i < n_choices; ++i)
      parsers_.emplace_back(meta_.tools->format, prefix + std::to_string(i) + "_");
    n_calls_.assign(size_t(n_choices), 0);
  }
}

bool StreamWriter::wants_prompt_chunk() const {
  return meta_.endpoint == Endpoint::completions && (meta_.echo || meta_.prompt_logprobs >= 0);
}

bool StreamWriter::prompt_scored() const {
  return meta_.prompt_logprobs >= 0 || (meta_.echo && meta_.logprobs);
}

std::string StreamWriter::prompt_chunk(int choice) {
  const size_t c = size_t(choice);
  if (prompt_sent_[c] || !wants_prompt_chunk()) return "";
  prompt_sent_[c] = true;
  if (meta_.echo && meta_.logprobs)
    for (const TokenOut& t : echo_tokens(meta_, choice, prompt_[c])) offset_[c] += t.piece.size();
  return sse_prompt_chunk(meta_, choice, prompt_[c], include_usage_);
}

std::string StreamWriter::open() {
  std::string out;
  if (meta_.endpoint == Endpoint::chat)
    for (size_t i = 0; i < offset_.size(); ++i)
      out += sse_chunk(meta_, int(i), "", {}, 0, true, "", include_usage_);
  // Echo without scores: the prompt goes first, at once.
  if (wants_prompt_chunk() && !prompt_scored())
    for (size_t i = 0; i < offset_.size(); ++i) out += prompt_chunk(int(i));
  return out;
}

std::string StreamWriter::add(const std::vector<Job::Event>& events) {
  std::string out;
  for (const Job::Event& ev : events) {
    const tzero::TokenEvent& e = ev.e;
    if (e.prompt) {
      // The prompt's scores go out in one chunk once all of them arrived.
      std::vector<TokenOut>& p = prompt_[size_t(ev.choice)];
      p.push_back(token_out(e, engine_));
      if (int(p.size()) + 1 >= meta_.prompt_of(ev.choice).n_prompt) out += prompt_chunk(ev.choice);
      continue;
    }
    const size_t ci = size_t(ev.choice);
    // With tools the text goes through the choice's parser: content comes out, calls are
    // sent as tool_calls deltas once complete.
    auto calls = [&] {
      if (parsers_.empty() && harmony_.empty()) return;
      std::vector<ToolCall> done = harmony_.empty() ? parsers_[ci].take() : harmony_[ci].take();
      if (done.empty()) return;
      out += sse_tool_calls_chunk(meta_, ev.choice, done, n_calls_[ci], include_usage_);
      n_calls_[ci] += int(done.size());
    };
    std::string text;
    if (!harmony_.empty()) {  // channels: the reasoning goes out in its own deltas
      const HarmonySplitter::Piece p =
          harmony_[ci].push(e.finished ? std::string() : harmony_marker(engine_, e.token), e.text);
      if (!p.reasoning.empty())
        out += sse_reasoning_chunk(meta_, ev.choice, p.reasoning, include_usage_);
      text = p.content;
    } else {
      text = parsers_.empty() ? e.text : parsers_[ci].push(e.text);
    }
    if (!e.finished) {
      out += prompt_chunk(ev.choice);  // (already sent: nothing)
      std::vector<TokenOut> toks;
      if (meta_.logprobs) toks.push_back(token_out(e, engine_));
      ids_[ci].push_back(e.token);
      calls();
      if (text.empty() && toks.empty()) continue;  // its id goes with the next chunk
      out += sse_chunk(meta_, ev.choice, text, toks, offset_[size_t(ev.choice)], false, "",
                       include_usage_, tzero_chunk_extension(meta_, ev.choice, ids_[ci]));
      ids_[ci].clear();
      if (!toks.empty()) offset_[size_t(ev.choice)] += toks[0].piece.size();
      continue;
    }
    usage_.add(e, ev.choice % meta_.n == 0);
    if (e.finish_reason == tzero::FinishReason::cancelled) {
      cancelled_ = true;
      continue;
    }
    if (e.finish_reason == tzero::FinishReason::grammar_budget) {
      if (!failure_) failure_ = grammar_budget_error(ev.choice, e.n_generated);
      continue;
    }
    out += prompt_chunk(ev.choice);  // a one-token prompt has no scores to wait for
    std::string reason = to_string(e.finish_reason);
    if (!parsers_.empty() || !harmony_.empty()) {
      if (harmony_.empty()) {
        text += parsers_[ci].finish();
      } else {
        const HarmonySplitter::Piece p = harmony_[ci].finish();
        if (!p.reasoning.empty())
          out += sse_reasoning_chunk(meta_, ev.choice, p.reasoning, include_usage_);
        text += p.content;
      }
      calls();
      if (n_calls_[ci] > 0 && e.finish_reason == tzero::FinishReason::stop) reason = "tool_calls";
    }
    if (!text.empty()) {
      out += sse_chunk(meta_, ev.choice, text, {}, 0, false, "", include_usage_,
                       tzero_chunk_extension(meta_, ev.choice, ids_[ci]));
      ids_[ci].clear();
    }
    out += sse_chunk(
        meta_, ev.choice, "", {}, 0, false, reason, include_usage_,
        tzero_extension(meta_, ev.choice, e.logits_digest, to_string(e.stop_reason), ids_[ci]));
    ids_[ci].clear();
  }
  return out;
}

std::string StreamWriter::close() {
  if (failure_) return sse_error(failure_->to_json());
  if (cancelled_)
    return sse_error(
        ApiError(503, "The server is shutting down; the request was cancelled.", "", "shutdown")
            .to_json());
  std::string out;
  if (include_usage_) out += sse_usage_chunk(meta_, usage_);
  return out + sse_done();
}

ApiError grammar_budget_error(int choice, int n_generated) {
  return ApiError(400,
                  "Choice " + std::to_string(choice) + " stopped at generated token " +
                      std::to_string(n_generated + 1) + ": " + tzero::grammar_budget_message() +
                      ". The same request fails at the same token on every server.",
                  "", "grammar_budget_exceeded");
}

}  // namespace tzero::server
