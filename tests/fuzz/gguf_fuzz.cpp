// libFuzzer target for the GGUF reader and what consumes it: any byte string must either parse
// or throw tzero::Error, and so must every getter, Vocab::from_gguf and Model construction on what
// parsed. Anything else (a sanitizer report, another exception, an invariant trap, an
// allocation over -malloc_limit_mb, a hang past -timeout) is a finding.
//
// Seed mode: with TZ_FUZZ_WRITE_SEEDS=DIR set, the binary writes seeds into DIR and exits
// instead of fuzzing (tests/fuzz/run_fuzz.sh uses it): a few micro models (llama, qwen2,
// qwen3, gemma3 with its sliding window, phi3 with fused tensors and LongRoPE factors; every
// supported tensor type) small enough for -max_len, and a shrunk copy of every
// DIR/*.gguf (long arrays cut, big tensors dropped) so real files' metadata fits too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/weights.h"
#include "tokenizer/vocab.h"

namespace {

// An invariant of a successful parse; a violation is a crash libFuzzer reports.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                  \
    }                                                                                    \
  } while (0)

// Runs fn; a tzero::Error is an accepted outcome, anything else escapes to libFuzzer.
template <typename Fn>
void tolerate(Fn&& fn) {
  try {
    fn();
  } catch (const tzero::Error&) {
  }
}

volatile uint8_t g_sink;

void exercise_metadata(const tzero::GgufFile& f) {
  for (const auto& kv : f.metadata()) {
    const std::string& key = kv.first;  // (clang 14 cannot capture structured bindings)
    const tzero::GgufValue& v = kv.second;
    FUZZ_CHECK(f.find(key) == &v);
    (void)v.to_display(8);
    (void)v.to_display(64);
    if (v.type == tzero::GgufValueType::ARRAY) {
      if (v.elem_type == tzero::GgufValueType::STRING) FUZZ_CHECK(v.strings.size() == v.count);
      if (v.count > 0 && tzero::gguf_value_size(v.elem_type) > 0) {
        const size_t bytes = size_t(v.count) * tzero::gguf_value_size(v.elem_type);
        FUZZ_CHECK(v.elems >= f.file_data() && v.elems + bytes <= f.file_data() + f.file_size());
        g_sink = v.elems[0];
        g_sink = v.elems[bytes - 1];
      }
    }
    tolerate([&] { (void)f.get_string(key); });
    tolerate([&] { (void)f.get_int(key, 0); });
    tolerate([&] { (void)f.require_int(key); });
    tolerate([&] { (void)f.get_float(key, 0); });
    tolerate([&] { (void)f.get_bool(key, false); });
    tolerate([&] { (void)f.get_string_array(key); });
    tolerate([&] { (void)f.get_f32_array(key); });
    tolerate([&] { (void)f.get_int_array(key); });
  }
}

void exercise_tensors(const tzero::GgufFile& f) {
  FUZZ_CHECK(f.alignment() > 0 && (f.alignment() & (f.alignment() - 1)) == 0);
  for (const auto& t : f.tensors()) {
    FUZZ_CHECK(f.find_tensor(t.name) == &t);
    FUZZ_CHECK(!t.ne.empty() && t.ne.size() <= 4);
    const auto tr = tzero::tensor_type_traits(uint32_t(t.type));
    FUZZ_CHECK(tr.has_value());
    FUZZ_CHECK(t.ne[0] % tr->block_size == 0);
    FUZZ_CHECK(t.n_bytes == size_t(t.n_elements()) / tr->block_size * tr->type_size);
    FUZZ_CHECK(t.offset % f.alignment() == 0);
    const uint8_t* begin = f.file_data() + f.data_offset();
    const uint8_t* end = f.file_data() + f.file_size();
    FUZZ_CHECK(t.data >= begin && t.data <= end && t.n_bytes <= size_t(end - t.data));
    if (t.n_bytes > 0) {  // ASan checks these two reads lie inside the input
      g_sink = t.data[0];
      g_sink = t.data[t.n_bytes - 1];
    }
  }
}

void exercise_vocab(const tzero::GgufFile& f) {
  tolerate([&] {
    const tzero::Vocab v = tzero::Vocab::from_gguf(f);
    const std::string text = "Hello world! <s>\n\t  </s> \xC3\xBC\xE6\x97\xA5 \xFF\x80 <0x41>";
    (void)v.tokenize(text, true, false);
    (void)v.tokenize(text, true, true);
    const int n = v.n_tokens();
    for (int id = 0; id < n && id < 64; ++id) (void)v.token_to_piece(id, id % 2 == 0);
    for (int id : {v.bos(), v.eos(), v.unk(), n - 1, n, -1}) (void)v.token_to_piece(id, true);
  });
}

// ---- seed mode ----------------------------------------------------------------------------

std::vector<uint8_t> ramp(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : b) {
    x = x * 1664525u + 1013904223u;
    c = uint8_t(x >> 24);
  }
  return b;
}

// f32 values near 1 (norms) as bytes.
std::vector<uint8_t> ones(size_t n) {
  std::vector<float> v(n, 1.0f);
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + n * 4);
}

size_t tensor_bytes(tzero::TensorType t, const std::vector<int64_t>& ne) {
  size_t n = 1;
  for (int64_t d : ne) n *= size_t(d);
  const auto& tr = tzero::traits(t);
  return n / tr.block_size * tr.type_size;
}

// A complete micro model (embedding 32, one layer, 16 tokens) with a working tokenizer.
void write_micro_model(const std::string& path, const std::string& arch, tzero::TensorType wt,
                       tzero::TensorType norm_t) {
  const int E = 32, F = 64, V = 16, H = 2, HKV = 1, D = 16;
  const uint32_t alignment = arch == "qwen3" ? 64 : 32;
  tzero::GgufWriter w;
  w.add_string("general.architecture", arch);
  if (alignment != 32) w.add_u32("general.alignment", alignment);
  w.add_string("general.name", "fuzz seed " + arch);
  w.add_u32(arch + ".context_length", 64);
  w.add_u32(arch + ".embedding_length", E);
  w.add_u32(arch + ".feed_forward_length", F);
  w.add_u32(arch + ".block_count", 1);
  w.add_u32(arch + ".attention.head_count", H);
  w.add_u32(arch + ".attention.head_count_kv", HKV);
  w.add_u32(arch + ".attention.key_length", D);
  const bool gemma3 = arch == "gemma3", phi3 = arch == "phi3";
  const int R = phi3 ? 12 : D;  // phi3: partial rotary
  w.add_u32(arch + ".rope.dimension_count", R);
  w.add_f32(arch + ".rope.freq_base", 10000.0f);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  if (gemma3) {
    w.add_u32(arch + ".attention.sliding_window", 4);
    w.add_string(arch + ".rope.scaling.type", "linear");
    w.add_f32(arch + ".rope.scaling.factor", 8.0f);
  }
  if (phi3) {
    w.add_u32(arch + ".rope.scaling.original_context_length", 32);
    w.add_f32(arch + ".rope.scaling.attn_factor", 1.1f);
  }
  w.add_string("tokenizer.ggml.model", "llama");
  const std::vector<std::string> toks = {
      "<unk>", "<s>", "</s>",   "<0x41>",           "\xE2\x96\x81", "H",
      "e",     "l",   "o",      "\xE2\x96\x81w",    "or",           "ld",
      "Hello", "!",   "<|im|>", "\xE2\x96\x81Hello"};
  w.add_string_array("tokenizer.ggml.tokens", toks);
  std::vector<float> scores;
  for (int i = 0; i < V; ++i) scores.push_back(-float(i));
  w.add_f32_array("tokenizer.ggml.scores", scores);
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1});
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
  uint32_t seed = 1;
  auto matrix = [&](const std::string& name, int rows, int cols) {
    w.add_tensor(name, wt, {cols, rows}, ramp(tensor_bytes(wt, {cols, rows}), seed++));
  };
  auto vec = [&](const std::string& name, int n) {  // f32 when n is not whole blocks
    if (norm_t == tzero::TensorType::F32 || n % int(tzero::traits(norm_t).block_size) != 0)
      w.add_tensor(name, tzero::TensorType::F32, {n}, ones(size_t(n)));
    else
      w.add_tensor(name, norm_t, {n}, ramp(tensor_bytes(norm_t, {n}), seed++));
  };
  matrix("token_embd.weight", V, E);
  vec("output_norm.weight", E);
  if (arch != "qwen2" && !gemma3) matrix("output.weight", V, E);  // qwen2, gemma3: tied output
  if (phi3) {
    w.add_tensor("rope_factors_long.weight", tzero::TensorType::F32, {R / 2}, ones(size_t(R / 2)));
    w.add_tensor("rope_factors_short.weight", tzero::TensorType::F32, {R / 2}, ones(size_t(R / 2)));
  }
  vec("blk.0.attn_norm.weight", E);
  if (phi3) {
    matrix("blk.0.attn_qkv.weight", (H + 2 * HKV) * D, E);
  } else {
    matrix("blk.0.attn_q.weight", H * D, E);
    matrix("blk.0.attn_k.weight", HKV * D, E);
    matrix("blk.0.attn_v.weight", HKV * D, E);
  }
  matrix("blk.0.attn_output.weight", E, H * D);
  if (arch == "qwen2") {
    vec("blk.0.attn_q.bias", H * D);
    vec("blk.0.attn_k.bias", HKV * D);
    vec("blk.0.attn_v.bias", HKV * D);
  }
  if (arch == "qwen3" || gemma3) {
    vec("blk.0.attn_q_norm.weight", D);
    vec("blk.0.attn_k_norm.weight", D);
  }
  if (gemma3) vec("blk.0.post_attention_norm.weight", E);
  vec("blk.0.ffn_norm.weight", E);
  if (gemma3) vec("blk.0.post_ffw_norm.weight", E);
  if (phi3) {
    matrix("blk.0.ffn_up.weight", 2 * F, E);
  } else {
    matrix("blk.0.ffn_gate.weight", F, E);
    matrix("blk.0.ffn_up.weight", F, E);
  }
  matrix("blk.0.ffn_down.weight", E, F);
  w.write(path, alignment);
}

// A copy of `src` that fits a small -max_len: arrays cut to 256 elements, tensors over 4 KiB
// dropped. Keeps the real keys, value types and tokenizer tables' shape.
void write_shrunk(const std::string& src_path, const std::string& out_path) {
  tzero::GgufFile src(src_path);
  tzero::GgufWriter w;
  for (const auto& [key, v] : src.metadata()) {
    if (v.type == tzero::GgufValueType::ARRAY && v.elem_type == tzero::GgufValueType::ARRAY)
      continue;
    tzero::GgufValue c = v;
    if (c.type == tzero::GgufValueType::ARRAY && c.count > 256) {
      c.count = 256;
      if (c.elem_type == tzero::GgufValueType::STRING) c.strings.resize(256);
    }
    w.add_value(key, c);
  }
  for (const auto& t : src.tensors())
    if (t.n_bytes <= 4096)
      w.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  w.write(out_path, src.alignment());
}

void write_seeds(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> originals;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".gguf" && e.path().filename().string().rfind("seed-", 0) != 0)
      originals.push_back(e.path().string());
  for (const auto& p : originals) {
    const std::string out = dir + "/seed-shrunk-" + fs::path(p).filename().string();
    try {
      write_shrunk(p, out);
      std::fprintf(stderr, "seed: %s (%ju bytes)\n", out.c_str(), uintmax_t(fs::file_size(out)));
    } catch (const tzero::Error& e) {
      std::fprintf(stderr, "seed: skipped %s: %s\n", p.c_str(), e.what());
    }
  }
  using T = tzero::TensorType;
  struct Micro {
    const char* name;
    const char* arch;
    T weights, norms;
  };
  const Micro micros[] = {
      {"llama-f32", "llama", T::F32, T::F32},     {"llama-f16", "llama", T::F16, T::F16},
      {"llama-bf16", "llama", T::BF16, T::BF16},  {"llama-q8_0", "llama", T::Q8_0, T::F32},
      {"qwen2-q4_0", "qwen2", T::Q4_0, T::F32},   {"qwen3-q8_0", "qwen3", T::Q8_0, T::Q8_0},
      {"mistral-f32", "mistral", T::F32, T::F32}, {"gemma3-q8_0", "gemma3", T::Q8_0, T::F32},
      {"phi3-f16", "phi3", T::F16, T::F32},
  };
  for (const auto& m : micros) {
    const std::string out = dir + "/seed-micro-" + m.name + ".gguf";
    write_micro_model(out, m.arch, m.weights, m.norms);
    // Each seed must be one the consumers accept, or it would not reach them.
    tzero::Model model(std::make_unique<tzero::GgufFile>(out));
    (void)tzero::Vocab::from_gguf(model.gguf());
    std::fprintf(stderr, "seed: %s (%ju bytes)\n", out.c_str(), uintmax_t(fs::file_size(out)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TZ_FUZZ_WRITE_SEEDS")) {
    try {
      write_seeds(dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "seed mode failed: %s\n", e.what());
      std::exit(1);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<tzero::GgufFile> f;
  try {
    // The input buffer is libFuzzer's, exactly `size` bytes; GgufFile only borrows it.
    f = std::make_unique<tzero::GgufFile>(data, size, "fuzz");
  } catch (const tzero::Error&) {
    return 0;
  }
  exercise_metadata(*f);
  exercise_tensors(*f);
  exercise_vocab(*f);
  tolerate([&] {
    const tzero::Model m(std::move(f));
    const auto& hp = m.hparams();
    FUZZ_CHECK(hp.n_vocab > 0 && hp.n_embd > 0 && hp.n_layer == int(m.layers().size()));
    FUZZ_CHECK(m.tok_embd().n_rows == hp.n_vocab && m.tok_embd().n_cols == hp.n_embd);
  });
  return 0;
}
