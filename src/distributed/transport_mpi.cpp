// The ranks over MPI (distributed/transport.h): the TZERO_MPI build.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <functional>
#include <list>
#include <thread>

#include "base/error.h"
#include "distributed/transport.h"

namespace tzero::dist {
namespace {

World g_world;
bool g_started = false;
std::function<bool()> g_work;  // set_work_while_waiting
bool g_working = false;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(what) + ": " + std::string(text, size_t(len)));
}

using Clock = std::chrono::steady_clock;

// Sends started by post() and not yet taken: their bytes live until MPI is done with them.
struct Posted {
  MPI_Request req;
  std::vector<uint8_t> bytes;
};
std::list<Posted> g_posted;

// Completes the posted sends the receivers have taken (and gives MPI's progress engine a turn).
void reap_posted() {
  for (auto it = g_posted.begin(); it != g_posted.end();) {
    int flag = 0;
    check_mpi(MPI_Test(&it->req, &flag, MPI_STATUS_IGNORE), "MPI_Isend (posted)");
    it = flag ? g_posted.erase(it) : std::next(it);
  }
}

// Polls done() until it is true or timeout_s passes (<= 0: never): a short spin, then naps of
// at most 50 us for the first 0.2 s (a pass's wait: a hop then costs about 0.1 ms, where 200 us
// naps cost a decode step 5-10% more), then of 1 ms (an idle rank costs next to no core). The
// work while waiting (set_work_while_waiting) runs each turn; work done brings back the short
// naps for 0.2 s.
template <class Done>
bool poll_until(Done done, double timeout_s) {
  const Clock::time_point t0 = Clock::now();
  Clock::time_point busy = t0;  // the start, or the last work done while waiting
  int spins = 0;
  std::chrono::microseconds nap(10);
  while (!done()) {
    const Clock::time_point now = Clock::now();
    const double waited = std::chrono::duration<double>(now - t0).count();
    if (timeout_s > 0 && waited > timeout_s) return false;  // (however much work came)
    if (g_work && !g_working) {
      g_working = true;
      bool did = false;
      try {
        did = g_work();
      } catch (...) {
        g_working = false;
        throw;
      }
      g_working = false;
      if (did) {  // (more may follow: poll closely again)
        spins = 0;
        nap = std::chrono::microseconds(10);
        busy = Clock::now();
        continue;
      }
    }
    if (++spins < 200) continue;
    std::this_thread::sleep_for(nap);
    const double idle = std::chrono::duration<double>(now - busy).count();
    nap = std::min(nap * 2, std::chrono::microseconds(idle < 0.2 ? 50 : 1000));
  }
  return true;
}

}  // namespace

bool built_with_mpi() {
  return true;
}

void init(int* argc, char*** argv) {
  if (g_started) return;
  // Only under a launcher: a plain run of this build stays a world of one, without MPI's start.
  if (launcher_ranks() == 0) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  g_started = true;
  check(provided >= MPI_THREAD_SERIALIZED,
        "this MPI library cannot be called from several threads (MPI_THREAD_SERIALIZED)");
  // Errors come back as codes (tzero::Error), never MPI's default abort without a word.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
}

World world() {
  return g_world;
}

std::string host_name() {
  if (g_started) {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS) return std::string(name, size_t(len));
  }
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

void set_work_while_waiting(std::function<bool()> work) {
  g_work = std::move(work);
}

void send(int to, std::vector<uint8_t>&& bytes, double timeout_s, Channel c) {
  check(g_started, "internal: a send without MPI");
  reap_posted();
  check(bytes.size() <= size_t(INT_MAX), "internal: a message over 2 GiB");
  MPI_Request req;
  check_mpi(MPI_Isend(bytes.data(), int(bytes.size()), MPI_BYTE, to, int(c), MPI_COMM_WORLD, &req),
            "MPI_Isend");
  int rc = MPI_SUCCESS;
  const bool done = poll_until(
      [&] {
        int flag = 0;
        rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return rc != MPI_SUCCESS || flag != 0;
      },
      timeout_s);
  if (!done) {
    // The send may still complete if the receiver wakes: its buffer must outlive it.
    new std::vector<uint8_t>(std::move(bytes));  // (a moved vector keeps its buffer)
    throw Error("rank " + std::to_string(to) + " took no message for " +
                std::to_string(int(timeout_s)) + " s");
  }
  check_mpi(rc, "MPI_Isend");
}

void post(int to, std::vector<uint8_t>&& bytes, Channel c) {
  check(g_started, "internal: a send without MPI");
  check(bytes.size() <= size_t(INT_MAX), "internal: a message over 2 GiB");
  reap_posted();
  g_posted.push_back({MPI_REQUEST_NULL, std::move(bytes)});
  Posted& p = g_posted.back();
  check_mpi(
      MPI_Isend(p.bytes.data(), int(p.bytes.size()), MPI_BYTE, to, int(c), MPI_COMM_WORLD, &p.req),
      "MPI_Isend");
}

namespace {

// The message `status` announced (MPI_Iprobe), received.
std::vector<uint8_t> take_probed(const MPI_Status& status) {
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  check_mpi(MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
  return bytes;
}

}  // namespace

bool try_receive_any(Channel c, int* from, std::vector<uint8_t>* bytes) {
  check(g_started, "internal: a receive without MPI");
  MPI_Status status;
  int flag = 0;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, int(c), MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
  if (!flag) return false;
  *from = status.MPI_SOURCE;
  *bytes = take_probed(status);
  return true;
}

std::vector<uint8_t> receive(int from, double timeout_s, Channel c) {
  check(g_started, "internal: a receive without MPI");
  reap_posted();
  MPI_Status status;
  int rc = MPI_SUCCESS;
  const bool done = poll_until(
      [&] {
        int flag = 0;
        if (!g_posted.empty()) reap_posted();
        rc = MPI_Iprobe(from, int(c), MPI_COMM_WORLD, &flag, &status);
        return rc != MPI_SUCCESS || flag != 0;
      },
      timeout_s);
  if (!done)
    throw Error("no message from rank " + std::to_string(from) + " within " +
                std::to_string(int(timeout_s)) + " s");
  check_mpi(rc, "MPI_Iprobe");
  return take_probed(status);
}

void abort_job(int code) {
  if (g_started) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void finalize() {
  if (!g_started) return;
  // Posted sends still out (the receivers took everything an orderly stop needs): a few seconds
  // to complete, then their requests are freed (their bytes stay allocated: MPI may still read
  // them) so that MPI_Finalize finds none active.
  poll_until(
      [] {
        try {
          reap_posted();
        } catch (const Error&) {
          return true;
        }
        return g_posted.empty();
      },
      5.0);
  for (Posted& p : g_posted) {
    MPI_Request_free(&p.req);
    new std::vector<uint8_t>(std::move(p.bytes));
  }
  g_posted.clear();
  g_started = false;
  MPI_Finalize();
}

}  // namespace tzero::dist
