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

void send(int, std::vector<uint8_t>&&, double) {
  throw Error("internal: a send in a build without MPI");
}

void post(int, std::vector<uint8_t>&&) {
  throw Error("internal: a send in a build without MPI");
}

std::vector<uint8_t> receive(int, double) {
  throw Error("internal: a receive in a build without MPI");
}

void abort_job(int code) {
  std::_Exit(code);
}

void finalize() {}

}  // namespace tzero::dist
