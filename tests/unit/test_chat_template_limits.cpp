// Hostile chat templates (chat/chat_template_ast.h, kMaxNesting and kMaxTemplateBytes): each
// was a stack overflow (SIGSEGV) in the parser, the evaluator or the AST's destruction; each is
// now a one-line tzero::Error naming the limit. Templates at the limit still parse and render.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "chat/chat_template.h"
#include "chat/chat_template_ast.h"

namespace tzero {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string error_of(const std::string& source) {
  try {
    const ChatTemplate t(source);
    t.render(nlohmann::ordered_json{{"messages", nlohmann::ordered_json::array()}});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplateLimits, HostileNestingIsAnError) {
  const struct {
    const char* name;
    std::string source;
  } cases[] = {
      {"5000 parentheses", "{{ " + repeat("(", 5000) + "1" + repeat(")", 5000) + " }}"},
      {"10k brackets", "{{ " + repeat("[", 10000) + repeat("]", 10000) + " }}"},
      {"20k nested ifs", repeat("{% if true %}", 20000) + "x" + repeat("{% endif %}", 20000)},
      {"100k-term chain", "{{ 1" + repeat(" + 1", 100000) + " }}"},
      {"5000 nots", "{{ " + repeat("not ", 5000) + "true }}"},
      {"5000 minus signs", "{{ " + repeat("-", 5000) + "1 }}"},
      {"5000 attributes", "{{ x" + repeat(".a", 5000) + " }}"},
      {"5000 filters", "{{ 'a'" + repeat("|upper", 5000) + " }}"},
      {"5000 nested calls", "{{ " + repeat("range(", 5000) + "1" + repeat(")", 5000) + " }}"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.source);
    EXPECT_NE(e.find(" deep"), std::string::npos) << c.name << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << c.name << ": one line";
  }
}

TEST(ChatTemplateLimits, TooLargeIsAnError) {
  const std::string e = error_of(std::string(jinja::kMaxTemplateBytes + 1, 'x'));
  EXPECT_NE(e.find("more than the 1 MiB a template may have"), std::string::npos) << e;
}

TEST(ChatTemplateLimits, WithinTheLimitsStillRenders) {
  // 100 levels of parentheses, a 200-term chain, 100 nested ifs: well inside kMaxNesting.
  const ChatTemplate a("{{ " + repeat("(", 100) + "1" + repeat(")", 100) + " }}");
  EXPECT_EQ(a.render(nlohmann::ordered_json::object()), "1");
  const ChatTemplate b("{{ 0" + repeat(" + 1", 200) + " }}");
  EXPECT_EQ(b.render(nlohmann::ordered_json::object()), "200");
  const ChatTemplate c(repeat("{% if true %}", 100) + "x" + repeat("{% endif %}", 100));
  EXPECT_EQ(c.render(nlohmann::ordered_json::object()), "x");
}

}  // namespace
// Integer arithmetic that leaves int64 (the fuzzer's finds: 2 ** 111, a float too large for an
// integer conversion, overflowing sums and products) is an error naming the operator, never
// undefined behaviour; floats and in-range integers still compute.
TEST(ChatTemplateLimits, IntegerOverflowIsAnError) {
  for (const char* src :
       {"{{ 2 ** 111 + 2 }}", "{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
        "{{ 4294967296 * 4294967296 }}", "{{ (-9223372036854775807 - 1) // -1 }}",
        "{{ -(-9223372036854775807 - 1) }}"}) {
    const std::string e = error_of(src);
    EXPECT_NE(e.find("integer overflow in "), std::string::npos) << src << ": " << e;
  }
  EXPECT_EQ(error_of("{{ 1 + 12222222222222222222.5 + 1 }}"), "");
  EXPECT_EQ(error_of("{{ -9223372036854775807 }}"), "");
  const ChatTemplate t("{{ 2 ** 62 }} {{ 2 ** 0.5 > 1.41 }} {{ 7 // -2 }} {{ 7 % -2 }}");
  EXPECT_EQ(t.render(nlohmann::ordered_json{{"messages", nlohmann::ordered_json::array()}}),
            "4611686018427387904 True -4 -1");
}

}  // namespace tzero
