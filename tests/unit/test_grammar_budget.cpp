// What a grammar may cost (grammar/token_mask.h, GrammarBudget; docs/GRAMMAR.md "Cost"): the
// matcher never recurses over the grammar (a chain of 20,000 rules matches on a 256 KiB stack),
// an ambiguous grammar fails with GrammarBudgetExceeded at the same token every time (work is
// counted, not timed), and the memory of its states is bounded.
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "format/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_mask.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace tzero {
namespace {

// The issue's 151-byte grammar: every letter opens two ways to close, so after k letters
// 2^k parses are alive (the matcher keeps at most 4096 of them).
constexpr const char* kAmbiguous = R"(root ::= x
x ::= [a-z ] x "b" | [a-z ] x "c" | ".")";

// Runs f on a thread with a stack of `bytes` (the default is 8 MiB: too roomy to see a
// recursion that a server thread under `ulimit -s 512` would die of).
void on_small_stack(size_t bytes, const std::function<void()>& f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t t;
  auto body = [](void* p) -> void* {
    (*static_cast<const std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&t, &attr, body, const_cast<std::function<void()>*>(&f)), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

const Vocab& tiny_vocab() {
  static GgufFile f(test::generated_model("tiny", "f32"));
  static Vocab v = Vocab::from_gguf(f);
  return v;
}

TEST(GrammarBudget, AChainOfTwentyThousandRulesMatchesOnASmallStack) {
  // r0 ::= r1, r1 ::= r2, ..., the last ::= "x": expanding r0 goes 19,990 rules down before
  // it meets a character, with a parse stack that stays one entry deep.
  const int n = 19990;  // with root, 19,992 rules: under the 20,000 limit
  std::string g = "root ::= r0\n";
  for (int i = 0; i < n; ++i)
    g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  g += "r" + std::to_string(n) + " ::= \"x\"\n";
  GrammarLimits limits;
  limits.max_text_bytes = g.size();
  auto grammar = std::make_shared<const Grammar>(compile_gbnf(g, limits));
  bool matched = false;
  on_small_stack(256 << 10, [&] {
    GrammarMatcher m(grammar);
    const uint32_t s = m.next(m.start(), 'x');
    matched = s != GrammarMatcher::kDead && m.accepting(s);
  });
  EXPECT_TRUE(matched);
}

struct BudgetRun {
  int failed_at = -1;      // the step GrammarBudgetExceeded came at; -1: it never did
  uint64_t most_work = 0;  // the most work units one step took
};

// Drives a constraint through max_steps tokens, each the longest allowed one (lowest id first:
// more bytes, more new states per step), until the budget stops it.
BudgetRun run_until_budget(const Grammar& g, const GrammarBudget& budget, int max_steps,
                           const Vocab& v = tiny_vocab()) {
  auto trie = std::make_shared<const TokenTrie>(v);
  TokenConstraint c(std::make_shared<const Grammar>(g), trie, {v.eos()}, budget);
  BudgetRun run;
  for (int step = 0; step < max_steps; ++step) {
    const uint64_t before = c.work();
    try {
      const std::vector<uint64_t>& m = c.allowed();
      int32_t tok = -1;
      for (int t = 0; t < trie->n_vocab(); ++t)
        if (((m[size_t(t) / 64] >> (t % 64)) & 1) && t != v.eos() &&
            (tok < 0 || trie->text(t).size() > trie->text(tok).size()))
          tok = t;
      if (tok < 0) break;
      c.accept(tok);
    } catch (const GrammarBudgetExceeded& e) {
      EXPECT_NE(std::string(e.what()).find("too costly"), std::string::npos) << e.what();
      run.failed_at = step;
      break;
    }
    run.most_work = std::max(run.most_work, c.work() - before);
  }
  return run;
}

TEST(GrammarBudget, AnAmbiguousGrammarFailsAtTheSameTokenEveryTime) {
  const Grammar g = compile_gbnf(kAmbiguous);
  const GrammarBudget budget;  // the default
  const BudgetRun first = run_until_budget(g, budget, 200);
  ASSERT_GE(first.failed_at, 0) << "the ambiguous grammar never went over its budget";
  std::printf(
      "[measured] the ambiguous grammar fails at step %d (steps before it took up to %llu "
      "work units)\n",
      first.failed_at, static_cast<unsigned long long>(first.most_work));
  EXPECT_EQ(run_until_budget(g, budget, 200).failed_at, first.failed_at);
  // A smaller budget fails no later.
  GrammarBudget small = budget;
  small.max_step_work /= 10;
  EXPECT_LE(run_until_budget(g, small, 200).failed_at, first.failed_at);
}

TEST(GrammarBudget, StateMemoryIsBounded) {
  // A budget whose work never runs out: the states' memory stops it instead.
  GrammarBudget b;
  b.max_step_work = UINT64_MAX / 2;
  b.max_state_bytes = 1 << 20;
  EXPECT_GE(run_until_budget(compile_gbnf(kAmbiguous), b, 400).failed_at, 0);
}

TEST(GrammarBudget, PlainGrammarsStayFarBelowIt) {
  // JSON and a long repetition run for hundreds of tokens on a hundredth of the default budget.
  GrammarBudget tight;
  tight.max_step_work /= 100;
  const char* kJsonish = R"(root ::= "{" ws pair ("," ws pair)* "}"
pair ::= "\"" [a-z]+ "\"" ws ":" ws value
value ::= "\"" [a-z ]* "\"" | [0-9]+ | "[" ws (value ("," ws value)*)? "]"
ws ::= [ ]?)";
  for (const char* g : {kJsonish, "root ::= ([a-c]{1000}){25}"}) {
    const BudgetRun r = run_until_budget(compile_gbnf(g), tight, 300);
    EXPECT_EQ(r.failed_at, -1) << g;
    std::printf("[measured] at most %llu work units per step\n",
                static_cast<unsigned long long>(r.most_work));
  }
}

TEST(GrammarBudget, AStartOverBudgetThrowsFromTheConstructor) {
  GrammarBudget none;
  none.max_step_work = 1;
  const Vocab& v = tiny_vocab();
  EXPECT_THROW(TokenConstraint(std::make_shared<const Grammar>(compile_gbnf(kAmbiguous)),
                               std::make_shared<const TokenTrie>(v), {v.eos()}, none),
               GrammarBudgetExceeded);
}

}  // namespace
}  // namespace tzero
