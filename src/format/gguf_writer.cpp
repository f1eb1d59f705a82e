#include "format/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace tzero {

namespace {
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}
void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
}  // namespace

void GgufWriter::begin_kv(const std::string& key, GgufValueType t) {
  put_string(kv_bytes_, key);
  put<uint32_t>(kv_bytes_, uint32_t(t));
  ++n_kv_;
}

void GgufWriter::add_u32(const std::string& key, uint32_t v) {
  begin_kv(key, GgufValueType::U32);
  put(kv_bytes_, v);
}
void GgufWriter::add_i32(const std::string& key, int32_t v) {
  begin_kv(key, GgufValueType::I32);
  put(kv_bytes_, v);
}
void GgufWriter::add_u64(const std::string& key, uint64_t v) {
  begin_kv(key, GgufValueType::U64);
  put(kv_bytes_, v);
}
void GgufWriter::add_f32(const std::string& key, float v) {
  begin_kv(key, GgufValueType::F32);
  put(kv_bytes_, v);
}
void GgufWriter::add_bool(const std::string& key, bool v) {
  begin_kv(key, GgufValueType::BOOL);
  put<uint8_t>(kv_bytes_, v ? 1 : 0);
}
void GgufWriter::add_string(const std::string& key, const std::string& v) {
  begin_kv(key, GgufValueType::STRING);
  put_string(kv_bytes_, v);
}
void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  begin_kv(key, GgufValueType::ARRAY);
  put<uint32_t>(kv_bytes_, uint32_t(GgufValueType::STRING));
  put<uint64_t>(kv_bytes_, v.size());
  for (const auto& s : v) put_string(kv_bytes_, s);
}
void GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& v) {
  begin_kv(key, GgufValueType::ARRAY);
  put<uint32_t>(kv_bytes_, uint32_t(GgufValueType::F32));
  put<uint64_t>(kv_bytes_, v.size());
  for (float x : v) put(kv_bytes_, x);
}
void GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  begin_kv(key, GgufValueType::ARRAY);
  put<uint32_t>(kv_bytes_, uint32_t(GgufValueType::I32));
  put<uint64_t>(kv_bytes_, v.size());
  for (int32_t x : v) put(kv_bytes_, x);
}

void GgufWriter::add_value(const std::string& key, const GgufValue& v) {
  begin_kv(key, v.type);
  switch (v.type) {
    case GgufValueType::U8:
      put<uint8_t>(kv_bytes_, uint8_t(v.u));
      break;
    case GgufValueType::I8:
      put<int8_t>(kv_bytes_, int8_t(v.i));
      break;
    case GgufValueType::U16:
      put<uint16_t>(kv_bytes_, uint16_t(v.u));
      break;
    case GgufValueType::I16:
      put<int16_t>(kv_bytes_, int16_t(v.i));
      break;
    case GgufValueType::U32:
      put<uint32_t>(kv_bytes_, uint32_t(v.u));
      break;
    case GgufValueType::I32:
      put<int32_t>(kv_bytes_, int32_t(v.i));
      break;
    case GgufValueType::U64:
      put<uint64_t>(kv_bytes_, v.u);
      break;
    case GgufValueType::I64:
      put<int64_t>(kv_bytes_, v.i);
      break;
    case GgufValueType::F32:
      put<float>(kv_bytes_, float(v.f));
      break;
    case GgufValueType::F64:
      put<double>(kv_bytes_, v.f);
      break;
    case GgufValueType::BOOL:
      put<uint8_t>(kv_bytes_, v.i ? 1 : 0);
      break;
    case GgufValueType::STRING:
      put_string(kv_bytes_, v.str);
      break;
    case GgufValueType::ARRAY: {
      put<uint32_t>(kv_bytes_, uint32_t(v.elem_type));
      if (v.elem_type == GgufValueType::ARRAY)
        throw Error("cannot copy nested array '" + key + "'");
      put<uint64_t>(kv_bytes_, v.count);
      if (v.elem_type == GgufValueType::STRING) {
        for (auto s : v.strings) put_string(kv_bytes_, s);
      } else {
        const size_t es = gguf_value_size(v.elem_type);
        kv_bytes_.insert(kv_bytes_.end(), v.elems, v.elems + v.count * es);
      }
      break;
    }
  }
}

void GgufWriter::add_tensor(const std::string& name, TensorType type,
                            const std::vector<int64_t>& ne, Filler fill) {
  check(!ne.empty() && ne.size() <= 4, "tensor '" + name + "': 1 to 4 dimensions");
  const auto& tr = traits(type);
  check(ne[0] % tr.block_size == 0, "tensor '" + name + "': row length " + std::to_string(ne[0]) +
                                        " is not a multiple of " + std::to_string(tr.block_size) +
                                        " (" + tr.name + ")");
  size_t n = 1;
  for (int64_t d : ne) n *= size_t(d);
  tensors_.push_back({name, type, ne, n / tr.block_size * tr.type_size, std::move(fill)});
}

void GgufWriter::add_tensor(const std::string& name, TensorType type,
                            const std::vector<int64_t>& ne, std::vector<uint8_t> bytes) {
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  add_tensor(name, type, ne, [shared, name](uint8_t* dst, size_t n) {
    check(shared->size() == n, "tensor '" + name + "': data size does not match its shape");
    std::memcpy(dst, shared->data(), n);
  });
}

void GgufWriter::write(const std::string& path, uint32_t alignment,
                       const Progress& progress) const {
  auto align_up = [alignment](size_t x) { return (x + alignment - 1) / alignment * alignment; };
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, n_kv_);
  head.insert(head.end(), kv_bytes_.begin(), kv_bytes_.end());
  size_t offset = 0;
  std::vector<size_t> offsets;
  for (const auto& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(head, uint64_t(d));
    put<uint32_t>(head, uint32_t(t.type));
    put<uint64_t>(head, offset);
    offsets.push_back(offset);
    offset = align_up(offset + t.n_bytes);
  }
  head.resize(align_up(head.size()), 0);

  const std::string tmp = path + ".tmp";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) throw Error(path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f.get()) == head.size();
  std::vector<uint8_t> buf;
  try {
    for (size_t k = 0; ok && k < tensors_.size(); ++k) {
      const auto& t = tensors_[k];
      buf.assign(align_up(t.n_bytes), 0);
      t.fill(buf.data(), t.n_bytes);
      const size_t n = k + 1 < tensors_.size() ? buf.size() : t.n_bytes;
      ok = std::fwrite(buf.data(), 1, n, f.get()) == n;
      if (progress) progress(offsets[k] + t.n_bytes, offset);
    }
  } catch (...) {  // a filler failed: leave no partial file behind
    f.reset();
    std::remove(tmp.c_str());
    throw;
  }
  ok = std::fflush(f.get()) == 0 && ok;
  f.reset();
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error(path + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename into place: " + std::strerror(errno));
  }
}

}  // namespace tzero
