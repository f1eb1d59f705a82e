// The real `tzero serve` binary as a subprocess for the server tests: started on a free
// loopback port (--port 0), its port read from the "listening on http://HOST:PORT" line on
// stderr, stopped with a signal. Plus small HTTP helpers (httplib::Client, SSE parsing).
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tzero::test {

class ServeProcess {
 public:
  // Runs `tzero serve --host 127.0.0.1 --port 0 ARGS...` and waits up to timeout_s for it to
  // listen. ok() says whether it does; stderr_text() says why not. `wrapper` (optional) is the
  // command that runs tzero with its arguments appended, e.g. {"/bin/sh", "-c",
  // "ulimit -s 512 && exec \"$@\"", "sh"} for a small stack; it must exec tzero (pid() is
  // the wrapper's).
  explicit ServeProcess(const std::vector<std::string>& args, double timeout_s = 60,
                        const std::vector<std::string>& wrapper = {});
  ~ServeProcess();  // SIGKILL when still running
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const;
  std::unique_ptr<httplib::Client> client(int read_timeout_s = 60) const;

  // Sends `sig` and waits up to timeout_s for the exit: the exit status, 128 + signal when
  // killed by one, -1 when it did not exit in time (then it is killed). On return stderr_text()
  // holds everything the process wrote.
  int stop(int sig, double timeout_s = 30);

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  int exit_code_ = -1;
  bool exited_ = false;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string err_;
};

// The JSON payloads of a server-sent-event body ("data: X" lines), [DONE] included as the
// string "[DONE]".
std::vector<std::string> sse_data(const std::string& body);

nlohmann::json post_json(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                         int* status = nullptr, const httplib::Headers& headers = {});

}  // namespace tzero::test
