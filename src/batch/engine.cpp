// tzero::Engine (include/tzero/engine.h): requests in, one batched forward pass per step,
// tokens out. The scheduler (batch/scheduler.h) decides what a step computes; this file turns
// the plan into a ForwardBatch and hands each logits row to its sequence's DecodeStep
// (runtime/decode_step.h: sampling, digest, stop rules, text), whose result becomes events.
#include "tzero/engine.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include "backend/backend.h"
#include "backend/backends.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "batch/block_manager.h"
#include "batch/engine_options.h"
#include "batch/scheduler.h"
#include "batch/sequence.h"
#include "chat/conversation.h"
#include "grammar/gbnf.h"
#include "grammar/token_mask.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/fingerprint.h"
#include "runtime/prompt.h"
#include "runtime/prompt_score.h"
#include "runtime/request.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tokenizer/vocab.h"

namespace tzero {

struct Engine::Impl {
  Impl(std::shared_ptr<tzero::Session> s, const EngineOptions& o)
      : opt(o),
        session(std::move(s)),
        vocab(session->vocab()),
        hp(session->hparams()),
        n_ctx(session->n_ctx()) {
    tzero::check(o.max_batch_tokens >= 1, "the batch token budget must be >= 1");
    const tzero::ComputeOptions& c = session->options();
    tzero::check(opt.block_size >= 1 && opt.block_size <= 4096,
                 "the KV block size must be in [1, 4096]");
    tzero::check(opt.max_seqs >= 1, "the number of sequences must be >= 1");
    tzero::check(opt.max_queue >= 0, "the queue bound must be >= 0");
    tzero::check(opt.kv_tokens >= 0, "the KV capacity must be >= 0 positions");
    const tzero::KvType kv_type = c.kv_type;
    const int n_blocks =
        tzero::BlockManager::blocks_for(pool_tokens(opt, hp, n_ctx), opt.block_size);
    // A recurrent model's prefix needs its state where the prefix ends as well as the KV
    // blocks: snapshots at the prompts' block boundaries (batch/state_snapshots.h), in state
    // slots after the sequences' own, twice max_seqs of them within 512 MiB (at least one).
    const size_t state_bytes = tzero::KvStore::state_bytes_per_slot(hp);
    const int n_snapshots =
        hp.recurrent() && opt.prefix_cache
            ? int(std::max<size_t>(
                  1, std::min<size_t>(size_t(2 * opt.max_seqs), (size_t(512) << 20) / state_bytes)))
            : 0;
    kv = std::make_unique<tzero::KvStore>(hp, n_blocks, opt.block_size, kv_type,
                                          opt.max_seqs + n_snapshots, session->local_layers());
    if (n_snapshots > 0)
      snapshots = std::make_unique<tzero::StateSnapshots>(opt.max_seqs, n_snapshots);
    blocks = std::make_unique<tzero::BlockManager>(n_blocks, opt.block_size, opt.prefix_cache);
    sched = std::make_unique<tzero::Scheduler>(*blocks, opt.max_batch_tokens, opt.max_seqs,
                                               opt.prefill_chunk, snapshots.get());
    fwd = session->make_forward(opt.max_batch_tokens);
    fwd->prepare(*kv);  // (a pipeline's ranks make their part of the pool now)
    sched->set_groups(fwd->pipeline_depth());
    logits.resize(size_t(opt.max_seqs) * size_t(hp.n_vocab));
    tzero::check(
        opt.spec_type == "none" || opt.spec_type == "ngram-simple" || opt.spec_type == "draft",
        "--spec-type: none, ngram-simple or draft, not '" + opt.spec_type + "'");
    tzero::check(opt.draft_model.empty() || opt.spec_type == "draft",
                 "a draft model needs the draft speculation type");
    if (opt.spec_type != "none") {
      spec.source =
          opt.spec_type == "draft" ? tzero::DraftSource::model : tzero::DraftSource::ngram;
      spec.draft_max = opt.draft_max;
      spec.draft_min = opt.draft_min;
      if (spec.source == tzero::DraftSource::model) {
        tzero::check(!opt.draft_model.empty(), "--spec-type draft needs --draft-model FILE");
        spec.draft = tzero::open_draft_model(opt.draft_model, *session);
      }
      // Checks the model, the vocabularies and the bounds; prompt lookup's drafter is shared,
      // a draft model's is made per request (its KV cache).
      drafter = tzero::make_drafter(*session, spec);
    }

    info.path = session->path();
    info.name = session->model().gguf().get_string("general.name");
    if (info.name.empty()) info.name = std::filesystem::path(info.path).stem().string();
    info.n_ctx = n_ctx;
    info.n_vocab = hp.n_vocab;
    info.n_embd = hp.n_embd;
    info.pooling = default_pooling(opt, hp, info.pooling_note);
    info.bos = vocab.bos();
    info.eos = vocab.eos();
    info.eot = vocab.eot();
    info.pad = vocab.pad();
    info.add_bos = vocab.add_bos();
    info.fingerprint = session->fingerprint().hash;
    info.chat_template = session->model().gguf().get_string("tokenizer.chat_template");
    info.prefix_cache = opt.prefix_cache;
    if (n_snapshots > 0)
      info.prefix_cache_note = "on, with " + std::to_string(n_snapshots) +
                               " snapshots of the recurrent state at prompt block boundaries";
    info.state_bytes_per_seq = state_bytes;
    info.state_snapshots = n_snapshots;
    publish_stats();
  }

  // --- called on the stepping thread --------------------------------------------------------

  // A step failed for no request's reason: every request ends cancelled, none is taken again.
  void fail(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu);
      failure = why.empty() ? "the engine failed" : why;
    }
    cancel_all();
    if (opt.on_failure) opt.on_failure(failure);
  }

  // Every request ends cancelled, with its final event (the engine stops or failed): the passes
  // in flight first, then the running, waiting and newly submitted requests.
  void cancel_all() {
    abandon_flights();
    std::vector<std::unique_ptr<Sequence>> arrived;
    {
      std::lock_guard<std::mutex> lock(mu);
      arrived.swap(inbox);
    }
    for (auto& s : arrived) {
      sched->add(s.get());
      const uint64_t id = s->id;
      live.emplace(id, std::move(s));
    }
    while (!live.empty()) finish(*live.begin()->second, StopReason::cancelled, "");
    publish_stats();
  }

  void emit(Sequence& s, TokenEvent& e) {
    e.request = s.id;
    if (!s.on_event) return;
    try {
      s.on_event(e);
    } catch (...) {
      // A throwing callback must not leave the batch half-stepped; its request goes on.
    }
  }

  void finish(Sequence& s, StopReason reason, std::string text) {
    TokenEvent e;
    e.finished = true;
    e.stop_reason = reason;
    e.finish_reason = finish_reason_of(reason);
    e.text = std::move(text);
    e.n_prompt = s.n_prompt;
    e.n_generated = s.n_generated();
    e.n_cached = std::max(0, s.n_cached);
    counters.cached_tokens += uint64_t(e.n_cached);
    e.n_preempted = s.n_preempted;
    e.n_drafted = s.n_drafted;
    e.n_accepted = s.n_accepted;
    e.logits_digest = s.decode.digest();
    if (s.pooler && s.pooler->complete()) e.embedding = s.pooler->result(s.params.embedding_dims);
    sched->remove(&s);
    emit(s, e);
    if (reason == StopReason::cancelled)
      ++counters.requests_cancelled;
    else
      ++counters.requests_finished;
    live.erase(s.id);  // destroys s
  }

  // The decode step of s on its logits row (runtime/decode_step.h): emits the token's event;
  // returns why s stops (none: it goes on) and the text it releases at the end in `tail`.
  StopReason on_logits(Sequence& s, const float* row, std::string& tail) {
    StepResult r = s.decode.step(row, hp.n_vocab);
    tail = std::move(r.tail);
    if (r.token < 0) return r.stop;  // the grammar admits no token: no token event
    ++counters.generated_tokens;
    TokenEvent e;
    e.token = r.token;
    e.text = std::move(r.text);
    e.logprob = r.logprob;
    e.top = std::move(r.top);
    emit(s, e);
    return r.stop;
  }

  // Prompt token p + 1's score from the logits row of position p (runtime/prompt_score.h).
  void on_prompt_logits(Sequence& s, int p, const float* row) {
    const int32_t token = s.tokens[size_t(p) + 1];
    tzero::PromptScore sc =
        tzero::score_prompt_token(row, hp.n_vocab, token, s.params.prompt_top_logprobs, vocab);
    s.n_scored = p + 1;
    TokenEvent e;
    e.prompt = true;
    e.token = token;
    e.logprob = sc.logprob;
    e.rank = sc.rank;
    e.top = std::move(sc.top);
    emit(s, e);
  }

  // What a batch token's output row is for.
  // verify: a draft's row (Sequence::drafts), sampled from while the drafts before it hold.
  enum class Out : uint8_t { none, score, sample, pool, replay, verify };

  // Drafts for each sequence that waits to feed its last sampled token (and nothing else): as
  // many as its context, max_tokens and the batch leave room for.
  void propose_drafts() {
    for (auto& [id, sp] : live) {
      Sequence& s = *sp;
      if (s.in_flight) continue;  // its drafts are in its pass
      s.drafts.clear();
      if (spec.source == tzero::DraftSource::none || s.n_computed == 0 || s.n_pending() != 1 ||
          s.prefill_only() || s.decode.done() || s.decode.replaying())
        continue;
      const int room = std::min({opt.draft_max, n_ctx - int(s.tokens.size()),
                                 s.decode.tokens_left() - 1, opt.max_batch_tokens - 1});
      if (room < std::max(opt.draft_min, 1)) continue;
      tzero::Drafter* d = drafter.get();
      if (spec.source == tzero::DraftSource::model) {
        if (!s.drafter) s.drafter = tzero::make_drafter(*session, spec);
        d = s.drafter.get();
      }
      s.drafts = d->propose(s.tokens, room);
      if (int(s.drafts.size()) > room || int(s.drafts.size()) < std::max(opt.draft_min, 1))
        s.drafts.clear();
    }
  }

  bool step() {
    std::vector<std::unique_ptr<Sequence>> arrived;
    std::vector<uint64_t> cancelled;
    {
      std::lock_guard<std::mutex> lock(mu);
      arrived.swap(inbox);
      cancelled.swap(cancels);
    }
    cancelled.insert(cancelled.end(), cancels_later.begin(), cancels_later.end());
    cancels_later.clear();
    for (auto& s : arrived) {
      sched->add(s.get());
      const uint64_t id = s->id;
      live.emplace(id, std::move(s));
    }
    for (uint64_t id : cancelled) {
      auto it = live.find(id);
      if (it == live.end()) continue;
      if (it->second->in_flight)  // its pass lands first
        cancels_later.push_back(id);
      else
        finish(*it->second, StopReason::cancelled, "");
    }

    // A pipeline keeps up to its depth of passes in flight, each over its own sequences; one
    // process launches and lands each pass in the same step.
    const int depth = fwd->pipeline_depth();
    bool launched = false;
    if (int(flights.size()) < depth) {
      propose_drafts();
      launched = launch();
    }
    if (flights.empty()) {
      publish_stats();
      return !arrived.empty() || !cancelled.empty();
    }
    if (!launched || int(flights.size()) >= depth) land();
    publish_stats();
    return true;
  }

  // Plans a pass over the sequences not in flight and launches it (Forward::launch_batch):
  // false when there is nothing to run.
  bool launch() {
    std::vector<tzero::ScheduledSlice> planned = sched->schedule();
    if (planned.empty()) return false;
    // (A landed pass's buffers, cleared: a decode step allocates nothing.)
    Flight& f = flights.emplace_back();
    if (!spare_flights.empty()) {
      f = std::move(spare_flights.back());
      spare_flights.pop_back();
      f.batch.clear();
      f.outs.clear();
    }
    f.plan = std::move(planned);
    const std::vector<tzero::ScheduledSlice>& plan = f.plan;
    for (size_t i = 0; i < plan.size(); ++i) {
      Sequence& s = *plan[i].seq;
      f.batch.tables.push_back(s.table.data());
      f.batch.state_slots.push_back(s.state_slot);
      if (s.restore_from >= 0) {  // a prefix-cache hit of a recurrent model: its state there
        f.batch.state_copies.push_back({int32_t(s.restore_from), int32_t(s.state_slot)});
        s.restore_from = -1;
      }
    }
    // Snapshots of the recurrent states at the prompt block boundaries this pass crosses (the
    // pass makes the copies above first: they may read slots the reservations recycle).
    if (snapshots)
      for (size_t i = 0; i < plan.size(); ++i) {
        const Sequence& s = *plan[i].seq;
        const int bs = blocks->block_size();
        const int end = std::min(s.n_computed + plan[i].n_tokens, s.n_prompt);
        for (int b = (s.n_computed / bs + 1) * bs; b <= end; b += bs) {
          if (snapshots->find(s.tokens, b) >= 0) continue;
          const int slot = snapshots->reserve(s.tokens, b);
          if (slot >= 0) f.batch.state_saves.push_back({int32_t(i), int32_t(b - 1), int32_t(slot)});
        }
      }
    for (size_t i = 0; i < plan.size(); ++i) {
      Sequence& s = *plan[i].seq;
      for (int j = 0; j < plan[i].n_tokens; ++j) {
        const int p = s.n_computed + j;
        const Out o = p >= int(s.tokens.size()) ? Out::verify
                      : s.scores(p)             ? Out::score
                      : s.samples(p)            ? Out::sample
                      : s.pools(p)              ? Out::pool
                      : s.replays(p)            ? Out::replay
                                                : Out::none;
        f.batch.add(s.token_at(p), p, int32_t(i),
                    o == Out::score || o == Out::sample || o == Out::replay || o == Out::verify,
                    o == Out::pool);
        f.outs.push_back(o);
      }
      if (s.n_generated() == 0) counters.prompt_tokens += uint64_t(plan[i].n_tokens);
    }
    try {
      fwd->launch_batch(f.batch, *kv);
    } catch (...) {
      flights.pop_back();
      if (snapshots) snapshots->abort();  // never findable with a half-written state
      throw;
    }
    for (const tzero::ScheduledSlice& sl : plan) sl.seq->in_flight = true;
    return true;
  }

  // Waits for the oldest pass in flight (Forward::finish_batch) and hands each output row to its
  // sequence: prompt scores, pooled states, samples and verified drafts; finishes the sequences
  // that stop.
  void land() {
    Flight& front = flights.front();
    // One step may score a whole chunk: the buffers grow to the step's rows.
    const size_t V = size_t(hp.n_vocab), E = size_t(hp.n_embd);
    if (logits.size() < front.batch.logits_rows.size() * V)
      logits.resize(front.batch.logits_rows.size() * V);
    if (hidden.size() < front.batch.hidden_rows.size() * E)
      hidden.resize(front.batch.hidden_rows.size() * E);
    // Whatever happens next, the pass leaves the flights with the Forward's (which pops it
    // first): a caller that steps on after an error finds them matched.
    auto leave = [&] {
      Flight f = std::move(flights.front());
      flights.pop_front();
      for (const tzero::ScheduledSlice& sl : f.plan) sl.seq->in_flight = false;
      return f;
    };
    try {
      fwd->finish_batch(logits.data(), front.batch.hidden_rows.empty() ? nullptr : hidden.data());
    } catch (...) {
      leave();
      if (snapshots) snapshots->abort();
      throw;
    }
    Flight f = leave();
    // (Reservations of later passes commit too: every rank runs their saves before any later
    // pass's restore, in launch order.)
    if (snapshots) snapshots->commit();
    ++counters.steps;

    size_t t = 0, lrow = 0, hrow = 0;
    std::vector<std::pair<Sequence*, StopReason>> done;
    std::vector<std::string> tails;
    for (const tzero::ScheduledSlice& sl : f.plan) {
      Sequence& s = *sl.seq;
      const float* sample_row = nullptr;
      std::vector<const float*> verify_rows;  // a row per draft fed, in order
      std::string replay_tail;                // a resumed request ending at its last resumed token
      for (int j = 0; j < sl.n_tokens; ++j, ++t) {
        const int p = s.n_computed + j;
        switch (f.outs[t]) {
          case Out::score:
            on_prompt_logits(s, p, &logits[lrow++ * V]);
            break;
          case Out::sample:
            sample_row = &logits[lrow++ * V];
            break;
          case Out::pool:
            s.pooler->add(p, &hidden[hrow++ * E]);
            break;
          case Out::replay:  // a resumed token, in order: digested, its text streamed
            replay_tail += s.decode.replay(&logits[lrow++ * V], hp.n_vocab).tail;
            break;
          case Out::verify:
            verify_rows.push_back(&logits[lrow++ * V]);
            break;
          case Out::none:
            break;
        }
      }
      // The drafts' positions count as computed only once the token sampled before each is it.
      s.n_computed += sl.n_tokens - int(verify_rows.size());
      blocks->seal(s.table, s.tokens, s.n_computed);
      if (s.decode.done()) {  // resumed after its last token already ended it: no sampling
        done.emplace_back(&s, s.decode.stop_reason()), tails.push_back(replay_tail);
        continue;
      }
      if (s.n_computed != int(s.tokens.size())) continue;
      if (s.prefill_only()) {
        // Scored with max_tokens 0, or embedded: nothing to generate.
        done.emplace_back(&s, StopReason::max_tokens), tails.emplace_back();
        continue;
      }
      tzero::check(sample_row != nullptr, "internal: no logits row to sample from");
      std::string tail;
      StopReason reason = on_logits(s, sample_row, tail);
      // Each draft equal to the token just sampled was fed at its position: its row is the one
      // plain decoding samples from next (the same bits whatever shares the pass).
      counters.drafted_tokens += verify_rows.size();
      s.n_drafted += int(verify_rows.size());
      for (size_t i = 0; i < verify_rows.size() && reason == StopReason::none; ++i) {
        if (s.tokens.back() != s.drafts[i]) break;
        ++s.n_computed;
        ++counters.accepted_tokens;
        ++s.n_accepted;
        reason = on_logits(s, verify_rows[i], tail);
      }
      s.drafts.clear();
      blocks->seal(s.table, s.tokens, s.n_computed);
      if (reason != StopReason::none) done.emplace_back(&s, reason), tails.push_back(tail);
    }
    spare_flights.push_back(std::move(f));
    for (size_t i = 0; i < done.size(); ++i) finish(*done[i].first, done[i].second, tails[i]);
  }

  // Passes still in flight when the engine stops or fails: waited for and dropped, so that no
  // sequence stays in flight (a broken pipeline answers at once).
  void abandon_flights() {
    while (fwd->n_launched() > 0) {
      try {
        fwd->finish_batch(nullptr, nullptr);
      } catch (...) {
      }
    }
    for (Flight& f : flights)
      for (const tzero::ScheduledSlice& sl : f.plan) sl.seq->in_flight = false;
    flights.clear();
    if (snapshots) snapshots->abort();
  }

  void publish_stats() {
    std::lock_guard<std::mutex> lock(mu);
    EngineStats st = counters;
    st.waiting = sched->n_waiting() + int(inbox.size());
    st.running = sched->n_running();
    st.kv_blocks_total = blocks->n_blocks();
    st.kv_blocks_used = blocks->n_used();
    st.kv_blocks_cached = blocks->n_cached_free();
    st.block_size = blocks->block_size();
    st.preemptions = sched->preemptions();
    st.prefix_cache = info.prefix_cache;
    st.state_snapshots = snapshots ? snapshots->n_valid() : 0;
    st.state_bytes = info.state_bytes_per_seq * size_t(opt.max_seqs + info.state_snapshots);
    published = st;
    n_queued = sched->n_waiting();
    n_running = sched->n_running();
    idle = live.empty();
  }

  // A resumed request (RequestParams::n_resumed): what it may be combined with, and its resumed
  // tokens replayed without rows, so tokens that would have ended the request before their
  // last one (not this request's output) are refused here rather than mid-stream.
  void check_resume(const RequestParams& r, bool tokenized_here) const {
    auto bad = [](const std::string& m) {
      throw RequestError(RequestErrorKind::invalid_value, "tzero_resume", m);
    };
    const int n_prompt = int(r.prompt_tokens.size());
    if (tokenized_here) bad("resuming needs the prompt as tokens (prompt_tokens)");
    if (r.embedding != Pooling::none) bad("an embedding request cannot be resumed");
    if (r.n_resumed < 0 || r.n_resumed >= n_prompt)
      bad("n_resumed must be in [0, " + std::to_string(n_prompt) + ") (the prompt's tokens)");
    if (r.n_resumed > r.max_tokens)
      bad(std::to_string(r.n_resumed) + " resumed tokens are more than max_tokens (" +
          std::to_string(r.max_tokens) + ")");
    if (!r.grammar.empty()) bad("a request with a grammar cannot be resumed");
    if (r.prompt_logprobs) bad("a request that scores its prompt cannot be resumed");
    tzero::DecodeStep d(vocab, r.sampling, stop_rules_of(r, n_ctx), r.prompt_tokens, 0,
                        r.n_resumed);
    while (d.replaying()) {
      const int i = d.replay_next() - d.n_prompt();
      d.replay(nullptr, 0);
      if (d.done() && d.replaying())
        bad("resumed token " + std::to_string(i) + " (of " + std::to_string(r.n_resumed) +
            ") already ends the request (" + to_string(d.stop_reason()) +
            "): the tokens after it are not its output");
    }
  }

  // The vocabulary's token trie for grammars, built at the first grammar request.
  std::shared_ptr<const tzero::TokenTrie> token_trie() {
    std::lock_guard<std::mutex> lock(trie_mu);
    if (!trie) trie = std::make_shared<const tzero::TokenTrie>(vocab);
    return trie;
  }

  // --- state --------------------------------------------------------------------------------

  EngineOptions opt;
  std::shared_ptr<tzero::Session> session;  // the model, pool, kernels and context
  const tzero::Vocab& vocab;
  const tzero::HParams& hp;
  int n_ctx;
  std::unique_ptr<tzero::KvStore> kv;
  std::unique_ptr<tzero::BlockManager> blocks;
  std::unique_ptr<tzero::StateSnapshots> snapshots;  // recurrent models' prefix cache
  std::unique_ptr<tzero::Scheduler> sched;
  std::unique_ptr<tzero::Forward> fwd;
  // A pass launched and not yet landed: a pipeline over MPI ranks keeps up to its depth in
  // flight (micro-batches), one process one.
  struct Flight {
    std::vector<tzero::ScheduledSlice> plan;
    tzero::ForwardBatch batch;
    std::vector<Out> outs;  // (batch tokens) what each token's output row is for
  };
  std::deque<Flight> flights;           // in launch order (the Forward holds their batches)
  std::vector<Flight> spare_flights;    // landed, their buffers kept for the next
  std::vector<uint64_t> cancels_later;  // requests cancelled in flight: after they land
  std::vector<float> logits;            // (rows, n_vocab): a step's logits rows (at least max_seqs)
  std::vector<float> hidden;            // (rows, n_embd): a step's hidden rows (embeddings)
  ModelInfo info;
  EngineStats counters;                     // stepping thread's own counts
  tzero::SpeculativeOptions spec;           // spec.source none: no speculative decoding
  std::unique_ptr<tzero::Drafter> drafter;  // prompt lookup's (a draft model's: per request)
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> live;  // stepping thread only

  std::mutex trie_mu;
  std::shared_ptr<const tzero::TokenTrie> trie;
  std::mutex step_mu;  // one stepper at a time
  std::mutex mu;       // guards what follows
  std::condition_variable cv;
  std::vector<std::unique_ptr<Sequence>> inbox;
  std::vector<uint64_t> cancels;
  uint64_t next_id = 1;
  EngineStats published;
  int n_queued = 0, n_running = 0;  // as of the last step
  bool idle = true;
  bool stopping = false;
  std::string failure;  // why a step failed (then submit refuses: EngineFailed)
  std::thread background;
};

Engine::Engine(const EngineOptions& options)
    : impl_(std::make_unique<Impl>(
          tzero::Session::open(options.model_path, compute_options_of(options)), options)) {}

// The session's compute options are the engine's (one source for both).
static EngineOptions options_with(const tzero::Session& s, EngineOptions o) {
  const tzero::ComputeOptions& c = s.options();
  o.model_path = s.path();
  o.use_mmap = c.use_mmap;
  o.n_threads = c.n_threads;
  o.kernels = c.kernels;
  o.op_overrides = c.op_overrides;
  o.mode = c.mode;
  o.gpu_layers = std::to_string(s.gpu_layers());
  o.n_ctx = c.n_ctx;
  o.kv_type = tzero::to_string(c.kv_type);
  return o;
}

Engine::Engine(std::shared_ptr<Session> session, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(session, options_with(*session, options))) {}

Engine::~Engine() {
  stop();
}

uint64_t Engine::submit(const RequestParams& request, TokenCallback on_event) {
  Impl& m = *impl_;
  // The one request path (runtime/request.h): prompt, limits, sampling, grammar.
  tzero::StartedRequest started =
      tzero::start_request({m.vocab, m.hp, m.n_ctx, m.info.pooling, m.info.pooling_note,
                            [&m] { return m.token_trie(); }},
                           request);
  RequestParams& r = started.params;
  const Pooling pooling = started.pooling;
  std::unique_ptr<tzero::TokenConstraint>& constraint = started.constraint;
  const int n_prompt = int(r.prompt_tokens.size());
  if (r.n_resumed != 0) m.check_resume(r, request.prompt_tokens.empty());
  // Positions it may feed: the prompt and every generated token but the last.
  const int64_t need =
      std::min<int64_t>(int64_t(n_prompt - r.n_resumed) + std::max(r.max_tokens - 1, 0), m.n_ctx);
  const int64_t capacity = int64_t(m.blocks->n_blocks()) * m.blocks->block_size();
  if (need > capacity)
    throw RequestError(RequestErrorKind::context_length_exceeded, "prompt",
                       "the request needs " + std::to_string(need) +
                           " KV positions but the whole cache holds " + std::to_string(capacity));
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.failure.empty()) throw EngineFailed(m.failure);
  // Requests that will find a free slot at the next step do not wait: the bound is on the
  // ones that will.
  const int free_slots = std::max(0, m.opt.max_seqs - m.n_running - m.n_queued);
  if (m.n_queued + int(m.inbox.size()) >= m.opt.max_queue + free_slots)
    throw QueueFull("the queue is full (" + std::to_string(m.opt.max_queue) + " waiting requests)");
  const uint64_t id = m.next_id++;
  m.inbox.push_back(std::make_unique<Sequence>(id, std::move(r), std::move(on_event), m.vocab,
                                               m.n_ctx, pooling, m.hp.n_embd));
  if (constraint) m.inbox.back()->decode.constrain(std::move(constraint));
  m.idle = false;
  m.cv.notify_all();
  return id;
}

void Engine::cancel(uint64_t request) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cancels.push_back(request);
  impl_->cv.notify_all();
}

bool Engine::step() {
  std::lock_guard<std::mutex> lock(impl_->step_mu);
  return impl_->step();
}

void Engine::run_until_idle() {
  while (step()) {
  }
}

void Engine::start() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> guard(m.mu);
  if (m.background.joinable()) return;
  m.stopping = false;
  m.background = std::thread([&m] {
    bool trimmed = true;  // nothing to give back before the first request
    while (true) {
      {
        std::unique_lock<std::mutex> lock(m.mu);
        m.cv.wait(lock,
                  [&] { return m.stopping || !m.inbox.empty() || !m.cancels.empty() || !m.idle; });
        if (m.stopping) return;
      }
      std::lock_guard<std::mutex> step_lock(m.step_mu);
      try {
        m.step();
      } catch (const std::exception& e) {  // no request's doing: a pipeline rank lost
        m.fail(e.what());
        return;
      }
      // Once the engine falls idle, the memory its requests freed (KV-sized scratch, grammar
      // states, masks, logprobs) goes back to the system: glibc keeps freed pages otherwise, and
      // a burst of large requests would leave the process that large for good.
      bool now_idle = false;
      {
        std::lock_guard<std::mutex> lock(m.mu);
        now_idle = m.idle && m.inbox.empty();
      }
#ifdef __GLIBC__
      if (now_idle && !trimmed) malloc_trim(0);
#endif
      trimmed = now_idle;
    }
  });
}

void Engine::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.stopping = true;
    m.cv.notify_all();
  }
  if (m.background.joinable()) m.background.join();
  // Cancel whatever is still in flight so every request gets its final event.
  std::lock_guard<std::mutex> step_lock(m.step_mu);
  m.cancel_all();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->published;
}

const ModelInfo& Engine::info() const {
  return impl_->info;
}

const EngineOptions& Engine::options() const {
  return impl_->opt;
}

std::vector<int32_t> Engine::tokenize(const std::string& text, bool add_bos,
                                      bool parse_special) const {
  return impl_->vocab.tokenize(text, add_bos, parse_special);
}

std::vector<int32_t> Engine::tokenize_prompt(const std::string& text, bool parse_special) const {
  return tzero::tokenize_prompt(impl_->vocab, text, parse_special);
}

std::vector<int32_t> Engine::tokenize_chat(const std::string& rendered) const {
  return tzero::tokenize_chat_prompt(impl_->vocab, rendered);
}

std::string Engine::detokenize(const std::vector<int32_t>& tokens, bool special) const {
  return impl_->vocab.detokenize(tokens, special);
}

std::string Engine::token_text(int32_t token) const {
  if (token < 0 || token >= impl_->vocab.n_tokens()) return std::string();
  return impl_->vocab.token_to_piece(token, true);
}

std::string Engine::apply_chat_template(const std::vector<ChatTurn>& messages,
                                        const std::string& template_name) const {
  const Impl& m = *impl_;
  try {
    // The one rule (chat/template_choice.h): the named format or file, the model's, else chatml.
    auto special = [&](int id) { return id >= 0 ? std::string(m.vocab.text(id)) : std::string(); };
    const tzero::ConversationTemplate tmpl = tzero::load_conversation_template(
        m.info.chat_template, template_name, special(m.vocab.bos()), special(m.vocab.eos()),
        m.info.path);
    std::vector<tzero::ChatMessage> msgs;
    for (const ChatTurn& t : messages) msgs.push_back({t.role, t.content});
    return tmpl.render(msgs);
  } catch (const tzero::Error& e) {
    throw RequestError(RequestErrorKind::chat_template, "messages",
                       std::string("chat template: ") + e.what());
  }
}

}  // namespace tzero
