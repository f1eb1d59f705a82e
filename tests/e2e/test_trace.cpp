// Trace and diff: traces of the same request at different thread counts and prefill chunks are
// identical, and one flipped bit in one op at one layer and position is named exactly by diff.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

using nlohmann::json;
using tzero::test::run_tzero;

namespace {
std::string trace_of(const std::string& model, const std::string& name,
                     std::vector<std::string> extra) {
  const std::string path = tzero::test::scratch_dir() + "/" + name + ".trace";
  std::vector<std::string> args = {"run", "-m", model,     "-p", "the dog saw a big tree",
                                   "-n",  "5",  "--trace", path, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_tzero(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}
}  // namespace

TEST(Trace, IdenticalAcrossThreadsAndChunks) {
  const std::string model = tzero::test::generated_model("tiny", "q4_0");
  const std::string a = trace_of(model, "t1", {"-t", "1"});
  const std::string b = trace_of(model, "t4", {"-t", "4"});
  const std::string c = trace_of(model, "b1", {"-t", "2", "-b", "1"});
  for (const std::string& other : {b, c}) {
    const auto r = run_tzero({"diff", a, other, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    const json j = json::parse(r.out);
    EXPECT_TRUE(j["identical"].get<bool>());
    EXPECT_GT(j["shared"].get<int>(), 100);
    EXPECT_EQ(j["only_a"], 0);
  }
}

TEST(Trace, DiffNamesThePerturbedLayerOpAndPosition) {
  const std::string model = tzero::test::generated_model("tiny-qwen3", "f16");
  const std::string base = trace_of(model, "base", {"-t", "2", "--trace-dump", "result_output"});
  for (const auto& [layer, op, pos] :
       {std::tuple{1, "attn_norm", 3}, {0, "ffn_gate", 8}, {1, "Kcur", 0}}) {
    const std::string spec = std::to_string(layer) + ":" + op + ":" + std::to_string(pos);
    const std::string p = trace_of(model, "p" + std::to_string(layer) + op,
                                   {"-t", "2", "--perturb", spec, "--trace-dump", "result_output"});
    const auto r = run_tzero({"diff", base, p, "--json"});
    EXPECT_EQ(r.exit_code, 1) << spec;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["first"]["layer"], layer) << spec;
    EXPECT_EQ(j["first"]["op"], op) << spec;
    EXPECT_EQ(j["first"]["pos"], pos) << spec;
    const auto text = run_tzero({"diff", base, p});
    EXPECT_NE(text.out.find("first divergence: position " + std::to_string(pos) + ", blk." +
                            std::to_string(layer) + ", op " + op),
              std::string::npos)
        << text.out;
  }
}

// A mixture-of-experts model traces its intermediates under llama.cpp's names (ffn_moe_*), the
// same at any thread count and chunking, and diff names a flipped bit in the expert combine in
// words.
TEST(Trace, ExpertIntermediatesAreNamedAndTheCombineIsFound) {
  const std::string model = tzero::test::generated_model("tiny-qwen2moe", "q8_0");
  const std::string base = trace_of(model, "moe_base", {"-t", "2"});
  const std::string other = trace_of(model, "moe_t3", {"-t", "3", "-b", "2"});
  const auto same = run_tzero({"diff", base, other, "--json"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  const json js = json::parse(same.out);
  EXPECT_TRUE(js["identical"].get<bool>());
  const std::string p = trace_of(model, "moe_p", {"-t", "2", "--perturb", "1:ffn_moe_out:4"});
  const auto r = run_tzero({"diff", base, p, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["first"]["layer"], 1);
  EXPECT_EQ(j["first"]["op"], "ffn_moe_out");
  EXPECT_EQ(j["first"]["what"], "the expert combine");
  const auto text = run_tzero({"diff", base, p});
  EXPECT_NE(text.out.find("first divergence: position 4, blk.1, op ffn_moe_out (the expert "
                          "combine)"),
            std::string::npos)
      << text.out;
  // Every MoE intermediate is in the trace, in forward order.
  const std::string bytes = tzero::test::read_file(base);
  for (const char* name :
       {"ffn_moe_logits", "ffn_moe_probs", "ffn_moe_topk", "ffn_moe_weights", "ffn_moe_gate",
        "ffn_moe_up", "ffn_moe_swiglu", "ffn_moe_down", "ffn_moe_out", "ffn_shexp",
        "ffn_shexp_gate_inp", "ffn_shexp_out", "ffn_out"})
    EXPECT_NE(bytes.find(name), std::string::npos) << name;
}

// gemma3's own intermediates are named, and a flip in a windowed layer's post-norm is found
// there and said in words.
TEST(Trace, Gemma3IntermediatesAreNamedAndAPostNormFlipIsFound) {
  const std::string model = tzero::test::generated_model("tiny-gemma3", "q8_0");
  const std::string base = trace_of(model, "g3", {"-t", "2"});
  const std::string bytes = tzero::test::read_file(base);
  for (const char* name : {"inp_scaled", "attn_post_norm", "ffn_geglu", "ffn_post_norm"})
    EXPECT_NE(bytes.find(name), std::string::npos) << name;
  const std::string p = trace_of(model, "g3_p", {"-t", "2", "--perturb", "2:ffn_post_norm:5"});
  const auto r = run_tzero({"diff", base, p, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["first"]["layer"], 2);
  EXPECT_EQ(j["first"]["op"], "ffn_post_norm");
  EXPECT_EQ(j["first"]["what"], "the feed-forward output norm");
}

TEST(Trace, TruncatedTraceKeepsItsPrefixAndBadFilesAreErrors) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const std::string a = trace_of(model, "full", {});
  const std::string bytes = tzero::test::read_file(a);
  const std::string cut = tzero::test::scratch_dir() + "/cut.trace";
  tzero::test::write_file(cut, bytes.substr(0, bytes.size() * 2 / 3 + 5));
  const auto r = run_tzero({"diff", a, cut, "--json"});
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["truncated_b"].get<bool>());
  // The shared prefix agrees, but a trace that covers less is not identical (exit 1).
  EXPECT_TRUE(j["shared_identical"].get<bool>()) << "the shared prefix is identical";
  EXPECT_FALSE(j["identical"].get<bool>());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_GT(j["only_a"].get<int>(), 0);
  const std::string junk = tzero::test::scratch_dir() + "/junk.trace";
  tzero::test::write_file(junk, "not a trace at all");
  const auto bad = run_tzero({"diff", a, junk});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not a tzero trace"), std::string::npos);
}
