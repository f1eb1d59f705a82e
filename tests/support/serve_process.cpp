#include "support/serve_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>

#include "support/test_support.h"

extern char** environ;

namespace tzero::test {

ServeProcess::ServeProcess(const std::vector<std::string>& args, double timeout_s,
                           const std::vector<std::string>& wrapper) {
  int fds[2];
  if (pipe(fds) != 0) return;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<std::string> argv_s = wrapper;
  for (const std::string& w : tzero_command()) argv_s.push_back(w);
  argv_s.insert(argv_s.end(), {"serve", "--host", "127.0.0.1", "--port", "0"});
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    pid_ = -1;
    return;
  }
  const int rfd = fds[0];
  reader_ = std::thread([this, rfd] {
    char buf[4096];
    while (true) {
      const ssize_t n = read(rfd, buf, sizeof buf);
      std::lock_guard<std::mutex> lock(mu_);
      if (n <= 0) {
        exited_ = true;  // stderr closed: the process is gone (or closing)
        cv_.notify_all();
        break;
      }
      err_.append(buf, size_t(n));
      std::smatch m;
      static const std::regex re(R"(listening on http://[^:\s]+:(\d+))");
      if (port_ < 0 && std::regex_search(err_, m, re)) port_ = std::stoi(m[1]);
      cv_.notify_all();
    }
    close(rfd);
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
               [this] { return port_ > 0 || exited_; });
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0 && exit_code_ < 0) stop(SIGKILL, 10);
  if (reader_.joinable()) reader_.join();
}

std::string ServeProcess::stderr_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

std::unique_ptr<httplib::Client> ServeProcess::client(int read_timeout_s) const {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
  c->set_read_timeout(read_timeout_s, 0);
  c->set_connection_timeout(10, 0);
  return c;
}

int ServeProcess::stop(int sig, double timeout_s) {
  if (pid_ <= 0) return -1;
  if (exit_code_ >= 0) return exit_code_;
  kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exit_code_ = 999;  // reaped; report the timeout
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // The process is reaped, but the reader may not have drained its last stderr lines yet (seen
  // under load: "stopped" missing): wait for the end of the pipe, which its exit closed.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(10), [this] { return exited_; });
  return exit_code_;
}

std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    pos = end + 1;
  }
  return out;
}

nlohmann::json post_json(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                         int* status, const httplib::Headers& headers) {
  auto res = c.Post(path.c_str(), headers, body.dump(), "application/json");
  if (!res) {
    if (status) *status = -1;
    return nlohmann::json();
  }
  if (status) *status = res->status;
  return nlohmann::json::parse(res->body, nullptr, false);
}

}  // namespace tzero::test
