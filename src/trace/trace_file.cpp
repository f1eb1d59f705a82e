#include "trace/trace_file.h"

#include <cerrno>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "base/mapped_file.h"

namespace tzero {

namespace {
constexpr char kMagic[8] = {'T', 'Z', 'T', 'R', 'A', 'C', 'E', '1'};

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

std::string TraceRecord::full_name() const {
  return layer < 0 ? name : "blk." + std::to_string(layer) + "." + name;
}

std::array<uint8_t, 16> hash_floats(const float* data, size_t n) {
  const XXH128_hash_t h = XXH3_128bits(data, n * sizeof(float));
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  std::array<uint8_t, 16> out;
  std::memcpy(out.data(), c.digest, 16);
  return out;
}

TraceWriter::TraceWriter(const std::string& path, const std::string& json) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw Error(path + ": cannot create trace: " + std::strerror(errno));
  std::string head(kMagic, 8);
  put<uint32_t>(head, uint32_t(json.size()));
  head += json;
  std::fwrite(head.data(), 1, head.size(), f_);
}

TraceWriter::~TraceWriter() {
  if (f_) std::fclose(f_);
}

void TraceWriter::write(uint32_t pos, int32_t layer, const std::string& name, const float* data,
                        uint32_t n, bool with_values) {
  std::string rec;
  put<uint8_t>(rec, with_values ? 2 : 1);
  put<uint32_t>(rec, pos);
  put<int32_t>(rec, layer);
  put<uint16_t>(rec, uint16_t(name.size()));
  rec += name;
  put<uint32_t>(rec, n);
  const auto h = hash_floats(data, n);
  rec.append(reinterpret_cast<const char*>(h.data()), 16);
  if (with_values) rec.append(reinterpret_cast<const char*>(data), size_t(n) * sizeof(float));
  if (std::fwrite(rec.data(), 1, rec.size(), f_) != rec.size())
    throw Error(path_ + ": trace write failed: " + std::strerror(errno));
}

void TraceWriter::flush() {
  std::fflush(f_);
}

TraceFile read_trace(const std::string& path) {
  MappedFile m(path);
  TraceFile t;
  t.path = path;
  const uint8_t* p = m.data();
  size_t left = m.size();
  if (left < 12 || std::memcmp(p, kMagic, 8) != 0)
    throw Error(path + ": not a tzero trace (bad magic)");
  uint32_t json_len;
  std::memcpy(&json_len, p + 8, 4);
  if (json_len > left - 12) throw Error(path + ": truncated trace header");
  t.metadata.assign(reinterpret_cast<const char*>(p + 12), json_len);
  p += 12 + json_len;
  left -= 12 + json_len;
  while (left > 0) {
    TraceRecord r;
    const size_t fixed = 1 + 4 + 4 + 2;
    if (left < fixed) break;
    const uint8_t kind = p[0];
    if (kind != 1 && kind != 2) throw Error(path + ": corrupt trace record");
    std::memcpy(&r.pos, p + 1, 4);
    std::memcpy(&r.layer, p + 5, 4);
    uint16_t name_len;
    std::memcpy(&name_len, p + 9, 2);
    if (left < fixed + name_len + 4 + 16) break;
    r.name.assign(reinterpret_cast<const char*>(p + fixed), name_len);
    std::memcpy(&r.n, p + fixed + name_len, 4);
    std::memcpy(r.hash.data(), p + fixed + name_len + 4, 16);
    size_t size = fixed + name_len + 4 + 16;
    if (kind == 2) {
      const size_t bytes = size_t(r.n) * sizeof(float);
      if (left - size < bytes) break;
      r.values.resize(r.n);
      if (bytes > 0) std::memcpy(r.values.data(), p + size, bytes);
      size += bytes;
    }
    t.records.push_back(std::move(r));
    p += size;
    left -= size;
  }
  t.truncated = left > 0;
  return t;
}

}  // namespace tzero
