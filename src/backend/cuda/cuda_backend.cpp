// The CUDA backend (backend/backend.h): uploads the weights of the last N layers and the output
// head once, keeps their paged KV on the device, and runs the llama-family layer loop of
// model/forward.cpp with the portable kernels of backend/cuda/cuda_kernels.h, op for op and in
// the same order, tracing under the same names. Plain C++: every CUDA call goes through
// cuda_kernels.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "base/error.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace tzero {

bool cuda_built() {
  return true;
}

DeviceInfo cuda_device_info() {
  DeviceInfo d;
  d.usable = cuda::device_props(&d.name, &d.cc_major, &d.cc_minor, &d.memory_bytes, &d.why_not);
  return d;
}

double measure_device_bandwidth(size_t bytes, int reps) {
  const DeviceInfo d = cuda_device_info();
  check(d.usable, "device bandwidth: " + d.why_not);
  return cuda::copy_bandwidth(bytes, reps);
}

namespace {

// Device memory owned by one object, freed at destruction.
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(size_t bytes) : p_(cuda::dev_alloc(bytes)), bytes_(bytes) {}
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DevBuf() { cuda::dev_free(p_); }
  // Grows (contents lost) to at least `bytes`.
  void reserve(size_t bytes) {
    if (bytes > bytes_) *this = DevBuf(bytes);
  }
  float* f() const { return static_cast<float*>(p_); }
  int32_t* i() const { return static_cast<int32_t*>(p_); }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

struct DevMatrix {
  TensorType type = TensorType::F32;
  const void* data = nullptr;
  size_t n_rows = 0, n_cols = 0, row_bytes = 0;
};

struct DevLayer {
  const float *attn_norm = nullptr, *ffn_norm = nullptr, *bq = nullptr, *bk = nullptr,
              *bv = nullptr, *q_norm = nullptr, *k_norm = nullptr;
  DevMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

class CudaLayers final : public DeviceLayers {
 public:
  CudaLayers(const Model& model, const RopeTable& rope, int gpu_layers, int n_batch, int n_ctx)
      : model_(model),
        hp_(model.hparams()),
        first_(hp_.n_layer - gpu_layers),
        n_batch_(size_t(n_batch)),
        n_ctx_(size_t(n_ctx)) {
    const DeviceInfo dev = cuda_device_info();
    check(dev.usable, "--gpu-layers: " + dev.why_not);
    device_ = describe_device(dev);
    for (int il = first_; il < hp_.n_layer; ++il) {
      const LayerWeights& L = model.layers()[size_t(il)];
      DevLayer d;
      d.attn_norm = vec(L.attn_norm, hp_.n_embd);
      d.ffn_norm = vec(L.ffn_norm, hp_.n_embd);
      d.bq = vec(L.bq, hp_.q_dim());
      d.bk = vec(L.bk, hp_.kv_dim());
      d.bv = vec(L.bv, hp_.kv_dim());
      d.q_norm = vec(L.q_norm, hp_.head_dim);
      d.k_norm = vec(L.k_norm, hp_.head_dim);
      d.wq = mat(L.wq), d.wk = mat(L.wk), d.wv = mat(L.wv), d.wo = mat(L.wo);
      d.w_gate = mat(L.w_gate), d.w_up = mat(L.w_up), d.w_down = mat(L.w_down);
      layers_.push_back(d);
    }
    output_norm_ = vec(model.output_norm(), hp_.n_embd);
    output_ = mat(model.output());
    if (embeds()) tok_embd_ = mat(model.tok_embd());
    rope_table_ = upload(rope.cos_sin(0), size_t(rope.n_pos()) * size_t(rope.n_rot()) * 4);
    n_rot_ = rope.n_rot();

    const size_t E = size_t(hp_.n_embd), Q = size_t(hp_.q_dim()), KV = size_t(hp_.kv_dim()),
                 F = size_t(hp_.n_ff), B = n_batch_;
    x_ = DevBuf(B * E * 4), xb_ = DevBuf(B * E * 4), q_ = DevBuf(B * Q * 4);
    k_ = DevBuf(B * KV * 4), v_ = DevBuf(B * KV * 4), att_ = DevBuf(B * Q * 4);
    proj_ = DevBuf(B * E * 4), gate_ = DevBuf(B * F * 4), up_ = DevBuf(B * F * 4);
    rows_ = DevBuf(B * E * 4), out_ = DevBuf(B * E * 4);
    logits_ = DevBuf(B * size_t(hp_.n_vocab) * 4);
    const size_t kmax = std::max({E, Q, F});
    act_q8_ = DevBuf(B * (kmax / kQBlock + 1) * sizeof(ActQ8));
    act_q8k_ = DevBuf(B * (kmax / kSuperBlock + 1) * sizeof(ActQ8K));
    scores_ = DevBuf(B * size_t(hp_.n_head) * n_ctx_ * 4);
    for (DevBuf* b : {&tok_, &pos_, &seq_, &blk_, &slot_, &out_rows_}) *b = DevBuf(B * 4);
  }

  int first_layer() const override { return first_; }
  bool embeds() const override { return first_ == 0; }
  std::string describe() const override {
    return device_ + ", layers " + std::to_string(first_) + ".." + std::to_string(hp_.n_layer - 1) +
           (embeds() ? " + embedding" : "") + " + output";
  }

  void eval(const ForwardBatch& b, const float* x, const KvStore& kv, float* logits,
            const DeviceTraceFn& trace) override {
    const size_t N = b.tokens.size(), E = size_t(hp_.n_embd), Q = size_t(hp_.q_dim()),
                 KV = size_t(hp_.kv_dim()), F = size_t(hp_.n_ff);
    const int hd = hp_.head_dim;
    check(N >= 1 && N <= n_batch_, "internal: device batch size out of range");
    mirror_kv(kv);
    upload_batch(b, kv.block_size());
    auto tr = [&](const char* name, int layer, const DevBuf& buf, size_t len) {
      if (!trace) return;
      host_.resize(N * len);
      cuda::to_host(host_.data(), buf.get(), N * len * 4);
      trace(name, layer, host_.data(), N, len);
      cuda::to_device(buf.get(), host_.data(), N * len * 4);  // the hook may perturb
    };

    if (embeds()) {
      cuda::embed(tok_embd_.type, tok_embd_.data, tok_embd_.row_bytes, E, tok_.i(), N, x_.f());
      tr("inp_embd", -1, x_, E);
    } else {
      cuda::to_device(x_.get(), x, N * E * 4);
    }
    const float scale = 1.0f / std::sqrt(float(hd));
    const cuda::KvGeom geom{kv_.get(), kv_f16_, int(layers_.size()), kv_block_size_, KV};
    for (int il = first_; il < hp_.n_layer; ++il) {
      const DevLayer& L = layers_[size_t(il - first_)];
      const int li = il - first_;
      cuda::rmsnorm(x_.f(), L.attn_norm, hp_.rms_eps, E, N, xb_.f());
      tr("attn_norm", il, xb_, E);
      mm(L.wq, xb_.f(), N, q_.f());
      mm(L.wk, xb_.f(), N, k_.f());
      mm(L.wv, xb_.f(), N, v_.f());
      if (L.bq) cuda::add_bias(q_.f(), L.bq, N, Q);
      if (L.bk) cuda::add_bias(k_.f(), L.bk, N, KV);
      if (L.bv) cuda::add_bias(v_.f(), L.bv, N, KV);
      if (L.q_norm) {
        cuda::rmsnorm(q_.f(), L.q_norm, hp_.rms_eps, size_t(hd), N * size_t(hp_.n_head), q_.f());
        cuda::rmsnorm(k_.f(), L.k_norm, hp_.rms_eps, size_t(hd), N * size_t(hp_.n_head_kv), k_.f());
      }
      cuda::rope(q_.f(), pos_.i(), N, hp_.n_head, hd, Q, rope_table_.f(), n_rot_, hp_.rope_neox);
      cuda::rope(k_.f(), pos_.i(), N, hp_.n_head_kv, hd, KV, rope_table_.f(), n_rot_,
                 hp_.rope_neox);
      cuda::kv_write(geom, li, k_.f(), v_.f(), blk_.i(), slot_.i(), N);
      tr("Qcur", il, q_, Q);
      tr("Kcur", il, k_, KV);
      tr("Vcur", il, v_, KV);
      cuda::attention(geom, li, q_.f(), pos_.i(), seq_.i(), tables_.i(), table_off_.i(), N,
                      hp_.n_head, hp_.n_head_kv, hd, scale, scores_.f(), n_ctx_, att_.f());
      tr("kqv_out", il, att_, Q);
      mm(L.wo, att_.f(), N, proj_.f());
      tr("attn_out", il, proj_, E);
      cuda::add(x_.f(), proj_.f(), N * E);
      tr("ffn_inp", il, x_, E);
      cuda::rmsnorm(x_.f(), L.ffn_norm, hp_.rms_eps, E, N, xb_.f());
      tr("ffn_norm", il, xb_, E);
      mm(L.w_gate, xb_.f(), N, gate_.f());
      mm(L.w_up, xb_.f(), N, up_.f());
      tr("ffn_gate", il, gate_, F);
      tr("ffn_up", il, up_, F);
      cuda::swiglu(gate_.f(), up_.f(), N * F, gate_.f());
      tr("ffn_swiglu", il, gate_, F);
      mm(L.w_down, gate_.f(), N, proj_.f());
      tr("ffn_out", il, proj_, E);
      cuda::add(x_.f(), proj_.f(), N * E);
      tr("l_out", il, x_, E);
    }

    const size_t n_out = b.logits_rows.size();
    if (!logits || n_out == 0) {
      cuda::sync();
      return;
    }
    cuda::gather_rows(x_.f(), out_rows_.i(), n_out, E, rows_.f());
    cuda::rmsnorm(rows_.f(), output_norm_, hp_.rms_eps, E, n_out, out_.f());
    if (n_out == 1) {
      // Traced as one row (Forward names it by the row's position).
      auto one = [&](const char* name, const DevBuf& buf, size_t len) {
        if (!trace) return;
        host_.resize(len);
        cuda::to_host(host_.data(), buf.get(), len * 4);
        trace(name, -1, host_.data(), 1, len);
        cuda::to_device(buf.get(), host_.data(), len * 4);
      };
      one("result_norm", out_, E);
    }
    mm(output_, out_.f(), n_out, logits_.f());
    cuda::to_host(logits, logits_.get(), n_out * size_t(hp_.n_vocab) * 4);
    cuda::sync();
    if (trace && n_out == 1) trace("result_output", -1, logits, 1, size_t(hp_.n_vocab));
  }

 private:
  const float* vec(const float* host, int n) {
    if (!host) return nullptr;
    return static_cast<const float*>(upload_shared(host, size_t(n) * 4));
  }
  DevMatrix mat(const Matrix& m) {
    DevMatrix d;
    d.type = m.type;
    d.n_rows = size_t(m.n_rows), d.n_cols = size_t(m.n_cols), d.row_bytes = m.row_bytes;
    d.data = upload_shared(m.data, d.n_rows * d.row_bytes);
    return d;
  }
  // One device copy per host array (a tied output shares token_embd's).
  const void* upload_shared(const void* host, size_t bytes) {
    auto it = uploaded_.find(host);
    if (it != uploaded_.end()) return it->second;
    weights_.push_back(upload(host, bytes));
    uploaded_[host] = weights_.back().get();
    return weights_.back().get();
  }
  static DevBuf upload(const void* host, size_t bytes) {
    DevBuf b(bytes);
    cuda::to_device(b.get(), host, bytes);
    return b;
  }

  void mm(const DevMatrix& w, const float* d_x, size_t n, float* d_y) {
    const void* xk = d_x;
    if (w.type == TensorType::Q8_0 || w.type == TensorType::Q4_0) {
      cuda::quantize_act_q8(d_x, act_q8_.get(), n, w.n_cols);
      xk = act_q8_.get();
    } else if (w.type == TensorType::Q4_K || w.type == TensorType::Q6_K) {
      cuda::quantize_act_q8k(d_x, act_q8k_.get(), n, w.n_cols);
      xk = act_q8k_.get();
    }
    cuda::gemm(w.type, w.data, w.row_bytes, xk, w.n_cols, w.n_rows, n, d_y, w.n_rows);
  }

  // The device store mirrors the host store's geometry; a new store (or geometry) starts empty.
  void mirror_kv(const KvStore& kv) {
    const bool f16 = kv.type() == KvType::F16;
    if (&kv == kv_host_ && kv.n_blocks() == kv_blocks_ && kv.block_size() == kv_block_size_ &&
        f16 == kv_f16_)
      return;
    kv_host_ = &kv, kv_blocks_ = kv.n_blocks(), kv_block_size_ = kv.block_size(), kv_f16_ = f16;
    const size_t n =
        size_t(kv_blocks_) * 2 * layers_.size() * size_t(kv_block_size_) * size_t(hp_.kv_dim());
    kv_ = DevBuf();
    kv_ = DevBuf(n * (f16 ? 2 : 4));
  }

  void upload_batch(const ForwardBatch& b, int bs) {
    const size_t N = b.tokens.size(), n_seqs = b.tables.size();
    std::vector<int32_t> seq_len(n_seqs, 0), blk(N), slot(N), off(n_seqs), flat;
    for (size_t t = 0; t < N; ++t) {
      const size_t s = size_t(b.seq[t]);
      seq_len[s] = std::max(seq_len[s], b.pos[t] + 1);
      check(size_t(b.pos[t]) < n_ctx_, "internal: position beyond the device context");
      blk[t] = b.tables[s][b.pos[t] / bs];
      slot[t] = b.pos[t] % bs;
    }
    for (size_t s = 0; s < n_seqs; ++s) {
      off[s] = int32_t(flat.size());
      const int nb = (seq_len[s] + bs - 1) / bs;
      flat.insert(flat.end(), b.tables[s], b.tables[s] + nb);
    }
    if (flat.empty()) flat.push_back(0);
    cuda::to_device(tok_.get(), b.tokens.data(), N * 4);
    cuda::to_device(pos_.get(), b.pos.data(), N * 4);
    cuda::to_device(seq_.get(), b.seq.data(), N * 4);
    cuda::to_device(blk_.get(), blk.data(), N * 4);
    cuda::to_device(slot_.get(), slot.data(), N * 4);
    tables_.reserve(flat.size() * 4);
    cuda::to_device(tables_.get(), flat.data(), flat.size() * 4);
    table_off_.reserve(n_seqs * 4);
    cuda::to_device(table_off_.get(), off.data(), n_seqs * 4);
    cuda::to_device(out_rows_.get(), b.logits_rows.data(), b.logits_rows.size() * 4);
  }

  const Model& model_;
  const HParams& hp_;
  int first_;
  size_t n_batch_, n_ctx_;
  std::string device_;
  std::vector<DevBuf> weights_;
  std::map<const void*, const void*> uploaded_;
  std::vector<DevLayer> layers_;
  const float* output_norm_ = nullptr;
  DevMatrix output_, tok_embd_;
  DevBuf rope_table_;
  int n_rot_ = 0;
  DevBuf x_, xb_, q_, k_, v_, att_, proj_, gate_, up_, rows_, out_, logits_, act_q8_, act_q8k_,
      scores_;
  DevBuf tok_, pos_, seq_, blk_, slot_, out_rows_, tables_, table_off_;
  DevBuf kv_;
  const KvStore* kv_host_ = nullptr;
  int kv_blocks_ = 0, kv_block_size_ = 0;
  bool kv_f16_ = false;
  std::vector<float> host_;
};

}  // namespace

std::unique_ptr<DeviceLayers> make_cuda_layers(const Model& model, const RopeTable& rope,
                                               int gpu_layers, int n_batch, int n_ctx) {
  check(gpu_layers >= 1 && gpu_layers <= model.hparams().n_layer,
        "internal: gpu_layers out of range");
  return std::make_unique<CudaLayers>(model, rope, gpu_layers, n_batch, n_ctx);
}

}  // namespace tzero
