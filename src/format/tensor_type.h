// Tensor element types as GGUF numbers them (ggml_type), with their block layouts.
// A row of ne0 elements of type T takes ne0 / block_size(T) * type_size(T) bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tzero {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  MXFP4 = 39,
};

struct TensorTypeTraits {
  const char* name;     // "f32", "q8_0", ... as llama.cpp prints them
  uint32_t block_size;  // elements per block
  uint32_t type_size;   // bytes per block
  bool supported;       // can tzero compute with it (matmul, embedding lookup)
};

// Traits of a known type id; std::nullopt for ids this build does not know at all.
std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id);
const TensorTypeTraits& traits(TensorType t);    // for known types only
std::string tensor_type_name(uint32_t type_id);  // "q4_0", or "type 123" when unknown
// Parses a user-facing name ("f32", "q8_0", "Q4_0", ...); std::nullopt when unknown.
std::optional<TensorType> tensor_type_from_name(const std::string& name);

// Bytes of one row of n elements. n must be a multiple of the block size.
inline size_t row_bytes(TensorType t, size_t n) {
  const auto& tr = traits(t);
  return n / tr.block_size * tr.type_size;
}

}  // namespace tzero
