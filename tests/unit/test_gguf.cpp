// GGUF round trips: what GgufWriter writes, GgufFile reads back unchanged (every metadata value
// type, arrays, tensor infos of every supported type and rank, alignment, data bytes), and the
// typed getters convert what is lossless and reject the rest with an error naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace tzero {
namespace {

std::string scratch(const std::string& name) {
  return test::scratch_dir() + "/gguf_" + name;
}

// The message of the tzero::Error that `fn` throws, or "<no error>".
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

GgufValue scalar(GgufValueType t) {
  GgufValue v;
  v.type = t;
  return v;
}

// An array value whose numeric elements live in `raw` (which must outlive the writer call).
GgufValue numeric_array(GgufValueType elem, const std::vector<uint8_t>& raw) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = elem;
  v.count = raw.size() / gguf_value_size(elem);
  v.elems = raw.data();
  return v;
}

template <typename T>
std::vector<uint8_t> raw_of(const std::vector<T>& xs) {
  std::vector<uint8_t> out(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(out.data(), xs.data(), out.size());
  return out;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(seed + i * 7 + (i >> 8));
  return b;
}

// Every scalar type survives the trip with its exact value and type, in insertion order.
TEST(Gguf, ScalarValuesRoundTrip) {
  GgufWriter w;
  GgufValue v = scalar(GgufValueType::U8);
  v.u = 200;
  w.add_value("t.u8", v);
  v = scalar(GgufValueType::I8);
  v.i = -100;
  w.add_value("t.i8", v);
  v = scalar(GgufValueType::U16);
  v.u = 60000;
  w.add_value("t.u16", v);
  v = scalar(GgufValueType::I16);
  v.i = -30000;
  w.add_value("t.i16", v);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_u64("t.u64", (uint64_t(1) << 63) + 5);
  v = scalar(GgufValueType::I64);
  v.i = -(int64_t(1) << 62) - 3;
  w.add_value("t.i64", v);
  w.add_f32("t.f32", 1.5f);
  v = scalar(GgufValueType::F64);
  v.f = 3.141592653589793;
  w.add_value("t.f64", v);
  w.add_bool("t.true", true);
  w.add_bool("t.false", false);
  w.add_string("t.string", std::string("h\xC3\xA9llo\nwor\0ld", 13));
  w.add_string("t.empty", "");
  const std::string path = scratch("scalars.gguf");
  w.write(path);

  GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.path(), path);
  ASSERT_EQ(f.metadata().size(), 14u);
  const char* order[] = {"t.u8",  "t.i8",  "t.u16", "t.i16",  "t.u32",   "t.i32",    "t.u64",
                         "t.i64", "t.f32", "t.f64", "t.true", "t.false", "t.string", "t.empty"};
  for (size_t k = 0; k < 14; ++k) EXPECT_EQ(f.metadata()[k].first, order[k]);

  EXPECT_EQ(f.find("t.u8")->type, GgufValueType::U8);
  EXPECT_EQ(f.find("t.u8")->u, 200u);
  EXPECT_EQ(f.find("t.i8")->type, GgufValueType::I8);
  EXPECT_EQ(f.find("t.i8")->i, -100);
  EXPECT_EQ(f.find("t.u16")->type, GgufValueType::U16);
  EXPECT_EQ(f.find("t.u16")->u, 60000u);
  EXPECT_EQ(f.find("t.i16")->type, GgufValueType::I16);
  EXPECT_EQ(f.find("t.i16")->i, -30000);
  EXPECT_EQ(f.find("t.u32")->type, GgufValueType::U32);
  EXPECT_EQ(f.find("t.u32")->u, 4000000000u);
  EXPECT_EQ(f.find("t.i32")->type, GgufValueType::I32);
  EXPECT_EQ(f.find("t.i32")->i, -2000000000);
  EXPECT_EQ(f.find("t.u64")->type, GgufValueType::U64);
  EXPECT_EQ(f.find("t.u64")->u, (uint64_t(1) << 63) + 5);
  EXPECT_EQ(f.find("t.i64")->type, GgufValueType::I64);
  EXPECT_EQ(f.find("t.i64")->i, -(int64_t(1) << 62) - 3);
  EXPECT_EQ(f.find("t.f32")->type, GgufValueType::F32);
  EXPECT_EQ(f.find("t.f32")->f, 1.5);
  EXPECT_EQ(f.find("t.f64")->type, GgufValueType::F64);
  EXPECT_EQ(f.find("t.f64")->f, 3.141592653589793);  // f64 is not squeezed through f32
  EXPECT_TRUE(f.get_bool("t.true", false));
  EXPECT_FALSE(f.get_bool("t.false", true));
  // Strings are byte strings: UTF-8, newlines and NULs come back as written.
  EXPECT_EQ(f.get_string("t.string"), std::string("h\xC3\xA9llo\nwor\0ld", 13));
  EXPECT_EQ(f.find("t.empty")->type, GgufValueType::STRING);
  EXPECT_EQ(f.get_string("t.empty", "fallback"), "");
  EXPECT_TRUE(f.tensors().empty());
}

// Arrays of every numeric element type, of strings, and empty arrays come back element for
// element; the array getters convert integer element types to int64.
TEST(Gguf, ArrayValuesRoundTrip) {
  const std::vector<uint8_t> u8 = {0, 1, 255};
  const std::vector<int8_t> i8 = {-128, 0, 127};
  const std::vector<uint16_t> u16 = {0, 65535, 7};
  const std::vector<int16_t> i16 = {-32768, 32767, -1};
  const std::vector<uint32_t> u32 = {0, 4294967295u};
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), -1, 42};
  const std::vector<uint64_t> u64 = {uint64_t(1) << 62, 9};
  const std::vector<double> f64 = {0.1, -2.5e300};
  const std::vector<uint8_t> bools = {1, 0, 1};
  const auto raw_u8 = raw_of(u8), raw_i8 = raw_of(i8), raw_u16 = raw_of(u16), raw_i16 = raw_of(i16),
             raw_u32 = raw_of(u32), raw_i64 = raw_of(i64), raw_u64 = raw_of(u64),
             raw_f64 = raw_of(f64);

  GgufWriter w;
  w.add_value("a.u8", numeric_array(GgufValueType::U8, raw_u8));
  w.add_value("a.i8", numeric_array(GgufValueType::I8, raw_i8));
  w.add_value("a.u16", numeric_array(GgufValueType::U16, raw_u16));
  w.add_value("a.i16", numeric_array(GgufValueType::I16, raw_i16));
  w.add_value("a.u32", numeric_array(GgufValueType::U32, raw_u32));
  w.add_i32_array("a.i32", {-7, 0, 2147483647});
  w.add_value("a.u64", numeric_array(GgufValueType::U64, raw_u64));
  w.add_value("a.i64", numeric_array(GgufValueType::I64, raw_i64));
  w.add_f32_array("a.f32", {1.0f, -0.5f, 3.25f});
  w.add_value("a.f64", numeric_array(GgufValueType::F64, raw_f64));
  w.add_value("a.bool", numeric_array(GgufValueType::BOOL, bools));
  w.add_string_array("a.str", {"<unk>", "", "\xE2\x96\x81the", std::string("n\0ul", 4)});
  w.add_string_array("a.str_empty", {});
  w.add_f32_array("a.f32_empty", {});
  const std::string path = scratch("arrays.gguf");
  w.write(path);

  GgufFile f(path);
  ASSERT_EQ(f.metadata().size(), 14u);
  EXPECT_EQ(f.get_int_array("a.u8"), (std::vector<int64_t>{0, 1, 255}));
  EXPECT_EQ(f.get_int_array("a.i8"), (std::vector<int64_t>{-128, 0, 127}));
  EXPECT_EQ(f.get_int_array("a.u16"), (std::vector<int64_t>{0, 65535, 7}));
  EXPECT_EQ(f.get_int_array("a.i16"), (std::vector<int64_t>{-32768, 32767, -1}));
  EXPECT_EQ(f.get_int_array("a.u32"), (std::vector<int64_t>{0, 4294967295}));
  EXPECT_EQ(f.get_int_array("a.i32"), (std::vector<int64_t>{-7, 0, 2147483647}));
  EXPECT_EQ(f.get_int_array("a.u64"), (std::vector<int64_t>{int64_t(1) << 62, 9}));
  EXPECT_EQ(f.get_int_array("a.i64"), i64);
  EXPECT_EQ(f.get_f32_array("a.f32"), (std::vector<float>{1.0f, -0.5f, 3.25f}));

  const GgufValue* af64 = f.find("a.f64");
  ASSERT_NE(af64, nullptr);
  EXPECT_EQ(af64->type, GgufValueType::ARRAY);
  EXPECT_EQ(af64->elem_type, GgufValueType::F64);
  ASSERT_EQ(af64->count, 2u);
  EXPECT_EQ(std::memcmp(af64->elems, raw_f64.data(), raw_f64.size()), 0);
  const GgufValue* abool = f.find("a.bool");
  ASSERT_NE(abool, nullptr);
  EXPECT_EQ(abool->elem_type, GgufValueType::BOOL);
  ASSERT_EQ(abool->count, 3u);
  EXPECT_EQ(std::memcmp(abool->elems, bools.data(), 3), 0);

  const auto& strs = f.get_string_array("a.str");
  ASSERT_EQ(strs.size(), 4u);
  EXPECT_EQ(strs[0], "<unk>");
  EXPECT_EQ(strs[1], "");
  EXPECT_EQ(strs[2], "\xE2\x96\x81the");
  EXPECT_EQ(strs[3], std::string_view("n\0ul", 4));
  EXPECT_EQ(f.find("a.str")->count, 4u);
  EXPECT_TRUE(f.get_string_array("a.str_empty").empty());
  EXPECT_EQ(f.find("a.str_empty")->elem_type, GgufValueType::STRING);
  EXPECT_TRUE(f.get_f32_array("a.f32_empty").empty());
  EXPECT_EQ(f.find("a.f32_empty")->count, 0u);
  // Missing arrays read as empty.
  EXPECT_TRUE(f.get_string_array("a.missing").empty());
  EXPECT_TRUE(f.get_f32_array("a.missing").empty());
  EXPECT_TRUE(f.get_int_array("a.missing").empty());
  // What `tzero info` shows for arrays.
  EXPECT_TRUE(contains(f.find("a.str")->to_display(), "[string x 4] \"<unk>\""));
  EXPECT_EQ(f.find("a.f32")->to_display(), "[f32 x 3]");
}

// Tensor infos of every supported type, ranks 1 to 4: names, types, shapes, sizes and data
// bytes come back identical, each tensor at an aligned offset inside the data section.
TEST(Gguf, TensorsRoundTripEveryTypeAndRank) {
  struct Spec {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    size_t n_bytes;
  };
  const std::vector<Spec> specs = {
      {"t.f32", TensorType::F32, {7}, 28},                      // 1-D, odd size: padding follows
      {"t.f16", TensorType::F16, {3, 5}, 30},                   // 2-D
      {"t.bf16", TensorType::BF16, {2, 3, 4}, 48},              // 3-D
      {"t.q8_0", TensorType::Q8_0, {64, 2, 1, 3}, 2 * 34 * 6},  // 4-D, blocks of 32
      {"t.q4_0", TensorType::Q4_0, {32, 3}, 18 * 3},
  };
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  std::vector<std::vector<uint8_t>> bytes;
  for (size_t k = 0; k < specs.size(); ++k) {
    bytes.push_back(pattern(specs[k].n_bytes, uint8_t(17 * k + 1)));
    w.add_tensor(specs[k].name, specs[k].type, specs[k].ne, bytes.back());
  }
  const std::string path = scratch("tensors.gguf");
  w.write(path);

  GgufFile f(path);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  ASSERT_EQ(f.tensors().size(), specs.size());
  uint64_t prev_end = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    const GgufTensorInfo& t = f.tensors()[k];
    SCOPED_TRACE(specs[k].name);
    EXPECT_EQ(t.name, specs[k].name);
    EXPECT_EQ(t.type, specs[k].type);
    EXPECT_EQ(t.ne, specs[k].ne);
    EXPECT_EQ(t.n_bytes, specs[k].n_bytes);
    int64_t n = 1;
    for (int64_t d : specs[k].ne) n *= d;
    EXPECT_EQ(t.n_elements(), n);
    EXPECT_EQ(t.offset % 32, 0u);
    EXPECT_GE(t.offset, prev_end);  // tensors do not overlap
    prev_end = t.offset + t.n_bytes;
    EXPECT_EQ(t.data, f.file_data() + f.data_offset() + t.offset);
    EXPECT_EQ(std::memcmp(t.data, bytes[k].data(), bytes[k].size()), 0);
    EXPECT_EQ(f.find_tensor(specs[k].name), &t);
  }
  EXPECT_EQ(f.data_offset() + prev_end, f.file_size());  // the last tensor ends the file
  EXPECT_EQ(f.find_tensor("t.missing"), nullptr);
}

// A custom general.alignment (written both as metadata and as the writer's padding) moves
// the data section and every tensor offset to multiples of it.
TEST(Gguf, CustomAlignmentRoundTrip) {
  for (uint32_t align : {8u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    GgufWriter w;
    w.add_u32("general.alignment", align);
    const auto a = pattern(40, 3), b = pattern(12, 5), c = pattern(64, 9);
    w.add_tensor("a", TensorType::F32, {10}, a);
    w.add_tensor("b", TensorType::F16, {6}, b);
    w.add_tensor("c", TensorType::Q8_0, {32}, pattern(34, 9));
    const std::string path = scratch("align" + std::to_string(align) + ".gguf");
    w.write(path, align);
    GgufFile f(path);
    EXPECT_EQ(f.alignment(), align);
    EXPECT_EQ(f.data_offset() % align, 0u);
    ASSERT_EQ(f.tensors().size(), 3u);
    for (const auto& t : f.tensors()) {
      EXPECT_EQ(t.offset % align, 0u) << t.name;
      EXPECT_EQ(size_t(t.data - f.file_data()) % align, 0u) << t.name;
    }
    EXPECT_EQ(std::memcmp(f.tensors()[0].data, a.data(), a.size()), 0);
    EXPECT_EQ(std::memcmp(f.tensors()[1].data, b.data(), b.size()), 0);
    EXPECT_EQ(std::memcmp(f.tensors()[2].data, pattern(34, 9).data(), 34), 0);
  }
}

// general.alignment is read whatever unsigned integer type holds it (regression: a u8 or u16
// alignment used to be read as 0 and rejected).
TEST(Gguf, AlignmentOfAnyIntegerType) {
  for (GgufValueType t : {GgufValueType::U8, GgufValueType::U16, GgufValueType::I32,
                          GgufValueType::U64, GgufValueType::I64}) {
    SCOPED_TRACE(gguf_value_type_name(t));
    GgufWriter w;
    GgufValue v = scalar(t);
    v.u = 64;
    v.i = 64;
    w.add_value("general.alignment", v);
    w.add_tensor("a", TensorType::F32, {3}, pattern(12, 1));
    w.add_tensor("b", TensorType::F32, {3}, pattern(12, 2));
    const std::string path = scratch("align_type.gguf");
    w.write(path, 64);
    GgufFile f(path);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.tensors()[1].offset, 64u);
  }
}

// A file with no metadata and no tensors is valid; so is a version 2 header.
TEST(Gguf, EmptyFileAndVersion2) {
  GgufWriter w;
  const std::string path = scratch("empty.gguf");
  w.write(path);
  GgufFile f(path);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_TRUE(f.tensors().empty());

  GgufWriter w2;
  w2.add_string("k", "v");
  w2.add_tensor("t", TensorType::F32, {2}, pattern(8, 4));
  const std::string path2 = scratch("v2.gguf");
  w2.write(path2);
  std::string bytes = test::read_file(path2);
  bytes[4] = 2;  // the version; v2 and v3 differ only in endianness rules tzero ignores
  std::vector<uint8_t> buf(bytes.begin(), bytes.end());
  GgufFile v2(buf.data(), buf.size(), "v2");
  EXPECT_EQ(v2.version(), 2u);
  EXPECT_EQ(v2.get_string("k"), "v");
  EXPECT_EQ(v2.path(), "v2");
  EXPECT_EQ(std::memcmp(v2.tensors()[0].data, pattern(8, 4).data(), 8), 0);
}

// get_int widens every integer type; get_float takes integers too; missing keys give the
// fallback; require_int names a missing key.
TEST(Gguf, TypedGettersConvertLosslessly) {
  GgufWriter w;
  GgufValue v = scalar(GgufValueType::U8);
  v.u = 255;
  w.add_value("k.u8", v);
  v = scalar(GgufValueType::I8);
  v.i = -128;
  w.add_value("k.i8", v);
  v = scalar(GgufValueType::U16);
  v.u = 65535;
  w.add_value("k.u16", v);
  v = scalar(GgufValueType::I16);
  v.i = -32768;
  w.add_value("k.i16", v);
  w.add_u32("k.u32", 4294967295u);
  w.add_i32("k.i32", -2147483647 - 1);
  w.add_u64("k.u64", uint64_t(std::numeric_limits<int64_t>::max()));
  w.add_u64("k.u64_big", uint64_t(std::numeric_limits<int64_t>::max()) + 1);
  v = scalar(GgufValueType::I64);
  v.i = std::numeric_limits<int64_t>::min();
  w.add_value("k.i64", v);
  w.add_f32("k.f32", 0.25f);
  w.add_string("k.str", "text");
  w.add_bool("k.bool", true);
  w.add_f32_array("k.f32s", {1, 2});
  w.add_string_array("k.strs", {"x"});
  const std::string path = scratch("getters.gguf");
  w.write(path);
  GgufFile f(path);

  EXPECT_EQ(f.get_int("k.u8", 0), 255);
  EXPECT_EQ(f.get_int("k.i8", 0), -128);
  EXPECT_EQ(f.get_int("k.u16", 0), 65535);
  EXPECT_EQ(f.get_int("k.i16", 0), -32768);
  EXPECT_EQ(f.get_int("k.u32", 0), 4294967295);
  EXPECT_EQ(f.get_int("k.i32", 0), -2147483648LL);
  EXPECT_EQ(f.get_int("k.u64", 0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(f.get_int("k.i64", 0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.require_int("k.u32"), 4294967295);
  EXPECT_EQ(f.get_int("k.missing", -5), -5);
  EXPECT_EQ(f.get_float("k.f32", 0), 0.25);
  EXPECT_EQ(f.get_float("k.u16", 0), 65535.0);
  EXPECT_EQ(f.get_float("k.i8", 0), -128.0);
  EXPECT_EQ(f.get_float("k.missing", 2.5), 2.5);
  EXPECT_EQ(f.get_string("k.missing", "dflt"), "dflt");
  EXPECT_TRUE(f.get_bool("k.missing", true));
  EXPECT_TRUE(f.has("k.bool"));
  EXPECT_FALSE(f.has("k.missing"));
  EXPECT_EQ(f.find("k.missing"), nullptr);
}

// Each getter rejects a present key of the wrong type, and the error names the file and key.
TEST(Gguf, WrongTypeErrorsNameTheKey) {
  GgufWriter w;
  w.add_u64("k.u64_big", uint64_t(1) << 63);
  w.add_f32("k.f32", 0.25f);
  w.add_string("k.str", "text");
  w.add_u32("k.u32", 1);
  w.add_bool("k.bool", true);
  w.add_f32_array("k.f32s", {1, 2});
  w.add_i32_array("k.i32s", {1, 2});
  w.add_string_array("k.strs", {"x"});
  const std::string path = scratch("wrong_types.gguf");
  w.write(path);
  GgufFile f(path);
  auto err = [&](auto fn) { return error_of([&] { fn(); }); };

  const std::string e1 = err([&] { f.get_int("k.str", 0); });
  EXPECT_TRUE(contains(e1, path + ": "));
  EXPECT_TRUE(contains(e1, "metadata 'k.str' must be an integer"));
  EXPECT_TRUE(contains(err([&] { f.get_int("k.f32", 0); }), "'k.f32' must be an integer"));
  EXPECT_TRUE(contains(err([&] { f.get_int("k.bool", 0); }), "'k.bool' must be an integer"));
  EXPECT_TRUE(contains(err([&] { f.get_int("k.u64_big", 0); }), "'k.u64_big' is out of range"));
  EXPECT_TRUE(contains(err([&] { f.require_int("k.nope"); }), "missing metadata 'k.nope'"));
  EXPECT_TRUE(contains(err([&] { f.require_int("k.str"); }), "'k.str' must be an integer"));
  EXPECT_TRUE(contains(err([&] { f.get_string("k.u32"); }), "'k.u32' must be a string"));
  EXPECT_TRUE(contains(err([&] { f.get_string("k.strs"); }), "'k.strs' must be a string"));
  EXPECT_TRUE(contains(err([&] { f.get_float("k.str", 0); }), "'k.str' must be a number"));
  EXPECT_TRUE(contains(err([&] { f.get_float("k.f32s", 0); }), "'k.f32s' must be a number"));
  EXPECT_TRUE(contains(err([&] { f.get_bool("k.u32", false); }), "'k.u32' must be a bool"));
  EXPECT_TRUE(
      contains(err([&] { f.get_string_array("k.f32s"); }), "'k.f32s' must be an array of strings"));
  EXPECT_TRUE(
      contains(err([&] { f.get_string_array("k.str"); }), "'k.str' must be an array of strings"));
  EXPECT_TRUE(
      contains(err([&] { f.get_f32_array("k.i32s"); }), "'k.i32s' must be an array of f32"));
  EXPECT_TRUE(
      contains(err([&] { f.get_int_array("k.f32s"); }), "'k.f32s' must be an array of integers"));
  EXPECT_TRUE(
      contains(err([&] { f.get_int_array("k.strs"); }), "'k.strs' must be an array of integers"));
  EXPECT_TRUE(contains(err([&] { f.get_int_array("k.u32"); }), "'k.u32' must be an array"));
}

// add_value copies every value of a parsed file, so a rewrite reproduces the metadata.
TEST(Gguf, AddValueCopiesAParsedFile) {
  GgufWriter w;
  w.add_string("general.name", "copy me");
  w.add_u32("n", 7);
  w.add_f32("x", -1.25f);
  w.add_bool("b", true);
  w.add_string_array("toks", {"a", "bb", ""});
  w.add_i32_array("ids", {3, -4});
  w.add_f32_array("scores", {0.5f});
  const std::string src = scratch("copy_src.gguf");
  w.write(src);
  GgufFile a(src);

  GgufWriter w2;
  for (const auto& [key, v] : a.metadata()) w2.add_value(key, v);
  const std::string dst = scratch("copy_dst.gguf");
  w2.write(dst);
  EXPECT_EQ(test::read_file(src), test::read_file(dst));  // byte for byte
}

// The writer refuses tensors the reader would reject, and a failed write does not produce the
// target file.
TEST(Gguf, WriterRejectsBadTensors) {
  GgufWriter w;
  EXPECT_TRUE(contains(error_of([&] { w.add_tensor("r", TensorType::Q8_0, {33}, pattern(34, 1)); }),
                       "tensor 'r': row length 33 is not a multiple of 32"));
  EXPECT_TRUE(
      contains(error_of([&] { w.add_tensor("z", TensorType::F32, {}, std::vector<uint8_t>{}); }),
               "tensor 'z': 1 to 4 dimensions"));
  EXPECT_TRUE(
      contains(error_of([&] {
                 w.add_tensor("f", TensorType::F32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4));
               }),
               "tensor 'f': 1 to 4 dimensions"));

  GgufWriter bad;
  bad.add_tensor("short", TensorType::F32, {4}, pattern(12, 1));  // 12 bytes for 16
  const std::string path = scratch("never_written.gguf");
  EXPECT_TRUE(contains(error_of([&] { bad.write(path); }),
                       "tensor 'short': data size does not match its shape"));
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing renamed into place
  // Known gap (writer, not reader): a filler that throws leaves `path + ".tmp"` behind.
}

}  // namespace
}  // namespace tzero
