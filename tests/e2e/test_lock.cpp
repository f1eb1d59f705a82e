// tzero lock and tzero verify (docs/LOCK.md) on the real binary: a lock verified on the same
// machine is identical; a kernel variant changes nothing; fast mode and an f16 KV cache drift,
// and the report names the manifest entries that differ and the first (position, layer, op)
// that changed; a lock made against a real `tzero serve` verifies locally with the same logits
// digests; bad prompt sets and lock files are exit 2 naming file and line; an interrupted verify
// keeps its partial report.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "serve_test_util.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::generated_model;
using tzero::test::read_file;
using tzero::test::run_tzero;
using tzero::test::scratch_dir;
using tzero::test::write_file;

namespace {

const char* kPromptSet =
    R"({"id": "greedy", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}
{"id": "sampled", "prompt": "The little dog saw", "max_tokens": 10, "temperature": 0.8, "seed": 7, "top_k": 20, "top_p": 0.9}

{"id": "chat", "messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 8}
{"id": "stopped", "prompt": "1 2 3 4 5", "max_tokens": 16, "stop": ["e"], "temperature": 0.5}
)";

struct Fixture {
  std::string dir, model, prompts, lock;
};

// A lock of kPromptSet on the tiny model (made once).
const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.dir = scratch_dir();
    x.model = generated_model("tiny", "q8_0");
    x.prompts = x.dir + "/prompts.jsonl";
    x.lock = x.dir + "/lock.json";
    write_file(x.prompts, kPromptSet);
    const auto r = run_tzero(
        {"lock", x.prompts, "-o", x.lock, "-m", x.model, "-t", "2", "--chat-template", "chatml"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return x;
  }();
  return f;
}

json verify_json(const std::vector<std::string>& extra, int expect_exit) {
  std::vector<std::string> a = {"verify", fixture().lock, "--json", "-t", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  const auto r = run_tzero(a);
  EXPECT_EQ(r.exit_code, expect_exit) << r.err << r.out;
  return json::parse(r.out.empty() ? "{}" : r.out);
}

bool manifest_differs(const json& report, const std::string& key) {
  for (const auto& d : report["manifest_differs"])
    if (d["key"] == key) return true;
  return false;
}

}  // namespace

TEST(Lock, WritesAVersionedLockWithTokensDigestsManifestAndEnvironment) {
  const Fixture& f = fixture();
  const json lock = json::parse(read_file(f.lock));
  EXPECT_EQ(lock["tzero_lock"], 1);
  EXPECT_EQ(lock["source"]["kind"], "local");
  EXPECT_EQ(lock["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_EQ(lock["manifest"]["mode"], "deterministic");
  EXPECT_EQ(lock["manifest"]["kv_cache"], "f32");
  EXPECT_EQ(lock["manifest"]["model_xxh128"].get<std::string>().size(), 32u);
  EXPECT_FALSE(lock["environment"]["compiler"].get<std::string>().empty());
  EXPECT_FALSE(lock["environment"]["os"].get<std::string>().empty());
  EXPECT_FALSE(lock["environment"]["cpu"]["kernel_variant"].get<std::string>().empty());
  ASSERT_EQ(lock["requests"].size(), 4u);
  EXPECT_EQ(lock["requests"][2]["line"], 4);  // the blank line 3 is skipped
  EXPECT_EQ(lock["requests"][2]["endpoint"], "chat");
  EXPECT_EQ(lock["requests"][0]["request"]["seed"], 0);  // a missing seed is written as 0
  for (const auto& e : lock["requests"]) {
    EXPECT_EQ(e["result"]["logits_digest"].get<std::string>().size(), 32u) << e.dump();
    EXPECT_FALSE(e["result"]["tokens"].empty()) << e.dump();
    EXPECT_FALSE(e["result"]["stop_reason"].get<std::string>().empty());
  }
  // The locked greedy answer is `tzero run`'s, bit for bit.
  const auto run =
      run_tzero({"run", "-m", f.model, "-p", "Once upon a time", "-n", "12", "--json", "-t", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json rj = json::parse(run.out);
  EXPECT_EQ(lock["requests"][0]["result"]["logits_digest"], rj["logits_digest"]);
  EXPECT_EQ(lock["requests"][0]["result"]["text"], rj["text"]);
  EXPECT_EQ(lock["fingerprint"], rj["fingerprint"]);
}

TEST(Lock, VerifyOnTheSameMachineIsIdentical) {
  const json r = verify_json({}, 0);
  EXPECT_EQ(r["complete"], true);
  EXPECT_EQ(r["identical"], 4);
  EXPECT_EQ(r["drifted"], 0);
  EXPECT_TRUE(r["manifest_differs"].empty()) << r["manifest_differs"].dump();
  for (const auto& q : r["requests"]) {
    EXPECT_EQ(q["status"], "identical");
    EXPECT_EQ(q["compared"],
              json({"text", "finish_reason", "tokens", "logits_digest", "stop_reason"}));
  }
  // Plain text output and exit 0 too.
  const auto t = run_tzero({"verify", fixture().lock});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("4 of 4 verified: 4 identical, 0 drifted"), std::string::npos) << t.out;
  EXPECT_NE(t.err.find("[4/4]"), std::string::npos) << t.err;  // progress
}

// On a terminal the progress is one line rewritten in place, so each result shows once (it
// showed twice: a progress line and the report's line). Run under script(1) for a terminal;
// the screen is the output with each line's text after its last carriage return.
TEST(Lock, VerifyOnATerminalShowsEachResultOnce) {
  if (access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "script(1) absent (bsdutils)";
  std::string cmd;
  for (const std::string& w : tzero::test::tzero_command()) cmd += "'" + w + "' ";
  cmd += "verify '" + fixture().lock + "' -t 2";
  const auto r = tzero::test::run_command({"/usr/bin/script", "-qec", cmd, "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string screen;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // the terminal's CR LF
    line = line.substr(line.rfind('\r') == std::string::npos ? 0 : line.rfind('\r') + 1);
    if (line.rfind("\033[K", 0) == 0) line = line.substr(3);
    if (!line.empty()) screen += line + "\n";
  }
  for (const char* id : {"greedy", "sampled", "chat", "stopped"}) {
    size_t n = 0;
    for (size_t at = screen.find(id); at != std::string::npos; at = screen.find(id, at + 1)) ++n;
    EXPECT_EQ(n, 1u) << id << " in:\n" << screen;
  }
  EXPECT_NE(screen.find("4 of 4 verified: 4 identical, 0 drifted"), std::string::npos) << screen;
}

TEST(Lock, ScalarKernelsGiveTheSameBits) {
  const json r = verify_json({"--kernels", "scalar"}, 0);
  EXPECT_EQ(r["identical"], 4);
  EXPECT_EQ(r["now_source"]["kernels"], "scalar");
  // The kernel variant is recorded, not hashed: shown as a difference unless auto is scalar.
  const json lock = json::parse(read_file(fixture().lock));
  if (lock["environment"]["cpu"]["kernel_variant"] != "scalar") {
    EXPECT_TRUE(manifest_differs(r, "not_hashed_proven_invariant.kernel_set")) << r.dump();
  }
}

TEST(Lock, FastModeDriftsAndTheTraceNamesTheFirstOp) {
  const json r = verify_json({"--mode", "fast", "--explain", "4"}, 1);
  EXPECT_TRUE(manifest_differs(r, "mode")) << r["manifest_differs"].dump();
  EXPECT_GT(r["drifted"].get<int>(), 0);
  bool named = false;
  for (const auto& q : r["requests"])
    if (q["status"] == "drifted") {
      EXPECT_NE(std::find(q["differs"].begin(), q["differs"].end(), "logits_digest"),
                q["differs"].end());
      ASSERT_TRUE(q.contains("first_change")) << q.dump();
      if (q["first_change"]["found"] == true) {
        named = true;
        EXPECT_FALSE(q["first_change"]["op"].get<std::string>().empty());
      }
    }
  EXPECT_TRUE(named) << r.dump(1);
}

TEST(Lock, F16KvCacheDriftsAndTheTraceNamesTheFirstOp) {
  const json r = verify_json({"--kv-type", "f16", "--explain", "4"}, 1);
  ASSERT_TRUE(manifest_differs(r, "kv_cache")) << r["manifest_differs"].dump();
  for (const auto& d : r["manifest_differs"])
    if (d["key"] == "kv_cache") {
      EXPECT_EQ(d["lock"], "f32");
      EXPECT_EQ(d["now"], "f16");
    }
  const json& q = r["requests"][0];  // greedy, 12 tokens: attention reads the f16 keys
  ASSERT_EQ(q["status"], "drifted") << q.dump();
  ASSERT_EQ(q["first_change"]["found"], true) << q.dump();
  // The prompt's first position attends only to itself, written and read back in f16: the first
  // op that changed is inside layer 0.
  EXPECT_EQ(q["first_change"]["layer"], 0) << q.dump();
  EXPECT_FALSE(q["first_change"]["op"].get<std::string>().empty());
  // --explain 0: the drift without the traced reruns.
  const json n = verify_json({"--kv-type", "f16", "--explain", "0"}, 1);
  EXPECT_FALSE(n["requests"][0].contains("first_change"));
}

TEST(Lock, HtmlReportListsEveryRequest) {
  const std::string html = fixture().dir + "/report.html";
  const auto r = run_tzero({"verify", fixture().lock, "--mode", "fast", "--html", html});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string h = read_file(html);
  EXPECT_NE(h.find("<h1>tzero verify"), std::string::npos);
  for (const char* id : {"greedy", "sampled", "chat", "stopped"})
    EXPECT_NE(h.find(id), std::string::npos) << id;
  EXPECT_NE(h.find("drifted"), std::string::npos);
  EXPECT_NE(h.find("mode"), std::string::npos);
}

TEST(Lock, ServerLockVerifiesLocallyWithTheSameDigests) {
  const Fixture& f = fixture();
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(srv->port());
  const std::string lock = f.dir + "/server_lock.json";
  const auto l = run_tzero({"lock", f.prompts, "-o", lock, "--base-url", url});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const json lj = json::parse(read_file(lock));
  EXPECT_EQ(lj["source"]["kind"], "server");
  const json local = json::parse(read_file(f.lock));
  ASSERT_EQ(lj["requests"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {  // the server's digests are the local engine's
    EXPECT_EQ(lj["requests"][i]["result"]["logits_digest"],
              local["requests"][i]["result"]["logits_digest"]);
    EXPECT_EQ(lj["requests"][i]["result"]["text"], local["requests"][i]["result"]["text"]);
  }
  // Verified locally: identical, digests compared.
  const auto v =
      run_tzero({"verify", lock, "-m", f.model, "--chat-template", "chatml", "-t", "2", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err << v.out;
  const json vj = json::parse(v.out);
  EXPECT_EQ(vj["identical"], 4);
  for (const auto& q : vj["requests"])
    EXPECT_NE(std::find(q["compared"].begin(), q["compared"].end(), "logits_digest"),
              q["compared"].end());
  // And the local lock verified against the server.
  const auto s = run_tzero({"verify", f.lock, "--base-url", url, "--json"});
  EXPECT_EQ(s.exit_code, 0) << s.err << s.out;

  // The server dies: the verify says so, exit 2, and its report is still written.
  ASSERT_EQ(srv->stop(SIGTERM), 0);
  const std::string html = f.dir + "/dead.html";
  const auto d =
      run_tzero({"verify", lock, "--base-url", url, "--json", "--html", html, "--timeout", "5"});
  EXPECT_EQ(d.exit_code, 2) << d.err;
  const json dj = json::parse(d.out);
  EXPECT_EQ(dj["complete"], false);
  EXPECT_NE(dj["interrupted"].get<std::string>().find("cannot reach"), std::string::npos)
      << dj.dump();
  EXPECT_NE(read_file(html).find("Incomplete"), std::string::npos);
}

TEST(Lock, InterruptedVerifyKeepsItsPartialReport) {
  const std::string html = fixture().dir + "/partial.html";
  const auto r = run_tzero(
      {"verify", fixture().lock, "--json", "--html", html, "--interrupt-after", "2", "-t", "1"});
  EXPECT_EQ(r.exit_code, 130) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["verified"], 2);
  EXPECT_EQ(j["identical"], 2);
  EXPECT_EQ(j["interrupted"], "interrupted (SIGINT)");
  int identical = 0, not_verified = 0;
  for (const auto& q : j["requests"]) {
    identical += q["status"] == "identical";
    not_verified += q["status"] == "not_verified";
  }
  EXPECT_EQ(identical, 2);
  EXPECT_EQ(not_verified, 2);
  const std::string h = read_file(html);
  EXPECT_NE(h.find("Incomplete"), std::string::npos);
  EXPECT_NE(h.find("not verified"), std::string::npos);
  EXPECT_NE(h.find("2 of 4 requests verified"), std::string::npos);
}

TEST(Lock, BadPromptSetLinesAreExit2NamingFileAndLine) {
  const std::string dir = scratch_dir();
  const std::string model = generated_model("tiny", "q8_0");
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \n", ":2: not valid JSON"},
      {"{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"colour\": 1}\n", ":3: "},
      {"{\"prompt\": \"a\", \"max_tokens\": \"ten\"}\n", ":1: max_tokens"},
      {"{\"prompt\": \"a\", \"temperature\": -1}\n", ":1: temperature"},
      {"[1, 2]\n", ":1: a request must be a JSON object"},
      {"{\"max_tokens\": 3}\n", ":1: no \"prompt\""},
      {"{\"prompt\": \"a\", \"n\": 2}\n", ":1: n:"},
      {"{\"id\": \"x\", \"prompt\": \"a\"}\n{\"id\": \"x\", \"prompt\": \"b\"}\n", ":2: id:"},
      {"{\"id\": 5, \"prompt\": \"a\"}\n", ":1: id:"},
      {"\n\n", ": no requests"},
  };
  int k = 0;
  for (const Case& c : cases) {
    const std::string p = dir + "/bad" + std::to_string(k++) + ".jsonl";
    write_file(p, c.text);
    const auto r = run_tzero({"lock", p, "-o", dir + "/out.json", "-m", model});
    EXPECT_EQ(r.exit_code, 2) << c.text << r.err;
    EXPECT_NE(r.err.find(p + c.expect), std::string::npos) << c.text << "\n" << r.err;
  }
  // The unknown field is named.
  const auto r = run_tzero({"lock", dir + "/bad1.jsonl", "-o", dir + "/out.json", "-m", model});
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
}

TEST(Lock, DamagedTruncatedAndFutureLockFilesAreExit2NamingFileAndLine) {
  const std::string dir = scratch_dir();
  const std::string text = read_file(fixture().lock);
  auto verify = [&](const std::string& name, const std::string& body) {
    const std::string p = dir + "/" + name;
    write_file(p, body);
    const auto r = run_tzero({"verify", p, "-t", "1"});
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    return std::make_pair(p, r.err);
  };
  {  // truncated half-way: the file's last line is named
    const std::string cut = text.substr(0, text.size() / 2);
    int lines = 1;
    for (char c : cut) lines += c == '\n';
    const auto [p, err] = verify("truncated.json", cut);
    EXPECT_NE(err.find(p + ":" + std::to_string(lines) + ": the lock file ends early"),
              std::string::npos)
        << err;
  }
  {  // a future version
    std::string future = text;
    future.replace(future.find("\"tzero_lock\": 1"), 15, "\"tzero_lock\": 2");
    const auto [p, err] = verify("future.json", future);
    EXPECT_NE(err.find(p + ":1: tzero_lock: version 2 is newer"), std::string::npos) << err;
  }
  {  // request 2's tokens damaged: its own line (the 9th: 7 header lines, then one a request)
    std::istringstream in(text);
    std::string out, line;
    int n = 0;
    while (std::getline(in, line)) {
      if (++n == 9) {
        const size_t at = line.find("\"tokens\":[");
        EXPECT_NE(at, std::string::npos) << line;
        line.replace(at, 10, "\"tokens\":[\"x\",");
      }
      out += line + "\n";
    }
    const auto [p, err] = verify("damaged.json", out);
    EXPECT_NE(err.find(p + ":9: requests[1].result.tokens: must be an array of token ids"),
              std::string::npos)
        << err;
  }
  {  // a request body the parser refuses, named by line
    std::string bad = text;
    const size_t at = bad.find("\"max_tokens\":12");
    ASSERT_NE(at, std::string::npos);
    bad.replace(at, 15, "\"max_tokens\":\"12\"");
    const auto [p, err] = verify("badreq.json", bad);
    EXPECT_NE(err.find(p + ":8: requests[0].request: max_tokens"), std::string::npos) << err;
  }
  {  // not a lock at all, and garbage bytes
    const auto [p, err] = verify("notlock.json", "{\"requests\": []}\n");
    EXPECT_NE(err.find(p + ":1: not a tzero lock file"), std::string::npos) << err;
    const auto [p2, err2] = verify("garbage.json", "{\"tzero_lock\": 1,\n\x01\x02garbage");
    EXPECT_NE(err2.find(p2 + ":2: the lock file is damaged"), std::string::npos) << err2;
  }
}
