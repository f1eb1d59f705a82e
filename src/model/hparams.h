// Hyper-parameters of the supported architectures (the llama family, its mixture-of-experts kin,
// gemma2, gemma3, phi3), read from GGUF metadata as llama.cpp writes it ("{arch}.embedding_length",
// ...). One struct with the few options they vary on, not a field per model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"

namespace tzero {

enum class Arch {
  Llama,
  Qwen2,
  Qwen3,
  Qwen2Moe,
  Qwen3Moe,
  Gemma2,
  Gemma3,
  Phi3,
  GptOss,
  Glm4Moe,
  DeepSeek2,
  Qwen3Next,
  Qwen35,
  Qwen35Moe,
  NemotronH
};
// general.architecture -> Arch ("mistral" is llama, "gpt-oss" GptOss, "glm4moe" Glm4Moe,
// "deepseek2" DeepSeek2, "qwen3next" Qwen3Next, "qwen35" Qwen35, "qwen35moe" Qwen35Moe,
// "nemotron_h" NemotronH); nullopt for the ones tzero cannot run.
std::optional<Arch> arch_from_name(std::string_view name);

// How a mixture-of-experts layer turns router logits into the k experts and their weights
// (kernels/moe.h): Softmax over every expert, then the k largest (qwen*moe, Mixtral); or
// SoftmaxWeight, the k largest logits, then a softmax over those k (gpt-oss); or Sigmoid, each
// expert's sigmoid, chosen by sigmoid + exp_probs_b within the best groups (DeepSeek-V3,
// GLM-4.5: expert_gating_func 2).
// GroupedSoftmax: Sigmoid's choice (bias, groups, scale) over softmax scores (DeepSeek-V2:
// expert_gating_func 1, or absent, for deepseek2).
enum class MoeGating { Softmax, SoftmaxWeight, Sigmoid, GroupedSoftmax };

// What a layer of nemotron_h is (one mixer per layer): Mamba-2, attention or a feed-forward
// block (llama.cpp: head_count_kv and feed_forward_length 0 mark Mamba-2, feed_forward_length 0
// attention, the others MLP).
enum class LayerKind : unsigned char { Attention, Recurrent, Mlp };

// {arch}.rope.scaling.type, as llama.cpp reads it (absent: Linear).
enum class RopeScaling { None, Linear, Yarn, LongRope };

struct HParams {
  std::string arch_name;  // as in general.architecture
  Arch arch = Arch::Llama;
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;  // attention.key_length (= value_length), default n_embd / n_head
  int n_ff = 0;
  int n_ctx_train = 0;
  int n_rot = 0;  // rope.dimension_count, default head_dim
  float rms_eps = 1e-5f;
  double rope_base = 10000.0;
  bool rope_neox = false;  // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  RopeScaling rope_scaling = RopeScaling::Linear;
  double rope_freq_scale = 1.0;   // 1 / rope.scaling.factor (linear, yarn, longrope); 1: none
  double rope_attn_factor = 1.0;  // rope.scaling.attn_factor: multiplies every cos and sin
  // YaRN (rope_scaling Yarn): llama.cpp's extrapolation mix 1 over the correction range its
  // beta_fast 32 and beta_slow 1 give for n_ctx_orig, and cos and sin times (1 + 0.1 ln factor).
  double yarn_beta_fast = 32.0;
  double yarn_beta_slow = 1.0;
  // deepseek2 with rope.scaling.yarn_log_multiplier: llama.cpp cancels YaRN's cos/sin factor
  // (1 + 0.1 ln factor) and puts it in the scores' scale (mla_kq_scale) instead.
  bool yarn_unit_magnitude = false;
  // rope.scaling.original_context_length: a context longer than this takes a LongRoPE model's
  // long frequency factors (rope_factors_long), otherwise its short ones (phi3).
  int n_ctx_orig = 0;
  float attn_scale = 0;     // applied to q.k: 1/sqrt(head_dim) (gemma3 27B: its own)
  float embd_scale = 1.0f;  // token embeddings are multiplied by it (gemma: sqrt(n_embd))
  float attn_softcap = 0;   // > 0: attention scores soft-capped (gemma2: 50)
  float final_softcap = 0;  // > 0: the logits soft-capped (gemma2: 30)
  // Sliding-window attention (gemma2, gemma3, gpt-oss): with n_swa > 0, layer il attends to the
  // last n_swa positions when il % swa_pattern < swa_pattern - 1 (every layer when swa_pattern is
  // 0; the others see every position); windowed layers rotate with rope_base_swa and
  // rope_freq_scale_swa (rope.freq_base_swa; gemma3: 10000 and 1, gemma2 and gpt-oss: the
  // model's).
  int n_swa = 0;
  int swa_pattern = 0;
  double rope_base_swa = 10000.0;
  double rope_freq_scale_swa = 1.0;
  // Mixture of experts (n_expert > 0: every layer's feed-forward is experts; qwen2moe, qwen3moe,
  // and llama with experts as Mixtral).
  int n_expert = 0;                 // expert_count
  int n_expert_used = 0;            // expert_used_count: k, the experts each token runs
  int n_ff_exp = 0;                 // expert_feed_forward_length (llama: feed_forward_length)
  int n_ff_shexp = 0;               // expert_shared_feed_forward_length (qwen2moe's shared expert)
  bool expert_weights_norm = true;  // renormalise the k weights (qwen2moe: false)
  MoeGating expert_gating = MoeGating::Softmax;
  int n_expert_shared = 0;         // expert_shared_count: ungated shared experts (glm4moe)
  float expert_weights_scale = 1;  // expert_weights_scale (0 in the file means 1)
  int n_expert_groups = 1;         // expert_group_count: experts in this many contiguous groups
  int n_expert_groups_used = 1;    // expert_group_used_count: the best groups chosen from
  int n_layer_dense_lead = 0;      // leading_dense_block_count: dense layers before the experts
  int n_layer_nextn = 0;           // glm4moe's NextN blocks after n_layer: loaded, never run
  // {arch}.pooling_type as llama.cpp numbers it (0 none, 1 mean, 2 cls, 3 last, 4 rank), -1
  // when the file does not say: what embedding requests pool by default (batch/engine).
  int pooling_type = -1;

  bool moe() const { return n_expert > 0; }
  bool moe_layer(int il) const { return n_expert > 0 && il >= n_layer_dense_lead; }
  bool is_swa(int il) const {
    return n_swa > 0 && (swa_pattern == 0 || il % swa_pattern < swa_pattern - 1);
  }

  // The context a run gets when it asks for `requested` positions (0: the default, the trained
  // context up to 4096).
  int context_or_default(int requested) const {
    return requested > 0 ? requested : (n_ctx_train < 4096 ? n_ctx_train : 4096);
  }

  // Multi-head latent attention (deepseek2), in llama.cpp's absorbed form: one cached key row per
  // token of kv_lora_rank + n_rot floats (the normed latent, then the roped key), which is also
  // the value (its first kv_lora_rank floats); head_dim = key_length = kv_lora_rank + n_rot,
  // head_dim_v = value_length = kv_lora_rank, n_head_kv = 1. Each query head is
  // head_dim_k_mla = nope + n_rot wide (no-rope part first), each output head head_dim_v_mla.
  int head_dim_v = 0;  // 0: head_dim
  int q_lora_rank = 0, kv_lora_rank = 0, head_dim_k_mla = 0, head_dim_v_mla = 0;
  double yarn_log_mul = 0;  // rope.scaling.yarn_log_multiplier / 0.1 (mscale_all_dim)
  float mla_kq_scale = 0;   // the scores' scale: mscale^2 / sqrt(head_dim_k_mla)
  bool mla() const { return kv_lora_rank > 0; }

  // Gated DeltaNet hybrids (qwen3next, qwen35, qwen35moe; kernels/delta_net.h): layer il is a
  // linear-attention (recurrent) layer unless (il + 1) % full_attn_interval == 0, whose
  // attention layers gate their output by sigmoid of a second half of each query head.
  int ssm_d_conv = 0;          // ssm.conv_kernel: the short convolution's width K
  int ssm_d_state = 0;         // ssm.state_size: a key head's width (= a value head's)
  int ssm_n_group = 0;         // ssm.group_count: key heads
  int ssm_dt_rank = 0;         // ssm.time_step_rank: value heads
  int ssm_d_inner = 0;         // ssm.inner_size: value heads * value head width
  int full_attn_interval = 0;  // full_attention_interval
  // Value head h reads key head h / (value heads / key heads) (qwen3next: repeat-interleave),
  // or h % key heads (qwen35, qwen35moe: tiled; their converter reorders the value heads).
  bool delta_tiled_heads = false;

  // nemotron_h (Mamba-2 hybrid): each layer's kind; empty for the others, whose layers are
  // recurrent by full_attn_interval (with a feed-forward block in every layer).
  std::vector<LayerKind> layer_kinds;
  bool rope_none = false;  // nemotron_h: no rotary embedding at all (llama.cpp's ROPE_TYPE_NONE)

  // A Gated DeltaNet or Mamba-2 hybrid (its family's tensors and gates), and whether any of its
  // layers is recurrent (an interval of 1 or a nemotron_h without Mamba-2 layers has none: no
  // state to keep).
  bool hybrid() const { return ssm_d_conv > 0; }
  bool recurrent() const { return n_recurrent_layers() > 0; }
  bool recurrent_layer(int il) const {
    if (!layer_kinds.empty()) return layer_kinds[size_t(il)] == LayerKind::Recurrent;
    return hybrid() && (il + 1) % full_attn_interval != 0;
  }
  // Whether layer il keeps keys and values (attends).
  bool attention_layer(int il) const {
    if (!layer_kinds.empty()) return layer_kinds[size_t(il)] == LayerKind::Attention;
    return !recurrent_layer(il);
  }
  int n_attention_layers() const {
    int n = 0;
    for (int il = 0; il < n_layer; ++il) n += attention_layer(il) ? 1 : 0;
    return n;
  }
  int n_recurrent_layers() const {
    int n = 0;
    for (int il = 0; il < n_layer; ++il) n += recurrent_layer(il) ? 1 : 0;
    return n;
  }
  int delta_head_v_dim() const { return ssm_dt_rank > 0 ? ssm_d_inner / ssm_dt_rank : 0; }
  // The short convolution's channels: queries, keys (key heads each) and values.
  size_t conv_channels() const {
    return 2 * size_t(ssm_n_group) * size_t(ssm_d_state) + size_t(ssm_d_inner);
  }
  size_t conv_state_floats() const { return size_t(ssm_d_conv - 1) * conv_channels(); }
  size_t delta_state_floats() const { return size_t(ssm_d_inner) * size_t(ssm_d_state); }

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
};

// Reads and validates the hyper-parameters through the key table (model/model_keys.h): every
// key that changes the math is honoured or refused. Throws tzero::Error naming the file and the
// key (and its value) or the architecture when the model is not one tzero can run.
HParams read_hparams(const GgufFile& f);

}  // namespace tzero
