// One costly grammar must not stall everyone (docs/GRAMMAR.md "Cost", docs/SERVER.md "Limits
// and threat model"): the issue's 151-byte ambiguous grammar, sent with n: 8 to `tzero serve` on
// a 32k-vocabulary model, ends as a 400 grammar_budget_exceeded (plain) or an error event
// (streamed) within seconds, a bystander's short completion meanwhile stays within a bounded
// multiple of its time alone, and the server's memory goes back down afterwards.
// Measured on the 2-core development VM (110m preset, q8_0): see the [measured] lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kAmbiguous = R"(root ::= x
x ::= [a-z ] x "b" | [a-z ] x "c" | ".")";

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A bystander's 4-token greedy completion: its wall time in seconds (-1 on an error).
double bystander(httplib::Client& c) {
  const Clock::time_point t0 = Clock::now();
  int st = 0;
  const json r = tzero::test::post_json(
      c, "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}},
      &st);
  return st == 200 ? seconds_since(t0) : -1;
}

TEST(ServeBudget, AnAmbiguousGrammarFailsAloneWithoutStallingOthers) {
  const std::string model = tzero::test::generated_model("110m", "q8_0");
  tzero::test::ServeProcess srv({"-m", model, "-t", "2", "--parallel", "16", "--no-access-log"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  auto c = srv.client(120);
  // Alone: the median of 5 after a warm-up.
  bystander(*c);
  std::vector<double> alone;
  for (int i = 0; i < 5; ++i) alone.push_back(bystander(*c));
  std::sort(alone.begin(), alone.end());
  const double base = alone[2];
  ASSERT_GT(base, 0);
  const long rss_base = rss_kib(srv.pid());

  const json attack = {{"prompt", "x"},      {"max_tokens", 64}, {"n", 8},
                       {"temperature", 1.0}, {"seed", 7},        {"grammar", kAmbiguous}};
  std::atomic<bool> done{false};
  int attack_status = 0;
  json attack_answer;
  double attack_s = 0;
  std::thread attacker([&] {
    auto ac = srv.client(300);
    const Clock::time_point t0 = Clock::now();
    attack_answer = tzero::test::post_json(*ac, "/v1/completions", attack, &attack_status);
    attack_s = seconds_since(t0);
    done = true;
  });
  double worst = 0;
  int n_during = 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  while (!done && n_during < 200) {
    const double t = bystander(*c);
    ASSERT_GT(t, 0) << "the bystander failed";
    worst = std::max(worst, t);
    ++n_during;
  }
  attacker.join();
  std::printf(
      "[measured] bystander alone %.3f s; during the attack (n=8, %d requests) worst %.3f s "
      "(%.1fx); attack answered %d in %.2f s\n",
      base, n_during, worst, worst / base, attack_status, attack_s);
  EXPECT_EQ(attack_status, 400) << attack_answer.dump();
  EXPECT_EQ(attack_answer["error"]["code"], "grammar_budget_exceeded") << attack_answer.dump();
  EXPECT_LT(attack_s, 60.0);
  // Generous: 8 grammars each at most their budget per step (about 0.1 s each) on top of the
  // bystander's own 4 steps. Before the budget: 84x with n 1, no answer within 60 s with n 8.
  EXPECT_LT(worst, std::max(25 * base, base + 4.0)) << "alone " << base << " s";

  // Streamed: the choices' error as an SSE error event, no [DONE].
  json streamed = attack;
  streamed["stream"] = true;
  int st = 0;
  const std::string sse = tzero::test::post_stream(*c, "/v1/completions", streamed, &st);
  EXPECT_EQ(st, 200);
  EXPECT_NE(sse.find("grammar_budget_exceeded"), std::string::npos) << sse.substr(0, 2000);
  EXPECT_EQ(sse.find("[DONE]"), std::string::npos);

  // The same request fails the same way (at the same token: the message names it).
  int st2 = 0;
  const json again = tzero::test::post_json(*c, "/v1/completions", attack, &st2);
  EXPECT_EQ(again["error"]["message"], attack_answer["error"]["message"]);

  // Memory back down once the engine is idle (glibc's freed pages returned).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_GT(bystander(*c), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long rss_after = rss_kib(srv.pid());
  std::printf("[measured] server RSS %ld KiB before the attacks, %ld KiB after\n", rss_base,
              rss_after);
  EXPECT_LT(rss_after - rss_base, 96 * 1024) << rss_base << " -> " << rss_after << " KiB";
}

}  // namespace
