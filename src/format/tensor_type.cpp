#include "format/tensor_type.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace tzero {

namespace {
struct Entry {
  uint32_t id;
  TensorTypeTraits traits;
};
// Block layouts as the GGUF ecosystem defines them (ggml's type table).
constexpr Entry kTypes[] = {
    {0, {"f32", 1, 4, true}},       {1, {"f16", 1, 2, true}},
    {2, {"q4_0", 32, 18, true}},    {3, {"q4_1", 32, 20, true}},
    {6, {"q5_0", 32, 22, true}},    {7, {"q5_1", 32, 24, true}},
    {8, {"q8_0", 32, 34, true}},    {9, {"q8_1", 32, 36, false}},
    {10, {"q2_k", 256, 84, true}},  {11, {"q3_k", 256, 110, true}},
    {12, {"q4_k", 256, 144, true}}, {13, {"q5_k", 256, 176, true}},
    {14, {"q6_k", 256, 210, true}}, {15, {"q8_k", 256, 292, false}},
    {20, {"iq4_nl", 32, 18, true}}, {23, {"iq4_xs", 256, 136, true}},
    {24, {"i8", 1, 1, false}},      {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},     {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},     {30, {"bf16", 1, 2, true}},
    {39, {"mxfp4", 32, 17, true}},
};
}  // namespace

std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id) {
  for (const auto& e : kTypes)
    if (e.id == type_id) return e.traits;
  return std::nullopt;
}

const TensorTypeTraits& traits(TensorType t) {
  for (const auto& e : kTypes)
    if (e.id == uint32_t(t)) return e.traits;
  throw Error("internal: unknown tensor type " + std::to_string(uint32_t(t)));
}

std::string tensor_type_name(uint32_t type_id) {
  auto tr = tensor_type_traits(type_id);
  return tr ? tr->name : "type " + std::to_string(type_id);
}

std::optional<TensorType> tensor_type_from_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& e : kTypes)
    if (lower == e.traits.name) return TensorType(e.id);
  return std::nullopt;
}

}  // namespace tzero
