// `tzero tokenize` on the tokenizer suite's vocab-only GGUF, as the suites expect (no BOS).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

TEST(TokenizeCli, JsonIdsWithoutBos) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  auto r = tzero::test::run_tzero(
      {"tokenize", "-m", vocab, "-p", "ied 4 ½ months", "--no-bos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"],
            nlohmann::json::array({474, 287, 29871, 29946, 29871, 30226, 7378}));
  r = tzero::test::run_tzero({"tokenize", "-m", vocab, "-p", "Hello"});
  EXPECT_EQ(r.out, "1 15043\n");
}

TEST(TokenizeCli, ReadsFileAndNeedsText) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const std::string path = tzero::test::scratch_dir() + "/text.txt";
  tzero::test::write_file(path, " Hello");
  auto r = tzero::test::run_tzero({"tokenize", "-m", vocab, "-f", path, "--no-bos"});
  EXPECT_EQ(r.out, "29871 15043\n");
  r = tzero::test::run_tzero({"tokenize", "-m", vocab});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-p TEXT or -f FILE"), std::string::npos);
}

// --pieces shows what each token stands for, the same way for both vocabulary kinds: byte-level
// BPE's "Ġworld" and SentencePiece's "▁world" are ' world', a newline token is \n, a byte that
// is half of a character (a CJK character split over tokens) is <0xE6>, a control byte <0x01>,
// a backslash \\, control tokens by name.
TEST(TokenizeCli, PiecesAreReadableText) {
  TZ_REQUIRE_SHARED(gpt2, "vocab/ggml-vocab-gpt-2.gguf");
  TZ_REQUIRE_SHARED(spm, "vocab/ggml-vocab-llama-spm.gguf");
  const std::string text = "Hello world\n\tcaf\xC3\xA9 \\ \xE6\x97\xA5\xE6\x9C\xAC\x01";
  auto r = tzero::test::run_tzero({"tokenize", "-m", gpt2, "-p", text, "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            " 15496 'Hello'\n"
            "   995 ' world'\n"
            "   198 '\\n'\n"
            "   197 '\\t'\n"
            "    66 'c'\n"
            "  1878 'af'\n"
            "  2634 '\xC3\xA9'\n"
            "  3467 ' \\\\'\n"
            " 10545 ' <0xE6>'\n"
            "   245 '<0x97>'\n"
            "    98 '<0xA5>'\n"
            " 17312 '<0xE6><0x9C>'\n"
            "   105 '<0xAC>'\n"
            "   189 '<0x01>'\n");
  r = tzero::test::run_tzero({"tokenize", "-m", spm, "-p", text, "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "     1 '<s>'\n"
            " 15043 ' Hello'\n"
            "  3186 ' world'\n"
            "    13 '\\n'\n"
            "    12 '\\t'\n"
            "  1113 'ca'\n"
            " 29888 'f'\n"
            " 29948 '\xC3\xA9'\n"
            "   320 ' \\\\'\n"
            " 29871 ' '\n"
            " 30325 '\xE6\x97\xA5'\n"
            " 30346 '\xE6\x9C\xAC'\n"
            "     4 '<0x01>'\n");
}

// --json --pieces keeps the pieces: the vocabulary's spelling, the readable text and the bytes.
TEST(TokenizeCli, JsonWithPieces) {
  TZ_REQUIRE_SHARED(gpt2, "vocab/ggml-vocab-gpt-2.gguf");
  auto r = tzero::test::run_tzero({"tokenize", "-m", gpt2, "-p", "world\n", "--json", "--pieces"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"ids\":[6894,198],\"pieces\":["
            "{\"id\":6894,\"token\":\"world\",\"piece\":\"world\",\"hex\":\"776f726c64\"},"
            "{\"id\":198,\"token\":\"\xC4\x8A\",\"piece\":\"\\\\n\",\"hex\":\"0a\"}]}\n");
  // Without --pieces the object is the ids alone, as before.
  r = tzero::test::run_tzero({"tokenize", "-m", gpt2, "-p", "world\n", "--json"});
  EXPECT_EQ(r.out, "{\"ids\":[6894,198]}\n");
}
