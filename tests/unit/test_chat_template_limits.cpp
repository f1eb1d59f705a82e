// Hostile chat templates (chat/chat_template_ast.h, kMaxNesting and kMaxTemplateBytes): each
// was a stack overflow (SIGSEGV) in the parser, the evaluator or the AST's destruction; each is
// now a one-line tzero::Error naming the limit. Templates at the limit still parse and render.
// Values nested past kMaxValueDepth (chat/chat_template_value.h), built by a template or handed
// in as JSON, values whose text or comparison would be exponential (lists shared many times
// over), and namespaces put inside values (which could contain themselves) are errors too;
// at the limits everything renders on a 384 KiB stack.
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "chat/chat_template.h"
#include "chat/chat_template_ast.h"
#include "chat/chat_template_value.h"

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

// Runs f on a thread with `bytes` of stack (more under AddressSanitizer, whose frames are
// larger); rethrows what it threw.
void on_small_stack(size_t bytes, const std::function<void()>& f) {
#if defined(__SANITIZE_ADDRESS__)
  bytes *= 8;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  bytes *= 8;
#endif
#endif
  struct Call {
    const std::function<void()>* f;
    std::exception_ptr error;
  } call{&f, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t t;
  ASSERT_EQ(pthread_create(
                &t, &attr,
                [](void* p) -> void* {
                  auto* c = static_cast<Call*>(p);
                  try {
                    (*c->f)();
                  } catch (...) {
                    c->error = std::current_exception();
                  }
                  return nullptr;
                },
                &call),
            0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  if (call.error) std::rethrow_exception(call.error);
}

// `depth` arrays inside each other around 0.
nlohmann::ordered_json nested(int depth) {
  nlohmann::ordered_json j = 0;
  for (int i = 0; i < depth; ++i) j = nlohmann::ordered_json::array({std::move(j)});
  return j;
}

// A loop that wraps ns.x `n` times with WRAP (which reads ns.x), then prints it with SHOW.
std::string wrapping(int n, const std::string& wrap, const std::string& show) {
  return "{% set ns = namespace(x=0) %}{% for i in range(" + std::to_string(n) +
         ") %}{% set ns.x = " + wrap + " %}{% endfor %}{{ " + show + " }}";
}

TEST(ChatTemplateLimits, DeepValuesAreAnError) {
  const std::string deep =
      "nested deeper than " + std::to_string(jinja::kMaxValueDepth) + " levels";
  for (const std::string& src :
       {wrapping(100000, "[ns.x]", "ns.x"), wrapping(100000, "{'a': ns.x}", "ns.x | tojson"),
        wrapping(100000, "[ns.x, ns.x]", "ns.x == ns.x"),
        wrapping(100000, "dict(a=ns.x)", "ns.x | length")}) {
    const std::string e = error_of(src);
    EXPECT_NE(e.find(deep), std::string::npos) << src << ": " << e;
  }
  // JSON handed in deeper than the limit: refused while it is converted.
  try {
    const ChatTemplate t("{{ messages | tojson }}");
    t.render(nlohmann::ordered_json{{"messages", nested(100000)}});
    ADD_FAILURE() << "rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(deep), std::string::npos) << e.what();
  }
  // 40 lists that each hold the one before twice: 2^40 items to print or compare.
  const std::string doubled =
      "{% set ns = namespace(x=['" + std::string(1000, 'a') + "'], y=[0], z=[0]) %}{% for i in " +
      "range(40) %}{% set ns.x = [ns.x, ns.x] %}{% set ns.y = [ns.y, ns.y] %}{% set ns.z = " +
      "[ns.z, ns.z] %}{% endfor %}";
  EXPECT_NE(error_of(doubled + "{{ ns.x }}").find("a value whose text passes 256 MiB"),
            std::string::npos);
  EXPECT_NE(error_of(doubled + "{{ ns.y == ns.z }}").find("comparing values of more than"),
            std::string::npos);
  const ChatTemplate same(doubled + "{{ ns.y == ns.y }}");  // one list: equal at once
  EXPECT_EQ(same.render(nlohmann::ordered_json::object()), "True");
  // A namespace inside a value could hold that value (a cycle) or deepen it later.
  for (const char* src :
       {"{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}",
        "{% set ns = namespace() %}{{ [ns] }}", "{{ {'a': namespace()} }}",
        "{{ namespace(a=namespace()) }}",
        "{% set ns = namespace(x=0) %}{% set l = [1] %}{% set ns.l = l %}{{ [ns] }}"}) {
    const std::string e = error_of(src);
    EXPECT_NE(e.find("a namespace() cannot be put inside"), std::string::npos) << src << ": " << e;
  }
}

// 384 KiB: what a server thread has under `ulimit -s 512`, less room for the frames above the
// template (tests/e2e/test_serve_bounds.cpp runs the server so).
TEST(ChatTemplateLimits, AtTheLimitsRendersOnASmallStack) {
  on_small_stack(384 << 10, [] {
    // Values kMaxValueDepth deep: built by the template, and handed in as JSON (messages sits
    // 1 level down in the variables), printed, compared, serialized, destroyed.
    const int top = jinja::kMaxValueDepth;
    const std::string built =
        error_of(wrapping(top - 1, "[ns.x]", "ns.x | tojson") +
                 wrapping(top - 1, "[ns.x]", "ns.x == ns.x") + wrapping(top - 1, "[ns.x]", "ns.x"));
    EXPECT_EQ(built, "");
    const ChatTemplate t(
        "{{ messages | tojson(indent=1) | length > 0 }}{{ messages == messages }}{{ messages }}");
    EXPECT_EQ(t.render(nlohmann::ordered_json{{"messages", nested(top - 1)}}).substr(0, 9),
              "TrueTrue[");
    EXPECT_NE(error_of(wrapping(top, "[ns.x]", "ns.x")), "");
    // An expression chained near kMaxNesting, 500 nested for loops (kMaxParseDepth is 512).
    const int n = jinja::kMaxNesting - 2;
    const ChatTemplate chain("{{ 0" + repeat(" + 1", n) + " }}");
    EXPECT_EQ(chain.render(nlohmann::ordered_json::object()), std::to_string(n));
    const ChatTemplate fors(repeat("{% for a in [1] %}", 500) + "x" + repeat("{% endfor %}", 500));
    EXPECT_EQ(fors.render(nlohmann::ordered_json::object()), "x");
  });
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
