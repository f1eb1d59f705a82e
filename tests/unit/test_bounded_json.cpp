// The one nesting limit for outside JSON (base/bounded_json.h) and the excerpt of outside text
// in messages (base/excerpt.h).
#include <gtest/gtest.h>

#include <string>

#include "base/bounded_json.h"
#include "base/excerpt.h"

namespace tzero {
namespace {

std::string nested(int depth) {
  return std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
}

TEST(BoundedJson, AtTheLimitParsesOnePastIsRefused) {
  EXPECT_NO_THROW(parse_json_bounded(nested(kMaxJsonDepth)));
  try {
    parse_json_bounded(nested(kMaxJsonDepth + 1));
    FAIL() << "a document one level past the limit was parsed";
  } catch (const nlohmann::json::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 256"), std::string::npos) << e.what();
    EXPECT_EQ(e.byte, size_t(kMaxJsonDepth) + 1);  // the first bracket past the limit (1-based)
  }
}

TEST(BoundedJson, BracketsInsideStringsDoNotCount) {
  const std::string s = "{\"a\": \"" + std::string(1000, '[') + "\\\"[[\", \"b\": [1]}";
  const nlohmann::json j = parse_json_bounded(s, 2);
  EXPECT_EQ(j["a"].get<std::string>().size(), 1003u);
  EXPECT_THROW(parse_json_bounded("{\"a\": [[1]]}", 2), nlohmann::json::parse_error);
  // An escaped backslash ends the escape: the quote after it closes the string.
  EXPECT_EQ(json_depth_exceeded_at("[\"\\\\\", [[1]]]", 2), 8u);
}

TEST(BoundedJson, AMillionLevelsAreRefusedAtOnce) {
  const std::string deep(size_t(1) << 20, '[');
  EXPECT_EQ(json_depth_exceeded_at(deep), size_t(kMaxJsonDepth));
  EXPECT_TRUE(parse_json_bounded_or_discarded<nlohmann::ordered_json>(deep).is_discarded());
  EXPECT_TRUE(parse_json_bounded_or_discarded("{").is_discarded());  // malformed
  EXPECT_EQ(parse_json_bounded_or_discarded("[1]"), nlohmann::json::array({1}));
}

TEST(Excerpt, CutsLongTextAndSaysItsLength) {
  const std::string key(1 << 20, 'k');
  const std::string e = excerpt(key);
  EXPECT_EQ(e, std::string(kMaxQuotedChars, 'k') + "... (1048576 bytes)");
  EXPECT_EQ(excerpt("short"), "short");
}

TEST(Excerpt, EscapesControlBytesAndBrokenUtf8AndCutsAtCharacters) {
  EXPECT_EQ(excerpt("a\x1b[2Jb\n\x7f"), "a\\x1b[2Jb\\x0a\\x7f");
  EXPECT_EQ(excerpt("caf\xc3\xa9 \xc3"), "caf\xc3\xa9 \\xc3");
  // "é" (2 bytes) does not fit in the 4th and 5th byte of a 4-byte excerpt: cut before it.
  EXPECT_EQ(excerpt("abc\xc3\xa9", 4), "abc... (5 bytes)");
}

// Binary text (every byte escaped to 4) is cut by the bytes it is written as: a megabyte of
// control bytes gives 50 escapes, not 200 (800 bytes).
TEST(Excerpt, BoundsTheEscapedLength) {
  const std::string e = excerpt(std::string(1 << 20, '\x01'));
  EXPECT_EQ(e.size(), kMaxQuotedChars + std::string("... (1048576 bytes)").size()) << e;
  EXPECT_EQ(e.rfind("\\x01... (1048576 bytes)"), kMaxQuotedChars - 4);
  EXPECT_EQ(excerpt("ab\ncd", 5), "ab... (5 bytes)");  // "ab\x0a" would be 6 bytes
  EXPECT_EQ(excerpt("ab\ncd", 6), "ab\\x0a... (5 bytes)");
}

}  // namespace
}  // namespace tzero
