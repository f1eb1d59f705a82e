// POST /v1/embeddings on the real `tzero serve` (loopback, real HTTP): OpenAI's response
// shape, base64 equal to the floats bit for bit, `dimensions`, the same bits as `tzero embed`,
// an input's bits alone equal to its bits among 64 other inputs while generation and scoring
// requests share the engine, and every bad input a 400 naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "base/hash.h"
#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

std::vector<float> from_base64(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<unsigned char> bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) break;  // '=' padding
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) bytes.push_back((acc >> (bits -= 8)) & 0xff);
  }
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t u = uint32_t(bytes[4 * i]) | uint32_t(bytes[4 * i + 1]) << 8 |
                       uint32_t(bytes[4 * i + 2]) << 16 | uint32_t(bytes[4 * i + 3]) << 24;
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

std::vector<float> floats_of(const json& a) {
  std::vector<float> v;
  for (const json& x : a) v.push_back(float(x.get<double>()));
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

json embed(httplib::Client& c, const json& body, int* status = nullptr) {
  return tzero::test::post_json(c, "/v1/embeddings", body, status);
}

const char* kTexts[] = {"Once upon a time",
                        "the dog ran to the park",
                        "hello",
                        "A",
                        "what is the capital of France?",
                        "zebra crossing at night"};

// Proves: the response has OpenAI's shape; base64 holds exactly the float32 bits the float
// format prints; dimensions keeps a unit-norm prefix; a list of inputs gives each its own index.
TEST(ServeEmbed, ShapeBase64AndDimensions) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json f = embed(*c, {{"input", "Once upon a time"}, {"model", "x"}, {"user", "u"}}, &st);
  ASSERT_EQ(st, 200) << f.dump();
  EXPECT_EQ(f["object"], "list");
  ASSERT_EQ(f["data"].size(), 1u);
  EXPECT_EQ(f["data"][0]["object"], "embedding");
  EXPECT_EQ(f["data"][0]["index"], 0);
  EXPECT_TRUE(f["model"].is_string());
  EXPECT_GT(f["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(f["usage"]["prompt_tokens"], f["usage"]["total_tokens"]);
  const std::vector<float> v = floats_of(f["data"][0]["embedding"]);
  ASSERT_EQ(v.size(), 256u);
  double ss = 0;
  for (float x : v) ss += double(x) * x;
  EXPECT_NEAR(ss, 1.0, 1e-5);

  const json b = embed(*c, {{"input", "Once upon a time"}, {"encoding_format", "base64"}}, &st);
  ASSERT_EQ(st, 200);
  ASSERT_TRUE(b["data"][0]["embedding"].is_string());
  EXPECT_TRUE(same_bits(from_base64(b["data"][0]["embedding"]), v));

  const json d = embed(*c, {{"input", "Once upon a time"}, {"dimensions", 12}}, &st);
  ASSERT_EQ(st, 200);
  const std::vector<float> dv = floats_of(d["data"][0]["embedding"]);
  ASSERT_EQ(dv.size(), 12u);
  double n12 = 0, dss = 0;
  for (size_t i = 0; i < 12; ++i) n12 += double(v[i]) * v[i], dss += double(dv[i]) * dv[i];
  EXPECT_NEAR(dss, 1.0, 1e-5);
  for (size_t i = 0; i < 12; ++i) EXPECT_NEAR(dv[i], v[i] / std::sqrt(n12), 1e-5);

  // Token inputs: one list, and a list of lists.
  const json t1 = embed(*c, {{"input", {1, 40, 41, 42}}}, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(t1["usage"]["prompt_tokens"], 4);
  const json t2 = embed(*c, {{"input", {{1, 40, 41, 42}, {7, 8}}}}, &st);
  ASSERT_EQ(st, 200);
  ASSERT_EQ(t2["data"].size(), 2u);
  EXPECT_EQ(t2["data"][1]["index"], 1);
  EXPECT_EQ(t2["usage"]["prompt_tokens"], 6);
  EXPECT_TRUE(
      same_bits(floats_of(t2["data"][0]["embedding"]), floats_of(t1["data"][0]["embedding"])));
  EXPECT_FALSE(
      same_bits(floats_of(t2["data"][1]["embedding"]), floats_of(t1["data"][0]["embedding"])));

  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
  auto g = c->Get("/v1/embeddings");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 405);
}

// Proves: the server's embedding is the bits `tzero embed` prints (its digest), for every
// pooling the flag offers.
TEST(ServeEmbed, SameBitsAsTzeroEmbed) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  for (const char* pooling : {"mean", "last"}) {
    auto srv = tzero::test::serve_tiny({"--pooling", pooling});
    ASSERT_TRUE(srv->ok());
    auto c = srv->client();
    int st = 0;
    const json r = embed(*c, {{"input", kTexts[1]}, {"encoding_format", "base64"}}, &st);
    ASSERT_EQ(st, 200);
    const std::vector<float> v = from_base64(r["data"][0]["embedding"]);
    const auto cli = tzero::test::run_tzero(
        {"embed", "-m", model, "-p", kTexts[1], "--pooling", pooling, "-t", "1", "--json"});
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    const json j = json::parse(cli.out);
    EXPECT_EQ(j["pooling"], pooling);
    EXPECT_EQ(j["data"][0]["digest"], tzero::xxh128_hex(v.data(), v.size() * 4)) << pooling;
    EXPECT_TRUE(same_bits(floats_of(j["data"][0]["embedding"]), v)) << pooling;
  }
}

// Proves: an input's embedding is the same bits alone and among 64 other inputs of one
// request, while streamed generations and prompt scorings run in the same engine steps
// (small token budget, so prompts are chunked differently from the solo run).
TEST(ServeEmbed, SameBitsAloneOrAmong64Others) {
  auto srv = tzero::test::serve_tiny(
      {"--max-queue", "128", "--parallel", "8", "--batch-tokens", "24", "--block-size", "4"});
  ASSERT_TRUE(srv->ok());
  std::vector<std::string> inputs;
  for (int i = 0; i < 65; ++i)
    inputs.push_back(std::string(kTexts[i % 6]) + " number " + std::to_string(i * 7919 % 1000));
  const size_t target = 37;
  std::vector<std::string> solo(inputs.size());
  {
    auto c = srv->client();
    for (size_t i = 0; i < inputs.size(); i += 6) {
      int st = 0;
      const json r = embed(*c, {{"input", inputs[i]}, {"encoding_format", "base64"}}, &st);
      ASSERT_EQ(st, 200);
      solo[i] = r["data"][0]["embedding"];
    }
    int st = 0;
    const json r = embed(*c, {{"input", inputs[target]}, {"encoding_format", "base64"}}, &st);
    ASSERT_EQ(st, 200);
    solo[target] = r["data"][0]["embedding"];
  }
  json batched;
  int batched_status = 0;
  std::vector<std::thread> others;
  for (int k = 0; k < 4; ++k)
    others.emplace_back([&, k] {
      auto c = srv->client();
      if (k % 2 == 0) {
        tzero::test::post_stream(*c, "/v1/completions",
                                 {{"prompt", kTexts[k]}, {"max_tokens", 24}, {"ignore_eos", true}});
      } else {
        tzero::test::post_json(*c, "/v1/completions",
                               {{"prompt", kTexts[k]},
                                {"echo", true},
                                {"logprobs", 1},
                                {"max_tokens", 0},
                                {"temperature", 0}});
      }
    });
  {
    auto c = srv->client();
    batched = embed(*c, {{"input", inputs}, {"encoding_format", "base64"}}, &batched_status);
  }
  for (auto& t : others) t.join();
  ASSERT_EQ(batched_status, 200) << batched.dump();
  ASSERT_EQ(batched["data"].size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(batched["data"][i]["index"], i);
    if (!solo[i].empty()) {
      EXPECT_EQ(batched["data"][i]["embedding"].get<std::string>(), solo[i]) << "input " << i;
    }
  }
  auto c = srv->client();
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
}

// Proves: every bad embeddings body is a 400 naming the field: no input, an empty list, an
// empty string, wrong types, token ids outside the vocabulary (the message names its size), an
// input longer than the context (context_length_exceeded, naming the limit), a bad
// encoding_format or dimensions, an unknown field, more inputs than the queue holds.
TEST(ServeEmbed, BadInputIs400) {
  auto srv = tzero::test::serve_tiny({"--ctx", "64", "--max-queue", "16"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::vector<int> too_long(65, 5), fits(64, 5);
  struct Case {
    json body;
    std::string param, code, needle;
  };
  const std::vector<Case> cases = {
      {json::object(), "input", "missing_required_parameter", "input"},
      {{{"input", json::array()}}, "input", "invalid_value", "empty"},
      {{{"input", ""}}, "input", "invalid_value", "empty"},
      {{{"input", {"a", ""}}}, "input[1]", "invalid_value", "empty"},
      {{{"input", 5}}, "input", "invalid_type", "string"},
      {{{"input", {"a", 3}}}, "input[1]", "invalid_type", ""},
      {{{"input", {{1, 2}, 3}}}, "input[1]", "invalid_type", ""},
      {{{"input", {{1, 2}, json::array()}}}, "input[1]", "invalid_value", "empty"},
      {{{"input", {1, -2}}}, "input", "invalid_type", "non-negative"},
      {{{"input", {1, 2, 600}}}, "input", "invalid_value", "vocabulary of 512"},
      {{{"input", {{1, 2}, {3, 512}}}}, "input[1]", "invalid_value", "vocabulary of 512"},
      {{{"input", too_long}}, "input", "context_length_exceeded", "64 tokens"},
      {{{"input", {"ok", std::string(2000, 'a')}}},
       "input[1]",
       "context_length_exceeded",
       "64 tokens"},
      {{{"input", "x"}, {"encoding_format", "int8"}}, "encoding_format", "invalid_value", ""},
      {{{"input", "x"}, {"encoding_format", 1}}, "encoding_format", "invalid_type", ""},
      {{{"input", "x"}, {"dimensions", 0}}, "dimensions", "invalid_value", ""},
      {{{"input", "x"}, {"dimensions", 257}}, "dimensions", "invalid_value", "256"},
      {{{"input", "x"}, {"dimensions", 1.5}}, "dimensions", "invalid_type", ""},
      {{{"input", "x"}, {"model", 3}}, "model", "invalid_type", ""},
      {{{"input", "x"}, {"stream", true}}, "stream", "unknown_parameter", "stream"},
      {{{"input", std::vector<std::string>(17, "a")}}, "input", "invalid_value", "max-queue"},
  };
  for (const Case& k : cases) {
    int st = 0;
    const json r = embed(*c, k.body, &st);
    EXPECT_EQ(st, 400) << k.body.dump() << " -> " << r.dump();
    ASSERT_TRUE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["error"]["param"], k.param) << k.body.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["code"], k.code) << k.body.dump() << " -> " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(k.needle), std::string::npos)
        << r.dump();
  }
  int st = 0;
  embed(*c, {{"input", fits}}, &st);
  EXPECT_EQ(st, 200) << "an input of exactly the context fits";
  auto raw = c->Post("/v1/embeddings", "{\"input\": ", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
}

}  // namespace
