// llama.cpp's and vLLM's extension fields (server/extension_fields.h) as parse_request reads
// them, and the access log's lines (server/access_log.h). The server round trip is in
// tests/e2e/test_serve_ecosystem.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "server/access_log.h"
#include "server/extension_fields.h"
#include "server/openai_request.h"

using nlohmann::json;
using tzero::server::ApiError;
using tzero::server::Endpoint;
using tzero::server::OpenAiRequest;
using tzero::server::parse_request;

namespace {

OpenAiRequest completion(json body) {
  body["prompt"] = "x";
  return parse_request(Endpoint::completions, body.dump());
}

OpenAiRequest chat(json body) {
  body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
  return parse_request(Endpoint::chat, body.dump());
}

// The ApiError a body gets (status 0 when it is accepted).
ApiError error_of(Endpoint ep, json body) {
  if (ep == Endpoint::chat)
    body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
  else
    body["prompt"] = "x";
  try {
    parse_request(ep, body.dump());
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "accepted");
}

TEST(ExtensionFields, HonouredOnesMapOntoTzero) {
  EXPECT_EQ(completion({{"n_predict", 7}}).max_tokens, 7);
  const OpenAiRequest all = completion({{"n_predict", -1}});
  EXPECT_FALSE(all.max_tokens.has_value());
  EXPECT_TRUE(all.until_context);
  EXPECT_FALSE(completion({}).until_context);

  const OpenAiRequest p = completion({{"repeat_penalty", 1.25}, {"repeat_last_n", -1}});
  EXPECT_EQ(p.params.sampling.repetition_penalty, 1.25f);
  EXPECT_EQ(p.params.sampling.penalty_last_n, -1);
  EXPECT_EQ(completion({}).params.sampling.penalty_last_n, 64);  // llama.cpp's default too

  for (Endpoint ep : {Endpoint::completions, Endpoint::chat}) {
    const OpenAiRequest r =
        ep == Endpoint::chat ? chat({{"n_probs", 3}}) : completion({{"n_probs", 3}});
    EXPECT_TRUE(r.want_logprobs);
    EXPECT_EQ(r.top_logprobs, 3);
    EXPECT_TRUE(r.params.sampling.logprobs);
    EXPECT_EQ(r.params.sampling.top_logprobs, 3);
    const OpenAiRequest off =
        ep == Endpoint::chat ? chat({{"n_probs", 0}}) : completion({{"n_probs", 0}});
    EXPECT_FALSE(off.want_logprobs);
  }

  EXPECT_EQ(completion({{"stop_token_ids", {5, 9}}}).params.stop_tokens,
            (std::vector<int32_t>{5, 9}));
  EXPECT_EQ(completion({{"top_k", -1}}).params.sampling.top_k, 0);  // vLLM's "off"
  EXPECT_EQ(chat({{"best_of", 2}, {"n", 2}}).n, 2);
}

TEST(ExtensionFields, IgnoredAndDefaultOnlyAreAccepted) {
  const json ignored = {{"cache_prompt", true},
                        {"id_slot", 0},
                        {"n_keep", -1},
                        {"t_max_predict_ms", 500},
                        {"samplers", {"top_k", "top_p", "temperature"}},
                        {"min_keep", 1},
                        {"mirostat_tau", 5.0},
                        {"mirostat_eta", 0.1},
                        {"dynatemp_exponent", 1.0},
                        {"dry_base", 1.75},
                        {"dry_allowed_length", 2},
                        {"dry_penalty_last_n", -1},
                        {"dry_sequence_breakers", {"\n", ":"}},
                        {"xtc_threshold", 0.1},
                        {"length_penalty", 1.0},
                        {"spaces_between_special_tokens", true}};
  const json defaults = {{"typical_p", 1.0},
                         {"tfs_z", 1.0},
                         {"mirostat", 0},
                         {"dynatemp_range", 0.0},
                         {"dry_multiplier", 0.0},
                         {"xtc_probability", 0.0},
                         {"min_tokens", 0},
                         {"skip_special_tokens", true},
                         {"include_stop_str_in_output", false},
                         {"use_beam_search", false}};
  for (Endpoint ep : {Endpoint::completions, Endpoint::chat}) {
    EXPECT_EQ(error_of(ep, ignored).status, 0) << error_of(ep, ignored).what();
    EXPECT_EQ(error_of(ep, defaults).status, 0) << error_of(ep, defaults).what();
  }
  // Ignored really means no effect: the engine request is the plain one.
  const OpenAiRequest plain = completion({}), with = completion(ignored);
  EXPECT_EQ(with.params.sampling.top_k, plain.params.sampling.top_k);
  EXPECT_EQ(with.params.sampling.penalty_last_n, plain.params.sampling.penalty_last_n);
  EXPECT_EQ(with.params.stop_tokens, plain.params.stop_tokens);
  EXPECT_EQ(with.max_tokens, plain.max_tokens);
  // The samplers string form (llama.cpp's one-letter codes) too.
  EXPECT_EQ(error_of(Endpoint::completions, {{"samplers", "kfypmxt"}}).status, 0);
}

TEST(ExtensionFields, RefusalsNameTheField) {
  struct Case {
    json body;
    std::string param, code;
  };
  const std::vector<Case> cases = {
      {{{"typical_p", 0.9}}, "typical_p", "invalid_value"},
      {{{"tfs_z", 0.5}}, "tfs_z", "invalid_value"},
      {{{"mirostat", 2}}, "mirostat", "invalid_value"},
      {{{"dynatemp_range", 0.5}}, "dynatemp_range", "invalid_value"},
      {{{"dry_multiplier", 0.8}}, "dry_multiplier", "invalid_value"},
      {{{"xtc_probability", 0.5}}, "xtc_probability", "invalid_value"},
      {{{"min_tokens", 4}}, "min_tokens", "invalid_value"},
      {{{"skip_special_tokens", false}}, "skip_special_tokens", "invalid_value"},
      {{{"include_stop_str_in_output", true}}, "include_stop_str_in_output", "invalid_value"},
      {{{"use_beam_search", true}}, "use_beam_search", "invalid_value"},
      {{{"n_predict", 0}}, "n_predict", "invalid_value"},
      {{{"n_predict", -2}}, "n_predict", "invalid_value"},
      {{{"n_predict", "8"}}, "n_predict", "invalid_type"},
      {{{"n_predict", 8}, {"max_tokens", 8}}, "n_predict", "invalid_value"},
      {{{"repeat_penalty", 0}}, "repeat_penalty", "invalid_value"},
      {{{"repeat_penalty", 1.1}, {"repetition_penalty", 1.1}}, "repeat_penalty", "invalid_value"},
      {{{"repeat_last_n", -2}}, "repeat_last_n", "invalid_value"},
      {{{"n_probs", 21}}, "n_probs", "invalid_value"},
      {{{"n_probs", 2}, {"logprobs", 2}}, "n_probs", "invalid_value"},
      {{{"stop_token_ids", 3}}, "stop_token_ids", "invalid_type"},
      {{{"stop_token_ids", {-1}}}, "stop_token_ids", "invalid_type"},
      {{{"cache_prompt", "yes"}}, "cache_prompt", "invalid_type"},
      {{{"samplers", 3}}, "samplers", "invalid_type"},
      {{{"id_slot", 1.5}}, "id_slot", "invalid_type"},
      {{{"top_k", -2}}, "top_k", "invalid_value"},
      // Neither OpenAI's nor on the list: still unknown.
      {{{"mirostat_mode", 1}}, "mirostat_mode", "unknown_parameter"},
      {{{"guided_regex", "a+"}}, "guided_regex", "unknown_parameter"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(Endpoint::completions, c.body);
    EXPECT_EQ(e.status, 400) << c.body.dump();
    EXPECT_EQ(e.param, c.param) << c.body.dump() << ": " << e.what();
    EXPECT_EQ(e.code, c.code) << c.body.dump() << ": " << e.what();
  }
  // Chat's spellings.
  EXPECT_EQ(error_of(Endpoint::chat, {{"n_predict", 4}, {"max_completion_tokens", 4}}).param,
            "n_predict");
  EXPECT_EQ(error_of(Endpoint::chat, {{"n_probs", 2}, {"logprobs", true}}).param, "n_probs");
  EXPECT_EQ(error_of(Endpoint::chat, {{"best_of", 3}}).param, "best_of");
  EXPECT_TRUE(tzero::server::is_extension_field("best_of", Endpoint::chat));
  EXPECT_FALSE(tzero::server::is_extension_field("echo", Endpoint::chat));
}

TEST(AccessLog, Lines) {
  using tzero::server::access_log_line;
  using tzero::server::LoggedTokens;
  EXPECT_EQ(access_log_line("POST", "/v1/chat/completions", 200, LoggedTokens{12, 30}, 431),
            "POST /v1/chat/completions 200 prompt=12 completion=30 431ms");
  EXPECT_EQ(access_log_line("GET", "/health", 200, std::nullopt, 0), "GET /health 200 0ms");
  EXPECT_EQ(access_log_line("-", "", 413, std::nullopt, -1, "refused"), "- - 413 refused");
  EXPECT_EQ(access_log_line("POST", "/v1/completions", 200, LoggedTokens{1, 2}, 5, "disconnected"),
            "POST /v1/completions 200 prompt=1 completion=2 5ms disconnected");
  // A decoded path cannot forge a line: control bytes, backslashes and non-ASCII are escaped.
  EXPECT_EQ(access_log_line("GET", "/a\nGET /b 200 1ms\\\xc3\xa1", 404, std::nullopt, 1),
            "GET /a\\x0aGET /b 200 1ms\\x5c\\xc3\\xa1 404 1ms");
  const std::string long_path = "/" + std::string(500, 'p');
  const std::string l = access_log_line("GET", long_path, 404, std::nullopt, 1);
  EXPECT_EQ(l, "GET /" + std::string(199, 'p') + "... 404 1ms");
}

TEST(AccessLog, WritesQueuedLinesAndCanBeOff) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    tzero::server::AccessLog log(true, f);
    EXPECT_TRUE(log.enabled());
    log.write("one");
    log.write("two");
  }  // the destructor writes what is queued
  {
    tzero::server::AccessLog off(false, f);
    EXPECT_FALSE(off.enabled());
    off.write("three");
  }
  std::rewind(f);
  char buf[64] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  EXPECT_EQ(std::string(buf, n), "one\ntwo\n");
}

}  // namespace
