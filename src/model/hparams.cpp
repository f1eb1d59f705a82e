#include "model/hparams.h"

#include <cmath>
#include <stdexcept>

#include "base/error.h"
#include "base/excerpt.h"
#include "model/model_keys.h"

namespace tzero {

std::optional<Arch> arch_from_name(std::string_view name) {
  if (name == "llama" || name == "mistral") return Arch::Llama;
  if (name == "qwen2") return Arch::Qwen2;
  if (name == "qwen3") return Arch::Qwen3;
  if (name == "qwen2moe") return Arch::Qwen2Moe;
  if (name == "qwen3moe") return Arch::Qwen3Moe;
  if (name == "gemma2") return Arch::Gemma2;
  if (name == "gemma3") return Arch::Gemma3;
  if (name == "phi3") return Arch::Phi3;
  if (name == "gpt-oss") return Arch::GptOss;
  if (name == "glm4moe") return Arch::Glm4Moe;
  if (name == "deepseek2") return Arch::DeepSeek2;
  if (name == "qwen3next") return Arch::Qwen3Next;
  if (name == "qwen35") return Arch::Qwen35;
  if (name == "qwen35moe") return Arch::Qwen35Moe;
  if (name == "nemotron_h") return Arch::NemotronH;
  return std::nullopt;
}

namespace {

// Reads "{arch}.<suffix>" keys, only those of the key table: a read of a key the table does not
// list is a bug in tzero (the table is what docs/MODELS.md and the key tests check), so it throws
// std::logic_error, which every preset's load in the tests would show.
class KeyReader {
 public:
  KeyReader(const GgufFile& f, Arch arch, const std::string& arch_name)
      : f_(f), arch_(arch), a_(arch_name + ".") {}

  const GgufFile& file() const { return f_; }
  std::string name(std::string_view suffix) const {
    if (!find_model_key(arch_, suffix))
      throw std::logic_error("hparams reads '" + a_ + std::string(suffix) +
                             "', which the key table of this architecture does not list");
    return a_ + std::string(suffix);
  }
  bool has(std::string_view s) const { return f_.has(name(s)); }
  int64_t get_int(std::string_view s, int64_t def) const { return f_.get_int(name(s), def); }
  double get_float(std::string_view s, double def) const { return f_.get_float(name(s), def); }
  bool get_bool(std::string_view s, bool def) const { return f_.get_bool(name(s), def); }
  std::string get_string(std::string_view s, const std::string& def) const {
    return f_.get_string(name(s), def);
  }
  const GgufValue* find(std::string_view s) const { return f_.find(name(s)); }

  // An integer in 1..max, or the fail naming key and value.
  int positive(std::string_view s, int64_t v, int64_t max) const {
    if (v <= 0 || v > max)
      f_.fail("metadata '" + name(s) + "' = " + std::to_string(v) + " is out of range (1.." +
              std::to_string(max) + ")");
    return int(v);
  }
  int required_positive(std::string_view s, int64_t max) const {
    return positive(s, f_.require_int(name(s)), max);
  }
  // A per-layer key (llama.cpp's get_key_or_arr): one integer, or an array of n_layer of them.
  // tzero runs one value for every layer: an array whose values differ is refused.
  int per_layer(std::string_view s, int n_layer, int64_t def, bool required, int64_t max) const {
    const GgufValue* v = find(s);
    if (!v) {
      if (required) f_.require_int(name(s));  // fails naming it
      return positive(s, def, max);
    }
    if (v->type != GgufValueType::ARRAY) return positive(s, f_.get_int(name(s), def), max);
    const std::vector<int64_t> a = f_.get_int_array(name(s));
    if (int64_t(a.size()) != n_layer)
      f_.fail("metadata '" + name(s) + "' is an array of " + std::to_string(a.size()) +
              " values for " + std::to_string(n_layer) + " layers");
    for (int64_t x : a)
      if (x != a[0])
        f_.fail("metadata '" + name(s) + "' = " + excerpt(v->to_display(8)) +
                " differs between layers: tzero runs one value for every layer");
    return positive(s, a.empty() ? def : a[0], max);
  }

 private:
  const GgufFile& f_;
  Arch arch_;
  std::string a_;
};

void read_sigmoid_routing(const KeyReader& r, HParams& hp);

// The mixture-of-experts keys, as llama.cpp reads them. A file whose counts do not fit is an
// error here, before any tensor is looked at.
void read_experts(const KeyReader& r, bool moe_arch, HParams& hp) {
  constexpr int kMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS
  const GgufFile& f = r.file();
  const std::string& an = hp.arch_name;
  const std::string count_key = an + ".expert_count";
  const int64_t n_expert = f.get_int(count_key, 0);
  const int64_t n_used = f.get_int(an + ".expert_used_count", 0);
  if (n_expert == 0 && n_used == 0) {
    if (moe_arch) f.fail("architecture '" + excerpt(an) + "' needs metadata '" + count_key + "'");
    return;
  }
  // The key that is there (expert_count, else expert_used_count).
  const std::string given = n_expert != 0 ? count_key : an + ".expert_used_count";
  if (hp.arch == Arch::Qwen2 || hp.arch == Arch::Qwen3 || hp.arch == Arch::Qwen35)
    f.fail("metadata '" + given + "' on architecture '" + excerpt(an) +
           "', which has no experts (" + excerpt(an) + "moe has)");
  if (hp.arch == Arch::Gemma2 || hp.arch == Arch::Gemma3 || hp.arch == Arch::Phi3 ||
      hp.arch == Arch::NemotronH)
    f.fail("metadata '" + given + "' on architecture '" + excerpt(an) + "', which has no experts");
  if (n_expert < 1 || n_expert > kMaxExperts)
    f.fail("metadata '" + count_key + "' = " + std::to_string(n_expert) + " is out of range (1.." +
           std::to_string(kMaxExperts) + ")");
  if (n_used < 1 || n_used > n_expert)
    f.fail("metadata '" + an + ".expert_used_count' = " + std::to_string(n_used) +
           " does not fit expert_count = " + std::to_string(n_expert) +
           " (each token runs 1..expert_count experts)");
  hp.n_expert = int(n_expert);
  hp.n_expert_used = int(n_used);
  if (hp.arch == Arch::Llama) {
    hp.n_ff_exp = hp.n_ff;  // Mixtral: each expert has the dense width (llama.cpp)
  } else if (hp.arch == Arch::GptOss || hp.arch == Arch::Glm4Moe || hp.arch == Arch::DeepSeek2) {
    hp.n_ff_exp = r.required_positive("expert_feed_forward_length", 1 << 22);
  } else {
    // qwen*moe default to n_ff / k as llama.cpp does.
    const int64_t def = hp.n_ff / hp.n_expert_used;
    if (def <= 0 && !r.has("expert_feed_forward_length"))
      f.fail("missing metadata '" + r.name("expert_feed_forward_length") + "'");
    hp.n_ff_exp = r.positive("expert_feed_forward_length",
                             r.get_int("expert_feed_forward_length", def), 1 << 22);
  }
  if (hp.arch == Arch::Qwen2Moe || hp.arch == Arch::Qwen3Next || hp.arch == Arch::Qwen35Moe)
    hp.n_ff_shexp = r.positive("expert_shared_feed_forward_length",
                               r.get_int("expert_shared_feed_forward_length", hp.n_ff), 1 << 22);
  // llama.cpp renormalises the k weights for llama and qwen3moe, not for qwen2moe (fixed per
  // architecture: expert_weights_norm is a refused key unless it says the same).
  hp.expert_weights_norm = hp.arch != Arch::Qwen2Moe && hp.arch != Arch::GptOss;
  // gpt-oss: the k largest logits, then a softmax over them (llama.cpp's SOFTMAX_WEIGHT).
  hp.expert_gating = hp.arch == Arch::GptOss ? MoeGating::SoftmaxWeight : MoeGating::Softmax;
  if (hp.arch == Arch::Glm4Moe || hp.arch == Arch::DeepSeek2) read_sigmoid_routing(r, hp);
}

// The routing of DeepSeek-V3 and GLM-4.5 as llama.cpp reads it: sigmoid scores (gating 2; 0 or
// absent means sigmoid for glm4moe), the exp_probs_b tensor's bias for the choice only, the
// best expert_group_used_count of expert_group_count contiguous groups, renormalised weights
// when expert_weights_norm, times expert_weights_scale (0 means 1); expert_shared_count ungated
// shared experts; leading_dense_block_count dense layers first.
void read_sigmoid_routing(const KeyReader& r, HParams& hp) {
  const GgufFile& f = r.file();
  // Absent or 0: glm4moe's sigmoid, deepseek2's softmax (DeepSeek-V2), as llama.cpp.
  const bool ds = hp.arch == Arch::DeepSeek2;
  int64_t gating = r.get_int("expert_gating_func", 0);
  if (gating == 0) gating = ds ? 1 : 2;
  if (gating != 2 && !(ds && gating == 1))
    f.fail("metadata '" + r.name("expert_gating_func") + "' = " + std::to_string(gating) +
           " is not supported for '" + excerpt(hp.arch_name) + "' (" +
           (ds ? "1: softmax, 2: sigmoid" : "2: sigmoid") + ")");
  hp.expert_gating = gating == 2 ? MoeGating::Sigmoid : MoeGating::GroupedSoftmax;
  hp.expert_weights_norm = r.get_bool("expert_weights_norm", false);
  const double scale = r.get_float("expert_weights_scale", 0.0);
  if (!(scale >= 0 && scale <= 1e6))
    f.fail("metadata '" + r.name("expert_weights_scale") + "' is out of range");
  hp.expert_weights_scale = scale == 0 ? 1.0f : float(scale);
  if (!r.has("expert_shared_count"))
    f.fail("missing metadata '" + r.name("expert_shared_count") + "' (llama.cpp requires it too)");
  const int64_t shared = r.get_int("expert_shared_count", 0);
  if (shared < 0 || shared > 64)
    f.fail("metadata '" + r.name("expert_shared_count") + "' = " + std::to_string(shared) +
           " is out of range (0..64)");
  hp.n_expert_shared = int(shared);
  const int64_t groups = r.get_int("expert_group_count", 0);
  const int64_t used = r.get_int("expert_group_used_count", 0);
  if (groups > 1) {
    if (hp.n_expert % groups != 0 || groups >= hp.n_expert)
      f.fail("metadata '" + r.name("expert_group_count") + "' = " + std::to_string(groups) +
             " does not divide expert_count = " + std::to_string(hp.n_expert) + " into groups");
    if (used < 1 || used >= groups)
      f.fail("metadata '" + r.name("expert_group_used_count") + "' = " + std::to_string(used) +
             " does not fit expert_group_count = " + std::to_string(groups) + " (1..groups-1)");
    if (hp.n_expert_used > used * (hp.n_expert / groups))
      f.fail("metadata '" + r.name("expert_used_count") +
             "' = " + std::to_string(hp.n_expert_used) + " is more than the " +
             std::to_string(used * (hp.n_expert / groups)) + " experts of the chosen groups");
    hp.n_expert_groups = int(groups);
    hp.n_expert_groups_used = int(used);
  }
  const int64_t lead = r.get_int("leading_dense_block_count", 0);
  if (lead < 0 || lead > hp.n_layer)
    f.fail("metadata '" + r.name("leading_dense_block_count") + "' = " + std::to_string(lead) +
           " is out of range (0..block_count)");
  hp.n_layer_dense_lead = int(lead);
  if (lead > 0 && hp.n_ff <= 0)
    f.fail("metadata '" + r.name("feed_forward_length") +
           "' is needed: the leading dense layers are that wide");
}

// The sliding-window period: one integer (llama.cpp reads a scalar for gemma2 and gemma3 and
// ignores an array; tzero refuses one rather than guess which layers it means).
int read_swa_pattern(const KeyReader& r, int def) {
  const GgufValue* v = r.find("attention.sliding_window_pattern");
  if (!v) return def;
  if (v->type == GgufValueType::ARRAY)
    r.file().fail("metadata '" + r.name("attention.sliding_window_pattern") +
                  "' is an array: tzero reads one period (llama.cpp ignores an array for this "
                  "architecture)");
  const int64_t p = r.get_int("attention.sliding_window_pattern", def);
  if (p < 0 || p > 4096)
    r.file().fail("metadata '" + r.name("attention.sliding_window_pattern") +
                  "' = " + std::to_string(p) + " is out of range (0..4096)");
  return int(p);
}

// gpt-oss as llama.cpp reads it: a required window on il % P < P - 1 layers (P default 2: the
// even ones), rotated with the model's base and scale unless rope.freq_base_swa.
void read_gpt_oss(const KeyReader& r, HParams& hp) {
  hp.n_swa = r.required_positive("attention.sliding_window", 1 << 24);
  hp.swa_pattern = read_swa_pattern(r, 2);
  hp.rope_base_swa = r.get_float("rope.freq_base_swa", hp.rope_base);
  if (!(hp.rope_base_swa > 1))
    r.file().fail("metadata '" + r.name("rope.freq_base_swa") + "' is out of range");
  hp.rope_freq_scale_swa = hp.rope_freq_scale;
}

// deepseek2 (DeepSeek-V2/V3/R1, Kimi-K2) as llama.cpp reads a current conversion: MLA with
// kv_lora_rank, an optional q_lora_rank, key_length_mla = nope + rope and value_length_mla, one
// cached key row of kv_lora_rank + n_rot (= key_length; value_length = kv_lora_rank), the scores
// scaled by mscale^2 / sqrt(key_length_mla) with mscale from yarn_log_multiplier.
void read_deepseek2(const KeyReader& r, HParams& hp) {
  const GgufFile& f = r.file();
  if (!r.has("attention.key_length_mla") || !r.has("attention.value_length_mla"))
    f.fail("metadata '" + r.name("attention.key_length_mla") +
           "' is missing: an older deepseek2 conversion (attn_kv_b, no MLA split) that tzero "
           "does not run; convert it again with a current llama.cpp");
  hp.kv_lora_rank = r.required_positive("attention.kv_lora_rank", 1 << 16);
  hp.q_lora_rank = int(r.get_int("attention.q_lora_rank", 0));
  if (hp.q_lora_rank < 0 || hp.q_lora_rank > (1 << 16))
    f.fail("metadata '" + r.name("attention.q_lora_rank") + "' is out of range");
  hp.head_dim_k_mla = r.required_positive("attention.key_length_mla", 1 << 16);
  hp.head_dim_v_mla = r.required_positive("attention.value_length_mla", 1 << 16);
  if (hp.n_head_kv != 1)
    f.fail("metadata '" + r.name("attention.head_count_kv") +
           "' = " + std::to_string(hp.n_head_kv) + ": MLA files have one (the latent)");
  if (hp.head_dim != hp.kv_lora_rank + hp.n_rot || hp.head_dim_v != hp.kv_lora_rank)
    f.fail("metadata '" + r.name("attention.key_length") + "' = " + std::to_string(hp.head_dim) +
           " and value_length = " + std::to_string(hp.head_dim_v) +
           " do not fit kv_lora_rank = " + std::to_string(hp.kv_lora_rank) +
           " and rope.dimension_count = " + std::to_string(hp.n_rot) +
           " (key = latent + rope, value = latent)");
  if (hp.head_dim_k_mla <= hp.n_rot)
    f.fail("metadata '" + r.name("attention.key_length_mla") +
           "' = " + std::to_string(hp.head_dim_k_mla) +
           " leaves no non-rotated part (rope.dimension_count " + std::to_string(hp.n_rot) + ")");
  const double log_mul = r.get_float("rope.scaling.yarn_log_multiplier", 0.0);
  if (!(log_mul >= 0 && log_mul < 100))
    f.fail("metadata '" + r.name("rope.scaling.yarn_log_multiplier") + "' is out of range");
  hp.yarn_log_mul = log_mul / 0.1;  // llama.cpp stores mscale_all_dim
  // llama.cpp's arithmetic, in float: the rope's attention factor (llama-context.cpp), then the
  // graph's mscale and kq_scale (models/deepseek2.cpp).
  const bool yarn = hp.rope_scaling == RopeScaling::Yarn;
  const float fs = float(hp.rope_freq_scale), factor = 1.0f / fs;
  auto get_mscale = [](float s, float m) {
    return s <= 1.0f ? 1.0f : 1.0f + 0.1f * m * std::log(s);
  };
  float attn_factor = float(hp.rope_attn_factor);
  if (yarn) {
    float a = get_mscale(factor, 1.0f);
    if (hp.yarn_log_mul != 0) {
      const float m_all = float(hp.yarn_log_mul);
      const float m = m_all != 1.0f ? m_all : 1.0f;
      a = get_mscale(factor, m) / get_mscale(factor, m_all);
    }
    a *= 1.0f / (1.0f + 0.1f * std::log(factor));
    attn_factor = a * float(hp.rope_attn_factor);
    hp.yarn_unit_magnitude = hp.yarn_log_mul != 0;
  }
  const float attn_factor_org = attn_factor * (1.0f + 0.1f * std::log(1.0f / fs));
  const float mscale =
      attn_factor_org * (1.0f + 0.1f * float(hp.yarn_log_mul) * std::log(1.0f / fs));
  hp.mla_kq_scale = mscale * mscale / std::sqrt(float(hp.head_dim_k_mla));
  hp.attn_scale = hp.mla_kq_scale;
}

// gemma2 and gemma3 as llama.cpp reads them:
//   gemma2: a window (default 4096) on il % P < P - 1 layers (P default 2), their rope the
//     model's unless rope.freq_base_swa, attention and logit soft-capping (50, 30 by default);
//   gemma3: a window only when attention.sliding_window is there and > 0, P default 6, base
//     10000 unscaled unless rope.freq_base_swa, logit soft-capping only when given;
// the embedding scaled by sqrt(n_embd), and the 27B models' attention scale (by layer count).
void read_gemma(const KeyReader& r, HParams& hp) {
  const bool g2 = hp.arch == Arch::Gemma2;
  const GgufFile& f = r.file();
  const int64_t w = r.get_int("attention.sliding_window", g2 ? 4096 : 0);
  if (w < 0 || w > (1 << 24) || (g2 && w == 0))
    f.fail("metadata '" + r.name("attention.sliding_window") + "' = " + std::to_string(w) +
           " is out of range");
  hp.n_swa = int(w);
  if (hp.n_swa > 0) {
    hp.swa_pattern = read_swa_pattern(r, g2 ? 2 : 6);
    hp.rope_base_swa = r.get_float("rope.freq_base_swa", g2 ? hp.rope_base : 10000.0);
    if (!(hp.rope_base_swa > 1))
      f.fail("metadata '" + r.name("rope.freq_base_swa") + "' is out of range");
    hp.rope_freq_scale_swa = g2 ? hp.rope_freq_scale : 1.0;
  }
  hp.embd_scale = std::sqrt(float(hp.n_embd));
  auto cap = [&](std::string_view k, double def) {
    const double v = r.get_float(k, def);
    if (!(v >= 0 && v < 1e6)) f.fail("metadata '" + r.name(k) + "' is out of range");
    return float(v);
  };
  if (g2) hp.attn_softcap = cap("attn_logit_softcapping", 50.0);
  hp.final_softcap = cap("final_logit_softcapping", g2 ? 30.0 : 0.0);
  // Gemma 2 27B (46 layers) and Gemma 3 27B (62) scale by 1/sqrt(n_embd / n_head), the others
  // by the key length.
  if (hp.n_layer == (g2 ? 46 : 62)) hp.attn_scale = 1.0f / std::sqrt(float(hp.n_embd / hp.n_head));
}

// The Gated DeltaNet keys (qwen3next, qwen35, qwen35moe) as llama.cpp reads them: the five ssm.*
// sizes required, full_attention_interval (default 4: layers 3, 7, 11, ... attend). llama.cpp
// assumes a value head as wide as a key head (its state is square); so does tzero.
void read_delta_net(const KeyReader& r, HParams& hp) {
  const GgufFile& f = r.file();
  hp.ssm_d_conv = r.required_positive("ssm.conv_kernel", 64);
  hp.ssm_d_state = r.required_positive("ssm.state_size", 1 << 12);
  hp.ssm_n_group = r.required_positive("ssm.group_count", 1 << 12);
  hp.ssm_dt_rank = r.required_positive("ssm.time_step_rank", 1 << 12);
  hp.ssm_d_inner = r.required_positive("ssm.inner_size", 1 << 20);
  hp.full_attn_interval =
      r.positive("full_attention_interval", r.get_int("full_attention_interval", 4), 1 << 12);
  if (hp.ssm_dt_rank % hp.ssm_n_group != 0)
    f.fail("metadata '" + r.name("ssm.time_step_rank") + "' = " + std::to_string(hp.ssm_dt_rank) +
           " is not a multiple of ssm.group_count = " + std::to_string(hp.ssm_n_group));
  if (hp.ssm_d_inner != hp.ssm_dt_rank * hp.ssm_d_state)
    f.fail("metadata '" + r.name("ssm.inner_size") + "' = " + std::to_string(hp.ssm_d_inner) +
           " is not ssm.time_step_rank x ssm.state_size (" + std::to_string(hp.ssm_dt_rank) +
           " x " + std::to_string(hp.ssm_d_state) +
           "): value heads as wide as key heads are all llama.cpp runs too");
  hp.delta_tiled_heads = hp.arch != Arch::Qwen3Next;
  if (hp.arch == Arch::Qwen3Next) return;
  // Qwen3.5's IMROPE: text positions are [p, p, p, 0], and rotated pair i takes stream t, h or
  // w (each p) or e (0) by llama.cpp's interleaved rule (ggml_mrope_cache_init, is_imrope).
  // Sections that give every pair p are plain neox rope; others are refused.
  const std::string key = r.name("rope.dimension_sections");
  if (!f.has(key)) f.fail("missing metadata '" + key + "' (llama.cpp requires it too)");
  std::vector<int64_t> sec = f.get_int_array(key);
  sec.resize(4, 0);
  const int64_t total = sec[0] + sec[1] + sec[2] + sec[3];
  for (int64_t x : sec)
    if (x < 0 || x > (1 << 16)) f.fail("metadata '" + key + "' is out of range");
  for (int i = 0; i < hp.n_rot / 2; ++i) {
    const int64_t sector = total > 0 ? i % total : 0;
    const bool p = (sector % 3 == 1 && sector < 3 * sec[1]) ||
                   (sector % 3 == 2 && sector < 3 * sec[2]) ||
                   (sector % 3 == 0 && sector < 3 * sec[0]);
    if (!p)
      f.fail("metadata '" + key + "' leaves rotated pair " + std::to_string(i) +
             " on the fourth position stream (no rotation for text): such sections are not "
             "supported");
  }
}

// nemotron_h's layers as llama.cpp reads them: per-layer head_count_kv and feed_forward_length
// arrays (a scalar means every layer), a layer with both 0 is Mamba-2, with feed_forward_length
// 0 attention, otherwise a feed-forward (MLP) block; the Mamba-2 sizes (ssm.*) required. tzero
// runs one kv head count for the attention layers and one width for the MLP layers.
void read_nemotron_h(const KeyReader& r, HParams& hp) {
  const GgufFile& f = r.file();
  auto per_layer = [&](std::string_view key, int64_t def) {
    std::vector<int64_t> v;
    const GgufValue* g = r.find(key);
    if (!g) {
      v.assign(size_t(hp.n_layer), def);
    } else if (g->type == GgufValueType::ARRAY) {
      v = f.get_int_array(r.name(key));
      if (int64_t(v.size()) != hp.n_layer)
        f.fail("metadata '" + r.name(key) + "' is an array of " + std::to_string(v.size()) +
               " values for " + std::to_string(hp.n_layer) + " layers");
    } else {
      v.assign(size_t(hp.n_layer), r.get_int(key, def));
    }
    return v;
  };
  const std::vector<int64_t> kv = per_layer("attention.head_count_kv", hp.n_head);
  const std::vector<int64_t> ff = per_layer("feed_forward_length", 0);
  hp.n_head_kv = 0;
  hp.n_ff = 0;
  auto one_value = [&](std::string_view key, int& field, int64_t x) {
    if (x < 0 || x > (1 << 22)) f.fail("metadata '" + r.name(key) + "' is out of range");
    if (field != 0 && field != x)
      f.fail("metadata '" + r.name(key) + "' has different values on layers of one kind (" +
             std::to_string(field) + ", " + std::to_string(x) +
             "): tzero runs one value for every layer of a kind");
    field = int(x);
  };
  for (int il = 0; il < hp.n_layer; ++il) {
    const int64_t k = kv[size_t(il)], w = ff[size_t(il)];
    if (k == 0 && w == 0) {
      hp.layer_kinds.push_back(LayerKind::Recurrent);
    } else if (w == 0) {
      hp.layer_kinds.push_back(LayerKind::Attention);
      one_value("attention.head_count_kv", hp.n_head_kv, k);
    } else {
      hp.layer_kinds.push_back(LayerKind::Mlp);
      one_value("feed_forward_length", hp.n_ff, w);
    }
  }
  if (hp.n_head_kv == 0) hp.n_head_kv = hp.n_head;  // no attention layer: unused
  hp.ssm_d_conv = r.required_positive("ssm.conv_kernel", 64);
  hp.ssm_d_state = r.required_positive("ssm.state_size", 1 << 12);
  hp.ssm_n_group = r.required_positive("ssm.group_count", 1 << 12);
  hp.ssm_dt_rank = r.required_positive("ssm.time_step_rank", 1 << 12);  // Mamba-2 heads
  hp.ssm_d_inner = r.required_positive("ssm.inner_size", 1 << 20);
  if (hp.ssm_dt_rank % hp.ssm_n_group != 0 || hp.ssm_d_inner % hp.ssm_dt_rank != 0)
    f.fail("metadata '" + r.name("ssm.inner_size") + "' = " + std::to_string(hp.ssm_d_inner) +
           ", ssm.time_step_rank = " + std::to_string(hp.ssm_dt_rank) + " and ssm.group_count = " +
           std::to_string(hp.ssm_n_group) + " do not divide into heads and groups");
  hp.rope_none = true;
}

// rope.scaling.* as llama.cpp reads them: the type (absent: linear), the factor (or the older
// rope.scale_linear; 0 means 1), the attention factor and the original context.
void read_rope_scaling(const KeyReader& r, HParams& hp) {
  const GgufFile& f = r.file();
  const std::string type = r.get_string("rope.scaling.type", "linear");
  if (type == "none") {
    hp.rope_scaling = RopeScaling::None;
  } else if (type == "linear") {
    hp.rope_scaling = RopeScaling::Linear;
  } else if (type == "yarn") {
    hp.rope_scaling = RopeScaling::Yarn;
  } else if (type == "longrope") {
    hp.rope_scaling = RopeScaling::LongRope;
  } else {
    f.fail("metadata '" + r.name("rope.scaling.type") + "' = '" + excerpt(type) +
           "' is not a rope scaling tzero knows (none, linear, yarn, longrope)");
  }
  const std::string factor_key =
      r.name(r.has("rope.scaling.factor") || !r.has("rope.scale_linear") ? "rope.scaling.factor"
                                                                         : "rope.scale_linear");
  double factor = f.get_float(factor_key, 1.0);
  if (factor == 0) factor = 1.0;  // llama.cpp: a factor of 0 is none
  if (!(factor > 0 && factor <= 1024))
    f.fail("metadata '" + factor_key + "' = " + std::to_string(factor) +
           " is out of range (0..1024)");
  hp.rope_freq_scale = hp.rope_scaling == RopeScaling::None ? 1.0 : 1.0 / factor;
  hp.rope_attn_factor = r.get_float("rope.scaling.attn_factor", 1.0);
  if (!(hp.rope_attn_factor > 0 && hp.rope_attn_factor <= 16))
    f.fail("metadata '" + r.name("rope.scaling.attn_factor") + "' is out of range (0..16)");
  hp.n_ctx_orig =
      r.positive("rope.scaling.original_context_length",
                 r.get_int("rope.scaling.original_context_length", hp.n_ctx_train), 1 << 24);
}

}  // namespace

HParams read_hparams(const GgufFile& f) {
  HParams hp;
  // A vocabulary-only file (llama.cpp's ggml-vocab-*.gguf, `tzero convert --hf-tokenizer`) has
  // tokenizer metadata and no tensors: say so, whatever else its metadata lacks. Every command
  // that loads a model for inference comes through here (Model's constructor).
  if (f.tensors().empty()) {
    if (f.has("tokenizer.ggml.tokens"))
      f.fail(
          "this file has no weights (a vocabulary-only GGUF: a tokenizer and no tensors); it can "
          "be used with `tzero tokenize`, not to run a model");
    f.fail("this file has no weights (no tensors)");
  }
  hp.arch_name = f.get_string("general.architecture");
  if (hp.arch_name.empty()) f.fail("missing metadata 'general.architecture'");
  const std::optional<Arch> arch = arch_from_name(hp.arch_name);
  if (!arch)
    f.fail("architecture '" + excerpt(hp.arch_name) +
           "' is not supported (supported: llama, mistral, " +
           "qwen2, qwen3, qwen2moe, qwen3moe, gemma2, gemma3, phi3, gpt-oss, glm4moe, deepseek2, "
           "qwen3next, qwen35, qwen35moe, nemotron_h)");
  hp.arch = *arch;
  const KeyReader r(f, hp.arch, hp.arch_name);
  hp.n_embd = r.required_positive("embedding_length", 1 << 20);
  hp.n_layer = r.required_positive("block_count", 4096);
  if (hp.arch == Arch::Glm4Moe || hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe) {
    // The last nextn_predict_layers blocks are GLM's (and Qwen3.5's) multi-token-prediction (NextN)
    // layers: llama.cpp checks their tensors and never runs them; so does tzero.
    const int64_t nextn = r.get_int("nextn_predict_layers", 0);
    if (nextn < 0 || nextn >= hp.n_layer)
      r.file().fail("metadata '" + r.name("nextn_predict_layers") + "' = " + std::to_string(nextn) +
                    " does not fit block_count = " + std::to_string(hp.n_layer));
    hp.n_layer_nextn = int(nextn);
  }
  hp.n_head = r.per_layer("attention.head_count", hp.n_layer, 0, true, 4096);
  const bool nemotron = hp.arch == Arch::NemotronH;
  if (nemotron)
    read_nemotron_h(r, hp);  // per-layer kinds, kv heads and widths; the Mamba-2 sizes
  else
    hp.n_head_kv = r.per_layer("attention.head_count_kv", hp.n_layer, hp.n_head, false, 4096);
  const bool moe_arch = hp.arch == Arch::Qwen2Moe || hp.arch == Arch::Qwen3Moe ||
                        hp.arch == Arch::GptOss || hp.arch == Arch::Glm4Moe ||
                        hp.arch == Arch::DeepSeek2 || hp.arch == Arch::Qwen3Next ||
                        hp.arch == Arch::Qwen35Moe;
  if (hp.arch == Arch::GptOss || (moe_arch && !r.has("feed_forward_length")))
    hp.n_ff = 0;  // experts only: their own length below (gpt-oss's graph never reads it)
  else if (!nemotron)
    hp.n_ff = r.per_layer("feed_forward_length", hp.n_layer, 0, true, 1 << 22);
  hp.n_ctx_train = r.required_positive("context_length", 1 << 24);
  if (hp.n_embd % hp.n_head != 0 && !r.has("attention.key_length"))
    f.fail("embedding_length is not a multiple of head_count and no attention.key_length");
  hp.head_dim = r.positive("attention.key_length",
                           r.get_int("attention.key_length", hp.n_embd / hp.n_head), 1 << 16);
  const int v_len = r.positive("attention.value_length",
                               r.get_int("attention.value_length", hp.head_dim), 1 << 16);
  if (hp.arch == Arch::DeepSeek2)
    hp.head_dim_v = v_len;  // MLA: the latent, a prefix of the key row (read_deepseek2)
  else if (v_len != hp.head_dim)
    f.fail("attention.value_length differs from key_length (unsupported)");
  if (hp.n_head % hp.n_head_kv != 0)
    f.fail("attention.head_count " + std::to_string(hp.n_head) +
           " is not a multiple of head_count_kv " + std::to_string(hp.n_head_kv));
  // nemotron_h has no rotary embedding (llama.cpp reads its rope keys and never applies them).
  hp.n_rot = nemotron ? hp.head_dim
                      : r.positive("rope.dimension_count",
                                   r.get_int("rope.dimension_count", hp.head_dim), hp.head_dim);
  if (hp.n_rot % 2 != 0) f.fail("rope.dimension_count must be even");
  if (hp.arch == Arch::Llama && hp.n_rot != hp.head_dim)
    f.fail("metadata '" + r.name("rope.dimension_count") + "' = " + std::to_string(hp.n_rot) +
           ": llama rotates whole heads (" + std::to_string(hp.head_dim) +
           "; llama.cpp refuses it too)");
  if (!r.has("attention.layer_norm_rms_epsilon"))
    f.fail("missing metadata '" + r.name("attention.layer_norm_rms_epsilon") +
           "' (llama.cpp requires it too)");
  hp.rms_eps = float(r.get_float("attention.layer_norm_rms_epsilon", 0));
  if (!(hp.rms_eps > 0 && hp.rms_eps < 1))
    f.fail("attention.layer_norm_rms_epsilon is out of range");
  if (!nemotron) {
    hp.rope_base = r.get_float("rope.freq_base", 10000.0);
    if (!(hp.rope_base > 1)) f.fail("rope.freq_base is out of range");
    read_rope_scaling(r, hp);
  }
  hp.rope_neox = hp.arch != Arch::Llama && hp.arch != Arch::DeepSeek2;  // deepseek2: pairs
  hp.attn_scale = 1.0f / std::sqrt(float(hp.head_dim));
  if (hp.arch == Arch::Gemma2 || hp.arch == Arch::Gemma3) read_gemma(r, hp);
  if (hp.arch == Arch::GptOss) read_gpt_oss(r, hp);
  if (hp.arch == Arch::DeepSeek2) read_deepseek2(r, hp);
  if (hp.arch == Arch::Qwen3Next || hp.arch == Arch::Qwen35 || hp.arch == Arch::Qwen35Moe)
    read_delta_net(r, hp);
  read_experts(r, moe_arch, hp);
  if (r.has("pooling_type")) {
    const int64_t pt = r.get_int("pooling_type", -1);
    hp.pooling_type = pt >= 0 && pt <= 1000 ? int(pt) : 1000;  // unknown: refused when used
  }
  check_refused_keys(f, hp.arch, hp.arch_name);
  hp.n_layer -= hp.n_layer_nextn;  // the layers that run
  return hp;
}

}  // namespace tzero
