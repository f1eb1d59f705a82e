// The gen-model presets (convert/gen_model.h): the shapes of real architectures, tiny ones for
// tests and real ones for benchmarks, their tokenizer extras and parameter counts.
#include <string>
#include <vector>

#include "convert/gen_model.h"

namespace tzero {

namespace {

// A Gated DeltaNet hybrid: the base fields, then the linear attention's sizes.
ModelPreset hybrid(ModelPreset p, int n_rot, int conv, int state, int k_heads, int v_heads,
                   int interval, std::vector<int> sections = {}, bool legacy = false) {
  p.n_rot = n_rot;
  p.ssm_d_conv = conv;
  p.ssm_d_state = state;
  p.ssm_n_group = k_heads;
  p.ssm_dt_rank = v_heads;
  p.full_attn_interval = interval;
  p.rope_sections = std::move(sections);
  p.ssm_legacy = legacy;
  return p;
}

// nemotron_h: one letter per layer ('M' Mamba-2, '*' attention, '-' MLP), the Mamba-2 sizes.
ModelPreset nemotron_h(ModelPreset p, std::string pattern, int conv, int state, int groups,
                       int heads, int inner) {
  p.layer_pattern = std::move(pattern);
  p.ssm_d_conv = conv;
  p.ssm_d_state = state;
  p.ssm_n_group = groups;
  p.ssm_dt_rank = heads;
  p.ssm_d_inner = inner;
  return p;
}

std::vector<ModelPreset> hybrid_presets() {
  return {
      // Mamba-2 (8 heads of 32 in 2 groups of B and C, state 16), attention without rope (4
      // heads, 2 kv), squared-ReLU MLPs, as "M*M-M-". The inner width is twice the residual's
      // and a multiple of groups x residual, which some llama.cpp versions assert.
      nemotron_h({"tiny-nemotron-h",
                  "nemotron_h (Mamba-2, attention without rope and squared-ReLU MLP layers): for "
                  "tests",
                  "nemotron_h", 512, 128, 256, 6, 4, 2, 32, 2048, 10000.0, 1e-5f, false},
                 "M*M-M-", 4, 16, 2, 8, 256),
      // Two value heads per key head (qwen3next repeats them interleaved), a quarter of each
      // head rotated, layers 0-2 linear attention and 3 full, experts with a shared one.
      hybrid({"tiny-qwen3next",
              "qwen3next (Gated DeltaNet + gated attention every 4th layer, experts + shared "
              "expert, partial rotary): for tests",
              "qwen3next", 512, 256, 512, 4, 4, 2, 64, 2048, 10000000.0, 1e-6f, false, 16, 4, 128,
              256},
             16, 4, 32, 2, 4, 4),
      // The older conversion: one fused ssm_in per layer instead of attn_qkv and attn_gate.
      hybrid({"tiny-qwen3next-ssm-in",
              "qwen3next as older conversions wrote it (fused ssm_in): for tests", "qwen3next", 512,
              256, 512, 4, 4, 2, 64, 2048, 10000000.0, 1e-6f, false, 16, 4, 128, 256},
             16, 4, 32, 2, 4, 4, {}, true),
      // Dense, three value heads per key head (tiled), every second layer full attention,
      // IMROPE sections covering the 8 rotated pairs.
      hybrid({"tiny-qwen35",
              "qwen35 (Gated DeltaNet + gated attention every 2nd layer, dense, IMROPE "
              "sections): for tests",
              "qwen35", 512, 256, 512, 4, 4, 2, 64, 2048, 10000000.0, 1e-6f, true},
             16, 4, 32, 2, 6, 2, {3, 3, 2, 0}),
      hybrid(
          {"tiny-qwen35moe", "qwen35moe (Gated DeltaNet, experts + shared expert): for tests",
           "qwen35moe", 512, 256, 512, 4, 4, 2, 64, 2048, 10000000.0, 1e-6f, false, 8, 2, 128, 256},
          16, 4, 32, 2, 4, 4, {3, 3, 2, 0}),
      // Qwen3.5-4B whole (dense; 32 layers, every 4th full attention of 16 query and 4 kv heads
      // of 256, a quarter rotated; 16 key and 32 value heads of 128; tied embeddings of 248320
      // tokens; IMROPE sections [11, 11, 10, 0]): 2.6 GB at q4_k.
      hybrid({"qwen3.5-4b", "Qwen3.5-4B shape (dense)", "qwen35", 248320, 2560, 9216, 32, 16, 4,
              256, 262144, 10000000.0, 1e-6f, true},
             64, 4, 128, 16, 32, 4, {11, 11, 10, 0}),
      // Qwen3-Next-80B-A3B's layer and vocabulary (512 experts of 512, top 10, a shared one;
      // 16 query and 2 kv heads of 256, a quarter rotated; 16 key and 32 value heads of 128)
      // with 4 of its 48 layers: three linear-attention layers and one full.
      hybrid(
          {"qwen3-next-80b-a3b-4l", "Qwen3-Next-80B-A3B shape, 4 of 48 layers", "qwen3next", 151936,
           2048, 5120, 4, 16, 2, 256, 262144, 10000000.0, 1e-6f, false, 512, 10, 512, 512},
          64, 4, 128, 16, 32, 4),
  };
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  // name, description, arch, vocab, embd, ff, layers, heads, kv heads, head_dim, ctx, rope
  // base, rms eps, tied output
  static const std::vector<ModelPreset> presets = [] {
    std::vector<ModelPreset> v = {
        {"tiny", "llama, GQA, 2 layers, dims multiple of 256: for tests", "llama", 512, 256, 512, 2,
         4, 2, 64, 512, 10000.0, 1e-5f, false},
        {"tiny-qwen2", "qwen2 (QKV bias, neox rope), GQA, tied output: for tests", "qwen2", 512,
         256, 512, 2, 4, 2, 64, 512, 1000000.0, 1e-6f, true},
        {"tiny-qwen3", "qwen3 (Q/K norm, head_dim != embd/heads), GQA: for tests", "qwen3", 512,
         256, 512, 2, 4, 2, 128, 512, 1000000.0, 1e-6f, true},
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
        {"tiny-mixtral", "llama with 8 experts (top 2, Mixtral style): for tests", "llama", 512,
         256, 512, 2, 4, 2, 64, 512, 1000000.0, 1e-5f, false, 8, 2, 512, 0},
        {"tiny-qwen2moe",
         "qwen2moe, 8 experts (top 4, not renormalised) + a shared expert: for tests", "qwen2moe",
         512, 256, 1024, 2, 4, 2, 64, 512, 1000000.0, 1e-6f, false, 8, 4, 256, 512},
        // Qwen3-30B-A3B's layer and vocabulary (128 experts, top 8, 768 wide; 32 query and 4 kv
        // heads of 128) with 8 of its 48 layers: the real expert shapes and routing fan-out at a
        // size that fits these machines (3.6 GB at q4_k) and generates in minutes.
        {"qwen3-30b-a3b-8l", "Qwen3-30B-A3B shape, 8 of 48 layers", "qwen3moe", 151936, 2048, 6144,
         8, 32, 4, 128, 40960, 1000000.0, 1e-6f, false, 128, 8, 768, 0},
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
         "deepseek2 (MLA, sigmoid routing in groups, shared expert, 1 dense layer, YaRN): for "
         "tests",
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
    for (auto& h : hybrid_presets()) v.push_back(h);
    return v;
  }();
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
  if (!P.layer_pattern.empty()) {  // nemotron_h: one mixer per layer
    const double N = P.ssm_d_state, G = P.ssm_n_group, H = P.ssm_dt_rank, I = P.ssm_d_inner,
                 C = I + 2 * G * N;
    double total = V * E * (P.tied_output ? 1 : 2) + E;
    for (char c : P.layer_pattern)
      total += E + (c == 'M'   ? E * (I + C + H) + P.ssm_d_conv * C + C + 3 * H + I + I * E
                    : c == '*' ? 2 * E * Q + 2 * E * KV
                               : 2 * E * F);
    return total;
  }
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
  // A hybrid's linear-attention layer instead of attention (and a gated attention's doubled Wq).
  const double D = P.ssm_d_state, Hk = P.ssm_n_group, Hv = P.ssm_dt_rank, I = Hv * D,
               C = 2 * Hk * D + I;
  const double linear = 2 * E + E * (C + I) + 2 * E * Hv + P.ssm_d_conv * C + 2 * Hv + D + I * E;
  const double gated = 2 * E + 3 * E * Q + 2 * E * KV + 2 * P.head_dim;
  const double SH = FX * P.n_expert_shared;  // glm4moe's shared
  const double dense = 3 * E * F;
  const double moe =
      E * X + 3 * X * E * FX + (S > 0 ? 3 * E * S + E : 0) + (SH > 0 ? 3 * E * SH + X : 0);
  double layers = 0;
  for (int l = 0; l < P.n_layer + P.n_nextn; ++l)
    layers += (P.ssm_d_conv > 0 ? (P.recurrent_layer(l) ? linear : gated) : layer) +
              (P.n_expert == 0 || l < P.n_dense_lead ? dense : moe) +
              (l >= P.n_layer ? 2 * E * E + 3 * E : 0);  // a NextN block's own tensors
  return V * E * (P.tied_output ? 1 : 2) + E + layers + rope_factors;
}

const ModelPreset* find_preset(const std::string& name) {
  for (const auto& p : model_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace tzero
