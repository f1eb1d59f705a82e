// Random-weight models with the shapes of real architectures, for tests and benchmarks.
// Deterministic in the seed: each tensor's values come from a stream seeded by (seed, name),
// so the same (preset, dtype, seed) always gives the same file, byte for byte.
#pragma once

#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "format/tensor_type.h"
#include "model/hparams.h"

namespace tzero {

struct ModelPreset {
  std::string name;
  std::string description;
  std::string arch;  // llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma3
  int n_vocab, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_ctx;
  double rope_base;
  float rms_eps;
  bool tied_output;
  // Mixture of experts (n_expert > 0): every layer's feed-forward is n_expert experts of
  // n_ff_exp (llama: n_ff), k = n_expert_used per token; qwen2moe adds a shared expert.
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  // gemma3: the sliding window of its local layers; and a linear rope scaling factor (1: none).
  int n_swa = 0;
  double rope_scale = 1.0;
  // Rotary dimensions (0: head_dim). phi3: fused attn_qkv and gate/up tensors, and with
  // n_ctx_orig > 0 LongRoPE factors (long and short) for contexts above and up to n_ctx_orig.
  int n_rot = 0;
  int n_ctx_orig = 0;
  // llama 3.1 and later: rope_freqs.weight, per-frequency divisors (1 for the high
  // frequencies up to 8 for the low ones, the shape of Llama 3.1's factor-8 scaling).
  bool rope_freqs = false;
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

// Writes the model. 2-D weight matrices get `dtype`; any whose row length is not a multiple of
// the dtype's block size gets q8_0 (or f32 when not a multiple of 32), listed in the returned
// notes. Norms and biases are f32.
// progress: as GgufWriter::write's (bytes of tensor data written, in all).
std::vector<std::string> generate_model(const ModelPreset& preset, TensorType dtype, uint64_t seed,
                                        const std::string& out_path,
                                        const GgufWriter::Progress& progress = nullptr);

}  // namespace tzero
