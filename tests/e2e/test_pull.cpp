// tzero pull and -m ORG/REPO:QUANT (hub/hf_hub.h) against a loopback server that answers like
// the Hugging Face hub (resolve URLs with X-Repo-Commit, X-Linked-Etag and X-Linked-Size, a
// redirect to the file's store, HTTP Range, the model-info API, 401 for a gated repository):
// files land in the Hugging Face cache layout and are reused, a cut connection is resumed, a
// wrong hash is refused, HF_TOKEN and HF_HUB_OFFLINE are honoured. Nothing leaves the machine.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "hub/hf_hub.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::run_tzero;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// The stand-in hub. repo "acme/tiny-GGUF" holds two GGUF files (LFS: etag = sha256) and a
// README; "acme/gated" the same Q8_0 file behind a token.
class FakeHub {
 public:
  FakeHub() {
    add("tiny-Q8_0.gguf", tzero::test::read_file(tzero::test::generated_model("tiny", "q8_0")));
    add("tiny-Q4_K_M.gguf", tzero::test::read_file(tzero::test::generated_model("tiny", "q4_k")));
    svr_.set_keep_alive_max_count(1);
    // (httplib answers HEAD with the GET handler, without the body)
    svr_.Get(R"(/([^/]+/[^/]+)/resolve/main/(.+))",
             [this](const auto& req, auto& res) { resolve(req, res); });
    svr_.Get(R"(/cdn/([0-9a-f]+))",
             [this](const httplib::Request& req, httplib::Response& res) { serve_blob(req, res); });
    svr_.Get(R"(/api/models/([^/]+/[^/]+)/revision/main)", [this](const httplib::Request& req,
                                                                  httplib::Response& res) {
      if (req.matches[1] != "acme/tiny-GGUF") {
        res.status = 404;
        res.set_header("X-Error-Code", "RepoNotFound");
        return;
      }
      json sib = json::array({{{"rfilename", "README.md"}}});
      for (const auto& [name, f] : files_) sib.push_back({{"rfilename", name}});
      res.set_content(json{{"sha", kCommit}, {"siblings", sib}}.dump(), "application/json");
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    svr_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& sha(const std::string& name) { return files_.at(name).sha; }
  int blob_gets() const { return blob_gets_; }
  std::vector<std::string> ranges() {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_;
  }
  std::atomic<bool> cut_next{false};     // the next blob GET stops halfway
  std::atomic<bool> wrong_etag{false};   // resolve advertises another sha256
  std::atomic<bool> evil_commit{false};  // resolve names a commit that climbs out of the cache

 private:
  struct File {
    std::string bytes, sha;
  };
  void add(const std::string& name, std::string bytes) {
    const std::string tmp = tzero::test::scratch_dir() + "/hub-" + name;
    tzero::test::write_file(tmp, bytes);
    files_[name] = {std::move(bytes), tzero::hub::sha256_file(tmp)};
  }

  void resolve(const httplib::Request& req, httplib::Response& res) {
    const std::string repo = req.matches[1], name = req.matches[2];
    if (repo == "acme/gated" && req.get_header_value("Authorization") != "Bearer s3cret") {
      res.status = 401;
      res.set_header("X-Error-Code", "GatedRepo");
      return;
    }
    if ((repo != "acme/tiny-GGUF" && repo != "acme/gated") || !files_.count(name)) {
      res.status = 404;
      res.set_header("X-Error-Code", "EntryNotFound");
      return;
    }
    const File& f = files_.at(name);
    const std::string etag = wrong_etag ? std::string(64, 'a') : f.sha;
    res.status = 302;
    res.set_header("Location", url() + "/cdn/" + f.sha);
    res.set_header("X-Repo-Commit", evil_commit ? "../../../outside" : kCommit);
    res.set_header("ETag", "\"pointer-etag\"");
    res.set_header("X-Linked-Etag", "\"" + etag + "\"");
    res.set_header("X-Linked-Size", std::to_string(f.bytes.size()));
  }

  void serve_blob(const httplib::Request& req, httplib::Response& res) {
    ++blob_gets_;
    const File* f = nullptr;
    for (const auto& [name, file] : files_)
      if (file.sha == req.matches[1]) f = &file;
    if (!f) {
      res.status = 404;
      return;
    }
    if (req.has_header("Range")) {  // httplib serves the range of the content below itself
      std::lock_guard<std::mutex> lock(mu_);
      ranges_.push_back(req.get_header_value("Range"));
    }
    const bool cut = cut_next.exchange(false);
    const std::string* bytes = &f->bytes;
    res.set_content_provider(bytes->size(), "application/octet-stream",
                             [bytes, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                               const size_t half = bytes->size() / 2;
                               if (cut && offset >= half)
                                 return false;  // the connection drops mid-file
                               size_t n = std::min<size_t>(length, 65536);
                               if (cut) n = std::min(n, half - offset);
                               sink.write(bytes->data() + offset, n);
                               return true;
                             });
  }

  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
  std::map<std::string, File> files_;
  std::atomic<int> blob_gets_{0};
  std::mutex mu_;
  std::vector<std::string> ranges_;
};

// The hub's environment for the child processes.
struct HubEnv {
  explicit HubEnv(const FakeHub& hub) : cache(tzero::test::scratch_dir() + "/hf-cache") {
    fs::remove_all(cache);
    setenv("HF_ENDPOINT", hub.url().c_str(), 1);
    setenv("HF_HUB_CACHE", cache.c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    setenv("HF_HOME", (cache + "-home").c_str(), 1);  // no token file of the user's
  }
  ~HubEnv() {
    for (const char* v : {"HF_ENDPOINT", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE", "HF_HOME"})
      unsetenv(v);
  }
  std::string cache;
};

}  // namespace

TEST(Pull, PlacesTheFileInTheHubCacheLayoutAndReusesIt) {
  FakeHub hub;
  HubEnv env(hub);
  auto r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string repo = env.cache + "/models--acme--tiny-GGUF";
  const std::string snap = repo + "/snapshots/" + kCommit + "/tiny-Q8_0.gguf";
  EXPECT_EQ(r.out, snap + "\n");
  ASSERT_TRUE(fs::is_symlink(snap));
  EXPECT_EQ(fs::read_symlink(snap).string(), "../../blobs/" + hub.sha("tiny-Q8_0.gguf"));
  EXPECT_EQ(tzero::test::read_file(snap),
            tzero::test::read_file(tzero::test::generated_model("tiny", "q8_0")));
  EXPECT_EQ(tzero::test::read_file(repo + "/refs/main"), kCommit);
  EXPECT_EQ(hub.blob_gets(), 1);
  // Again: the blob is in the cache, nothing is downloaded.
  r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, snap + "\n");
  EXPECT_EQ(hub.blob_gets(), 1);
  // Offline, the cache answers alone.
  setenv("HF_HUB_OFFLINE", "1", 1);
  r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, snap + "\n");
  r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q4_K_M.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("HF_HUB_OFFLINE is set, and the cache (" + env.cache + ") has no copy"),
            std::string::npos)
      << r.err;
}

// ORG/REPO:QUANT picks the GGUF file by quant, and -m takes it wherever a model path goes:
// the bits are those of the same file given by path.
TEST(Pull, QuantNamesAFileAndModelFlagsTakeIt) {
  FakeHub hub;
  HubEnv env(hub);
  auto r = run_tzero({"pull", "acme/tiny-GGUF:q4_k_m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("/tiny-Q4_K_M.gguf\n"), std::string::npos) << r.out;
  r = run_tzero({"pull", "acme/tiny-GGUF:Q5_K"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("acme/tiny-GGUF: no GGUF file for quant Q5_K (it has: tiny-Q4_K_M.gguf, "
                       "tiny-Q8_0.gguf)"),
            std::string::npos)
      << r.err;
  const auto by_ref =
      run_tzero({"run", "-m", "acme/tiny-GGUF:Q8_0", "-p", "hi", "-n", "6", "--json"});
  ASSERT_EQ(by_ref.exit_code, 0) << by_ref.err;
  const auto by_path = run_tzero(
      {"run", "-m", tzero::test::generated_model("tiny", "q8_0"), "-p", "hi", "-n", "6", "--json"});
  EXPECT_EQ(json::parse(by_ref.out)["logits_digest"], json::parse(by_path.out)["logits_digest"]);
  r = run_tzero({"pull", "acme/nothing-here:Q8_0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("acme/nothing-here: not found (RepoNotFound)"), std::string::npos) << r.err;
  r = run_tzero({"pull", "acme/tiny-GGUF", "missing.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("acme/tiny-GGUF/missing.gguf: not found (EntryNotFound)"), std::string::npos)
      << r.err;
}

// A connection cut mid-file is resumed with an HTTP Range; the result is the whole file.
TEST(Pull, ACutConnectionIsResumed) {
  FakeHub hub;
  HubEnv env(hub);
  hub.cut_next = true;
  const auto r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the connection was cut at"), std::string::npos) << r.err;
  ASSERT_EQ(hub.ranges().size(), 1u);
  const std::string whole = tzero::test::read_file(tzero::test::generated_model("tiny", "q8_0"));
  EXPECT_EQ(hub.ranges()[0], "bytes=" + std::to_string(whole.size() / 2) + "-");
  EXPECT_EQ(tzero::test::read_file(r.out.substr(0, r.out.size() - 1)), whole);
}

// A download whose sha256 is not the hub's is deleted and refused; nothing is left to use.
TEST(Pull, AWrongHashIsRefused) {
  FakeHub hub;
  HubEnv env(hub);
  hub.wrong_etag = true;
  const auto r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("acme/tiny-GGUF/tiny-Q8_0.gguf: the download's sha256 is " +
                       hub.sha("tiny-Q8_0.gguf") + ", the hub's " + std::string(64, 'a') +
                       ": the file is damaged and was deleted"),
            std::string::npos)
      << r.err;
  const std::string blobs = env.cache + "/models--acme--tiny-GGUF/blobs";
  for (const auto& e : fs::directory_iterator(blobs))  // only the download lock is left
    EXPECT_EQ(e.path().extension(), ".lock") << e.path();
}

// A gated repository: 401 without a token, the file with HF_TOKEN.
TEST(Pull, GatedRepositoriesNeedHfToken) {
  FakeHub hub;
  HubEnv env(hub);
  auto r = run_tzero({"pull", "acme/gated", "tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("acme/gated/tiny-Q8_0.gguf: access refused (HTTP 401): a gated or private "
                       "repository needs HF_TOKEN"),
            std::string::npos)
      << r.err;
  setenv("HF_TOKEN", "s3cret", 1);
  r = run_tzero({"pull", "acme/gated", "tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Names from the command line or the hub never leave the cache: a file or revision with "..",
// a commit header that climbs out, are refused before anything is written.
TEST(Pull, NamesThatLeaveTheCacheAreRefused) {
  FakeHub hub;
  HubEnv env(hub);
  auto r = run_tzero({"pull", "acme/tiny-GGUF", "../tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a file name in a repository"), std::string::npos) << r.err;
  r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf", "--revision", "../../x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a revision"), std::string::npos) << r.err;
  hub.evil_commit = true;
  r = run_tzero({"pull", "acme/tiny-GGUF", "tiny-Q8_0.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the hub did not say which commit and blob this is"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(env.cache + "/outside"));
  EXPECT_EQ(hub.blob_gets(), 0);
}
