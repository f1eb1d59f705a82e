#include "support/test_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

extern char** environ;

namespace tzero::test {

std::string shared_data(const std::string& relative) {
  const std::string p = std::string(TZ_SHARED_DATA) + "/" + relative;
  return std::filesystem::exists(p) ? p : "";
}

std::string scratch_dir() {
  static std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tzero-test-XXXXXX").string();
    char* d = mkdtemp(tmpl.data());
    if (!d) std::abort();
    static std::string keep = d;
    std::atexit([] { std::filesystem::remove_all(keep); });
    return keep;
  }();
  return dir;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::vector<std::string> tzero_command() {
  std::vector<std::string> words;
#ifdef TZ_TEST_EMULATOR
  std::istringstream emulator(TZ_TEST_EMULATOR);  // space-separated (tests/CMakeLists.txt)
  for (std::string w; emulator >> w;) words.push_back(w);
#endif
  words.push_back(TZ_BINARY);
  return words;
}

CliResult run_tzero(const std::vector<std::string>& args, const std::string& stdin_text) {
  std::vector<std::string> argv = tzero_command();
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, stdin_text);
}

CliResult run_command(const std::vector<std::string>& argv_s, const std::string& stdin_text) {
  static int counter = 0;
  const std::string base =
      scratch_dir() + "/cli." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
  write_file(in_path, stdin_text);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> words = argv_s;
  std::vector<char*> argv;
  for (auto& a : words) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  CliResult r;
  const auto t0 = std::chrono::steady_clock::now();
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    struct rusage ru {};
    // wait4: this child's own peak memory (RUSAGE_CHILDREN would be the largest child ever).
    if (wait4(pid, &status, 0, &ru) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      r.peak_rss_kb = ru.ru_maxrss;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  posix_spawn_file_actions_destroy(&fa);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

std::string generated_model(const std::string& preset, const std::string& dtype, uint64_t seed,
                            int layers) {
  static std::mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = preset + "-" + dtype + "-" + std::to_string(seed) +
                          (layers > 0 ? "-" + std::to_string(layers) + "l" : "");
  auto it = made.find(key);
  if (it != made.end()) return it->second;
  const std::string path = scratch_dir() + "/" + key + ".gguf";
  std::vector<std::string> args = {"gen-model", "--preset",           preset, "--dtype", dtype,
                                   "--seed",    std::to_string(seed), "-o",   path};
  if (layers > 0) args.insert(args.end(), {"--layers", std::to_string(layers)});
  CliResult r = run_tzero(args);
  if (r.exit_code != 0) ADD_FAILURE() << "gen-model failed: " << r.err;
  made[key] = path;
  return path;
}

}  // namespace tzero::test
