// The unit of work of one forward pass: tokens of one or more sequences (continuous batching),
// each with its position and the block table of its sequence's keys and values.
#pragma once

#include <cstdint>
#include <vector>

namespace tzero {

// Each token attends to the positions 0..pos of its own sequence, whose keys and values live in
// the store at the blocks of that sequence's table. Tokens of one sequence appear in increasing
// position order, and the store already holds their earlier positions.
struct ForwardBatch {
  std::vector<int32_t> tokens;         // (n)
  std::vector<int32_t> pos;            // (n) position of each token in its sequence
  std::vector<int32_t> seq;            // (n) index into tables
  std::vector<const int32_t*> tables;  // (n_seqs) block table of each sequence
  // (n_seqs) each sequence's recurrent state slot in the store (models with recurrent layers:
  // KvStore::n_state_slots; ignored by the others).
  std::vector<int32_t> state_slots;
  // Snapshots of recurrent states to take during the pass (the prefix cache of these models):
  // after sequence `seq`'s token at position `pos`, every recurrent layer's state (and its
  // position, pos + 1) is copied into state slot `slot`. Positions of the pass, one per slot.
  struct StateSave {
    int32_t seq, pos, slot;
  };
  std::vector<StateSave> state_saves;
  // Before the pass, slot `to` takes slot `from`'s whole recurrent state (a prefix-cache hit
  // restored: KvStore::copy_state), in this order. Part of the batch so that every pipeline
  // rank (docs/DISTRIBUTED.md) restores the states of its own layers.
  struct StateCopy {
    int32_t from, to;
  };
  std::vector<StateCopy> state_copies;
  std::vector<int32_t> logits_rows;  // token indices whose logits are wanted, in output order
  // Token indices whose final hidden state (after the output norm, before the head) is wanted
  // instead, in output order (embeddings). A token is in at most one of the two lists.
  std::vector<int32_t> hidden_rows;

  size_t size() const { return tokens.size(); }
  void clear() {
    tokens.clear(), pos.clear(), seq.clear(), tables.clear(), state_slots.clear();
    state_saves.clear();
    state_copies.clear();
    logits_rows.clear();
    hidden_rows.clear();
  }
  void add(int32_t token, int32_t position, int32_t seq_index, bool want_logits,
           bool want_hidden = false) {
    if (want_logits)
      logits_rows.push_back(int32_t(tokens.size()));
    else if (want_hidden)
      hidden_rows.push_back(int32_t(tokens.size()));
    tokens.push_back(token), pos.push_back(position), seq.push_back(seq_index);
  }
};

}  // namespace tzero
