// Speculative decoding (runtime/speculative.h): whatever drafts a request gets, its tokens, text,
// stop reason and logits digest are plain decoding's. Drafts that always agree (the target as
// its own draft), that agree in part (another quantization of the same weights; prompt lookup;
// a second trained model with the same vocabulary) and that rarely agree, at draft lengths 1 to
// 8, greedy and seeded, with stop strings, a full context and max tokens ending the request
// inside a verified pass. And what it refuses, with the reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/serve_process.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

json run_json(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  args.push_back("--json");
  const CliResult r = run_tzero(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

// The same request with and without speculation: the same tokens, text, stop and digest.
// Returns the speculative run's counts.
json expect_same_output(const std::vector<std::string>& request,
                        const std::vector<std::string>& speculation) {
  const json plain = run_json(request);
  std::vector<std::string> args = request;
  args.insert(args.end(), speculation.begin(), speculation.end());
  const json spec = run_json(args);
  std::string what;
  for (const std::string& a : args) what += a + " ";
  EXPECT_EQ(spec["tokens"], plain["tokens"]) << what;
  EXPECT_EQ(spec["text"], plain["text"]) << what;
  EXPECT_EQ(spec["stop_reason"], plain["stop_reason"]) << what;
  EXPECT_EQ(spec["logits_digest"], plain["logits_digest"]) << what;
  EXPECT_EQ(spec["fingerprint"], plain["fingerprint"]) << what;
  EXPECT_FALSE(plain.contains("speculative"));
  return spec.value("speculative", json::object());
}

const std::vector<std::vector<std::string>> kSampling = {
    {},                                                  // greedy
    {"--temp", "0.9", "--seed", "11", "--top-k", "40"},  // seeded
};

}  // namespace

// The target as its own draft: greedy drafts are the target's own choices, so every draft is
// accepted, and a pass of k + 1 rows gives k + 1 tokens; seeded, some are rejected. Either way
// the output is plain decoding's.
TEST(Speculative, TheTargetAsItsOwnDraftChangesNothing) {
  const std::string model = tzero::test::generated_model("tiny", "q4_k");
  for (const auto& sampling : kSampling)
    for (const char* k : {"1", "3", "8"}) {
      std::vector<std::string> request = {"-m", model, "-p",          "the cat sat on",
                                          "-n", "40",  "--ignore-eos"};
      request.insert(request.end(), sampling.begin(), sampling.end());
      const json c = expect_same_output(request, {"--draft-model", model, "--draft-max", k});
      EXPECT_GT(c["drafted"].get<int>(), 0);
      if (sampling.empty()) {
        EXPECT_EQ(c["accepted"], c["drafted"]) << "k " << k;
      }
      EXPECT_LE(c["accepted"].get<int>(), c["drafted"].get<int>());
    }
}

// Drafts that agree in part or rarely: another quantization of the same weights, prompt lookup,
// and a draft with other weights; on several architectures.
TEST(Speculative, DraftsThatDisagreeChangeNothing) {
  struct Case {
    const char *preset, *dtype, *draft_dtype;
  };
  for (const Case c :
       {Case{"tiny", "q4_k", "q8_0"}, Case{"tiny-qwen3", "q6_k", "f16"},
        Case{"tiny-qwen3moe", "q4_k", "q2_k"}, Case{"tiny-gemma3", "q4_0", "q5_k"}}) {
    const std::string model = tzero::test::generated_model(c.preset, c.dtype);
    const std::string draft = tzero::test::generated_model(c.preset, c.draft_dtype);
    const std::string other = tzero::test::generated_model(c.preset, c.dtype, 7);  // other weights
    for (const auto& sampling : kSampling) {
      std::vector<std::string> request = {
          "-m", model, "-p", "one two three one two three one", "-n", "32", "--ignore-eos"};
      request.insert(request.end(), sampling.begin(), sampling.end());
      for (const char* k : {"2", "5"}) {
        for (const json& counts :
             {expect_same_output(request, {"--draft-model", draft, "--draft-max", k}),
              expect_same_output(request, {"--draft-model", other, "--draft-max", k}),
              expect_same_output(request, {"--spec-type", "ngram-simple", "--draft-max", k})})
          EXPECT_GT(counts.value("drafted", 0), 0) << c.preset << " k " << k;
      }
    }
  }
}

// A draft of another architecture with the same vocabulary and other weights: it almost never
// agrees, and every pass then yields the one token plain decoding's pass would.
TEST(Speculative, ADraftThatNeverAgreesChangesNothing) {
  const std::string model = tzero::test::generated_model("tiny", "q4_k");
  const std::string draft = tzero::test::generated_model("tiny-qwen2", "q8_0");
  for (const auto& sampling : kSampling) {
    std::vector<std::string> request = {"-m", model, "-p", "x y z", "-n", "24", "--ignore-eos"};
    request.insert(request.end(), sampling.begin(), sampling.end());
    const json c = expect_same_output(request, {"--draft-model", draft, "--draft-max", "8"});
    EXPECT_GT(c["drafted"].get<int>(), 0);
    EXPECT_LT(c["accepted"].get<int>() * 4, c["drafted"].get<int>());
  }
}

// Requests that end inside a verified pass: a stop string, max tokens, a full context (-c), an
// EOS; and --draft-min, under which nothing is verified.
TEST(Speculative, RequestsEndingInsideAPassChangeNothing) {
  const std::string model = tzero::test::generated_model("tiny-qwen2", "q4_k");
  const std::vector<std::string> spec = {"--draft-model", model, "--draft-max", "6"};
  expect_same_output({"-m", model, "-p", "a b c", "-n", "13", "--ignore-eos"}, spec);
  expect_same_output({"-m", model, "-p", "a b c", "-n", "200", "-c", "37", "--ignore-eos"}, spec);
  const json plain = run_json({"-m", model, "-p", "a b c", "-n", "30", "--ignore-eos"});
  const std::string text = plain["text"];
  ASSERT_GE(text.size(), 12u);
  expect_same_output({"-m", model, "-p", "a b c", "-n", "30", "--stop", text.substr(8, 3)}, spec);
  expect_same_output({"-m", model, "-p", "a b c", "-n", "60"}, spec);  // EOS may end it
  const json c =
      expect_same_output({"-m", model, "-p", "a b c", "-n", "20", "--ignore-eos"},
                         {"--spec-type", "ngram-simple", "--draft-min", "50", "--draft-max", "60"});
  EXPECT_EQ(c["drafted"], 0);
  EXPECT_EQ(c["passes"], 19);  // one token a pass: plain decoding's passes
}

// A real target/draft pair: stories260K and a second model trained on TinyStories with the same
// 512-token vocabulary (../shared/data/PROVENANCE.md), both directions: they agree in part.
TEST(Speculative, ARealDraftModelAgreesInPartAndChangesNothing) {
  TZ_REQUIRE_SHARED(a_bin, "llama2c/stories260K.bin");
  TZ_REQUIRE_SHARED(b_bin, "llama2c/llama2xs_vocab512.bin");
  TZ_REQUIRE_SHARED(tok, "llama2c/tok512.bin");
  const std::string dir = tzero::test::scratch_dir();
  const std::string a = dir + "/stories260K.gguf", b = dir + "/llama2xs.gguf";
  for (const auto& [bin, out] : {std::pair{a_bin, a}, std::pair{b_bin, b}}) {
    const CliResult r = run_tzero({"convert", "--llama2c", bin, "--tokenizer", tok, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (const auto& [target, draft] : {std::pair{a, b}, std::pair{b, a}})
    for (const auto& sampling : kSampling) {
      std::vector<std::string> request = {"-m", target, "-p", "Once upon a time", "-n", "120"};
      request.insert(request.end(), sampling.begin(), sampling.end());
      const json c = expect_same_output(request, {"--draft-model", draft, "--draft-max", "4"});
      const int drafted = c["drafted"], accepted = c["accepted"];
      std::printf("[ note ] %s drafting for %s%s: %d of %d drafts accepted\n", draft.c_str(),
                  target.c_str(), sampling.empty() ? "" : " (seeded)", accepted, drafted);
      EXPECT_GT(accepted, 0);
      EXPECT_LT(accepted, drafted);
    }
}

// What cannot be drafted is refused with its reason, before any output.
TEST(Speculative, RefusesWhatItCannotDraftAndSaysWhy) {
  const std::string model = tzero::test::generated_model("tiny", "q4_k");
  auto refused = [](std::vector<std::string> args, const std::string& why) {
    args.insert(args.begin(), "run");
    const CliResult r = run_tzero(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  };
  refused({"-m", model, "-p", "a", "--draft-model",
           tzero::test::generated_model("tiny-eot", "q4_k")},  // token 260 is its EOT
          "the draft model's vocabulary is not the target's");
  refused({"-m", tzero::test::generated_model("tiny-qwen35", "q4_0"), "-p", "a", "--spec-type",
           "ngram-simple"},
          "recurrent layers");
  refused({"-m", model, "-p", "a", "--spec-type", "ngram-simple", "--trace", "/dev/null"},
          "not with speculative decoding");
  refused({"-m", model, "-p", "a", "--spec-type", "ngram-simple", "--draft-min", "9", "--draft-max",
           "4"},
          "--draft-min");
  refused({"-m", model, "-p", "a", "--draft-model", "/nonexistent.gguf"}, "--draft-model");
  refused({"-m", model, "-p", "a", "--spec-type", "draft"}, "needs --draft-model");
  refused({"-m", model, "-p", "a", "--draft-max", "4"},
          "--draft-max needs --draft-model FILE or --spec-type ngram-simple");
  refused({"-m", model, "-p", "a", "--draft", "4"}, "--draft-max needs");  // llama.cpp's name
  refused({"-m", model, "-p", "a", "--draft-model", model, "--draft-max", "0"},
          "--draft-max: between 1 and 256");
}

// tzero chat: a conversation of three turns (the cache keeps each turn's prefix, and the drafts
// rejected in one turn lie where the next turn's prompt is written) gives the same replies and
// the same digests with drafts.
TEST(Speculative, ChatRepliesAreTheSame) {
  const std::string model = tzero::test::generated_model("tiny", "q4_k");
  const std::string draft = tzero::test::generated_model("tiny", "q8_0");
  const std::string input = "hello there\nwhat next?\none two one two one\n";
  auto digests = [](const std::string& err) {
    std::vector<std::string> d;
    for (size_t p = err.find("\"logits_digest\":\""); p != std::string::npos;
         p = err.find("\"logits_digest\":\"", p + 1))
      d.push_back(err.substr(p + 17, 32));
    return d;
  };
  const std::vector<std::string> base = {"chat", "-m",           model,      "-n",
                                         "20",   "--ignore-eos", "--verbose"};
  const CliResult plain = run_tzero(base, input);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(digests(plain.err).size(), 3u) << plain.err;
  for (const std::vector<std::string>& spec :
       {std::vector<std::string>{"--draft-model", draft, "--draft-max", "3"},
        std::vector<std::string>{"--draft-model", model},
        std::vector<std::string>{"--spec-type", "ngram-simple", "--draft-max", "5"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), spec.begin(), spec.end());
    const CliResult r = run_tzero(args, input);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out) << spec[1];
    EXPECT_EQ(digests(r.err), digests(plain.err)) << spec[1];
    EXPECT_NE(r.err.find("\"speculative\":{\"accepted\":"), std::string::npos) << r.err;
    if (spec[1] == model) {  // itself, greedy: every draft of every turn agrees
      for (size_t p = r.err.find("\"speculative\":{"); p != std::string::npos;
           p = r.err.find("\"speculative\":{", p + 1)) {
        const size_t open = p + 14, close = r.err.find('}', open);
        const json c = json::parse(r.err.substr(open, close - open + 1));
        EXPECT_EQ(c["accepted"], c["drafted"]) << r.err;
        EXPECT_GT(c["drafted"].get<int>(), 0) << r.err;
      }
    }
  }
}

// tzero serve with prompt lookup or a draft model: concurrent answers (greedy and seeded) carry
// plain decoding's digest, as `tzero run` without drafts gives it, and /metrics counts the
// drafts.
TEST(Speculative, ServerAnswersAreTheSame) {
  const std::string model = tzero::test::generated_model("tiny", "q4_k");
  for (const std::vector<std::string>& spec :
       {std::vector<std::string>{"--spec-type", "ngram-simple", "--draft-max", "4"},
        std::vector<std::string>{"--draft-model", tzero::test::generated_model("tiny", "q8_0"),
                                 "--draft-max", "3"}}) {
    std::vector<std::string> args = {"-m", model, "--parallel", "4", "-t", "2"};
    args.insert(args.end(), spec.begin(), spec.end());
    tzero::test::ServeProcess srv(args);
    ASSERT_TRUE(srv.ok()) << srv.stderr_text();
    struct Req {
      const char* prompt;
      double temp;
    };
    const Req reqs[] = {{"one two three one two three one", 0},
                        {"a b a b a b a", 0.8},
                        {"the cat sat on the mat and the cat", 0},
                        {"x y z x y z x", 1.1}};
    std::vector<json> answers(std::size(reqs));
    std::vector<std::thread> clients;
    for (size_t i = 0; i < std::size(reqs); ++i)
      clients.emplace_back([&, i] {
        auto c = srv.client();
        int st = 0;
        answers[i] = tzero::test::post_json(*c, "/v1/completions",
                                            {{"prompt", reqs[i].prompt},
                                             {"max_tokens", 30},
                                             {"temperature", reqs[i].temp},
                                             {"seed", 5},
                                             {"ignore_eos", true}},
                                            &st);
        EXPECT_EQ(st, 200) << answers[i].dump();
      });
    for (auto& t : clients) t.join();
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < std::size(reqs); ++i) {
      // Each answer's own counts, as OpenAI's predicted outputs spell them.
      const json& details = answers[i]["usage"]["completion_tokens_details"];
      accepted += details.at("accepted_prediction_tokens").get<int>();
      rejected += details.at("rejected_prediction_tokens").get<int>();
      const json plain = run_json({"-m", model, "-p", reqs[i].prompt, "-n", "30", "--temp",
                                   std::to_string(reqs[i].temp), "--seed", "5", "--ignore-eos"});
      EXPECT_EQ(answers[i]["choices"][0]["tzero"]["logits_digest"], plain["logits_digest"]) << i;
      EXPECT_EQ(answers[i]["choices"][0]["text"], plain["text"]) << i;
    }
    auto c = srv.client();
    const auto m = c->Get("/metrics");
    ASSERT_TRUE(m && m->status == 200);
    auto metric = [&](const std::string& name) {
      const size_t at = m->body.find("\n" + name + " ");
      EXPECT_NE(at, std::string::npos) << name << "\n" << m->body;
      return at == std::string::npos ? -1 : std::stoi(m->body.substr(at + name.size() + 2));
    };
    // The server's totals are the answers' sums.
    EXPECT_GT(accepted + rejected, 0);
    EXPECT_EQ(metric("tzero_engine_drafted_tokens_total"), accepted + rejected);
    EXPECT_EQ(metric("tzero_engine_accepted_tokens_total"), accepted);
    EXPECT_EQ(metric("tzero_engine_rejected_tokens_total"), rejected);
  }
}
