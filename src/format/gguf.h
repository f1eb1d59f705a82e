// GGUF (versions 2 and 3) over a memory map: metadata and tensor infos, all validated.
//
// Format (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv key/value pairs
// (string key, u32 value type, value); n_tensors tensor infos (string name, u32 n_dims,
// u64 ne[n_dims], u32 type, u64 offset); padding to `general.alignment` (default 32); then the
// tensor data, each tensor at data_start + offset. A string is a u64 length and its bytes.
//
// Every count, length, offset, size, dimension and type is checked against the file before it
// is used. A damaged or hostile file throws tzero::Error("<path>: <what is wrong>"); nothing is
// read out of bounds and no allocation is sized by an unchecked count: what the parse keeps is
// a small multiple of the header bytes it has actually read, whatever the counts claim.
// A metadata key or tensor name is at most kGgufMaxNameBytes (refused before it is copied); a
// string value is a view into the file, so at most the file's size. Error messages quote keys,
// names and values through excerpt() (base/excerpt.h: 200 bytes, control bytes escaped) and the
// whole message is at most kGgufMaxMessageBytes plus the file's path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/huge_pages.h"
#include "base/mapped_file.h"
#include "format/tensor_type.h"

namespace tzero {

// The longest metadata key or tensor name the reader accepts (real files use well under 100).
inline constexpr uint64_t kGgufMaxNameBytes = 64 * 1024;
// The most bytes of GgufFile::fail()'s message after the path (a safety net: every quoted part
// is already cut to 200 bytes).
inline constexpr size_t kGgufMaxMessageBytes = 1024;

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);
// Bytes of one scalar of this type; 0 for STRING and ARRAY (variable size).
size_t gguf_value_size(GgufValueType t);

// One metadata value. Scalars are widened into `i`/`u`/`f`; strings and array elements are
// views into the mapped file (valid while the GgufFile lives).
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  int64_t i = 0;   // signed integer types and bool
  uint64_t u = 0;  // unsigned integer types
  double f = 0;    // F32, F64
  std::string_view str;
  // Arrays: element type, count, and for numeric elements their raw little-endian bytes.
  GgufValueType elem_type = GgufValueType::U8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  std::vector<std::string_view> strings;  // for arrays of strings

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
  std::string to_display(size_t max_items = 8) const;  // human-readable, for `tzero info`
};

struct GgufTensorInfo {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;  // ne[0] is the contiguous (row) dimension, as ggml orders them
  uint64_t offset = 0;      // relative to the data section
  size_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapped file
  int64_t n_elements() const;
};

class GgufFile {
 public:
  // Maps (or reads: base/mapped_file.h) and parses the file. Throws tzero::Error naming it.
  explicit GgufFile(const std::string& path, MappedFile::Load load = MappedFile::Load::Map);
  // Parses a buffer owned by the caller (fuzzing, tests). `name` prefixes error messages.
  GgufFile(const uint8_t* data, size_t size, const std::string& name);

  const std::string& path() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  size_t file_size() const { return size_; }
  // The file's bytes in memory: after writable_data(), some tensors' bytes may differ from the
  // file's (Model::file_xxh128 hashes them as in the file).
  const uint8_t* file_data() const { return data_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // Tensor t's bytes, writable, when the file was read into memory this object owns (not
  // mapped, not a caller's buffer), or t was copied by own_tensors (wholly or in part: only
  // owned_part's bytes are then the file's): the loader lays some matrices out anew
  // (model/weights.h). nullptr otherwise.
  uint8_t* writable_data(const GgufTensorInfo& t);
  // The bytes [first, second) of t that hold the file's: all of them, but for a tensor of which
  // own_tensors copied a part.
  std::pair<size_t, size_t> owned_part(const GgufTensorInfo& t) const;
  // A mapped file: copies the bytes of the tensors `keep` chooses into memory this object owns
  // (2 MiB pages: base/huge_pages.h) and points them there, leaving the others mapped and
  // unread. A pipeline rank (docs/DISTRIBUTED.md) keeps its own layers so: it reads only them,
  // and they stream as fast as a whole model read into memory. `part`, when given, names the
  // bytes [first, second) of a tensor `keep` left out that are copied all the same (an expert
  // parallelism rank's experts: slabs of every layer's expert tensors): such a tensor keeps its
  // whole size in a sparse mapping of its own, only the part copied and ever resident (and laid
  // out anew: owned_part). Returns the bytes copied.
  using TensorPart = std::function<std::pair<size_t, size_t>(const GgufTensorInfo&)>;
  size_t own_tensors(const std::function<bool(const GgufTensorInfo&)>& keep,
                     const TensorPart& part = nullptr);
  bool owns_tensors() const { return owned_ || !partly_.empty(); }  // own_tensors copied some
  // The file's pages of bytes [offset, offset + n) leave resident memory (MappedFile::release):
  // read once and not needed again. Nothing unless mapped.
  void release_file_bytes(size_t offset, size_t n) const;

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* find_tensor(const std::string& name) const;

  // Typed getters. A present key of the wrong type is an error naming the key; a missing key
  // returns the fallback (or throws when the `require_*` form is used).
  bool has(const std::string& key) const { return find(key) != nullptr; }
  std::string get_string(const std::string& key, const std::string& fallback = "") const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  int64_t require_int(const std::string& key) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // Arrays. Element types are converted when lossless (any integer type to int64, f32 to f32).
  const std::vector<std::string_view>& get_string_array(const std::string& key) const;
  std::vector<float> get_f32_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;

  // Throws tzero::Error("<path>: <what>"), `what` cut to kGgufMaxMessageBytes with control
  // bytes escaped (one line). Callers quote text from the file through excerpt().
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void parse();
  std::unique_ptr<MappedFile> map_;
  HugePageBuffer owned_;                // own_tensors' copies
  std::vector<HugePageBuffer> partly_;  // own_tensors' tensors of which a part is copied
  std::map<std::string, std::pair<size_t, size_t>> parts_;  // and those parts, by name
  std::string name_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tzero
