#include "model/weights.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/hash.h"
#include "kernels/quant.h"
#include "kernels/rows16.h"
#include "model/model_keys.h"

namespace tzero {

namespace {
std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}
}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, MappedFile::Load load,
                                   const KernelSet* layout_for) {
  auto model = std::make_unique<Model>(std::make_unique<GgufFile>(path, load), layout_for);
  const std::string note = unknown_keys_note(*model);
  if (!note.empty()) std::fprintf(stderr, "tzero: note: %s\n", note.c_str());
  return model;
}

std::string unknown_keys_note(const Model& model) {
  const HParams& hp = model.hparams();
  const auto keys = unknown_model_keys(model.gguf(), hp.arch, hp.arch_name);
  if (keys.empty()) return "";
  std::string s = model.gguf().path() + ": " + std::to_string(keys.size()) + " metadata key" +
                  (keys.size() == 1 ? "" : "s") + " of '" + excerpt(hp.arch_name) +
                  "' that tzero does not know, not applied (see `tzero info`): ";
  for (size_t i = 0; i < keys.size() && i < 8; ++i) s += (i ? ", " : "") + excerpt(keys[i], 80);
  if (keys.size() > 8) s += ", ...";
  return s;
}

const GgufTensorInfo* Model::use(const std::string& name) {
  const GgufTensorInfo* t = file_->find_tensor(name);
  if (t) used_.insert(name);
  return t;
}

WeightLayout Model::matrix_layout(const GgufTensorInfo& t, size_t n_rows, size_t rows_per_matrix,
                                  size_t row_bytes) {
  if (const auto it = repacked_.find(t.name); it != repacked_.end()) return it->second;
  if (!layout_for_ || float_reads_.count(t.name) || overlapping_.count(t.name))
    return WeightLayout::File;
  // Rows16 where the set has its kernel and no panel would span two experts or two parts of a
  // fused tensor (rows_per_matrix: their row count); else Blocks8 where the set has that kernel.
  WeightLayout l = WeightLayout::File;
  if (layout_for_->gemm_rows16_for(t.type) &&
      (rows_per_matrix == n_rows || rows_per_matrix % kRows16 == 0))
    l = WeightLayout::Rows16;
  else if (layout_for_->gemm_blocks8_for(t.type))
    l = WeightLayout::Blocks8;
  if (l == WeightLayout::File) return l;
  uint8_t* bytes = file_->writable_data(t);
  if (!bytes) return WeightLayout::File;  // mapped: the page cache's bytes are not ours
  // Only the rows this process holds: all, or an expert parallelism rank's experts (whole
  // matrices of rows_per_matrix rows, so whole Rows16 panels).
  const auto [lo, hi] = file_->owned_part(t);
  const size_t matrix_bytes = rows_per_matrix * row_bytes;
  check((lo == 0 && hi == t.n_bytes) || (lo % matrix_bytes == 0 && hi % matrix_bytes == 0),
        "internal: a part of '" + t.name + "' that is not whole matrices");
  if (l == WeightLayout::Rows16)
    to_rows16(t.type, bytes + lo, (hi - lo) / row_bytes, row_bytes);
  else
    to_blocks8(t.type, bytes + lo, (hi - lo) / row_bytes, row_bytes);
  repacked_[t.name] = l;
  return l;
}

size_t Model::repacked_tensors(WeightLayout l) const {
  size_t n = 0;
  for (const auto& [name, layout] : repacked_) n += layout == l;
  return n;
}

std::string Model::file_xxh128() const {
  hash_file(nullptr);
  return xxh128_;
}

bool Model::hash_file(const FileBytesSeen& seen) const {
  bool now = false;
  std::call_once(xxh128_once_, [&] {
    now = true;
    const uint8_t* base = file_->file_data();
    std::vector<const GgufTensorInfo*> repacked;
    for (const auto& [name, layout] : repacked_) repacked.push_back(file_->find_tensor(name));
    // (By file position: a tensor's bytes may have been copied out of the file, own_tensors.)
    std::sort(
        repacked.begin(), repacked.end(),
        [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    Hasher128 h;
    // The file's bytes [from, to). Where the tensors this process computes with were copied out
    // of the mapped file (a pipeline rank: GgufFile::own_tensors), the mapped pages leave
    // resident memory once hashed: the rest of a model larger than memory hashes in passing.
    // (Elsewhere they are the weights themselves: released, the next pass would fault them in.)
    const bool release = file_->owns_tensors();
    auto hash_range = [&](size_t from, size_t to) {
      for (size_t at = from; at < to;) {
        const size_t n = std::min<size_t>(to - at, size_t(64) << 20);
        h.update(base + at, n);
        if (seen) seen(at, base + at, n);
        if (release) file_->release_file_bytes(at, n);
        at += n;
      }
    };
    size_t pos = 0;
    std::vector<uint8_t> rows;
    for (const GgufTensorInfo* t : repacked) {
      // Its repacked rows unpacked; the rest of it (a part copied: an expert parallelism rank's
      // experts) as the file has it.
      const auto [lo, hi] = file_->owned_part(*t);
      const size_t at = file_->data_offset() + size_t(t->offset);
      const size_t rb = row_bytes(t->type, size_t(t->ne[0]));
      hash_range(pos, at + lo);
      const WeightLayout l = repacked_.at(t->name);
      const size_t q = layout_row_quantum(l);  // whole Rows16 panels per chunk
      const size_t chunk = std::max<size_t>(1, (4 << 20) / (rb * q)) * q;
      for (size_t r = lo / rb; r < hi / rb; r += chunk) {
        const size_t nr = std::min(chunk, hi / rb - r);
        rows.resize(nr * rb);
        unpack_rows(l, t->type, t->data + r * rb, rows.data(), nr, rb);
        h.update(rows.data(), rows.size());
      }
      pos = at + hi;
    }
    hash_range(pos, file_->file_size());
    xxh128_ = h.hex();
  });
  return now;
}

void Model::note_float_read(const std::string& name) {
  check(!repacked_.count(name),
        "internal: tensor '" + name + "' read as floats after its repacking");
  float_reads_.insert(name);
}

namespace {
const char* kSupportedTypes =
    "supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_k, q3_k, q4_k, "
    "q5_k, q6_k, iq4_xs";
}

Matrix Model::matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool required,
                     int64_t parts) {
  const GgufTensorInfo* t = use(name);
  if (!t) {
    if (required) file_->fail("missing tensor '" + name + "'");
    return {};
  }
  if (t->ne.size() != 2 || t->ne[0] != n_cols || t->ne[1] != n_rows)
    file_->fail("tensor '" + name + "' has shape " + shape_str(t->ne) + ", expected [" +
                std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
  const auto& tr = traits(t->type);
  if (!tr.supported)
    file_->fail("tensor '" + name + "' has type " + tr.name + ", which tzero cannot compute yet (" +
                kSupportedTypes + ")");
  const size_t rb = row_bytes(t->type, size_t(n_cols));
  const size_t part = size_t(parts ? parts : n_rows);
  return Matrix{t->type, t->data, n_rows, n_cols, rb, matrix_layout(*t, size_t(n_rows), part, rb)};
}

ExpertMatrix Model::experts(const std::string& name, int64_t n_expert, int64_t n_rows,
                            int64_t n_cols) {
  const GgufTensorInfo* t = use(name);
  if (!t) file_->fail("missing tensor '" + name + "'");
  if (t->ne.size() != 3 || t->ne[0] != n_cols || t->ne[1] != n_rows || t->ne[2] != n_expert)
    file_->fail("tensor '" + name + "' has shape " + shape_str(t->ne) + ", expected [" +
                std::to_string(n_cols) + ", " + std::to_string(n_rows) + ", " +
                std::to_string(n_expert) + "] (columns, rows, experts)");
  const auto& tr = traits(t->type);
  if (!tr.supported)
    file_->fail("tensor '" + name + "' has type " + tr.name + ", which tzero cannot compute yet (" +
                kSupportedTypes + ")");
  const size_t rb = row_bytes(t->type, size_t(n_cols));
  return ExpertMatrix{Matrix{t->type, t->data, n_rows, n_cols, rb,
                             matrix_layout(*t, size_t(n_rows * n_expert), size_t(n_rows), rb)},
                      n_expert};
}

// deepseek2's attention as a current llama.cpp conversion stores it (hparams.h, MLA).
void Model::load_mla(const std::string& p, LayerWeights& l) {
  const int64_t E = hp_.n_embd, H = hp_.n_head, R = hp_.n_rot, C = hp_.kv_lora_rank;
  const int64_t DK = hp_.head_dim_k_mla, DV = hp_.head_dim_v_mla, NOPE = DK - R;
  if (file_->find_tensor(p + "attn_kv_b.weight"))
    file_->fail("tensor '" + p +
                "attn_kv_b.weight': an older deepseek2 conversion (no attn_k_b / attn_v_b) "
                "that tzero does not run; convert it again with a current llama.cpp");
  if (hp_.q_lora_rank > 0) {
    const int64_t QR = hp_.q_lora_rank;
    l.wq_a = matrix(p + "attn_q_a.weight", QR, E);
    l.q_a_norm = vector(p + "attn_q_a_norm.weight", QR);
    l.wq_b = matrix(p + "attn_q_b.weight", H * DK, QR);
  } else {
    l.wq = matrix(p + "attn_q.weight", H * DK, E);
  }
  l.wkv_a = matrix(p + "attn_kv_a_mqa.weight", C + R, E);
  l.kv_a_norm = vector(p + "attn_kv_a_norm.weight", C);
  l.wk_b = experts(p + "attn_k_b.weight", H, C, NOPE);
  l.wv_b = experts(p + "attn_v_b.weight", H, DV, C);
  l.wo = matrix(p + "attn_output.weight", E, H * DV);
}

void Model::load_delta_net(const std::string& p, LayerWeights& l) {
  const int64_t E = hp_.n_embd, C = int64_t(hp_.conv_channels()), Hv = hp_.ssm_dt_rank,
                Dv = hp_.delta_head_v_dim(), I = hp_.ssm_d_inner, K = hp_.ssm_d_conv;
  if (hp_.arch == Arch::Qwen3Next && !file_->find_tensor(p + "attn_qkv.weight")) {
    l.ssm_in = matrix(p + "ssm_in.weight", C + I, E);  // an older conversion
  } else {
    l.ssm_qkv = matrix(p + "attn_qkv.weight", C, E);
    l.ssm_z = matrix(p + "attn_gate.weight", I, E);
  }
  if (hp_.arch == Arch::Qwen3Next) {
    l.ssm_ba = matrix(p + "ssm_ba.weight", 2 * Hv, E);
  } else {
    l.ssm_beta = matrix(p + "ssm_beta.weight", Hv, E);
    l.ssm_alpha = matrix(p + "ssm_alpha.weight", Hv, E);
  }
  l.ssm_conv1d = table(p + "ssm_conv1d.weight", C, K);
  l.ssm_dt = vector(p + "ssm_dt.bias", Hv);
  l.ssm_a = vector(p + "ssm_a", Hv);
  l.ssm_norm = vector(p + "ssm_norm.weight", Dv);
  l.ssm_out = matrix(p + "ssm_out.weight", E, I);
}

void Model::load_nemotron_h_layer(int il, const std::string& p, LayerWeights& l) {
  const int64_t E = hp_.n_embd, C = int64_t(hp_.conv_channels()), H = hp_.ssm_dt_rank,
                I = hp_.ssm_d_inner, K = hp_.ssm_d_conv, G = hp_.ssm_n_group, Q = hp_.q_dim(),
                KV = hp_.kv_dim(), F = hp_.n_ff;
  l.attn_norm = vector(p + "attn_norm.weight", E);
  switch (hp_.layer_kinds[size_t(il)]) {
    case LayerKind::Recurrent:
      l.ssm_in = matrix(p + "ssm_in.weight", I + C + H, E);
      l.ssm_conv1d = table(p + "ssm_conv1d.weight", C, K);
      l.ssm_conv1d_b = vector(p + "ssm_conv1d.bias", C);  // llama.cpp's graph adds it always
      l.ssm_dt = vector(p + "ssm_dt.bias", H);
      l.ssm_a = table(p + "ssm_a", H, 1);
      l.ssm_d = table(p + "ssm_d", H, 1);
      l.ssm_norm = table(p + "ssm_norm.weight", G, I / G);
      l.ssm_out = matrix(p + "ssm_out.weight", E, I);
      return;
    case LayerKind::Attention:
      l.wq = matrix(p + "attn_q.weight", Q, E);
      l.wk = matrix(p + "attn_k.weight", KV, E);
      l.wv = matrix(p + "attn_v.weight", KV, E);
      l.wo = matrix(p + "attn_output.weight", E, Q);
      l.bq = vector(p + "attn_q.bias", Q, false);
      l.bk = vector(p + "attn_k.bias", KV, false);
      l.bv = vector(p + "attn_v.bias", KV, false);
      l.bo = vector(p + "attn_output.bias", E, false);
      return;
    case LayerKind::Mlp:
      l.w_up = matrix(p + "ffn_up.weight", F, E);
      l.w_down = matrix(p + "ffn_down.weight", E, F);
      l.ffn_up_b = vector(p + "ffn_up.bias", F, false);
      l.ffn_down_b = vector(p + "ffn_down.bias", E, false);
      return;
  }
}

void Model::load_experts(const std::string& p, LayerWeights& l) {
  const int64_t E = hp_.n_embd, X = hp_.n_expert, F = hp_.n_ff_exp;
  if (!file_->find_tensor(p + "ffn_gate_exps.weight") &&
      file_->find_tensor(p + "ffn_gate.0.weight"))
    file_->fail("tensor '" + p +
                "ffn_gate.0.weight': experts stored one tensor each (an old "
                "Mixtral conversion) are not supported; convert again with llama.cpp's "
                "convert_hf_to_gguf.py (3-D ffn_{gate,up,down}_exps)");
  l.gate_inp = matrix(p + "ffn_gate_inp.weight", X, E);
  l.gate_exps = experts(p + "ffn_gate_exps.weight", X, F, E);
  l.up_exps = experts(p + "ffn_up_exps.weight", X, F, E);
  l.down_exps = experts(p + "ffn_down_exps.weight", X, E, F);
  if (hp_.arch == Arch::GptOss) {
    l.gate_inp_b = vector(p + "ffn_gate_inp.bias", X);
    l.gate_exps_b = table(p + "ffn_gate_exps.bias", X, F);
    l.up_exps_b = table(p + "ffn_up_exps.bias", X, F);
    l.down_exps_b = table(p + "ffn_down_exps.bias", X, E);
  }
  if (hp_.expert_gating == MoeGating::Sigmoid || hp_.expert_gating == MoeGating::GroupedSoftmax)
    // glm4moe requires it, deepseek2 may have it
    l.exp_probs_b = vector(p + "exp_probs_b.bias", X, hp_.arch == Arch::Glm4Moe);
  if (hp_.n_expert_shared > 0) {  // ungated shared experts, as one of their summed width
    const int64_t S = F * hp_.n_expert_shared;
    l.gate_shexp = matrix(p + "ffn_gate_shexp.weight", S, E);
    l.up_shexp = matrix(p + "ffn_up_shexp.weight", S, E);
    l.down_shexp = matrix(p + "ffn_down_shexp.weight", E, S);
    return;
  }
  if (hp_.arch != Arch::Qwen2Moe && hp_.arch != Arch::Qwen3Next && hp_.arch != Arch::Qwen35Moe)
    return;
  const int64_t S = hp_.n_ff_shexp;
  l.gate_shexp = matrix(p + "ffn_gate_shexp.weight", S, E);
  l.up_shexp = matrix(p + "ffn_up_shexp.weight", S, E);
  l.down_shexp = matrix(p + "ffn_down_shexp.weight", E, S);
  const float* g = vector(p + "ffn_gate_inp_shexp.weight", E);
  l.gate_inp_shexp =
      Matrix{TensorType::F32, reinterpret_cast<const uint8_t*>(g), 1, E, size_t(E) * sizeof(float)};
}

const float* Model::table(const std::string& name, int64_t n_rows, int64_t n_cols) {
  const GgufTensorInfo* t = use(name);
  if (!t) file_->fail("missing tensor '" + name + "'");
  note_float_read(name);
  if (t->ne.size() != 2 || t->ne[0] != n_cols || t->ne[1] != n_rows)
    file_->fail("tensor '" + name + "' has shape " + shape_str(t->ne) + ", expected [" +
                std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
  if (t->type == TensorType::F32) return reinterpret_cast<const float*>(t->data);
  if (!traits(t->type).supported || size_t(n_cols) % traits(t->type).block_size != 0)
    file_->fail("tensor '" + name + "' has unsupported type " + traits(t->type).name);
  const size_t rb = row_bytes(t->type, size_t(n_cols));
  widened_.emplace_back(size_t(n_rows * n_cols));
  for (int64_t r = 0; r < n_rows; ++r)
    dequantize_row(t->type, t->data + size_t(r) * rb, widened_.back().data() + r * n_cols,
                   size_t(n_cols));
  return widened_.back().data();
}

const float* Model::vector(const std::string& name, int64_t n, bool required, bool optional) {
  const GgufTensorInfo* t = use(name);
  if (!t) {
    if (required && !optional) file_->fail("missing tensor '" + name + "'");
    return nullptr;
  }
  note_float_read(name);
  if (t->n_elements() != n || t->ne[0] != n)
    file_->fail("tensor '" + name + "' has shape " + shape_str(t->ne) + ", expected [" +
                std::to_string(n) + "]");
  if (t->type == TensorType::F32) return reinterpret_cast<const float*>(t->data);
  if (!traits(t->type).supported)
    file_->fail("tensor '" + name + "' has unsupported type " + traits(t->type).name);
  widened_.emplace_back(size_t(n));
  dequantize_row(t->type, t->data, widened_.back().data(), size_t(n));
  return widened_.back().data();
}

Model::Model(std::unique_ptr<GgufFile> file, const KernelSet* layout_for)
    : file_(std::move(file)), hp_(read_hparams(*file_)), layout_for_(layout_for) {
  // A file may give two tensors the same bytes (the reader checks only that each lies inside
  // the data section): such tensors are never repacked, so each view reads the file's bytes.
  std::vector<const GgufTensorInfo*> by_start;
  for (const auto& t : file_->tensors()) by_start.push_back(&t);
  // (By file position: a tensor's bytes may have been copied out of the file, own_tensors.)
  std::sort(by_start.begin(), by_start.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  const GgufTensorInfo* reach = nullptr;  // of the tensors so far, the one ending furthest
  for (const GgufTensorInfo* t : by_start) {
    if (t->n_bytes == 0) continue;
    if (reach && t->offset < reach->offset + reach->n_bytes) {
      overlapping_.insert(t->name);
      overlapping_.insert(reach->name);
    }
    if (!reach || t->offset + t->n_bytes > reach->offset + reach->n_bytes) reach = t;
  }
  const GgufTensorInfo* embd = file_->find_tensor("token_embd.weight");
  if (!embd) file_->fail("missing tensor 'token_embd.weight'");
  if (embd->ne.size() != 2 || embd->ne[0] != hp_.n_embd)
    file_->fail("tensor 'token_embd.weight' has shape " + shape_str(embd->ne) + ", expected [" +
                std::to_string(hp_.n_embd) + ", n_vocab]");
  hp_.n_vocab = int(embd->ne[1]);
  const int64_t V = hp_.n_vocab, E = hp_.n_embd, Q = hp_.q_dim(), KV = hp_.kv_dim(), F = hp_.n_ff,
                D = hp_.head_dim;
  const bool biases = hp_.arch == Arch::Qwen2 || hp_.arch == Arch::Qwen2Moe;
  const bool gpt_oss = hp_.arch == Arch::GptOss;
  const bool glm = hp_.arch == Arch::Glm4Moe;
  const bool gemma = hp_.arch == Arch::Gemma2 || hp_.arch == Arch::Gemma3;
  const bool hybrid = hp_.hybrid();  // qwen3next, qwen35, qwen35moe (nemotron_h loads apart)
  const bool qk_norm =
      hp_.arch == Arch::Qwen3 || hp_.arch == Arch::Qwen3Moe || hp_.arch == Arch::Gemma3 || hybrid;
  tok_embd_ = matrix("token_embd.weight", V, E);
  output_norm_ = vector("output_norm.weight", E);
  output_ = matrix("output.weight", V, E, gpt_oss);  // gpt-oss: never tied (llama.cpp)
  if (!output_.data) {
    output_ = tok_embd_;
    tied_output_ = true;
  }
  const int64_t R = hp_.n_rot / 2;
  rope_freqs_ = vector("rope_freqs.weight", R, false);
  rope_long_ = vector("rope_factors_long.weight", R, false);
  rope_short_ = vector("rope_factors_short.weight", R, false);
  if ((rope_long_ == nullptr) != (rope_short_ == nullptr))
    file_->fail(std::string("tensor '") +
                (rope_long_ ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                "' is missing (LongRoPE needs both factor sets)");
  if (rope_freqs_ && rope_long_)
    file_->fail("tensors 'rope_freqs.weight' and 'rope_factors_long.weight' both present");
  for (const float* f : {rope_freqs_, rope_long_, rope_short_})
    for (int64_t i = 0; f && i < R; ++i)
      if (!(f[i] > 0 && f[i] < 1e30f))
        file_->fail("rope frequency factor " + std::to_string(i) + " is not a positive number");
  const bool phi3 = hp_.arch == Arch::Phi3;
  for (int il = 0; il < hp_.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LayerWeights l;
    if (!hp_.layer_kinds.empty()) {  // nemotron_h: one mixer per layer
      load_nemotron_h_layer(il, p, l);
      layers_.push_back(l);
      continue;
    }
    l.attn_norm = vector(p + "attn_norm.weight", E);
    // The hybrids' feed-forward norm is post_attention_norm (llama.cpp's name for it).
    if (hybrid) l.ffn_norm = vector(p + "post_attention_norm.weight", E);
    if (hp_.recurrent_layer(il)) {
      load_delta_net(p, l);
    } else if (hybrid) {
      // Each query head is followed by its output gate's head: (2 * q_dim) rows.
      l.wq = matrix(p + "attn_q.weight", 2 * Q, E);
      l.wk = matrix(p + "attn_k.weight", KV, E);
      l.wv = matrix(p + "attn_v.weight", KV, E);
    } else if (hp_.mla()) {
      load_mla(p, l);
    } else if (phi3 && file_->find_tensor(p + "attn_qkv.weight")) {
      // One fused tensor, q then k then v rows: each part's rows are its own matrix's (a row's
      // dot product does not depend on the rows around it), so no split op is needed.
      const Matrix qkv = matrix(p + "attn_qkv.weight", Q + 2 * KV, E, true, std::gcd(Q, KV));
      l.wq = qkv.rows(0, Q);
      l.wk = qkv.rows(Q, KV);
      l.wv = qkv.rows(Q + KV, KV);
    } else {
      l.wq = matrix(p + "attn_q.weight", Q, E);
      l.wk = matrix(p + "attn_k.weight", KV, E);
      l.wv = matrix(p + "attn_v.weight", KV, E);
    }
    const bool attends = !hp_.recurrent_layer(il);
    if (!hp_.mla() && attends) l.wo = matrix(p + "attn_output.weight", E, Q);
    // glm4moe: biases and per-head norms when the file has them (llama.cpp: optional).
    l.bq = vector(p + "attn_q.bias", Q, biases, glm);
    l.bk = vector(p + "attn_k.bias", KV, biases, glm);
    l.bv = vector(p + "attn_v.bias", KV, biases, glm);
    if (gpt_oss) {
      l.bo = vector(p + "attn_output.bias", E);
      l.sinks = vector(p + "attn_sinks.weight", hp_.n_head);
    }
    l.q_norm = vector(p + "attn_q_norm.weight", D, qk_norm && attends, glm);
    l.k_norm = vector(p + "attn_k_norm.weight", D, qk_norm && attends, glm);
    if ((l.q_norm == nullptr) != (l.k_norm == nullptr))
      file_->fail("tensor '" + p + (l.q_norm ? "attn_k_norm" : "attn_q_norm") +
                  ".weight' is missing (the query and key norms come together)");
    // gpt-oss names the feed-forward's norm post_attention_norm (it comes after the attention).
    if (!hybrid)
      l.ffn_norm =
          vector(p + (gpt_oss || glm ? "post_attention_norm.weight" : "ffn_norm.weight"), E);
    if (gemma) {
      l.attn_post_norm = vector(p + "post_attention_norm.weight", E);
      l.ffn_post_norm = vector(p + "post_ffw_norm.weight", E);
    }
    if (hp_.moe_layer(il)) {
      load_experts(p, l);
    } else if (phi3 && !file_->find_tensor(p + "ffn_gate.weight")) {
      // phi3's fused gate and up: ffn_up holds the gate rows, then the up rows.
      const Matrix gate_up = matrix(p + "ffn_up.weight", 2 * F, E, true, F);
      l.w_gate = gate_up.rows(0, F);
      l.w_up = gate_up.rows(F, F);
      l.w_down = matrix(p + "ffn_down.weight", E, F);
    } else {
      l.w_gate = matrix(p + "ffn_gate.weight", F, E);
      l.w_up = matrix(p + "ffn_up.weight", F, E);
      l.w_down = matrix(p + "ffn_down.weight", E, F);
    }
    layers_.push_back(l);
  }
  // glm4moe's NextN blocks come after the layers that run: accepted and never read (llama.cpp
  // creates them with TENSOR_SKIP and never runs them).
  for (int il = hp_.n_layer; il < hp_.n_layer + hp_.n_layer_nextn; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (const auto& t : file_->tensors())
      if (t.name.rfind(p, 0) == 0) used_.insert(t.name);
  }
  // A tensor tzero does not read would be skipped silently (llama.cpp refuses a file with
  // tensors it does not load, and loads some that tzero has no op for, such as llama's biases).
  for (const auto& t : file_->tensors())
    if (!used_.count(t.name))
      file_->fail("tensor '" + excerpt(t.name) + "' is not one tzero reads for '" +
                  excerpt(hp_.arch_name) + "' (" +
                  std::to_string(file_->tensors().size() - used_.size()) +
                  " such tensors): refusing rather than running without it");
  layout_for_ = nullptr;  // the caller's, for the construction only
}

const float* Model::rope_factors(int n_ctx) const {
  if (rope_freqs_) return rope_freqs_;
  if (!rope_long_) return nullptr;
  return n_ctx > hp_.n_ctx_orig ? rope_long_ : rope_short_;
}

}  // namespace tzero
