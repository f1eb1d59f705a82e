// The HTTP layer (server/http_server.h): routes, auth, limits, streaming, shutdown. The bytes on
// the wire are server/http_transport's (Boost.Beast); this file is the OpenAI side of it.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <strings.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include "base/error.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/embeddings.h"
#include "server/generation.h"
#include "server/harmony.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/tokenize_routes.h"

namespace tzero::server {

using nlohmann::json;

namespace {

const char* kJson = "application/json";

void send_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  res.content_type = kJson;
  res.body = dump_json(e.to_json());
}

std::string random_id(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%016llx", prefix, static_cast<unsigned long long>(rng()));
  return buf;
}

uint64_t random_seed() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return rng() >> 11;  // 53 bits: the seed reported in "tzero" survives a JavaScript number
}

// The routes and the methods they take: anything else on these paths is a 405.
const std::set<std::string> kGetPaths = {"/health",         "/metrics", "/v1/models",
                                         "/tokenizer_info", "/",        "/canary"};
const std::set<std::string> kPostPaths = {"/v1/completions", "/v1/chat/completions",
                                          "/v1/embeddings", "/tokenize", "/detokenize"};

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Standard base64 (RFC 4648) to bytes; "" for anything that is not.
std::string base64_decode(const std::string& s) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : s) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
            : c == '='             ? -2
                                   : -1;
    if (v == -1) return "";
    if (v == -2) break;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return out;
}

// After an exchange that moved more than a megabyte (a large body or answer), once it is
// written: the freed buffers go back to the system. glibc keeps freed heap pages (and raises its
// mmap threshold after large frees, so later large buffers come from the heap too), so a few
// large requests would otherwise leave the server that large for good (the engine does the same
// when it falls idle).
void give_back_memory_after(size_t bytes_moved) {
#ifdef __GLIBC__
  if (bytes_moved > (size_t(1) << 20)) malloc_trim(0);
#else
  (void)bytes_moved;
#endif
}

// What a client can do about an answer over --max-response-bytes, by route.
std::string smaller_answer_hint(const std::string& path) {
  if (path == "/v1/completions" || path == "/v1/chat/completions")
    return "Ask for less (fewer logprobs or top_logprobs, fewer choices 'n', a smaller "
           "max_tokens), stream it ('stream': true: a stream has no total limit), or ";
  if (path == "/v1/embeddings") return "Send fewer inputs per request, or ";
  if (path == "/tokenize") return "Send less text per request (or without 'with_pieces'), or ";
  if (path == "/detokenize") return "Send fewer tokens per request, or ";
  return "";
}

// The metrics label of a path.
std::string endpoint_label(const std::string& path) {
  if (kGetPaths.count(path) || kPostPaths.count(path)) return path;
  return path.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}" : "other";
}

}  // namespace

struct HttpServer::Impl {
  Impl(tzero::Engine& e, ServerOptions o) : engine(e), opt(std::move(o)) {
    model = opt.model_name.empty() ? engine.info().name : opt.model_name;
    fingerprint = "tz-" + engine.info().fingerprint;
    harmony = is_harmony(engine);
    chat_template = opt.chat_template;  // "": the engine's rule (chat/template_choice.h)
    for (const std::string& h : opt.allowed_hosts) allowed_hosts.insert(lower(h));
    allowed_hosts.insert(lower(opt.host));  // --host given as a name
  }

  tzero::Engine& engine;
  ServerOptions opt;
  std::string model, fingerprint, chat_template;
  bool harmony = false;  // gpt-oss's vocabulary: chat replies are split by channel
  std::set<std::string> allowed_hosts;
  int bound_port = -1;
  Metrics metrics;
  AccessLog access_log{opt.access_log};

  std::atomic<bool> shutting_down{false};
  std::mutex stop_mu;  // one stop() at a time
  bool stopped = false;
  mutable std::mutex jobs_mu;
  std::set<std::shared_ptr<Job>> jobs;  // generation requests in flight
  // Last: destroyed first, while what its callbacks reach still exists.
  std::unique_ptr<HttpTransport> transport;

  void add_job(const std::shared_ptr<Job>& j) {
    std::lock_guard<std::mutex> lock(jobs_mu);
    jobs.insert(j);
  }
  void remove_job(const std::shared_ptr<Job>& j) {
    std::lock_guard<std::mutex> lock(jobs_mu);
    jobs.erase(j);
  }
  int n_jobs() const {
    std::lock_guard<std::mutex> lock(jobs_mu);
    return int(jobs.size());
  }
  void cancel_all() {
    std::vector<std::shared_ptr<Job>> all;
    {
      std::lock_guard<std::mutex> lock(jobs_mu);
      all.assign(jobs.begin(), jobs.end());
    }
    for (auto& j : all) j->cancel(engine);
  }

  // --- auth, Host and errors ------------------------------------------------------------------

  bool authorized(const HttpRequest& req, HttpResponse& res) {
    if (opt.api_key.empty()) return true;
    // The scheme is case-insensitive (RFC 7235), the key is not.
    const std::string auth = req.header("Authorization");
    if (auth.size() == 7 + opt.api_key.size() && strncasecmp(auth.c_str(), "Bearer ", 7) == 0 &&
        auth.compare(7, std::string::npos, opt.api_key) == 0)
      return true;
    // A browser on the console: Basic, any user name, the key as the password; for reading
    // only (GET: the pages and the /metrics their script reads), never to generate.
    const bool read_only = req.method == "GET" || req.method == "HEAD";
    if (read_only && auth.size() > 6 && strncasecmp(auth.c_str(), "Basic ", 6) == 0) {
      const std::string pair = base64_decode(trim(auth.substr(6)));
      const size_t colon = pair.find(':');
      if (colon != std::string::npos &&
          pair.compare(colon + 1, std::string::npos, opt.api_key) == 0)
        return true;
    }
    const bool given = req.has_header("Authorization");
    const bool page_route = req.path == "/" || req.path == "/canary";
    send_error(res, ApiError(401,
                             given ? "Incorrect API key provided."
                                   : "You didn't provide an API key. Give it as "
                                     "'Authorization: Bearer KEY'.",
                             "", "invalid_api_key"));
    // A page asks the browser for the key (Basic: any user name, the key as the password).
    res.headers.emplace_back("WWW-Authenticate",
                             page_route ? "Basic realm=\"tzero\", charset=\"UTF-8\"" : "Bearer");
    return false;
  }

  // Without an API key, a web page could drive the server through DNS rebinding (its own name
  // resolving to this address): such a request names that page's host. So then only IP
  // literals, localhost, the --host name and --allowed-host names are accepted (a request
  // without Host, as HTTP/1.0 allows, too: browsers always send one).
  bool host_allowed(const HttpRequest& req) const {
    if (!opt.api_key.empty() || !req.has_header("Host") || allowed_hosts.count("*")) return true;
    const std::string h = lower(trim(req.header("Host")));
    std::string name = h;
    if (!h.empty() && h[0] == '[') {
      name = h.substr(0, h.find(']') == std::string::npos ? h.size() : h.find(']') + 1);
      in6_addr a6{};
      const std::string inner = name.size() >= 2 ? name.substr(1, name.size() - 2) : "";
      if (name.back() == ']' && inet_pton(AF_INET6, inner.c_str(), &a6) == 1) return true;
    } else if (const size_t colon = h.rfind(':'); colon != std::string::npos) {
      name = h.substr(0, colon);
    }
    in_addr a4{};
    if (inet_pton(AF_INET, name.c_str(), &a4) == 1) return true;
    return name == "localhost" || allowed_hosts.count(name) > 0;
  }

  // A whole answer over --max-response-bytes becomes a 413 error object that says so (the
  // size, the limit, how to get the answer) instead of megabytes the client may not expect.
  void cap_response(HttpResponse& res, const std::string& path) const {
    const size_t size = res.body.size();
    if (size <= opt.max_response_bytes) return;
    std::string hint = smaller_answer_hint(path);
    hint += hint.empty() ? "Raise" : "raise";
    res = HttpResponse();
    send_error(res, ApiError(413,
                             "The response would be " + std::to_string(size) +
                                 " bytes, more than this server's limit of " +
                                 std::to_string(opt.max_response_bytes) +
                                 " bytes (--max-response-bytes). " + hint +
                                 " the limit with --max-response-bytes.",
                             "", "response_too_large"));
  }

  // --- simple routes --------------------------------------------------------------------------

  json model_object() const {
    return json{{"id", model}, {"object", "model"}, {"created", 0}, {"owned_by", "tzero"}};
  }

  void health(const HttpRequest&, HttpResponse& res) {
    const tzero::EngineStats s = engine.stats();
    const bool down = shutting_down.load();
    json j = {{"status", down ? "shutting_down" : "ok"},
              {"model", model},
              {"system_fingerprint", fingerprint},
              {"in_flight", n_jobs()},
              {"queue_depth", s.waiting},
              {"running", s.running},
              {"kv_blocks_used", s.kv_blocks_used},
              {"kv_blocks_cached", s.kv_blocks_cached},
              {"kv_blocks_total", s.kv_blocks_total},
              {"requests_finished", s.requests_finished},
              {"requests_cancelled", s.requests_cancelled},
              {"client_disconnects", metrics.disconnects()}};
    const bool healthy = !opt.health_extra || opt.health_extra(j);
    if (!down && !healthy) j["status"] = "degraded";
    res.status = down || !healthy ? 503 : 200;
    res.content_type = kJson;
    res.body = dump_json(j);
  }

  ConsoleInfo console_info() const {
    ConsoleInfo c = opt.console;
    c.model = model;
    c.fingerprint = fingerprint;
    c.api_key = !opt.api_key.empty();
    c.canary = bool(opt.canary_page);
    if (opt.health_extra) {
      json j = json::object();
      opt.health_extra(j);
      c.drifting = j.contains("canary") && j["canary"].value("state", "") == "drifted";
    }
    return c;
  }

  // An HTML page: no script or style from elsewhere, never framed by another site.
  static void page(HttpResponse& res, std::string html) {
    res.content_type = "text/html; charset=utf-8";
    res.headers.emplace_back("Content-Security-Policy",
                             "default-src 'self'; script-src 'unsafe-inline'; style-src "
                             "'unsafe-inline'; frame-ancestors 'none'");
    res.headers.emplace_back("Cache-Control", "no-store");
    res.body = std::move(html);
  }

  void metrics_route(const HttpRequest&, HttpResponse& res) {
    res.content_type = "text/plain; version=0.0.4";
    res.body = metrics.render(engine.stats(), n_jobs());
    if (opt.metrics_extra) opt.metrics_extra(res.body);
  }

  void models(const HttpRequest&, HttpResponse& res) {
    res.content_type = kJson;
    res.body = dump_json(json{{"object", "list"}, {"data", json::array({model_object()})}});
  }

  void model_by_id(const HttpRequest& req, HttpResponse& res) {
    const std::string id = req.path.substr(std::string("/v1/models/").size());
    if (id != model)
      throw ApiError(404, "The model '" + id + "' does not exist.", "model", "model_not_found");
    res.content_type = kJson;
    res.body = dump_json(model_object());
  }

  // --- generation -----------------------------------------------------------------------------

  // A generation in flight between the engine and its connection: every engine event posts
  // run() to the connection's io thread (coalesced), which turns what arrived into SSE bytes
  // or, at the end, the whole response. The engine never waits on the client, the io thread
  // never waits on the engine.
  struct Pump : std::enable_shared_from_this<Pump> {
    Pump(Impl& s, std::shared_ptr<Job> j, std::shared_ptr<Exchange> e, ResponseMeta m, int n,
         bool include_usage, bool want_logprobs, bool streamed)
        : srv(s), job(std::move(j)), ex(std::move(e)), meta(m), stream(streamed) {
      if (stream) {
        writer = std::make_unique<StreamWriter>(meta, n, include_usage, srv.engine);
      } else {
        acc = std::make_unique<ChoiceAccumulator>(n, meta.n, srv.engine, want_logprobs);
        acc->set_tools(meta.tools, "call_" + meta.id.substr(meta.id.find('-') + 1) + "_");
        acc->set_harmony(meta.harmony);
      }
    }

    // Any thread (the engine's).
    void notify() {
      if (!armed || ended) return;
      if (scheduled.exchange(true)) return;
      ex->post([self = shared_from_this()] { self->run(); });
    }

    // The connection's io thread.
    void run() {
      scheduled = false;
      if (ended) return;
      // finished() before take(): what arrived before it said so is all there is.
      const bool done = job->finished();
      if (done && !settled()) {
        ex->post([self = shared_from_this()] { self->run(); });
        return;
      }
      if (done && ended.exchange(true)) return;
      const std::vector<Job::Event> events = job->take(std::chrono::milliseconds(0));
      if (stream) {
        std::string out;
        if (!opened) out = writer->open(), opened = true;
        out += writer->add(events);
        if (done) out += writer->close();
        ex->send(std::move(out));
        if (done) {
          const Usage u = writer->usage();
          log(200, LoggedTokens{u.prompt_tokens, u.completion_tokens});
          auto self = shared_from_this();
          ex->end_stream([self] { self->srv.remove_job(self->job); });
        }
        return;
      }
      for (const Job::Event& ev : events) {
        acc->add(ev);
        if (embed && ev.e.finished) vectors[size_t(ev.choice)] = ev.e.embedding;
      }
      if (!done) return;
      // The whole response can be megabytes of JSON: made on a handler thread, not here.
      ex->work([self = shared_from_this()] { self->respond(); });
    }

    // A handler thread, once (the io thread is done with acc).
    void respond() {
      HttpResponse res;
      if (acc->any_cancelled()) {
        send_error(res, ApiError(503, "The server is shutting down; the request was cancelled.", "",
                                 "shutdown"));
        res.headers.emplace_back("Retry-After", std::to_string(srv.opt.retry_after_s));
      } else if (acc->failure()) {
        send_error(res, *acc->failure());
      } else {
        res.content_type = kJson;
        res.body = dump_json(embed ? embeddings_response(*embed, meta.model, vectors)
                                   : full_response(meta, acc->choices(), acc->usage()));
        srv.cap_response(res, path);
      }
      srv.metrics.count_request(endpoint_label(path), res.status);
      const Usage u = acc->usage();
      log(res.status, res.status == 200
                          ? std::optional<LoggedTokens>({u.prompt_tokens, u.completion_tokens})
                          : std::nullopt);
      // In flight until written: a shutdown waits for it (within its bounds).
      auto self = shared_from_this();
      const size_t moved = res.body.size();
      ex->respond(std::move(res), [self, moved] {
        self->srv.remove_job(self->job);
        give_back_memory_after(moved);
      });
    }

    // The last event comes from inside an engine step, just before the engine publishes the
    // step's stats (KV blocks freed, requests counted). The answer waits for that publication
    // (a few microseconds; at most 20 ms, e.g. after a cancellation that ends no step), so that
    // a client reading /health right after its answer sees its request gone.
    bool settled() {
      if (srv.engine.stats().steps > final_steps.load()) return true;
      const Clock::time_point now = Clock::now();
      if (settle_started == Clock::time_point()) settle_started = now;
      return now - settle_started > std::chrono::milliseconds(20);
    }

    // The client went away (a failed write, a client that does not read, or stop()).
    void gone() {
      // A stream's 200 went out with its headers; a plain answer never did (499: nginx's
      // "client closed request").
      log(stream ? 200 : 499, std::nullopt, "disconnected");
      if (stream && job->mark_disconnected()) srv.metrics.count_disconnect();
      ended = true;
      job->cancel(srv.engine);
      srv.remove_job(job);
    }

    // The access log's line, once (the first of the end, the answer and the client leaving).
    void log(int status, std::optional<LoggedTokens> tokens, const std::string& note = "") {
      if (logged.exchange(true) || !srv.access_log.enabled()) return;
      srv.access_log.write(
          access_log_line(method, path, status, tokens, AccessLog::ms_since(arrival), note));
    }

    Impl& srv;
    std::shared_ptr<Job> job;
    std::shared_ptr<Exchange> ex;
    ResponseMeta meta;
    std::string method, path;
    Clock::time_point arrival;
    bool stream;
    std::unique_ptr<StreamWriter> writer;
    std::unique_ptr<ChoiceAccumulator> acc;
    std::shared_ptr<EmbeddingsRequest> embed;  // POST /v1/embeddings: the inputs
    std::vector<std::vector<float>> vectors;   // their embeddings, by input (io thread)
    std::atomic<bool> armed{false}, scheduled{false}, ended{false}, logged{false};
    std::atomic<uint64_t> final_steps{0};  // the published engine steps at a final event
    bool opened = false;                   // io thread
    Clock::time_point settle_started;      // io thread
  };

  // Queues the n engine requests of one job (params_of(i) the i-th), each event going to the
  // job and waking the pump; a refusal cancels what was queued and becomes the API error (429
  // for a full queue). Then the job is tracked and the pump told when the client goes.
  template <class ParamsOf>
  void submit_all(const std::shared_ptr<Job>& job, const std::shared_ptr<Pump>& pump,
                  const std::shared_ptr<Exchange>& ex, int n, ParamsOf params_of) {
    try {
      for (int i = 0; i < n; ++i) {
        tzero::TokenCallback cb = job->callback(i);
        tzero::Engine& eng = engine;
        job->add_engine_id(
            engine.submit(params_of(i), [&eng, cb, pump](const tzero::TokenEvent& e) {
              if (e.finished) pump->final_steps = eng.stats().steps;
              cb(e);
              pump->notify();
            }));
      }
    } catch (const tzero::QueueFull& e) {
      job->cancel(engine);
      throw ApiError(429, std::string("The server is busy: ") + e.what() + ". Retry later.", "",
                     "queue_full");
    } catch (const tzero::EngineFailed& e) {
      job->cancel(engine);
      throw ApiError(503, std::string("The server's engine failed and it is stopping: ") + e.what(),
                     "", "engine_failed");
    } catch (const tzero::RequestError& e) {
      job->cancel(engine);
      throw api_error_of(e);
    }
    add_job(job);
    ex->on_gone([pump] { pump->gone(); });
  }

  // Returns true when the answer goes out later (through the pump), false when `res` is it.
  bool generate(Endpoint ep, const HttpRequest& req, HttpResponse& res,
                const std::shared_ptr<Exchange>& ex) {
    const Clock::time_point arrival = Clock::now();
    if (shutting_down) throw ApiError(503, "The server is shutting down.", "", "shutdown");
    OpenAiRequest r = parse_request(ep, req.body);
    resolve_prompt(r, engine, chat_template);

    ResponseMeta meta;
    meta.endpoint = ep;
    meta.id = random_id(ep == Endpoint::chat ? "chatcmpl-" : "cmpl-");
    meta.created = int64_t(std::time(nullptr));
    meta.model = model;
    meta.fingerprint = fingerprint;
    meta.logprobs = r.want_logprobs;
    meta.echo = r.echo;
    meta.top_logprobs = r.top_logprobs;
    meta.prompt_logprobs = r.prompt_logprobs;
    meta.n = r.n;
    for (size_t i = 0; i < r.resolved.size(); ++i) {
      const tzero::RequestParams& p = r.resolved[i];
      ResponseMeta::Prompt mp;
      mp.n_prompt = int(p.prompt_tokens.size()) - p.n_resumed;
      if (r.echo)
        mp.echo_text = ep == Endpoint::completions && r.prompts[i].tokens.empty()
                           ? r.prompts[i].text
                           : engine.detokenize(p.prompt_tokens);
      if (!p.prompt_tokens.empty()) mp.first_piece = engine.token_text(p.prompt_tokens[0]);
      meta.prompts.push_back(std::move(mp));
    }
    meta.seed = r.seed ? *r.seed : random_seed();
    meta.tools = r.tools;
    meta.harmony = ep == Endpoint::chat && harmony;

    // The n choices of each prompt are engine requests queued at once: more than the queue
    // holds could never be admitted, so that is the client's error, not a busy server.
    const int n_prompts = int(r.resolved.size());
    const int n_choices = r.n * n_prompts;
    if (n_choices > engine.options().max_queue)
      throw ApiError(
          400,
          (n_prompts > 1
               ? std::to_string(n_prompts) + " prompts x n " + std::to_string(r.n) + " choices"
               : "n is " + std::to_string(r.n)) +
              " but this server queues at most " + std::to_string(engine.options().max_queue) +
              " requests at once (--max-queue)",
          n_prompts > 1 ? "prompt" : "n", "invalid_value");
    auto job = std::make_shared<Job>(n_choices, arrival, metrics);
    auto pump = std::make_shared<Pump>(*this, job, ex, meta, n_choices, r.include_usage,
                                       r.want_logprobs, r.stream);
    pump->method = req.method;
    pump->path = req.path;
    pump->arrival = arrival;
    const uint64_t seed = meta.seed;
    submit_all(job, pump, ex, n_choices, [&](int c) {
      tzero::RequestParams p = r.resolved[size_t(c / r.n)];
      p.sampling.seed = seed + uint64_t(c % r.n);
      return p;
    });
    if (r.stream) {
      HttpResponse head;
      head.content_type = "text/event-stream";
      head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
      // Counted as its headers go out, so a client reading /metrics after its stream sees it.
      metrics.count_request(endpoint_label(req.path), 200);
      ex->begin_stream(std::move(head));
    }
    pump->armed = true;
    pump->notify();
    return true;
  }

  // POST /v1/embeddings: one engine request per input (prefill only), answered once all are
  // done. Returns true (the answer goes out through the pump).
  bool embeddings(const HttpRequest& req, const std::shared_ptr<Exchange>& ex) {
    const Clock::time_point arrival = Clock::now();
    if (shutting_down) throw ApiError(503, "The server is shutting down.", "", "shutdown");
    auto r = std::make_shared<EmbeddingsRequest>(parse_embeddings_request(req.body));
    resolve_embeddings(*r, engine);
    const int n = int(r->tokens.size());
    // As for n choices: inputs beyond what the queue holds could never all be admitted.
    if (n > engine.options().max_queue)
      throw ApiError(400,
                     "'input' holds " + std::to_string(n) +
                         " items but this server queues at "
                         "most " +
                         std::to_string(engine.options().max_queue) +
                         " requests at once (--max-queue): send fewer per request",
                     "input", "invalid_value");
    ResponseMeta meta;
    meta.id = random_id("embd-");
    meta.created = int64_t(std::time(nullptr));
    meta.model = model;
    meta.fingerprint = fingerprint;
    auto job = std::make_shared<Job>(n, arrival, metrics);
    auto pump = std::make_shared<Pump>(*this, job, ex, meta, n, false, false, false);
    pump->method = req.method;
    pump->path = req.path;
    pump->arrival = arrival;
    pump->embed = r;
    pump->vectors.resize(size_t(n));
    submit_all(job, pump, ex, n, [&](int i) { return embedding_params(*r, size_t(i)); });
    pump->armed = true;
    pump->notify();
    return true;
  }

  // --- routing --------------------------------------------------------------------------------

  // Returns true when the answer goes out later; otherwise `res` is it.
  bool route(HttpRequest& req, HttpResponse& res, const std::shared_ptr<Exchange>& ex) {
    if (!host_allowed(req))
      throw ApiError(403,
                     "Host '" + req.header("Host") +
                         "' is not allowed: without --api-key the server answers only requests "
                         "to an IP address, localhost or an --allowed-host name.",
                     "", "host_not_allowed");
    const std::string& path = req.path;
    const char* allow = kGetPaths.count(path) ? "GET" : kPostPaths.count(path) ? "POST" : nullptr;
    const bool get = req.method == "GET" || req.method == "HEAD";
    if (allow && req.method != allow && !(req.method == "HEAD" && *allow == 'G')) {
      send_error(res, ApiError(405, "Method " + req.method + " is not allowed on " + path +
                                        " (use " + allow + ")."));
      res.headers.emplace_back("Allow", allow);
      return false;
    }
    const bool model_id = path.size() > 11 && path.rfind("/v1/models/", 0) == 0;
    if (!allow && !(model_id && get)) {
      send_error(res, ApiError(404, "Unknown route: " + req.method + " " + path + "."));
      return false;
    }
    if (path != "/health" && !authorized(req, res)) return false;
    if (path == "/")
      page(res, console_html(console_info()));
    else if (path == "/canary") {
      if (!opt.canary_page) throw ApiError(404, "No drift canary: start with --canary LOCK.json.");
      page(res, opt.canary_page());
    } else if (path == "/health")
      health(req, res);
    else if (path == "/metrics")
      metrics_route(req, res);
    else if (path == "/v1/models")
      models(req, res);
    else if (path == "/tokenizer_info")
      res.body = dump_json(tokenizer_info_response(engine));
    else if (model_id)
      model_by_id(req, res);
    else {
      // Only JSON: a web page can send text/plain or a form anywhere without asking (no CORS
      // preflight), but not application/json.
      const std::string ct = req.header("Content-Type");
      if (lower(trim(ct.substr(0, ct.find(';')))) != "application/json")
        throw ApiError(415,
                       ct.empty() ? std::string("The request has no Content-Type: send the body "
                                                "as application/json.")
                                  : "Content-Type '" + ct +
                                        "' is not supported: send the body as application/json.",
                       "", "unsupported_media_type");
      if (path == "/v1/embeddings") return embeddings(req, ex);
      if (path == "/tokenize" || path == "/detokenize") {
        res.content_type = kJson;
        res.body = dump_json(path == "/tokenize" ? tokenize_response(engine, req.body)
                                                 : detokenize_response(engine, req.body));
        return false;
      }
      return generate(path == "/v1/completions" ? Endpoint::completions : Endpoint::chat, req, res,
                      ex);
    }
    return false;
  }

  // Every request, on a handler thread. Exceptions become error objects (never an
  // unexplained 500).
  void handle(HttpRequest& req, std::shared_ptr<Exchange> ex) {
    const Clock::time_point start = Clock::now();
    HttpResponse res;
    try {
      if (route(req, res, ex)) return;
    } catch (const ApiError& e) {
      res = HttpResponse();
      send_error(res, e);
      if (e.status == 429 || e.status == 503)
        res.headers.emplace_back("Retry-After", std::to_string(opt.retry_after_s));
    } catch (const std::exception& e) {
      res = HttpResponse();
      send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
    }
    cap_response(res, req.path);
    // Counted before the response goes out (as the client gets it: a 413 over the cap), so a
    // client that reads /metrics right after its response already sees its request.
    metrics.count_request(endpoint_label(req.path), res.status);
    if (access_log.enabled())
      access_log.write(access_log_line(req.method, req.path, res.status, std::nullopt,
                                       AccessLog::ms_since(start)));
    const size_t moved = req.body.size() + res.body.size();
    if (moved > (size_t(1) << 20))
      ex->respond(std::move(res), [moved] { give_back_memory_after(moved); });
    else
      ex->respond(std::move(res));
  }
};

HttpServer::HttpServer(tzero::Engine& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}

HttpServer::~HttpServer() {
  stop(0);
}

int HttpServer::start() {
  Impl& m = *impl_;
  tzero::check(m.bound_port < 0 && !m.transport, "the server is already started");
  TransportOptions t;
  t.host = m.opt.host;
  t.port = m.opt.port;
  t.max_connections = std::max(1, m.opt.max_connections);
  t.max_header_bytes = m.opt.max_header_bytes;
  t.max_header_fields = m.opt.max_header_fields;
  t.max_body_bytes = m.opt.max_body_bytes;
  t.request_timeout_s = m.opt.request_timeout_s;
  t.keep_alive_s = m.opt.keep_alive_s;
  t.write_timeout_s = m.opt.write_timeout_s;
  t.handler_threads = std::max(1, m.opt.http_threads);
  t.retry_after_s = m.opt.retry_after_s;
  t.on_refused = [&m](const std::string& path, int status) {
    m.metrics.count_request(endpoint_label(path), status);
    if (m.access_log.enabled())
      m.access_log.write(access_log_line("-", path, status, std::nullopt, -1, "refused"));
  };
  auto transport = std::make_unique<HttpTransport>(
      t, [&m](HttpRequest& req, std::shared_ptr<Exchange> ex) { m.handle(req, std::move(ex)); });
  m.bound_port = transport->start();
  m.transport = std::move(transport);
  m.engine.start();
  return m.bound_port;
}

int HttpServer::port() const {
  return impl_->bound_port;
}

void HttpServer::stop(double grace_s) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (m.stopped) return;
  m.stopped = true;
  m.shutting_down = true;
  if (m.transport) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace_s));
    while (m.n_jobs() > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Cancelled requests answer their clients; give them a moment to send it (a client that
    // does not read is not waited for: the transport closes it below).
    const auto flush = Clock::now() + std::chrono::seconds(2);
    while (m.n_jobs() > 0 && Clock::now() < flush) {
      m.cancel_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.transport->stop();
  }
}

void HttpServer::cancel_all() {
  impl_->cancel_all();
}

int HttpServer::in_flight() const {
  return impl_->n_jobs();
}

const std::string& HttpServer::model_name() const {
  return impl_->model;
}

}  // namespace tzero::server
