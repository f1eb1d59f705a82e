// The HTTP layer (server/http_server.h): routes, auth, limits, streaming, shutdown.
#include "server/http_server.h"

#include <httplib.h>
#include <strings.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "base/error.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace tzero::server {

using nlohmann::json;

namespace {

const char* kJson = "application/json";

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump_json(e.to_json()), kJson);
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
  return rng();
}

// The routes and the methods they take: anything else on these paths is a 405.
const std::set<std::string> kGetPaths = {"/health", "/metrics", "/v1/models"};
const std::set<std::string> kPostPaths = {"/v1/completions", "/v1/chat/completions"};

}  // namespace

struct HttpServer::Impl {
  Impl(tzero::Engine& e, ServerOptions o) : engine(e), opt(std::move(o)) {
    model = opt.model_name.empty() ? engine.info().name : opt.model_name;
    fingerprint = "tz-" + engine.info().fingerprint;
    chat_template = opt.chat_template;
    if (chat_template.empty() && engine.info().chat_template.empty()) chat_template = "chatml";
  }

  tzero::Engine& engine;
  ServerOptions opt;
  std::string model, fingerprint, chat_template;
  httplib::Server svr;
  std::thread listener;
  std::atomic<bool> listen_ended{false};
  int bound_port = -1;
  Metrics metrics;

  std::atomic<bool> shutting_down{false};
  std::mutex stop_mu;  // one stop() at a time
  bool stopped = false;
  mutable std::mutex jobs_mu;
  std::set<std::shared_ptr<Job>> jobs;  // generation requests in flight

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

  // --- auth and errors ------------------------------------------------------------------------

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (opt.api_key.empty()) return true;
    // The scheme is case-insensitive (RFC 7235), the key is not.
    const std::string auth = req.get_header_value("Authorization");
    if (auth.size() == 7 + opt.api_key.size() && strncasecmp(auth.c_str(), "Bearer ", 7) == 0 &&
        auth.compare(7, std::string::npos, opt.api_key) == 0)
      return true;
    const bool given = req.has_header("Authorization");
    send_error(res, ApiError(401,
                             given ? "Incorrect API key provided."
                                   : "You didn't provide an API key. Give it as "
                                     "'Authorization: Bearer KEY'.",
                             "", "invalid_api_key"));
    res.set_header("WWW-Authenticate", "Bearer");
    return false;
  }

  // Runs a handler, turning exceptions into error objects (never an unexplained 500).
  template <class F>
  httplib::Server::Handler guarded(F f, bool auth = true) {
    return [this, f, auth](const httplib::Request& req, httplib::Response& res) {
      try {
        if (auth && !authorized(req, res)) return;
        f(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
        if (e.status == 429 || e.status == 503)
          res.set_header("Retry-After", std::to_string(opt.retry_after_s));
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
      }
    };
  }

  // --- simple routes --------------------------------------------------------------------------

  json model_object() const {
    return json{{"id", model}, {"object", "model"}, {"created", 0}, {"owned_by", "tzero"}};
  }

  void health(const httplib::Request&, httplib::Response& res) {
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
    res.status = down ? 503 : 200;
    res.set_content(dump_json(j), kJson);
  }

  void metrics_route(const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(engine.stats(), n_jobs()), "text/plain; version=0.0.4");
  }

  void models(const httplib::Request&, httplib::Response& res) {
    res.set_content(dump_json(json{{"object", "list"}, {"data", json::array({model_object()})}}),
                    kJson);
  }

  void model_by_id(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id != model)
      throw ApiError(404, "The model '" + id + "' does not exist.", "model", "model_not_found");
    res.set_content(dump_json(model_object()), kJson);
  }

  // --- generation -----------------------------------------------------------------------------

  void generate(Endpoint ep, const httplib::Request& req, httplib::Response& res) {
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

    // The n choices are n engine requests queued at once: more than the queue holds could
    // never be admitted, so that is the client's error, not a busy server.
    if (r.n > engine.options().max_queue)
      throw ApiError(400,
                     "n is " + std::to_string(r.n) + " but this server queues at most " +
                         std::to_string(engine.options().max_queue) +
                         " requests at once (--max-queue)",
                     "n", "invalid_value");
    auto job = std::make_shared<Job>(r.n, arrival, metrics);
    const uint64_t seed = r.seed ? *r.seed : random_seed();
    try {
      for (int i = 0; i < r.n; ++i) {
        tzero::RequestParams p = r.params;
        p.sampling.seed = seed + uint64_t(i);
        job->add_engine_id(engine.submit(p, job->callback(i)));
      }
    } catch (const tzero::QueueFull& e) {
      job->cancel(engine);
      throw ApiError(429, std::string("The server is busy: ") + e.what() + ". Retry later.", "",
                     "queue_full");
    } catch (const tzero::RequestError& e) {
      job->cancel(engine);
      throw api_error_of(e);
    }
    add_job(job);

    if (!r.stream) {
      ChoiceAccumulator acc(r.n, engine, r.want_logprobs);
      while (true) {
        for (const Job::Event& ev : job->take(std::chrono::milliseconds(1000))) acc.add(ev);
        if (job->finished()) {
          for (const Job::Event& ev : job->take(std::chrono::milliseconds(0))) acc.add(ev);
          break;
        }
      }
      remove_job(job);
      if (acc.any_cancelled())
        throw ApiError(503, "The server is shutting down; the request was cancelled.", "",
                       "shutdown");
      res.set_content(dump_json(full_response(meta, acc.choices(), acc.usage())), kJson);
      return;
    }

    auto writer = std::make_shared<StreamWriter>(meta, r.n, r.include_usage, engine);
    auto opened = std::make_shared<bool>(false);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, job, writer, opened](size_t, httplib::DataSink& sink) -> bool {
          std::string out;
          if (!*opened) out = writer->open(), *opened = true;
          // finished() before take(): what arrived before it said so is all there is.
          const bool done = job->finished();
          out += writer->add(job->take(std::chrono::milliseconds(done || !out.empty() ? 0 : 500)));
          if (done) out += writer->close();
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            if (job->mark_disconnected()) metrics.count_disconnect();
            job->cancel(engine);
            return false;
          }
          if (done) sink.done();
          return true;
        },
        [this, job](bool success) {
          if (!success) {
            if (job->mark_disconnected()) metrics.count_disconnect();
            job->cancel(engine);
          }
          remove_job(job);
        });
  }

  // --- setup ----------------------------------------------------------------------------------

  void routes() {
    svr.Get("/health", guarded([this](auto& q, auto& s) { health(q, s); }, false));
    svr.Get("/metrics", guarded([this](auto& q, auto& s) { metrics_route(q, s); }));
    svr.Get("/v1/models", guarded([this](auto& q, auto& s) { models(q, s); }));
    svr.Get(R"(/v1/models/(.+))", guarded([this](auto& q, auto& s) { model_by_id(q, s); }));
    svr.Post("/v1/completions",
             guarded([this](auto& q, auto& s) { generate(Endpoint::completions, q, s); }));
    svr.Post("/v1/chat/completions",
             guarded([this](auto& q, auto& s) { generate(Endpoint::chat, q, s); }));
    auto not_allowed = [](const char* allow) {
      return [allow](const httplib::Request& req, httplib::Response& res) {
        send_error(res, ApiError(405, "Method " + req.method + " is not allowed on " + req.path +
                                          " (use " + allow + ")."));
        res.set_header("Allow", allow);
      };
    };
    // A wrong method without a body (httplib would otherwise wait for one on PUT) is refused
    // before routing; with a body, the handlers below refuse it after reading it.
    svr.set_pre_routing_handler([not_allowed](const httplib::Request& req, httplib::Response& res) {
      using R = httplib::Server::HandlerResponse;
      // Compressed bodies are refused before they are read: httplib would inflate them past
      // the body size limit (a few hundred KB of gzip can become gigabytes).
      if (req.has_header("Content-Encoding") &&
          req.get_header_value("Content-Encoding") != "identity") {
        send_error(res,
                   ApiError(415, "Content-Encoding '" + req.get_header_value("Content-Encoding") +
                                     "' is not supported: send the body uncompressed."));
        res.set_header("Connection", "close");
        return R::Handled;
      }
      const bool has_body =
          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0") ||
          req.has_header("Transfer-Encoding");
      const char* allow = kGetPaths.count(req.path)    ? "GET"
                          : kPostPaths.count(req.path) ? "POST"
                                                       : nullptr;
      if (has_body || !allow || req.method == allow || (req.method == "HEAD" && *allow == 'G'))
        return R::Unhandled;
      not_allowed(allow)(req, res);
      return R::Handled;
    });
    for (const std::string& p : kGetPaths) {
      svr.Post(p, not_allowed("GET"));
      svr.Put(p, not_allowed("GET"));
      svr.Patch(p, not_allowed("GET"));
      svr.Delete(p, not_allowed("GET"));
    }
    for (const std::string& p : kPostPaths) {
      svr.Get(p, not_allowed("POST"));
      svr.Put(p, not_allowed("POST"));
      svr.Patch(p, not_allowed("POST"));
      svr.Delete(p, not_allowed("POST"));
    }
    // Statuses httplib sets itself (404 no route, 413 body too large, 400 unreadable request)
    // get the error object too; a body a handler already wrote is kept.
    svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string msg;
      switch (res.status) {
        case 404:
          msg = "Unknown route: " + req.method + " " + req.path + ".";
          break;
        case 413:
          msg = "The request body is too large.";
          break;
        default:
          msg = "The request could not be served (HTTP " + std::to_string(res.status) + ").";
      }
      send_error(res, ApiError(res.status, msg));
    });
    // Counted before the response goes out (httplib runs the post-routing handler after the
    // error handler, just before writing), so a client that reads /metrics right after its
    // response already sees its request; a logger would run after the write.
    svr.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      std::string ep = req.path;
      if (!kGetPaths.count(ep) && !kPostPaths.count(ep))
        ep = ep.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}" : "other";
      metrics.count_request(ep, res.status);
    });
  }
};

HttpServer::HttpServer(tzero::Engine& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}

HttpServer::~HttpServer() {
  stop(0);
}

int HttpServer::start() {
  Impl& m = *impl_;
  tzero::check(m.bound_port < 0, "the server is already started");
  const size_t threads = size_t(std::max(1, m.opt.http_threads));
  m.svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.svr.set_payload_max_length(m.opt.max_body_bytes);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which lets a second server
  // bind the same port and silently take half the connections.
  m.svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const char*>(&yes), sizeof yes);
  });
  m.svr.set_keep_alive_timeout(m.opt.keep_alive_s);
  m.routes();
  if (m.opt.port == 0) {
    m.bound_port = m.svr.bind_to_any_port(m.opt.host);
  } else if (m.svr.bind_to_port(m.opt.host, m.opt.port)) {
    m.bound_port = m.opt.port;
  }
  tzero::check(m.bound_port > 0, "cannot listen on " + m.opt.host + ":" +
                                     std::to_string(m.opt.port) +
                                     " (address in use or not available)");
  m.engine.start();
  m.listener = std::thread([&m] {
    m.svr.listen_after_bind();
    m.listen_ended = true;
  });
  // httplib's stop() does nothing before the listen loop has started, which would then run
  // forever: return only once it is running (or has already ended).
  while (!m.svr.is_running() && !m.listen_ended)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
  if (m.listener.joinable()) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace_s));
    while (m.n_jobs() > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Cancelled requests answer their clients; give them a moment to send it.
    const auto flush = Clock::now() + std::chrono::seconds(5);
    while (m.n_jobs() > 0 && Clock::now() < flush) {
      m.cancel_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.svr.stop();
    m.listener.join();
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
