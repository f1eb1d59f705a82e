// The key table (model/model_keys.h) against real files: for every architecture, each Honoured key
// changed alone (on a gen-model preset written by tzero and rewritten here) changes the logits or
// is refused naming the key or a tensor; each Refused key set to a value outside its neutral ones
// is refused naming the key and value; each NoMath key changes nothing and is not reported; a key
// the table does not know is named in a note and by `tzero info`; a tensor tzero does not read is
// refused; and docs/MODELS.md holds each architecture's table as `tzero info --keys` prints it.
// llama.cpp's own reading of the same files is compared by `make test-peer` (docs/PEER.md).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/hparams.h"
#include "model/model_keys.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using test::CliResult;
using test::run_tzero;

// Writes one value under a key.
using Adder = std::function<void(GgufWriter&, const std::string&)>;
Adder u32(uint32_t v) {
  return [v](GgufWriter& w, const std::string& k) { w.add_u32(k, v); };
}
Adder f32(float v) {
  return [v](GgufWriter& w, const std::string& k) { w.add_f32(k, v); };
}
Adder str(const std::string& v) {
  return [v](GgufWriter& w, const std::string& k) { w.add_string(k, v); };
}
Adder boolean(bool v) {
  return [v](GgufWriter& w, const std::string& k) { w.add_bool(k, v); };
}

// One edit of "{arch}.<suffix>": a new value, or (add null) the key removed.
struct Edit {
  std::string suffix;
  Adder add;
};

struct Variant {
  std::vector<Edit> base;     // applied to both files
  std::vector<Edit> variant;  // applied on top of base to the second
  bool embed = false;         // compare `tzero embed` outputs instead of `tzero run` logits
};

const char* kPrompt = "Once upon a time there was a";

// The preset's f32 file rewritten with edits (replaced in place, new keys at the end); when
// `tensors` is false one small tensor stands in for the weights (enough for read_hparams).
std::string rewrite(const std::string& preset, const std::string& arch, const std::string& name,
                    const std::vector<Edit>& edits, bool tensors = true,
                    const std::string& extra_tensor = "") {
  static std::map<std::string, std::unique_ptr<GgufFile>> files;
  auto& src = files[preset];
  if (!src) src = std::make_unique<GgufFile>(test::generated_model(preset, "f32"));
  std::map<std::string, const Edit*> by_key;
  for (const auto& e : edits) by_key[arch + "." + e.suffix] = &e;
  GgufWriter w;
  for (const auto& [key, v] : src->metadata()) {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      w.add_value(key, v);
    } else {
      if (it->second->add) it->second->add(w, key);
      by_key.erase(it);
    }
  }
  for (const auto& [key, e] : by_key)
    if (e->add) e->add(w, key);
  if (tensors) {
    for (const auto& t : src->tensors())
      w.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  } else {
    w.add_tensor("token_embd.weight", TensorType::F32, {4}, std::vector<uint8_t>(16, 0));
  }
  if (!extra_tensor.empty())
    w.add_tensor(extra_tensor, TensorType::F32, {256}, std::vector<uint8_t>(1024, 0));
  const std::string path = test::scratch_dir() + "/keys_" + name + ".gguf";
  w.write(path);
  return path;
}

// What a file computes: the logits digest of a short greedy run (or the embedding text), or the
// error line.
struct Outcome {
  bool ok = false;
  std::string result;  // digest / embedding, or stderr
  std::string err;
};
Outcome compute(const std::string& path, bool embed) {
  const CliResult r = embed ? run_tzero({"embed", "-m", path, "-p", kPrompt})
                            : run_tzero({"run", "-m", path, "-n", "3", "-p", kPrompt, "--json"});
  Outcome o;
  o.ok = r.exit_code == 0;
  o.err = r.err;
  if (!o.ok) {
    o.result = r.err;
  } else if (embed) {
    o.result = r.out;
  } else {
    o.result = nlohmann::json::parse(r.out).at("logits_digest").get<std::string>();
  }
  return o;
}

// The preset each architecture's keys are changed on (llama's expert keys: tiny-mixtral).
std::string preset_for(Arch arch, std::string_view suffix) {
  switch (arch) {
    case Arch::Llama:
      return suffix.rfind("expert_", 0) == 0 ? "tiny-mixtral" : "tiny";
    case Arch::Qwen2:
      return "tiny-qwen2";
    case Arch::Qwen3:
      return "tiny-qwen3";
    case Arch::Qwen2Moe:
      return "tiny-qwen2moe";
    case Arch::Qwen3Moe:
      return "tiny-qwen3moe";
    case Arch::Gemma2:
      return "tiny-gemma2";
    case Arch::Gemma3:
      return "tiny-gemma3";
    case Arch::Phi3:
      return "tiny-phi3";
    case Arch::GptOss:
      return "tiny-gpt-oss";
    case Arch::Glm4Moe:
      return "tiny-glm4moe";
    case Arch::DeepSeek2:
      return "tiny-deepseek2";
    case Arch::Qwen3Next:
      return "tiny-qwen3next";
    case Arch::Qwen35:
      return "tiny-qwen35";
    case Arch::Qwen35Moe:
      return "tiny-qwen35moe";
    case Arch::NemotronH:
      return "tiny-nemotron-h";
  }
  return "tiny";
}

const std::vector<std::pair<Arch, std::string>>& archs() {
  static const std::vector<std::pair<Arch, std::string>> a = {
      {Arch::Llama, "llama"},         {Arch::Qwen2, "qwen2"},
      {Arch::Qwen3, "qwen3"},         {Arch::Qwen2Moe, "qwen2moe"},
      {Arch::Qwen3Moe, "qwen3moe"},   {Arch::Gemma2, "gemma2"},
      {Arch::Gemma3, "gemma3"},       {Arch::Phi3, "phi3"},
      {Arch::GptOss, "gpt-oss"},      {Arch::Glm4Moe, "glm4moe"},
      {Arch::DeepSeek2, "deepseek2"}, {Arch::Qwen3Next, "qwen3next"},
      {Arch::Qwen35, "qwen35"},       {Arch::Qwen35Moe, "qwen35moe"},
      {Arch::NemotronH, "nemotron_h"}};
  return a;
}

// How each Honoured key is changed. Keys that fix tensor shapes are expected to be refused; the
// others to change the logits (the test accepts either, and fails only on "same logits, no
// complaint").
std::map<std::string, Variant> honoured_variants(Arch arch) {
  const bool moe = arch == Arch::Qwen2Moe || arch == Arch::Qwen3Moe || arch == Arch::Qwen3Next ||
                   arch == Arch::Qwen35Moe;
  std::map<std::string, Variant> v = {
      {"context_length", {{}, {{"context_length", u32(4)}}}},
      {"embedding_length", {{}, {{"embedding_length", u32(128)}}}},
      {"block_count", {{}, {{"block_count", u32(1)}}}},
      {"attention.head_count", {{}, {{"attention.head_count", u32(2)}}}},
      {"attention.head_count_kv", {{}, {{"attention.head_count_kv", u32(4)}}}},
      {"attention.key_length", {{}, {{"attention.key_length", u32(32)}}}},
      {"attention.value_length", {{}, {{"attention.value_length", u32(32)}}}},
      {"attention.layer_norm_rms_epsilon",
       {{}, {{"attention.layer_norm_rms_epsilon", f32(0.25f)}}}},
      {"rope.freq_base", {{}, {{"rope.freq_base", f32(17.0f)}}}},
      {"rope.dimension_count", {{}, {{"rope.dimension_count", u32(16)}}}},
      {"rope.scaling.type",
       {{{"rope.scaling.type", str("linear")}, {"rope.scaling.factor", f32(4.0f)}},
        {{"rope.scaling.type", str("yarn")}}}},
      {"rope.scaling.factor", {{}, {{"rope.scaling.factor", f32(4.0f)}}}},
      // The older key counts only where rope.scaling.factor is absent.
      {"rope.scale_linear",
       {{{"rope.scaling.factor", nullptr}}, {{"rope.scale_linear", f32(4.0f)}}}},
      {"rope.scaling.attn_factor", {{}, {{"rope.scaling.attn_factor", f32(1.5f)}}}},
      {"rope.scaling.original_context_length",
       {{{"rope.scaling.type", str("yarn")}, {"rope.scaling.factor", f32(4.0f)}},
        {{"rope.scaling.original_context_length", u32(16)}}}},
      {"pooling_type", {{{"pooling_type", u32(1)}}, {{"pooling_type", u32(3)}}, true}},
      {"expert_count", {{}, {{"expert_count", u32(4)}}}},
      {"expert_used_count", {{}, {{"expert_used_count", u32(1)}}}},
      {"expert_feed_forward_length", {{}, {{"expert_feed_forward_length", u32(128)}}}},
      {"expert_shared_feed_forward_length",
       {{}, {{"expert_shared_feed_forward_length", u32(128)}}}},
      {"attention.sliding_window", {{}, {{"attention.sliding_window", u32(2)}}}},
      {"attention.sliding_window_pattern", {{}, {{"attention.sliding_window_pattern", u32(3)}}}},
      {"rope.freq_base_swa", {{}, {{"rope.freq_base_swa", f32(17.0f)}}}},
      {"attn_logit_softcapping", {{}, {{"attn_logit_softcapping", f32(0.5f)}}}},
      {"final_logit_softcapping", {{}, {{"final_logit_softcapping", f32(0.5f)}}}},
      {"expert_shared_count", {{}, {{"expert_shared_count", u32(2)}}}},
      {"expert_weights_scale", {{}, {{"expert_weights_scale", f32(0.5f)}}}},
      {"expert_weights_norm", {{}, {{"expert_weights_norm", boolean(false)}}}},
      {"leading_dense_block_count", {{}, {{"leading_dense_block_count", u32(2)}}}},
      {"nextn_predict_layers", {{}, {{"nextn_predict_layers", u32(2)}}}},
      {"expert_gating_func", {{}, {{"expert_gating_func", u32(1)}}}},
      {"attention.q_lora_rank", {{}, {{"attention.q_lora_rank", u32(48)}}}},
      {"attention.kv_lora_rank", {{}, {{"attention.kv_lora_rank", u32(32)}}}},
      {"attention.key_length_mla", {{}, {{"attention.key_length_mla", u32(40)}}}},
      {"attention.value_length_mla", {{}, {{"attention.value_length_mla", u32(16)}}}},
      {"rope.scaling.yarn_log_multiplier", {{}, {{"rope.scaling.yarn_log_multiplier", f32(0.3f)}}}},
      {"expert_group_count",
       {{{"expert_group_used_count", u32(2)}}, {{"expert_group_count", u32(4)}}}},
      {"expert_group_used_count",
       {{{"expert_group_count", u32(4)}, {"expert_group_used_count", u32(2)}},
        {{"expert_group_used_count", u32(1)}}}},
  };
  // The Gated DeltaNet hybrids: sizes that fix tensor shapes (refused), sections that leave a
  // rotated pair unrotated (refused); their presets rotate 16 dimensions already.
  v["ssm.conv_kernel"] = {{}, {{"ssm.conv_kernel", u32(3)}}};
  v["ssm.state_size"] = {{}, {{"ssm.state_size", u32(16)}}};
  v["ssm.group_count"] = {{}, {{"ssm.group_count", u32(1)}}};
  v["ssm.time_step_rank"] = {{}, {{"ssm.time_step_rank", u32(2)}}};
  v["ssm.inner_size"] = {{}, {{"ssm.inner_size", u32(64)}}};
  v["full_attention_interval"] = {{}, {{"full_attention_interval", u32(3)}}};
  v["rope.dimension_sections"] = {
      {}, {{"rope.dimension_sections", [](GgufWriter& w, const std::string& k) {
              w.add_i32_array(k, {4, 2, 2, 0});
            }}}};
  if (arch == Arch::Qwen3Next || arch == Arch::Qwen35 || arch == Arch::Qwen35Moe)
    v["rope.dimension_count"] = {{}, {{"rope.dimension_count", u32(8)}}};
  if (arch == Arch::NemotronH) {  // its preset's residual is 128 wide, heads of 32, state 16
    v["embedding_length"] = {{}, {{"embedding_length", u32(64)}}};
    v["attention.key_length"] = {{}, {{"attention.key_length", u32(16)}}};
    v["attention.value_length"] = {{}, {{"attention.value_length", u32(16)}}};
    v["ssm.state_size"] = {{}, {{"ssm.state_size", u32(8)}}};
  }
  if (arch == Arch::DeepSeek2) {  // its preset has 16 rotary dims and 4 groups (2 used) already
    v["rope.dimension_count"] = {{}, {{"rope.dimension_count", u32(8)}}};
    v["rope.scaling.factor"] = {{}, {{"rope.scaling.factor", f32(8.0f)}}};
    v["expert_group_count"] = {{}, {{"expert_group_count", u32(8)}}};
    v["expert_group_used_count"] = {{}, {{"expert_group_used_count", u32(3)}}};
  }
  if (arch == Arch::Glm4Moe || arch == Arch::DeepSeek2 || arch == Arch::Qwen3Next ||
      arch == Arch::Qwen35Moe)  // experts 128 wide already
    v["expert_feed_forward_length"] = {{}, {{"expert_feed_forward_length", u32(64)}}};
  // The experts' own width is given in these files, so the dense width matters only as its
  // default: without it, n_ff / k no longer fits the expert tensors.
  v["feed_forward_length"] =
      moe ? Variant{{},
                    {{"feed_forward_length", u32(128)}, {"expert_feed_forward_length", nullptr}}}
          : Variant{{}, {{"feed_forward_length", u32(128)}}};
  return v;
}

TEST(ModelKeys, EveryHonouredKeyChangesTheResultOrIsRefused) {
  int checked = 0;
  for (const auto& [arch, name] : archs()) {
    const auto variants = honoured_variants(arch);
    for (const auto& key : model_keys(arch)) {
      if (key.use != KeyUse::Honoured) continue;
      const std::string full = name + "." + std::string(key.suffix);
      auto it = variants.find(std::string(key.suffix));
      if (it == variants.end()) {
        ADD_FAILURE() << full << " is honoured and has no test here";
        continue;
      }
      const Variant& var = it->second;
      const std::string preset = preset_for(arch, key.suffix);
      const std::string tag = name + "_" + std::string(key.suffix);
      const Outcome base = compute(rewrite(preset, name, tag + "_a", var.base), var.embed);
      ASSERT_TRUE(base.ok) << full << ": the base file fails: " << base.err;
      std::vector<Edit> edits = var.base;
      for (const auto& e : var.variant) edits.push_back(e);
      const Outcome changed = compute(rewrite(preset, name, tag + "_b", edits), var.embed);
      // Keys that fix tensor shapes (or the context) may be refused; the others must run.
      static const std::set<std::string> may_refuse = {"context_length",
                                                       "embedding_length",
                                                       "block_count",
                                                       "feed_forward_length",
                                                       "attention.head_count",
                                                       "attention.head_count_kv",
                                                       "attention.key_length",
                                                       "attention.value_length",
                                                       "rope.dimension_count",
                                                       "expert_count",
                                                       "expert_feed_forward_length",
                                                       "expert_shared_feed_forward_length",
                                                       "expert_shared_count",
                                                       "leading_dense_block_count",
                                                       "nextn_predict_layers",
                                                       "attention.q_lora_rank",
                                                       "attention.kv_lora_rank",
                                                       "attention.key_length_mla",
                                                       "attention.value_length_mla",
                                                       "ssm.conv_kernel",
                                                       "ssm.state_size",
                                                       "ssm.group_count",
                                                       "ssm.time_step_rank",
                                                       "ssm.inner_size",
                                                       "full_attention_interval",
                                                       "rope.dimension_sections"};
      if (changed.ok) {
        EXPECT_NE(changed.result, base.result)
            << full << ": changing it alone changes nothing: it is not honoured";
      } else {
        EXPECT_TRUE(may_refuse.count(std::string(key.suffix)))
            << full << ": refused where it should run: " << changed.err;
        EXPECT_EQ(changed.err.find('\n'), changed.err.size() - 1) << changed.err;
        EXPECT_NE(changed.err.find("tzero: error: "), std::string::npos) << changed.err;
      }
      ++checked;
    }
  }
  std::printf("honoured keys checked: %d\n", checked);
  EXPECT_GT(checked, 100);
}

// A value outside the neutral ones: the first neutral value plus 3, the other boolean, or any
// value when none is neutral.
Adder refused_value(std::string_view values) {
  const std::string first(values.substr(0, values.find('|')));
  if (values.empty()) return u32(7);
  if (first == "true") return boolean(false);
  if (first == "false") return boolean(true);
  return u32(uint32_t(std::stoul(first) + 3));
}

TEST(ModelKeys, EveryRefusedKeyIsRefusedWithItsName) {
  int checked = 0;
  for (const auto& [arch, name] : archs()) {
    for (const auto& key : model_keys(arch)) {
      if (key.use != KeyUse::Refused) continue;
      const std::string full = name + "." + std::string(key.suffix);
      const std::string preset = preset_for(arch, key.suffix);
      const std::string path =
          rewrite(preset, name, name + "_refused",
                  {{std::string(key.suffix), refused_value(key.values)}}, false);
      const GgufFile f(path);
      try {
        read_hparams(f);
        ADD_FAILURE() << full << " set to a value outside '" << key.values << "' is not refused";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'" + full + "'"), std::string::npos)
            << full << ": " << e.what();
      }
      // Its neutral values are accepted.
      if (!key.values.empty()) {
        std::string_view rest = key.values;
        while (!rest.empty()) {
          const std::string one(rest.substr(0, rest.find('|')));
          rest = rest.find('|') == std::string_view::npos ? "" : rest.substr(rest.find('|') + 1);
          const Adder add = one == "true"    ? boolean(true)
                            : one == "false" ? boolean(false)
                                             : u32(uint32_t(std::stoul(one)));
          const GgufFile g(
              rewrite(preset, name, name + "_neutral", {{std::string(key.suffix), add}}, false));
          EXPECT_NO_THROW(read_hparams(g)) << full << " = " << one << " is refused";
        }
      }
      ++checked;
    }
  }
  std::printf("refused keys checked: %d\n", checked);
  EXPECT_GT(checked, 150);
}

TEST(ModelKeys, NoMathKeysChangeNothingAndAreNotReported) {
  for (const auto& [arch, name] : archs()) {
    for (const auto& key : model_keys(arch)) {
      if (key.use != KeyUse::NoMath) continue;
      const std::string preset = preset_for(arch, key.suffix);
      const Outcome base = compute(rewrite(preset, name, name + "_nomath_a", {}), false);
      const std::string path =
          rewrite(preset, name, name + "_nomath_b", {{std::string(key.suffix), u32(7)}});
      const CliResult r = run_tzero({"run", "-m", path, "-n", "3", "-p", kPrompt, "--json"});
      ASSERT_EQ(r.exit_code, 0) << name << "." << key.suffix << ": " << r.err;
      EXPECT_EQ(nlohmann::json::parse(r.out).at("logits_digest").get<std::string>(), base.result)
          << name << "." << key.suffix;
      EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
    }
  }
}

// A key the table does not know: one note on stderr naming it, the same logits, and `tzero info`
// lists it. Keys outside the architecture's namespace are not the table's business.
TEST(ModelKeys, UnknownKeysAreNamedNotIgnoredSilently) {
  const Outcome base = compute(rewrite("tiny-qwen3", "qwen3", "unknown_a", {}), false);
  const std::string path = rewrite(
      "tiny-qwen3", "qwen3", "unknown_b",
      {{"attention.temperature_tuning", boolean(true)}, {"tzero_test.some_future_key", f32(2.0f)}});
  const CliResult r = run_tzero({"run", "-m", path, "-n", "3", "-p", kPrompt, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("logits_digest").get<std::string>(), base.result);
  EXPECT_NE(r.err.find("tzero: note: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 metadata keys of 'qwen3' that tzero does not know"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("qwen3.attention.temperature_tuning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("qwen3.tzero_test.some_future_key"), std::string::npos) << r.err;
  const CliResult info = run_tzero({"info", "-m", path});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("keys of 'qwen3' tzero does not know (not applied): \n"
                          "  qwen3.attention.temperature_tuning\n"
                          "  qwen3.tzero_test.some_future_key\n"),
            std::string::npos)
      << info.out;
  const CliResult clean = run_tzero({"info", "-m", test::generated_model("tiny-qwen3", "f32")});
  EXPECT_NE(clean.out.find("keys of 'qwen3' tzero does not know (not applied): none"),
            std::string::npos);
}

// A tensor tzero does not read (llama.cpp would apply llama's attention-output bias) is refused.
TEST(ModelKeys, TensorsTzeroDoesNotReadAreRefused) {
  const std::string path =
      rewrite("tiny", "llama", "extra_tensor", {}, true, "blk.0.attn_output.bias");
  const CliResult r = run_tzero({"run", "-m", path, "-n", "1", "-p", kPrompt});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_output.bias' is not one tzero reads for 'llama'"),
            std::string::npos)
      << r.err;
}

// gemma3's window keys as llama.cpp reads them: without attention.sliding_window every layer is
// global (as a pattern of 1 is); the period and the local base change what the file computes.
TEST(ModelKeys, Gemma3WindowKeysAsLlamaCppReadsThem) {
  const auto digest = [](const std::string& tag, const std::vector<Edit>& e) {
    const Outcome o = compute(rewrite("tiny-gemma3", "gemma3", "g3_" + tag, e), false);
    EXPECT_TRUE(o.ok) << tag << ": " << o.err;
    return o.result;
  };
  const std::string windowed = digest("base", {{"attention.sliding_window", u32(2)}});
  const std::string none = digest("none", {{"attention.sliding_window", nullptr}});
  const std::string zero = digest("zero", {{"attention.sliding_window", u32(0)}});
  const std::string period1 = digest(
      "p1", {{"attention.sliding_window", u32(2)}, {"attention.sliding_window_pattern", u32(1)}});
  EXPECT_EQ(none, zero);
  EXPECT_EQ(none, period1);  // a period of 1: no layer slides
  EXPECT_NE(none, windowed);
  const std::string period6 = digest(
      "p6", {{"attention.sliding_window", u32(2)}, {"attention.sliding_window_pattern", u32(6)}});
  EXPECT_EQ(period6, windowed);  // 6 is the default
  const std::string base10k =
      digest("b10k", {{"attention.sliding_window", u32(2)}, {"rope.freq_base_swa", f32(10000.0f)}});
  EXPECT_EQ(base10k, windowed);  // 10000 is the default
}

// docs/MODELS.md holds every architecture's table exactly as `tzero info --keys` prints it.
TEST(ModelKeys, DocsHoldEveryTable) {
  std::ifstream in(std::string(TZ_SOURCE_DIR) + "/docs/MODELS.md");
  ASSERT_TRUE(in.good()) << "docs/MODELS.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const auto& [arch, name] : archs()) {
    const CliResult r = run_tzero({"info", "--keys", name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(doc.find(r.out), std::string::npos)
        << "docs/MODELS.md does not hold the key table of " << name << " as `tzero info --keys "
        << name << "` prints it:\n"
        << r.out;
  }
}

}  // namespace
}  // namespace tzero
