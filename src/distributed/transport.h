// The ranks of an MPI job (docs/DISTRIBUTED.md): who this process is, and bytes to and from the
// others. Built on MPI with -DTZERO_MPI=ON (transport_mpi.cpp); without it (transport_none.cpp)
// every process is a world of one and nothing here sends. MPI is the transport and the launcher
// (mpirun); tzero adds no discovery or transport of its own.
//
// Threads: any thread may call send and receive, one at a time (the caller serialises: the
// pipeline's mutex, distributed/pipeline.h). Every wait has a deadline, so a rank that hangs
// becomes a tzero::Error here instead of a hang; a dead rank ends the job through mpirun.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tzero::dist {

struct World {
  int rank = 0, size = 1;
  bool several() const { return size > 1; }
};

// How many ranks a launcher (mpirun, srun, hydra) started this process among, as its
// environment says (`var`, when given, gets the variable that said it); 0 without a launcher.
int launcher_ranks(std::string* var = nullptr);

// Starts MPI when this build has it and the process was started by a launcher (MPI_Init_thread,
// errors returned instead of aborting). Safe to call once; world() is {0, 1} before and without.
void init(int* argc, char*** argv);
World world();
bool built_with_mpi();
// This host's name, as MPI names it (gethostname without MPI): for error messages.
std::string host_name();

// What a message is (an MPI tag): a pipeline's ring message, or expert parallelism's request
// for a rank's experts and its answer (distributed/experts.h). Messages of one channel from one
// rank arrive in the order sent.
enum class Channel : int { ring = 7, expert_request = 8, expert_answer = 9 };

// Sends bytes to rank `to`; throws tzero::Error when they are not taken within timeout_s seconds
// (a receiver that hangs) or on an MPI error. After a timeout the bytes stay allocated for good:
// MPI may still read them if the receiver wakes.
void send(int to, std::vector<uint8_t>&& bytes, double timeout_s, Channel c = Channel::ring);
// Starts sending bytes to rank `to` and returns at once (rank 0's passes in flight, several at a
// time: docs/DISTRIBUTED.md "Micro-batches"). The bytes are kept until the receiver has taken
// them; later calls to post, send and receive complete earlier posts. A receiver that never
// takes them shows as a receive that times out.
void post(int to, std::vector<uint8_t>&& bytes, Channel c = Channel::ring);
// The next message from rank `from` (messages from one rank arrive in the order sent). Waits at
// most timeout_s seconds (<= 0: for ever, polling gently: an idle rank does not spin) and throws
// tzero::Error then.
std::vector<uint8_t> receive(int from, double timeout_s, Channel c = Channel::ring);
// A message of channel c from any rank when one has arrived (true: its sender in *from and its
// bytes); false at once otherwise.
bool try_receive_any(Channel c, int* from, std::vector<uint8_t>* bytes);
// Work every wait of send and receive does while it polls: a rank that holds experts answers
// their requests while it waits itself (for the ring, or for other ranks' experts), so that two
// ranks waiting on each other never deadlock. work returns true when it did something. It may
// post, not send or receive (it is not called within itself).
void set_work_while_waiting(std::function<bool()> work);

// Ends the whole job now (MPI_Abort: mpirun stops every rank) with exit status `code`: after a
// rank hung, when no orderly stop can be agreed. Without MPI, std::_Exit(code).
[[noreturn]] void abort_job(int code);
// MPI_Finalize (nothing without MPI or before init). Every rank calls it once, at the end.
void finalize();

}  // namespace tzero::dist
