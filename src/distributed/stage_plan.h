// Which layers each rank of a pipeline runs (docs/DISTRIBUTED.md): N contiguous ranges, rank 0
// first. Rank 0 also runs the embedding and the output head, so "bytes" counts the head's
// matrix on rank 0's side. The split never changes the bits (every cut gives the whole pass's:
// PipelineStages), only where the time goes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/weights.h"

namespace tzero::dist {

struct StagePlan {
  std::vector<int> first;  // (n_ranks + 1): rank r runs layers [first[r], first[r + 1])
  int n_ranks() const { return int(first.size()) - 1; }
  int begin(int rank) const { return first[size_t(rank)]; }
  int end(int rank) const { return first[size_t(rank) + 1]; }
  std::string describe() const;  // "rank 0: layers 0-10, rank 1: layers 11-21"
};

// The weight bytes of each layer's tensors ("blk.N.*"), and of the output head.
std::vector<size_t> layer_bytes(const Model& model);
size_t head_bytes(const Model& model);

// split: "bytes" (the ranges whose largest share of weight bytes is least, the head counted on
// rank 0), "layers" (equal layer counts, the first ranks one more), or the first layer of ranks
// 1..N-1 ("12,24,36"). Every rank gets at least one layer. Throws tzero::Error naming
// --pipeline-split for a bad spelling, and for more ranks than layers.
StagePlan plan_stages(const std::vector<size_t>& layer_bytes, size_t head_bytes, int n_ranks,
                      const std::string& split);

}  // namespace tzero::dist
