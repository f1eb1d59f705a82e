// The decode loop of one sequence on its own KV cache (`tzero run`, `tzero chat`, the Python
// package's solo runs): from the row the next token comes from to DecodeStep's stop, by one-token
// passes, or with a drafter by passes that verify drafts (runtime/speculative.h). Either way
// every row goes through DecodeStep in order: the same tokens, text and digest.
#pragma once

#include <functional>
#include <vector>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "runtime/decode_step.h"
#include "runtime/speculative.h"

namespace tzero {

struct DecodeLoop {
  Forward& fwd;
  KvCache& kv;
  DecodeStep& decode;
  Drafter* drafter = nullptr;  // null: plain decoding
  SpeculativeOptions speculative;
  // Called with each row before DecodeStep samples from it (it is `row`'s storage), and with
  // each step's result after.
  std::function<void(const std::vector<float>& row)> on_row = nullptr;
  std::function<void(const StepResult& step)> on_step = nullptr;
  std::function<bool()> interrupted = nullptr;  // checked before each pass
};

struct DecodeLoopEnd {
  int pos = 0;             // positions 0..pos-1 of the cache hold decode.tokens()[0..pos)
  bool cancelled = false;  // interrupted() said so
  SpeculativeCounts counts;
};

// row: (n_vocab) the logits the next token comes from; the cache holds positions 0..pos-1.
// Runs until DecodeStep stops or interrupted() (then the last sampled token is not fed).
DecodeLoopEnd run_decode_loop(DecodeLoop& loop, std::vector<float>& row, int pos);

}  // namespace tzero
