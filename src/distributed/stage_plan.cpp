#include "distributed/stage_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "base/error.h"
#include "base/hash.h"

namespace tzero::dist {

std::string StagePlan::describe() const {
  std::string out;
  for (int r = 0; r < n_ranks(); ++r)
    out += (r ? ", rank " : "rank ") + std::to_string(r) +
           (end(r) - begin(r) == 1
                ? ": layer " + std::to_string(begin(r))
                : ": layers " + std::to_string(begin(r)) + "-" + std::to_string(end(r) - 1));
  if (n_expert > 0)
    for (int r = 1; r < n_ranks(); ++r) {
      const auto [e0, e1] = experts(r);
      out += (r == 1 ? "; experts " : ", experts ") + std::to_string(e0) +
             (e1 - e0 == 1 ? "" : "-" + std::to_string(e1 - 1)) + " on rank " + std::to_string(r);
    }
  return out;
}

std::pair<int, int> StagePlan::experts(int rank) const {
  const int n = n_ranks() - 1;  // the ranks holding experts: 1..N-1
  if (n_expert <= 0 || rank < 1 || n < 1) return {0, 0};
  return {int(int64_t(n_expert) * (rank - 1) / n), int(int64_t(n_expert) * rank / n)};
}

int StagePlan::expert_owner(int e) const {
  for (int r = 1; r < n_ranks(); ++r)
    if (e < experts(r).second) return r;
  throw Error("internal: expert " + std::to_string(e) + " has no rank");
}

int tensor_layer(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int il = 0;
  size_t i = 4;
  for (; i < name.size() && i < 12 && name[i] >= '0' && name[i] <= '9'; ++i)
    il = il * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? il : -1;
}

bool is_expert_tensor(const std::string& name) {
  if (tensor_layer(name) < 0) return false;
  for (const char* w : {"ffn_gate_exps.", "ffn_up_exps.", "ffn_down_exps."})
    if (name.find(w) != std::string::npos) return true;
  return false;
}

std::vector<size_t> layer_bytes(const GgufFile& file, int n_layer, bool without_experts) {
  std::vector<size_t> bytes(size_t(std::max(n_layer, 0)), 0);
  for (const GgufTensorInfo& t : file.tensors()) {
    const int il = tensor_layer(t.name);
    if (il >= 0 && il < n_layer && !(without_experts && is_expert_tensor(t.name)))
      bytes[size_t(il)] += t.n_bytes;
  }
  return bytes;
}

namespace {

// The bytes rank `rank` computes with (rank_xxh128), in the order of the file's tensor table:
// [from, to) of each tensor's data.
struct Bytes {
  const uint8_t *from, *to;
};
std::vector<Bytes> rank_bytes(const GgufFile& file, const StagePlan& plan, int rank) {
  std::vector<Bytes> out;
  const auto [e0, e1] = plan.experts(rank);
  for (const GgufTensorInfo& t : file.tensors()) {
    const int il = tensor_layer(t.name);
    if (il < 0 || t.n_bytes == 0) continue;
    if (plan.n_expert > 0 && is_expert_tensor(t.name)) {
      const size_t slab = t.n_bytes / size_t(plan.n_expert);
      if (e1 > e0) out.push_back({t.data + size_t(e0) * slab, t.data + size_t(e1) * slab});
    } else if (il >= plan.begin(rank) && il < plan.end(rank)) {
      out.push_back({t.data, t.data + t.n_bytes});
    }
  }
  return out;
}

}  // namespace

std::string rank_xxh128(const GgufFile& file, const StagePlan& plan, int rank) {
  Hasher128 h;
  const uint8_t* base = file.file_data();
  for (const Bytes& b : rank_bytes(file, plan, rank)) {
    h.update(b.from, size_t(b.to - b.from));
    if (b.from >= base && b.from < base + file.file_size())
      file.release_file_bytes(size_t(b.from - base), size_t(b.to - b.from));
  }
  return h.hex();
}

size_t head_bytes(const GgufFile& file) {
  const GgufTensorInfo* t = file.find_tensor("output.weight");
  if (!t) t = file.find_tensor("token_embd.weight");
  return t ? t->n_bytes : 0;
}

std::string layers_xxh128(const GgufFile& file, int begin, int end) {
  Hasher128 h;
  for (const GgufTensorInfo& t : file.tensors()) {
    const int il = tensor_layer(t.name);
    if (il < begin || il >= end || t.n_bytes == 0) continue;
    h.update(t.data, t.n_bytes);
    if (t.data >= file.file_data() && t.data < file.file_data() + file.file_size())
      file.release_file_bytes(size_t(t.data - file.file_data()), t.n_bytes);
  }
  return h.hex();
}

std::vector<std::string> ranks_layers_xxh128(const Model& model, const StagePlan& plan) {
  const GgufFile& file = model.gguf();
  const int n = plan.n_ranks();
  // The file's byte ranges of ranks 1..N-1's tensors, in file order.
  struct Range {
    size_t from, to;
    int rank;
  };
  std::vector<Range> ranges;
  bool in_order = true;  // each rank's bytes must come in file order
  const uint8_t* base = file.file_data();
  for (int rank = 1; rank < n; ++rank) {
    size_t next = 0;
    for (const Bytes& b : rank_bytes(file, plan, rank)) {
      const bool mapped = b.from >= base && b.from < base + file.file_size();
      const size_t from = mapped ? size_t(b.from - base) : 0;
      in_order = in_order && mapped && from >= next;
      next = from + size_t(b.to - b.from);
      ranges.push_back({from, next, rank});
    }
  }
  std::vector<std::string> out(static_cast<size_t>(n));
  if (in_order) {
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.from < b.from; });
    std::vector<Hasher128> h(static_cast<size_t>(n));
    size_t i = 0;  // the first range not wholly before the bytes seen
    const bool once = model.hash_file([&](size_t at, const uint8_t* p, size_t len) {
      while (i < ranges.size() && ranges[i].to <= at) ++i;
      for (size_t j = i; j < ranges.size() && ranges[j].from < at + len; ++j) {
        const size_t lo = std::max(ranges[j].from, at), hi = std::min(ranges[j].to, at + len);
        if (lo < hi) h[size_t(ranges[j].rank)].update(p + (lo - at), hi - lo);
      }
    });
    if (once) {
      for (int r = 1; r < n; ++r) out[size_t(r)] = h[size_t(r)].hex();
      return out;
    }
  }
  for (int r = 1; r < n; ++r) out[size_t(r)] = rank_xxh128(file, plan, r);
  return out;
}

StagePart load_stage(std::unique_ptr<GgufFile> file, const StagePlan& plan, int rank,
                     const KernelSet* layout_for) {
  const bool io = rank == 0;
  const auto [e0, e1] = plan.experts(rank);
  file->own_tensors(
      [&](const GgufTensorInfo& t) {
        const int il = tensor_layer(t.name);
        if (il < 0) return io;
        if (plan.n_expert > 0 && is_expert_tensor(t.name)) return false;  // (its slabs: below)
        return il >= plan.begin(rank) && il < plan.end(rank);
      },
      [&](const GgufTensorInfo& t) {  // this rank's experts' slabs of every layer
        if (plan.n_expert == 0 || !is_expert_tensor(t.name)) return std::pair<size_t, size_t>{};
        const size_t slab = t.n_bytes / size_t(plan.n_expert);
        return std::pair<size_t, size_t>{size_t(e0) * slab, size_t(e1) * slab};
      });
  StagePart part;
  if (!io)  // (the copies, before any repacking)
    part.weights_xxh128 = rank_xxh128(*file, plan, rank);
  part.model = std::make_unique<Model>(std::move(file), layout_for);
  return part;
}

namespace {

// The contiguous split of `w` into n parts whose largest sum is least (w[0] carries the head).
std::vector<int> balanced(const std::vector<size_t>& w, int n) {
  const int L = int(w.size());
  std::vector<size_t> prefix(size_t(L) + 1, 0);
  for (int i = 0; i < L; ++i) prefix[size_t(i) + 1] = prefix[size_t(i)] + w[size_t(i)];
  const size_t inf = std::numeric_limits<size_t>::max();
  // cost[k][i]: the least largest part when the first i layers make k parts; cut[k][i] its last
  // cut.
  std::vector<std::vector<size_t>> cost(size_t(n) + 1, std::vector<size_t>(size_t(L) + 1, inf));
  std::vector<std::vector<int>> cut(size_t(n) + 1, std::vector<int>(size_t(L) + 1, 0));
  cost[0][0] = 0;
  for (int k = 1; k <= n; ++k)
    for (int i = k; i <= L; ++i)
      for (int j = k - 1; j < i; ++j) {
        if (cost[size_t(k) - 1][size_t(j)] == inf) continue;
        const size_t c =
            std::max(cost[size_t(k) - 1][size_t(j)], prefix[size_t(i)] - prefix[size_t(j)]);
        if (c < cost[size_t(k)][size_t(i)]) {  // (strict: the earliest cut among equals)
          cost[size_t(k)][size_t(i)] = c;
          cut[size_t(k)][size_t(i)] = j;
        }
      }
  std::vector<int> first(size_t(n) + 1, L);
  for (int k = n, i = L; k >= 1; --k) {
    first[size_t(k) - 1] = cut[size_t(k)][size_t(i)];
    i = first[size_t(k) - 1];
  }
  return first;
}

}  // namespace

StagePlan plan_stages(const std::vector<size_t>& bytes, size_t head, int n_ranks,
                      const std::string& split) {
  const int L = int(bytes.size());
  check(n_ranks >= 1, "internal: a pipeline of no ranks");
  check(n_ranks <= L, std::to_string(n_ranks) + " ranks but the model has " + std::to_string(L) +
                          " layers: at most one rank per layer (start fewer with mpirun -np)");
  StagePlan plan;
  if (split == "bytes") {
    std::vector<size_t> w = bytes;
    if (!w.empty()) w[0] += head;
    plan.first = balanced(w, n_ranks);
  } else if (split == "layers") {
    plan.first.push_back(0);
    for (int r = 0; r < n_ranks; ++r)
      plan.first.push_back(plan.first.back() + L / n_ranks + (r < L % n_ranks ? 1 : 0));
  } else {
    plan.first.push_back(0);
    size_t at = 0;
    while (at <= split.size()) {
      const size_t comma = std::min(split.find(',', at), split.size());
      const std::string item = split.substr(at, comma - at);
      bool digits = !item.empty() && item.size() <= 6;
      for (const char c : item) digits = digits && c >= '0' && c <= '9';
      check(digits,
            "--pipeline-split wants bytes, layers or the first layer of ranks 1..N-1 "
            "(e.g. 12,24,36), not '" +
                split + "'");
      plan.first.push_back(std::stoi(item));
      at = comma + 1;
    }
    check(int(plan.first.size()) == n_ranks, "--pipeline-split " + split + " names " +
                                                 std::to_string(plan.first.size() - 1) +
                                                 " first layers but " + std::to_string(n_ranks) +
                                                 " ranks need " + std::to_string(n_ranks - 1));
    plan.first.push_back(L);
    for (size_t r = 1; r < plan.first.size(); ++r)
      check(plan.first[r] > plan.first[r - 1],
            "--pipeline-split " + split +
                ": each rank needs at least one layer, in order, within "
                "the model's " +
                std::to_string(L) + " layers");
  }
  return plan;
}

}  // namespace tzero::dist
