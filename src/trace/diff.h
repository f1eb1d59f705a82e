// Compares two traces: the first (position, layer, op) whose hash differs, what differs after
// it per layer, and numeric deviations where both traces hold the values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_file.h"

namespace tzero {

struct TraceDiffRow {  // one layer (-1: outside the layers) after the first divergence
  int layer;
  size_t differing = 0, compared = 0;
  std::vector<std::string> ops;  // ops that differ somewhere in this layer
};

struct ValueDeviation {  // over one record both traces dumped
  std::string name;
  uint32_t pos = 0;
  double max_abs = 0, max_rel = 0;  // over the elements that differ and are not NaN
  uint64_t max_ulp = 0;
  size_t nan = 0;  // elements that differ where either side is NaN
};

struct TraceDiff {
  size_t shared = 0, only_a = 0, only_b = 0;  // records matched by (pos, layer, op)
  size_t differing = 0;
  bool truncated_a = false, truncated_b = false;  // a record cut short at the end of the file
  // The records both traces hold agree.
  bool shared_identical() const { return differing == 0; }
  // Identical: both traces hold the same records, whole, with the same hashes (and hold some).
  bool identical() const {
    return shared > 0 && differing == 0 && only_a == 0 && only_b == 0 && !truncated_a &&
           !truncated_b;
  }
  // Metadata fields (model, fingerprint, prompt) whose values differ between the traces.
  std::vector<std::string> metadata_differs;
  // The first divergence in forward order (position, then the pass's op order).
  bool has_first = false;
  uint32_t first_pos = 0;
  int first_layer = -1;
  std::string first_op;
  std::vector<TraceDiffRow> layers;
  std::vector<ValueDeviation> deviations;  // differing records with values in both
  // Logits argmax where both traces dumped result_output at the same position.
  bool logits_compared = false;
  bool argmax_changed = false;
  uint32_t argmax_pos = 0;
};

TraceDiff diff_traces(const TraceFile& a, const TraceFile& b);

// The text with every byte outside printable ASCII written as \xNN (op names and metadata are
// the file's: a hostile trace must not reach the terminal's escape sequences).
std::string terminal_safe(std::string_view text);

// What a traced op is, in words ("ffn_moe_out" -> "the expert combine"), for llama.cpp's graph
// names as the architectures trace them; "" for a name it does not know.
std::string_view op_description(std::string_view name);

// Distance in units in the last place between two floats (0 for equal bits).
uint64_t ulp_distance(float a, float b);

}  // namespace tzero
