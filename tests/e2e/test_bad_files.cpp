// The command line on files it cannot use: damaged GGUF, things that are not GGUF at all, and
// valid GGUF files that are not a model tzero can run. Each time `tzero info` and `tzero run`
// exit with status 2 and print exactly one line on stderr, "tzero: error: <file>: <what>",
// and `run` prints nothing on stdout.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"

using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

std::string scratch(const std::string& name) {
  return tzero::test::scratch_dir() + "/bad_" + name;
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = scratch(name);
  tzero::test::write_file(path, bytes);
  return path;
}

// Passes when the result is the one-line error contract for `file`, mentioning `part`.
::testing::AssertionResult clean_error(const CliResult& r, const std::string& file,
                                       const std::string& part) {
  auto fail = [&](const std::string& why) {
    return ::testing::AssertionFailure()
           << why << "\n  exit " << r.exit_code << "\n  stderr: '" << r.err << "'\n  stdout: '"
           << r.out.substr(0, 200) << "'";
  };
  if (r.exit_code != 2) return fail("exit status is not 2");
  if (r.err.rfind("tzero: error: ", 0) != 0) return fail("stderr does not start 'tzero: error: '");
  if (r.err.find('\n') != r.err.size() - 1) return fail("stderr is not exactly one line");
  if (r.err.find(file) == std::string::npos) return fail("stderr does not name " + file);
  if (r.err.find(part) == std::string::npos) return fail("stderr does not say '" + part + "'");
  if (!r.out.empty()) return fail("stdout is not empty");
  return ::testing::AssertionSuccess();
}

CliResult info(const std::string& f) {
  return run_tzero({"info", "-m", f});
}
CliResult run(const std::string& f) {
  return run_tzero({"run", "-m", f, "-n", "1"});
}

// The tiny generated model (f32), as bytes.
const std::string& tiny_bytes() {
  static const std::string b = tzero::test::read_file(tzero::test::generated_model("tiny", "f32"));
  return b;
}

template <typename T>
std::string patched(std::string b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
  return b;
}

// Rewrites the tiny model through GgufWriter: `edit_kv` may replace a value (return true when
// it added its own), `keep_tensors` false drops every tensor, and `retype` names one tensor to
// store as `new_type` (zero bytes; tzero must refuse it before reading them).
// `rewrite_model` does the same to another preset's f32 file, and may reshape one tensor
// (`reshape`: its new ne, the data cut or zero-padded to fit).
std::string rewrite_model(const std::string& preset, const std::string& name,
                          std::function<bool(tzero::GgufWriter&, const std::string&)> edit_kv,
                          bool keep_tensors, const std::string& retype = "",
                          tzero::TensorType new_type = tzero::TensorType::F32,
                          const std::string& reshape = "", std::vector<int64_t> new_ne = {}) {
  tzero::GgufFile src(tzero::test::generated_model(preset, "f32"));
  tzero::GgufWriter w;
  for (const auto& [key, v] : src.metadata())
    if (!edit_kv || !edit_kv(w, key)) w.add_value(key, v);
  if (keep_tensors) {
    for (const auto& t : src.tensors()) {
      if (t.name == reshape) {
        size_t n = 4;
        for (int64_t d : new_ne) n *= size_t(d);
        std::vector<uint8_t> bytes(t.data, t.data + std::min(n, size_t(t.n_bytes)));
        bytes.resize(n, 0);
        w.add_tensor(t.name, t.type, new_ne, bytes);
      } else if (t.name == retype) {
        const auto& tr = tzero::traits(new_type);
        const size_t n = size_t(t.n_elements()) / tr.block_size * tr.type_size;
        w.add_tensor(t.name, new_type, t.ne, std::vector<uint8_t>(n, 0));
      } else {
        w.add_tensor(t.name, t.type, t.ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      }
    }
  }
  const std::string path = scratch(name);
  w.write(path);
  return path;
}

std::string rewrite_tiny(const std::string& name,
                         std::function<bool(tzero::GgufWriter&, const std::string&)> edit_kv,
                         bool keep_tensors, const std::string& retype = "",
                         tzero::TensorType new_type = tzero::TensorType::F32) {
  return rewrite_model("tiny", name, std::move(edit_kv), keep_tensors, retype, new_type);
}

// A metadata edit setting integer `key` to `value`.
std::function<bool(tzero::GgufWriter&, const std::string&)> set_u32(const std::string& key,
                                                                    uint32_t value) {
  return [key, value](tzero::GgufWriter& w, const std::string& k) {
    if (k != key) return false;
    w.add_u32(k, value);
    return true;
  };
}

// A small GGUF with one tensor "t" (f32, 4 elements) and no metadata: its type field sits at
// byte 24 + 8 (name length) + 1 (name) + 4 (dimension count) + 8 (dimension) = 45.
std::string one_tensor_bytes(const std::string& name = "t") {
  tzero::GgufWriter w;
  w.add_tensor(name, tzero::TensorType::F32, {4}, std::vector<uint8_t>(16, 0));
  const std::string path = scratch("one_tensor_src.gguf");
  w.write(path);
  return tzero::test::read_file(path);
}

}  // namespace

// The generated model is fine: the failures below come from the damage, not the model.
TEST(BadFiles, UndamagedModelRuns) {
  const std::string f = tzero::test::generated_model("tiny", "f32");
  EXPECT_EQ(info(f).exit_code, 0);
  const CliResult r = run(f);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A model cut short inside its tensor data: the first tensor that no longer fits is named.
TEST(BadFiles, TruncatedTensorData) {
  const std::string& b = tiny_bytes();
  const std::string f = write_bytes("trunc_data.gguf", b.substr(0, b.size() / 2));
  EXPECT_TRUE(clean_error(info(f), f, "lies outside the file"));
  EXPECT_TRUE(clean_error(run(f), f, "lies outside the file"));
}

// The super-block types added with issue #16 part 3: a model of each whose tensor data is cut
// short (the byte size of a tensor no longer fits the file) is one clean error naming the file.
TEST(BadFiles, TruncatedSuperBlockTensorData) {
  for (const char* dtype : {"q2_k", "q3_k", "iq4_xs"}) {
    SCOPED_TRACE(dtype);
    const std::string b = tzero::test::read_file(tzero::test::generated_model("tiny", dtype));
    const std::string f =
        write_bytes(std::string("trunc_") + dtype + ".gguf", b.substr(0, b.size() * 2 / 3));
    EXPECT_TRUE(clean_error(info(f), f, "lies outside the file"));
    EXPECT_TRUE(clean_error(run(f), f, "lies outside the file"));
  }
}

// A model cut short inside its header: in the tensor infos (the padding after them is under
// 32 bytes), and so early that the metadata count no longer fits.
TEST(BadFiles, TruncatedHeader) {
  const size_t data_offset =
      tzero::GgufFile(tzero::test::generated_model("tiny", "f32")).data_offset();
  std::string f = write_bytes("trunc_infos.gguf", tiny_bytes().substr(0, data_offset - 40));
  EXPECT_TRUE(clean_error(info(f), f, "truncated: tensor"));
  EXPECT_TRUE(clean_error(run(f), f, "truncated: tensor"));
  f = write_bytes("trunc_header.gguf", tiny_bytes().substr(0, 200));
  EXPECT_TRUE(clean_error(info(f), f, "does not fit in the file"));
  EXPECT_TRUE(clean_error(run(f), f, "does not fit in the file"));
}

// Wrong magic and unsupported versions.
TEST(BadFiles, MagicAndVersion) {
  std::string b = tiny_bytes();
  b[0] = 'X';
  std::string f = write_bytes("bad_magic.gguf", b);
  EXPECT_TRUE(clean_error(info(f), f, "not a GGUF file (bad magic)"));
  EXPECT_TRUE(clean_error(run(f), f, "not a GGUF file (bad magic)"));
  f = write_bytes("version1.gguf", patched<uint32_t>(tiny_bytes(), 4, 1));
  EXPECT_TRUE(clean_error(info(f), f, "GGUF version 1 is not supported"));
  EXPECT_TRUE(clean_error(run(f), f, "GGUF version 1 is not supported"));
  f = write_bytes("version99.gguf", patched<uint32_t>(tiny_bytes(), 4, 99));
  EXPECT_TRUE(clean_error(info(f), f, "unsupported GGUF version 99"));
  EXPECT_TRUE(clean_error(run(f), f, "unsupported GGUF version 99"));
}

// Hostile counts and lengths: no allocation is attempted, no "out of memory".
TEST(BadFiles, HugeCountsAndLengths) {
  std::string f = write_bytes("huge_kv.gguf", patched<uint64_t>(tiny_bytes(), 16, ~0ull));
  EXPECT_TRUE(clean_error(info(f), f, "metadata count 18446744073709551615 does not fit"));
  EXPECT_TRUE(clean_error(run(f), f, "metadata count 18446744073709551615 does not fit"));
  f = write_bytes("huge_tensors.gguf", patched<uint64_t>(tiny_bytes(), 8, 1ull << 62));
  EXPECT_TRUE(clean_error(info(f), f, "tensor count 4611686018427387904 does not fit"));
  EXPECT_TRUE(clean_error(run(f), f, "tensor count 4611686018427387904 does not fit"));
  f = write_bytes("huge_key.gguf", patched<uint64_t>(tiny_bytes(), 24, 1ull << 62));
  EXPECT_TRUE(clean_error(info(f), f, "truncated: metadata key"));
  EXPECT_TRUE(clean_error(run(f), f, "truncated: metadata key"));
}

// Tensor infos the reader refuses: an unknown type id and a zero dimension.
TEST(BadFiles, BadTensorInfo) {
  std::string f = write_bytes("unknown_type.gguf", patched<uint32_t>(one_tensor_bytes(), 45, 99));
  EXPECT_TRUE(clean_error(info(f), f, "tensor 't': unknown tensor type 99"));
  EXPECT_TRUE(clean_error(run(f), f, "tensor 't': unknown tensor type 99"));
  f = write_bytes("zero_dim.gguf", patched<uint64_t>(one_tensor_bytes(), 37, 0));
  EXPECT_TRUE(clean_error(info(f), f, "tensor 't': dimension 0 is 0"));
  EXPECT_TRUE(clean_error(run(f), f, "tensor 't': dimension 0 is 0"));
}

// A name with a newline in it still gives a one-line error (it is escaped).
TEST(BadFiles, ControlBytesInNameStayOnOneLine) {
  const std::string f =
      write_bytes("newline_name.gguf", patched<uint32_t>(one_tensor_bytes("\n"), 45, 99));
  EXPECT_TRUE(clean_error(info(f), f, "tensor '\\x0a': unknown tensor type 99"));
  EXPECT_TRUE(clean_error(run(f), f, "tensor '\\x0a': unknown tensor type 99"));
}

// Paths that are not GGUF files at all.
TEST(BadFiles, NotAGgufFile) {
  const std::string missing = scratch("does_not_exist.gguf");
  EXPECT_TRUE(clean_error(info(missing), missing, "cannot open: No such file or directory"));
  EXPECT_TRUE(clean_error(run(missing), missing, "cannot open: No such file or directory"));
  const std::string dir = scratch("a_directory");
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(clean_error(info(dir), dir, "not a regular file"));
  EXPECT_TRUE(clean_error(run(dir), dir, "not a regular file"));
  const std::string empty = write_bytes("empty.gguf", "");
  EXPECT_TRUE(clean_error(info(empty), empty, "not a GGUF file"));
  EXPECT_TRUE(clean_error(run(empty), empty, "not a GGUF file"));
  const std::string text = write_bytes("story.txt", "Once upon a time there was a GGUF file.\n");
  EXPECT_TRUE(clean_error(info(text), text, "not a GGUF file (bad magic)"));
  EXPECT_TRUE(clean_error(run(text), text, "not a GGUF file (bad magic)"));
}

// A valid vocabulary-only GGUF (all the metadata, no tensors): `info` shows it; every command
// that loads a model says it has no weights (one check in the loading path, model/hparams.cpp).
static const char* kVocabOnly =
    "this file has no weights (a vocabulary-only GGUF: a tokenizer and no tensors); it can be "
    "used with `tzero tokenize`, not to run a model";

static void expect_vocab_only_refused(const std::string& f) {
  EXPECT_TRUE(clean_error(run(f), f, kVocabOnly));
  EXPECT_TRUE(clean_error(run_tzero({"chat", "-m", f}, "hi\n"), f, kVocabOnly));
  EXPECT_TRUE(clean_error(run_tzero({"serve", "-m", f, "--port", "0"}), f, kVocabOnly));
  EXPECT_TRUE(clean_error(run_tzero({"embed", "-m", f, "-p", "hi"}), f, kVocabOnly));
  EXPECT_TRUE(clean_error(run_tzero({"fingerprint", "-m", f}), f, kVocabOnly));
  // And tokenize works on it.
  EXPECT_EQ(run_tzero({"tokenize", "-m", f, "-p", "hi"}).exit_code, 0);
}

TEST(BadFiles, VocabOnlyFileIsNotAModel) {
  const std::string f = rewrite_tiny("vocab_only.gguf", nullptr, /*keep_tensors=*/false);
  const CliResult i = info(f);
  EXPECT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("tensors (0)"), std::string::npos) << i.out;
  expect_vocab_only_refused(f);
}

// llama.cpp's vocabulary-only test files (SentencePiece and byte-level BPE, whose gpt2
// architecture tzero does not run) are refused the same way.
TEST(BadFiles, SharedVocabOnlyFileIsNotAModel) {
  for (const char* name : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"}) {
    SCOPED_TRACE(name);
    TZ_REQUIRE_SHARED(f, name);
    EXPECT_EQ(info(f).exit_code, 0);
    expect_vocab_only_refused(f);
  }
}

// A tokenizer without general.architecture (what `convert --hf-tokenizer` writes) too.
TEST(BadFiles, TokenizerWithoutArchitectureIsNotAModel) {
  const std::string f = rewrite_tiny(
      "no_arch_vocab.gguf",
      [](tzero::GgufWriter&, const std::string& key) { return key == "general.architecture"; },
      /*keep_tensors=*/false);
  expect_vocab_only_refused(f);
}

// A valid model file of an architecture tzero does not implement.
TEST(BadFiles, UnsupportedArchitecture) {
  const std::string f = rewrite_tiny(
      "gpt2_arch.gguf",
      [](tzero::GgufWriter& w, const std::string& key) {
        if (key != "general.architecture") return false;
        w.add_string(key, "gpt2");
        return true;
      },
      /*keep_tensors=*/true);
  EXPECT_EQ(info(f).exit_code, 0);
  EXPECT_TRUE(clean_error(run(f), f, "architecture 'gpt2' is not supported"));
}

// A tensor of a type GGUF defines but tzero cannot compute with: the error names the tensor
// and the type. `info` still lists the file. (The type is the first of these K-quants and
// legacy quants that this build does not compute with; q2_k .. q6_k are supported.)
TEST(BadFiles, KnownButUnsupportedTensorType) {
  std::optional<tzero::TensorType> type;
  for (tzero::TensorType t :
       {tzero::TensorType::Q5_K, tzero::TensorType::Q3_K, tzero::TensorType::Q2_K,
        tzero::TensorType::Q8_1, tzero::TensorType::Q8_K})
    if (!type && !tzero::traits(t).supported) type = t;
  if (!type) GTEST_SKIP() << "every candidate tensor type is supported";
  const std::string name = tzero::traits(*type).name;
  const std::string f = rewrite_tiny("unsupported_type.gguf", nullptr, /*keep_tensors=*/true,
                                     "blk.0.attn_q.weight", *type);
  const CliResult i = info(f);
  EXPECT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find(name), std::string::npos);
  EXPECT_TRUE(clean_error(run(f), f, "tensor 'blk.0.attn_q.weight' has type " + name));
}

// Mixture-of-experts files whose counts or shapes do not fit: one clean error at load.
TEST(BadFiles, ExpertCountsThatDoNotFit) {
  const std::string a = "qwen3moe.";
  struct Case {
    const char* file;
    std::string key;
    uint32_t value;
    const char* says;
  } cases[] = {
      {"moe_used_gt_count.gguf", a + "expert_used_count", 17,
       "'qwen3moe.expert_used_count' = 17 does not fit expert_count = 16"},
      {"moe_used_zero.gguf", a + "expert_used_count", 0, "expert_used_count' = 0 does not fit"},
      {"moe_count_huge.gguf", a + "expert_count", 100000, "expert_count' = 100000 is out of range"},
      {"moe_count_fewer.gguf", a + "expert_count", 8,
       "tensor 'blk.0.ffn_gate_inp.weight' has shape [256, 16], expected [256, 8]"},
      {"moe_ff_exp.gguf", a + "expert_feed_forward_length", 512,
       "tensor 'blk.0.ffn_gate_exps.weight' has shape [256, 256, 16], expected [256, 512, 16]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string f = rewrite_model("tiny-qwen3moe", c.file, set_u32(c.key, c.value), true);
    EXPECT_TRUE(clean_error(run(f), f, c.says));
  }
}

TEST(BadFiles, ExpertTensorsThatDoNotFit) {
  {  // a 2-D expert tensor
    const std::string f =
        rewrite_model("tiny-qwen3moe", "moe_2d.gguf", nullptr, true, "", tzero::TensorType::F32,
                      "blk.1.ffn_down_exps.weight", {256, 256});
    EXPECT_TRUE(clean_error(run(f), f, "tensor 'blk.1.ffn_down_exps.weight' has shape [256, 256]"));
  }
  {  // experts of a type tzero cannot compute
    ASSERT_FALSE(tzero::traits(tzero::TensorType::Q8_1).supported);
    const std::string f = rewrite_model("tiny-qwen3moe", "moe_type.gguf", nullptr, true,
                                        "blk.0.ffn_up_exps.weight", tzero::TensorType::Q8_1);
    EXPECT_TRUE(clean_error(run(f), f, "tensor 'blk.0.ffn_up_exps.weight' has type q8_1"));
  }
  {  // expert metadata on an architecture without experts
    const std::string f = rewrite_model(
        "tiny-qwen2", "moe_on_qwen2.gguf",
        [](tzero::GgufWriter& w, const std::string& key) {
          if (key != "general.architecture") return false;
          w.add_string(key, "qwen2");
          w.add_u32("qwen2.expert_count", 8);
          w.add_u32("qwen2.expert_used_count", 2);
          return true;
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f, "'qwen2.expert_count' on architecture 'qwen2'"));
  }
  {  // a dense llama file that claims experts: the router is missing
    const std::string f = rewrite_tiny(
        "moe_missing.gguf",
        [](tzero::GgufWriter& w, const std::string& key) {
          if (key != "general.architecture") return false;
          w.add_string(key, "llama");
          w.add_u32("llama.expert_count", 8);
          w.add_u32("llama.expert_used_count", 2);
          return true;
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f, "missing tensor 'blk.0.ffn_gate_inp.weight'"));
  }
}

// gemma3's own metadata and tensors: an impossible sliding window or period, a period given
// as an array, a post-norm of the wrong length, and a rope scaling nobody knows are errors naming
// the key or tensor. (A file without a window runs with every layer global, as llama.cpp's:
// ModelKeys.* checks what each key changes.)
TEST(BadFiles, Gemma3MetadataAndTensorsThatDoNotFit) {
  const std::string win = "gemma3.attention.sliding_window";
  {
    const std::string f =
        rewrite_model("tiny-gemma3", "g3_window_huge.gguf", set_u32(win, 1u << 30), true);
    EXPECT_TRUE(clean_error(run(f), f, "metadata '" + win + "' = 1073741824 is out of range"));
  }
  {
    const std::string pat = "gemma3.attention.sliding_window_pattern";
    const std::string f = rewrite_model(
        "tiny-gemma3", "g3_pattern_array.gguf",
        [&](tzero::GgufWriter& w, const std::string& key) {
          if (key != win) return false;
          w.add_u32(key, 12);
          w.add_i32_array(pat, {1, 1, 1, 1, 1, 0});
          return true;
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f, "metadata '" + pat + "' is an array"));
  }
  {
    const std::string f =
        rewrite_model("tiny-gemma3", "g3_post_norm.gguf", nullptr, true, "", tzero::TensorType::F32,
                      "blk.3.post_ffw_norm.weight", {128});
    EXPECT_TRUE(clean_error(run(f), f,
                            "tensor 'blk.3.post_ffw_norm.weight' has shape [128], expected [256]"));
  }
  {
    const std::string f = rewrite_model(
        "tiny-gemma3", "g3_ntk.gguf",
        [](tzero::GgufWriter& w, const std::string& key) {
          if (key != "gemma3.rope.scaling.type") return false;
          w.add_string(key, "ntk");
          return true;
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f,
                            "metadata 'gemma3.rope.scaling.type' = 'ntk' is not a rope scaling"));
  }
}

// phi3's fused tensors and LongRoPE factors are checked like any other tensor.
TEST(BadFiles, Phi3FusedTensorsAndRopeFactorsThatDoNotFit) {
  {
    const std::string f =
        rewrite_model("tiny-phi3", "phi3_qkv.gguf", nullptr, true, "", tzero::TensorType::F32,
                      "blk.0.attn_qkv.weight", {256, 256});
    EXPECT_TRUE(clean_error(run(f), f,
                            "tensor 'blk.0.attn_qkv.weight' has shape [256, 256], expected "
                            "[256, 512]"));
  }
  {
    const std::string f = rewrite_model("tiny-phi3", "phi3_up.gguf", nullptr, true, "",
                                        tzero::TensorType::F32, "blk.1.ffn_up.weight", {256, 512});
    EXPECT_TRUE(clean_error(run(f), f,
                            "tensor 'blk.1.ffn_up.weight' has shape [256, 512], expected "
                            "[256, 1024]"));
  }
  {
    const std::string f = rewrite_model("tiny-phi3", "phi3_factors.gguf", nullptr, true, "",
                                        tzero::TensorType::F32, "rope_factors_short.weight", {12});
    EXPECT_TRUE(
        clean_error(run(f), f, "tensor 'rope_factors_short.weight' has shape [12], expected [24]"));
  }
}

// The 2025-26 architectures' settings that do not fit: expert groups that do not divide the
// experts, too few chosen groups for k, MLA's shapes, an older deepseek2 conversion, NextN
// layers that leave none to run, a gpt-oss sink tensor of the wrong size: one line, exit 2.
TEST(BadFiles, NewArchitectureSettingsThatDoNotFit) {
  auto set = [](std::vector<std::pair<std::string, uint32_t>> kv) {
    return [kv](tzero::GgufWriter& w, const std::string& key) {
      for (const auto& [k, v] : kv)
        if (k == key) {
          w.add_u32(k, v);
          return true;
        }
      return false;
    };
  };
  const std::string ds = "deepseek2.";
  {
    const std::string f = rewrite_model("tiny-deepseek2", "ds_groups3.gguf",
                                        set({{ds + "expert_group_count", 3}}), true);
    EXPECT_TRUE(clean_error(run(f), f,
                            "metadata '" + ds +
                                "expert_group_count' = 3 does not divide "
                                "expert_count = 16 into groups"));
  }
  {
    const std::string f = rewrite_model("tiny-deepseek2", "ds_groups_used.gguf",
                                        set({{ds + "expert_group_used_count", 4}}), true);
    EXPECT_TRUE(clean_error(run(f), f,
                            "metadata '" + ds +
                                "expert_group_used_count' = 4 does not fit "
                                "expert_group_count = 4"));
  }
  {
    const std::string f = rewrite_model(
        "tiny-deepseek2", "ds_k_too_big.gguf",
        set({{ds + "expert_group_used_count", 1}, {ds + "expert_used_count", 6}}), true);
    EXPECT_TRUE(clean_error(run(f), f,
                            "metadata '" + ds +
                                "expert_used_count' = 6 is more than the 4 "
                                "experts of the chosen groups"));
  }
  {
    const std::string f = rewrite_model("tiny-deepseek2", "ds_kv_heads.gguf",
                                        set({{ds + "attention.head_count_kv", 2}}), true);
    EXPECT_TRUE(clean_error(run(f), f, "MLA files have one (the latent)"));
  }
  {  // an older conversion: no key_length_mla
    const std::string f = rewrite_model(
        "tiny-deepseek2", "ds_old.gguf",
        [&](tzero::GgufWriter&, const std::string& key) {
          return key == ds + "attention.key_length_mla";
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f, "an older deepseek2 conversion"));
  }
  {
    const std::string f = rewrite_model("tiny-glm4moe", "glm_nextn.gguf",
                                        set({{"glm4moe.nextn_predict_layers", 4}}), true);
    EXPECT_TRUE(clean_error(run(f), f,
                            "metadata 'glm4moe.nextn_predict_layers' = 4 does not fit "
                            "block_count = 4"));
  }
  {
    const std::string f = rewrite_model("tiny-gpt-oss", "gptoss_sinks.gguf", nullptr, true, "",
                                        tzero::TensorType::F32, "blk.1.attn_sinks.weight", {4});
    EXPECT_TRUE(
        clean_error(run(f), f, "tensor 'blk.1.attn_sinks.weight' has shape [4], expected [8]"));
  }
  {
    const std::string f = rewrite_model(
        "tiny-gpt-oss", "gptoss_window.gguf",
        [](tzero::GgufWriter&, const std::string& key) {
          return key == "gpt-oss.attention.sliding_window";
        },
        true);
    EXPECT_TRUE(clean_error(run(f), f, "gpt-oss.attention.sliding_window"));
  }
}
