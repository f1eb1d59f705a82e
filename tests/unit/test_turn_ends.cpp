// Which tokens end a turn (Vocab::turn_ends): eos always (checked by the callers), eot when the
// file names one, and in a harmony vocabulary (gpt-oss) <|return|> and <|call|> but not <|end|>,
// even when the file's eot is <|end|>: llama.cpp's rule, since <|end|> closes the reasoning
// channel and the answer follows it. The decode step stops on each of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace tzero {
namespace {

// A byte-level BPE vocabulary of single letters and the given control tokens (type 3).
Vocab vocab_with(const std::vector<std::string>& controls, int eos, int eot) {
  std::vector<std::string> tokens = {"a", "b", "ab"};
  std::vector<int32_t> types = {1, 1, 1};
  for (const auto& c : controls) tokens.push_back(c), types.push_back(3);
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  if (eos >= 0) w.add_u32("tokenizer.ggml.eos_token_id", uint32_t(eos));
  if (eot >= 0) w.add_u32("tokenizer.ggml.eot_token_id", uint32_t(eot));
  static int n = 0;
  const std::string path = test::scratch_dir() + "/turn_ends_" + std::to_string(n++) + ".gguf";
  w.write(path);
  return Vocab::from_gguf(GgufFile(path));
}

TEST(TurnEnds, EotEndsATurn) {
  const Vocab v = vocab_with({"<|im_end|>", "<|endoftext|>"}, 4, 3);
  EXPECT_EQ(v.turn_ends(), (std::vector<int>{3}));
  EXPECT_TRUE(v.ends_turn(3));
  EXPECT_FALSE(v.ends_turn(4));  // eos is the callers' own check
  EXPECT_TRUE(vocab_with({"<|endoftext|>"}, 3, -1).turn_ends().empty());
}

// gpt-oss's tokens (ids 3..7 here): eos <|return|>, eot <|end|> as a converter might write it.
TEST(TurnEnds, HarmonyEndsAtReturnAndCallNotAtEnd) {
  const std::vector<std::string> harmony = {"<|start|>", "<|end|>", "<|message|>", "<|return|>",
                                            "<|call|>"};
  const Vocab v = vocab_with(harmony, 6, 4);
  EXPECT_FALSE(v.ends_turn(4)) << "<|end|> must not end the turn";
  EXPECT_TRUE(v.ends_turn(7)) << "<|call|> ends it";
  EXPECT_EQ(v.turn_ends(), (std::vector<int>{7}));  // <|return|> is eos already
  const Vocab w = vocab_with(harmony, -1, -1);
  EXPECT_EQ(w.turn_ends(), (std::vector<int>{6, 7}));
  // Without <|call|> the vocabulary is not harmony's: eot stays an end.
  const Vocab x = vocab_with({"<|start|>", "<|end|>", "<|return|>"}, 5, 4);
  EXPECT_EQ(x.turn_ends(), (std::vector<int>{4}));
}

}  // namespace
}  // namespace tzero
