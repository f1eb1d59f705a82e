// The CUDA backend (backend/backend.h): the ops of model/backend_ops.h with the portable
// kernels of backend/cuda/cuda_kernels.h, each in the CPU reference's canonical order. It knows
// no layer order: model/arch/ says what runs, model/forward.cpp which layers run here. Weights
// are uploaded once, on first use, and found by their host address (a tied output shares
// token_embd's copy). The keys and values of its layers live on the device in blocks laid out
// like the host KvStore. Plain C++: every CUDA call goes through cuda_kernels.h.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "base/error.h"
#include "kernels/ops.h"
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

// The types the device embedding lookup dequantizes (cuda_ops.cu dequant_at); others stop the
// pass with an error rather than reading NaN rows.
bool device_embeds(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

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

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class CudaBackend final : public BackendOps {
 public:
  CudaBackend(const HParams& hp, const ActLayout& layout, int first_layer, int n_ctx, int n_batch)
      : hp_(hp),
        first_(first_layer),
        n_batch_(size_t(n_batch)),
        n_ctx_(size_t(n_ctx)),
        bufs_(layout.lens().size()) {
    const DeviceInfo dev = cuda_device_info();
    check(dev.usable, "--gpu-layers: " + dev.why_not);
    device_ = describe_device(dev);
    const RopeTable rope(hp.n_rot, n_ctx, hp.rope_base, hp.rope_freq_scale);  // the CPU's, uploaded
    rope_table_ = upload(rope.cos_sin(0), size_t(rope.n_pos()) * size_t(rope.n_rot()) * 4);
    n_rot_ = rope.n_rot();
    for (DevBuf* b : {&tok_, &pos_, &seq_, &blk_, &slot_, &out_rows_}) *b = DevBuf(n_batch_ * 4);
  }

  std::string describe() const override {
    return device_ + ", layers " + std::to_string(first_) + ".." + std::to_string(hp_.n_layer - 1) +
           (first_ == 0 ? " + embedding" : "") + " + output";
  }

  void begin(const ForwardBatch& b, KvStore& kv) override {
    check(b.size() >= 1 && b.size() <= n_batch_, "internal: device batch size out of range");
    mirror_kv(kv);
    upload_batch(b, kv.block_size());
    n_tok_ = b.size();
    n_out_ = b.logits_rows.size();
  }
  void finish() override { cuda::sync(); }

  void upload(Act dst, const float* host, size_t rows) override {
    cuda::to_device(out(dst, rows), host, rows * dst.len * 4);
  }
  void download(Act src, size_t rows, float* host) override {
    cuda::to_host(host, in(src), rows * src.len * 4);
  }

  void embed(const Matrix& t, Act o) override {
    check(device_embeds(t.type), std::string("CUDA embed: no kernel for ") + traits(t.type).name);
    cuda::embed(t.type, weights(t), t.row_bytes, size_t(t.n_cols), tok_.i(), n_tok_,
                out(o, n_tok_));
  }
  void rmsnorm(Act x, const float* w, float eps, Act o, size_t rows) override {
    float* y = out(o, rows);
    cuda::rmsnorm(in(x), weights(w, x.len), eps, x.len, rows, y);
  }
  void rmsnorm_heads(Act x, const float* w, float eps, size_t head_dim, size_t rows) override {
    cuda::rmsnorm(in(x), weights(w, head_dim), eps, head_dim, rows * (x.len / head_dim), in(x));
  }
  void matmul(const Matrix& w, Act x, Act y, size_t rows) override {
    const void* xk = in(x);
    const size_t K = size_t(w.n_cols);
    if (w.type == TensorType::Q8_0 || w.type == TensorType::Q4_0) {
      act_q8_.reserve(rows * (K / kQBlock + 1) * sizeof(ActQ8));
      cuda::quantize_act_q8(in(x), act_q8_.get(), rows, K);
      xk = act_q8_.get();
    } else if (w.type == TensorType::Q4_K || w.type == TensorType::Q6_K) {
      act_q8k_.reserve(rows * (K / kSuperBlock + 1) * sizeof(ActQ8K));
      cuda::quantize_act_q8k(in(x), act_q8k_.get(), rows, K);
      xk = act_q8k_.get();
    }
    cuda::gemm(w.type, weights(w), w.row_bytes, xk, K, size_t(w.n_rows), rows, out(y, rows), y.len);
  }
  void add_bias(Act y, const float* b, size_t rows) override {
    cuda::add_bias(in(y), weights(b, y.len), rows, y.len);
  }
  void rope(Act x, int n_heads, int head_dim, RopeLayout layout, RopeFreqs freqs) override {
    check(freqs == RopeFreqs::Model, "--gpu-layers: sliding-window rope is not on the device yet");
    cuda::rope(in(x), pos_.i(), n_tok_, n_heads, head_dim, x.len, rope_table_.f(), n_rot_,
               layout == RopeLayout::Neox);
  }
  void kv_write(int layer, Act k, Act v) override {
    cuda::kv_write(geom(), local(layer), in(k), in(v), blk_.i(), slot_.i(), n_tok_);
  }
  void attention(int layer, Act q, Act o, const AttentionSpec& s) override {
    check(s.window == 0 && s.softcap == 0 && !s.sinks,
          "internal: sliding-window, soft-capped or sink attention is not on the device");
    scores_.reserve(n_tok_ * size_t(s.n_head) * n_ctx_ * 4);
    cuda::attention(geom(), local(layer), in(q), pos_.i(), seq_.i(), tables_.i(), table_off_.i(),
                    n_tok_, s.n_head, s.n_head_kv, s.head_dim, s.scale, scores_.f(), n_ctx_,
                    out(o, n_tok_));
  }
  void add(Act x, Act y, size_t rows) override { cuda::add(in(x), in(y), rows * x.len); }
  void scale(Act, float, size_t) override {
    throw Error("--gpu-layers: the CUDA backend does not run gemma layers yet");
  }
  void softcap(Act, float, size_t) override {
    throw Error("--gpu-layers: the CUDA backend does not run gemma layers yet");
  }
  void glu(Activation act, Act gate, Act up, Act o, size_t rows) override {
    switch (act) {
      case Activation::SiLU: {
        float* y = out(o, rows);
        cuda::swiglu(in(gate), in(up), rows * gate.len, y);
        return;
      }
      case Activation::GeluTanh:
        throw Error("--gpu-layers: the CUDA backend has no GeGLU kernel yet");
      case Activation::SwigluOai:
        throw Error("--gpu-layers: the CUDA backend has no gpt-oss SwiGLU kernel yet");
    }
  }
  // Mixture of experts: not on the device yet (backend/backends.cpp refuses such a model
  // before a pass starts; these are the backstop).
  void moe_route(Act, const MoeSpec&, Act, Act, Act, size_t) override { no_moe(); }
  void matmul_experts(const ExpertMatrix&, Act, bool, Act, Act, size_t) override { no_moe(); }
  void moe_combine(Act, Act, Act, size_t) override { no_moe(); }
  void add_expert_bias(Act, const float*, Act, size_t) override { no_moe(); }
  void copy_cols(Act, size_t, size_t, Act, size_t, size_t, size_t, size_t, size_t) override {
    throw Error("--gpu-layers: the CUDA backend does not run MLA (deepseek2) layers yet");
  }
  void scale_by_sigmoid(Act, Act, size_t) override { no_moe(); }
  // Gated DeltaNet hybrids: not on the device yet (backends.cpp refuses them first).
  void mul_sigmoid(Act, Act, size_t) override { no_delta(); }
  void short_conv(int, Act, const float*, int, Act, const float*) override { no_delta(); }
  void ssm_scan(int, Act, Act, const float*, const float*, const float*, Act,
                const SsmSpec&) override {
    no_delta();
  }
  void rmsnorm_groups(Act, const float*, float, size_t, size_t) override { no_delta(); }
  void relu_sqr(Act, size_t) override { no_delta(); }
  void l2norm_heads(Act, size_t, size_t, float, size_t) override { no_delta(); }
  void delta_gates(Act, Act, const float*, const float*, size_t) override { no_delta(); }
  void delta_net(int, Act, Act, Act, Act, const DeltaNetSpec&) override { no_delta(); }
  [[noreturn]] static void no_delta() {
    throw Error("--gpu-layers: the CUDA backend does not run linear-attention layers yet");
  }
  [[noreturn]] static void no_moe() {
    throw Error("--gpu-layers: the CUDA backend does not run mixture-of-experts layers yet");
  }
  void gather_logits_rows(Act x, Act o) override {
    cuda::gather_rows(in(x), out_rows_.i(), n_out_, x.len, out(o, n_out_));
  }

 private:
  float* in(Act a) { return bufs_[size_t(a.id)].f(); }
  float* out(Act a, size_t rows) {
    bufs_[size_t(a.id)].reserve(rows * a.len * 4);
    return bufs_[size_t(a.id)].f();
  }
  int local(int layer) const {
    check(layer >= first_ && layer < hp_.n_layer, "internal: layer not on the device");
    return layer - first_;
  }
  cuda::KvGeom geom() const {
    return {kv_.get(), kv_f16_, hp_.n_layer - first_, kv_block_size_, size_t(hp_.kv_dim())};
  }

  // The device copy of a host weight, uploaded the first time it is used.
  const void* weights(const void* host, size_t bytes) {
    auto it = uploaded_.find(host);
    if (it != uploaded_.end()) return it->second.get();
    return uploaded_.emplace(host, upload(host, bytes)).first->second.get();
  }
  const void* weights(const Matrix& m) {
    // Session::open loads GPU models without repacking (model/weights.h): the file's layout.
    check(m.layout == WeightLayout::File, "internal: a repacked matrix reached the GPU backend");
    return weights(m.data, size_t(m.n_rows) * m.row_bytes);
  }
  const float* weights(const float* v, size_t n) {
    return static_cast<const float*>(weights(static_cast<const void*>(v), n * 4));
  }
  static DevBuf upload(const void* host, size_t bytes) {
    DevBuf b(bytes);
    cuda::to_device(b.get(), host, bytes);
    return b;
  }

  // The device store mirrors the host store's geometry; a new store (or geometry) starts empty.
  void mirror_kv(const KvStore& kv) {
    const bool f16 = kv.type() == KvType::F16;
    if (&kv == kv_host_ && kv.n_blocks() == kv_blocks_ && kv.block_size() == kv_block_size_ &&
        f16 == kv_f16_)
      return;
    kv_host_ = &kv, kv_blocks_ = kv.n_blocks(), kv_block_size_ = kv.block_size(), kv_f16_ = f16;
    const size_t n = size_t(kv_blocks_) * 2 * size_t(hp_.n_layer - first_) *
                     size_t(kv_block_size_) * size_t(hp_.kv_dim());
    kv_ = DevBuf();
    kv_ = DevBuf(n * (f16 ? 2 : 4));
  }

  void upload_batch(const ForwardBatch& b, int bs) {
    const size_t N = b.size(), n_seqs = b.tables.size();
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
    if (!b.logits_rows.empty())
      cuda::to_device(out_rows_.get(), b.logits_rows.data(), b.logits_rows.size() * 4);
  }

  const HParams hp_;
  int first_;
  size_t n_batch_, n_ctx_;
  std::string device_;
  std::unordered_map<const void*, DevBuf> uploaded_;  // host address -> device copy
  std::vector<DevBuf> bufs_;                          // one per Act of the layout
  DevBuf rope_table_;
  int n_rot_ = 0;
  DevBuf act_q8_, act_q8k_, scores_;
  DevBuf tok_, pos_, seq_, blk_, slot_, out_rows_, tables_, table_off_;
  size_t n_tok_ = 0, n_out_ = 0;
  DevBuf kv_;
  const KvStore* kv_host_ = nullptr;
  int kv_blocks_ = 0, kv_block_size_ = 0;
  bool kv_f16_ = false;
};

}  // namespace

std::unique_ptr<BackendOps> make_cuda_backend(const HParams& hp, const ActLayout& layout,
                                              int first_layer, int n_ctx, int n_batch) {
  check(first_layer >= 0 && first_layer < hp.n_layer, "internal: first device layer out of range");
  return std::make_unique<CudaBackend>(hp, layout, first_layer, n_ctx, n_batch);
}

}  // namespace tzero
