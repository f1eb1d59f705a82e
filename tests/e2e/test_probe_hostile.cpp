// The probe against hostile servers (e2e/hostile_server.h): each attack ends by the request's
// deadline, a size cap or a JSON limit (nesting, document memory) with a ProbeError (exit 2 from
// `tzero probe`), never a hang, an unbounded buffer or a success, and the server's text in the
// error is escaped. Bounded: every case waits at most a few seconds (the command line's peak
// memory: test_clients_hostile.cpp).
#include <gtest/gtest.h>

#include <chrono>

#include "e2e/hostile_server.h"
#include "probe/client.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using probe::Client;
using probe::CompletionRequest;
using probe::ProbeError;
using test::HostileServer;
using test::Hostility;

struct Outcome {
  std::string error;  // "" when complete() returned
  double seconds = 0;
};

Outcome attack(Hostility h, bool stream, double timeout_s = 1.0) {
  HostileServer server(h);
  const Client client(server.url(), "", timeout_s);
  CompletionRequest r;
  r.model = "m";
  r.prompt = "hello";
  r.stream = stream;
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    client.complete(r);
  } catch (const ProbeError& e) {
    o.error = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

TEST(ProbeHostile, EndlessStreamEndsAtTheDeadline) {
  const Outcome o = attack(Hostility::EndlessStream, true);
  EXPECT_NE(o.error.find("no answer within 1 s"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 3.0);
}

TEST(ProbeHostile, KeepAliveCommentsEndAtTheDeadline) {
  const Outcome o = attack(Hostility::KeepAliveForever, true);
  EXPECT_NE(o.error.find("no answer within 1 s"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 3.0);
}

TEST(ProbeHostile, DrippedHeadersEndAtTheDeadline) {
  // Every byte restarts a read timeout: only the watchdog's deadline ends this.
  const Outcome o = attack(Hostility::HeaderDrip, false);
  EXPECT_NE(o.error.find("no answer within 1 s"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 3.0);
}

TEST(ProbeHostile, HugeLineIsRefusedAtTheLineCap) {
  const Outcome o = attack(Hostility::HugeLine, true, 30.0);
  EXPECT_NE(o.error.find("line longer than 4 MiB"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 20.0);
}

TEST(ProbeHostile, EndlessBodyIsRefusedAtTheResponseCap) {
  const Outcome o = attack(Hostility::EndlessBody, false, 30.0);
  EXPECT_NE(o.error.find("larger than 64 MiB"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 20.0);
}

TEST(ProbeHostile, HugeRetryAfterIsCappedByTheDeadline) {
  // Retry-After: 1e308 would sleep forever; it is capped, and the whole request (retries
  // included) ends by its deadline.
  const Outcome o = attack(Hostility::RetryAfterHuge, false, 2.0);
  EXPECT_NE(o.error.find("HTTP 429: slow down (a retry after 10 s would pass the 2 s --timeout)"),
            std::string::npos)
      << o.error;
  EXPECT_LT(o.seconds, 4.0);
}

TEST(ProbeHostile, CutStreamIsAnError) {
  const Outcome o = attack(Hostility::CutStream, true, 5.0);
  EXPECT_NE(o.error.find("cut off"), std::string::npos) << o.error;
}

// The attack: ~62 MB of `[` just under the 64 MiB cap. Refused by the nesting limit,
// before a document is built, well within the deadline (it used to take 10.8 s and 2.27 GB).
TEST(ProbeHostile, DeepNestingIsRefusedByTheNestingLimit) {
  const Outcome o = attack(Hostility::DeepNesting, false, 5.0);
  EXPECT_NE(o.error.find("nested deeper than 256 levels"), std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 7.0);
}

TEST(ProbeHostile, DeepNestingInAStreamIsRefusedByTheNestingLimit) {
  const Outcome o = attack(Hostility::DeepNestingStream, true, 5.0);
  EXPECT_NE(o.error.find("a streamed event is refused: it is JSON nested deeper than 256 levels"),
            std::string::npos)
      << o.error;
  EXPECT_LT(o.seconds, 7.0);
}

// ~20 million empty strings would build a 1.3 GB document: refused at the 256 MiB estimate.
TEST(ProbeHostile, WideBodyIsRefusedByTheDocumentLimit) {
  const Outcome o = attack(Hostility::WideBody, false, 10.0);
  const bool refused =
      o.error.find("its document would take more than 256 MiB of memory") != std::string::npos;
  // On a machine too slow to parse 62 MB within 10 s the deadline ends it instead: also bounded.
  EXPECT_TRUE(refused || o.error.find("no answer within 10 s") != std::string::npos) << o.error;
  EXPECT_LT(o.seconds, 12.0);
}

// The server's message is quoted cut to 200 bytes with its escape sequences as \xHH: printed,
// it cannot clear the screen or retitle the terminal.
TEST(ProbeHostile, EscapesInAnErrorAreQuotedEscaped) {
  for (const bool stream : {false, true}) {
    const Outcome o = attack(Hostility::EscapeInError, stream, 5.0);
    SCOPED_TRACE(stream ? "streamed" : "not streamed");
    EXPECT_NE(o.error.find(stream ? "the server answered an error: " : "HTTP 500: "),
              std::string::npos)
        << o.error;
    EXPECT_NE(o.error.find("\\x1b[2J\\x1b]0;pwned\\x07xxx"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("... (5014 bytes)"), std::string::npos) << o.error;
    for (const char c : o.error)
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          << int(c) << " in " << o.error;
    EXPECT_LT(o.error.size(), 400u);
  }
}

TEST(ProbeHostile, CliExitsTwoOnACutStream) {
  HostileServer server(Hostility::CutStream);
  const auto r = test::run_tzero({"probe", "--base-url", server.url(), "--model", "m", "--runs",
                                  "1", "--concurrency", "0", "--timeout", "5"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cut off"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tzero
