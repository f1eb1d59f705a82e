// The scheduler's rules for a pipeline's passes in flight (src/batch/scheduler.h; micro-batches,
// docs/DISTRIBUTED.md): with G groups a step takes at most its share of the sequences, so that
// they take turns; a sequence in flight is neither scheduled again nor preempted until its pass
// lands.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "batch/block_manager.h"
#include "batch/scheduler.h"
#include "batch/sequence.h"
#include "format/gguf.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace tzero {
namespace {

const Vocab& tiny_vocab() {
  struct Loaded {
    explicit Loaded(const std::string& path) : file(path), vocab(Vocab::from_gguf(file)) {}
    GgufFile file;
    Vocab vocab;
  };
  static const Loaded loaded(test::generated_model("tiny", "f32"));
  return loaded.vocab;
}

std::unique_ptr<Sequence> sequence(uint64_t id, int n_prompt) {
  RequestParams r;
  for (int i = 0; i < n_prompt; ++i) r.prompt_tokens.push_back(int32_t(3 + i));
  r.max_tokens = 8;
  return std::make_unique<Sequence>(id, r, nullptr, tiny_vocab(), 256);
}

std::vector<Sequence*> seqs_of(const std::vector<ScheduledSlice>& plan) {
  std::vector<Sequence*> out;
  for (const ScheduledSlice& sl : plan) out.push_back(sl.seq);
  return out;
}

// The engine's landing of a pass, as far as the scheduler sees it: the sequences leave the
// flight with every token but one computed (the next step decodes it).
void land(const std::vector<ScheduledSlice>& plan) {
  for (const ScheduledSlice& sl : plan) {
    sl.seq->in_flight = false;
    sl.seq->n_computed = int(sl.seq->tokens.size()) - 1;
  }
}

void launch(const std::vector<ScheduledSlice>& plan) {
  for (const ScheduledSlice& sl : plan) sl.seq->in_flight = true;
}

// Proves: with two groups, four sequences split two and two, and the groups alternate: a step
// never takes a sequence whose pass is out, and with every sequence out there is nothing to
// run. With one group (a single process) one step takes all four.
TEST(Scheduler, GroupsTakeTurnsAndASequenceInFlightIsLeftOut) {
  std::vector<std::unique_ptr<Sequence>> s;
  for (int i = 0; i < 4; ++i) s.push_back(sequence(uint64_t(i + 1), 3));
  BlockManager blocks(64, 4, true);
  Scheduler sched(blocks, 64, 4, 64);
  sched.set_groups(2);
  for (auto& q : s) sched.add(q.get());

  const std::vector<ScheduledSlice> a = sched.schedule();
  EXPECT_EQ(seqs_of(a), (std::vector<Sequence*>{s[0].get(), s[1].get()}));
  launch(a);
  const std::vector<ScheduledSlice> b = sched.schedule();
  EXPECT_EQ(seqs_of(b), (std::vector<Sequence*>{s[2].get(), s[3].get()}));
  launch(b);
  EXPECT_TRUE(sched.schedule().empty());  // every sequence is out
  land(a);
  const std::vector<ScheduledSlice> c = sched.schedule();
  EXPECT_EQ(seqs_of(c), (std::vector<Sequence*>{s[0].get(), s[1].get()}));
  for (const ScheduledSlice& sl : c) EXPECT_EQ(sl.n_tokens, 1);  // their decode tokens

  std::vector<std::unique_ptr<Sequence>> t;
  for (int i = 0; i < 4; ++i) t.push_back(sequence(uint64_t(i + 10), 3));
  BlockManager blocks1(64, 4, true);
  Scheduler one(blocks1, 64, 4, 64);
  for (auto& q : t) one.add(q.get());
  EXPECT_EQ(one.schedule().size(), 4u);
}

// Proves: a sequence in flight is never the victim of a preemption. The pool holds two blocks:
// A's second prefill chunk needs a third, and the only other running sequence, B, is in flight:
// A waits this step, keeping its block and its progress, and once B has landed A preempts it.
// Out of flight from the start, B is preempted at once.
TEST(Scheduler, ASequenceInFlightIsNeverPreempted) {
  for (const bool b_in_flight : {true, false}) {
    SCOPED_TRACE(b_in_flight ? "B in flight" : "B landed");
    auto a = sequence(1, 9), b = sequence(2, 3);
    BlockManager blocks(2, 4, false);
    Scheduler sched(blocks, 64, 2, 4);  // prefill chunks of 4 tokens
    sched.add(a.get());
    sched.add(b.get());
    const std::vector<ScheduledSlice> first = sched.schedule();
    ASSERT_EQ(seqs_of(first), (std::vector<Sequence*>{a.get(), b.get()}));
    a->n_computed = 4;  // A's first chunk landed
    b->in_flight = b_in_flight;
    if (b_in_flight) {
      EXPECT_TRUE(sched.schedule().empty());
      EXPECT_EQ(sched.preemptions(), 0u);
      EXPECT_EQ(a->n_computed, 4);
      EXPECT_EQ(a->table.size(), 1u);
      EXPECT_EQ(b->table.size(), 1u);
      b->in_flight = false;  // B lands
    }
    const std::vector<ScheduledSlice> next = sched.schedule();
    ASSERT_EQ(seqs_of(next), (std::vector<Sequence*>{a.get()}));
    EXPECT_EQ(sched.preemptions(), 1u);
    EXPECT_EQ(a->n_preempted, 0);  // A goes on with B's block
    EXPECT_EQ(a->n_computed, 4);
    EXPECT_EQ(b->n_preempted, 1);
    EXPECT_TRUE(b->table.empty());
  }
}

}  // namespace
}  // namespace tzero
