// gen-model's note on matrices whose rows do not fit their type's blocks: one line for the
// whole model (how many of how many, which fallback type for which row length), not one per
// tensor or per layer.
#include <gtest/gtest.h>

#include <regex>

#include "convert/gen_model.h"
#include "format/tensor_type.h"
#include "support/test_support.h"

namespace tzero {
namespace {

TEST(GenModelNotes, FallbacksAreSummedUpInOneNote) {
  // tiny with 288-wide rows (stories15M's width): 288 is not a multiple of Q4_K's 256, so every
  // matrix reading the embedding falls back to Q5_0; ffn_down's rows (768) fit.
  ModelPreset p = *find_preset("tiny");
  p.n_embd = 288;
  p.n_ff = 768;
  p.head_dim = 72;
  const std::string path = test::scratch_dir() + "/notes-288.gguf";
  const std::vector<std::string> notes = generate_model(p, TensorType::Q4_K, 1, path);
  ASSERT_EQ(notes.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(notes[0], m, std::regex(R"(^(\d+) of (\d+) weight matrices )")))
      << notes[0];
  // Per layer q, k, v, output, gate and up (not down), and the token embedding and the output.
  EXPECT_EQ(std::stoi(m[1]), 2 * 6 + 2) << notes[0];
  EXPECT_EQ(std::stoi(m[2]), 2 * 7 + 2) << notes[0];
  EXPECT_NE(notes[0].find("q5_0 instead of q4_k for rows of 288 ("), std::string::npos) << notes[0];
  EXPECT_EQ(notes[0].find("768"), std::string::npos) << notes[0];
  // No fallback, no note.
  EXPECT_TRUE(generate_model(*find_preset("tiny"), TensorType::Q4_K, 1, path).empty());
}

}  // namespace
}  // namespace tzero
