#include "model/model_keys.h"

#include <cstdlib>

#include "base/excerpt.h"

namespace tzero {

namespace {

using K = KeyUse;

// Keys llama.cpp's general loader reads for every architecture here.
const std::vector<ModelKey> kCommon = {
    {"context_length", K::Honoured, "required",
     "the trained context: the default context, and the original context of rope scaling"},
    {"embedding_length", K::Honoured, "required", "the residual width (n_embd)"},
    {"block_count", K::Honoured, "required", "the number of layers"},
    {"feed_forward_length", K::Honoured, "required (optional with experts of their own width)",
     "the feed-forward width; an array must have one equal value per layer"},
    {"attention.head_count", K::Honoured, "required",
     "query heads; an array must have one equal value per layer"},
    {"attention.head_count_kv", K::Honoured, "attention.head_count",
     "key/value heads (GQA); an array must have one equal value per layer"},
    {"attention.key_length", K::Honoured, "embedding_length / head_count", "the head size"},
    {"attention.value_length", K::Honoured, "embedding_length / head_count",
     "the value head size: must equal key_length"},
    {"attention.layer_norm_rms_epsilon", K::Honoured, "required", "RMSNorm's epsilon"},
    {"rope.freq_base", K::Honoured, "10000", "the rope base (theta)"},
    {"rope.dimension_count", K::Honoured, "attention.key_length",
     "rotated dimensions of each head (partial rotary); llama: must equal the head size"},
    {"rope.scaling.type", K::Honoured, "linear",
     "none, linear, yarn or longrope (others refused); none ignores the factor"},
    {"rope.scaling.factor", K::Honoured, "1 (rope.scale_linear when present)",
     "rope positions divided by it (linear, yarn, longrope)"},
    {"rope.scale_linear", K::Honoured, "1", "the older name of rope.scaling.factor"},
    {"rope.scaling.attn_factor", K::Honoured, "1", "multiplies every rope cos and sin"},
    {"rope.scaling.original_context_length", K::Honoured, "context_length",
     "yarn's correction range; above it LongRoPE takes its long factors"},
    {"rope.scaling.finetuned", K::NoMath, "",
     "a label: llama.cpp stores it and computes nothing with it"},
    {"vocab_size", K::NoMath, "",
     "a label in llama.cpp (its model-size name); the vocabulary is the token list's"},
    {"pooling_type", K::Honoured, "mean for embedding requests (llama.cpp: none)",
     "how embedding requests pool by default (0 none, 1 mean, 2 cls, 3 last)"},
    {"attention.causal", K::Refused, "true", "bidirectional attention is not supported"},
    {"embedding_length_out", K::Refused, "0", "an output width other than n_embd"},
    {"attention.key_length_swa", K::Refused, "",
     "head sizes that differ on sliding-window layers are not supported"},
    {"attention.value_length_swa", K::Refused, "",
     "head sizes that differ on sliding-window layers are not supported"},
    {"rope.dimension_count_swa", K::Refused, "",
     "rotary sizes that differ on sliding-window layers are not supported"},
    {"classifier.output_labels", K::Refused, "",
     "classifier heads are not supported (tzero computes the language-model head)"},
    {"rope.scaling.alpha", K::Refused, "0", "XDRoPE's NTK alpha (hunyuan) is not supported"},
    {"rope.scaling.yarn_ext_factor", K::Refused, "",
     "llama.cpp does not read it for this architecture (yarn: 1, others: 0)"},
    {"rope.scaling.yarn_attn_factor", K::Refused, "",
     "llama.cpp does not read it for this architecture"},
    {"rope.scaling.yarn_beta_fast", K::Refused, "32",
     "llama.cpp does not read it for this architecture (it uses 32)"},
    {"rope.scaling.yarn_beta_slow", K::Refused, "1",
     "llama.cpp does not read it for this architecture (it uses 1)"},
    {"rope.scaling.yarn_log_multiplier", K::Refused, "0",
     "DeepSeek's yarn attention factor: llama.cpp does not read it for this architecture"},
    {"attention.scale", K::Refused, "0",
     "llama.cpp does not read it for this architecture (it scales by 1/sqrt(head size))"},
    {"embedding_scale", K::Refused, "0|1", "llama.cpp does not read it for this architecture"},
    {"logit_scale", K::Refused, "0|1", "llama.cpp does not read it for this architecture"},
    {"residual_scale", K::Refused, "0|1", "llama.cpp does not read it for this architecture"},
    {"attention.layer_norm_epsilon", K::NoMath, "",
     "llama.cpp's converter writes it when a config has one; this architecture normalises with "
     "RMSNorm (attention.layer_norm_rms_epsilon), in llama.cpp too"},
    {"use_parallel_residual", K::Refused, "false", "parallel residual blocks are not supported"},
    {"rope.dimension_sections", K::Refused, "", "multi-section rope (M-RoPE) is not supported"},
    {"leading_dense_block_count", K::Refused, "0",
     "dense leading layers: llama.cpp does not read it for this architecture"},
    {"expert_group_count", K::Refused, "0|1", "group-limited expert routing is not supported yet"},
    {"expert_group_used_count", K::Refused, "0|1",
     "group-limited expert routing is not supported yet"},
};

// Keys of architectures without experts: a file that has them is refused.
const std::vector<ModelKey> kDense = {
    {"expert_count", K::Refused, "0", "this architecture has no experts"},
    {"expert_used_count", K::Refused, "0", "this architecture has no experts"},
};

// Keys of architectures with experts (llama as Mixtral, qwen2moe, qwen3moe).
std::vector<ModelKey> experts(std::string_view norm, bool own_width, bool shared,
                              std::string_view gating = "1") {
  std::vector<ModelKey> v = {
      {"expert_count", K::Honoured, "0", "experts per layer (0: dense), at most 512"},
      {"expert_used_count", K::Honoured, "0", "experts each token runs (top k)"},
      {"expert_gating_func", K::Refused, gating,
       gating == "1" ? "softmax gating only: llama.cpp does not read it for this architecture"
                     : "softmax over the k largest logits (3) only: llama.cpp does not read it "
                       "for this architecture"},
      {"expert_weights_norm", K::Refused, norm,
       "the renormalisation of the top-k weights is fixed for this architecture"},
      {"expert_weights_scale", K::Refused, "0|1",
       "llama.cpp does not read it for this architecture"},
      {"expert_shared_count", K::Refused, shared ? "0|1" : "0",
       shared ? "one shared expert only" : "this architecture has no shared experts"},
  };
  if (own_width)
    v.push_back({"expert_feed_forward_length", K::Honoured, "feed_forward_length / k",
                 "the width of each expert"});
  if (shared)
    v.push_back({"expert_shared_feed_forward_length", K::Honoured, "feed_forward_length",
                 "the width of the shared expert"});
  return v;
}

const std::vector<ModelKey> kNoWindow = {
    {"attention.sliding_window", K::Refused, "0",
     "llama.cpp does not read a sliding window for this architecture"},
    {"attn_logit_softcapping", K::Refused, "0", "llama.cpp does not read it for this architecture"},
    {"final_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for this architecture"},
};

const std::vector<ModelKey> kGemma2 = {
    {"attention.sliding_window", K::Honoured, "4096", "the window of the sliding-window layers"},
    {"attention.sliding_window_pattern", K::Honoured, "2",
     "period P: layer il slides when il % P < P - 1 (0: every layer); an array is refused"},
    {"rope.freq_base_swa", K::Honoured, "rope.freq_base", "the rope base of sliding layers"},
    {"attn_logit_softcapping", K::Honoured, "50", "attention scores c * tanh(s / c)"},
    {"final_logit_softcapping", K::Honoured, "30", "logits c * tanh(l / c)"},
};

const std::vector<ModelKey> kGemma3 = {
    {"attention.sliding_window", K::Honoured, "0 (no sliding window)",
     "the window of the sliding-window layers"},
    {"attention.sliding_window_pattern", K::Honoured, "6",
     "period P: layer il slides when il % P < P - 1 (0: every layer); an array is refused"},
    {"rope.freq_base_swa", K::Honoured, "10000",
     "the rope base of sliding layers (unscaled: rope.scaling applies to the others)"},
    {"final_logit_softcapping", K::Honoured, "0 (none)", "logits c * tanh(l / c)"},
    {"attn_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for gemma3 (no attention soft-capping)"},
};

const std::vector<ModelKey> kGptOss = {
    {"attention.sliding_window", K::Honoured, "required",
     "the window of the sliding-window layers"},
    {"attention.sliding_window_pattern", K::Honoured, "2",
     "period P: layer il slides when il % P < P - 1 (the even layers); an array is refused"},
    {"rope.freq_base_swa", K::Honoured, "rope.freq_base",
     "the rope base of sliding layers (their scale is the model's)"},
    {"attn_logit_softcapping", K::Refused, "0", "llama.cpp does not read it for this architecture"},
    {"final_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for this architecture"},
};

const std::vector<ModelKey> kGlm4Moe = {
    {"expert_shared_count", K::Honoured, "required",
     "ungated shared experts, each expert_feed_forward_length wide, added to every token's"},
    {"expert_weights_scale", K::Honoured, "0 (none)", "the chosen experts' weights times it"},
    {"expert_weights_norm", K::Honoured, "false",
     "renormalise the chosen experts' weights to sum 1"},
    {"expert_gating_func", K::Refused, "0|2",
     "sigmoid scores only (2; absent or 0 means sigmoid for this architecture)"},
    {"leading_dense_block_count", K::Honoured, "0",
     "the first N layers are dense (feed_forward_length wide)"},
    {"nextn_predict_layers", K::Honoured, "0",
     "the last N blocks are NextN (multi-token prediction) layers: accepted, never run"},
    {"attn_logit_softcapping", K::Refused, "0", "llama.cpp does not read it for this architecture"},
    {"final_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for this architecture"},
    {"attention.sliding_window", K::Refused, "0",
     "llama.cpp does not read a sliding window for this architecture"},
};

const std::vector<ModelKey> kDeepSeek2 = {
    {"expert_shared_count", K::Honoured, "required",
     "ungated shared experts, each expert_feed_forward_length wide, added to every token's"},
    {"expert_weights_scale", K::Honoured, "0 (none)", "the chosen experts' weights times it"},
    {"expert_weights_norm", K::Honoured, "false",
     "renormalise the chosen experts' weights to sum 1"},
    {"expert_gating_func", K::Honoured, "0 (softmax, DeepSeek-V2)",
     "the experts' scores: 1 softmax, 2 sigmoid (V3, R1, Kimi-K2); others refused"},
    {"leading_dense_block_count", K::Honoured, "0",
     "the first N layers are dense (feed_forward_length wide)"},
    {"attention.q_lora_rank", K::Honoured, "0 (attn_q, no query compression)",
     "the queries' compressed width (attn_q_a, attn_q_a_norm, attn_q_b)"},
    {"attention.kv_lora_rank", K::Honoured, "required",
     "the latent's width: the cached key row is it plus the rope part"},
    {"attention.key_length_mla", K::Honoured, "required (older conversions are refused)",
     "each query head: no-rope part + rope part (its root scales the scores)"},
    {"attention.value_length_mla", K::Honoured, "required (older conversions are refused)",
     "each head's output width after attn_v_b"},
    {"rope.scaling.yarn_log_multiplier", K::Honoured, "0",
     "YaRN's mscale_all_dim times 0.1: the scores scale by mscale^2, cos and sin by 1"},
    {"attention.temperature_scale", K::Refused, "0",
     "position-dependent query temperature (Mistral-Large) is not supported"},
    {"attention.temperature_length", K::Refused, "0",
     "position-dependent query temperature (Mistral-Large) is not supported"},
    {"attn_logit_softcapping", K::Refused, "0", "llama.cpp does not read it for this architecture"},
    {"final_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for this architecture"},
    {"attention.sliding_window", K::Refused, "0",
     "llama.cpp does not read a sliding window for this architecture"},
};

// The Gated DeltaNet hybrids (qwen3next, qwen35, qwen35moe; kernels/delta_net.h).
const std::vector<ModelKey> kDeltaNet = {
    {"ssm.conv_kernel", K::Honoured, "required", "the short convolution's width K"},
    {"ssm.state_size", K::Honoured, "required", "the width of a key head (and of a value head)"},
    {"ssm.group_count", K::Honoured, "required", "key heads of the linear-attention layers"},
    {"ssm.time_step_rank", K::Honoured, "required",
     "value heads of the linear-attention layers (a multiple of the key heads)"},
    {"ssm.inner_size", K::Honoured, "required",
     "value heads x their width: must be time_step_rank x state_size (llama.cpp's square state)"},
    {"full_attention_interval", K::Honoured, "4",
     "layer il is full attention when (il + 1) % N == 0, linear attention otherwise"},
    {"attention.recurrent_layers", K::Refused, "",
     "per-layer recurrent flags are not supported (llama.cpp's converter writes the interval)"},
};

// nemotron_h (Mamba-2 hybrid): per-layer kinds by the kv heads and widths, the Mamba-2 sizes,
// and no rotary embedding (its rope keys are labels).
std::vector<ModelKey> nemotron_h_table() {
  std::vector<ModelKey> v = kCommon;
  const std::string_view no_rope =
      "nemotron_h has no rotary embedding: llama.cpp reads it and never applies it";
  for (auto& k : v) {
    if (k.suffix.rfind("rope.", 0) == 0 && k.use == K::Honoured)
      k = {k.suffix, K::NoMath, "", no_rope};
    if (k.suffix == "rope.scaling.finetuned") k = {k.suffix, K::NoMath, "", no_rope};
    if (k.suffix == "attention.head_count_kv")
      k = {k.suffix, K::Honoured, "attention.head_count",
           "per layer: 0 (with feed_forward_length 0) marks a Mamba-2 layer; one value on the "
           "attention layers"};
    if (k.suffix == "feed_forward_length")
      k = {k.suffix, K::Honoured, "0",
           "per layer: > 0 marks an MLP layer (squared ReLU, one width for all), 0 an attention "
           "or Mamba-2 layer"};
  }
  const std::vector<ModelKey> own = {
      {"ssm.conv_kernel", K::Honoured, "required", "the short convolution's width K"},
      {"ssm.state_size", K::Honoured, "required", "the state size N of each Mamba-2 head row"},
      {"ssm.group_count", K::Honoured, "required", "groups of B and C (and of the gated norm)"},
      {"ssm.time_step_rank", K::Honoured, "required",
       "Mamba-2 heads (a multiple of the groups; each head ssm.inner_size / heads wide)"},
      {"ssm.inner_size", K::Honoured, "required", "the Mamba-2 layers' inner width"},
  };
  v.insert(v.end(), kDense.begin(), kDense.end());
  v.insert(v.end(), kNoWindow.begin(), kNoWindow.end());
  v.insert(v.end(), own.begin(), own.end());
  return v;
}

// qwen35, qwen35moe: rope sections (IMROPE) and multi-token-prediction blocks.
const std::vector<ModelKey> kQwen35 = {
    {"rope.dimension_sections", K::Honoured, "required",
     "IMROPE sections: for text every position stream is the token's, so they must cover every "
     "rotated pair (then it is neox rope on rope.dimension_count dimensions); others refused"},
    {"nextn_predict_layers", K::Honoured, "0",
     "the last N blocks are multi-token-prediction layers: accepted, never run"},
};

// An architecture with routed experts and groups (glm4moe, deepseek2): the common keys, the
// expert counts and width, its own keys (which replace common ones of the same name), the
// group keys honoured.
std::vector<ModelKey> routed_table(const std::vector<ModelKey>& own) {
  std::vector<ModelKey> v = {
      {"expert_count", K::Honoured, "required", "experts per layer, at most 512"},
      {"expert_used_count", K::Honoured, "required", "experts each token runs (top k)"},
      {"expert_feed_forward_length", K::Honoured, "required", "the width of each expert"},
  };
  std::vector<ModelKey> out = kCommon;
  out.insert(out.end(), v.begin(), v.end());
  for (const auto& k : own) {
    bool replaced = false;
    for (auto& o : out)
      if (o.suffix == k.suffix) {
        o = k;
        replaced = true;
      }
    if (!replaced) out.push_back(k);
  }
  for (auto& k : out) {
    if (k.suffix == "expert_group_count")
      k = {k.suffix, K::Honoured, "1", "experts in this many contiguous groups (DeepSeek-V3's)"};
    if (k.suffix == "expert_group_used_count")
      k = {k.suffix, K::Honoured, "1",
           "choose only among the experts of this many groups, by each group's two best scores"};
    if (k.suffix == "rope.dimension_sections")
      k = {k.suffix, K::Refused, "0", "multi-section rope (M-RoPE) is not supported"};
  }
  return out;
}

const std::vector<ModelKey> kPhi3 = {
    {"attention.sliding_window", K::NoMath, "",
     "read and turned off by llama.cpp (\"Phi SWA is currently disabled\"); not applied"},
    {"attn_logit_softcapping", K::Refused, "0", "llama.cpp does not read it for this architecture"},
    {"final_logit_softcapping", K::Refused, "0",
     "llama.cpp does not read it for this architecture"},
};

std::vector<ModelKey> join(std::initializer_list<const std::vector<ModelKey>*> parts) {
  std::vector<ModelKey> v;
  for (const auto* p : parts) v.insert(v.end(), p->begin(), p->end());
  return v;
}

bool value_is_neutral(const GgufValue& v, std::string_view values);

// An array of numbers is neutral when each of its elements is (rope.dimension_sections 0 0 0 0).
bool array_is_neutral(const GgufFile& f, const std::string& key, std::string_view values) {
  const GgufValue* v = f.find(key);
  if (!v || v->type != GgufValueType::ARRAY || v->elem_type == GgufValueType::STRING) return false;
  for (const int64_t x : f.get_int_array(key)) {
    GgufValue e;
    e.type = GgufValueType::I64;
    e.i = x;
    if (!value_is_neutral(e, values)) return false;
  }
  return true;
}

bool value_is_neutral(const GgufValue& v, std::string_view values) {
  if (values.empty()) return false;
  size_t at = 0;
  while (at <= values.size()) {
    const size_t bar = values.find('|', at);
    const std::string one(values.substr(at, bar == std::string_view::npos ? bar : bar - at));
    if (v.type == GgufValueType::BOOL) {
      if ((one == "true" && v.i != 0) || (one == "false" && v.i == 0)) return true;
    } else if (v.type == GgufValueType::STRING) {
      if (v.str == one) return true;
    } else if (v.is_integer() || v.is_float()) {
      char* end = nullptr;
      const double want = std::strtod(one.c_str(), &end);
      const double got = v.is_float() ? v.f
                         : v.type == GgufValueType::U64 || v.type == GgufValueType::U32 ||
                                 v.type == GgufValueType::U16 || v.type == GgufValueType::U8
                             ? double(v.u)
                             : double(v.i);
      if (end && *end == 0 && got == want) return true;
    }
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  return false;
}

}  // namespace

const std::vector<ModelKey>& model_keys(Arch arch) {
  static const std::vector<ModelKey> llama = [] {
    const auto ex = experts("true", false, false);
    return join({&kCommon, &ex, &kNoWindow});
  }();
  static const std::vector<ModelKey> dense = join({&kCommon, &kDense, &kNoWindow});
  static const std::vector<ModelKey> qwen2moe = [] {
    const auto ex = experts("false", true, true);
    return join({&kCommon, &ex, &kNoWindow});
  }();
  static const std::vector<ModelKey> qwen3moe = [] {
    const auto ex = experts("true", true, false);
    return join({&kCommon, &ex, &kNoWindow});
  }();
  static const std::vector<ModelKey> gemma2 = join({&kCommon, &kDense, &kGemma2});
  static const std::vector<ModelKey> gemma3 = join({&kCommon, &kDense, &kGemma3});
  static const std::vector<ModelKey> phi3 = join({&kCommon, &kDense, &kPhi3});
  static const std::vector<ModelKey> gpt_oss = [] {
    auto ex = experts("false", true, false, "3");
    for (auto& k : ex)
      if (k.suffix == "expert_feed_forward_length") k.values = "required";
    auto v = join({&kCommon, &ex, &kGptOss});
    for (auto& k : v)
      if (k.suffix == "feed_forward_length")
        k = {k.suffix, K::NoMath, "",
             "read by llama.cpp, unused by gpt-oss's graph (the experts' width is "
             "expert_feed_forward_length)"};
    return v;
  }();
  static const std::vector<ModelKey> qwen3next = [] {
    const auto ex = experts("true", true, true);
    return join({&kCommon, &ex, &kNoWindow, &kDeltaNet});
  }();
  // A table with kQwen35's keys replacing the common ones of the same name.
  auto qwen35_table = [](const std::vector<ModelKey>& base) {
    std::vector<ModelKey> v = base;
    for (const auto& k : kQwen35) {
      bool replaced = false;
      for (auto& o : v)
        if (o.suffix == k.suffix) o = k, replaced = true;
      if (!replaced) v.push_back(k);
    }
    return v;
  };
  static const std::vector<ModelKey> qwen35 =
      qwen35_table(join({&kCommon, &kDense, &kNoWindow, &kDeltaNet}));
  static const std::vector<ModelKey> qwen35moe = qwen35_table(qwen3next);
  static const std::vector<ModelKey> glm4moe = routed_table(kGlm4Moe);
  static const std::vector<ModelKey> nemotron_h = nemotron_h_table();
  static const std::vector<ModelKey> deepseek2 = routed_table(kDeepSeek2);
  switch (arch) {
    case Arch::Llama:
      return llama;
    case Arch::Qwen2:
    case Arch::Qwen3:
      return dense;
    case Arch::Qwen2Moe:
      return qwen2moe;
    case Arch::Qwen3Moe:
      return qwen3moe;
    case Arch::Gemma2:
      return gemma2;
    case Arch::Gemma3:
      return gemma3;
    case Arch::Phi3:
      return phi3;
    case Arch::GptOss:
      return gpt_oss;
    case Arch::Glm4Moe:
      return glm4moe;
    case Arch::DeepSeek2:
      return deepseek2;
    case Arch::Qwen3Next:
      return qwen3next;
    case Arch::Qwen35:
      return qwen35;
    case Arch::Qwen35Moe:
      return qwen35moe;
    case Arch::NemotronH:
      return nemotron_h;
  }
  return dense;
}

const ModelKey* find_model_key(Arch arch, std::string_view suffix) {
  for (const auto& k : model_keys(arch))
    if (k.suffix == suffix) return &k;
  return nullptr;
}

std::string_view to_string(KeyUse use) {
  switch (use) {
    case KeyUse::Honoured:
      return "honoured";
    case KeyUse::Refused:
      return "refused";
    case KeyUse::NoMath:
      return "no math";
  }
  return "?";
}

void check_refused_keys(const GgufFile& f, Arch arch, const std::string& arch_name) {
  for (const auto& k : model_keys(arch)) {
    if (k.use != KeyUse::Refused) continue;
    const std::string key = arch_name + "." + std::string(k.suffix);
    const GgufValue* v = f.find(key);
    if (!v || value_is_neutral(*v, k.values)) continue;
    if (v->type == GgufValueType::ARRAY && !k.values.empty()) {
      bool neutral = false;
      try {
        neutral = array_is_neutral(f, key, k.values);
      } catch (const std::exception&) {  // not an array of integers
      }
      if (neutral) continue;
    }
    f.fail("metadata '" + key + "' = " + excerpt(v->to_display(4)) +
           " is refused: " + std::string(k.what) +
           (k.values.empty() ? "" : " (accepted: " + std::string(k.values) + ")"));
  }
}

std::vector<std::string> unknown_model_keys(const GgufFile& f, Arch arch,
                                            const std::string& arch_name) {
  const std::string prefix = arch_name + ".";
  std::vector<std::string> out;
  for (const auto& [key, v] : f.metadata()) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    if (!find_model_key(arch, std::string_view(key).substr(prefix.size()))) out.push_back(key);
  }
  return out;
}

}  // namespace tzero
