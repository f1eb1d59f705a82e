// End-to-end tests of `tzero run` with real model files: reference texts, and the
// reproducibility contract (L1 runs, L2 threads, prefill chunking) checked through the logits
// digest, an XXH3-128 over the float32 logits of every evaluated step.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("--json");
  CliResult r = run_tzero(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return json::object();
  return json::parse(r.out);
}

std::string converted_stories260k() {
  static std::string made;  // converted once per process
  if (!made.empty()) return made;
  const std::string bin = tzero::test::shared_data("llama2c/stories260K.bin");
  const std::string tok = tzero::test::shared_data("llama2c/tok512.bin");
  if (bin.empty() || tok.empty()) return "";
  const std::string out = tzero::test::scratch_dir() + "/stories260K.converted.gguf";
  CliResult r = run_tzero({"convert", "--llama2c", bin, "--tokenizer", tok, "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  made = out;
  return out;
}

const char* kThreadCounts[] = {"1", "2", "3", "4", "7"};

}  // namespace

// llama2.c's own greedy reference texts (prompt empty, BOS only), through the GGUF published by
// llama.cpp and through our import of the original checkpoint.
TEST(RunStories260K, GreedyMatchesLlama2cReference) {
  TZ_REQUIRE_SHARED(gguf, "gguf/stories260K.gguf");
  TZ_REQUIRE_SHARED(n200, "llama2c/stories260K.greedy_n200.expected.txt");
  TZ_REQUIRE_SHARED(n256, "llama2c/stories260K.greedy_n256.expected.txt");
  const std::string converted = converted_stories260k();
  for (const std::string& model : {gguf, converted}) {
    SCOPED_TRACE(model);
    json j = run_json({"-m", model, "-n", "200"});
    EXPECT_EQ(j["text"], tzero::test::read_file(n200));
    j = run_json({"-m", model, "-n", "256"});
    // run.c prints a final newline after the 256 tokens; the file keeps it.
    EXPECT_EQ(j["text"].get<std::string>() + "\n", tzero::test::read_file(n256));
    EXPECT_EQ(j["tokens"].size(), 256u);
    EXPECT_EQ(j["prompt_tokens"], json::array({1}));
  }
}

// A tokenizer of another model (llama2.c's 32,000-token tokenizer.bin for stories260K's 512) is
// refused with both counts, and nothing is written: cutting it would decode every id wrongly.
TEST(ConvertLlama2c, ATokenizerOfAnotherVocabularyIsRefused) {
  TZ_REQUIRE_SHARED(bin, "llama2c/stories260K.bin");
  TZ_REQUIRE_SHARED(tok, "llama2c/tokenizer.bin");
  const std::string out = tzero::test::scratch_dir() + "/wrong-tokenizer.gguf";
  const CliResult r = run_tzero({"convert", "--llama2c", bin, "--tokenizer", tok, "-o", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tzero: error: " + tok +
                       ": the tokenizer holds 32000 tokens, the checkpoint's vocabulary 512: give "
                       "the tokenizer this checkpoint was trained with\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The streamed text (plain mode) is the JSON text, followed by the final newline.
TEST(RunStories260K, StreamedTextEqualsJsonText) {
  TZ_REQUIRE_SHARED(gguf, "gguf/stories260K.gguf");
  CliResult r = run_tzero({"run", "-m", gguf, "-n", "40", "-p", "Once upon"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = run_json({"-m", gguf, "-n", "40", "-p", "Once upon"});
  EXPECT_EQ(r.out, j["text"].get<std::string>() + "\n");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << "speeds are reported";
  EXPECT_NE(r.err.find(j["logits_digest"].get<std::string>()), std::string::npos);
}

TEST(RunStories260K, DigestIdenticalAcrossThreadCountsAndKernels) {
  TZ_REQUIRE_SHARED(gguf, "gguf/stories260K.gguf");
  const std::string converted = converted_stories260k();
  std::string first;
  for (const std::string& model : {gguf, converted})
    for (const char* t : kThreadCounts) {
      json j = run_json({"-m", model, "-n", "64", "-t", t, "-p", "Lily went"});
      const std::string d = j["logits_digest"];
      if (first.empty()) first = d;
      EXPECT_EQ(d, first) << model << " -t " << t;
    }
  for (const char* k :
       {"scalar", "avx2", "avx512", "amx", "amx-emu", "neon", "neon-dotprod", "neon-i8mm"}) {
    CliResult r =
        run_tzero({"run", "-m", gguf, "-n", "64", "--kernels", k, "-p", "Lily went", "--json"});
    if (r.exit_code == 2 && r.err.find(std::string("--kernels ") + k + ": ") != std::string::npos)
      continue;  // this CPU (or OS) cannot run the set: the message says why
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["logits_digest"], first) << "--kernels " << k;
  }
}

// gen-model models of every supported dtype, for the llama (GQA), qwen2 and qwen3 layouts.
class RunGenerated : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(RunGenerated, DigestIdenticalAcrossThreadsAndChunks) {
  const auto [preset, dtype] = GetParam();
  const std::string model = tzero::test::generated_model(preset, dtype);
  const std::string prompt = "the little dog saw a big tree and was happy when the sun came up";
  std::string first;
  for (const char* t : kThreadCounts) {
    json j = run_json({"-m", model, "-n", "16", "-t", t, "-p", prompt});
    if (first.empty()) first = j["logits_digest"];
    EXPECT_EQ(j["logits_digest"], first) << "-t " << t;
  }
  // Every kernel variant (scalar reference, avx2, avx512, amx, and amx-emu: the AMX kernels
  // over the tile emulator, which the prompt's prefill reaches; unavailable ones are skipped).
  for (const char* k :
       {"scalar", "avx2", "avx512", "amx", "amx-emu", "neon", "neon-dotprod", "neon-i8mm"}) {
    CliResult r = run_tzero(
        {"run", "-m", model, "-n", "16", "-t", "2", "--kernels", k, "-p", prompt, "--json"});
    if (r.exit_code == 2 && r.err.find(std::string("--kernels ") + k + ": ") != std::string::npos)
      continue;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["logits_digest"], first) << "--kernels " << k;
  }
  // Prefill chunking (token by token, odd chunks, all at once) computes the same function.
  for (const char* b : {"1", "3", "7", "512"}) {
    json j = run_json({"-m", model, "-n", "16", "-t", "2", "-b", b, "-p", prompt});
    EXPECT_EQ(j["logits_digest"], first) << "-b " << b;
  }
}

// "tiny_qwen2_q8_0" for (tiny-qwen2, q8_0): gtest names allow no '-'.
std::string preset_dtype_name(
    const ::testing::TestParamInfo<std::tuple<const char*, const char*>>& info) {
  std::string name = std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, RunGenerated,
                         ::testing::Combine(::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3"),
                                            ::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0",
                                                              "q4_k", "q6_k")),
                         preset_dtype_name);

// gemma3 (sliding windows start at every position of the prompt's chunks), phi3 (fused
// tensors, partial rotary, LongRoPE), llama with rope_freqs, gpt-oss (sinks, biased experts).
INSTANTIATE_TEST_SUITE_P(
    MoreArchitectures, RunGenerated,
    ::testing::Combine(::testing::Values("tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-llama3",
                                         "tiny-gpt-oss", "tiny-glm4moe", "tiny-deepseek2",
                                         "tiny-qwen3next", "tiny-qwen3next-ssm-in", "tiny-qwen35",
                                         "tiny-qwen35moe", "tiny-nemotron-h"),
                       ::testing::Values("f16", "q8_0", "q4_k")),
    preset_dtype_name);

// Different weights must give a different digest (the digest is not a constant).
TEST(RunGenerated, DigestDependsOnWeightsAndPrompt) {
  const std::string a = tzero::test::generated_model("tiny", "f32", 1);
  const std::string b = tzero::test::generated_model("tiny", "f32", 2);
  const std::string da = run_json({"-m", a, "-n", "4", "-p", "the cat"})["logits_digest"];
  const std::string db = run_json({"-m", b, "-n", "4", "-p", "the cat"})["logits_digest"];
  const std::string dp = run_json({"-m", a, "-n", "4", "-p", "the dog"})["logits_digest"];
  EXPECT_NE(da, db);
  EXPECT_NE(da, dp);
}

TEST(RunGenerated, GenModelIsDeterministicInTheSeed) {
  const std::string dir = tzero::test::scratch_dir();
  for (const char* dtype : {"f16", "q4_0"}) {
    const std::string p1 = dir + "/det1-" + dtype + ".gguf", p2 = dir + "/det2-" + dtype + ".gguf",
                      p3 = dir + "/det3-" + dtype + ".gguf";
    ASSERT_EQ(run_tzero({"gen-model", "--preset", "tiny-qwen3", "--dtype", dtype, "--seed", "7",
                         "-o", p1})
                  .exit_code,
              0);
    ASSERT_EQ(run_tzero({"gen-model", "--preset", "tiny-qwen3", "--dtype", dtype, "--seed", "7",
                         "-o", p2})
                  .exit_code,
              0);
    ASSERT_EQ(run_tzero({"gen-model", "--preset", "tiny-qwen3", "--dtype", dtype, "--seed", "8",
                         "-o", p3})
                  .exit_code,
              0);
    EXPECT_EQ(tzero::test::read_file(p1), tzero::test::read_file(p2)) << dtype;
    EXPECT_NE(tzero::test::read_file(p1), tzero::test::read_file(p3)) << dtype;
  }
}

// --logits-out: one row of n_vocab float32 per generated token, whose bytes are the digest's.
TEST(RunGenerated, LogitsOutRowsMatchTokens) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string path = tzero::test::scratch_dir() + "/logits.bin";
  json j = run_json({"-m", model, "-n", "5", "-p", "the sun", "--logits-out", path});
  const std::string bytes = tzero::test::read_file(path);
  ASSERT_EQ(bytes.size(), 5u * 512u * sizeof(float));
  const float* rows = reinterpret_cast<const float*>(bytes.data());
  for (size_t k = 0; k < 5; ++k) {
    // The chosen token is the argmax (lowest id on ties) of its row.
    size_t best = 0;
    for (size_t i = 1; i < 512; ++i)
      if (rows[k * 512 + i] > rows[k * 512 + best]) best = i;
    EXPECT_EQ(j["tokens"][k].get<size_t>(), best) << "step " << k;
  }
}

TEST(RunGenerated, SeededSamplingIsReproducible) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  auto toks = [&](const char* seed, const char* t) {
    return run_json({"-m", model, "-n", "24", "--temp", "1.5", "--seed", seed, "-t", t})["tokens"];
  };
  EXPECT_EQ(toks("42", "1"), toks("42", "3"));
  EXPECT_NE(toks("42", "1"), toks("43", "1"));
}

TEST(RunErrors, PromptLongerThanContextIsAClearError) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  CliResult r = run_tzero({"run", "-m", model, "-c", "8", "-p",
                           "the dog and the cat and the sun and the tree were happy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("longer than the context of 8 tokens"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunErrors, FullContextStopsGenerationCleanly) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  json j = run_json({"-m", model, "-c", "16", "-n", "100", "-p", "the dog"});
  EXPECT_EQ(j["stop_reason"], "context");
  EXPECT_EQ(j["prompt_tokens"].size() + j["tokens"].size(), 17u)
      << "16 positions evaluated, one more token sampled from the last";
}

TEST(RunErrors, BadFlagsExitTwo) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  EXPECT_EQ(run_tzero({"run", "-m", model, "-t", "0"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"run", "-m", model, "--nonsense"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"run"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"gen-model", "--preset", "nope", "-o", "/tmp/x.gguf"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"gen-model", "--dtype", "q8_k", "-o", "/tmp/x.gguf"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"run", "-m", model, "--mode", "sloppy"}).exit_code, 2);
  EXPECT_EQ(run_tzero({"run", "-m", model, "--kernels", "sse9"}).exit_code, 2);
}

// Fast mode drops the contract on purpose: on a multi-core machine its split reductions,
// added in arrival order, change the bits between runs (seen in the digest), while the
// deterministic mode of the same request never changes. Single-threaded, fast mode has one
// arrival order and stays stable.
TEST(RunModes, FastModeIsLabelledAndDeterministicModeIsStable) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  json det = run_json({"-m", model, "-n", "8", "-t", "2", "-p", "the dog"});
  json fast = run_json({"-m", model, "-n", "8", "-t", "1", "--mode", "fast", "-p", "the dog"});
  EXPECT_EQ(det["mode"], "deterministic");
  EXPECT_EQ(fast["mode"], "fast");
  EXPECT_EQ(fast["fingerprint_manifest"]["mode"], "fast");
  EXPECT_NE(fast["fingerprint"], det["fingerprint"]);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(run_json({"-m", model, "-n", "8", "-t", "2", "-p", "the dog"})["logits_digest"],
              det["logits_digest"]);
  EXPECT_EQ(run_json({"-m", model, "-n", "8", "-t", "1", "--mode", "fast", "-p",
                      "the dog"})["logits_digest"],
            fast["logits_digest"]);
}

// gen-model's llama-quantize mixes: which tensors get the higher types (use_more_bits over 12
// layers: 0, 3, 6, 9, 10, 11), the file type number, and that the file runs.
TEST(GenModelMixes, Q4KMAndQ5KMTypesFollowLlamaQuantize) {
  for (const auto& [mix, base, ftype] :
       {std::tuple{"q4_k_m", "q4_k", 15}, std::tuple{"q5_k_m", "q5_k", 17}}) {
    SCOPED_TRACE(mix);
    const std::string path = tzero::test::generated_model("110m", mix);
    tzero::GgufFile f(path);
    EXPECT_EQ(f.get_int("general.file_type", -1), ftype);
    auto type_of = [&](const std::string& name) {
      const tzero::GgufTensorInfo* t = f.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      return t ? std::string(tzero::traits(t->type).name) : std::string();
    };
    EXPECT_EQ(type_of("output.weight"), "q6_k");
    EXPECT_EQ(type_of("token_embd.weight"), base);
    for (int il = 0; il < 12; ++il) {
      const bool more = il == 0 || il == 3 || il == 6 || il == 9 || il >= 10;
      const std::string p = "blk." + std::to_string(il) + ".";
      EXPECT_EQ(type_of(p + "attn_v.weight"), more ? "q6_k" : base) << il;
      EXPECT_EQ(type_of(p + "ffn_down.weight"), more ? "q6_k" : base) << il;
      EXPECT_EQ(type_of(p + "attn_q.weight"), base) << il;
      EXPECT_EQ(type_of(p + "ffn_up.weight"), base) << il;
    }
    const CliResult r = run_tzero({"run", "-m", path, "-n", "4", "-p", "Once upon", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}
