#include "model/hparams.h"

#include "base/error.h"

namespace tzero {

HParams read_hparams(const GgufFile& f) {
  HParams hp;
  hp.arch_name = f.get_string("general.architecture");
  if (hp.arch_name.empty()) f.fail("missing metadata 'general.architecture'");
  if (hp.arch_name == "llama" || hp.arch_name == "mistral") {
    hp.arch = Arch::Llama;
  } else if (hp.arch_name == "qwen2") {
    hp.arch = Arch::Qwen2;
  } else if (hp.arch_name == "qwen3") {
    hp.arch = Arch::Qwen3;
  } else {
    f.fail("architecture '" + hp.arch_name + "' is not supported (supported: llama, mistral, " +
           "qwen2, qwen3)");
  }
  const std::string a = hp.arch_name + ".";
  auto positive = [&](const std::string& key, int64_t v, int64_t max) {
    if (v <= 0 || v > max)
      f.fail("metadata '" + key + "' = " + std::to_string(v) + " is out of range");
    return int(v);
  };
  hp.n_embd = positive(a + "embedding_length", f.require_int(a + "embedding_length"), 1 << 20);
  hp.n_layer = positive(a + "block_count", f.require_int(a + "block_count"), 4096);
  hp.n_head = positive(a + "attention.head_count", f.require_int(a + "attention.head_count"), 4096);
  hp.n_head_kv = positive(a + "attention.head_count_kv",
                          f.get_int(a + "attention.head_count_kv", hp.n_head), 4096);
  hp.n_ff = positive(a + "feed_forward_length", f.require_int(a + "feed_forward_length"), 1 << 22);
  hp.n_ctx_train = positive(a + "context_length", f.get_int(a + "context_length", 2048), 1 << 24);
  if (hp.n_embd % hp.n_head != 0 && !f.has(a + "attention.key_length"))
    f.fail("embedding_length is not a multiple of head_count and no attention.key_length");
  hp.head_dim = positive(a + "attention.key_length",
                         f.get_int(a + "attention.key_length", hp.n_embd / hp.n_head), 1 << 16);
  const int v_len = positive(a + "attention.value_length",
                             f.get_int(a + "attention.value_length", hp.head_dim), 1 << 16);
  if (v_len != hp.head_dim) f.fail("attention.value_length differs from key_length (unsupported)");
  if (hp.n_head % hp.n_head_kv != 0)
    f.fail("attention.head_count " + std::to_string(hp.n_head) +
           " is not a multiple of head_count_kv " + std::to_string(hp.n_head_kv));
  hp.n_rot = positive(a + "rope.dimension_count",
                      f.get_int(a + "rope.dimension_count", hp.head_dim), hp.head_dim);
  if (hp.n_rot % 2 != 0) f.fail("rope.dimension_count must be even");
  hp.rms_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(hp.rms_eps > 0 && hp.rms_eps < 1))
    f.fail("attention.layer_norm_rms_epsilon is out of range");
  hp.rope_base = f.get_float(a + "rope.freq_base", 10000.0);
  if (!(hp.rope_base > 1)) f.fail("rope.freq_base is out of range");
  const std::string scaling = f.get_string(a + "rope.scaling.type", "none");
  if (scaling != "none" && !(scaling == "linear" && f.get_float(a + "rope.scaling.factor", 1) == 1))
    f.fail("rope scaling '" + scaling + "' is not supported yet");
  hp.rope_neox = hp.arch == Arch::Qwen2 || hp.arch == Arch::Qwen3;
  return hp;
}

}  // namespace tzero
