// The command line's usage errors and conveniences, through the real binary: one line
// "tzero: error: <the real problem>" and exit 2 for every mistake (an unknown option wins over
// a missing --model), llama.cpp's spellings (src/cli/llama_flags.cpp), gen-model's default
// name, no rate where nothing was measured, -f - for standard input, --gaps in text mode and
// TZERO_PARSE_ONLY.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "backend/backend.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

const char* kCommands[] = {"run",      "tokenize", "info",   "convert", "gen-model",
                           "bench",    "diff",     "demo",   "audit",   "fingerprint",
                           "check-op", "chat",     "serve",  "probe",   "device",
                           "embed",    "lock",     "verify", "pull"};

// Exactly the one line `message` on stderr, nothing on stdout, exit 2.
void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  SCOPED_TRACE("tzero" + cmd);
  const CliResult r = run_tzero(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tzero: error: " + message + "\n");
  EXPECT_EQ(r.out, "");
}

// Runs with TZERO_PARSE_ONLY=1 in the environment: exit 0 right after a successful parse.
CliResult parse_only(const std::vector<std::string>& args) {
  setenv("TZERO_PARSE_ONLY", "1", 1);
  CliResult r = run_tzero(args);
  unsetenv("TZERO_PARSE_ONLY");
  return r;
}

json run_json(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("--json");
  const CliResult r = run_tzero(a, stdin_text);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

// Runs tzero in `dir` (gen-model writes its default name into the current directory).
CliResult run_in(const std::string& dir, const std::vector<std::string>& args) {
  const auto here = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  CliResult r = run_tzero(args);
  std::filesystem::current_path(here);
  return r;
}

}  // namespace

TEST(CliUsage, UnknownOptionWinsOverMissingModel) {
  // CLI11 alone said "--model is required": the real problem is --bogus.
  expect_usage_error({"run", "--bogus"},
                     "run: unknown option --bogus (tzero run --help lists the options)");
  expect_usage_error({"run", "--bogus", "-m", "x.gguf"},
                     "run: unknown option --bogus (tzero run --help lists the options)");
  // Also ahead of a bad value given before it.
  expect_usage_error({"run", "-t", "0", "--bogus"},
                     "run: unknown option --bogus (tzero run --help lists the options)");
}

TEST(CliUsage, UnknownOptionCloseToARealOneIsSuggested) {
  expect_usage_error({"run", "-m", "x.gguf", "--gpu-layer", "3"},
                     "run: unknown option --gpu-layer; did you mean --gpu-layers?");
  expect_usage_error({"serve", "-m", "x.gguf", "--prot", "8080"},
                     "serve: unknown option --prot; did you mean --port?");
  // A llama.cpp spelling's near miss points at the tzero option.
  expect_usage_error({"run", "-m", "x.gguf", "--n-gpu-layer", "3"},
                     "run: unknown option --n-gpu-layer; did you mean --gpu-layers?");
}

TEST(CliUsage, EveryCommandReportsAnUnknownOptionOnOneLine) {
  for (const char* cmd : kCommands)
    expect_usage_error({cmd, "--definitely-not-a-flag"},
                       std::string(cmd) + ": unknown option --definitely-not-a-flag (tzero " + cmd +
                           " --help lists the options)");
}

TEST(CliUsage, UnknownCommandIsNamed) {
  std::string all;
  for (const char* cmd : kCommands) all += std::string(all.empty() ? "" : ", ") + cmd;
  expect_usage_error({"foo"}, "unknown command 'foo' (commands: " + all + ")");
  expect_usage_error({"rn", "-m", "x.gguf"}, "unknown command 'rn'; did you mean run?");
  expect_usage_error({"servr"}, "unknown command 'servr'; did you mean serve?");
  expect_usage_error({"help"}, "unknown command 'help': tzero --help lists the commands");
  expect_usage_error({}, "give a command: " + all + " (tzero COMMAND --help says more)");
  expect_usage_error({"--bogus"},
                     "unknown option --bogus (options follow a command: tzero COMMAND --bogus ...; "
                     "tzero --help lists the commands)");
  // llama-cli's habit: options with no command.
  expect_usage_error({"-m", "x.gguf", "-p", "hi"},
                     "unknown option -m (options follow a command: tzero run -m ...; tzero --help "
                     "lists the commands)");
  // After "--" an argument is still the command's.
  expect_usage_error({"run", "-m", "x.gguf", "--", "foo"},
                     "run: unexpected argument 'foo' (tzero run --help)");
  expect_usage_error({"demo"}, "demo: give a subcommand: axpy");
}

TEST(CliUsage, BadValuesSayWhatIsWrong) {
  expect_usage_error({"run", "-m", "x.gguf", "-t", "abc"},
                     "run: --threads: 'abc' is not a number from 1 to 1024");
  expect_usage_error({"run", "-m", "x.gguf", "-t", "0"},
                     "run: --threads: '0' is not in the range 1 to 1024");
  expect_usage_error({"run", "-m", "x.gguf", "--mode", "sloppy"},
                     "run: --mode: 'sloppy' is not one of deterministic, fast, portable");
  expect_usage_error({"run", "-m", "x.gguf", "--top-p", "2"}, "run: --top-p: '2' is not in (0, 1]");
  expect_usage_error({"gen-model", "--preset", "tiny", "--seed", "-1"},
                     "gen-model: --seed: '-1' is not a number from 0 to 2^64-1");
  expect_usage_error({"run", "-m", "x.gguf", "--temp", "hot"},
                     "run: --temp: 'hot' is not a number from 0 to 100");
  expect_usage_error({"run", "-m", "x.gguf", "--seed", "abc"},
                     "run: --seed: 'abc' is not an integer");
  expect_usage_error({"probe", "--base-url", "u", "--model", "m", "--runs", "x"},
                     "probe: --runs: 'x' is not a number from 1 to 1000");
}

TEST(CliUsage, MissingRequiredValueOrArgument) {
  expect_usage_error({"run", "-p", "hi"}, "run: -m/--model is required");
  expect_usage_error({"run", "-m"}, "run: --model needs a value");
  expect_usage_error({"lock", "-o", "x.lock"}, "lock: the PROMPTS argument is required");
  expect_usage_error({"run", "-m", "x.gguf", "-p", "a", "--messages", "m.json"},
                     "run: give --prompt or --messages, not both");
}

TEST(CliUsage, ExtraArgumentIsNamed) {
  expect_usage_error({"run", "-m", "x.gguf", "hello"},
                     "run: unexpected argument 'hello' (tzero run --help)");
  expect_usage_error({"diff", "a.trace", "b.trace", "c.trace"},
                     "diff: unexpected argument 'c.trace' (tzero diff --help)");
}

TEST(CliUsage, ParseOnlyStopsAfterTheParse) {
  // No model is opened: exit 0, nothing printed.
  CliResult r = parse_only({"run", "-m", "/nonexistent.gguf", "-p", "hi", "-n", "4"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out + r.err, "");
  r = parse_only({"run", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "tzero: error: run: unknown option --bogus (tzero run --help lists the options)\n");
}

TEST(LlamaFlags, SameMeaningSpellingsAreAccepted) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  // -ngl 0 (nothing on a GPU), --ctx-size, --predict, -s: the run's own options.
  const json a = run_json({"-m", model, "-ngl", "0", "--ctx-size", "64", "--predict", "3", "-s",
                           "7", "--temp", "0.9", "-p", "the dog"});
  const json b = run_json({"-m", model, "--gpu-layers", "0", "-c", "64", "-n", "3", "--seed", "7",
                           "--temp", "0.9", "-p", "the dog"});
  EXPECT_EQ(a["n_ctx"], 64);
  EXPECT_EQ(a["tokens"].size(), 3u);
  EXPECT_EQ(a["logits_digest"], b["logits_digest"]);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  // --ctx-size is --ctx in serve and lock; -np is --parallel; -b is serve's --batch-tokens.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"serve", "-m", model, "--ctx-size", "128", "-np", "2"},
        {"serve", "-m", model, "--ctx-size=128", "-b", "64", "-a", "name", "--threads-http", "2"},
        {"embed", "-m", model, "-np", "2", "--ctx-size", "64", "-p", "x"},
        {"lock", "p.jsonl", "-o", "x.lock", "-m", model, "--ctx-size", "64"},
        {"chat", "-m", model, "-sys", "be brief", "--ctx-size", "64", "-v"}}) {
    const CliResult r = parse_only(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  }
  // bench's own -c (concurrency) and -r (repetitions) are not llama.cpp's.
  EXPECT_EQ(parse_only({"bench", "-m", model, "-c", "2", "-r", "1"}).exit_code, 0);
}

TEST(LlamaFlags, AFlagTzeroDoesNotNeedIsRefusedWithTheReason) {
  expect_usage_error({"run", "-m", "x.gguf", "-fa"},
                     "run: -fa: not needed: attention always runs tzero's one canonical kernel "
                     "(docs/DETERMINISM.md)");
  expect_usage_error({"serve", "-m", "x.gguf", "--flash-attn", "on"},
                     "serve: --flash-attn: not needed: attention always runs tzero's one canonical "
                     "kernel (docs/DETERMINISM.md)");
  expect_usage_error({"run", "-m", "x.gguf", "--mlock"},
                     "run: --mlock: not supported: tzero reads the model file into memory when it "
                     "fits in half the available memory and maps it otherwise (TZ_MMAP=1 maps "
                     "it; --no-mmap always reads)");
  expect_usage_error({"run", "-m", "x.gguf", "-cnv"},
                     "run: -cnv: tzero chat is the conversation (tzero run --messages FILE.json "
                     "answers one)");
  expect_usage_error({"run", "-m", "x.gguf", "-ub", "512"},
                     "run: -ub: tzero has no micro-batch: -b/--batch-size (tzero serve: "
                     "--batch-tokens) is the tokens of one forward pass, and the bits do not "
                     "depend on it");
  // Same meaning, but this command has no such option: the commands that have it are named.
  expect_usage_error({"audit", "-m", "x.gguf", "-ngl", "99"},
                     "audit: -ngl (llama.cpp's spelling of --gpu-layers) is not an option of "
                     "tzero audit (tzero run, tzero bench, tzero fingerprint, tzero chat, tzero "
                     "serve and tzero embed have it)");
  // audit has no --gpu-layers: even -ngl 0 is not dropped silently.
  expect_usage_error({"audit", "-m", "x.gguf", "-ngl", "0"},
                     "audit: -ngl (llama.cpp's spelling of --gpu-layers) is not an option of "
                     "tzero audit (tzero run, tzero bench, tzero fingerprint, tzero chat, tzero "
                     "serve and tzero embed have it)");
  expect_usage_error({"tokenize", "-m", "x.gguf", "--no-mmap"},
                     "tokenize: --no-mmap is not an option of tzero tokenize (tzero run, tzero "
                     "bench, tzero audit, tzero chat, tzero serve, tzero embed, tzero lock and "
                     "tzero verify have it)");
}

TEST(LlamaFlags, ValuesAreNotRewritten) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  // "-fa" and "-ngl" here are a prompt and a stop string, not flags.
  const json j = run_json({"-m", model, "-p", "-fa", "--stop", "-ngl", "-n", "2"});
  EXPECT_EQ(j["tokens"].size(), 2u);
  // -ngl 99 is --gpu-layers 99, every layer (as in llama.cpp), not "-n gl": without CUDA the
  // error is the missing GPU.
  const CliResult r = run_tzero({"run", "-m", model, "-ngl", "99", "--mode", "portable"});
  EXPECT_EQ(r.exit_code, 2);
  if (!tzero::cuda_built()) {
    EXPECT_EQ(r.err,
              "tzero: error: --gpu-layers: not built with CUDA: rebuild with -DTZERO_CUDA=ON "
              "(make cuda)\n");
  }
}

TEST(GenModelCli, WithoutOutputItNamesTheFileAndNeverWritesOverIt) {
  const std::string dir = tzero::test::scratch_dir() + "/gen-default";
  std::filesystem::create_directories(dir);
  CliResult r = run_in(dir, {"gen-model", "--preset", "tiny", "--dtype", "q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/tiny-q8_0.gguf"));
  EXPECT_EQ(r.err.rfind("wrote tiny-q8_0.gguf (tiny, q8_0, seed 1) in ", 0), 0u) << r.err;
  // The same file as with -o.
  EXPECT_EQ(tzero::test::read_file(dir + "/tiny-q8_0.gguf"),
            tzero::test::read_file(tzero::test::generated_model("tiny", "q8_0")));
  r = run_in(dir, {"gen-model", "--preset", "tiny", "--dtype", "q8_0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "tzero: error: tiny-q8_0.gguf exists: give --force to write over it, or another -o "
            "FILE\n");
  r = run_in(dir, {"gen-model", "--dtype", "f16", "--seed", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/tiny-f16-seed3.gguf"));
}

TEST(RunRates, NoRateWhereNothingWasMeasured) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  // -n 0 evaluates nothing: no "62500000.0 tokens/s".
  const CliResult r = run_tzero({"run", "-m", model, "-n", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("prompt: 1 tokens, n/a tokens/s | generation: 0 tokens, n/a tokens/s |"),
            std::string::npos)
      << r.err;
  const json j = run_json({"-m", model, "-n", "0"});
  EXPECT_TRUE(j["timings"]["prompt_tokens_per_s"].is_null()) << j["timings"];
  EXPECT_TRUE(j["timings"]["gen_tokens_per_s"].is_null()) << j["timings"];
  // A rate, where one is printed, is over at least a millisecond: never above tokens / 1 ms.
  const json k = run_json({"-m", model, "-n", "4", "-p", "the dog"});
  for (const char* key : {"prompt_tokens_per_s", "gen_tokens_per_s"}) {
    if (!k["timings"][key].is_null()) {
      EXPECT_LE(k["timings"][key].get<double>(), 4000.0) << key;
    }
  }
}

TEST(StdinFile, DashReadsStandardInput) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const json from_stdin = run_json({"-m", model, "-f", "-", "-n", "4"}, "the dog and the cat");
  const json from_flag = run_json({"-m", model, "-p", "the dog and the cat", "-n", "4"});
  EXPECT_EQ(from_stdin["prompt_tokens"], from_flag["prompt_tokens"]);
  EXPECT_EQ(from_stdin["logits_digest"], from_flag["logits_digest"]);
  const CliResult t = run_tzero({"tokenize", "-m", model, "-f", "-"}, "the dog");
  const CliResult p = run_tzero({"tokenize", "-m", model, "-p", "the dog"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, p.out);
  // tzero lock - reads the prompt set: the same results as from the file.
  const std::string dir = tzero::test::scratch_dir();
  const std::string set = R"({"id": "a", "prompt": "the dog", "max_tokens": 3, "temperature": 0})"
                          "\n";
  tzero::test::write_file(dir + "/set.jsonl", set);
  const CliResult ls = run_tzero({"lock", "-", "-o", dir + "/stdin.lock", "-m", model}, set);
  const CliResult lf =
      run_tzero({"lock", dir + "/set.jsonl", "-o", dir + "/file.lock", "-m", model});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  ASSERT_EQ(lf.exit_code, 0) << lf.err;
  const json a = json::parse(tzero::test::read_file(dir + "/stdin.lock"));
  const json b = json::parse(tzero::test::read_file(dir + "/file.lock"));
  EXPECT_EQ(a["prompt_set"], "-");
  ASSERT_EQ(a["requests"].size(), 1u);
  EXPECT_EQ(a["requests"][0]["result"], b["requests"][0]["result"]);
}

TEST(RunGaps, TextModePrintsTheGapsAndTheSmallest) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const CliResult r = run_tzero({"run", "-m", model, "-p", "the dog", "-n", "5", "--gaps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = run_json({"-m", model, "-p", "the dog", "-n", "5", "--gaps"});
  const std::vector<float> gaps = j["top2_gaps"].get<std::vector<float>>();
  ASSERT_EQ(gaps.size(), 5u);
  std::string want = "top-2 logit gaps:";
  size_t min_at = 0;
  char buf[32];
  for (size_t i = 0; i < gaps.size(); ++i) {
    std::snprintf(buf, sizeof buf, " %.4g", double(gaps[i]));
    want += buf;
    if (gaps[i] < gaps[min_at]) min_at = i;
  }
  std::snprintf(buf, sizeof buf, "%.4g", double(gaps[min_at]));
  want +=
      "\nsmallest gap: " + std::string(buf) + " at step " + std::to_string(min_at + 1) + " of 5\n";
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err << "\nwanted:\n" << want;
  // Without --gaps nothing of it.
  const CliResult plain = run_tzero({"run", "-m", model, "-p", "the dog", "-n", "5"});
  EXPECT_EQ(plain.err.find("logit gaps"), std::string::npos);
}

// Output files are never written over without --force (cli/output_files.h): each command
// refuses before doing any work and leaves the file as it was; --force writes over it.
TEST(OutputFiles, AreNeverWrittenOverWithoutForce) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string dir = tzero::test::scratch_dir() + "/kept";
  std::filesystem::create_directories(dir + "/report");
  const std::string kept = dir + "/kept.bin", prompts = dir + "/prompts.jsonl";
  tzero::test::write_file(kept, "keep me");
  tzero::test::write_file(dir + "/report/report.json", "keep me");
  tzero::test::write_file(prompts, R"({"prompt": "hi", "max_tokens": 2})"
                                   "\n");
  const std::string lock = dir + "/made.lock.json";
  ASSERT_EQ(run_tzero({"lock", prompts, "-m", model, "-o", lock}).exit_code, 0);
  struct Case {
    std::vector<std::string> args;
    std::string path, flag;
  };
  const Case cases[] = {
      {{"gen-model", "--preset", "tiny", "-o", kept}, kept, "-o FILE"},
      {{"convert", "--llama2c", "a.bin", "--tokenizer", "t.bin", "-o", kept}, kept, "-o FILE"},
      {{"lock", prompts, "-m", model, "-o", kept}, kept, "-o FILE"},
      {{"verify", lock, "--html", kept}, kept, "--html FILE"},
      {{"run", "-m", model, "-n", "2", "--trace", kept}, kept, "--trace FILE"},
      {{"run", "-m", model, "-n", "2", "--logits-out", kept}, kept, "--logits-out FILE"},
      {{"audit", "-m", model, "--report", dir + "/report"},
       dir + "/report/report.json",
       "--report DIR"},
      {{"probe", "--base-url", "http://127.0.0.1:1", "--model", "m", "--report", dir + "/report"},
       dir + "/report/report.json",
       "--report DIR"},
  };
  for (const Case& c : cases) {
    expect_usage_error(c.args,
                       c.path + " exists: give --force to write over it, or another " + c.flag);
    EXPECT_EQ(tzero::test::read_file(c.path), "keep me") << c.args[0];
  }
  CliResult r = run_tzero({"gen-model", "--preset", "tiny", "-o", kept, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(tzero::test::read_file(kept),
            tzero::test::read_file(tzero::test::generated_model("tiny", "f32")));
  r = run_tzero({"lock", prompts, "-m", model, "-o", lock, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// embed without an input, or with an empty one, says so instead of embedding nothing.
TEST(EmbedCli, RefusesToEmbedNothing) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  expect_usage_error({"embed", "-m", model},
                     "embed: give -p TEXT, or -f FILE (one text a line; -: standard input)");
  expect_usage_error({"embed", "-m", model, "-p", ""}, "embed: -p is empty: nothing to embed");
}

// Under mpirun with several ranks, a build without MPI refuses instead of running N independent
// copies of the model (docs/DISTRIBUTED.md); one rank is a plain run.
TEST(CliUsage, SeveralMpiRanksWithoutAnMpiBuildAreRefused) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  CliResult r = run_tzero({"run", "-m", model, "-n", "2"});
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "tzero: error: started as one of 3 MPI ranks (OMPI_COMM_WORLD_SIZE), but this build "
            "has no MPI: each rank would run the whole model alone. Build with MPI (make mpi: "
            "build-mpi/tzero, docs/DISTRIBUTED.md) or run tzero without mpirun\n");
  setenv("PMI_SIZE", "1", 1);
  r = run_tzero({"run", "-m", model, "-n", "2"});
  unsetenv("PMI_SIZE");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}
