// The ranks without MPI (distributed/transport.h): every process is a world of one.
#include <unistd.h>

#include <cstdlib>

#include "base/error.h"
#include "distributed/transport.h"

namespace tzero::dist {

bool built_with_mpi() {
  return false;
}

void init(int*, char***) {}

World world() {
  return {};
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

void send(int, std::vector<uint8_t>&&, double, Channel) {
  throw Error("internal: a send in a build without MPI");
}

void post(int, std::vector<uint8_t>&&, Channel) {
  throw Error("internal: a send in a build without MPI");
}

std::vector<uint8_t> receive(int, double, Channel) {
  throw Error("internal: a receive in a build without MPI");
}

bool try_receive_any(Channel, int*, std::vector<uint8_t>*) {
  throw Error("internal: a receive in a build without MPI");
}

void set_work_while_waiting(std::function<bool()>) {}

void abort_job(int code) {
  std::_Exit(code);
}

void finalize() {}

}  // namespace tzero::dist
