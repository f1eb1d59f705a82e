// Import of a llama2.c checkpoint and tokenizer into GGUF (convert/llama2c.h; `tzero convert`).
#include "convert/llama2c.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "convert/synthetic_vocab.h"
#include "format/gguf_writer.h"

namespace tzero {

namespace {

SpmVocabData read_tokenizer(const std::string& path, int vocab_size) {
  MappedFile f(path);
  const uint8_t* p = f.data();
  size_t left = f.size();
  auto take = [&](void* dst, size_t n) {
    if (n > left) throw Error(path + ": truncated tokenizer file");
    std::memcpy(dst, p, n);
    p += n;
    left -= n;
  };
  int32_t max_len = 0;
  take(&max_len, 4);
  if (max_len <= 0 || max_len > 4096) throw Error(path + ": not a llama2.c tokenizer (bad header)");
  SpmVocabData t;
  for (int i = 0; i < vocab_size; ++i) {
    float score;
    int32_t len;
    take(&score, 4);
    take(&len, 4);
    if (len < 0 || len > max_len)
      throw Error(path + ": token " + std::to_string(i) + " has a bad length");
    std::string s(size_t(len), '\0');
    take(s.data(), size_t(len));
    // llama2.c stores "▁" as a space and BOS/EOS as "\n<s>\n", "\n</s>\n".
    std::string piece;
    if (i == 1 || i == 2) {
      piece = i == 1 ? "<s>" : "</s>";
    } else {
      for (char c : s) piece += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    }
    int32_t type = 1;                                                                  // normal
    if (i == 0) type = 2;                                                              // unknown
    if (i == 1 || i == 2) type = 3;                                                    // control
    if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>') type = 6;  // byte
    t.tokens.push_back(std::move(piece));
    t.scores.push_back(score);
    t.types.push_back(type);
  }
  if (left != 0) {
    // More tokens follow: the tokenizer of another model (llama2.c's tokenizer.bin has 32,000).
    // Cutting it would give a vocabulary that decodes the model's ids wrongly.
    size_t more = 0;
    while (left >= 8) {
      int32_t len = 0;
      std::memcpy(&len, p + 4, 4);
      if (len < 0 || size_t(len) > left - 8) break;
      p += 8 + size_t(len);
      left -= 8 + size_t(len);
      ++more;
    }
    throw Error(path + ": the tokenizer holds " +
                (left == 0 ? std::to_string(size_t(vocab_size) + more) : "more") +
                " tokens, the checkpoint's vocabulary " + std::to_string(vocab_size) +
                ": give the tokenizer this checkpoint was trained with");
  }
  return t;
}

}  // namespace

Llama2cImportStats convert_llama2c(const std::string& model_path, const std::string& tokenizer_path,
                                   const std::string& out_path) {
  auto file = std::make_shared<MappedFile>(model_path);
  if (file->size() < 28) throw Error(model_path + ": too small for a llama2.c checkpoint");
  int32_t h[7];
  std::memcpy(h, file->data(), sizeof h);
  Llama2cImportStats s{h[0], h[1], h[2], h[3], h[4], h[5] < 0 ? -h[5] : h[5], h[6], h[5] > 0};
  auto bad = [&](const std::string& what) { throw Error(model_path + ": " + what); };
  if (s.dim <= 0 || s.hidden_dim <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 ||
      s.vocab_size <= 0 || s.seq_len <= 0 || s.dim > 65536 || s.hidden_dim > 262144 ||
      s.n_layers > 1024 || s.vocab_size > 1 << 22 || s.seq_len > 1 << 22)
    bad("not a llama2.c checkpoint (implausible header)");
  if (s.dim % s.n_heads != 0 || s.n_heads % s.n_kv_heads != 0)
    bad("dim must be a multiple of n_heads, and n_heads of n_kv_heads");
  const size_t D = size_t(s.dim), H = size_t(s.hidden_dim), L = size_t(s.n_layers),
               V = size_t(s.vocab_size), hs = D / size_t(s.n_heads),
               KV = D * size_t(s.n_kv_heads) / size_t(s.n_heads);
  // Offsets (in floats) of each tensor after the header.
  size_t off = 0;
  auto next = [&](size_t n) {
    size_t o = off;
    off += n;
    return o;
  };
  const size_t o_embd = next(V * D), o_rms_att = next(L * D), o_wq = next(L * D * D),
               o_wk = next(L * KV * D), o_wv = next(L * KV * D), o_wo = next(L * D * D),
               o_rms_ffn = next(L * D), o_w1 = next(L * H * D), o_w2 = next(L * D * H),
               o_w3 = next(L * H * D), o_rms_final = next(D);
  next(size_t(s.seq_len) * hs / 2);  // legacy freq_cis_real
  next(size_t(s.seq_len) * hs / 2);  // legacy freq_cis_imag
  const size_t o_wcls = s.shared_classifier ? 0 : next(V * D);
  const size_t need = 28 + (s.shared_classifier ? o_rms_final + D : off) * 4;
  if (file->size() < need)
    bad("truncated: " + std::to_string(file->size()) + " bytes, the header implies " +
        std::to_string(need));

  const SpmVocabData tok = read_tokenizer(tokenizer_path, s.vocab_size);

  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", "llama2.c import");
  w.add_u32("llama.context_length", uint32_t(s.seq_len));
  w.add_u32("llama.embedding_length", uint32_t(D));
  w.add_u32("llama.feed_forward_length", uint32_t(H));
  w.add_u32("llama.block_count", uint32_t(L));
  w.add_u32("llama.attention.head_count", uint32_t(s.n_heads));
  w.add_u32("llama.attention.head_count_kv", uint32_t(s.n_kv_heads));
  w.add_u32("llama.rope.dimension_count", uint32_t(hs));
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_u32("general.file_type", 0);  // all f32
  write_spm_vocab(w, tok);

  const float* base = reinterpret_cast<const float*>(file->data() + 28);
  auto add = [&](const std::string& name, size_t offset, std::vector<int64_t> ne) {
    w.add_tensor(name, TensorType::F32, ne, [file, base, offset](uint8_t* dst, size_t n) {
      std::memcpy(dst, base + offset, n);
    });
  };
  add("token_embd.weight", o_embd, {int64_t(D), int64_t(V)});
  add("output_norm.weight", o_rms_final, {int64_t(D)});
  if (!s.shared_classifier) add("output.weight", o_wcls, {int64_t(D), int64_t(V)});
  for (size_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", o_rms_att + l * D, {int64_t(D)});
    add(p + "attn_q.weight", o_wq + l * D * D, {int64_t(D), int64_t(D)});
    add(p + "attn_k.weight", o_wk + l * KV * D, {int64_t(D), int64_t(KV)});
    add(p + "attn_v.weight", o_wv + l * KV * D, {int64_t(D), int64_t(KV)});
    add(p + "attn_output.weight", o_wo + l * D * D, {int64_t(D), int64_t(D)});
    add(p + "ffn_norm.weight", o_rms_ffn + l * D, {int64_t(D)});
    add(p + "ffn_gate.weight", o_w1 + l * H * D, {int64_t(D), int64_t(H)});
    add(p + "ffn_down.weight", o_w2 + l * D * H, {int64_t(H), int64_t(D)});
    add(p + "ffn_up.weight", o_w3 + l * H * D, {int64_t(D), int64_t(H)});
  }
  w.write(out_path);
  return s;
}

}  // namespace tzero
