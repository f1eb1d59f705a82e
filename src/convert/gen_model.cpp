// Random-weight model presets written as GGUF (convert/gen_model.h; `tzero gen-model`).
#include "convert/gen_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "base/error.h"
#include "base/rng.h"
#include "convert/synthetic_vocab.h"
#include "format/gguf_writer.h"
#include "kernels/quant.h"

namespace tzero {

namespace {
// llama.cpp's llama_ftype for a model whose matrices are mostly `t`, or for a mix.
uint32_t llama_file_type(const WeightFormat& f) {
  switch (f.mix) {
    case WeightFormat::Mix::Q3_K_M:
      return 12;
    case WeightFormat::Mix::Q4_K_M:
      return 15;
    case WeightFormat::Mix::Q5_K_M:
      return 17;
    case WeightFormat::Mix::None:
      break;
  }
  switch (f.base) {
    case TensorType::F32:
      return 0;
    case TensorType::F16:
      return 1;
    case TensorType::Q4_0:
      return 2;
    case TensorType::Q4_1:
      return 3;
    case TensorType::Q8_0:
      return 7;
    case TensorType::Q5_0:
      return 8;
    case TensorType::Q5_1:
      return 9;
    case TensorType::IQ4_NL:
      return 25;
    case TensorType::MXFP4:
      return 38;  // MXFP4_MOE (llama.cpp's only MXFP4 file type)
    case TensorType::Q4_K:
      return 14;  // Q4_K_S
    case TensorType::Q5_K:
      return 16;  // Q5_K_S
    case TensorType::Q6_K:
      return 18;
    case TensorType::Q2_K:
      return 10;
    case TensorType::Q3_K:
      return 11;  // Q3_K_S
    case TensorType::IQ4_XS:
      return 30;
    case TensorType::BF16:
      return 32;
    default:
      return 0;
  }
}

// llama-quantize's use_more_bits: the first and last eighth of the layers and every third
// layer between them.
bool use_more_bits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

uint64_t name_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the name, mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return SplitMix64(seed ^ h).next();
}
}  // namespace

std::optional<WeightFormat> parse_weight_format(const std::string& name) {
  WeightFormat f;
  f.name = name;
  static const std::pair<const char*, std::pair<WeightFormat::Mix, TensorType>> mixes[] = {
      {"q3_k_m", {WeightFormat::Mix::Q3_K_M, TensorType::Q3_K}},
      {"q4_k_m", {WeightFormat::Mix::Q4_K_M, TensorType::Q4_K}},
      {"q5_k_m", {WeightFormat::Mix::Q5_K_M, TensorType::Q5_K}},
  };
  for (const auto& [mix_name, m] : mixes)
    if (name == mix_name) {
      f.mix = m.first;
      f.base = m.second;
      // A mix needs its base type and the types it raises tensors to.
      for (TensorType t : {f.base, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
        if (!traits(t).supported) return std::nullopt;
      return f;
    }
  const auto t = tensor_type_from_name(name);
  if (!t || !traits(*t).supported) return std::nullopt;
  f.base = *t;
  return f;
}

std::string weight_format_names() {
  std::string s;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = tensor_type_traits(id);
    if (tr && tr->supported) s += (s.empty() ? "" : ", ") + std::string(tr->name);
  }
  for (const char* mix : {"q3_k_m", "q4_k_m", "q5_k_m"})
    if (parse_weight_format(mix)) s += std::string(", ") + mix;
  return s;
}

TensorType mix_tensor_type(const WeightFormat& f, const std::string& name, int layer, int n_layer,
                           bool tied_output) {
  using M = WeightFormat::Mix;
  if (f.mix == M::None) return f.base;
  auto is = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (name == "output.weight" || (tied_output && name == "token_embd.weight"))
    return TensorType::Q6_K;
  if (f.mix == M::Q3_K_M) {
    if (is(".attn_v.")) return layer < 2 ? TensorType::Q5_K : TensorType::Q4_K;
    if (is(".ffn_down"))
      return layer < n_layer / 16            ? TensorType::Q5_K
             : use_more_bits(layer, n_layer) ? TensorType::Q4_K
                                             : TensorType::Q3_K;
    if (is(".attn_output.") || is(".attn_qkv.")) return TensorType::Q4_K;
    return f.base;
  }
  const TensorType up = TensorType::Q6_K;
  if ((is(".attn_v.") || is(".ffn_down")) && use_more_bits(layer, n_layer)) return up;
  if (is(".attn_qkv.")) return f.mix == M::Q4_K_M ? TensorType::Q5_K : TensorType::Q6_K;
  return f.base;
}

TensorType fallback_type(TensorType t, int64_t n_cols) {
  if (n_cols % int64_t(traits(t).block_size) == 0) return t;
  if (n_cols % 32 != 0) return TensorType::F16;
  TensorType f = TensorType::Q8_0;
  switch (t) {
    case TensorType::Q4_K:
      f = TensorType::Q5_0;
      break;
    case TensorType::Q5_K:
      f = TensorType::Q5_1;
      break;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
      f = TensorType::IQ4_NL;
      break;
    default:
      break;
  }
  const auto tr = tensor_type_traits(uint32_t(f));
  return tr && tr->supported ? f : TensorType::Q8_0;
}

namespace {

// A Gated DeltaNet hybrid's mixer, as llama.cpp's converter writes it: a full-attention layer's
// tensors (each query head followed by its output gate's head, per-head Q/K norms) or a
// linear-attention layer's (qwen3next: attn_qkv and attn_gate, or the older fused ssm_in, and
// ssm_ba; qwen35: ssm_beta and ssm_alpha). The decay's values are a real model's kind: A =
// -exp(A_log) in [-7, -1], dt_bias near -3.5 (long memories, decays near 1).
template <class Add>
void add_hybrid_mixer(const ModelPreset& P, int l, const std::string& p, Add& add) {
  const int64_t E = P.n_embd, D = P.ssm_d_state, Hk = P.ssm_n_group, Hv = P.ssm_dt_rank, I = Hv * D,
                C = 2 * Hk * D + I, K = P.ssm_d_conv;
  auto amp = [](int64_t fan_in) { return float(std::sqrt(3.0 / double(fan_in))); };
  if (!P.recurrent_layer(l)) {
    const int64_t Q = int64_t(P.n_head) * P.head_dim, KV = int64_t(P.n_head_kv) * P.head_dim;
    add(p + "attn_q.weight", {E, 2 * Q}, 0.0f, amp(E), true);
    add(p + "attn_k.weight", {E, KV}, 0.0f, amp(E), true);
    add(p + "attn_v.weight", {E, KV}, 0.0f, amp(E), true);
    add(p + "attn_output.weight", {Q, E}, 0.0f, amp(Q), true);
    add(p + "attn_q_norm.weight", {P.head_dim}, 1.0f, 0.1f, false);
    add(p + "attn_k_norm.weight", {P.head_dim}, 1.0f, 0.1f, false);
    return;
  }
  const bool next = P.arch == "qwen3next";
  if (next && P.ssm_legacy) {
    add(p + "ssm_in.weight", {E, C + I}, 0.0f, amp(E), true);
  } else {
    add(p + "attn_qkv.weight", {E, C}, 0.0f, amp(E), true);
    add(p + "attn_gate.weight", {E, I}, 0.0f, amp(E), true);
  }
  if (next) {
    add(p + "ssm_ba.weight", {E, 2 * Hv}, 0.0f, amp(E), true);
  } else {
    add(p + "ssm_beta.weight", {E, Hv}, 0.0f, amp(E), true);
    add(p + "ssm_alpha.weight", {E, Hv}, 0.0f, amp(E), true);
  }
  add(p + "ssm_conv1d.weight", {K, C}, 0.0f, amp(K), false);
  add(p + "ssm_dt.bias", {Hv}, -3.5f, 1.0f, false);
  add(p + "ssm_a", {Hv}, -4.0f, 3.0f, false);
  add(p + "ssm_norm.weight", {D}, 1.0f, 0.1f, false);
  add(p + "ssm_out.weight", {I, E}, 0.0f, amp(I), true);
}

// A nemotron_h layer as llama.cpp's converter writes it: one mixer, by the pattern's letter. The
// Mamba-2 values are a real model's kind: A = -exp(A_log) in [-7, -1], dt_bias near -4.6 (steps
// near 0.01), D near 1.
template <class Add>
void add_nemotron_h_layer(const ModelPreset& P, int l, const std::string& p, Add& add) {
  const int64_t E = P.n_embd, N = P.ssm_d_state, G = P.ssm_n_group, H = P.ssm_dt_rank,
                K = P.ssm_d_conv;
  auto amp = [](int64_t fan_in) { return float(std::sqrt(3.0 / double(fan_in))); };
  add(p + "attn_norm.weight", {E}, 1.0f, 0.1f, false);
  const char kind = P.layer_pattern[size_t(l)];
  if (kind == 'M') {
    const int64_t Di = P.ssm_d_inner;
    const int64_t C = Di + 2 * G * N;
    add(p + "ssm_in.weight", {E, Di + C + H}, 0.0f, amp(E), true);
    add(p + "ssm_conv1d.weight", {K, C}, 0.0f, amp(K), false);
    add(p + "ssm_conv1d.bias", {C}, 0.0f, 0.1f, false);
    add(p + "ssm_dt.bias", {H}, -4.6f, 2.0f, false);
    add(p + "ssm_a", {1, H}, -4.0f, 3.0f, false);
    add(p + "ssm_d", {1, H}, 1.0f, 0.1f, false);
    add(p + "ssm_norm.weight", {Di / G, G}, 1.0f, 0.1f, false);
    add(p + "ssm_out.weight", {Di, E}, 0.0f, amp(Di), true);
  } else if (kind == '*') {
    const int64_t Q = int64_t(P.n_head) * P.head_dim, KV = int64_t(P.n_head_kv) * P.head_dim;
    add(p + "attn_q.weight", {E, Q}, 0.0f, amp(E), true);
    add(p + "attn_k.weight", {E, KV}, 0.0f, amp(E), true);
    add(p + "attn_v.weight", {E, KV}, 0.0f, amp(E), true);
    add(p + "attn_output.weight", {Q, E}, 0.0f, amp(Q), true);
  } else {
    add(p + "ffn_up.weight", {E, int64_t(P.n_ff)}, 0.0f, amp(E), true);
    add(p + "ffn_down.weight", {int64_t(P.n_ff), E}, 0.0f, amp(P.n_ff), true);
  }
}

}  // namespace

std::vector<std::string> generate_model(const ModelPreset& P, TensorType dtype, uint64_t seed,
                                        const std::string& out_path,
                                        const GgufWriter::Progress& progress) {
  WeightFormat f;
  f.base = dtype;
  f.name = traits(dtype).name;
  return generate_model(P, f, seed, out_path, progress);
}

std::vector<std::string> generate_model(const ModelPreset& P, const WeightFormat& format,
                                        uint64_t seed, const std::string& out_path,
                                        const GgufWriter::Progress& progress) {
  const TensorType dtype = format.base;
  check(traits(dtype).supported,
        "gen-model: dtype " + format.name + " is not supported (" + weight_format_names() + ")");
  std::vector<std::string> notes;
  // (fallback type, row length) -> the tensors that got it, all summed up in one note.
  std::map<std::pair<std::string, int64_t>, std::vector<std::string>> fallbacks;
  int n_matrices = 0, n_fallbacks = 0;
  const std::string a = P.arch + ".";
  GgufWriter w;
  w.add_string("general.architecture", P.arch);
  w.add_string("general.name",
               "tzero gen-model " + P.name + " " + format.name + " seed " + std::to_string(seed));
  w.add_u32("general.file_type", llama_file_type(format));
  w.add_u32(a + "context_length", uint32_t(P.n_ctx));
  w.add_u32(a + "embedding_length", uint32_t(P.n_embd));
  const bool nemotron = !P.layer_pattern.empty();
  if (nemotron) {  // per layer: the MLP layers' width, the attention layers' kv heads, else 0
    std::vector<int32_t> ff, kv;
    for (char c : P.layer_pattern) {
      ff.push_back(c == '-' ? P.n_ff : 0);
      kv.push_back(c == '*' ? P.n_head_kv : 0);
    }
    w.add_i32_array(a + "feed_forward_length", ff);
    w.add_i32_array(a + "attention.head_count_kv", kv);
  } else {
    w.add_u32(a + "feed_forward_length", uint32_t(P.n_ff));
  }
  w.add_u32(a + "block_count", uint32_t(P.n_layer + P.n_nextn));
  w.add_u32(a + "attention.head_count", uint32_t(P.n_head));
  if (!nemotron) w.add_u32(a + "attention.head_count_kv", uint32_t(P.n_head_kv));
  if (P.head_dim * P.n_head != P.n_embd || nemotron) {
    w.add_u32(a + "attention.key_length", uint32_t(P.head_dim));
    w.add_u32(a + "attention.value_length",
              uint32_t(P.kv_lora_rank > 0 ? P.kv_lora_rank : P.head_dim));  // MLA: the latent
  }
  const int n_rot = P.n_rot > 0 ? P.n_rot : P.head_dim;
  w.add_u32(a + "rope.dimension_count", uint32_t(n_rot));
  w.add_f32(a + "rope.freq_base", float(P.rope_base));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", P.rms_eps);
  if (P.rope_scale != 1.0) {
    w.add_string(a + "rope.scaling.type", P.yarn_orig_ctx > 0 ? "yarn" : "linear");
    w.add_f32(a + "rope.scaling.factor", float(P.rope_scale));
    if (P.yarn_orig_ctx > 0)
      w.add_u32(a + "rope.scaling.original_context_length", uint32_t(P.yarn_orig_ctx));
  }
  if (P.n_swa > 0) w.add_u32(a + "attention.sliding_window", uint32_t(P.n_swa));
  if (P.kv_lora_rank > 0) {  // MLA as a current llama.cpp conversion writes it
    w.add_u32(a + "attention.kv_lora_rank", uint32_t(P.kv_lora_rank));
    if (P.q_lora_rank > 0) w.add_u32(a + "attention.q_lora_rank", uint32_t(P.q_lora_rank));
    w.add_u32(a + "attention.key_length_mla", uint32_t(P.head_dim_k_mla));
    w.add_u32(a + "attention.value_length_mla", uint32_t(P.head_dim_v_mla));
    if (P.yarn_log_multiplier > 0)
      w.add_f32(a + "rope.scaling.yarn_log_multiplier", P.yarn_log_multiplier);
  }
  if (P.arch == "gemma2") {
    w.add_f32(a + "attn_logit_softcapping", 50.0f);
    w.add_f32(a + "final_logit_softcapping", 30.0f);
  }
  if (P.n_ctx_orig > 0) {
    // Phi-3's attention factor for its context extension: sqrt(1 + ln(ctx/orig) / ln(orig)).
    const double r = double(P.n_ctx) / P.n_ctx_orig;
    w.add_u32(a + "rope.scaling.original_context_length", uint32_t(P.n_ctx_orig));
    w.add_f32(a + "rope.scaling.attn_factor",
              float(std::sqrt(1.0 + std::log(r) / std::log(double(P.n_ctx_orig)))));
  }
  if (P.n_expert > 0) {
    w.add_u32(a + "expert_count", uint32_t(P.n_expert));
    w.add_u32(a + "expert_used_count", uint32_t(P.n_expert_used));
    if (P.arch != "llama") w.add_u32(a + "expert_feed_forward_length", uint32_t(P.n_ff_exp));
    if (P.n_ff_shexp > 0)
      w.add_u32(a + "expert_shared_feed_forward_length", uint32_t(P.n_ff_shexp));
    if (P.arch == "glm4moe" || P.arch == "deepseek2") {  // as llama.cpp's converter writes them
      w.add_u32(a + "expert_shared_count", uint32_t(P.n_expert_shared));
      w.add_u32(a + "leading_dense_block_count", uint32_t(P.n_dense_lead));
      w.add_f32(a + "expert_weights_scale", P.expert_weights_scale);
      w.add_bool(a + "expert_weights_norm", true);
      w.add_u32(a + "expert_gating_func", 2);
      w.add_u32(a + "expert_group_count", uint32_t(P.n_groups));
      w.add_u32(a + "expert_group_used_count", uint32_t(P.n_groups_used));
      if (P.arch == "glm4moe") w.add_u32(a + "nextn_predict_layers", uint32_t(P.n_nextn));
    }
  }
  if (P.ssm_d_conv > 0) {  // as llama.cpp's converter writes a Gated DeltaNet or Mamba-2 hybrid
    w.add_u32(a + "ssm.conv_kernel", uint32_t(P.ssm_d_conv));
    w.add_u32(a + "ssm.state_size", uint32_t(P.ssm_d_state));
    w.add_u32(a + "ssm.group_count", uint32_t(P.ssm_n_group));
    w.add_u32(a + "ssm.time_step_rank", uint32_t(P.ssm_dt_rank));
    w.add_u32(a + "ssm.inner_size",
              uint32_t(P.ssm_d_inner > 0 ? P.ssm_d_inner : P.ssm_dt_rank * P.ssm_d_state));
    if (P.layer_pattern.empty())
      w.add_u32(a + "full_attention_interval", uint32_t(P.full_attn_interval));
    else  // nemotron_h: its config's layer_norm_epsilon too (llama.cpp v0.4.0 requires it)
      w.add_f32(a + "attention.layer_norm_epsilon", P.rms_eps);
    if (!P.rope_sections.empty()) {
      std::vector<int32_t> sec(P.rope_sections.begin(), P.rope_sections.end());
      w.add_i32_array(a + "rope.dimension_sections", sec);
    }
  }
  SpmVocabData vocab = make_synthetic_spm_vocab(P.n_vocab);
  if (P.arch == "phi3") {
    // Phi-3's vocabulary has the control token <|endoftext|>, and llama.cpp looks it up by text
    // in any model named "phi3" (it fails to load without it): the last filler becomes it.
    vocab.tokens.back() = "<|endoftext|>";
    vocab.scores.back() = 0.0f;
    vocab.types.back() = 3;
  }
  if (P.arch == "gpt-oss") {
    // gpt-oss's harmony control tokens (o200k_harmony's names) as the last fillers, so chat
    // replies go through the server's channel split and turns end as llama.cpp ends them.
    const char* harmony[] = {"<|start|>",     "<|end|>",    "<|message|>", "<|channel|>",
                             "<|constrain|>", "<|return|>", "<|call|>"};
    const size_t n = vocab.tokens.size();
    for (size_t i = 0; i < 7; ++i) {
      vocab.tokens[n - 7 + i] = harmony[i];
      vocab.scores[n - 7 + i] = 0.0f;
      vocab.types[n - 7 + i] = 3;
    }
  }
  write_spm_vocab(w, vocab);
  w.add_string("tokenizer.ggml.pre", "default");
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
  const PresetTokenizerExtras extras = preset_tokenizer_extras(P.name);
  if (extras.eot >= 0) w.add_u32("tokenizer.ggml.eot_token_id", uint32_t(extras.eot));
  if (!extras.chat_template.empty()) w.add_string("tokenizer.chat_template", extras.chat_template);

  // Values: uniform in [-a, a] with a = sqrt(3 / fan_in) (unit variance outputs) for matrices;
  // 1 + U(-0.1, 0.1) for norms; U(-0.1, 0.1) for biases.
  // Rows of the embedding and output matrices that belong to byte and control tokens are scaled
  // down, so random models prefer word pieces and their text stays readable UTF-8.
  std::vector<float> vocab_row_scale(size_t(P.n_vocab), 1.0f);
  for (size_t i = 0; i < vocab.types.size(); ++i)
    if (vocab.types[i] != 1) vocab_row_scale[i] = 0.25f;
  int layer = -1;  // the layer whose tensors are being added
  auto add = [&](const std::string& name, std::vector<int64_t> ne, float center, float amp,
                 bool matrix, const std::vector<float>* row_scale = nullptr) {
    TensorType t = TensorType::F32;
    if (matrix) {
      const TensorType want = mix_tensor_type(format, name, layer, P.n_layer, P.tied_output);
      t = fallback_type(want, ne[0]);
      ++n_matrices;
      if (t != want) {
        ++n_fallbacks;
        // Short names in the note: "blk.N." dropped, so one note covers every layer.
        const size_t dot = name.rfind("blk.", 0) == 0 ? name.find('.', 4) + 1 : 0;
        auto& list =
            fallbacks[{std::string(traits(t).name) + " instead of " + traits(want).name, ne[0]}];
        const std::string short_name = name.substr(dot);
        if (std::find(list.begin(), list.end(), short_name) == list.end())
          list.push_back(short_name);
      }
    }
    const uint64_t s = name_seed(seed, name);
    w.add_tensor(name, t, ne, [ne, t, s, center, amp, row_scale](uint8_t* dst, size_t) {
      SplitMix64 rng(s);
      const size_t row = size_t(ne[0]);
      size_t rows = 1;
      for (size_t i = 1; i < ne.size(); ++i) rows *= size_t(ne[i]);
      std::vector<float> buf(row);
      const size_t rb = row_bytes(t, row);
      for (size_t r = 0; r < rows; ++r) {
        const float scale = row_scale ? (*row_scale)[r] : 1.0f;
        for (auto& x : buf) x = scale * (center + amp * (2.0f * rng.uniform() - 1.0f));
        quantize_row(t, buf.data(), dst + r * rb, row);
      }
    });
  };
  const int64_t E = P.n_embd, F = P.n_ff, Q = int64_t(P.n_head) * P.head_dim,
                KV = int64_t(P.n_head_kv) * P.head_dim, V = P.n_vocab;
  auto amp = [](int64_t fan_in) { return float(std::sqrt(3.0 / double(fan_in))); };
  // With a tied output the embedding also scores the next token; a small embedding keeps the
  // residual stream from being dominated by the input token (which would repeat it forever).
  add("token_embd.weight", {E, V}, 0.0f, P.tied_output ? 0.05f : 1.0f, true, &vocab_row_scale);
  add("output_norm.weight", {E}, 1.0f, 0.1f, false);
  if (!P.tied_output) add("output.weight", {E, V}, 0.0f, amp(E), true, &vocab_row_scale);
  const bool phi3 = P.arch == "phi3";
  const int64_t R = n_rot / 2;
  auto factors = [&](const std::string& name, float lo, float hi) {
    w.add_tensor(name, TensorType::F32, {R}, [R, lo, hi](uint8_t* dst, size_t) {
      for (int64_t i = 0; i < R; ++i) {
        const float f = lo + (hi - lo) * float(i) / float(R > 1 ? R - 1 : 1);
        std::memcpy(dst + size_t(i) * 4, &f, 4);
      }
    });
  };
  if (P.rope_freqs) factors("rope_freqs.weight", 1.0f, 8.0f);
  if (P.n_ctx_orig > 0) {  // LongRoPE: short factors near 1, long ones growing with the index
    factors("rope_factors_long.weight", 1.0f, 40.0f);
    factors("rope_factors_short.weight", 1.0f, 1.5f);
  }
  const bool hybrid = P.ssm_d_conv > 0;
  for (int l = 0; l < P.n_layer + P.n_nextn; ++l) {
    layer = l;
    const std::string p = "blk." + std::to_string(l) + ".";
    if (nemotron) {  // one mixer per layer
      add_nemotron_h_layer(P, l, p, add);
      continue;
    }
    add(p + "attn_norm.weight", {E}, 1.0f, 0.1f, false);
    const bool mla = P.kv_lora_rank > 0;
    if (hybrid) {
      add_hybrid_mixer(P, l, p, add);
      add(p + "post_attention_norm.weight", {E}, 1.0f, 0.1f, false);
    } else if (mla) {  // deepseek2's attention (model/arch/mla_attention.h)
      const int64_t H = P.n_head, C = P.kv_lora_rank, RR = n_rot, DK = P.head_dim_k_mla,
                    DV = P.head_dim_v_mla, QR = P.q_lora_rank;
      if (QR > 0) {
        add(p + "attn_q_a.weight", {E, QR}, 0.0f, amp(E), true);
        add(p + "attn_q_a_norm.weight", {QR}, 1.0f, 0.1f, false);
        add(p + "attn_q_b.weight", {QR, H * DK}, 0.0f, amp(QR), true);
      } else {
        add(p + "attn_q.weight", {E, H * DK}, 0.0f, amp(E), true);
      }
      add(p + "attn_kv_a_mqa.weight", {E, C + RR}, 0.0f, amp(E), true);
      add(p + "attn_kv_a_norm.weight", {C}, 1.0f, 0.1f, false);
      add(p + "attn_k_b.weight", {DK - RR, C, H}, 0.0f, amp(DK - RR), true);
      add(p + "attn_v_b.weight", {C, DV, H}, 0.0f, amp(C), true);
      add(p + "attn_output.weight", {H * DV, E}, 0.0f, amp(H * DV), true);
    } else if (phi3) {
      add(p + "attn_qkv.weight", {E, Q + 2 * KV}, 0.0f, amp(E), true);
    } else {
      add(p + "attn_q.weight", {E, Q}, 0.0f, amp(E), true);
      add(p + "attn_k.weight", {E, KV}, 0.0f, amp(E), true);
      add(p + "attn_v.weight", {E, KV}, 0.0f, amp(E), true);
    }
    const bool gpt_oss = P.arch == "gpt-oss", glm = P.arch == "glm4moe", ds = P.arch == "deepseek2";
    if (P.arch == "qwen2" || P.arch == "qwen2moe" || gpt_oss || glm) {
      add(p + "attn_q.bias", {Q}, 0.0f, 0.1f, false);
      add(p + "attn_k.bias", {KV}, 0.0f, 0.1f, false);
      add(p + "attn_v.bias", {KV}, 0.0f, 0.1f, false);
    }
    if (P.arch == "qwen3" || P.arch == "qwen3moe" || P.arch == "gemma3" || glm) {
      add(p + "attn_q_norm.weight", {P.head_dim}, 1.0f, 0.1f, false);
      add(p + "attn_k_norm.weight", {P.head_dim}, 1.0f, 0.1f, false);
    }
    if (!mla && !hybrid) add(p + "attn_output.weight", {Q, E}, 0.0f, amp(Q), true);
    if (gpt_oss) {
      add(p + "attn_output.bias", {E}, 0.0f, 0.1f, false);
      add(p + "attn_sinks.weight", {P.n_head}, 0.0f, 1.0f, false);
    }
    const bool gemma = P.arch == "gemma2" || P.arch == "gemma3";
    if (gemma) add(p + "post_attention_norm.weight", {E}, 1.0f, 0.1f, false);
    // gpt-oss's norm before the experts is named post_attention_norm.
    if (!hybrid)
      add(p + (gpt_oss || glm ? "post_attention_norm.weight" : "ffn_norm.weight"), {E}, 1.0f, 0.1f,
          false);
    (void)ds;
    if (l >= P.n_layer) {  // a NextN block's own tensors (GLM's multi-token prediction)
      add(p + "nextn.eh_proj.weight", {2 * E, E}, 0.0f, amp(2 * E), true);
      add(p + "nextn.enorm.weight", {E}, 1.0f, 0.1f, false);
      add(p + "nextn.hnorm.weight", {E}, 1.0f, 0.1f, false);
      add(p + "nextn.shared_head_norm.weight", {E}, 1.0f, 0.1f, false);
    }
    if (gemma) add(p + "post_ffw_norm.weight", {E}, 1.0f, 0.1f, false);
    if (phi3) {  // gate rows, then up rows, in one tensor
      add(p + "ffn_up.weight", {E, 2 * F}, 0.0f, amp(E), true);
      add(p + "ffn_down.weight", {F, E}, 0.0f, amp(F), true);
      continue;
    }
    if (P.n_expert == 0 || l < P.n_dense_lead) {
      add(p + "ffn_gate.weight", {E, F}, 0.0f, amp(E), true);
      add(p + "ffn_up.weight", {E, F}, 0.0f, amp(E), true);
      add(p + "ffn_down.weight", {F, E}, 0.0f, amp(F), true);
      continue;
    }
    // The router stays f32, as llama.cpp's quantizer leaves ffn_gate_inp.
    const int64_t X = P.n_expert, FX = P.n_ff_exp, S = P.n_ff_shexp;
    add(p + "ffn_gate_inp.weight", {E, X}, 0.0f, amp(E), false);
    add(p + "ffn_gate_exps.weight", {E, FX, X}, 0.0f, amp(E), true);
    add(p + "ffn_up_exps.weight", {E, FX, X}, 0.0f, amp(E), true);
    add(p + "ffn_down_exps.weight", {FX, E, X}, 0.0f, amp(FX), true);
    if (glm || ds) {  // the choice's bias (sigmoid scores are in (0, 1)); ungated shared experts
      add(p + "exp_probs_b.bias", {X}, 0.0f, 0.05f, false);
      const int64_t SH = FX * P.n_expert_shared;
      add(p + "ffn_gate_shexp.weight", {E, SH}, 0.0f, amp(E), true);
      add(p + "ffn_up_shexp.weight", {E, SH}, 0.0f, amp(E), true);
      add(p + "ffn_down_shexp.weight", {SH, E}, 0.0f, amp(SH), true);
    }
    if (gpt_oss) {
      add(p + "ffn_gate_inp.bias", {X}, 0.0f, 0.1f, false);
      add(p + "ffn_gate_exps.bias", {FX, X}, 0.0f, 0.1f, false);
      add(p + "ffn_up_exps.bias", {FX, X}, 0.0f, 0.1f, false);
      add(p + "ffn_down_exps.bias", {E, X}, 0.0f, 0.1f, false);
    }
    if (S > 0) {
      add(p + "ffn_gate_inp_shexp.weight", {E}, 0.0f, amp(E), false);
      add(p + "ffn_gate_shexp.weight", {E, S}, 0.0f, amp(E), true);
      add(p + "ffn_up_shexp.weight", {E, S}, 0.0f, amp(E), true);
      add(p + "ffn_down_shexp.weight", {S, E}, 0.0f, amp(S), true);
    }
  }
  if (n_fallbacks > 0) {
    std::string groups;
    for (const auto& [key, names] : fallbacks) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      groups += (groups.empty() ? "" : "; ") + key.first + " for rows of " +
                std::to_string(key.second) + " (" + list + ")";
    }
    notes.push_back(std::to_string(n_fallbacks) + " of " + std::to_string(n_matrices) +
                    " weight matrices have rows that do not fit the blocks of their type, and "
                    "get another type as llama-quantize gives them: " +
                    groups);
  }
  w.write(out_path, 32, progress);
  return notes;
}

}  // namespace tzero
