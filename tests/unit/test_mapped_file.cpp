// MappedFile's two loads (base/mapped_file.h): mapped and read into memory give the same bytes;
// the read buffer is 64-byte aligned (GGUF tensor data is aligned to 32); errors name the file.
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "support/test_support.h"

namespace tzero {
namespace {

TEST(MappedFile, ReadAndMapGiveTheSameBytes) {
  std::string bytes(100003, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 131 + 7);
  const std::string path = test::scratch_dir() + "/bytes.bin";
  test::write_file(path, bytes);
  const MappedFile mapped(path, MappedFile::Load::Map);
  const MappedFile read(path, MappedFile::Load::Read);
  ASSERT_EQ(mapped.size(), bytes.size());
  ASSERT_EQ(read.size(), bytes.size());
  EXPECT_EQ(std::memcmp(mapped.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(std::memcmp(read.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read.data()) % 64, 0u);
}

TEST(MappedFile, EmptyAndMissingFiles) {
  const std::string empty = test::scratch_dir() + "/empty.bin";
  test::write_file(empty, "");
  for (auto load : {MappedFile::Load::Map, MappedFile::Load::Read}) {
    const MappedFile f(empty, load);
    EXPECT_EQ(f.size(), 0u);
    try {
      MappedFile missing(test::scratch_dir() + "/absent.bin", load);
      FAIL() << "no error for a missing file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("absent.bin: cannot open"), std::string::npos);
    }
  }
}

TEST(MappedFile, NulInAPathIsRefusedAndKeptInTheMessage) {
  const std::string dir = test::scratch_dir();
  test::write_file(dir + "/a.gguf", "x");
  const std::string path = dir + "/a.gguf" + std::string(1, '\0') + ".txt";
  try {
    MappedFile f(path);
    FAIL() << "a path with a NUL opened " << dir << "/a.gguf";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.gguf\\x00.txt: the path contains a NUL byte"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tzero
