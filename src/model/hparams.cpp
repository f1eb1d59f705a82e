#include "model/hparams.h"

#include <cmath>

#include "base/error.h"
#include "base/excerpt.h"

namespace tzero {

namespace {

// The mixture-of-experts keys, as llama.cpp reads them. A file whose counts do not fit is an
// error here, before any tensor is looked at.
void read_experts(const GgufFile& f, const std::string& a, bool moe_arch, HParams& hp) {
  constexpr int kMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS
  const int64_t n_expert = f.get_int(a + "expert_count", 0);
  const int64_t n_used = f.get_int(a + "expert_used_count", 0);
  if (n_expert == 0 && n_used == 0) {
    if (moe_arch)
      f.fail("architecture '" + excerpt(hp.arch_name) + "' needs metadata '" + a + "expert_count'");
    return;
  }
  if (hp.arch == Arch::Qwen2 || hp.arch == Arch::Qwen3)
    f.fail("metadata '" + a + "expert_count' on architecture '" + excerpt(hp.arch_name) +
           "', which has no experts (" + excerpt(hp.arch_name) + "moe has)");
  if (hp.arch == Arch::Gemma2 || hp.arch == Arch::Gemma3 || hp.arch == Arch::Phi3)
    f.fail("metadata '" + a + "expert_count' on architecture '" + excerpt(hp.arch_name) +
           "', which has no experts");
  if (n_expert < 1 || n_expert > kMaxExperts)
    f.fail("metadata '" + a + "expert_count' = " + std::to_string(n_expert) +
           " is out of range (1.." + std::to_string(kMaxExperts) + ")");
  if (n_used < 1 || n_used > n_expert)
    f.fail("metadata '" + a + "expert_used_count' = " + std::to_string(n_used) +
           " does not fit expert_count = " + std::to_string(n_expert) +
           " (each token runs 1..expert_count experts)");
  hp.n_expert = int(n_expert);
  hp.n_expert_used = int(n_used);
  const std::string ff = a + "expert_feed_forward_length";
  int64_t n_ff_exp = f.get_int(ff, 0);
  if (n_ff_exp == 0) {
    // llama (Mixtral) experts have the dense length; qwen*moe default to n_ff / k as llama.cpp.
    n_ff_exp = hp.arch == Arch::Llama ? hp.n_ff : hp.n_ff / hp.n_expert_used;
    if (n_ff_exp <= 0) f.fail("missing metadata '" + ff + "'");
  }
  if (n_ff_exp < 1 || n_ff_exp > (1 << 22))
    f.fail("metadata '" + ff + "' = " + std::to_string(n_ff_exp) + " is out of range");
  hp.n_ff_exp = int(n_ff_exp);
  if (hp.arch == Arch::Qwen2Moe) {
    const std::string sh = a + "expert_shared_feed_forward_length";
    const int64_t n_sh = f.get_int(sh, hp.n_ff);
    if (n_sh < 1 || n_sh > (1 << 22))
      f.fail("metadata '" + sh + "' = " + std::to_string(n_sh) + " is out of range");
    hp.n_ff_shexp = int(n_sh);
  }
  // llama.cpp renormalises the k weights for llama and qwen3moe, not for qwen2moe.
  hp.expert_weights_norm = f.get_bool(a + "expert_weights_norm", hp.arch != Arch::Qwen2Moe);
  const int64_t gating = f.get_int(a + "expert_gating_func", 1);
  if (gating != 1)
    f.fail("metadata '" + a + "expert_gating_func' = " + std::to_string(gating) +
           ": only softmax gating (1) is supported");
}

// gemma2 and gemma3 as llama.cpp reads them: a sliding window on every other layer (gemma2,
// window 4096 unless given, the model's rope base) or on five layers of every six (gemma3, base
// 10000, unscaled), the embedding scaled by sqrt(n_embd), gemma2's soft-capping (attention 50,
// logits 30 unless given), and the 27B models' attention scale.
void read_gemma(const GgufFile& f, const std::string& a, HParams& hp) {
  const bool g2 = hp.arch == Arch::Gemma2;
  const std::string key = a + "attention.sliding_window";
  if (!g2 && !f.has(key)) f.fail("architecture 'gemma3' needs metadata '" + key + "'");
  const int64_t w = f.get_int(key, 4096);
  if (w < 1 || w > (1 << 24))
    f.fail("metadata '" + key + "' = " + std::to_string(w) + " is out of range");
  hp.n_swa = int(w);
  hp.swa_pattern = g2 ? 2 : 6;
  hp.rope_base_swa = g2 ? hp.rope_base : 10000.0;
  hp.embd_scale = std::sqrt(float(hp.n_embd));
  if (g2) {
    auto cap = [&](const std::string& k, double def) {
      const double v = f.get_float(a + k, def);
      if (!(v >= 0 && v < 1e6)) f.fail("metadata '" + a + k + "' is out of range");
      return float(v);
    };
    hp.attn_softcap = cap("attn_logit_softcapping", 50.0);
    hp.final_softcap = cap("final_logit_softcapping", 30.0);
  }
  // Gemma 2 27B (46 layers) and Gemma 3 27B (62) scale by 1/sqrt(n_embd / n_head), the others
  // by the key length.
  if (hp.n_layer == (g2 ? 46 : 62)) hp.attn_scale = 1.0f / std::sqrt(float(hp.n_embd / hp.n_head));
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
  if (hp.arch_name == "llama" || hp.arch_name == "mistral") {
    hp.arch = Arch::Llama;
  } else if (hp.arch_name == "qwen2") {
    hp.arch = Arch::Qwen2;
  } else if (hp.arch_name == "qwen3") {
    hp.arch = Arch::Qwen3;
  } else if (hp.arch_name == "qwen2moe") {
    hp.arch = Arch::Qwen2Moe;
  } else if (hp.arch_name == "qwen3moe") {
    hp.arch = Arch::Qwen3Moe;
  } else if (hp.arch_name == "gemma2") {
    hp.arch = Arch::Gemma2;
  } else if (hp.arch_name == "gemma3") {
    hp.arch = Arch::Gemma3;
  } else if (hp.arch_name == "phi3") {
    hp.arch = Arch::Phi3;
  } else {
    f.fail("architecture '" + excerpt(hp.arch_name) +
           "' is not supported (supported: llama, mistral, " +
           "qwen2, qwen3, qwen2moe, qwen3moe, gemma2, gemma3, phi3)");
  }
  const std::string a = hp.arch_name + ".";
  auto positive = [&](const std::string& key, int64_t v, int64_t max) {
    if (v <= 0 || v > max)
      f.fail("metadata '" + key + "' = " + std::to_string(v) + " is out of range");
    return int(v);
  };
  hp.n_embd = positive(a + "embedding_length", f.require_int(a + "embedding_length"), 1 << 20);
  hp.n_layer = positive(a + "block_count", f.require_int(a + "block_count"), 4096);
  hp.n_head = positive(a + "attention.head_count", f.require_int(a + "attention.head_count"), 4096);
  hp.n_head_kv = positive(a + "attention.head_count_kv",
                          f.get_int(a + "attention.head_count_kv", hp.n_head), 4096);
  const bool moe_arch = hp.arch == Arch::Qwen2Moe || hp.arch == Arch::Qwen3Moe;
  if (moe_arch && !f.has(a + "feed_forward_length"))
    hp.n_ff = 0;  // experts only: their own length below
  else
    hp.n_ff =
        positive(a + "feed_forward_length", f.require_int(a + "feed_forward_length"), 1 << 22);
  hp.n_ctx_train = positive(a + "context_length", f.get_int(a + "context_length", 2048), 1 << 24);
  if (hp.n_embd % hp.n_head != 0 && !f.has(a + "attention.key_length"))
    f.fail("embedding_length is not a multiple of head_count and no attention.key_length");
  hp.head_dim = positive(a + "attention.key_length",
                         f.get_int(a + "attention.key_length", hp.n_embd / hp.n_head), 1 << 16);
  const int v_len = positive(a + "attention.value_length",
                             f.get_int(a + "attention.value_length", hp.head_dim), 1 << 16);
  if (v_len != hp.head_dim) f.fail("attention.value_length differs from key_length (unsupported)");
  if (hp.n_head % hp.n_head_kv != 0)
    f.fail("attention.head_count " + std::to_string(hp.n_head) +
           " is not a multiple of head_count_kv " + std::to_string(hp.n_head_kv));
  hp.n_rot = positive(a + "rope.dimension_count",
                      f.get_int(a + "rope.dimension_count", hp.head_dim), hp.head_dim);
  if (hp.n_rot % 2 != 0) f.fail("rope.dimension_count must be even");
  hp.rms_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(hp.rms_eps > 0 && hp.rms_eps < 1))
    f.fail("attention.layer_norm_rms_epsilon is out of range");
  hp.rope_base = f.get_float(a + "rope.freq_base", 10000.0);
  if (!(hp.rope_base > 1)) f.fail("rope.freq_base is out of range");
  const std::string scaling = f.get_string(a + "rope.scaling.type", "none");
  if (scaling == "linear") {
    const double factor = f.get_float(a + "rope.scaling.factor", 1.0);
    if (!(factor >= 1 && factor <= 1024))
      f.fail("metadata '" + a + "rope.scaling.factor' = " + std::to_string(factor) +
             " is out of range (1..1024)");
    hp.rope_freq_scale = 1.0 / factor;
  } else if (scaling != "none" && scaling != "longrope") {  // longrope: the factor tensors
    f.fail("rope scaling '" + excerpt(scaling) +
           "' is not supported yet (supported: none, linear, " + "longrope)");
  }
  hp.rope_attn_factor = f.get_float(a + "rope.scaling.attn_factor", 1.0);
  if (!(hp.rope_attn_factor > 0 && hp.rope_attn_factor <= 16))
    f.fail("metadata '" + a + "rope.scaling.attn_factor' is out of range");
  hp.n_ctx_orig =
      positive(a + "rope.scaling.original_context_length",
               f.get_int(a + "rope.scaling.original_context_length", hp.n_ctx_train), 1 << 24);
  hp.rope_neox = hp.arch != Arch::Llama;
  hp.attn_scale = 1.0f / std::sqrt(float(hp.head_dim));
  if (hp.arch == Arch::Gemma2 || hp.arch == Arch::Gemma3) read_gemma(f, a, hp);
  read_experts(f, a, moe_arch, hp);
  if (f.has(a + "pooling_type")) {
    const int64_t pt = f.get_int(a + "pooling_type", -1);
    hp.pooling_type = pt >= 0 && pt <= 1000 ? int(pt) : 1000;  // unknown: refused when used
  }
  return hp;
}

}  // namespace tzero
