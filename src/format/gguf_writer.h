// Writes GGUF version 3 files: metadata in insertion order, then tensors. Tensor data comes
// from a callback so that a multi-gigabyte model is generated one tensor at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/tensor_type.h"

namespace tzero {

class GgufWriter {
 public:
  using Filler = std::function<void(uint8_t* dst, size_t n_bytes)>;

  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_f32_array(const std::string& key, const std::vector<float>& v);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // Copies a value read from another file (used to rewrite or extend a GGUF).
  void add_value(const std::string& key, const GgufValue& v);

  // ne[0] is the row length and must be a multiple of the type's block size.
  void add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                  Filler fill);
  void add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                  std::vector<uint8_t> bytes);

  // Writes to `path` through a temporary file renamed at the end: a failed write leaves no
  // partial file behind. Throws tzero::Error. `progress`, when set, is called after each tensor
  // with the tensor bytes written so far and in all.
  using Progress = std::function<void(uint64_t done, uint64_t total)>;
  void write(const std::string& path, uint32_t alignment = 32,
             const Progress& progress = nullptr) const;

 private:
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    size_t n_bytes;
    Filler fill;
  };
  void begin_kv(const std::string& key, GgufValueType t);
  std::vector<uint8_t> kv_bytes_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace tzero
