// Ctrl+C (SIGINT) as a request, not a kill: for `tzero chat`, where it stops the reply being
// generated and a second one at the prompt ends the program.
//
// install() sets a sigaction handler that only sets a flag and writes one byte to a self-pipe
// (both async-signal-safe). Loops check requested() between tokens; a blocking read waits on
// fd() too (poll), so a Ctrl+C that arrives just before the read starts still wakes it.
#pragma once

namespace tzero::cli::interrupt {

// Installs the SIGINT handler (once; later calls do nothing). Throws tzero::Error when the pipe
// cannot be made.
void install();
// Whether a SIGINT arrived since the last clear().
bool requested();
// Forgets the SIGINTs so far (drains the pipe).
void clear();
// The read end of the self-pipe: readable while a SIGINT is pending. -1 before install().
int fd();

}  // namespace tzero::cli::interrupt
