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

const std::vector<ModelPreset>& model_presets() {
  // name, description, arch, vocab, embd, ff, layers, heads, kv heads, head_dim, ctx, rope
  // base, rms eps, tied output
  static const std::vector<ModelPreset> presets = {
      {"tiny", "llama, GQA, 2 layers, dims multiple of 256: for tests", "llama", 512, 256, 512, 2,
       4, 2, 64, 512, 10000.0, 1e-5f, false},
      {"tiny-qwen2", "qwen2 (QKV bias, neox rope), GQA, tied output: for tests", "qwen2", 512, 256,
       512, 2, 4, 2, 64, 512, 1000000.0, 1e-6f, true},
      {"tiny-qwen3", "qwen3 (Q/K norm, head_dim != embd/heads), GQA: for tests", "qwen3", 512, 256,
       512, 2, 4, 2, 128, 512, 1000000.0, 1e-6f, true},
      {"110m", "llama2.c stories110M shape", "llama", 32000, 768, 2048, 12, 12, 12, 64, 1024,
       10000.0, 1e-5f, false},
      {"tinyllama-1.1b", "TinyLlama 1.1B shape", "llama", 32000, 2048, 5632, 22, 32, 4, 64, 2048,
       10000.0, 1e-5f, false},
      {"qwen2.5-0.5b", "Qwen2.5 0.5B shape", "qwen2", 151936, 896, 4864, 24, 14, 2, 64, 32768,
       1000000.0, 1e-6f, true},
      {"qwen3-0.6b", "Qwen3 0.6B shape", "qwen3", 151936, 1024, 3072, 28, 16, 8, 128, 40960,
       1000000.0, 1e-6f, true},
      // tiny's shape and so tiny's weights; its end-of-turn token (260, "▁and", not EOS) is one
      // greedy decoding of "Once upon a time" reaches at the third token, and its chat template
      // passes the messages' text through, so run and chat see the same prompt tokens.
      {"tiny-eot", "tiny with an EOT token (260) and a pass-through chat template: for tests",
       "llama", 512, 256, 512, 2, 4, 2, 64, 512, 10000.0, 1e-5f, false},
      // Mixture of experts. The tiny ones: more experts than a batch's tokens choose, so batch
      // mates share some experts and not others.
      {"tiny-qwen3moe", "qwen3moe, 16 experts (top 4, 256 wide): for tests", "qwen3moe", 512, 256,
       1024, 2, 4, 2, 128, 512, 1000000.0, 1e-6f, true, 16, 4, 256, 0},
      {"tiny-mixtral", "llama with 8 experts (top 2, Mixtral style): for tests", "llama", 512, 256,
       512, 2, 4, 2, 64, 512, 1000000.0, 1e-5f, false, 8, 2, 512, 0},
      {"tiny-qwen2moe",
       "qwen2moe, 8 experts (top 4, not renormalised) + a shared expert: for tests", "qwen2moe",
       512, 256, 1024, 2, 4, 2, 64, 512, 1000000.0, 1e-6f, false, 8, 4, 256, 512},
      // Qwen3-30B-A3B's layer and vocabulary (128 experts, top 8, 768 wide; 32 query and 4 kv
      // heads of 128) with 8 of its 48 layers: the real expert shapes and routing fan-out at a
      // size that fits these machines (3.6 GB at q4_k) and generates in minutes.
      {"qwen3-30b-a3b-8l", "Qwen3-30B-A3B shape, 8 of 48 layers", "qwen3moe", 151936, 2048, 6144, 8,
       32, 4, 128, 40960, 1000000.0, 1e-6f, false, 128, 8, 768, 0},
      // Qwen1.5-MoE-A2.7B, whole (24 layers; 60 experts, top 4, 1408 wide, not renormalised; a
      // 5632-wide shared expert): 8.4 GB at q4_k, its 1408-long rows in q8_0 (llama.cpp falls
      // back to q5_0 or q8_0 there).
      {"qwen1.5-moe-a2.7b", "Qwen1.5-MoE-A2.7B shape (qwen2moe)", "qwen2moe", 151936, 2048, 5632,
       24, 16, 16, 128, 8192, 1000000.0, 1e-6f, false, 60, 4, 1408, 5632},
      // gemma3: six layers, so five have a sliding window (12 positions, shorter than most
      // test prompts plus their generated tokens) and one sees everything; linear rope scaling
      // 8 on that one, as Gemma 3 4B and larger have.
      {"tiny-gemma3",
       "gemma3 (sliding window 12 on 5 of 6 layers, GeGLU, post-norms): for tests",
       "gemma3",
       512,
       256,
       512,
       6,
       4,
       1,
       128,
       512,
       1000000.0,
       1e-6f,
       true,
       0,
       0,
       0,
       0,
       12,
       8.0},
      // gemma2: four layers, the even ones with a 12-position window; soft-capped attention
      // scores (50) and logits (30).
      {"tiny-gemma2",
       "gemma2 (window 12 on every other layer, soft-capping): for tests",
       "gemma2",
       512,
       256,
       512,
       4,
       4,
       2,
       64,
       512,
       10000.0,
       1e-6f,
       true,
       0,
       0,
       0,
       0,
       12,
       1.0},
      {"gemma2-2b", "Gemma 2 2B shape (window 4096)",
       "gemma2",    256000,
       2304,        9216,
       26,          8,
       4,           256,
       8192,        10000.0,
       1e-6f,       true,
       0,           0,
       0,           0,
       4096,        1.0},
      {"gemma3-1b", "Gemma 3 1B shape (window 512)",
       "gemma3",    262144,
       1152,        6912,
       26,          4,
       1,           256,
       32768,       1000000.0,
       1e-6f,       true,
       0,           0,
       0,           0,
       512,         1.0},
      {"gemma3-4b", "Gemma 3 4B shape (window 1024, rope scaling 8)",
       "gemma3",    262144,
       2560,        10240,
       34,          8,
       4,           256,
       131072,      1000000.0,
       1e-6f,       true,
       0,           0,
       0,           0,
       1024,        8.0},
      // gpt-oss: four layers, the even ones with an 8-position window (shorter than the test
      // prompts); 8 query heads of 64 (q_dim 512, twice n_embd, as gpt-oss's 4096 over 2880),
      // 2 kv heads; 8 experts, top 4; YaRN factor 32 over an original context of 64.
      {"tiny-gpt-oss",
       "gpt-oss (sinks, window 8 on even layers, biased experts top 4 of 8, YaRN): for tests",
       "gpt-oss",
       512,
       256,
       256,
       4,
       8,
       2,
       64,
       2048,
       150000.0,
       1e-5f,
       false,
       8,
       4,
       256,
       0,
       8,
       32.0,
       0,
       0,
       false,
       64},
      // gpt-oss-20b whole: 24 layers, 32 experts (top 4, 2880 wide), 64 query and 8 kv heads of
      // 64, window 128 on even layers, YaRN 32 over 4096, o200k's 201088 tokens.
      {"gpt-oss-20b",
       "gpt-oss-20b shape (window 128, 32 experts top 4, YaRN 32)",
       "gpt-oss",
       201088,
       2880,
       2880,
       24,
       64,
       8,
       64,
       131072,
       150000.0,
       1e-5f,
       false,
       32,
       4,
       2880,
       0,
       128,
       32.0,
       0,
       0,
       false,
       4096},
      // glm4moe: one dense layer, then two of 16 experts (top 4, 128 wide) and one ungated
      // shared expert, sigmoid routing with a bias, weights renormalised and scaled by 2.5;
      // head_dim 128 over n_embd 256 / 4 heads, half of it rotated (neox); Q/K norms and QKV
      // biases; a fourth block is a NextN layer (written, never run).
      {"tiny-glm4moe",
       "glm4moe (sigmoid routing + bias, shared expert, 1 dense layer, partial rotary, NextN): "
       "for tests",
       "glm4moe",
       512,
       256,
       512,
       3,
       4,
       2,
       128,
       2048,
       1000000.0,
       1e-5f,
       false,
       16,
       4,
       128,
       0,
       0,
       1.0,
       64,
       0,
       false,
       0,
       1,
       1,
       1,
       2.5f},
      // GLM-4.5-Air's layer and vocabulary (128 experts, top 8, 1408 wide, one shared; 96
      // query and 8 kv heads of 128, half rotated; a 10944-wide dense first layer) with 4 of
      // its 46 layers (the dense one and 3 with experts) and no NextN block.
      {"glm-4.5-air-4l",
       "GLM-4.5-Air shape, 4 of 46 layers (1 dense)",
       "glm4moe",
       151552,
       4096,
       10944,
       4,
       96,
       8,
       128,
       131072,
       1000000.0,
       1e-5f,
       false,
       128,
       8,
       1408,
       0,
       0,
       1.0,
       64,
       0,
       false,
       0,
       1,
       1,
       0,
       1.0f},
      // deepseek2 (DeepSeek-V3 style): MLA with a 64-wide latent and a 16-wide rope key, query
      // compression 96, 4 heads of 32 + 16 (output 32); one dense layer, then two of 16 experts
      // in 4 groups (2 chosen), top 4, sigmoid + bias, renormalised and scaled by 2.5, one
      // shared expert; YaRN factor 4 over 64 with yarn_log_multiplier 0.1.
      {"tiny-deepseek2",
       "deepseek2 (MLA, sigmoid routing in groups, shared expert, 1 dense layer, YaRN): for tests",
       "deepseek2",
       512,
       256,
       512,
       3,
       4,
       1,
       80,
       2048,
       10000.0,
       1e-6f,
       false,
       16,
       4,
       128,
       0,
       0,
       4.0,
       16,
       0,
       false,
       64,
       1,
       1,
       0,
       2.5f,
       4,
       2,
       96,
       64,
       48,
       32,
       0.1f},
      // DeepSeek-V3's layer and vocabulary (MLA 512 + 64, query compression 1536, 128 heads of
      // 192 / 128; 256 experts in 8 groups (4 chosen), top 8, 2048 wide, one shared; YaRN 40)
      // with 2 of its 61 layers: the first dense one and one with experts.
      {"deepseek-v3-2l",
       "DeepSeek-V3 shape, 2 of 61 layers (1 dense)",
       "deepseek2",
       129280,
       7168,
       18432,
       2,
       128,
       1,
       576,
       163840,
       10000.0,
       1e-6f,
       false,
       256,
       8,
       2048,
       0,
       0,
       40.0,
       64,
       0,
       false,
       4096,
       1,
       1,
       0,
       2.5f,
       8,
       4,
       1536,
       512,
       192,
       128,
       0.1f},
      // tiny with llama 3.1's rope_freqs (and Llama 3's vocabulary-free shape otherwise).
      {"tiny-llama3",
       "llama with rope_freqs (Llama 3.1 and later): for tests",
       "llama",
       512,
       256,
       512,
       2,
       4,
       2,
       64,
       512,
       500000.0,
       1e-5f,
       false,
       0,
       0,
       0,
       0,
       0,
       1.0,
       0,
       0,
       true},
      // phi3: fused tensors, 48 of 64 dimensions rotated (Phi-4-mini's 0.75), LongRoPE whose
      // short factors cover 256 positions, so the default context (512) takes the long ones.
      {"tiny-phi3", "phi3 (fused qkv and gate/up, partial rotary, LongRoPE): for tests",
       "phi3",      512,
       256,         512,
       2,           4,
       2,           64,
       512,         10000.0,
       1e-5f,       false,
       0,           0,
       0,           0,
       0,           1.0,
       48,          256},
      {"phi-3-mini",
       "Phi-3-mini-4k shape",
       "phi3",
       32064,
       3072,
       8192,
       32,
       32,
       32,
       96,
       4096,
       10000.0,
       1e-5f,
       false,
       0,
       0,
       0,
       0,
       0,
       1.0,
       96,
       0},
      {"phi-4-mini",
       "Phi-4-mini shape (partial rotary, LongRoPE)",
       "phi3",
       200064,
       3072,
       8192,
       32,
       24,
       8,
       128,
       131072,
       10000.0,
       1e-5f,
       true,
       0,
       0,
       0,
       0,
       0,
       1.0,
       96,
       4096},
  };
  return presets;
}

PresetTokenizerExtras preset_tokenizer_extras(const std::string& preset_name) {
  PresetTokenizerExtras x;
  if (preset_name == "tiny-eot") {
    x.eot = 260;
    x.chat_template = "{% for message in messages %}{{ message['content'] }}{% endfor %}";
  }
  return x;
}

double preset_parameters(const ModelPreset& P) {
  const double V = P.n_vocab, E = P.n_embd, F = P.n_ff, Q = double(P.n_head) * P.head_dim,
               KV = double(P.n_head_kv) * P.head_dim, X = P.n_expert, FX = P.n_ff_exp,
               S = P.n_ff_shexp;
  double layer = 2 * E + 2 * E * Q + 2 * E * KV;  // norms, q and o, k and v
  if (P.kv_lora_rank > 0) {                       // MLA instead
    const double H = P.n_head, C = P.kv_lora_rank, R = P.n_rot, DK = P.head_dim_k_mla,
                 DV = P.head_dim_v_mla, QR = P.q_lora_rank;
    layer = 2 * E + (QR > 0 ? E * QR + QR + QR * H * DK : E * H * DK) + E * (C + R) + C +
            H * (DK - R) * C + H * C * DV + H * DV * E;
  }
  if (P.arch == "qwen2" || P.arch == "qwen2moe") layer += Q + 2 * KV;
  if (P.arch == "qwen3" || P.arch == "qwen3moe" || P.arch == "gemma3") layer += 2 * P.head_dim;
  if (P.arch == "gemma2" || P.arch == "gemma3") layer += 2 * E;  // post-attention, post-ffn norms
  const double half_rot = (P.n_rot > 0 ? P.n_rot : P.head_dim) / 2;
  const double rope_factors = half_rot * ((P.n_ctx_orig > 0 ? 2 : 0) + (P.rope_freqs ? 1 : 0));
  if (P.arch == "gpt-oss") layer += E + P.n_head + X + 2 * X * FX + X * E;  // biases, sinks
  if (P.arch == "glm4moe") layer += Q + 2 * KV + 2 * P.head_dim;            // biases, norms
  const double SH = FX * P.n_expert_shared;                                 // glm4moe's shared
  const double dense = 3 * E * F;
  const double moe =
      E * X + 3 * X * E * FX + (S > 0 ? 3 * E * S + E : 0) + (SH > 0 ? 3 * E * SH + X : 0);
  double layers = 0;
  for (int l = 0; l < P.n_layer + P.n_nextn; ++l)
    layers += layer + (P.n_expert == 0 || l < P.n_dense_lead ? dense : moe) +
              (l >= P.n_layer ? 2 * E * E + 3 * E : 0);  // a NextN block's own tensors
  return V * E * (P.tied_output ? 1 : 2) + E + layers + rope_factors;
}

const ModelPreset* find_preset(const std::string& name) {
  for (const auto& p : model_presets())
    if (p.name == name) return &p;
  return nullptr;
}

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
  w.add_u32(a + "feed_forward_length", uint32_t(P.n_ff));
  w.add_u32(a + "block_count", uint32_t(P.n_layer + P.n_nextn));
  w.add_u32(a + "attention.head_count", uint32_t(P.n_head));
  w.add_u32(a + "attention.head_count_kv", uint32_t(P.n_head_kv));
  if (P.head_dim * P.n_head != P.n_embd) {
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
  for (int l = 0; l < P.n_layer + P.n_nextn; ++l) {
    layer = l;
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {E}, 1.0f, 0.1f, false);
    const bool mla = P.kv_lora_rank > 0;
    if (mla) {  // deepseek2's attention (model/arch/mla_attention.h)
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
    if (!mla) add(p + "attn_output.weight", {Q, E}, 0.0f, amp(Q), true);
    if (gpt_oss) {
      add(p + "attn_output.bias", {E}, 0.0f, 0.1f, false);
      add(p + "attn_sinks.weight", {P.n_head}, 0.0f, 1.0f, false);
    }
    const bool gemma = P.arch == "gemma2" || P.arch == "gemma3";
    if (gemma) add(p + "post_attention_norm.weight", {E}, 1.0f, 0.1f, false);
    // gpt-oss's norm before the experts is named post_attention_norm.
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
