// Pipeline parallelism over MPI ranks (docs/DISTRIBUTED.md, issue #36): the MPI build
// (build-mpi/tzero: make mpi; make test builds it) under the real `mpirun --oversubscribe -np
// 2|3|4` on this machine, over loopback TCP. Every answer is compared with the single process's
// (the default build, no mpirun): the logits digest, the tokens and the text, for a dense, a MoE,
// a sliding-window and a recurrent model, at every rank count and several splits; the batched
// engine through lock/verify and the server; and the faults: a rank that hangs (the server
// answers 503 and the job ends within the deadline), a rank that is killed, and SIGTERM.
// Skipped, with the reason, where mpirun or the MPI build is missing.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/serve_test_util.h"
#include "format/gguf.h"
#include "support/serve_process.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_command;
using tzero::test::run_tzero;

bool executable(const std::string& p) {
  return !p.empty() && access(p.c_str(), X_OK) == 0;
}

// The MPI build: TZERO_MPI_BINARY (make test sets it), else BUILD-mpi/tzero beside this build.
std::string mpi_binary() {
  if (const char* e = std::getenv("TZERO_MPI_BINARY"); e && executable(e)) return e;
  const std::string own = tzero::test::tzero_command().back();
  const size_t slash = own.rfind('/');
  if (slash == std::string::npos) return "";
  const std::string dir = own.substr(0, slash);
  const std::string sibling = dir + "-mpi/tzero";
  return executable(sibling) ? sibling : "";
}

#define TZ_REQUIRE_MPI()                                                                      \
  if (!executable("/usr/bin/mpirun") || mpi_binary().empty())                                 \
  GTEST_SKIP() << "no MPI here: needs Debian's openmpi-bin (mpirun) and the MPI build "       \
                  "(make mpi: build-mpi/tzero, or TZERO_MPI_BINARY); make test installs and " \
                  "builds both"

// mpirun over loopback TCP, as many ranks as asked on this machine's 2 cores. `timeout` ends a
// job that would hang, so a bug fails the test instead of stalling the suite.
std::vector<std::string> mpirun_words(int np) {
  std::vector<std::string> a = {"/usr/bin/mpirun",
                                "--oversubscribe",
                                "-np",
                                std::to_string(np),
                                "--mca",
                                "btl",
                                "self,tcp",
                                "--mca",
                                "btl_tcp_if_include",
                                "lo",
                                "--mca",
                                "oob_tcp_if_include",
                                "lo"};
  if (getuid() == 0) a.push_back("--allow-run-as-root");
  return a;
}

CliResult run_ranks(int np, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/timeout", "-k", "5", "180"};
  for (const std::string& w : mpirun_words(np)) argv.push_back(w);
  argv.push_back(mpi_binary());
  for (const std::string& a : args) argv.push_back(a);
  return run_command(argv);
}

// A gen-model file with `layers` layers (enough for 4 ranks), made once per process.
std::string deep_model(const std::string& preset, const std::string& dtype, int layers) {
  return tzero::test::generated_model(preset, dtype, 1, layers);
}

json run_json(const CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  try {
    return json::parse(r.out);
  } catch (const json::exception&) {
    ADD_FAILURE() << "not JSON: " << r.out << "\n" << r.err;
    return json::object();
  }
}

void expect_same_run(const json& want, const json& got, const std::string& what) {
  EXPECT_EQ(got.value("logits_digest", ""), want.value("logits_digest", "")) << what;
  EXPECT_EQ(got["tokens"], want["tokens"]) << what;
  EXPECT_EQ(got.value("text", ""), want.value("text", "")) << what;
}

// The pid of rank `rank` among mpirun's children (OMPI_COMM_WORLD_RANK in its environment).
pid_t rank_pid(pid_t mpirun, int rank, double timeout_s = 30) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    DIR* d = opendir("/proc");
    for (dirent* e = d ? readdir(d) : nullptr; e; e = readdir(d)) {
      const pid_t pid = pid_t(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
      std::string line;
      std::getline(stat, line);
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      char state;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid != mpirun) continue;
      std::ifstream env("/proc/" + std::string(e->d_name) + "/environ", std::ios::binary);
      std::string var;
      while (std::getline(env, var, '\0'))
        if (var == want) {
          closedir(d);
          return pid;
        }
    }
    if (d) closedir(d);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

// `tzero serve ARGS` under mpirun -np N (ServeProcess runs the wrapper with the default
// build's path first: the script drops it and execs mpirun with the MPI build instead).
std::vector<std::string> serve_wrapper(int np) {
  std::string script = "shift; exec";
  for (const std::string& w : mpirun_words(np)) script += " " + w;
  script += " " + mpi_binary() + " \"$@\"";
  return {"/bin/sh", "-c", script, "sh"};
}

const std::vector<std::string> kPrompts = {"Once upon a time", "The little dog saw", "1 2 3 4 5 6",
                                           "She said"};

json complete(httplib::Client& c, const std::string& prompt, int* status = nullptr) {
  return tzero::test::post_json(
      c, "/v1/completions",
      {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"seed", 3}}, status);
}

// A prompt's answer from a server: its text and logits digest (or the error).
std::string answer(const tzero::test::ServeProcess& srv, const std::string& prompt) {
  auto c = srv.client(120);
  int status = 0;
  const json j = complete(*c, prompt, &status);
  if (status != 200) return "status " + std::to_string(status) + ": " + j.dump();
  return j["choices"][0]["text"].get<std::string>() + " | " +
         j["choices"][0]["tzero"]["logits_digest"].get<std::string>();
}

// Each prompt's answer, the requests in flight at once.
std::vector<std::string> answers(const tzero::test::ServeProcess& srv,
                                 const std::vector<std::string>& prompts = kPrompts) {
  std::vector<std::future<std::string>> futures;
  for (const std::string& p : prompts)
    futures.push_back(std::async(std::launch::async, [&srv, p] { return answer(srv, p); }));
  std::vector<std::string> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

// A value of the server's /metrics (-1 when absent).
double metric(const tzero::test::ServeProcess& srv, const std::string& name) {
  auto c = srv.client(30);
  const auto res = c->Get("/metrics");
  if (!res || res->status != 200) return -1;
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return std::atof(line.c_str() + name.size() + 1);
  return -1;
}

}  // namespace

TEST(DistributedRun, EveryRankCountAndSplitGivesTheSingleProcessBits) {
  TZ_REQUIRE_MPI();
  struct Case {
    std::string preset, dtype;
    int layers;
  };
  // dense (llama), MoE (qwen3moe), sliding window (gemma3), recurrent (qwen35: Gated DeltaNet).
  for (const Case& c : {Case{"tiny", "q8_0", 5}, Case{"tiny-qwen3moe", "q4_k", 4},
                        Case{"tiny-gemma3", "q8_0", 6}, Case{"tiny-qwen35", "q8_0", 4}}) {
    const std::string model = deep_model(c.preset, c.dtype, c.layers);
    const std::vector<std::string> args = {"run", "-m",     model, "-p", "Once upon a time",
                                           "-n",  "20",     "-t",  "1",  "-c",
                                           "128", "--json", "-b",  "4"};
    const json want = run_json(run_tzero(args));
    ASSERT_EQ(want["tokens"].size(), 20u) << c.preset;
    for (int np = 2; np <= 4; ++np) {
      const json got = run_json(run_ranks(np, args));
      expect_same_run(want, got, c.preset + " -np " + std::to_string(np));
      // The layers did cross the ranks: every pass of the prompt (chunks of 4) and the steps.
      EXPECT_EQ(got["ranks"]["n"], np);
      EXPECT_EQ(got["ranks"]["passes"], 3 + 19) << got["ranks"].dump();
      EXPECT_GT(got["ranks"]["bytes_per_row_per_hop"].get<double>(), 256 * 4);
    }
    // Other splits of the layers: equal counts, and named cuts.
    for (const std::string& split : {std::string("layers"), std::string("1,3")}) {
      std::vector<std::string> a = args;
      a.insert(a.end(), {"--pipeline-split", split});
      expect_same_run(want, run_json(run_ranks(3, a)), c.preset + " split " + split);
    }
  }
}

TEST(DistributedRun, SeedsAndSamplingAreTheSingleProcessOnes) {
  TZ_REQUIRE_MPI();
  // (f32: a quantized model's activations, quantized again for the products, can absorb a
  // one-ulp flip on a rank; float products carry it to the digest.)
  const std::string model = deep_model("tiny", "f32", 4);
  const std::vector<std::string> args = {"run", "-m", model,    "-p",    "The little dog saw",
                                         "-n",  "16", "--temp", "0.9",   "--seed",
                                         "11",  "-t", "1",      "--json"};
  expect_same_run(run_json(run_tzero(args)), run_json(run_ranks(2, args)), "sampled -np 2");
}

TEST(DistributedRun, ChatAndEmbeddingsAreTheSingleProcessOnes) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny", "q8_0", 5);
  // chat over stdin (mpirun hands it to rank 0): two turns on one KV cache.
  const std::vector<std::string> chat = {"chat", "-m", model, "-t", "1", "-n", "8"};
  const CliResult one = run_tzero(chat, "hello\nhow are you\n");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> argv = {"/usr/bin/timeout", "-k", "5", "120"};
  for (const std::string& w : mpirun_words(2)) argv.push_back(w);
  argv.push_back(mpi_binary());
  argv.insert(argv.end(), chat.begin(), chat.end());
  const CliResult ranks = run_command(argv, "hello\nhow are you\n");
  EXPECT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_EQ(ranks.out, one.out);
  // embeddings: the engine's hidden rows, pooled.
  const std::vector<std::string> embed = {"embed", "-m", model, "-t", "1", "-p", "the dog ran"};
  const CliResult e1 = run_tzero(embed);
  ASSERT_EQ(e1.exit_code, 0) << e1.err;
  const CliResult e3 = run_ranks(3, embed);
  EXPECT_EQ(e3.exit_code, 0) << e3.err;
  EXPECT_EQ(e3.out, e1.out);
}

TEST(DistributedRun, ADraftModelStaysWholeOnRankZeroAndChangesNoBit) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny", "f32", 4);   // (f32: as in the test above)
  const std::string draft = deep_model("tiny", "q8_0", 4);  // another quantization: some agree
  const std::vector<std::string> args = {
      "run", "-m", model, "--draft-model", draft, "-p", "Once upon a time", "-n",
      "24",  "-t", "1",   "--json"};
  const json want = run_json(run_tzero(args));
  const CliResult r = run_ranks(2, args);
  const json got = run_json(r);
  expect_same_run(want, got, "draft -np 2");
  EXPECT_EQ(got["speculative"], want["speculative"]);
  // Only the target is split: one "over 2 MPI ranks" line, and its passes alone crossed.
  size_t lines = 0;
  for (size_t at = 0; (at = r.err.find("over 2 MPI ranks", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << r.err;
  EXPECT_EQ(got["ranks"]["passes"], want["speculative"]["passes"].get<int>() + 1) << got.dump();
}

// Proves: expert parallelism gives the single process's bits. Each MoE layer's slots run on
// the rank holding their expert, one slot a row, and come back for the combine: np 2 leaves
// rank 0's layers none of their experts and rank 1's all of theirs; np 3 and 4 split both.
// Routed experts with renormalised softmax weights (qwen3moe), with biases and the clamped
// SwiGLU (gpt-oss, f32: a one-ulp change on a rank moves the digest), with a gated shared
// expert (qwen2moe), and with sigmoid routing in groups beside MLA (deepseek2).
TEST(DistributedExperts, EveryPlacementOfTheExpertsGivesTheSingleProcessBits) {
  TZ_REQUIRE_MPI();
  struct Case {
    std::string preset, dtype;
    int layers;
  };
  for (const Case& c : {Case{"tiny-qwen3moe", "q4_k", 4}, Case{"tiny-gpt-oss", "f32", 4},
                        Case{"tiny-qwen2moe", "q8_0", 4}, Case{"tiny-deepseek2", "q8_0", 4}}) {
    const std::string model = deep_model(c.preset, c.dtype, c.layers);
    const std::vector<std::string> args = {"run", "-m",     model, "-p", "Once upon a time",
                                           "-n",  "12",     "-t",  "1",  "-c",
                                           "128", "--json", "-b",  "4"};
    const json want = run_json(run_tzero(args));
    ASSERT_EQ(want["tokens"].size(), 12u) << c.preset;
    // (Rank 0 runs layers 0-1 at np 2 and 3: deepseek2's layer 0 is dense.)
    for (const auto& [np, split] :
         std::vector<std::pair<int, std::string>>{{2, "2"}, {3, "2,3"}, {4, "layers"}}) {
      std::vector<std::string> a = args;
      a.insert(a.end(), {"--expert-parallel", "--pipeline-split", split});
      const json got = run_json(run_ranks(np, a));
      const std::string what = c.preset + " -np " + std::to_string(np);
      expect_same_run(want, got, what);
      // Rank 0 holds no expert; the others hold equal ranges; rank 0's layers asked for slots.
      ASSERT_TRUE(got["ranks"].contains("experts")) << what << ": " << got.dump();
      EXPECT_EQ(got["ranks"]["experts"]["first"][0], 0) << what;
      EXPECT_EQ(got["ranks"]["experts"]["first"].size(), size_t(np)) << what;
      if (np < 4) {
        EXPECT_GT(got["ranks"]["experts"]["slots"].get<int>(), 0) << what;
      }
    }
  }
}

// Proves: expert parallelism under micro-batches neither deadlocks nor moves a bit. Three
// ranks: ranks 1 and 2 each run layers and hold half the experts, with passes of several
// sequences out at once, so each asks the other for experts while the other may be waiting on
// it (each answers requests while it waits). Then it refuses, by name, what it cannot do.
TEST(DistributedExperts, MicroBatchesAskEachOthersExpertsWithoutDeadlock) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny-qwen3moe", "f32", 6);
  const std::vector<std::string> args = {"-m", model, "-t", "1", "--ctx", "64", "--parallel", "4"};
  std::vector<std::string> want;
  {
    tzero::test::ServeProcess one(args);
    ASSERT_TRUE(one.ok()) << one.stderr_text();
    want = answers(one);
  }
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--expert-parallel", "--pipeline-split", "layers"});
  tzero::test::ServeProcess ranks(a, 120, serve_wrapper(3));
  ASSERT_TRUE(ranks.ok()) << ranks.stderr_text();
  EXPECT_EQ(answers(ranks), want);
  EXPECT_GE(metric(ranks, "tzero_pipeline_most_in_flight"), 2);
  EXPECT_GT(metric(ranks, "tzero_expert_slots_total"), 0);
  EXPECT_NE(ranks.stop(SIGTERM, 60), -1) << ranks.stderr_text();

  const std::vector<std::string> dense = {
      "run", "-m", deep_model("tiny", "q8_0", 3), "-p", "hi", "-n", "2", "--expert-parallel"};
  const CliResult no_experts = run_ranks(2, dense);
  EXPECT_EQ(no_experts.exit_code, 2) << no_experts.err;
  EXPECT_NE(no_experts.err.find("--expert-parallel"), std::string::npos) << no_experts.err;
  EXPECT_NE(no_experts.err.find("no experts"), std::string::npos) << no_experts.err;
  const CliResult one_rank =
      run_tzero({"run", "-m", model, "-p", "hi", "-n", "2", "--expert-parallel"});
  EXPECT_EQ(one_rank.exit_code, 2) << one_rank.err;
  EXPECT_NE(one_rank.err.find("2 or more ranks"), std::string::npos) << one_rank.err;
}

TEST(DistributedUsage, BadSplitsAndTooManyRanksAreRefusedByName) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny", "q8_0", 3);
  const std::vector<std::string> base = {"run", "-m", model, "-p", "hi", "-n", "2", "-t", "1"};
  std::vector<std::string> a = base;
  a.insert(a.end(), {"--pipeline-split", "2,1"});
  CliResult r = run_ranks(3, a);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--pipeline-split 2,1"), std::string::npos) << r.err;
  r = run_ranks(4, base);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("4 ranks but the model has 3 layers"), std::string::npos) << r.err;
  // --trace needs every layer in one process.
  a = base;
  a.insert(a.end(), {"--trace", tzero::test::scratch_dir() + "/t.trace"});
  r = run_ranks(2, a);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not across MPI ranks"), std::string::npos) << r.err;
}

TEST(DistributedEngine, ALockMadeInOneProcessVerifiesOverRanksAndBack) {
  TZ_REQUIRE_MPI();
  const std::string dir = tzero::test::scratch_dir();
  const std::string model = deep_model("tiny-qwen3moe", "q8_0", 4);
  const std::string prompts = dir + "/prompts.jsonl";
  tzero::test::write_file(
      prompts,
      R"({"id": "greedy", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}
{"id": "sampled", "prompt": "The little dog saw", "max_tokens": 10, "temperature": 0.8, "seed": 7, "top_k": 20}
{"id": "long", "prompt": "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", "max_tokens": 16, "temperature": 0}
{"id": "stopped", "prompt": "She said", "max_tokens": 16, "stop": ["e"], "temperature": 0.5}
)");
  // A lock made in one process verifies over 3 ranks (the engine's batches cross the ring)...
  const std::string single = dir + "/single.json";
  CliResult r = run_tzero({"lock", prompts, "-o", single, "-m", model, "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ranks(3, {"verify", single, "-t", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // ...and one made over 2 ranks verifies in one process.
  const std::string ranked = dir + "/ranked.json";
  r = run_ranks(2, {"lock", prompts, "-o", ranked, "-m", model, "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_tzero({"verify", ranked, "-t", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(tzero::test::read_file(single))["fingerprint"],
            json::parse(tzero::test::read_file(ranked))["fingerprint"]);
}

TEST(DistributedServe, AnswersAreTheSingleProcessOnesAndSigtermStopsEveryRank) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny-gemma3", "q8_0", 6);
  // 2 slots for 4 requests, and a KV pool of 2 blocks of 16 positions (each answer needs 2):
  // requests wait, batch and preempt one another.
  const std::vector<std::string> args = {"-m", model,        "-t", "1",           "--ctx",
                                         "64", "--parallel", "2",  "--kv-tokens", "32"};
  std::vector<std::string> want;
  {
    tzero::test::ServeProcess one(args);
    ASSERT_TRUE(one.ok()) << one.stderr_text();
    want = answers(one);
  }
  tzero::test::ServeProcess ranks(args, 120, serve_wrapper(3));
  ASSERT_TRUE(ranks.ok()) << ranks.stderr_text();
  EXPECT_EQ(answers(ranks), want);
  // Micro-batches: the running sequences took turns, two passes out at once.
  EXPECT_EQ(metric(ranks, "tzero_pipeline_most_in_flight"), 2);
  EXPECT_GT(metric(ranks, "tzero_engine_preemptions_total"), 0);
  const pid_t r1 = rank_pid(ranks.pid(), 1), r2 = rank_pid(ranks.pid(), 2);
  ASSERT_GT(r1, 0);
  ASSERT_GT(r2, 0);
  const int code = ranks.stop(SIGTERM, 60);
  EXPECT_NE(code, -1) << "mpirun did not end after SIGTERM\n" << ranks.stderr_text();
  EXPECT_FALSE(alive(r1));
  EXPECT_FALSE(alive(r2));
}

// Proves: micro-batches of a recurrent model with its prefix cache give the single process's
// answers. A first request leaves snapshots of its state at its prompt's block boundaries;
// then five requests at once (three continue its prompt: they restore a snapshot, one saves
// new ones) split into groups whose passes are out on 2 and 4 ranks together (and 4 passes on
// 2 ranks), each pass's
// restores and saves running on every rank in launch order. f32: a one-ulp change on a rank
// moves the digests. Then a client drops its stream: its cancel, likely while its pass is out,
// leaves the other answer and the KV pool as they should be.
TEST(DistributedServe, MicroBatchesOfARecurrentModelWithItsPrefixCacheAreTheSingleProcessOnes) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny-qwen35", "f32", 4);
  const std::vector<std::string> args = {
      "-m", model,          "-t", "1", "--ctx", "128", "--parallel", "4", "--batch-tokens",
      "8",  "--block-size", "8"};
  const std::string stem = "Once upon a time there was a little dog who saw";
  const std::vector<std::string> rest = {stem + " a cat", stem + " the sea and",
                                         stem + " 1 2 3 4 5 6 7 8 9 10 11 12", "She said", "1 2 3"};
  auto serve = [&](const tzero::test::ServeProcess& srv) {
    std::vector<std::string> out = {answer(srv, stem)};
    for (const std::string& a : answers(srv, rest)) out.push_back(a);
    return out;
  };
  std::vector<std::string> want;
  double cached = 0;
  {
    tzero::test::ServeProcess one(args);
    ASSERT_TRUE(one.ok()) << one.stderr_text();
    want = serve(one);
    cached = metric(one, "tzero_engine_cached_tokens_total");
  }
  EXPECT_GE(cached, 8 * 3) << "the prompts did not share a cached prefix";
  // np 2 and 4 (one pass in flight per rank), and np 2 with --micro-batches 4 (more passes in
  // flight than ranks: each rank queues them).
  for (const int np : {2, 4, -2}) {
    std::vector<std::string> a = args;
    if (np < 0) a.insert(a.end(), {"--micro-batches", "4"});
    tzero::test::ServeProcess ranks(a, 120, serve_wrapper(std::abs(np)));
    ASSERT_TRUE(ranks.ok()) << ranks.stderr_text();
    EXPECT_EQ(serve(ranks), want) << "-np " << np;
    EXPECT_GE(metric(ranks, "tzero_pipeline_most_in_flight"), np < 0 ? 3 : 2) << "-np " << np;
    EXPECT_EQ(metric(ranks, "tzero_engine_cached_tokens_total"), cached) << "-np " << np;
    if (np != 2) continue;
    // A client that drops its stream while its sequence's pass is likely out (two sequences
    // take turns, each in flight most of the time): its cancel waits for the pass to land; the
    // other request's answer is unchanged and every KV block comes back.
    auto other = std::async(std::launch::async, [&] { return answer(ranks, rest[0]); });
    const std::string dropped = tzero::test::stream_and_drop(
        ranks.port(),
        {{"prompt", "Keep talking"}, {"max_tokens", 100}, {"ignore_eos", true}, {"stream", true}},
        200);
    EXPECT_GE(dropped.size(), 200u);
    EXPECT_EQ(other.get(), want[1]);
    for (int i = 0; i < 200 && metric(ranks, "tzero_engine_requests_cancelled_total") < 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(metric(ranks, "tzero_engine_requests_cancelled_total"), 1);
    EXPECT_EQ(metric(ranks, "tzero_kv_blocks_used"), 0);
  }
}

// Also with expert parallelism: rank 2 of 3, holding half the experts, hangs; rank 0's layers
// wait for its answers, which do not come within the deadline.
TEST(DistributedFaults, AHungRankGets503AndEndsTheJobWithinTheDeadline) {
  TZ_REQUIRE_MPI();
  for (const bool experts : {false, true}) {
    SCOPED_TRACE(experts ? "a rank holding experts" : "a pipeline rank");
    const std::string model =
        experts ? deep_model("tiny-qwen3moe", "q8_0", 4) : deep_model("tiny", "q8_0", 4);
    std::vector<std::string> args = {"-m", model, "-t", "1", "--ctx", "64", "--rank-timeout", "3"};
    if (experts) args.insert(args.end(), {"--expert-parallel", "--pipeline-split", "layers"});
    tzero::test::ServeProcess srv(args, 120, serve_wrapper(experts ? 3 : 2));
    ASSERT_TRUE(srv.ok()) << srv.stderr_text();
    auto c = srv.client(60);
    int status = 0;
    complete(*c, "Once upon a time", &status);
    ASSERT_EQ(status, 200);
    const pid_t r1 = rank_pid(srv.pid(), experts ? 2 : 1);
    ASSERT_GT(r1, 0);
    ASSERT_EQ(kill(r1, SIGSTOP), 0);
    const auto t0 = std::chrono::steady_clock::now();
    const json j = complete(*c, "The little dog saw", &status);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(status, 503) << j.dump();
    EXPECT_LT(waited, 30.0);
    // The server stops by itself, non-zero, naming the deadline; the job ends (MPI_Abort).
    const auto t1 = std::chrono::steady_clock::now();
    int code = -1;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() < 60 &&
           alive(srv.pid()))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(alive(srv.pid())) << "the job did not end after the deadline";
    code = srv.stop(SIGKILL, 10);
    EXPECT_NE(code, 0);
    EXPECT_NE(
        srv.stderr_text().find(experts ? "waiting for rank 2's experts" : "--rank-timeout 3 s"),
        std::string::npos)
        << srv.stderr_text();
    kill(r1, SIGKILL);
  }
}

TEST(DistributedFaults, AKilledRankEndsTheJob) {
  TZ_REQUIRE_MPI();
  const std::string model = deep_model("tiny", "q8_0", 4);
  tzero::test::ServeProcess srv({"-m", model, "-t", "1", "--ctx", "64"}, 120, serve_wrapper(3));
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  const pid_t r2 = rank_pid(srv.pid(), 2);
  ASSERT_GT(r2, 0);
  ASSERT_EQ(kill(r2, SIGKILL), 0);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 60 &&
         alive(srv.pid()))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(srv.pid())) << "the job went on without rank 2";
  EXPECT_NE(srv.stop(SIGKILL, 10), 0);
  EXPECT_NE(srv.stderr_text().find("rank 2"), std::string::npos) << srv.stderr_text();
}

TEST(DistributedUsage, AnotherFileAtTheSamePathOnAnotherRankIsNamed) {
  TZ_REQUIRE_MPI();
  // Rank 1 runs in another directory (mpirun --wdir), so the relative path names another file
  // there, as on another host: the same header with one byte of a layer changed, then another
  // model altogether. Neither runs; both are named.
  const std::string model = deep_model("tiny", "q8_0", 4);
  const std::string a = tzero::test::scratch_dir() + "/host-a",
                    b = tzero::test::scratch_dir() + "/host-b";
  mkdir(a.c_str(), 0755);
  mkdir(b.c_str(), 0755);
  const std::string bytes = tzero::test::read_file(model);
  tzero::test::write_file(a + "/m.gguf", bytes);
  std::string changed = bytes;
  {
    const tzero::GgufFile f(model);
    const tzero::GgufTensorInfo* t = f.find_tensor("blk.3.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    changed[f.data_offset() + t->offset + 7] ^= 0x10;
  }
  tzero::test::write_file(b + "/m.gguf", changed);
  auto run_split = [&](const std::string& flag = "--pipeline-split=bytes") {
    std::vector<std::string> argv = {"/usr/bin/timeout", "-k", "5", "120"};
    for (const std::string& w : mpirun_words(1)) argv.push_back(w);
    argv.insert(argv.end(), {"--wdir", a,    mpi_binary(), "run", "-m",         "m.gguf", "-p",
                             "hi",     "-n", "2",          "-t",  "1",          flag,     ":",
                             "-np",    "1",  "--wdir",     b,     mpi_binary(), "run"});
    return run_command(argv);
  };
  CliResult r = run_split();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rank 1 ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("m.gguf there has other weights in layers 2-3 than rank 0's"),
            std::string::npos)
      << r.err;
  tzero::test::write_file(b + "/m.gguf", tzero::test::read_file(deep_model("tiny", "q4_k", 4)));
  r = run_split();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("m.gguf here is not rank 0's file"), std::string::npos) << r.err;
  // The same file on both: it runs.
  tzero::test::write_file(b + "/m.gguf", bytes);
  r = run_split();
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // With expert parallelism rank 1 computes its experts of every layer: one byte of expert 0 in
  // layer 0 (rank 0's layer) changed on its side is named; without it, rank 1 never reads it.
  const std::string moe = deep_model("tiny-qwen3moe", "q8_0", 2);
  const std::string moe_bytes = tzero::test::read_file(moe);
  tzero::test::write_file(a + "/m.gguf", moe_bytes);
  changed = moe_bytes;
  {
    const tzero::GgufFile f(moe);
    const tzero::GgufTensorInfo* t = f.find_tensor("blk.0.ffn_up_exps.weight");
    ASSERT_NE(t, nullptr);
    changed[f.data_offset() + t->offset + 7] ^= 0x10;
  }
  tzero::test::write_file(b + "/m.gguf", changed);
  r = run_split();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_split("--expert-parallel");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("m.gguf there has other weights in layers 1-1 or experts 0-15"),
            std::string::npos)
      << r.err;
}
