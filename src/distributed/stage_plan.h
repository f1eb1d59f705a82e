// Which layers each rank of a pipeline runs (docs/DISTRIBUTED.md): N contiguous ranges, rank 0
// first. Rank 0 also runs the embedding and the output head, so "bytes" counts the head's
// matrix on rank 0's side. The split never changes the bits (every cut gives the whole pass's:
// PipelineStages), only where the time goes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/weights.h"

namespace tzero::dist {

struct StagePlan {
  std::vector<int> first;  // (n_ranks + 1): rank r runs layers [first[r], first[r + 1])
  // > 0: expert parallelism (--expert-parallel): the model's n_expert routed experts of every
  // MoE layer split over ranks 1..N-1 (experts()), each slot computed where its expert lives.
  int n_expert = 0;
  int n_ranks() const { return int(first.size()) - 1; }
  int begin(int rank) const { return first[size_t(rank)]; }
  int end(int rank) const { return first[size_t(rank) + 1]; }
  // The experts [first, second) rank `rank` holds of every MoE layer: contiguous ranges over
  // ranks 1..N-1, as equal as can be. Rank 0 holds none (its engine makes no MPI call while it
  // waits for work, so it could not answer), nor does any rank without expert parallelism.
  std::pair<int, int> experts(int rank) const;
  int expert_owner(int e) const;  // the rank holding expert e (expert parallelism)
  // "rank 0: layers 0-10, rank 1: layers 11-21" (and ", experts 0-63 on rank 1, ...").
  std::string describe() const;
};

// The layer of a tensor ("blk.N.*": N), or -1 for the others (embedding, head, norms).
int tensor_layer(const std::string& name);
// A routed expert's tensor (blk.N.ffn_{gate,up,down}_exps.{weight,bias}): expert e's part is
// the e-th of n_expert equal contiguous slabs. Shared experts (ffn_*_shexp) are not.
bool is_expert_tensor(const std::string& name);
// The weight bytes of each of the n_layer layers' tensors (without the routed experts':
// expert parallelism), and of the output head (output.weight, else the tied token_embd.weight).
std::vector<size_t> layer_bytes(const GgufFile& file, int n_layer, bool without_experts = false);
size_t head_bytes(const GgufFile& file);

// Rank `rank`'s part of a model (a mapped file) under `plan`: the tensors of its layers, and on
// rank 0 the embedding, head and every tensor outside the layers, read into private memory
// (GgufFile::own_tensors) and laid out for `layout_for` (Model); nothing else of the file is
// read. With expert parallelism a rank copies only its experts' slabs of every layer's routed
// expert tensors (GgufFile::own_tensors' parts: each such tensor keeps its size in a sparse
// mapping); rank 0 holds no expert, and they stay mapped and unread there.
// weights_xxh128: rank_xxh128 of the rank, from the bytes read (ranks 1..N-1, which rank 0
// checks; empty for rank 0's part).
struct StagePart {
  std::unique_ptr<Model> model;
  std::string weights_xxh128;
};
StagePart load_stage(std::unique_ptr<GgufFile> file, const StagePlan& plan, int rank,
                     const KernelSet* layout_for);
// XXH3-128 of the bytes rank `rank` (>= 1) computes with, in the order of the file's tensor
// table: its layers' tensors (layers_xxh128) and, with expert parallelism, its experts' slabs
// of every layer's expert tensors instead of its layers' whole expert tensors. Mapped pages are
// released as they are hashed.
std::string rank_xxh128(const GgufFile& file, const StagePlan& plan, int rank);
// XXH3-128 of the bytes of layers [begin, end)'s tensors, in the order of the file's tensor
// table, as the file has them: rank 0 checks each rank's against its own file (a file at the
// same path on another host with the same header but other weights). Mapped pages are released
// as they are hashed.
std::string layers_xxh128(const GgufFile& file, int begin, int end);
// Rank 0's check of ranks 1..N-1 (element r: rank_xxh128 of rank r; element 0 empty),
// made while the model file's hash is (Model::hash_file), so that the file is read once for
// both where its tensor table lists each rank's tensors in file order (a second read of those
// layers otherwise, or when the file's hash was already made).
std::vector<std::string> ranks_layers_xxh128(const Model& model, const StagePlan& plan);

// split: "bytes" (the ranges whose largest share of weight bytes is least, the head counted on
// rank 0), "layers" (equal layer counts, the first ranks one more), or the first layer of ranks
// 1..N-1 ("12,24,36"). Every rank gets at least one layer. Throws tzero::Error naming
// --pipeline-split for a bad spelling, and for more ranks than layers.
StagePlan plan_stages(const std::vector<size_t>& layer_bytes, size_t head_bytes, int n_ranks,
                      const std::string& split);

}  // namespace tzero::dist
