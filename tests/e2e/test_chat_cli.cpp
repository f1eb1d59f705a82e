// `tzero chat`: the rendered prompt (--render) and an interactive chat driven through stdin,
// on a generated model (random weights: the replies are arbitrary but deterministic).
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace {

const char* kMessages =
    R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}])";

TEST(ChatCli, RendersNamedFormats) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  auto r = tzero::test::run_tzero({"chat", "--render", "-m", model, "--chat-template", "chatml"},
                                  kMessages);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  // bos_token and eos_token come from the vocabulary (<s>, </s>).
  r = tzero::test::run_tzero({"chat", "--render", "-m", model, "--chat-template", "llama2"},
                             kMessages);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s>"
            "<s>[INST] Bye [/INST]");
}

TEST(ChatCli, ErrorsAreClear) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  // The generated model has no tokenizer.chat_template.
  auto r = tzero::test::run_tzero({"chat", "--render", "-m", model}, kMessages);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--chat-template NAME"), std::string::npos) << r.err;
  r = tzero::test::run_tzero({"chat", "--render", "-m", model, "--chat-template", "nope"},
                             kMessages);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown chat template 'nope'"), std::string::npos) << r.err;
  r = tzero::test::run_tzero(
      {"chat", "--render", "-m", model, "--chat-template", "mistral"},
      R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Conversation roles must alternate"), std::string::npos) << r.err;
}

TEST(ChatCli, AnswersTwoTurnsAndExitsOnEof) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const std::vector<std::string> args = {"chat", "-m", model, "--chat-template", "chatml", "-n",
                                         "6",    "-t", "2"};
  const auto one = tzero::test::run_tzero(args, "hello there\n");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto two = tzero::test::run_tzero(args, "hello there\nwhat next?\n");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  // Each reply ends with a newline; the first turn is the same whether or not a second
  // follows, and the second adds a reply of its own.
  ASSERT_FALSE(one.out.empty());
  EXPECT_EQ(one.out.back(), '\n');
  EXPECT_EQ(two.out.compare(0, one.out.size(), one.out), 0) << one.out << "|" << two.out;
  EXPECT_GT(two.out.size(), one.out.size() + 1);
  // Deterministic at temperature 0, and /exit ends the chat like EOF.
  EXPECT_EQ(tzero::test::run_tzero(args, "hello there\nwhat next?\n").out, two.out);
  const auto exited = tzero::test::run_tzero(args, "hello there\n/exit\nwhat next?\n");
  EXPECT_EQ(exited.exit_code, 0);
  EXPECT_EQ(exited.out, one.out);
}

}  // namespace
