// The immutable weights of a model: typed views into the mapped GGUF file. Tensor names and
// shapes are llama.cpp's, so files from the ecosystem load unchanged. 1-D tensors (norms,
// biases) are widened to float once at load.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "kernels/kernel_set.h"
#include "kernels/matrix.h"
#include "model/hparams.h"

namespace tzero {

struct LayerWeights {
  const float* attn_norm = nullptr;  // (n_embd)
  Matrix wq, wk, wv, wo;             // (q_dim, n_embd), (kv_dim, n_embd) x2, (n_embd, q_dim)
  const float* bq = nullptr;         // optional biases (qwen2): (q_dim), (kv_dim), (kv_dim)
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;     // gpt-oss: the attention output's bias (n_embd)
  const float* sinks = nullptr;  // gpt-oss: each query head's attention sink logit (n_head)
  // MLA (deepseek2): the query's compression (or wq alone), the latent's, and the per-head
  // absorption matrices.
  Matrix wq_a;                       // (q_lora_rank, n_embd)
  const float* q_a_norm = nullptr;   // (q_lora_rank)
  Matrix wq_b;                       // (n_head * key_length_mla, q_lora_rank)
  Matrix wkv_a;                      // (kv_lora_rank + n_rot, n_embd)
  const float* kv_a_norm = nullptr;  // (kv_lora_rank)
  ExpertMatrix wk_b;                 // per head (kv_lora_rank, nope): q_nope -> latent space
  ExpertMatrix wv_b;                 // per head (value_length_mla, kv_lora_rank)
  // Gated DeltaNet (the recurrent layers of qwen3next, qwen35; kernels/delta_net.h), with
  // C = conv_channels = [q (key heads) | k (key heads) | v (value heads)], Hv value heads:
  Matrix ssm_qkv;                     // (C, n_embd) attn_qkv: the convolution's input
  Matrix ssm_z;                       // (ssm_d_inner, n_embd) attn_gate: the output gate z
  Matrix ssm_in;                      // qwen3next's older fused form instead of both: per key
                                      // head [q | k | v (r heads) | z (r heads)]
  Matrix ssm_ba;                      // qwen3next (Hv * 2, n_embd): per key head [b (r) | a (r)]
  Matrix ssm_beta, ssm_alpha;         // qwen35: (Hv, n_embd) each
  const float* ssm_conv1d = nullptr;  // (C, K) each channel's taps, oldest first
  const float* ssm_dt = nullptr;      // (Hv) the decay's bias (dt_bias)
  const float* ssm_a = nullptr;       // (Hv) -exp(A_log)
  const float* ssm_norm = nullptr;    // (value head width) the gated norm's weight
  Matrix ssm_out;                     // (n_embd, ssm_d_inner)
  // Mamba-2 (nemotron_h): ssm_in gives [z | x B C | dt]; the convolution's bias; D; the gated
  // norm's weight over every group (ssm_norm, ssm_d_inner floats); the MLP's biases.
  const float* ssm_conv1d_b = nullptr;  // (C)
  const float* ssm_d = nullptr;         // (heads)
  const float* ffn_up_b = nullptr;      // (n_ff) optional
  const float* ffn_down_b = nullptr;    // (n_embd) optional
  const float* q_norm = nullptr;        // optional per-head RMSNorm (qwen3, gemma3): (head_dim)
  const float* k_norm = nullptr;
  const float* attn_post_norm = nullptr;  // gemma3: after the attention block (n_embd)
  const float* ffn_norm = nullptr;        // (n_embd)
  const float* ffn_post_norm = nullptr;   // gemma3: after the feed-forward block (n_embd)
  Matrix w_gate, w_up, w_down;            // (n_ff, n_embd) x2, (n_embd, n_ff); dense layers only
  // Mixture of experts (hparams.moe()) instead of the dense feed-forward:
  Matrix gate_inp;                          // (n_expert, n_embd) the router
  ExpertMatrix gate_exps, up_exps;          // (n_expert, n_ff_exp, n_embd)
  ExpertMatrix down_exps;                   // (n_expert, n_embd, n_ff_exp)
  Matrix gate_shexp, up_shexp, down_shexp;  // qwen2moe's shared expert: (n_ff_shexp, n_embd)
                                            // x2, (n_embd, n_ff_shexp)
  Matrix gate_inp_shexp;                    // (1, n_embd) f32: its gate's logit (qwen2moe;
                                            // glm4moe's shared experts have none)
  const float* exp_probs_b = nullptr;       // (n_expert) glm4moe, deepseek2: the choice's bias
  // gpt-oss: biases of the router (n_expert) and of each expert's gate, up and down
  // ((n_expert, n_ff_exp) x2, (n_expert, n_embd): row e is expert e's).
  const float* gate_inp_b = nullptr;
  const float* gate_exps_b = nullptr;
  const float* up_exps_b = nullptr;
  const float* down_exps_b = nullptr;
};

class Model {
 public:
  // Loads and validates a model: by default read into 2 MiB-page memory when it fits, else
  // mapped; Map for a look at the file without computing (base/mapped_file.h). Throws
  // tzero::Error naming the file and the tensor or key.
  // layout_for: the kernel set that will compute with it, or null. When the file was read into
  // memory (not mapped), each matrix of a type that set reads in the Blocks8 layout faster
  // (KernelSet::gemm_blocks8_for) is laid out so at load, in place (kernels/weight_layout.h;
  // Matrix::layout says which). The bits of every product are the same either way.
  static std::unique_ptr<Model> load(const std::string& path,
                                     MappedFile::Load load = MappedFile::Load::Auto,
                                     const KernelSet* layout_for = nullptr);
  explicit Model(std::unique_ptr<GgufFile> file, const KernelSet* layout_for = nullptr);

  const GgufFile& gguf() const { return *file_; }
  const HParams& hparams() const { return hp_; }
  const Matrix& tok_embd() const { return tok_embd_; }  // (n_vocab, n_embd)
  const float* output_norm() const { return output_norm_; }
  const Matrix& output() const { return output_; }  // (n_vocab, n_embd); token_embd when tied
  const std::vector<LayerWeights>& layers() const { return layers_; }
  bool tied_output() const { return tied_output_; }
  // How many tensors the load laid out as Blocks8 (load's layout_for), 0 when none.
  size_t blocks8_tensors() const { return repacked_tensors(WeightLayout::Blocks8); }
  // How many tensors the load repacked to layout l (Blocks8 or Rows16), 0 when none.
  size_t repacked_tensors(WeightLayout l) const;
  size_t repacked_tensors() const { return repacked_.size(); }
  // XXH3-128 (hex) of the model file's bytes as the file has them, the repacked tensors' bytes
  // unpacked as they are hashed; computed on the first call (the fingerprint's model_xxh128).
  std::string file_xxh128() const;
  // Computes file_xxh128 now if no call has yet, and then gives `seen` every range of the file
  // [offset, offset + n) the hash reads from the mapped file (all but the repacked tensors'),
  // in increasing offset order: what else needs those bytes reads them once (a pipeline's
  // layer hashes). False, without a call to seen, when the hash was already made.
  using FileBytesSeen = std::function<void(size_t offset, const uint8_t* bytes, size_t n)>;
  bool hash_file(const FileBytesSeen& seen) const;
  // RoPE frequency factors (n_rot / 2 divisors) for a context of n_ctx positions per sequence,
  // or null: llama 3.1's rope_freqs; phi3's LongRoPE rope_factors_long when n_ctx is above
  // hparams.n_ctx_orig, else rope_factors_short (llama.cpp's choice).
  const float* rope_factors(int n_ctx) const;
  // Whether the factors depend on n_ctx (a LongRoPE model): then the fingerprint names them.
  bool longrope() const { return rope_long_ != nullptr; }

 private:
  // parts: the row count of every part of a fused tensor that will be split by Matrix::rows (their
  // greatest common divisor), or 0 for a matrix used whole.
  Matrix matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool required = true,
                int64_t parts = 0);
  // optional: null when absent even where `required` (glm4moe's optional biases and norms).
  const float* vector(const std::string& name, int64_t n, bool required = true,
                      bool optional = false);
  // An (n_rows, n_cols) table of floats (ne {n_cols, n_rows}), widened to f32 when stored as
  // another type: per-expert biases.
  const float* table(const std::string& name, int64_t n_rows, int64_t n_cols);
  ExpertMatrix experts(const std::string& name, int64_t n_expert, int64_t n_rows, int64_t n_cols);
  const GgufTensorInfo* use(const std::string& name);  // find_tensor, and mark it read
  // The layout of a matrix tensor of n_rows rows (rows_per_matrix each for an expert tensor):
  // Rows16 or Blocks8 (repacked here, once) where layout_for_ has a kernel for it and the bytes
  // are ours to write; File otherwise, and always for a tensor read as floats.
  WeightLayout matrix_layout(const GgufTensorInfo& t, size_t n_rows, size_t rows_per_matrix,
                             size_t row_bytes);
  void note_float_read(const std::string& name);  // never repacked after; fails if it was
  void load_experts(const std::string& prefix, LayerWeights& l);
  void load_mla(const std::string& prefix, LayerWeights& l);
  void load_delta_net(const std::string& prefix, LayerWeights& l);
  void load_nemotron_h_layer(int il, const std::string& prefix, LayerWeights& l);

  std::unique_ptr<GgufFile> file_;
  HParams hp_;
  Matrix tok_embd_;
  const float* output_norm_ = nullptr;
  Matrix output_;
  bool tied_output_ = false;
  const float* rope_freqs_ = nullptr;  // (n_rot / 2) rope_freqs.weight
  const float* rope_long_ = nullptr;   // (n_rot / 2) rope_factors_long.weight
  const float* rope_short_ = nullptr;  // (n_rot / 2) rope_factors_short.weight
  std::vector<LayerWeights> layers_;
  std::vector<std::vector<float>> widened_;       // 1-D tensors stored in a type other than f32
  std::set<std::string> used_;                    // the tensors read (every one must be)
  const KernelSet* layout_for_ = nullptr;         // during the constructor only
  std::map<std::string, WeightLayout> repacked_;  // the tensors repacked, and to which layout
  std::set<std::string> float_reads_;             // the tensors read as floats (never repacked)
  std::set<std::string> overlapping_;  // tensors sharing bytes with another (never repacked)
  mutable std::once_flag xxh128_once_;
  mutable std::string xxh128_;
};

// One line naming the keys of the model's architecture namespace that the key table does not
// know (model/model_keys.h), or "" when there are none. Model::load prints it on stderr.
std::string unknown_keys_note(const Model& model);

}  // namespace tzero
