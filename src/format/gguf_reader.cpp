#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "base/excerpt.h"
#include "format/gguf.h"

namespace tzero {

namespace {

constexpr uint64_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;
// The most elements reserved ahead of parsing them: past this, vectors grow with the elements
// actually read, so memory follows the bytes present rather than the counts claimed.
constexpr uint64_t kMaxReserve = 4096;

// Text from the file in a message: quoted, cut to 200 bytes, control bytes escaped.
std::string quoted(std::string_view s) {
  return "'" + excerpt(s) + "'";
}

}  // namespace

size_t gguf_value_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
      return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
      return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
      return 8;
    default:
      return 0;  // STRING, ARRAY: variable
  }
}

namespace {

bool known_value_type(uint32_t t) {
  return t <= uint32_t(GgufValueType::F64);
}

// A bounds-checked cursor over the file bytes.
class Cursor {
 public:
  Cursor(const GgufFile& file, const uint8_t* data, size_t size)
      : file_(file), data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      file_.fail(std::string("truncated: ") + what + " at byte " + std::to_string(pos_) +
                 " needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                 " left");
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // A string value: a view of its bytes, which must lie in the file (so it is at most the
  // file's size; nothing is copied).
  std::string_view read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    return take_chars(len, what);
  }
  // A metadata key or tensor name: as read_string, and refused when longer than
  // kGgufMaxNameBytes, before the caller copies it.
  std::string_view read_name(const char* what) {
    const size_t at = pos_;
    const uint64_t len = read<uint64_t>(what);
    need(len, what);
    if (len > kGgufMaxNameBytes)
      file_.fail(std::string(what) + " at byte " + std::to_string(at) + " is " +
                 std::to_string(len) + " bytes long (the limit is " +
                 std::to_string(kGgufMaxNameBytes) + ")");
    return take_chars(len, what);
  }
  const uint8_t* take(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* p = data_ + pos_;
    pos_ += size_t(n);
    return p;
  }
  std::string_view take_chars(uint64_t n, const char* what) {
    return {reinterpret_cast<const char*>(take(n, what)), size_t(n)};
  }

 private:
  const GgufFile& file_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

GgufValue read_scalar(Cursor& c, GgufValueType t) {
  GgufValue v;
  v.type = t;
  switch (t) {
    case GgufValueType::U8:
      v.u = c.read<uint8_t>("u8 value");
      break;
    case GgufValueType::I8:
      v.i = c.read<int8_t>("i8 value");
      break;
    case GgufValueType::U16:
      v.u = c.read<uint16_t>("u16 value");
      break;
    case GgufValueType::I16:
      v.i = c.read<int16_t>("i16 value");
      break;
    case GgufValueType::U32:
      v.u = c.read<uint32_t>("u32 value");
      break;
    case GgufValueType::I32:
      v.i = c.read<int32_t>("i32 value");
      break;
    case GgufValueType::U64:
      v.u = c.read<uint64_t>("u64 value");
      break;
    case GgufValueType::I64:
      v.i = c.read<int64_t>("i64 value");
      break;
    case GgufValueType::F32:
      v.f = c.read<float>("f32 value");
      break;
    case GgufValueType::F64:
      v.f = c.read<double>("f64 value");
      break;
    case GgufValueType::BOOL:
      v.i = c.read<uint8_t>("bool value") != 0;
      break;
    case GgufValueType::STRING:
      v.str = c.read_string("string value");
      break;
    default:
      break;
  }
  return v;
}

GgufValue read_value(const GgufFile& file, Cursor& c, GgufValueType t, const std::string& key,
                     int depth) {
  if (t != GgufValueType::ARRAY) return read_scalar(c, t);
  if (depth >= kMaxArrayDepth) file.fail("metadata " + quoted(key) + ": arrays nested too deep");
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  uint32_t et = c.read<uint32_t>("array element type");
  if (!known_value_type(et))
    file.fail("metadata " + quoted(key) + ": unknown array element type " + std::to_string(et));
  v.elem_type = GgufValueType(et);
  v.count = c.read<uint64_t>("array length");
  size_t es = gguf_value_size(v.elem_type);
  if (es > 0) {
    if (v.count > c.remaining() / es)
      file.fail("metadata " + quoted(key) + ": array of " + std::to_string(v.count) +
                " elements does not fit in the file");
    v.elems = c.take(v.count * es, "array data");
  } else if (v.elem_type == GgufValueType::STRING) {
    // Each string takes at least its 8-byte length: bound the count before reserving.
    if (v.count > c.remaining() / 8)
      file.fail("metadata " + quoted(key) + ": array of " + std::to_string(v.count) +
                " strings does not fit in the file");
    v.strings.reserve(size_t(std::min(v.count, kMaxReserve)));
    for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.read_string("array string"));
  } else {  // nested arrays: validated and skipped
    if (v.count > c.remaining() / 12)
      file.fail("metadata " + quoted(key) + ": nested array count does not fit in the file");
    for (uint64_t k = 0; k < v.count; ++k) read_value(file, c, v.elem_type, key, depth + 1);
  }
  return v;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return known_value_type(uint32_t(t)) ? names[uint32_t(t)] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::U16:
    case GgufValueType::I16:
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::U64:
    case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

GgufFile::GgufFile(const std::string& path, MappedFile::Load load)
    : map_(std::make_unique<MappedFile>(path, load)) {
  name_ = path;
  data_ = map_->data();
  size_ = map_->size();
  parse();
}

GgufFile::GgufFile(const uint8_t* data, size_t size, const std::string& name)
    : name_(name), data_(data), size_(size) {
  parse();
}

void GgufFile::fail(const std::string& what) const {
  // Callers quote keys, names and values through excerpt(); this is the safety net that keeps
  // any message one short line: control bytes escaped, at most kGgufMaxMessageBytes.
  throw Error(name_ + ": " + excerpt(what, kGgufMaxMessageBytes));
}

void GgufFile::parse() {
  Cursor c(*this, data_, size_);
  if (size_ < 4 || std::memcmp(data_, "GGUF", 4) != 0) fail("not a GGUF file (bad magic)");
  c.take(4, "magic");
  version_ = c.read<uint32_t>("version");
  if (version_ == 1) fail("GGUF version 1 is not supported (only 2 and 3)");
  if (version_ != 2 && version_ != 3)
    fail("unsupported GGUF version " + std::to_string(version_) + " (only 2 and 3)");
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // A key/value pair takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
  // least 8 + 4 + 8 + 4 + 8. Reject counts the file cannot hold before reserving anything.
  if (n_kv > c.remaining() / 13)
    fail("metadata count " + std::to_string(n_kv) + " does not fit in the file");
  if (n_tensors > c.remaining() / 32)
    fail("tensor count " + std::to_string(n_tensors) + " does not fit in the file");

  kv_.reserve(size_t(std::min(n_kv, kMaxReserve)));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key(c.read_name("metadata key"));
    uint32_t t = c.read<uint32_t>("metadata value type");
    if (!known_value_type(t))
      fail("metadata " + quoted(key) + ": unknown value type " + std::to_string(t));
    GgufValue v = read_value(*this, c, GgufValueType(t), key, 0);
    if (kv_index_.count(key)) fail("duplicate metadata key " + quoted(key));
    kv_index_[key] = kv_.size();
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (!a->is_integer()) fail("general.alignment must be an integer");
    // u8, u16, u32 and u64 keep their value in `u`; the signed types in `i`.
    const bool is_unsigned = a->type == GgufValueType::U8 || a->type == GgufValueType::U16 ||
                             a->type == GgufValueType::U32 || a->type == GgufValueType::U64;
    uint64_t al = is_unsigned ? a->u : uint64_t(a->i);
    // The GGUF spec asks for a multiple of 8; below that, float tensors could be misaligned.
    if (al < 8 || (al & (al - 1)) != 0 || al > (1u << 20))
      fail("general.alignment " + std::to_string(al) + " is not a power of two from 8 to 1 MiB");
    alignment_ = uint32_t(al);
  }

  tensors_.reserve(size_t(std::min(n_tensors, kMaxReserve)));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo ti;
    ti.name = std::string(c.read_name("tensor name"));
    const std::string where = "tensor " + quoted(ti.name);
    uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      fail(where + ": " + std::to_string(n_dims) + " dimensions (must be 1 to 4)");
    ti.ne.reserve(n_dims);
    uint64_t n_elem = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = c.read<uint64_t>("tensor dimension");
      if (ne == 0 || ne > (uint64_t(1) << 40))
        fail(where + ": dimension " + std::to_string(d) + " is " + std::to_string(ne));
      if (n_elem > (uint64_t(1) << 50) / ne) fail(where + ": too many elements");
      n_elem *= ne;
      ti.ne.push_back(int64_t(ne));
    }
    uint32_t type_id = c.read<uint32_t>("tensor type");
    auto tr = tensor_type_traits(type_id);
    if (!tr) fail(where + ": unknown tensor type " + std::to_string(type_id));
    ti.type = TensorType(type_id);
    if (uint64_t(ti.ne[0]) % tr->block_size != 0)
      fail(where + ": row length " + std::to_string(ti.ne[0]) + " is not a multiple of the " +
           tr->name + " block size " + std::to_string(tr->block_size));
    ti.n_bytes = size_t(n_elem / tr->block_size * tr->type_size);
    ti.offset = c.read<uint64_t>("tensor offset");
    if (ti.offset % alignment_ != 0)
      fail(where + ": offset " + std::to_string(ti.offset) + " is not aligned to " +
           std::to_string(alignment_));
    if (tensor_index_.count(ti.name)) fail("duplicate tensor name " + quoted(ti.name));
    tensor_index_[ti.name] = tensors_.size();
    tensors_.push_back(std::move(ti));
  }

  // The data section starts at the next multiple of the alignment.
  size_t pos = c.pos();
  data_offset_ = (pos + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_offset_ > size_) fail("truncated: no tensor data section");
  for (auto& ti : tensors_) {
    const size_t avail = size_ - data_offset_;
    if (ti.offset > avail || ti.n_bytes > avail - ti.offset)
      fail("tensor " + quoted(ti.name) + ": data [" + std::to_string(ti.offset) + ", +" +
           std::to_string(ti.n_bytes) + ") lies outside the file (data section has " +
           std::to_string(avail) + " bytes)");
    ti.data = data_ + data_offset_ + ti.offset;
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::pair<size_t, size_t> GgufFile::owned_part(const GgufTensorInfo& t) const {
  const auto it = parts_.find(t.name);
  return it == parts_.end() ? std::pair<size_t, size_t>{0, t.n_bytes} : it->second;
}

uint8_t* GgufFile::writable_data(const GgufTensorInfo& t) {
  if (owned_ && t.data >= owned_.data() && t.data < owned_.data() + owned_.size())
    return const_cast<uint8_t*>(t.data);                          // an own_tensors copy
  if (parts_.count(t.name)) return const_cast<uint8_t*>(t.data);  // a copy of a part
  if (!map_ || map_->mapped()) return nullptr;
  // The bytes are in map_'s private buffer (read(2) into memory this object owns).
  return const_cast<uint8_t*>(t.data);
}

size_t GgufFile::own_tensors(const std::function<bool(const GgufTensorInfo&)>& keep,
                             const TensorPart& part) {
  if (!map_ || !map_->mapped() || owned_ || !partly_.empty()) return 0;  // private, or done
  size_t copied = 0;
  if (part)
    for (GgufTensorInfo& t : tensors_) {
      if (t.n_bytes == 0 || keep(t)) continue;
      const auto [lo, hi] = part(t);
      if (lo >= hi) continue;
      check(hi <= t.n_bytes, "internal: a part past its tensor");
      HugePageBuffer buf(t.n_bytes, true);
      if (!buf)
        fail("cannot map " + std::to_string(t.n_bytes >> 20) + " MiB for " + quoted(t.name));
      std::memcpy(buf.data() + lo, t.data + lo, hi - lo);
      release_file_bytes(size_t(t.data + lo - data_), hi - lo);
      t.data = buf.data();
      partly_.push_back(std::move(buf));
      parts_[t.name] = {lo, hi};
      copied += hi - lo;
    }
  constexpr size_t kAlign = 64;
  size_t total = 0;
  for (const GgufTensorInfo& t : tensors_)
    if (t.n_bytes > 0 && keep(t)) total += (t.n_bytes + kAlign - 1) / kAlign * kAlign;
  if (total == 0) return copied;
  HugePageBuffer buf(total);
  if (!buf) fail("cannot allocate " + std::to_string(total >> 20) + " MiB for its tensors");
  size_t at = 0;
  for (GgufTensorInfo& t : tensors_) {
    if (t.n_bytes == 0 || !keep(t)) continue;
    std::memcpy(buf.data() + at, t.data, t.n_bytes);
    release_file_bytes(size_t(t.data - data_), t.n_bytes);  // (the copy is what stays)
    t.data = buf.data() + at;
    at += (t.n_bytes + kAlign - 1) / kAlign * kAlign;
  }
  owned_ = std::move(buf);
  return total + copied;
}

void GgufFile::release_file_bytes(size_t offset, size_t n) const {
  if (map_ && offset <= size_ && n <= size_ - offset) map_->release(data_ + offset, n);
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufValueType::STRING) fail("metadata " + quoted(key) + " must be a string");
  return std::string(v->str);
}

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (!v->is_integer()) fail("metadata " + quoted(key) + " must be an integer");
  switch (v->type) {
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
      return int64_t(v->u);
    case GgufValueType::U64:
      if (v->u > uint64_t(std::numeric_limits<int64_t>::max()))
        fail("metadata " + quoted(key) + " is out of range");
      return int64_t(v->u);
    default:
      return v->i;
  }
}

int64_t GgufFile::require_int(const std::string& key) const {
  if (!find(key)) fail("missing metadata " + quoted(key));
  return get_int(key, 0);
}

double GgufFile::get_float(const std::string& key, double fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return double(get_int(key, 0));
  fail("metadata " + quoted(key) + " must be a number");
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufValueType::BOOL) fail("metadata " + quoted(key) + " must be a bool");
  return v->i != 0;
}

const std::vector<std::string_view>& GgufFile::get_string_array(const std::string& key) const {
  static const std::vector<std::string_view> empty;
  const GgufValue* v = find(key);
  if (!v) return empty;
  if (v->type != GgufValueType::ARRAY || v->elem_type != GgufValueType::STRING)
    fail("metadata " + quoted(key) + " must be an array of strings");
  return v->strings;
}

std::vector<float> GgufFile::get_f32_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY || v->elem_type != GgufValueType::F32)
    fail("metadata " + quoted(key) + " must be an array of f32");
  std::vector<float> out(size_t(v->count));
  if (v->count) std::memcpy(out.data(), v->elems, out.size() * 4);
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY) fail("metadata " + quoted(key) + " must be an array");
  GgufValue probe;
  probe.type = v->elem_type;
  if (!probe.is_integer()) fail("metadata " + quoted(key) + " must be an array of integers");
  const size_t es = gguf_value_size(v->elem_type);
  std::vector<int64_t> out(size_t(v->count));
  for (size_t k = 0; k < out.size(); ++k) {
    const uint8_t* p = v->elems + k * es;
    switch (v->elem_type) {
      case GgufValueType::U8:
        out[k] = *p;
        break;
      case GgufValueType::I8:
        out[k] = int8_t(*p);
        break;
      case GgufValueType::U16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        out[k] = x;
        break;
      }
      case GgufValueType::I16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        out[k] = x;
        break;
      }
      case GgufValueType::U32: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        out[k] = x;
        break;
      }
      case GgufValueType::I32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        out[k] = x;
        break;
      }
      default: {
        int64_t x;
        std::memcpy(&x, p, 8);
        out[k] = x;
        break;
      }
    }
  }
  return out;
}

std::string GgufValue::to_display(size_t max_items) const {
  switch (type) {
    case GgufValueType::STRING: {
      std::string s(str.substr(0, 80));
      for (char& ch : s)
        if (ch == '\n') ch = ' ';
      return "\"" + s + (str.size() > 80 ? "...\"" : "\"");
    }
    case GgufValueType::BOOL:
      return i ? "true" : "false";
    case GgufValueType::F32:
    case GgufValueType::F64: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", f);
      return buf;
    }
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
      return std::to_string(u);
    case GgufValueType::ARRAY: {
      std::string s =
          std::string("[") + gguf_value_type_name(elem_type) + " x " + std::to_string(count) + "]";
      if (elem_type == GgufValueType::STRING && !strings.empty()) {
        s += " ";
        for (size_t k = 0; k < strings.size() && k < max_items; ++k) {
          GgufValue e;
          e.type = GgufValueType::STRING;
          e.str = strings[k];
          s += (k ? ", " : "") + e.to_display();
        }
        if (strings.size() > max_items) s += ", ...";
      }
      return s;
    }
    default:
      return std::to_string(i);
  }
}

}  // namespace tzero
