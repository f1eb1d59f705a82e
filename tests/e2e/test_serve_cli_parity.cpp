// Any `tzero serve` answer can be reproduced with `tzero run` (docs/SERVER.md, "Reproducing an
// answer with tzero run"): the same sampling as flags, the same text and the same logits digest
// (the "tzero" field of each choice). Seeded sampling with every knob and a stop string, an
// unseeded request through the seed the server reports, and a greedy chat through --messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

std::string model() {
  return tzero::test::generated_model("tiny", "q8_0");
}

json run_json(std::vector<std::string> args) {
  args.insert(args.begin(), {"run", "-m", model()});
  args.push_back("--json");
  const auto r = tzero::test::run_tzero(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out, nullptr, false);
}

// A stop string that the text holds past its first third: two ASCII letters.
std::string stop_string_in(const std::string& t) {
  for (size_t i = t.size() / 3; i + 1 < t.size(); ++i)
    if (std::isalpha(static_cast<unsigned char>(t[i])) &&
        std::isalpha(static_cast<unsigned char>(t[i + 1])))
      return t.substr(i, 2);
  return "";
}

TEST(ServeCliParity, SampledCompletionEqualsRun) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  // Values at which every knob changes this answer (checked at the end).
  const json base = {{"prompt", "Once upon a time"},
                     {"max_tokens", 40},
                     {"temperature", 0.9},
                     {"seed", 1234},
                     {"top_k", 40},
                     {"top_p", 0.9},
                     {"min_p", 0.1},
                     {"repetition_penalty", 1.2},
                     {"repeat_last_n", 16},
                     {"presence_penalty", 0.3},
                     {"frequency_penalty", 0.5}};
  const std::vector<std::string> flags = {"-p",
                                          "Once upon a time",
                                          "-n",
                                          "40",
                                          "--temp",
                                          "0.9",
                                          "--seed",
                                          "1234",
                                          "--top-k",
                                          "40",
                                          "--top-p",
                                          "0.9",
                                          "--min-p",
                                          "0.1",
                                          "--repeat-penalty",
                                          "1.2",
                                          "--repeat-last-n",
                                          "16",
                                          "--presence-penalty",
                                          "0.3",
                                          "--frequency-penalty",
                                          "0.5"};
  int st = 0;
  const json whole = tzero::test::post_json(*c, "/v1/completions", base, &st);
  ASSERT_EQ(st, 200) << whole.dump();
  const std::string text = whole["choices"][0]["text"];
  const json& ext = whole["choices"][0]["tzero"];
  EXPECT_EQ(ext["seed"], 1234);
  EXPECT_EQ(ext["logits_digest"].get<std::string>().size(), 32u);
  const json rw = run_json(flags);
  EXPECT_EQ(rw["logits_digest"], ext["logits_digest"]);
  EXPECT_EQ(rw["text"], text);
  EXPECT_EQ(rw["stop_reason"], ext["stop_reason"]);

  // With a stop string from the text: the server stops there, and so does the command line.
  const std::string stop = stop_string_in(text);
  ASSERT_FALSE(stop.empty()) << text;
  json sb = base;
  sb["stop"] = stop;
  const json cut = tzero::test::post_json(*c, "/v1/completions", sb, &st);
  ASSERT_EQ(st, 200) << cut.dump();
  const json& cut_ext = cut["choices"][0]["tzero"];
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut_ext["stop_reason"], "stop_string");
  EXPECT_EQ(cut["choices"][0]["text"], text.substr(0, text.find(stop)));
  std::vector<std::string> stop_flags = flags;
  stop_flags.insert(stop_flags.end(), {"--stop", stop});
  const json rc = run_json(stop_flags);
  EXPECT_EQ(rc["logits_digest"], cut_ext["logits_digest"]);
  EXPECT_EQ(rc["text"], cut["choices"][0]["text"]);
  EXPECT_EQ(rc["stop_reason"], "stop_string");
  EXPECT_NE(rc["logits_digest"], rw["logits_digest"]);  // fewer rows

  // The stream's finish chunk carries the same "tzero" field; the content chunks carry the
  // ids of their tokens, which add up to the whole response's.
  const std::string sse = tzero::test::post_stream(*c, "/v1/completions", sb, &st);
  ASSERT_EQ(st, 200);
  json streamed_ext, streamed_ids = json::array();
  for (const std::string& d : tzero::test::sse_data(sse)) {
    if (d == "[DONE]") continue;
    const json j = json::parse(d);
    for (const json& ch : j["choices"]) {
      if (!ch.contains("tzero")) continue;
      for (const json& id : ch["tzero"]["tokens"]) streamed_ids.push_back(id);
      if (!ch["finish_reason"].is_null()) streamed_ext = ch["tzero"];
    }
  }
  ASSERT_TRUE(streamed_ext.is_object());
  streamed_ext["tokens"] = streamed_ids;
  EXPECT_EQ(streamed_ext, cut_ext);
  EXPECT_EQ(cut_ext["tokens"].size(), cut["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(tzero::test::gen_of_stream(sse).text, cut["choices"][0]["text"]);

  // Each knob at its off value gives another answer: every flag is really applied (and so the
  // equality above says each was applied alike).
  const std::vector<std::pair<std::string, std::string>> off = {{"--top-k", "0"},
                                                                {"--top-p", "1"},
                                                                {"--min-p", "0"},
                                                                {"--repeat-penalty", "1"},
                                                                {"--repeat-last-n", "64"},
                                                                {"--presence-penalty", "0"},
                                                                {"--frequency-penalty", "0"}};
  for (const auto& [flag, value] : off) {
    std::vector<std::string> f = flags;
    *(std::find(f.begin(), f.end(), flag) + 1) = value;
    EXPECT_NE(run_json(f)["logits_digest"], ext["logits_digest"]) << flag << " " << value;
  }
}

TEST(ServeCliParity, UnseededRequestReportsItsSeed) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json r = tzero::test::post_json(
      *c, "/v1/completions",
      {{"prompt", "The cat"}, {"max_tokens", 16}, {"temperature", 1.0}, {"n", 2}}, &st);
  ASSERT_EQ(st, 200) << r.dump();
  for (int i = 0; i < 2; ++i) {
    const json& ch = r["choices"][i];
    ASSERT_TRUE(ch["tzero"]["seed"].is_number_unsigned()) << ch.dump();
    const uint64_t seed = ch["tzero"]["seed"];
    EXPECT_LT(seed, uint64_t(1) << 53);  // exact as a JavaScript number
    const json rr =
        run_json({"-p", "The cat", "-n", "16", "--temp", "1.0", "--seed", std::to_string(seed)});
    EXPECT_EQ(rr["logits_digest"], ch["tzero"]["logits_digest"]) << "choice " << i;
    EXPECT_EQ(rr["text"], ch["text"]) << "choice " << i;
  }
  EXPECT_EQ(r["choices"][1]["tzero"]["seed"].get<uint64_t>(),
            r["choices"][0]["tzero"]["seed"].get<uint64_t>() + 1);
}

TEST(ServeCliParity, GreedyChatEqualsRunMessages) {
  auto srv = tzero::test::serve_tiny();  // --chat-template chatml
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "Tell me a story."}},
                                     {{"role", "assistant"}, {"content", "Once"}},
                                     {{"role", "user"}, {"content", "Go on."}}});
  const json body = {{"messages", messages}, {"max_tokens", 24}, {"temperature", 0}};
  int st = 0;
  const json r = tzero::test::post_json(*c, "/v1/chat/completions", body, &st);
  ASSERT_EQ(st, 200) << r.dump();
  const json& ch = r["choices"][0];

  // The request body itself is a --messages file (its other fields are not read).
  const std::string dir = tzero::test::scratch_dir();
  tzero::test::write_file(dir + "/body.json", body.dump());
  tzero::test::write_file(dir + "/messages.json", messages.dump());
  for (const char* file : {"/body.json", "/messages.json"}) {
    const json rr = run_json(
        {"--messages", dir + file, "--chat-template", "chatml", "-n", "24", "--temp", "0"});
    EXPECT_EQ(rr["logits_digest"], ch["tzero"]["logits_digest"]) << file;
    EXPECT_EQ(rr["text"], ch["message"]["content"]) << file;
    EXPECT_EQ(rr["prompt_tokens"].size(), r["usage"]["prompt_tokens"].get<size_t>()) << file;
    EXPECT_EQ(rr["stop_reason"], ch["tzero"]["stop_reason"]) << file;
  }
  // Another template renders another prompt: the template is really applied.
  const json other = run_json({"--messages", dir + "/messages.json", "--chat-template", "llama2",
                               "-n", "24", "--temp", "0"});
  EXPECT_NE(other["logits_digest"], ch["tzero"]["logits_digest"]);

  // Bad files are one-line errors.
  tzero::test::write_file(dir + "/bad.json", R"([{"role": "wizard", "content": "x"}])");
  const auto bad =
      tzero::test::run_tzero({"run", "-m", model(), "--messages", dir + "/bad.json", "-n", "2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("wizard"), std::string::npos) << bad.err;
  const auto both = tzero::test::run_tzero(
      {"run", "-m", model(), "--messages", dir + "/bad.json", "-p", "x", "-n", "2"});
  EXPECT_NE(both.exit_code, 0);
}

}  // namespace
