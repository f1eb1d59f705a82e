#include "e2e/hostile_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace tzero::test {

namespace {
constexpr auto kMaxLife = std::chrono::seconds(30);  // no connection lives longer
constexpr size_t kMaxBytes = size_t(512) << 20;      // nor sends more

const char* kSseHeaders =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Connection: close\r\n\r\n";
const char* kChunk =
    "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok\","
    "\"finish_reason\":null}]}\n\n";

std::string json_headers(size_t length, const char* status = "200 OK",
                         const char* type = "application/json") {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(length) + "\r\nConnection: close\r\n\r\n";
}
}  // namespace

HostileServer::HostileServer(Hostility h) : h_(h) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(listen_fd_, 16);
  socklen_t len = sizeof a;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      conns_.emplace_back([this, fd] { serve(fd); });
    }
  });
}

HostileServer::~HostileServer() {
  stop_ = true;
  acceptor_.join();
  for (auto& t : conns_) t.join();
  close(listen_fd_);
}

void HostileServer::serve(int fd) {
  const auto t0 = std::chrono::steady_clock::now();
  auto alive = [&] {
    return !stop_ && std::chrono::steady_clock::now() - t0 < kMaxLife && sent_ < kMaxBytes;
  };
  auto send_all = [&](const std::string& s) {
    size_t off = 0;
    while (off < s.size() && alive()) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;  // the client went away
      off += size_t(n), sent_ += size_t(n);
    }
    return off == s.size();
  };
  auto pause = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  // `unit` sent `times` times, in pieces of about 64 KiB.
  auto send_repeated = [&](const std::string& unit, size_t times) {
    std::string piece;
    while (piece.size() < (size_t(1) << 16)) piece += unit;
    const size_t per_piece = piece.size() / unit.size();
    for (size_t left = times; left > 0;) {
      const size_t n = std::min(left, per_piece);
      if (!alive() || !send_all(piece.substr(0, n * unit.size()))) return false;
      left -= n;
    }
    return true;
  };
  // The request: headers, then Content-Length bytes of body.
  std::string req;
  char buf[4096];
  size_t need = std::string::npos;
  while (alive() && req.size() < need) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    req.append(buf, size_t(n));
    const size_t end = req.find("\r\n\r\n");
    if (end != std::string::npos && need == std::string::npos) {
      size_t cl = 0;
      const size_t at = req.find("Content-Length: ");
      if (at != std::string::npos) cl = std::stoul(req.substr(at + 16));
      need = end + 4 + cl;
    }
  }
  ++requests_;
  switch (h_) {
    case Hostility::EndlessStream:
      if (send_all(kSseHeaders))
        while (alive() && send_all(kChunk)) pause(20);
      break;
    case Hostility::KeepAliveForever:
      if (send_all(kSseHeaders))
        while (alive() && send_all(": keep-alive\n\n")) pause(20);
      break;
    case Hostility::HeaderDrip: {
      const std::string head = "HTTP/1.1 200 OK\r\nX-Drip: ";
      for (size_t i = 0; alive(); ++i) {
        if (!send_all(std::string(1, i < head.size() ? head[i] : 'x'))) break;
        pause(50);
      }
      break;
    }
    case Hostility::HugeLine:
      if (send_all(std::string(kSseHeaders) + "data: "))
        while (alive() && send_all(std::string(1 << 16, 'x'))) {
        }
      break;
    case Hostility::EndlessBody:
      if (send_all(
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              "Content-Length: 10000000000\r\nConnection: close\r\n\r\n{\"choices\":[{\"text\":\""))
        while (alive() && send_all(std::string(1 << 16, 'x'))) {
        }
      break;
    case Hostility::RetryAfterHuge: {
      const std::string body = "{\"error\":{\"message\":\"slow down\"}}";
      send_all(
          "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1e308\r\nContent-Type: "
          "application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
      break;
    }
    case Hostility::CutStream:
      if (req.find("\"stream\":true") != std::string::npos) {
        send_all(std::string(kSseHeaders) + kChunk + kChunk);
      } else {  // a proper answer, so `tzero probe` gets as far as its streamed runs
        const std::string body =
            "{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok tok\","
            "\"finish_reason\":\"length\"}]}";
        send_all("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
      }
      break;
    case Hostility::DeepNesting:
      if (send_all(json_headers(kHostileBodyBytes))) send_repeated("[", kHostileBodyBytes);
      break;
    case Hostility::DeepNestingStream:
      if (send_all(std::string(kSseHeaders) + "data: "))
        if (send_repeated("[", size_t(1) << 20)) send_all("\n\n");
      break;
    case Hostility::WideBody: {  // `[""` + n times `,""` + `]`
      const size_t n = (kHostileBodyBytes - 4) / 3;
      if (send_all(json_headers(4 + 3 * n) + "[\"\""))
        if (send_repeated(",\"\"", n)) send_all("]");
      break;
    }
    case Hostility::EscapeInError:
      if (req.find("\"stream\":true") != std::string::npos) {
        send_all(std::string(kSseHeaders) +
                 "data: {\"error\":{\"message\":\"\\u001b[2J\\u001b]0;pwned\\u0007" +
                 std::string(5000, 'x') + "\"}}\n\n");
      } else {
        const std::string body = kEscapes + std::string(5000, 'x');
        send_all(json_headers(body.size(), "500 Internal Server Error", "text/plain") + body);
      }
      break;
  }
  close(fd);
}

}  // namespace tzero::test
