// tzero probe, lock and verify (the real binary) against hostile servers (e2e/hostile_server.h):
// ~62 MB of nested `[` or of empty strings ends with exit 2 within the --timeout and with the
// client's peak memory bounded (its own, read by wait4: RUSAGE_CHILDREN would be the largest
// child this test process ever had), the error naming the limit; a server's escape sequences are
// printed as \xHH, never raw, on the terminal and in the HTML reports. Bounded: each run ends in
// a few seconds.
#include <fcntl.h>

#include <chrono>
#include <string>
#include <vector>

#include "e2e/hostile_server.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using test::HostileServer;
using test::Hostility;
using test::read_file;
using test::scratch_dir;
using test::write_file;

// Before the limits the deep body took 2.27 GB; now the body (62 MB) and at most a 256 MiB
// document (exact_json.h) besides the binary.
constexpr long kMaxRssMb = 400;
constexpr double kTimeoutS = 5;

using Measured = test::CliResult;

Measured run_measured(const std::vector<std::string>& args) {
  return test::run_tzero(args);
}

std::vector<std::string> probe_args(const HostileServer& s, const char* timeout_s = "5") {
  return {"probe", "--base-url", s.url(),   "--model",       "m", "--runs", "1", "--concurrency",
          "0",     "--timeout",  timeout_s, "--temperature", "0"};
}

// A prompt set of one request; its lock, made against a server that answers properly.
struct LockFixture {
  std::string prompts, lock;
};

const LockFixture& lock_fixture() {
  static const LockFixture f = [] {
    LockFixture x;
    x.prompts = scratch_dir() + "/hostile_prompts.jsonl";
    x.lock = scratch_dir() + "/hostile_lock.json";
    write_file(x.prompts, "{\"id\": \"one\", \"prompt\": \"hello\", \"max_tokens\": 4}\n");
    HostileServer good(Hostility::CutStream);  // not streamed: a proper answer
    const Measured m = run_measured({"lock", x.prompts, "-o", x.lock, "--base-url", good.url()});
    EXPECT_EQ(m.exit_code, 0) << m.err;
    return x;
  }();
  return f;
}

void expect_bounded(const Measured& m, const std::string& says) {
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find(says), std::string::npos) << m.err;
  EXPECT_LT(m.seconds, kTimeoutS + 2);
  EXPECT_LT(m.peak_rss_kb / 1024, kMaxRssMb);
  std::printf("  exit %d in %.2f s, peak RSS %ld MB\n", m.exit_code, m.seconds,
              m.peak_rss_kb / 1024);
}

bool has_control_bytes(const std::string& s) {
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\n' && c != '\t') || b == 0x7f) return true;
  }
  return false;
}

TEST(ClientsHostile, ProbeRefusesDeepNestingInBoundedTimeAndMemory) {
  HostileServer server(Hostility::DeepNesting);
  expect_bounded(run_measured(probe_args(server)), "nested deeper than 256 levels");
}

TEST(ClientsHostile, ProbeRefusesAWideBodyInBoundedTimeAndMemory) {
  HostileServer server(Hostility::WideBody);
  // A longer --timeout: room to parse up to the limit on a slow machine.
  const Measured m = run_measured(probe_args(server, "10"));
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_TRUE(m.err.find("more than 256 MiB of memory") != std::string::npos ||
              m.err.find("no answer within 10 s") != std::string::npos)
      << m.err;
  EXPECT_LT(m.seconds, 12.0);
  EXPECT_LT(m.peak_rss_kb / 1024, kMaxRssMb);
  std::printf("  exit %d in %.2f s, peak RSS %ld MB\n", m.exit_code, m.seconds,
              m.peak_rss_kb / 1024);
}

TEST(ClientsHostile, LockAndVerifyRefuseDeepNestingInBoundedTimeAndMemory) {
  const LockFixture& f = lock_fixture();
  HostileServer server(Hostility::DeepNesting);
  const std::string out = scratch_dir() + "/hostile_deep_lock.json";
  expect_bounded(
      run_measured({"lock", f.prompts, "-o", out, "--base-url", server.url(), "--timeout", "5"}),
      "nested deeper than 256 levels");
  expect_bounded(run_measured({"verify", f.lock, "--base-url", server.url(), "--timeout", "5"}),
                 "nested deeper than 256 levels");
}

TEST(ClientsHostile, EscapeSequencesArePrintedEscaped) {
  HostileServer server(Hostility::EscapeInError);
  const std::string dir = scratch_dir() + "/hostile_report";
  std::vector<std::string> args = probe_args(server);
  args.insert(args.end(), {"--report", dir});
  const Measured p = run_measured(args);
  EXPECT_EQ(p.exit_code, 2) << p.err;  // every request failed: nothing compared
  const std::string escaped = "\\x1b[2J\\x1b]0;pwned\\x07";
  EXPECT_NE(p.err.find(escaped), std::string::npos) << p.err;
  EXPECT_NE(p.out.find(escaped), std::string::npos) << p.out;  // the table's failed requests
  EXPECT_FALSE(has_control_bytes(p.out + p.err)) << p.out << p.err;
  const std::string html = read_file(dir + "/index.html");
  EXPECT_NE(html.find(escaped), std::string::npos);
  EXPECT_FALSE(has_control_bytes(html));

  const LockFixture& f = lock_fixture();
  const Measured l = run_measured({"lock", f.prompts, "-o", scratch_dir() + "/hostile_esc.json",
                                   "--base-url", server.url(), "--timeout", "5"});
  EXPECT_EQ(l.exit_code, 2) << l.err;
  EXPECT_NE(l.err.find(escaped), std::string::npos) << l.err;
  EXPECT_FALSE(has_control_bytes(l.out + l.err)) << l.err;

  const std::string page = scratch_dir() + "/hostile_verify.html";
  const Measured v = run_measured(
      {"verify", f.lock, "--base-url", server.url(), "--timeout", "5", "--html", page});
  EXPECT_EQ(v.exit_code, 2) << v.err;
  EXPECT_NE(v.err.find(escaped), std::string::npos) << v.err;
  EXPECT_FALSE(has_control_bytes(v.out + v.err)) << v.err;
  const std::string vhtml = read_file(page);
  EXPECT_NE(vhtml.find(escaped), std::string::npos);
  EXPECT_FALSE(has_control_bytes(vhtml));
}

}  // namespace
}  // namespace tzero
