// GBNF grammars (src/grammar/): the compiler's syntax and refusals, the matcher's language
// (strings in, accepted or not), and the token mask over real vocabularies (a token is allowed
// exactly when its whole text continues a valid output).
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "format/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_mask.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace tzero {
namespace {

// Does the grammar match s exactly (the root complete after its last byte)?
bool matches(const std::string& gbnf, const std::string& s) {
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(gbnf)));
  uint32_t st = m.start();
  for (const char c : s) {
    st = m.next(st, uint8_t(c));
    if (st == GrammarMatcher::kDead) return false;
  }
  return m.accepting(st);
}

// Is s a prefix of some string of the grammar?
bool prefix_ok(const std::string& gbnf, const std::string& s) {
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(gbnf)));
  uint32_t st = m.start();
  for (const char c : s)
    if ((st = m.next(st, uint8_t(c))) == GrammarMatcher::kDead) return false;
  return true;
}

std::string compile_error(const std::string& gbnf, const GrammarLimits& limits = {}) {
  try {
    compile_gbnf(gbnf, limits);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

// llama.cpp's grammars/json.gbnf, as users write it.
const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(Grammar, LiteralsAlternativesAndClasses) {
  const std::string g = R"(root ::= "ab" | [x-z]+ "!" | "\u00e9" [^a-c])";
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "xyzzy!"));
  EXPECT_FALSE(matches(g, "xyzzy"));
  EXPECT_FALSE(matches(g, "abc"));
  EXPECT_TRUE(matches(g,
                      "\xC3\xA9"
                      "d"));
  EXPECT_FALSE(matches(g,
                       "\xC3\xA9"
                       "b"));
  EXPECT_TRUE(
      matches(g, "\xC3\xA9\xE2\x82\xAC"));  // é€: the negated class takes any other code point
  EXPECT_FALSE(matches(g, ""));
}

TEST(Grammar, RepetitionCountsAreExact) {
  const std::string g = R"(root ::= "a"{2,4} "b"{3} "c"{1,} "d"?)";
  EXPECT_FALSE(matches(g, "abbbc"));
  EXPECT_TRUE(matches(g, "aabbbc"));
  EXPECT_TRUE(matches(g, "aaaabbbcccd"));
  EXPECT_FALSE(matches(g, "aaaaabbbc"));
  EXPECT_FALSE(matches(g, "aabbc"));
  EXPECT_FALSE(matches(g, "aabbbcdd"));
  // An operator after a literal repeats the whole literal, after a group the group.
  EXPECT_TRUE(matches(R"(root ::= "ab"* ("x" | "y"){2})", "ababxy"));
  EXPECT_FALSE(matches(R"(root ::= "ab"* ("x" | "y"){2})", "abaxy"));
}

TEST(Grammar, RulesSpanLinesAndRecurse) {
  const std::string g =
      "root ::= list\nlist ::= \"(\"\n  item*\n  \")\"\n"
      "item ::= [a-z] | list  # nested\n";
  EXPECT_TRUE(matches(g, "(a(b(c)d)())"));
  EXPECT_FALSE(matches(g, "(a(b)"));
  EXPECT_TRUE(prefix_ok(g, "(a(b"));
  EXPECT_FALSE(prefix_ok(g, "(a)b"));
}

TEST(Grammar, JsonGrammarAcceptsJsonOnly) {
  for (const char* ok :
       {R"({})", R"({"a": 1})", R"({"a": [1, 2.5e3, -0.25, true, null], "b": {"c": "x\"\u00e9"}})",
        "{\"k\":\n  \"v\"}"})
    EXPECT_TRUE(matches(kJson, ok)) << ok;
  for (const char* bad : {R"({"a": 01})", R"({"a" 1})", R"({'a': 1})", R"([1])", R"({"a": tru})",
                          "{\"a\": \"\x01\"}", R"({"a": 1,})"})
    EXPECT_FALSE(matches(kJson, bad)) << bad;
}

TEST(Grammar, HalfCharactersStayAliveOnlyWhenSomeClassCanTakeThem) {
  // A 3-byte character's first byte is alive under a class that holds some of its completions.
  const std::string cjk = R"(root ::= [一-龥]+)";
  EXPECT_TRUE(prefix_ok(cjk, "\xE4"));   // U+4000..U+4FFF: contains U+4E00
  EXPECT_FALSE(prefix_ok(cjk, "\xE3"));  // U+3000..U+3FFF: none
  EXPECT_FALSE(prefix_ok(cjk, "a"));
  EXPECT_TRUE(matches(cjk, "\xE4\xB8\x80"));  // 一
  EXPECT_FALSE(matches(cjk, "\xE4\xB8"));     // half a character is not complete
  EXPECT_FALSE(prefix_ok(cjk, "\x80"));       // a continuation byte with no lead
  // Prefixes that can only become a surrogate or an overlong form are dead at once.
  const std::string any = R"(root ::= .+)";
  EXPECT_TRUE(prefix_ok(any, "\xED\x9F"));   // U+D7C0..U+D7FF
  EXPECT_FALSE(prefix_ok(any, "\xED\xA0"));  // U+D800..: surrogates
  EXPECT_FALSE(prefix_ok(any, "\xE0\x80"));  // overlong
  EXPECT_FALSE(prefix_ok(any, "\xC1"));
  EXPECT_FALSE(prefix_ok(any, "\xF4\x90"));  // beyond U+10FFFF
}

TEST(Grammar, RefusalsNameTheLine) {
  EXPECT_NE(compile_error("root ::= foo\n").find("line 1: the rule `foo` is used but not defined"),
            std::string::npos);
  EXPECT_NE(compile_error("a ::= \"x\"\n").find("no `root` rule"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"x\"\nroot ::= \"y\"\n")
                .find("line 2: the rule `root` is defined twice"),
            std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"\n\nx ::= \"abc\n").find("line 3"), std::string::npos);
  EXPECT_NE(compile_error("root ::= [a-\n").find("line 1"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\" )").find("unexpected character ')'"), std::string::npos);
  EXPECT_NE(compile_error("root ::= * \"a\"").find("nothing before it"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(compile_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(compile_error("").find("empty"), std::string::npos);
}

TEST(Grammar, LeftRecursionIsRefused) {
  EXPECT_NE(compile_error("root ::= root \"x\" | \"y\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(compile_error("root ::= a\na ::= b \"x\"\nb ::= \"\" | a").find("left-recursive"),
            std::string::npos);
  // A repetition of something that can match nothing would loop forever too.
  EXPECT_NE(compile_error("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  // Right recursion is fine.
  EXPECT_EQ(compile_error("root ::= \"x\" root | \"y\""), "");
}

TEST(Grammar, LimitsAreCheckedBeforeAnyLongWork) {
  GrammarLimits small;
  small.max_text_bytes = 100;
  EXPECT_NE(
      compile_error(std::string(200, ' ') + "root ::= \"a\"", small).find("more than the limit"),
      std::string::npos);
  EXPECT_NE(compile_error("root ::= \"a\"{100000}").find("above the limit"), std::string::npos);
  // Repetitions expand into copies: refused by the element count, not compiled for long.
  std::string big = "root ::=";
  for (int i = 0; i < 21; ++i) big += " \"abcdefghij\"{1000}";
  EXPECT_NE(compile_error(big).find("elements"), std::string::npos);
  // Nested groups become rules, so they do not multiply.
  EXPECT_EQ(compile_error("root ::= ((((\"abcdefgh\"{1000}){1000}){1000}){1000})"), "");
  std::string deep = "root ::= ";
  for (int i = 0; i < 100; ++i) deep += "(";
  deep += "\"a\"";
  for (int i = 0; i < 100; ++i) deep += ")";
  EXPECT_NE(compile_error(deep).find("nested deeper"), std::string::npos);
}

TEST(Grammar, DeepRepetitionKeepsStacksFlat) {
  // Right recursion pops its continuation first: 100k repetitions do not grow the stacks.
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(R"(root ::= ("ab" | "c")* "!")")));
  uint32_t st = m.start();
  for (int i = 0; i < 100000; ++i) st = m.next(m.next(st, 'a'), 'b');
  ASSERT_NE(st, GrammarMatcher::kDead);
  EXPECT_LT(m.n_states(), 10u);
  EXPECT_TRUE(m.accepting(m.next(st, '!')));
}

// --- the token mask ---------------------------------------------------------------------------

struct LoadedVocab {
  explicit LoadedVocab(const std::string& path) : file(path), vocab(Vocab::from_gguf(file)) {}
  GgufFile file;
  Vocab vocab;
};

const Vocab* real_vocab(const std::string& name) {
  static std::map<std::string, std::unique_ptr<LoadedVocab>> loaded;
  auto& l = loaded[name];
  if (!l) {
    const std::string path = test::shared_data("vocab/" + name);
    if (path.empty()) return nullptr;
    l = std::make_unique<LoadedVocab>(path);
  }
  return &l->vocab;
}

// The mask by definition: token t is allowed iff its text walks through the matcher from the
// state (or it is an end token and the state accepts).
std::vector<bool> brute_force(const std::string& gbnf, const TokenTrie& trie,
                              const std::string& prefix, const std::vector<int32_t>& ends) {
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(gbnf)));
  uint32_t st = m.start();
  for (const char c : prefix) st = m.next(st, uint8_t(c));
  std::vector<bool> ok(size_t(trie.n_vocab()), false);
  for (int t = 0; t < trie.n_vocab(); ++t) {
    const std::string& text = trie.text(t);
    if (text.empty()) continue;
    uint32_t s = st;
    for (const char c : text)
      if ((s = m.next(s, uint8_t(c))) == GrammarMatcher::kDead) break;
    ok[size_t(t)] = s != GrammarMatcher::kDead;
  }
  if (m.accepting(st))
    for (int32_t e : ends) ok[size_t(e)] = true;
  return ok;
}

TEST(TokenMask, EqualsTheDefinitionOnRealVocabularies) {
  for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"}) {
    const Vocab* v = real_vocab(name);
    if (!v) GTEST_SKIP() << "../shared/data/vocab is absent: real vocabularies not tested";
    auto trie = std::make_shared<const TokenTrie>(*v);
    const std::vector<int32_t> ends{v->eos()};
    for (const std::string prefix :
         {"", "{\"a\": ", "{\"a\": [1, 2", "{\"a\": \"x\\", "{\"k\": 1}"}) {
      TokenConstraint c(std::make_shared<const Grammar>(compile_gbnf(kJson)), trie, ends);
      // Drive the constraint to the prefix with the single-byte tokens (or any token that fits).
      GrammarMatcher check(std::make_shared<const Grammar>(compile_gbnf(kJson)));
      for (const char ch : prefix) {
        int32_t tok = -1;
        for (int t = 0; t < trie->n_vocab() && tok < 0; ++t)
          if (trie->text(t) == std::string(1, ch)) tok = t;
        ASSERT_GE(tok, 0) << name << ": no token for '" << ch << "'";
        c.accept(tok);
      }
      const std::vector<bool> want = brute_force(kJson, *trie, prefix, ends);
      const std::vector<uint64_t>& got = c.allowed();
      size_t n_allowed = 0, mismatches = 0;
      for (int t = 0; t < trie->n_vocab(); ++t) {
        const bool bit = (got[size_t(t) / 64] >> (t % 64)) & 1;
        n_allowed += bit;
        mismatches += bit != want[size_t(t)];
      }
      EXPECT_EQ(mismatches, 0u) << name << " after '" << prefix << "'";
      EXPECT_GT(n_allowed, 0u);
      const bool eos_ok = (got[size_t(v->eos()) / 64] >> (v->eos() % 64)) & 1;
      EXPECT_EQ(eos_ok, prefix == "{\"k\": 1}") << prefix;
    }
  }
}

// A random walk through the mask never meets a dead end under a grammar that has none, on a
// vocabulary holding every byte (so any character is reachable): the mask and the matcher agree
// on what can still be completed.
TEST(TokenMask, RandomWalksNeverDeadEndWithEveryByte) {
  const Vocab& v = *[] {
    static GgufFile f(test::generated_model("tiny", "f32"));
    static Vocab vocab = Vocab::from_gguf(f);
    return &vocab;
  }();
  auto trie = std::make_shared<const TokenTrie>(v);
  auto grammar = std::make_shared<const Grammar>(compile_gbnf(kJson));
  uint64_t rng = 12345;
  for (int walk = 0; walk < 60; ++walk) {
    TokenConstraint c(grammar, trie, {v.eos()});
    for (int step = 0; step < 300; ++step) {
      ASSERT_TRUE(c.any_allowed()) << "walk " << walk << " step " << step;
      std::vector<int32_t> ok;
      const std::vector<uint64_t>& m = c.allowed();
      for (int t = 0; t < trie->n_vocab(); ++t)
        if ((m[size_t(t) / 64] >> (t % 64)) & 1) ok.push_back(t);
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const int32_t t = ok[size_t(rng >> 33) % ok.size()];
      if (t == v.eos()) break;
      c.accept(t);
    }
  }
}

// A generation long enough to meet more states than the matcher keeps: the caches start again
// (the state survives, renumbered) and what is allowed does not change.
TEST(TokenMask, LongGenerationsCompactTheMatcher) {
  static GgufFile f(test::generated_model("tiny", "f32"));
  static Vocab v = Vocab::from_gguf(f);
  auto trie = std::make_shared<const TokenTrie>(v);
  // 25 x 1000 positions: every character a new state.
  TokenConstraint c(std::make_shared<const Grammar>(compile_gbnf("root ::= ([a-c]{1000}){25}")),
                    trie, {v.eos()});
  const int32_t a = v.byte_token('a'), b = v.byte_token('b'), z = v.byte_token('z');
  ASSERT_GE(a, 0);
  size_t most = 0;
  for (int i = 0; i < 25000; ++i) {
    const std::vector<uint64_t>& m = c.allowed();
    ASSERT_TRUE((m[size_t(b) / 64] >> (b % 64)) & 1) << i;
    ASSERT_FALSE((m[size_t(z) / 64] >> (z % 64)) & 1) << i;
    ASSERT_FALSE((m[size_t(v.eos()) / 64] >> (v.eos() % 64)) & 1) << i;
    c.accept(i % 2 ? a : b);
    most = std::max(most, c.n_states());
  }
  EXPECT_LT(c.n_states(), most) << "no compaction happened";
  EXPECT_TRUE(c.complete());
  const std::vector<uint64_t>& m = c.allowed();
  EXPECT_TRUE((m[size_t(v.eos()) / 64] >> (v.eos() % 64)) & 1);
  EXPECT_FALSE((m[size_t(a) / 64] >> (a % 64)) & 1);
}

TEST(TokenMask, ApplySetsMinusInfinityExactlyOnRefusedTokens) {
  const Vocab* v = real_vocab("ggml-vocab-gpt-2.gguf");
  if (!v) GTEST_SKIP() << "../shared/data/vocab is absent";
  auto trie = std::make_shared<const TokenTrie>(*v);
  TokenConstraint c(std::make_shared<const Grammar>(compile_gbnf(R"(root ::= [0-9]+)")), trie,
                    {v->eos()});
  const int n = trie->n_vocab() + 7;  // a model's padded rows are refused too
  std::vector<float> row(size_t(n), 1.5f);
  c.apply(row.data(), n);
  for (int t = 0; t < n; ++t) {
    const bool digits = t < trie->n_vocab() && !trie->text(t).empty() &&
                        trie->text(t).find_first_not_of("0123456789") == std::string::npos;
    EXPECT_EQ(row[size_t(t)] == 1.5f, digits) << t;
  }
  EXPECT_FALSE(c.complete());
}

}  // namespace
}  // namespace tzero
