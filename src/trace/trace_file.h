// The trace file: per evaluated position and named tensor, its shape and an XXH3-128 hash of
// its float32 bytes, optionally the values. Written as a stream, flushed after every forward
// pass, so a crash leaves a readable prefix.
//
// Format (version 1, little-endian):
//   header: "TZTRACE1" (8 bytes), u32 json_length, json_length bytes of JSON metadata
//           (model, fingerprint, configuration).
//   records until the end of the file, each:
//     u8 kind (1 = hash only, 2 = hash and values), u32 pos, i32 layer (-1: outside layers),
//     u16 name_length, name bytes (the op, e.g. "attn_norm"), u32 n (floats in the row),
//     16 bytes XXH3-128 (high 64 bits first, big-endian hex order), then for kind 2 n floats.
//   A record cut short at the end of the file is ignored (the prefix before it is valid).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tzero {

struct TraceRecord {
  uint32_t pos = 0;
  int32_t layer = -1;
  std::string name;  // op name without the layer prefix
  uint32_t n = 0;    // floats in the row
  std::array<uint8_t, 16> hash{};
  std::vector<float> values;      // empty unless dumped
  std::string full_name() const;  // "blk.3.attn_norm" or "result_output"
};

class TraceWriter {
 public:
  TraceWriter(const std::string& path, const std::string& json_metadata);  // throws tzero::Error
  ~TraceWriter();
  void write(uint32_t pos, int32_t layer, const std::string& name, const float* data, uint32_t n,
             bool with_values);
  void flush();

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

struct TraceFile {
  std::string path;
  std::string metadata;  // JSON text
  std::vector<TraceRecord> records;
  bool truncated = false;  // the last record was cut short
};

// Reads a whole trace. Throws tzero::Error naming the file when it is not a trace.
TraceFile read_trace(const std::string& path);

std::array<uint8_t, 16> hash_floats(const float* data, size_t n);

}  // namespace tzero
