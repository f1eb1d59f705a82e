// SIGINT as a flag and a self-pipe (cli/interrupt.h).
#include "cli/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"

namespace tzero::cli::interrupt {

namespace {

std::atomic<bool> g_requested{false};
int g_pipe[2] = {-1, -1};

void on_sigint(int) {
  const int saved = errno;
  g_requested.store(true);
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);  // full pipe: already pending
  errno = saved;
}

}  // namespace

void install() {
  if (g_pipe[0] >= 0) return;
  if (pipe(g_pipe) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  for (const int p : g_pipe) {
    fcntl(p, F_SETFL, fcntl(p, F_GETFL) | O_NONBLOCK);
    fcntl(p, F_SETFD, FD_CLOEXEC);
  }
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads wait on fd() instead of failing with EINTR
  sigaction(SIGINT, &sa, nullptr);
}

bool requested() {
  return g_requested.load();
}

void clear() {
  g_requested.store(false);
  char buf[64];
  while (g_pipe[0] >= 0 && read(g_pipe[0], buf, sizeof buf) > 0) {
  }
}

int fd() {
  return g_pipe[0];
}

}  // namespace tzero::cli::interrupt
