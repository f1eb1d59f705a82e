// One decode step (runtime/decode_step.h) for every caller: on a model whose end-of-turn token
// is not its EOS (gen-model preset tiny-eot: greedy decoding of kPrompt emits EOT, token 260,
// as its third token), `tzero run`, `tzero chat`, tzero::Engine, `tzero serve` and `tzero
// audit` report the same tokens, the same text and the same stop. And the one BOS rule
// (runtime/prompt.h) holds for run, chat, the engine and the server alike.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "serve_test_util.h"
#include "support/test_support.h"
#include "tzero/engine.h"

using nlohmann::json;
using tzero::test::run_tzero;

namespace {

constexpr const char* kPrompt = "Once upon a time";
constexpr int32_t kEot = 260;  // tiny-eot's tokenizer.ggml.eot_token_id
constexpr int kMax = 8;

struct Reference {
  std::vector<int32_t> prompt_tokens, tokens;
  std::string text, digest;
};

// `tzero run --json`: the reference every other caller is compared with.
Reference run_reference(const std::string& model) {
  const auto r = run_tzero(
      {"run", "-m", model, "-p", kPrompt, "-n", std::to_string(kMax), "-t", "2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["stop_reason"], "eot");
  Reference ref;
  ref.prompt_tokens = j["prompt_tokens"].get<std::vector<int32_t>>();
  ref.tokens = j["tokens"].get<std::vector<int32_t>>();
  ref.text = j["text"];
  ref.digest = j["logits_digest"];
  return ref;
}

struct EngineOut {
  std::vector<int32_t> tokens;
  std::string text, digest;
  tzero::StopReason stop = tzero::StopReason::none;
  tzero::FinishReason finish = tzero::FinishReason::none;
  int n_final = 0;
};

EngineOut run_engine(tzero::Engine& e, const tzero::RequestParams& r) {
  EngineOut out;
  e.submit(r, [&out](const tzero::TokenEvent& ev) {
    out.text += ev.text;
    if (!ev.finished) {
      out.tokens.push_back(ev.token);
      return;
    }
    out.stop = ev.stop_reason;
    out.finish = ev.finish_reason;
    out.digest = ev.logits_digest;
    ++out.n_final;
  });
  e.run_until_idle();
  return out;
}

}  // namespace

TEST(StopRules, RunChatEngineServerAndAuditAgreeOnEot) {
  const std::string model = tzero::test::generated_model("tiny-eot", "f32");
  const Reference ref = run_reference(model);
  // EOT is really hit, early, and reported as the last token (as a final EOS is).
  ASSERT_FALSE(ref.tokens.empty());
  EXPECT_EQ(ref.tokens.back(), kEot);
  EXPECT_LT(int(ref.tokens.size()), kMax);
  EXPECT_EQ(ref.prompt_tokens.front(), 1) << "BOS: the vocabulary asks for it";

  // tzero chat: the preset's template passes the message through, so the prompt is the same.
  {
    const auto c =
        run_tzero({"chat", "-m", model, "-n", std::to_string(kMax), "-t", "2", "--verbose"},
                  std::string(kPrompt) + "\n");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(c.out, ref.text + "\n");
    const size_t at = c.err.find("\n{") + 1;  // the --verbose line, after the banner
    const json j = json::parse(c.err.substr(at, c.err.find('\n', at) - at));
    EXPECT_EQ(j["prompt_tokens"].get<std::vector<int32_t>>(), ref.prompt_tokens);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), ref.tokens);
    EXPECT_EQ(j["stop_reason"], "eot");
    EXPECT_EQ(j["logits_digest"], ref.digest);
  }

  // The engine, from text and from the chat template.
  {
    tzero::EngineOptions o;
    o.model_path = model;
    o.n_threads = 2;
    tzero::Engine e(o);
    EXPECT_EQ(e.info().eot, kEot);
    EXPECT_EQ(e.tokenize_prompt(kPrompt, false), ref.prompt_tokens);
    EXPECT_EQ(e.tokenize_chat(e.apply_chat_template({{"user", kPrompt}})), ref.prompt_tokens);
    tzero::RequestParams r;
    r.prompt = kPrompt;
    r.max_tokens = kMax;
    const EngineOut got = run_engine(e, r);
    EXPECT_EQ(got.tokens, ref.tokens);
    EXPECT_EQ(got.text, ref.text);
    EXPECT_EQ(got.digest, ref.digest);
    EXPECT_EQ(got.stop, tzero::StopReason::eot);
    EXPECT_EQ(got.finish, tzero::FinishReason::stop);
    EXPECT_EQ(got.n_final, 1);
    // ignore_eos: EOT no longer stops; the same tokens up to it, then max_tokens.
    r.ignore_eos = true;
    const EngineOut past = run_engine(e, r);
    EXPECT_EQ(int(past.tokens.size()), kMax);
    EXPECT_TRUE(std::equal(ref.tokens.begin(), ref.tokens.end(), past.tokens.begin()));
    EXPECT_EQ(past.stop, tzero::StopReason::max_tokens);
    EXPECT_EQ(past.finish, tzero::FinishReason::length);
    // EOT as a stop token with ignore_eos: a stop token, the same tokens.
    r.stop_tokens = {kEot};
    const EngineOut tok = run_engine(e, r);
    EXPECT_EQ(tok.tokens, ref.tokens);
    EXPECT_EQ(tok.stop, tzero::StopReason::stop_token);
    EXPECT_EQ(tok.digest, ref.digest);
    // tzero run's --ignore-eos, --stop-token and --stop give the engine's tokens and stop.
    auto run_with = [&](std::vector<std::string> extra) {
      std::vector<std::string> a = {"run", "-m", model,   "-p", kPrompt, "-n", std::to_string(kMax),
                                    "-t",  "2",  "--json"};
      a.insert(a.end(), extra.begin(), extra.end());
      const auto c = run_tzero(a);
      EXPECT_EQ(c.exit_code, 0) << c.err;
      return c.exit_code == 0 ? json::parse(c.out) : json::object();
    };
    const json ig = run_with({"--ignore-eos"});
    EXPECT_EQ(ig["tokens"].get<std::vector<int32_t>>(), past.tokens);
    EXPECT_EQ(ig["stop_reason"], "length");
    EXPECT_EQ(ig["logits_digest"], past.digest);
    const json st = run_with({"--ignore-eos", "--stop-token", std::to_string(kEot)});
    EXPECT_EQ(st["tokens"].get<std::vector<int32_t>>(), ref.tokens);
    EXPECT_EQ(st["stop_reason"], "stop_token");
    // A stop string: the text is cut before it, as the engine cuts it.
    const std::string cut = past.text.substr(0, past.text.size() / 2);
    const std::string stop = past.text.substr(cut.size(), 3);
    r.stop_tokens.clear();
    r.stop = {stop};
    const EngineOut es = run_engine(e, r);
    const json rs = run_with({"--ignore-eos", "--stop", stop});
    EXPECT_EQ(rs["stop_reason"], "stop_string");
    EXPECT_EQ(rs["text"], es.text);
    EXPECT_EQ(rs["tokens"].get<std::vector<int32_t>>(), es.tokens);
    EXPECT_EQ(es.stop, tzero::StopReason::stop_string);
  }

  // tzero serve: completions and chat (the server's chat path follows the same BOS rule).
  {
    tzero::test::ServeProcess srv({"-m", model, "-t", "2"});
    ASSERT_TRUE(srv.ok()) << srv.stderr_text();
    auto c = srv.client();
    int st = 0;
    const json comp = tzero::test::post_json(
        *c, "/v1/completions",
        {{"prompt", kPrompt}, {"max_tokens", kMax}, {"temperature", 0}, {"logprobs", 0}}, &st);
    ASSERT_EQ(st, 200) << comp.dump();
    EXPECT_EQ(comp["choices"][0]["text"], ref.text);
    EXPECT_EQ(comp["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(comp["usage"]["prompt_tokens"], ref.prompt_tokens.size());
    EXPECT_EQ(comp["usage"]["completion_tokens"], ref.tokens.size());
    const json chat =
        tzero::test::post_json(*c, "/v1/chat/completions",
                               {{"messages", {{{"role", "user"}, {"content", kPrompt}}}},
                                {"max_tokens", kMax},
                                {"temperature", 0}},
                               &st);
    ASSERT_EQ(st, 200) << chat.dump();
    EXPECT_EQ(chat["choices"][0]["message"]["content"], ref.text);
    EXPECT_EQ(chat["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(chat["usage"]["prompt_tokens"], ref.prompt_tokens.size());
    EXPECT_EQ(chat["usage"]["completion_tokens"], ref.tokens.size());
  }

  // tzero audit: every deterministic configuration (generate() and the engine's batch rows)
  // stops at the same EOT with the same tokens.
  {
    const std::string dir = tzero::test::scratch_dir() + "/audit-eot";
    const std::string prompts = tzero::test::scratch_dir() + "/eot-prompts.txt";
    tzero::test::write_file(prompts, std::string(kPrompt) + "\n");
    const auto a = run_tzero({"audit", "-m", model, "-f", prompts, "-n", std::to_string(kMax),
                              "--max-threads", "2", "--report", dir});
    ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
    const json j = json::parse(tzero::test::read_file(dir + "/report.json"));
    int checked = 0;
    for (const auto& out : j["outcomes"]) {
      if (out["config"].get<std::string>().rfind("fast", 0) == 0) continue;
      EXPECT_EQ(out["tokens"].get<std::vector<int32_t>>(), ref.tokens) << out["config"];
      EXPECT_EQ(out["stop_reason"], "eot") << out["config"];
      ++checked;
    }
    EXPECT_GE(checked, 8);
  }
}

// The one BOS rule: the vocabulary's add_bos_token, and no second BOS when the text already
// starts with the BOS text while special texts are parsed (a template that writes bos_token).
TEST(StopRules, OneBosRuleEverywhere) {
  const std::string model = tzero::test::generated_model("tiny-eot", "f32");
  tzero::EngineOptions o;
  o.model_path = model;
  tzero::Engine e(o);
  const std::vector<int32_t> plain = e.tokenize_prompt(kPrompt, false);
  ASSERT_EQ(plain.front(), 1);
  // "<s>" parsed as the BOS: one BOS, then the same text tokens.
  const std::vector<int32_t> written = e.tokenize_prompt(std::string("<s>") + kPrompt, true);
  EXPECT_EQ(written, plain);
  // Not parsed: "<s>" is text, and the BOS is added.
  const std::vector<int32_t> as_text = e.tokenize_prompt(std::string("<s>") + kPrompt, false);
  EXPECT_EQ(as_text.front(), 1);
  EXPECT_NE(as_text[1], 1);
  // A template that writes the BOS (llama2) gets one; one that does not (chatml) gets it added.
  const auto llama2 = e.tokenize_chat(e.apply_chat_template({{"user", "hi"}}, "llama2"));
  ASSERT_GE(llama2.size(), 2u);
  EXPECT_EQ(llama2[0], 1);
  EXPECT_NE(llama2[1], 1);
  const auto chatml = e.tokenize_chat(e.apply_chat_template({{"user", "hi"}}, "chatml"));
  EXPECT_EQ(chatml[0], 1);
  // tzero run --parse-special with a leading "<s>": the same single BOS as the engine.
  const auto r = run_tzero({"run", "-m", model, "-p", std::string("<s>") + kPrompt,
                            "--parse-special", "-n", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["prompt_tokens"].get<std::vector<int32_t>>(), plain);
}
