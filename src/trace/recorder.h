// Records a forward pass into a trace file through Forward's trace hook: one record per
// position and named tensor (a prefill chunk of n tokens gives n records per op, so traces of
// the same request cut into different chunks are identical).
#pragma once

#include <string>
#include <vector>

#include "model/forward.h"
#include "trace/trace_file.h"

namespace tzero {

class TraceRecorder {
 public:
  // dump_patterns: comma-separated globs over full names ("blk.*.ffn_out,result_output") whose
  // values are stored besides their hashes; "" stores hashes only.
  TraceRecorder(const std::string& path, const std::string& json_metadata,
                const std::string& dump_patterns);
  TraceHook hook();
  void flush() { writer_.flush(); }

 private:
  bool dumped(const std::string& full_name) const;
  TraceWriter writer_;
  std::vector<std::string> patterns_;
};

}  // namespace tzero
