#include "trace/recorder.h"

#include <fnmatch.h>

#include <sstream>

namespace tzero {

TraceRecorder::TraceRecorder(const std::string& path, const std::string& json_metadata,
                             const std::string& dump_patterns)
    : writer_(path, json_metadata) {
  std::stringstream ss(dump_patterns);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) patterns_.push_back(p);
}

bool TraceRecorder::dumped(const std::string& full_name) const {
  for (const auto& p : patterns_)
    if (fnmatch(p.c_str(), full_name.c_str(), 0) == 0) return true;
  return false;
}

TraceHook TraceRecorder::hook() {
  return [this](std::string_view name, int layer, const float* data, size_t n_tokens,
                size_t row_len, int pos0) {
    TraceRecord r;
    r.name = std::string(name);
    r.layer = layer;
    const bool values = !patterns_.empty() && dumped(r.full_name());
    for (size_t t = 0; t < n_tokens; ++t)
      writer_.write(uint32_t(pos0 + int(t)), layer, r.name, data + t * row_len, uint32_t(row_len),
                    values);
    if (name == "result_output") writer_.flush();  // the end of a forward pass
  };
}

}  // namespace tzero
