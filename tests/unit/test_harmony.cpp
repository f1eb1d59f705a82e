// gpt-oss's harmony replies split by channel (server/harmony.h), token by token as the stream
// and the whole-reply path feed them: the analysis channel is reasoning, final and
// recipient-less commentary are content, a message to functions.NAME is a tool call with its
// body as arguments, other recipients are dropped, and a reply without messages is content.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/harmony.h"

namespace tzero::server {
namespace {

// A reply as (marker, text) tokens: "<|...|>" entries are markers, others text.
struct Split {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};
Split split(const std::vector<std::string>& tokens) {
  HarmonySplitter s("call_x_0_");
  Split out;
  for (const std::string& t : tokens) {
    const bool marker = t.size() > 4 && t.rfind("<|", 0) == 0 && t.substr(t.size() - 2) == "|>";
    const HarmonySplitter::Piece p = s.push(marker ? t : "", marker ? "" : t);
    out.reasoning += p.reasoning;
    out.content += p.content;
    for (auto& c : s.take()) out.calls.push_back(c);
  }
  const HarmonySplitter::Piece p = s.finish();
  out.reasoning += p.reasoning;
  out.content += p.content;
  for (auto& c : s.take()) out.calls.push_back(c);
  return out;
}

TEST(Harmony, AnalysisIsReasoningFinalIsContent) {
  const Split r =
      split({"<|channel|>", "analysis", "<|message|>", "The user", " asks.", "<|end|>", "<|start|>",
             "assistant", "<|channel|>", "final", "<|message|>", "Hello", " there", "<|return|>"});
  EXPECT_EQ(r.reasoning, "The user asks.");
  EXPECT_EQ(r.content, "Hello there");
  EXPECT_TRUE(r.calls.empty());
}

TEST(Harmony, ToolCallsInEitherHeaderPosition) {
  // Recipient after the channel, with a constraint.
  Split r = split({"<|channel|>", "analysis", "<|message|>", "need weather", "<|end|>", "<|start|>",
                   "assistant", "<|channel|>", "commentary", " to=functions.get_weather", " ",
                   "<|constrain|>", "json", "<|message|>", "{\"city\":", "\"Paris\"}", "<|call|>"});
  EXPECT_EQ(r.reasoning, "need weather");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(r.calls[0].id, "call_x_0_0");
  // Recipient in the role part.
  r = split({"<|start|>", "assistant to=functions.lookup", "<|channel|>", "commentary",
             "<|message|>", "{}", "<|call|>"});
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "lookup");
  EXPECT_EQ(r.calls[0].arguments, "{}");
}

TEST(Harmony, PreamblesAreContentBuiltInToolsAreDropped) {
  const Split r = split({"<|channel|>", "commentary", "<|message|>", "Let me check.", "<|end|>",
                         "<|start|>", "assistant", "<|channel|>", "analysis", " to=browser.search",
                         "<|message|>", "{\"q\":1}", "<|call|>"});
  EXPECT_EQ(r.content, "Let me check.");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.reasoning, "");
}

TEST(Harmony, TextWithoutMessagesIsContent) {
  EXPECT_EQ(split({"plain", " text"}).content, "plain text");
  EXPECT_EQ(split({"<|channel|>", "plain", "<|channel|>"}).content, "plain");
  // Cut by max_tokens inside the reasoning: what came is reasoning, no content.
  const Split r = split({"<|channel|>", "analysis", "<|message|>", "thinking"});
  EXPECT_EQ(r.reasoning, "thinking");
  EXPECT_EQ(r.content, "");
}

}  // namespace
}  // namespace tzero::server
