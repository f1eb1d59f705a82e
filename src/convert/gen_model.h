// Random-weight models with the shapes of real architectures, for tests and benchmarks.
// Deterministic in the seed: each tensor's values come from a stream seeded by (seed, name),
// so the same (preset, dtype, seed) always gives the same file, byte for byte.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "format/tensor_type.h"
#include "model/hparams.h"

namespace tzero {

struct ModelPreset {
  std::string name;
  std::string description;
  std::string arch;  // llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma2, gemma3, phi3, gpt-oss,
                     // glm4moe
  int n_vocab, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_ctx;
  double rope_base;
  float rms_eps;
  bool tied_output;
  // Mixture of experts (n_expert > 0): every layer's feed-forward is n_expert experts of
  // n_ff_exp (llama: n_ff), k = n_expert_used per token; qwen2moe adds a shared expert.
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  // gemma2, gemma3: the sliding window of the local layers; a linear rope scaling factor (1: none).
  int n_swa = 0;
  double rope_scale = 1.0;
  // Rotary dimensions (0: head_dim). phi3: fused attn_qkv and gate/up tensors, and with
  // n_ctx_orig > 0 LongRoPE factors (long and short) for contexts above and up to n_ctx_orig.
  int n_rot = 0;
  int n_ctx_orig = 0;
  // llama 3.1 and later: rope_freqs.weight, per-frequency divisors (1 for the high
  // frequencies up to 8 for the low ones, the shape of Llama 3.1's factor-8 scaling).
  bool rope_freqs = false;
  // YaRN (gpt-oss): rope.scaling.type yarn with factor rope_scale over this original context.
  int yarn_orig_ctx = 0;
  // glm4moe: ungated shared experts (n_ff_exp each), leading dense layers (n_ff wide), NextN
  // blocks after the n_layer that run, the routing's weight scale and expert groups.
  int n_expert_shared = 0, n_dense_lead = 0, n_nextn = 0;
  float expert_weights_scale = 0;
  int n_groups = 1, n_groups_used = 1;
  // deepseek2 (MLA): the query's and the latent's compressed widths, the query head width
  // (no-rope + n_rot) and the output head width; a YaRN log multiplier (as written: 0.1 x).
  int q_lora_rank = 0, kv_lora_rank = 0, head_dim_k_mla = 0, head_dim_v_mla = 0;
  float yarn_log_multiplier = 0;
  // Gated DeltaNet hybrids (qwen3next, qwen35, qwen35moe): the convolution's width, the key
  // head width (= value head width), key heads, value heads, the full-attention interval, the
  // IMROPE sections (qwen35*), and qwen3next's older fused ssm_in instead of attn_qkv/attn_gate.
  int ssm_d_conv = 0, ssm_d_state = 0, ssm_n_group = 0, ssm_dt_rank = 0, full_attn_interval = 4;
  std::vector<int> rope_sections = {};
  bool ssm_legacy = false;
  // nemotron_h: each layer's kind, 'M' Mamba-2, '*' attention, '-' MLP (llama.cpp's converter's
  // hybrid_override_pattern); the ssm_* sizes are then its Mamba-2's (ssm_dt_rank its heads).
  std::string layer_pattern = {};
  int ssm_d_inner = 0;  // nemotron_h: the Mamba-2 inner width (heads x head width)
  bool recurrent_layer(int il) const {
    if (!layer_pattern.empty()) return layer_pattern[size_t(il)] == 'M';
    return ssm_d_conv > 0 && il < n_layer && (il + 1) % full_attn_interval != 0;
  }
};

// Tokenizer metadata a preset adds to the synthetic vocabulary, written only when set (so the
// presets without any keep their files byte for byte).
struct PresetTokenizerExtras {
  int eot = -1;               // tokenizer.ggml.eot_token_id
  std::string chat_template;  // tokenizer.chat_template
};
PresetTokenizerExtras preset_tokenizer_extras(const std::string& preset_name);

const std::vector<ModelPreset>& model_presets();
// The number of weights a preset's file holds (every tensor's elements).
double preset_parameters(const ModelPreset& preset);
const ModelPreset* find_preset(const std::string& name);

// The weight formats gen-model writes: one type for every matrix ("q4_k"), or one of
// llama-quantize's mixes ("q4_k_m"), whose type depends on the tensor.
struct WeightFormat {
  enum class Mix { None, Q3_K_M, Q4_K_M, Q5_K_M };
  TensorType base = TensorType::F32;  // the type of the matrices the mix leaves alone
  Mix mix = Mix::None;
  std::string name;  // as given: "q4_k", "q4_k_m", ...
};
// "f32" .. "q6_k" (every type tzero computes) and "q3_k_m", "q4_k_m", "q5_k_m" (when their
// types are supported); nullopt otherwise.
std::optional<WeightFormat> parse_weight_format(const std::string& name);
// The names parse_weight_format accepts, comma separated (for help and errors).
std::string weight_format_names();

// The type a mix gives a 2-D weight (before the row-length fallback), as llama-quantize's
// llama_tensor_get_type does for these mixes: the output matrix (token_embd when the output is
// tied) Q6_K; attn_v and ffn_down Q6_K on the layers use_more_bits picks (the first and last
// eighth and every third between), fused attn_qkv one step up; Q3_K_M: attn_v Q5_K on the first
// two layers else Q4_K, ffn_down Q5_K on the first sixteenth, else Q4_K where use_more_bits, else
// Q3_K, attn_output Q4_K. `layer`: the tensor's layer (-1 outside layers).
TensorType mix_tensor_type(const WeightFormat& f, const std::string& name, int layer, int n_layer,
                           bool tied_output);
// The type llama-quantize falls back to when a row of `n_cols` does not fit t's blocks: Q4_K ->
// Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K -> IQ4_NL, others Q8_0 (each when tzero computes
// it, else Q8_0), and F16 when n_cols is not a multiple of 32 either. t itself when it fits.
TensorType fallback_type(TensorType t, int64_t n_cols);

// Writes the model. 2-D weight matrices get the format's type (mix_tensor_type), or its
// fallback_type when a row does not fit its blocks (summed up in one returned note: how many
// matrices, which types, which row lengths and tensor names). Norms, biases and the expert router
// are f32. progress: as GgufWriter::write's (bytes of tensor data written, in all).
std::vector<std::string> generate_model(const ModelPreset& preset, const WeightFormat& format,
                                        uint64_t seed, const std::string& out_path,
                                        const GgufWriter::Progress& progress = nullptr);
// The same with one type for every matrix.
std::vector<std::string> generate_model(const ModelPreset& preset, TensorType dtype, uint64_t seed,
                                        const std::string& out_path,
                                        const GgufWriter::Progress& progress = nullptr);

}  // namespace tzero
