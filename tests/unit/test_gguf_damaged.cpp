// Damaged and hostile GGUF files, built in memory from one valid file: every one must throw
// tzero::Error("<name>: <what is wrong>") and never crash, hang, over-allocate or read outside the
// buffer. Each buffer is copied into a heap block of exactly its size, so an ASan build
// (-DTZ_SANITIZE=ON) turns any overread into a failure.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using Bytes = std::vector<uint8_t>;
const std::string kName = "damaged.gguf";

// Parses `b` from an exact-size copy. Returns the tzero::Error message, or "<no error>". Any other
// exception escapes and fails the test.
std::string parse_error(const Bytes& b) {
  std::unique_ptr<uint8_t[]> copy(b.empty() ? nullptr : new uint8_t[b.size()]);
  if (!b.empty()) std::memcpy(copy.get(), b.data(), b.size());
  try {
    GgufFile f(copy.get(), b.size(), kName);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Passes when parsing throws tzero::Error with a one-line message "damaged.gguf: ...<part>...".
::testing::AssertionResult fails_with(const Bytes& b, const std::string& part) {
  const std::string msg = parse_error(b);
  if (msg.rfind(kName + ": ", 0) != 0 || msg.find(part) == std::string::npos ||
      msg.find('\n') != std::string::npos)
    return ::testing::AssertionFailure() << "got '" << msg << "', want '" << part << "'";
  return ::testing::AssertionSuccess();
}

template <typename T>
void put(Bytes& b, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}
template <typename T>
T get(const Bytes& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Appends raw GGUF fields, for the few cases a patch of the valid file cannot express.
struct Builder {
  Bytes b;
  Builder& u32(uint32_t v) { return raw(&v, 4); }
  Builder& u64(uint64_t v) { return raw(&v, 8); }
  Builder& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  Builder& raw(const void* p, size_t n) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    return *this;
  }
  Builder& header(uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF", 4).u32(3).u64(n_tensors).u64(n_kv);
  }
  Builder& pad(size_t align = 32) {
    b.resize((b.size() + align - 1) / align * align, 0);
    return *this;
  }
};

// Where each field of the valid file sits, found by walking it.
struct Layout {
  struct Kv {
    std::string key;
    size_t start, type_at, value_at;
  };
  struct Tensor {
    std::string name;
    size_t start, name_at, n_dims_at, dims_at, type_at, offset_at;
  };
  std::vector<Kv> kv;
  std::vector<Tensor> tensors;
  size_t infos_end = 0;
  const Kv& key(const std::string& k) const {
    for (const auto& e : kv)
      if (e.key == k) return e;
    throw std::runtime_error("no key " + k);
  }
  const Tensor& tensor(const std::string& n) const {
    for (const auto& e : tensors)
      if (e.name == n) return e;
    throw std::runtime_error("no tensor " + n);
  }
};

// The valid file: a few keys of several types including a string array, and tensors of four
// types and ranks 1 to 3. Tensor "b" and "d" have same-length names as "a" for name patches.
struct Valid {
  Bytes bytes;
  Layout at;
  size_t data_offset = 0;
};

const Valid& valid() {
  static const Valid v = [] {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string("general.name", "damaged test");
    w.add_u32("test.k1", 11);
    w.add_u32("test.k2", 22);
    w.add_f32("test.f", 0.5f);
    w.add_string_array("test.strs", {"<unk>", "<s>", "hello", ""});
    w.add_i32_array("test.ints", {1, 2, 3});
    std::vector<uint8_t> data(64 * 4);
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 13 + 1);
    w.add_tensor("a", TensorType::F32, {8}, Bytes(data.begin(), data.begin() + 32));
    w.add_tensor("b", TensorType::F16, {4, 2}, Bytes(data.begin(), data.begin() + 16));
    w.add_tensor("c", TensorType::Q8_0, {32, 2}, Bytes(data.begin(), data.begin() + 68));
    w.add_tensor("e", TensorType::F32, {2, 2, 2}, Bytes(data.begin(), data.begin() + 32));
    w.add_tensor("d", TensorType::F32, {16}, Bytes(data.begin(), data.begin() + 64));
    const std::string path = test::scratch_dir() + "/damaged_base.gguf";
    w.write(path);
    const std::string s = test::read_file(path);
    Valid out;
    out.bytes.assign(s.begin(), s.end());
    out.data_offset = GgufFile(path).data_offset();

    // Walk the (known valid) header, recording each field's offset.
    const Bytes& b = out.bytes;
    size_t p = 24;
    auto read_str = [&] {
      const uint64_t n = get<uint64_t>(b, p);
      std::string str(reinterpret_cast<const char*>(b.data() + p + 8), n);
      p += 8 + n;
      return str;
    };
    for (uint64_t k = 0, n = get<uint64_t>(b, 16); k < n; ++k) {
      Layout::Kv kv;
      kv.start = p;
      kv.key = read_str();
      kv.type_at = p;
      const auto t = GgufValueType(get<uint32_t>(b, p));
      p += 4;
      kv.value_at = p;
      if (t == GgufValueType::STRING) {
        read_str();
      } else if (t == GgufValueType::ARRAY) {
        const auto et = GgufValueType(get<uint32_t>(b, p));
        const uint64_t count = get<uint64_t>(b, p + 4);
        p += 12;
        for (uint64_t e = 0; e < count; ++e) {
          if (et == GgufValueType::STRING)
            read_str();
          else
            p += gguf_value_size(et);
        }
      } else {
        p += gguf_value_size(t);
      }
      out.at.kv.push_back(kv);
    }
    for (uint64_t k = 0, n = get<uint64_t>(b, 8); k < n; ++k) {
      Layout::Tensor t;
      t.start = t.name_at = p;
      t.name = read_str();
      t.n_dims_at = p;
      const uint32_t nd = get<uint32_t>(b, p);
      t.dims_at = p + 4;
      t.type_at = t.dims_at + 8 * nd;
      t.offset_at = t.type_at + 4;
      p = t.offset_at + 8;
      out.at.tensors.push_back(t);
    }
    out.at.infos_end = p;
    return out;
  }();
  return v;
}

Bytes base() {
  return valid().bytes;
}
const Layout& at() {
  return valid().at;
}

// The base file is valid, so every failure below comes from the one thing each case breaks.
TEST(GgufDamaged, BaseFileIsValid) {
  EXPECT_EQ(parse_error(base()), "<no error>");
  EXPECT_EQ(at().kv.size(), 7u);
  EXPECT_EQ(at().tensors.size(), 5u);
  EXPECT_LT(at().infos_end, valid().data_offset);  // some padding before the data
  EXPECT_GT(valid().bytes.size(), valid().data_offset);
}

// Cutting the file anywhere before the data section is a clean error: "bad magic" inside the
// magic, otherwise a truncation or a count that no longer fits; never an overread.
TEST(GgufDamaged, TruncatedEveryHeaderByte) {
  const Bytes full = base();
  for (size_t cut = 0; cut < valid().data_offset; ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const Bytes b(full.begin(), full.begin() + cut);
    const std::string msg = parse_error(b);
    ASSERT_EQ(msg.rfind(kName + ": ", 0), 0u) << msg;
    if (cut < 4) {
      EXPECT_TRUE(fails_with(b, "not a GGUF file (bad magic)"));
    } else if (cut >= at().infos_end) {
      EXPECT_TRUE(fails_with(b, "truncated: no tensor data section"));
    } else {
      EXPECT_TRUE(msg.find(": truncated: ") != std::string::npos ||
                  msg.find("does not fit in the file") != std::string::npos)
          << msg;
    }
  }
}

// Cutting the file anywhere inside the tensor data names the first tensor that no longer fits.
TEST(GgufDamaged, TruncatedEveryDataByte) {
  const Bytes full = base();
  for (size_t cut = valid().data_offset; cut < full.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    EXPECT_TRUE(fails_with(Bytes(full.begin(), full.begin() + cut), "lies outside the file"));
  }
}

// A buffer of nothing, and a few short or foreign byte strings, are not GGUF.
TEST(GgufDamaged, WrongMagic) {
  EXPECT_TRUE(fails_with({}, "not a GGUF file (bad magic)"));
  EXPECT_TRUE(fails_with({'G', 'G', 'U'}, "bad magic"));
  Bytes b = base();
  b[3] = 'X';
  EXPECT_TRUE(fails_with(b, "not a GGUF file (bad magic)"));
  b = base();
  std::memcpy(b.data(), "ggjt", 4);  // an older llama.cpp container
  EXPECT_TRUE(fails_with(b, "bad magic"));
  const std::string text = "Once upon a time\n";
  EXPECT_TRUE(fails_with(Bytes(text.begin(), text.end()), "bad magic"));
  EXPECT_TRUE(fails_with({'G', 'G', 'U', 'F', 3, 0}, "truncated: version"));
}

// Only versions 2 and 3 are read; version 1 (32-bit counts) gets its own message.
TEST(GgufDamaged, UnsupportedVersions) {
  Bytes b = base();
  put<uint32_t>(b, 4, 1);
  EXPECT_TRUE(fails_with(b, "GGUF version 1 is not supported (only 2 and 3)"));
  put<uint32_t>(b, 4, 99);
  EXPECT_TRUE(fails_with(b, "unsupported GGUF version 99 (only 2 and 3)"));
  put<uint32_t>(b, 4, 0);
  EXPECT_TRUE(fails_with(b, "unsupported GGUF version 0"));
  put<uint32_t>(b, 4, 0x03000000);  // a big-endian file
  EXPECT_TRUE(fails_with(b, "unsupported GGUF version 50331648"));
}

// Counts the file cannot hold are rejected before anything is reserved (no bad_alloc).
TEST(GgufDamaged, HugeCounts) {
  Bytes b = base();
  put<uint64_t>(b, 8, uint64_t(1) << 60);
  EXPECT_TRUE(fails_with(b, "tensor count 1152921504606846976 does not fit in the file"));
  put<uint64_t>(b, 8, ~uint64_t(0));
  EXPECT_TRUE(fails_with(b, "tensor count 18446744073709551615 does not fit"));
  b = base();
  put<uint64_t>(b, 16, uint64_t(1) << 60);
  EXPECT_TRUE(fails_with(b, "metadata count 1152921504606846976 does not fit in the file"));
  put<uint64_t>(b, 16, ~uint64_t(0));
  EXPECT_TRUE(fails_with(b, "metadata count 18446744073709551615 does not fit"));
  // One more tensor than the file has: its info is read from the padding and data bytes.
  b = base();
  put<uint64_t>(b, 8, get<uint64_t>(b, 8) + 1);
  EXPECT_NE(parse_error(b), "<no error>");
}

// A string length past the end of the file, for a key, a value and a tensor name.
TEST(GgufDamaged, HugeStringLength) {
  for (uint64_t len : {uint64_t(1) << 62, ~uint64_t(0), uint64_t(valid().bytes.size())}) {
    SCOPED_TRACE(len);
    Bytes b = base();
    put<uint64_t>(b, at().key("general.name").value_at, len);
    EXPECT_TRUE(fails_with(b, "truncated: string value at byte"));
    b = base();
    put<uint64_t>(b, at().key("test.f").start, len);
    EXPECT_TRUE(fails_with(b, "truncated: metadata key at byte"));
    b = base();
    put<uint64_t>(b, at().tensor("c").name_at, len);
    EXPECT_TRUE(fails_with(b, "truncated: tensor name at byte"));
    b = base();
    put<uint64_t>(b, at().key("test.strs").value_at + 12, len);  // the first element
    EXPECT_TRUE(fails_with(b, "truncated: array string at byte"));
  }
}

// Array lengths the file cannot hold, for numeric and for string arrays (no bad_alloc from
// a reserve sized by the count, no overflow of count * element size).
TEST(GgufDamaged, HugeArrayLength) {
  for (uint64_t n : {uint64_t(1) << 62, ~uint64_t(0), uint64_t(1) << 61, uint64_t(100000)}) {
    SCOPED_TRACE(n);
    Bytes b = base();
    put<uint64_t>(b, at().key("test.ints").value_at + 4, n);
    EXPECT_TRUE(fails_with(b, "metadata 'test.ints': array of " + std::to_string(n) +
                                  " elements does not fit in the file"));
    b = base();
    put<uint64_t>(b, at().key("test.strs").value_at + 4, n);
    EXPECT_TRUE(fails_with(b, "metadata 'test.strs': array of " + std::to_string(n) +
                                  " strings does not fit in the file"));
  }
}

// Value types past f64 (13 and up) are unknown, at the top level and as array elements.
TEST(GgufDamaged, UnknownValueTypes) {
  Bytes b = base();
  put<uint32_t>(b, at().key("test.k1").type_at, 13);
  EXPECT_TRUE(fails_with(b, "metadata 'test.k1': unknown value type 13"));
  put<uint32_t>(b, at().key("test.k1").type_at, 0xFFFFFFFFu);
  EXPECT_TRUE(fails_with(b, "metadata 'test.k1': unknown value type 4294967295"));
  b = base();
  put<uint32_t>(b, at().key("test.ints").value_at, 13);
  EXPECT_TRUE(fails_with(b, "metadata 'test.ints': unknown array element type 13"));
  put<uint32_t>(b, at().key("test.ints").value_at, 0x80000000u);
  EXPECT_TRUE(fails_with(b, "metadata 'test.ints': unknown array element type 2147483648"));
}

// Arrays of arrays parse (and are skipped) up to 4 levels deep; a 5th level is refused, as
// is a nested count the file cannot hold.
TEST(GgufDamaged, NestedArraysTooDeep) {
  auto nested = [](int levels, uint64_t inner_count) {
    Builder g;
    g.header(0, 1).str("deep").u32(uint32_t(GgufValueType::ARRAY));
    for (int l = 1; l < levels; ++l) g.u32(uint32_t(GgufValueType::ARRAY)).u64(1);
    g.u32(uint32_t(GgufValueType::U8)).u64(inner_count);
    for (uint64_t k = 0; k < inner_count && k < 16; ++k) g.b.push_back(uint8_t(k));
    return g.pad().b;
  };
  EXPECT_EQ(parse_error(nested(1, 2)), "<no error>");
  EXPECT_EQ(parse_error(nested(4, 2)), "<no error>");
  EXPECT_TRUE(fails_with(nested(5, 2), "metadata 'deep': arrays nested too deep"));
  EXPECT_TRUE(fails_with(nested(50, 2), "metadata 'deep': arrays nested too deep"));
  Builder g;
  g.header(0, 1).str("deep").u32(uint32_t(GgufValueType::ARRAY));
  g.u32(uint32_t(GgufValueType::ARRAY)).u64(uint64_t(1) << 40).pad();
  EXPECT_TRUE(fails_with(g.b, "metadata 'deep': nested array count does not fit in the file"));
  // A nested array read through a getter is an error, not garbage.
  Bytes ok = nested(2, 2);
  std::unique_ptr<uint8_t[]> copy(new uint8_t[ok.size()]);
  std::memcpy(copy.get(), ok.data(), ok.size());
  GgufFile f(copy.get(), ok.size(), kName);
  EXPECT_THROW(f.get_int_array("deep"), Error);
  EXPECT_THROW(f.get_string_array("deep"), Error);
  EXPECT_THROW(f.get_f32_array("deep"), Error);
}

// Tensor type ids this build does not know, including the retired q4_2/q4_3 (4, 5).
TEST(GgufDamaged, UnknownTensorType) {
  for (uint32_t id : {4u, 5u, 16u, 31u, 41u, 1000u, 0xFFFFFFFFu}) {
    Bytes b = base();
    put<uint32_t>(b, at().tensor("b").type_at, id);
    EXPECT_TRUE(fails_with(b, "tensor 'b': unknown tensor type " + std::to_string(id)));
  }
}

// A tensor has 1 to 4 dimensions.
TEST(GgufDamaged, DimensionCount) {
  for (uint32_t nd : {0u, 5u, 0xFFFFFFFFu}) {
    Bytes b = base();
    put<uint32_t>(b, at().tensor("c").n_dims_at, nd);
    EXPECT_TRUE(
        fails_with(b, "tensor 'c': " + std::to_string(nd) + " dimensions (must be 1 to 4)"));
  }
}

// Each dimension is 1 to 2^40; the element count is bounded before it can overflow.
TEST(GgufDamaged, DimensionValues) {
  const size_t e = at().tensor("e").dims_at;
  Bytes b = base();
  put<uint64_t>(b, e + 8, 0);
  EXPECT_TRUE(fails_with(b, "tensor 'e': dimension 1 is 0"));
  b = base();
  put<uint64_t>(b, e, uint64_t(1) << 62);
  EXPECT_TRUE(fails_with(b, "tensor 'e': dimension 0 is 4611686018427387904"));
  put<uint64_t>(b, e, ~uint64_t(0));  // -1 as a signed dimension
  EXPECT_TRUE(fails_with(b, "tensor 'e': dimension 0 is 18446744073709551615"));
  // 2^40 * 2^40 * 2^40 would wrap around 2^64; each alone is allowed.
  b = base();
  for (int d = 0; d < 3; ++d) put<uint64_t>(b, e + 8 * d, uint64_t(1) << 40);
  EXPECT_TRUE(fails_with(b, "tensor 'e': too many elements"));
  b = base();
  put<uint64_t>(b, e, uint64_t(1) << 30);
  put<uint64_t>(b, e + 8, uint64_t(1) << 30);  // 2^60 elements
  EXPECT_TRUE(fails_with(b, "tensor 'e': too many elements"));
  // Allowed by the shape checks, but far bigger than the file: its data is out of range.
  b = base();
  put<uint64_t>(b, e, uint64_t(1) << 40);
  EXPECT_TRUE(fails_with(b, "tensor 'e': data [") && fails_with(b, "lies outside the file"));
}

// A row must hold whole blocks of the tensor's type.
TEST(GgufDamaged, RowLengthNotAMultipleOfTheBlockSize) {
  Bytes b = base();
  put<uint64_t>(b, at().tensor("c").dims_at, 33);
  EXPECT_TRUE(
      fails_with(b, "tensor 'c': row length 33 is not a multiple of the q8_0 block size 32"));
  b = base();
  put<uint32_t>(b, at().tensor("a").type_at, uint32_t(TensorType::Q4_0));  // 8 elements
  EXPECT_TRUE(fails_with(b, "tensor 'a': row length 8 is not a multiple of the q4_0 block size"));
  b = base();
  put<uint32_t>(b, at().tensor("d").type_at, uint32_t(TensorType::Q4_K));  // 16 elements
  EXPECT_TRUE(
      fails_with(b, "tensor 'd': row length 16 is not a multiple of the q4_k block size 256"));
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_XS}) {
    b = base();
    put<uint32_t>(b, at().tensor("d").type_at, uint32_t(t));
    EXPECT_TRUE(fails_with(b, "tensor 'd': row length 16 is not a multiple of the " +
                                  std::string(tzero::traits(t).name) + " block size 256"));
  }
}

// The 32-element block types take their own block bytes: "d" (the last tensor, 64 bytes of
// data) as 128 elements of each needs 4 blocks, more than the file holds, and the message
// names the size; as 16 elements it does not hold a whole block.
TEST(GgufDamaged, BlockTypesOf32NeedTheirBlockBytes) {
  const std::pair<TensorType, size_t> types[] = {{TensorType::Q4_1, 20},
                                                 {TensorType::Q5_0, 22},
                                                 {TensorType::Q5_1, 24},
                                                 {TensorType::IQ4_NL, 18},
                                                 {TensorType::MXFP4, 17}};
  for (const auto& [t, block_bytes] : types) {
    SCOPED_TRACE(traits(t).name);
    Bytes b = base();
    put<uint32_t>(b, at().tensor("d").type_at, uint32_t(t));
    put<uint64_t>(b, at().tensor("d").dims_at, 128);
    EXPECT_TRUE(fails_with(b, "tensor 'd': data ["));
    EXPECT_TRUE(fails_with(b, ", +" + std::to_string(4 * block_bytes) + ") lies outside the file"));
    b = base();
    put<uint32_t>(b, at().tensor("d").type_at, uint32_t(t));
    EXPECT_TRUE(fails_with(b, std::string("tensor 'd': row length 16 is not a multiple of the ") +
                                  traits(t).name + " block size 32"));
  }
}

// Tensor offsets are multiples of the alignment.
TEST(GgufDamaged, MisalignedTensorOffset) {
  for (uint64_t off : {uint64_t(4), uint64_t(33), uint64_t(1) << 63 | 1}) {
    Bytes b = base();
    put<uint64_t>(b, at().tensor("b").offset_at, off);
    EXPECT_TRUE(
        fails_with(b, "tensor 'b': offset " + std::to_string(off) + " is not aligned to 32"));
  }
}

// Tensor data must lie inside the file: an offset past the end (including one near 2^64,
// where offset + size would wrap) and an offset in range whose data runs past the end.
TEST(GgufDamaged, TensorDataOutOfRange) {
  const uint64_t data_size = valid().bytes.size() - valid().data_offset;
  for (uint64_t off : {data_size + 32 - data_size % 32, uint64_t(1) << 62, ~uint64_t(31)}) {
    SCOPED_TRACE(off);
    Bytes b = base();
    put<uint64_t>(b, at().tensor("b").offset_at, off);
    EXPECT_TRUE(fails_with(b, "tensor 'b': data [" + std::to_string(off) +
                                  ", +16) lies outside "
                                  "the file (data section has " +
                                  std::to_string(data_size) + " bytes)"));
  }
  // "d" is the last tensor (64 bytes): moving it up by 32 leaves half of it past the end.
  Bytes b = base();
  const size_t d_off = at().tensor("d").offset_at;
  put<uint64_t>(b, d_off, get<uint64_t>(b, d_off) + 32);
  EXPECT_TRUE(fails_with(b, "tensor 'd': data ["));
  // Tensors may share bytes (the reader does not require disjoint data), but must fit.
  b = base();
  put<uint64_t>(b, at().tensor("c").offset_at, 0);
  EXPECT_EQ(parse_error(b), "<no error>");
}

// Keys and tensor names are unique.
TEST(GgufDamaged, DuplicateKeyAndTensorName) {
  Bytes b = base();
  b[at().key("test.k2").start + 8 + 6] = '1';  // "test.k2" -> "test.k1"
  EXPECT_TRUE(fails_with(b, "duplicate metadata key 'test.k1'"));
  b = base();
  b[at().tensor("b").name_at + 8] = 'a';
  EXPECT_TRUE(fails_with(b, "duplicate tensor name 'a'"));
}

// general.alignment must be an integer power of two from 8 (the spec's minimum, which keeps
// float tensors aligned) up to 1 MiB.
TEST(GgufDamaged, BadAlignment) {
  auto with_alignment = [](auto add) {
    GgufWriter w;
    add(w);
    w.add_tensor("t", TensorType::F32, {4}, Bytes(16, 1));
    const std::string path = test::scratch_dir() + "/damaged_align.gguf";
    w.write(path);
    const std::string s = test::read_file(path);
    return Bytes(s.begin(), s.end());
  };
  for (uint32_t al : {0u, 1u, 2u, 3u, 4u, 48u, 1u << 21, 0x80000000u}) {
    EXPECT_TRUE(fails_with(
        with_alignment([&](GgufWriter& w) { w.add_u32("general.alignment", al); }),
        "general.alignment " + std::to_string(al) + " is not a power of two from 8 to 1 MiB"));
  }
  EXPECT_TRUE(fails_with(with_alignment([](GgufWriter& w) { w.add_i32("general.alignment", -32); }),
                         "general.alignment 18446744073709551584 is not a power of two"));
  EXPECT_TRUE(
      fails_with(with_alignment([](GgufWriter& w) { w.add_string("general.alignment", "32"); }),
                 "general.alignment must be an integer"));
  EXPECT_TRUE(fails_with(with_alignment([](GgufWriter& w) { w.add_f32("general.alignment", 32); }),
                         "general.alignment must be an integer"));
  EXPECT_TRUE(
      fails_with(with_alignment([](GgufWriter& w) { w.add_bool("general.alignment", true); }),
                 "general.alignment must be an integer"));
  // A valid alignment the offsets do not honour: the writer padded to 32, the file says 64.
  GgufWriter w;
  w.add_u32("general.alignment", 64);
  w.add_tensor("a", TensorType::F32, {4}, Bytes(16, 1));
  w.add_tensor("b", TensorType::F32, {4}, Bytes(16, 2));
  const std::string path = test::scratch_dir() + "/damaged_align64.gguf";
  w.write(path, 32);
  const std::string s = test::read_file(path);
  EXPECT_TRUE(fails_with(Bytes(s.begin(), s.end()), "tensor 'b': offset 32 is not aligned to 64"));
}

// Regression: names from the file end up in messages, and the CLI promises one line. A key
// or tensor name holding a newline or other control bytes is escaped, not printed raw.
TEST(GgufDamaged, ControlBytesInNamesStayOnOneLine) {
  Builder g;
  g.header(0, 1).str("evil\nkey\r\x1b[2J").u32(77).pad();
  EXPECT_TRUE(fails_with(g.b, "metadata 'evil\\x0akey\\x0d\\x1b[2J': unknown value type 77"));
  Builder t;
  t.header(1, 0).str("bad\nname").u32(1).u64(4).u32(0xABCD).u64(0).pad();
  EXPECT_TRUE(fails_with(t.b, "tensor 'bad\\x0aname': unknown tensor type 43981"));
}

// A key or tensor name whose length covers the rest of the file (the byte after it is read as
// the value type, or the dimension count, and refused) is quoted cut to 200 bytes: the message
// stays one short line instead of the whole file, escaped (issue: 1.58 MB on stories260K).
TEST(GgufDamaged, NameCoveringTheRestOfTheFileIsQuotedCut) {
  const Bytes full = base();
  for (const auto& kv : at().kv) {
    SCOPED_TRACE(kv.key);
    Bytes b = full;
    const uint64_t len = b.size() - (kv.start + 8) - 4;  // leaves 4 bytes: the "value type"
    put<uint64_t>(b, kv.start, len);
    put<uint32_t>(b, b.size() - 4, 0xFFFFFFFFu);
    const std::string msg = parse_error(b);
    EXPECT_TRUE(fails_with(b, "... (" + std::to_string(len) + " bytes)': unknown value type"));
    EXPECT_LT(msg.size(), 500u) << msg;
  }
  for (const auto& t : at().tensors) {
    SCOPED_TRACE(t.name);
    Bytes b = full;
    const uint64_t len = b.size() - (t.name_at + 8) - 4;  // leaves the "dimension count"
    put<uint64_t>(b, t.name_at, len);
    put<uint32_t>(b, b.size() - 4, 0);
    const std::string msg = parse_error(b);
    EXPECT_TRUE(fails_with(b, "... (" + std::to_string(len) + " bytes)': 0 dimensions"));
    EXPECT_LT(msg.size(), 500u) << msg;
  }
}

// A key or tensor name is at most 64 KiB: a 4 MB key that the file does hold is refused before
// it is copied, the message naming where it starts, its length and the limit.
TEST(GgufDamaged, NamesOver64KiBAreRefused) {
  ASSERT_EQ(kGgufMaxNameBytes, 65536u);
  auto with_key = [](uint64_t len) {
    Builder g;
    g.header(0, 1).str(std::string(len, 'k')).u32(uint32_t(GgufValueType::U8)).b.push_back(1);
    return g.pad().b;
  };
  const std::string four_mb = parse_error(with_key(4u << 20));
  EXPECT_EQ(four_mb,
            kName + ": metadata key at byte 24 is 4194304 bytes long (the limit is 65536)");
  EXPECT_TRUE(fails_with(with_key(65537), "metadata key at byte 24 is 65537 bytes long"));
  EXPECT_EQ(parse_error(with_key(65536)), "<no error>");
  auto with_tensor = [](uint64_t len) {
    Builder g;
    g.header(1, 0).str(std::string(len, 't')).u32(1).u64(4).u32(0).u64(0).pad();
    g.b.resize(g.b.size() + 16, 0);
    return g.b;
  };
  EXPECT_TRUE(fails_with(with_tensor(65537),
                         "tensor name at byte 24 is 65537 bytes long (the limit "
                         "is 65536)"));
  EXPECT_EQ(parse_error(with_tensor(65536)), "<no error>");
  // A 60 KiB key is allowed, but quoted cut wherever a message names it.
  Builder g;
  g.header(0, 1).str(std::string(60000, 'q')).u32(77).pad();
  const std::string msg = parse_error(g.b);
  EXPECT_TRUE(fails_with(
      g.b, "metadata '" + std::string(200, 'q') + "... (60000 bytes)': unknown value type 77"));
  EXPECT_LT(msg.size(), 300u);
}

// fail() itself cuts whatever it is given (a caller that forgot excerpt()) to 1 KiB, one line.
TEST(GgufDamaged, FailCutsItsMessage) {
  const Bytes b = base();
  GgufFile f(b.data(), b.size(), kName);
  try {
    f.fail("value " + std::string(1 << 20, 'v') + "\n");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_LE(msg.size(), kName.size() + 2 + kGgufMaxMessageBytes + 40) << msg.size();
    EXPECT_NE(msg.find("... (1048583 bytes)"), std::string::npos) << msg.substr(msg.size() - 60);
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

// Every single-byte change anywhere in the header, to a few telling values, either parses or
// throws tzero::Error; nothing else (no crash, no std::bad_alloc, no std::length_error).
TEST(GgufDamaged, EveryHeaderByteMutationIsSafe) {
  const Bytes full = base();
  size_t errors = 0, total = 0;
  for (size_t pos = 0; pos < valid().data_offset; ++pos) {
    for (int variant = 0; variant < 5; ++variant) {
      Bytes b = full;
      const uint8_t old = b[pos];
      const uint8_t vals[] = {0x00, 0xFF, uint8_t(old ^ 0x80), uint8_t(old + 1), uint8_t(old - 1)};
      if (vals[variant] == old) continue;
      b[pos] = vals[variant];
      const std::string msg = parse_error(b);
      ++total;
      if (msg != "<no error>") {
        ++errors;
        ASSERT_EQ(msg.rfind(kName + ": ", 0), 0u) << "byte " << pos << ": " << msg;
      }
    }
  }
  EXPECT_GT(errors, total / 4);  // most of the header is structure, not free text
}

}  // namespace
}  // namespace tzero
