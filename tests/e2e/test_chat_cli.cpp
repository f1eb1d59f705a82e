// `tzero chat`: the rendered prompt (--render) and an interactive chat driven through stdin,
// on a generated model (random weights: the replies are arbitrary but deterministic).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

// The one template rule (chat/template_choice.h): a model without tokenizer.chat_template
// uses chatml and says so on stderr, as serve does; --chat-template FILE reads a template.
TEST(ChatCli, ModelWithoutTemplateFallsBackToChatml) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const auto named = tzero::test::run_tzero(
      {"chat", "--render", "-m", model, "--chat-template", "chatml"}, kMessages);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.err, "");
  const auto fallback = tzero::test::run_tzero({"chat", "--render", "-m", model}, kMessages);
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_EQ(fallback.out, named.out);
  EXPECT_EQ(fallback.err, "tzero: " + model +
                              ": the file has no chat template (tokenizer.chat_template); using "
                              "chatml (--chat-template NAME|FILE chooses another)\n");
  const std::string file = tzero::test::scratch_dir() + "/plain.jinja";
  tzero::test::write_file(file,
                          "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}>");
  const auto from_file =
      tzero::test::run_tzero({"chat", "--render", "-m", model, "--chat-template", file}, kMessages);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(from_file.out, "[system] Be brief.\n[user] Hi\n[assistant] Hello\n[user] Bye\n>");
  // run --messages takes the same rule.
  const std::string conv = tzero::test::scratch_dir() + "/conv.json";
  tzero::test::write_file(conv, R"([{"role": "user", "content": "Hi"}])");
  const auto run = tzero::test::run_tzero({"run", "-m", model, "--messages", conv, "-n", "2"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("using chatml"), std::string::npos) << run.err;
}

TEST(ChatCli, ErrorsAreClear) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  auto r = tzero::test::run_tzero({"chat", "--render", "-m", model, "--chat-template", "nope"},
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

// Lines starting with "/" are commands: /help and an unknown command print on stderr and send
// nothing; /reset starts again, so the same message gets the first turn's reply; /exit ends.
TEST(ChatCli, CommandsAreNotSentToTheModel) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const std::vector<std::string> args = {"chat", "-m", model, "-n", "6", "-t", "2", "--verbose"};
  const auto one = tzero::test::run_tzero(args, "hello there\n");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto r = tzero::test::run_tzero(
      args, "hello there\n/help\n/xyz\n/reset\nhello there\n/exit\nnot sent\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, one.out + one.out);
  EXPECT_NE(r.err.find("commands:\n  /help "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tzero chat: unknown command '/xyz': not sent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tzero chat: the conversation starts again\n"), std::string::npos) << r.err;
  size_t replies = 0;
  for (size_t p = r.err.find("{\"logits_digest\""); p != std::string::npos;
       p = r.err.find("{\"logits_digest\"", p + 1))
    ++replies;
  EXPECT_EQ(replies, 2u) << r.err;  // two turns reached the model, not five
  // "//" sends a line that starts with one "/": the same prompt as a --messages file with it.
  const auto slash = tzero::test::run_tzero(args, "//etc\n");
  ASSERT_EQ(slash.exit_code, 0) << slash.err;
  const std::string conv = tzero::test::scratch_dir() + "/slash.json";
  tzero::test::write_file(conv, R"([{"role": "user", "content": "/etc"}])");
  const auto ref = tzero::test::run_tzero(
      {"run", "-m", model, "--messages", conv, "-n", "6", "-t", "2", "--json"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const auto json = nlohmann::json::parse(ref.out);
  EXPECT_NE(slash.err.find("\"prompt_tokens\":" + json["prompt_tokens"].dump()), std::string::npos)
      << slash.err << "\n"
      << ref.out;
}

// The banner (stderr) names the model, the template, the mode, kernels, threads and context;
// stdout holds only the replies.
TEST(ChatCli, BannerSaysWhatIsInUse) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  auto r = tzero::test::run_tzero(
      {"chat", "-m", model, "-t", "2", "--kernels", "scalar", "-c", "256"}, "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tzero chat: model " + model +
                       " (llama, 2 layers, a vocabulary of 512 tokens)\n"
                       "tzero chat: template chatml (fallback: the file has none)\n"
                       "tzero chat: mode deterministic, kernels scalar, threads 2, context 256, "
                       "greedy\n"
                       "tzero chat: type /help for the commands; Ctrl+C stops a reply; /exit or "
                       "Ctrl+D ends the chat\n");
  r = tzero::test::run_tzero({"chat", "-m", model, "--chat-template", "llama3", "--mode", "fast",
                              "--temp", "0.5", "--seed", "7"},
                             "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tzero chat: template llama3\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tzero chat: mode fast, kernels "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", temperature 0.5, seed 7\n"), std::string::npos) << r.err;
  const std::string eot = tzero::test::generated_model("tiny-eot", "f32");
  r = tzero::test::run_tzero({"chat", "-m", eot}, "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tzero chat: template tokenizer.chat_template\n"), std::string::npos)
      << r.err;
}

// chat takes run's generation flags, checked as run checks them.
TEST(ChatCli, TakesRunsGenerationFlags) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const std::vector<std::string> base = {"chat", "-m", model, "-n", "6", "-t", "2"};
  const auto ref = tzero::test::run_tzero(base, "hello there\n");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  // Kernels and the prefill chunk change nothing.
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return tzero::test::run_tzero(a, "hello there\n");
  };
  EXPECT_EQ(with({"--kernels", "scalar", "-b", "3"}).out, ref.out);
  const auto sampled = with({"--temp", "1", "--seed", "3", "--top-k", "40", "--top-p", "0.9",
                             "--min-p", "0.01", "--repeat-penalty", "1.1"});
  EXPECT_EQ(sampled.exit_code, 0) << sampled.err;
  EXPECT_EQ(with({"--temp", "1", "--seed", "3", "--top-k", "40", "--top-p", "0.9", "--min-p",
                  "0.01", "--repeat-penalty", "1.1"})
                .out,
            sampled.out);
  EXPECT_EQ(with({"--mode", "fast"}).exit_code, 0);
  auto bad = with({"--mode", "slow"});
  EXPECT_EQ(bad.exit_code, 2);
  bad = with({"--top-p", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  bad = with({"--kernels", "nope"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("nope"), std::string::npos) << bad.err;
  const auto gpu = with({"--gpu-layers", "1", "--mode", "portable"});
  if (gpu.exit_code != 0) {
    EXPECT_NE(gpu.err.find("CUDA"), std::string::npos) << gpu.err;
  }
}

}  // namespace
