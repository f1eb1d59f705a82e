// The HTTP transport (server/http_transport.h): Boost.Beast's parser, Boost.Asio's event loop.
//
// Threads: one io thread runs every connection (reads, writes, timers, the acceptor); a pool of
// handler_threads runs the handler. Everything else reaches a connection by posting to the io
// thread (Exchange), through a Poster that drops the work once the transport has stopped, so
// an engine callback that outlives the server never touches a destroyed io_context.
#include "server/http_transport.h"

// Beast's string_view is std::string_view here (this is the only file that includes Beast).
#define BOOST_BEAST_USE_STD_STRING_VIEW 1

#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/error.h"

namespace tzero::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += char(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.001, s)));
}

std::string status_line(int status) {
  const auto reason = http::obsolete_reason(http::int_to_status(unsigned(status)));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) +
         "\r\n";
}

// A small JSON error body of the transport's own refusals (the same shape as the server's
// error objects: docs/SERVER.md, "Errors").
std::string error_body(int status, const std::string& message, const char* code) {
  std::string esc;
  for (char c : message) {
    if (c == '"' || c == '\\') esc += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    esc += c;
  }
  const char* type = status >= 500 ? "server_error" : "invalid_request_error";
  return std::string("{\"error\":{\"message\":\"") + esc + "\",\"type\":\"" + type +
         "\",\"param\":null,\"code\":" + (code ? std::string("\"") + code + "\"" : "null") + "}}";
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return "";
}

bool HttpRequest::has_header(std::string_view name) const {
  for (const auto& kv : headers)
    if (iequals(kv.first, name)) return true;
  return false;
}

// Posts work to the io thread while the transport runs; drops it afterwards.
struct Poster {
  std::mutex mu;
  net::io_context* ioc = nullptr;
  net::thread_pool* pool = nullptr;
  void post(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(mu);
    if (ioc) net::post(*ioc, std::move(f));
  }
  void work(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(mu);
    if (pool) net::post(*pool, std::move(f));
  }
  void shut() {
    std::lock_guard<std::mutex> lock(mu);
    ioc = nullptr;
    pool = nullptr;
  }
};

class Connection;

struct HttpTransport::Impl {
  Impl(TransportOptions o, HttpHandler h) : opt(std::move(o)), handler(std::move(h)) {}

  TransportOptions opt;
  HttpHandler handler;
  std::shared_ptr<Poster> poster = std::make_shared<Poster>();
  std::atomic<int> n_open{0};
  std::atomic<uint64_t> n_rejected{0};
  // Open connections, owned here while open (io thread only).
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
  std::mutex stop_mu;
  bool started = false, stopped = false;
  std::atomic<bool> stopping{false};
  std::unique_ptr<net::thread_pool> pool;
  // Declared last: destroyed first, while the members above still exist.
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_retry{ioc};
  std::thread io_thread;

  void do_accept();
  void reject(tcp::socket& s);
  void close_all();
};

class ExchangeImpl;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpTransport::Impl& t, tcp::socket s)
      : t_(t), stream_(std::move(s)), buffer_(t.opt.max_header_bytes + (64u << 10)) {}

  void start() { read_request(); }

  // Closes the socket now; the response in progress (if any) is abandoned: its gone callback
  // and its written callback run.
  void close_now() {
    if (closed_) return;
    closed_ = true;
    auto self = shared_from_this();  // the map below may hold the last reference
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    if (t_.connections.erase(this)) t_.n_open.fetch_sub(1);
    if (!complete_) {
      complete_ = true;
      if (gone_) std::exchange(gone_, nullptr)();
    }
    if (drained_) std::exchange(drained_, nullptr)();
  }

  // --- called on the io thread through an ExchangeImpl -------------------------------------

  void respond(const ExchangeImpl* ex, HttpResponse r, std::function<void()> written);
  void begin_stream(const ExchangeImpl* ex, HttpResponse head);
  void send(const ExchangeImpl* ex, std::string bytes);
  void end_stream(const ExchangeImpl* ex, std::function<void()> written);
  void set_gone(const ExchangeImpl* ex, std::function<void()> f) {
    if (ex != ex_.get() || closed_) return f();
    if (complete_) return;  // answered in full: it can no longer be lost
    gone_ = std::move(f);
  }

 private:
  // Waits for the next request: on a kept-alive connection up to keep_alive_s for its first
  // byte; then the whole request within request_timeout_s.
  void read_request() {
    if (closed_ || t_.stopping) return close_now();
    if (buffer_.size() == 0 && served_ > 0) {
      stream_.expires_after(seconds(t_.opt.keep_alive_s));
      auto self = shared_from_this();
      stream_.async_read_some(buffer_.prepare(4096), [self](beast::error_code ec, size_t n) {
        self->buffer_.commit(n);
        if (ec || n == 0) return self->close_now();
        self->read_header();
      });
      return;
    }
    read_header();
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(uint32_t(std::min<size_t>(t_.opt.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(t_.opt.max_body_bytes);
    stream_.expires_after(seconds(t_.opt.request_timeout_s));
    auto self = shared_from_this();
    http::async_read_header(stream_, buffer_, *parser_,
                            [self](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (closed_) return;
    if (ec == http::error::header_limit)
      return refuse(431, "The request's header section is larger than the server accepts.",
                    "request_header_fields_too_large");
    if (ec == http::error::buffer_overflow)
      return refuse(431, "The request's header section is larger than the server accepts.",
                    "request_header_fields_too_large");
    // (The parser compares a Content-Length with the body limit as soon as it has the header.)
    if (ec == http::error::body_limit)
      return refuse(413, "The request body is too large.", nullptr);
    if (ec) return read_failed(ec);
    const auto& req = parser_->get();
    if (size_t(std::distance(req.begin(), req.end())) > t_.opt.max_header_fields)
      return refuse(431,
                    "The request has more than " + std::to_string(t_.opt.max_header_fields) +
                        " header fields.",
                    "request_header_fields_too_large");
    // RFC 9112, section 3.2: more than one Host is a 400 (which one would name the target?).
    if (req.count(http::field::host) > 1)
      return refuse(400, "The request has more than one Host header field.", "duplicate_host");
    // Compressed bodies are refused before they are read: inflating one could pass the body
    // limit by orders of magnitude.
    const auto enc = req.find(http::field::content_encoding);
    if (enc != req.end() && !iequals(enc->value(), "identity"))
      return refuse(415,
                    "Content-Encoding '" + std::string(enc->value()) +
                        "' is not supported: send the body uncompressed.",
                    nullptr);
    const auto length = parser_->content_length();
    if (length && *length > t_.opt.max_body_bytes)
      return refuse(413, "The request body is too large.", nullptr);
    if (parser_->is_done()) return dispatch();
    const auto expect = req.find(http::field::expect);
    if (expect != req.end() && iequals(expect->value(), "100-continue") && req.version() >= 11) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      auto self = shared_from_this();
      net::async_write(stream_, net::buffer(kContinue), [self](beast::error_code e, size_t) {
        if (e || self->closed_) return self->close_now();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    auto self = shared_from_this();
    http::async_read(stream_, buffer_, *parser_, [self](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec == http::error::body_limit)
        return self->refuse(413, "The request body is too large.", nullptr);
      if (ec) return self->read_failed(ec);
      self->dispatch();
    });
  }

  // A request that cannot be read: a timeout or a vanished client closes, a malformed one gets
  // 400 first.
  void read_failed(beast::error_code ec) {
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == http::error::partial_message)
      return close_now();
    refuse(400, "The request could not be parsed (" + ec.message() + ").", nullptr);
  }

  // Answers a request it will not read on, then closes.
  void refuse(int status, const std::string& message, const char* code) {
    stream_.expires_never();
    if (t_.opt.on_refused) {
      std::string path;
      if (parser_ && parser_->is_header_done()) {
        const std::string target(parser_->get().target());
        path = percent_decode(std::string_view(target).substr(0, target.find('?')));
      }
      t_.opt.on_refused(path, status);
    }
    HttpResponse r;
    r.status = status;
    r.content_type = "application/json";
    r.body = error_body(status, message, code);
    r.close = true;
    head_request_ = false;
    complete_ = true;
    write_response(r);
  }

  void dispatch() {
    stream_.expires_never();
    auto& msg = parser_->get();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    const size_t q = req.target.find('?');
    req.path = percent_decode(std::string_view(req.target).substr(0, q));
    req.version = int(msg.version());
    for (const auto& f : msg)
      req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(msg.body());
    keep_alive_ = msg.keep_alive();
    head_request_ = req.method == "HEAD";
    version_ = req.version;
    parser_.reset();
    ++served_;
    complete_ = false;
    make_exchange();
    auto ex = std::static_pointer_cast<Exchange>(ex_);
    HttpHandler& handler = t_.handler;
    net::post(*t_.pool, [&handler, ex, r = std::move(req)]() mutable {
      try {
        handler(r, ex);
      } catch (const std::exception& e) {
        HttpResponse res;
        res.status = 500;
        res.content_type = "application/json";
        res.body = error_body(500, std::string("internal error: ") + e.what(), nullptr);
        ex->respond(std::move(res), nullptr);
      }
    });
  }

  void make_exchange();

  std::string head_of(const HttpResponse& r, bool stream) {
    std::string h = status_line(r.status);
    if (!r.content_type.empty()) h += "Content-Type: " + r.content_type + "\r\n";
    for (const auto& [k, v] : r.headers) h += k + ": " + v + "\r\n";
    if (!stream) {
      h += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    } else if (chunked_) {
      h += "Transfer-Encoding: chunked\r\n";
    }
    if (close_after_)
      h += "Connection: close\r\n";
    else if (version_ < 11)
      h += "Connection: keep-alive\r\n";
    return h + "\r\n";
  }

  void write_response(const HttpResponse& r, std::function<void()> written = nullptr) {
    close_after_ = r.close || !keep_alive_ || t_.stopping;
    std::string out = head_of(r, false);
    if (!head_request_) out += r.body;
    enqueue(std::move(out), /*whole=*/true);
    after_drained([this, written = std::move(written)] {
      if (written) written();
      next();
    });
  }

  // After a whole response: the next request, or a graceful close.
  void next() {
    complete_ = true;
    gone_ = nullptr;
    ex_.reset();
    if (closed_) return;
    if (close_after_) return linger_close();
    read_request();
  }

  // Half-closes and reads what the client still sends for a moment, so that closing with
  // unread bytes does not reset the connection before the client has read the response.
  void linger_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(1));
    drain();
  }
  void drain() {
    auto self = shared_from_this();
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(16384), [self](beast::error_code ec, size_t n) {
      self->drained_bytes_ += n;
      if (ec || n == 0 || self->drained_bytes_ > (1u << 20) || self->closed_)
        return self->close_now();
      self->drain();
    });
  }

  // Queues bytes to write. Stream bytes beyond max_send_queue_bytes waiting cut the client (it
  // does not read); a whole response is queued at any size (its handler bounds it, and nothing
  // more is queued on the connection until it is written; write_timeout_s bounds each write).
  void enqueue(std::string bytes, bool whole = false) {
    if (closed_ || bytes.empty()) return;
    queued_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (!whole && queued_ > t_.opt.max_send_queue_bytes) return close_now();
    if (!writing_) write_some();
  }

  void write_some() {
    writing_ = true;
    current_.clear();
    for (std::string& s : queue_) current_ += s;
    queue_.clear();
    stream_.expires_after(seconds(t_.opt.write_timeout_s));
    auto self = shared_from_this();
    net::async_write(stream_, net::buffer(current_), [self](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->queued_ -= self->current_.size();
      if (self->closed_) return;
      if (ec) return self->close_now();
      if (!self->queue_.empty()) return self->write_some();
      self->stream_.expires_never();
      if (self->drained_) std::exchange(self->drained_, nullptr)();
    });
  }

  void after_drained(std::function<void()> f) {
    if (closed_) return f();
    if (!writing_ && queue_.empty()) return f();
    drained_ = std::move(f);
  }

  HttpTransport::Impl& t_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<ExchangeImpl> ex_;
  std::function<void()> gone_, drained_;
  std::deque<std::string> queue_;
  std::string current_;
  size_t queued_ = 0, drained_bytes_ = 0;
  uint64_t served_ = 0;
  int version_ = 11;
  bool closed_ = false, writing_ = false, keep_alive_ = false, close_after_ = false;
  bool complete_ = true, head_request_ = false, chunked_ = false, streaming_ = false;

  friend class ExchangeImpl;
};

class ExchangeImpl : public Exchange, public std::enable_shared_from_this<ExchangeImpl> {
 public:
  ExchangeImpl(std::weak_ptr<Connection> c, std::shared_ptr<Poster> p, int version)
      : conn_(std::move(c)), poster_(std::move(p)), version_(version) {}

  void respond(HttpResponse r, std::function<void()> written) override {
    if (!written) {
      on_io([r = std::move(r)](Connection& c, const ExchangeImpl* self) mutable {
        c.respond(self, std::move(r), nullptr);
      });
      return;
    }
    auto w = std::make_shared<std::function<void()>>(std::move(written));
    auto rr = std::make_shared<HttpResponse>(std::move(r));
    post_or(
        [w] { (*w)(); },
        [w, rr](Connection& c, const ExchangeImpl* self) { c.respond(self, std::move(*rr), *w); });
  }
  void begin_stream(HttpResponse head) override {
    on_io([h = std::move(head)](Connection& c, const ExchangeImpl* self) mutable {
      c.begin_stream(self, std::move(h));
    });
  }
  void send(std::string bytes) override {
    on_io([b = std::move(bytes)](Connection& c, const ExchangeImpl* self) mutable {
      c.send(self, std::move(b));
    });
  }
  void end_stream(std::function<void()> written) override {
    auto w = std::make_shared<std::function<void()>>(std::move(written));
    post_or([w] { (*w)(); },
            [w](Connection& c, const ExchangeImpl* self) { c.end_stream(self, *w); });
  }
  void post(std::function<void()> f) override { poster_->post(std::move(f)); }
  void work(std::function<void()> f) override { poster_->work(std::move(f)); }
  void on_gone(std::function<void()> f) override {
    auto g = std::make_shared<std::function<void()>>(std::move(f));
    post_or([g] { (*g)(); },
            [g](Connection& c, const ExchangeImpl* self) { c.set_gone(self, *g); });
  }
  int version() const override { return version_; }

 private:
  template <class F>
  void on_io(F f) {
    auto self = shared_from_this();
    std::weak_ptr<Connection> wc = conn_;
    poster_->post([wc, self, f = std::move(f)]() mutable {
      if (auto c = wc.lock()) f(*c, self.get());
    });
  }
  // Like on_io, but `fallback` runs (on the io thread, or here when the transport is gone)
  // when the connection no longer exists, so a callback promised to run always does.
  template <class F>
  void post_or(std::function<void()> fallback, F f) {
    auto self = shared_from_this();
    std::weak_ptr<Connection> wc = conn_;
    auto ran = std::make_shared<std::atomic<bool>>(false);
    auto guard = std::shared_ptr<void>(nullptr, [ran, fallback](void*) {
      if (!ran->exchange(true)) fallback();
    });
    poster_->post([wc, self, f = std::move(f), ran, guard]() mutable {
      if (auto c = wc.lock()) {
        ran->store(true);
        f(*c, self.get());
      }
    });
  }
  std::weak_ptr<Connection> conn_;
  std::shared_ptr<Poster> poster_;
  int version_;
};

void Connection::make_exchange() {
  ex_ = std::make_shared<ExchangeImpl>(weak_from_this(), t_.poster, version_);
}

void Connection::respond(const ExchangeImpl* ex, HttpResponse r, std::function<void()> written) {
  if (ex != ex_.get() || closed_ || complete_ || streaming_) {
    if (written) written();
    return;
  }
  complete_ = true;
  gone_ = nullptr;
  write_response(r, std::move(written));
}

void Connection::begin_stream(const ExchangeImpl* ex, HttpResponse head) {
  if (ex != ex_.get() || closed_ || complete_ || streaming_) return;
  streaming_ = true;
  chunked_ = version_ >= 11;
  // HTTP/1.0 knows no chunked encoding: the stream ends when the connection closes.
  close_after_ = head.close || !keep_alive_ || !chunked_ || t_.stopping;
  enqueue(head_of(head, true));
}

void Connection::send(const ExchangeImpl* ex, std::string bytes) {
  if (ex != ex_.get() || closed_ || !streaming_ || bytes.empty()) return;
  if (chunked_) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    bytes.insert(0, size);
    bytes += "\r\n";
  }
  enqueue(std::move(bytes));
}

void Connection::end_stream(const ExchangeImpl* ex, std::function<void()> written) {
  if (ex != ex_.get() || closed_ || !streaming_) return written();
  if (chunked_) enqueue("0\r\n\r\n");
  after_drained([this, written = std::move(written)] {
    streaming_ = false;
    const bool was_closed = closed_;
    complete_ = true;
    gone_ = nullptr;
    written();
    if (!was_closed) next();
  });
}

// --- the listener -------------------------------------------------------------------------------

void HttpTransport::Impl::do_accept() {
  acceptor.async_accept(ioc, [this](beast::error_code ec, tcp::socket s) {
    if (stopping || !acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors or memory: try again shortly instead of spinning.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e && !stopping) do_accept();
      });
      return;
    }
    if (n_open.load() >= opt.max_connections) {
      reject(s);
    } else {
      beast::error_code ignored;
      s.set_option(tcp::no_delay(true), ignored);
      auto c = std::make_shared<Connection>(*this, std::move(s));
      connections.emplace(c.get(), c);
      n_open.fetch_add(1);
      c->start();
    }
    do_accept();
  });
}

// Beyond max_connections: a canned 503, written without waiting, and close. What the client
// already sent is read first so that the close does not reset the connection over the answer.
void HttpTransport::Impl::reject(tcp::socket& s) {
  n_rejected.fetch_add(1);
  if (opt.on_refused) opt.on_refused("", 503);
  const int fd = s.native_handle();
  char scratch[16384];
  for (int i = 0; i < 4 && ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0; ++i) {
  }
  const std::string body =
      error_body(503, "The server has too many open connections (--max-connections). Retry later.",
                 "too_many_connections");
  const std::string msg =
      status_line(503) +
      "Content-Type: application/json\r\nRetry-After: " + std::to_string(opt.retry_after_s) +
      "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  beast::error_code ec;
  s.close(ec);
}

void HttpTransport::Impl::close_all() {
  beast::error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& kv : connections) all.push_back(kv.second);
  for (auto& c : all) c->close_now();
}

// --- HttpTransport ------------------------------------------------------------------------------

HttpTransport::HttpTransport(TransportOptions options, HttpHandler handler)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(handler))) {}

HttpTransport::~HttpTransport() {
  stop();
}

int HttpTransport::start() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  tzero::check(!m.started, "the transport is already started");
  const std::string where = m.opt.host + ":" + std::to_string(m.opt.port);
  beast::error_code ec;
  tcp::endpoint ep;
  const auto addr = net::ip::make_address(m.opt.host, ec);
  if (!ec) {
    ep = tcp::endpoint(addr, uint16_t(m.opt.port));
  } else {  // a name such as localhost: its first address
    tcp::resolver resolver(m.ioc);
    const auto found = resolver.resolve(m.opt.host, std::to_string(m.opt.port), ec);
    tzero::check(!ec && !found.empty(),
                 "cannot listen on " + where + " (cannot resolve the host: " + ec.message() + ")");
    ep = found.begin()->endpoint();
  }
  m.acceptor.open(ep.protocol(), ec);
  // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind the same port and silently
  // take half the connections.
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  tzero::check(!ec, "cannot listen on " + where +
                        " (address in use or not available: " + ec.message() + ")");
  // Room for max_connections descriptors (the soft limit is often 1024).
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    const rlim_t want = rlim_t(m.opt.max_connections) + 256;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
      rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  m.started = true;
  m.poster->ioc = &m.ioc;
  m.pool = std::make_unique<net::thread_pool>(size_t(std::max(1, m.opt.handler_threads)));
  m.poster->pool = m.pool.get();
  const int port = int(m.acceptor.local_endpoint().port());  // before the loop owns it
  m.do_accept();
  m.io_thread = std::thread([&m] { m.ioc.run(); });
  return port;
}

void HttpTransport::stop() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.stopping = true;
  m.poster->post([&m] { m.close_all(); });
  // Handlers in progress finish (what they answer is dropped); nothing new reaches the loop.
  m.pool->join();
  m.poster->post([&m] { m.close_all(); });
  m.poster->shut();
  // Every operation was cancelled by the close: the loop ends by itself; a moment later it is
  // stopped regardless.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!m.ioc.stopped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m.ioc.stop();
  m.io_thread.join();
}

int HttpTransport::open_connections() const {
  return impl_->n_open.load();
}

uint64_t HttpTransport::rejected_connections() const {
  return impl_->n_rejected.load();
}

}  // namespace tzero::server
