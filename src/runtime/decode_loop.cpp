#include "runtime/decode_loop.h"

#include <algorithm>

namespace tzero {

DecodeLoopEnd run_decode_loop(DecodeLoop& loop, std::vector<float>& row, int pos) {
  const int n_vocab = int(row.size());
  DecodeLoopEnd end;
  auto step_row = [&](const float* r) {
    if (r != row.data()) std::copy(r, r + n_vocab, row.begin());
    if (loop.on_row) loop.on_row(row);
    const StepResult step = loop.decode.step(row.data(), n_vocab);
    if (loop.on_step) loop.on_step(step);
    return step;
  };
  auto interrupted = [&] { return loop.interrupted && loop.interrupted(); };
  StepResult step = step_row(row.data());
  if (!loop.drafter) {
    for (; step.stop == StopReason::none; ++pos) {
      if (interrupted()) {
        end.cancelled = true;
        break;
      }
      loop.fwd.eval(&step.token, 1, pos, loop.kv, row.data());
      step = step_row(row.data());
    }
    end.pos = pos;
    return end;
  }
  // u = step.token: the last sampled token, to be fed at pos. A pass feeds it and its drafts
  // d_1..d_k and gives rows 0..k; row i is sampled from while the token sampled at row i - 1
  // was d_i.
  const SpeculativeOptions& so = loop.speculative;
  const int k_max = std::min(so.draft_max, loop.fwd.n_batch() - 1);
  std::vector<float> rows(size_t(k_max + 1) * size_t(n_vocab));  // (k + 1, n_vocab)
  std::vector<int32_t> fed;                                      // u, d_1..d_k
  while (step.stop == StopReason::none) {
    if (interrupted()) {
      end.cancelled = true;
      break;
    }
    // Drafts only where positions, the pass and the tokens still to generate leave room.
    const int room = std::min({k_max, loop.kv.n_ctx() - pos - 1, loop.decode.tokens_left() - 1});
    std::vector<int32_t> drafts;
    if (room >= std::max(so.draft_min, 1))
      drafts = loop.drafter->propose(loop.decode.tokens(), room);
    // A drafter's ids are the vocabulary's; anything else ends the drafts there.
    drafts.erase(std::find_if(drafts.begin(), drafts.end(),
                              [&](int32_t t) { return t < 0 || t >= n_vocab; }),
                 drafts.end());
    if (int(drafts.size()) > room || int(drafts.size()) < std::max(so.draft_min, 1)) drafts.clear();
    fed.assign(1, step.token);
    fed.insert(fed.end(), drafts.begin(), drafts.end());
    loop.fwd.eval_rows(fed.data(), int(fed.size()), pos, loop.kv, rows.data());
    ++end.counts.passes;
    end.counts.drafted += int(drafts.size());
    for (size_t i = 0; i < fed.size(); ++i) {
      step = step_row(&rows[i * size_t(n_vocab)]);
      if (step.stop != StopReason::none || i == drafts.size() || step.token != drafts[i]) {
        pos += int(i) + 1;
        break;
      }
      ++end.counts.accepted;
    }
  }
  end.pos = pos;
  return end;
}

}  // namespace tzero
