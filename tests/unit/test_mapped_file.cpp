// MappedFile's loads (base/mapped_file.h): mapped, read into memory and the default give the same
// bytes; the read buffer is 2 MiB aligned (huge pages; GGUF tensor data needs 32); errors name
// the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

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
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read.data()) % (size_t(2) << 20), 0u);  // huge pages
  EXPECT_TRUE(mapped.mapped());
  EXPECT_FALSE(read.mapped());
}

// Proves: the default load reads a file that fits in half the available memory, and maps it
// when TZ_MMAP is set (not "0"); the bytes are the file's either way.
TEST(MappedFile, AutoReadsWhatFitsAndMapsOnRequest) {
  std::string bytes(70001, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7 + 3);
  const std::string path = test::scratch_dir() + "/auto.bin";
  test::write_file(path, bytes);
  const char* caller = std::getenv("TZ_MMAP");
  const std::string saved = caller ? caller : "";
  for (const char* env : {static_cast<const char*>(nullptr), "0", "", "1"}) {
    if (env)
      ::setenv("TZ_MMAP", env, 1);
    else
      ::unsetenv("TZ_MMAP");
    const MappedFile f(path, MappedFile::Load::Auto);
    // Read where /proc/meminfo says the 70 kB fit (it does on any machine that runs the suite).
    EXPECT_EQ(f.mapped(), env && std::string(env) == "1") << (env ? env : "unset");
    ASSERT_EQ(f.size(), bytes.size());
    EXPECT_EQ(std::memcmp(f.data(), bytes.data(), bytes.size()), 0);
    // --no-mmap reads whatever TZ_MMAP says.
    EXPECT_FALSE(MappedFile(path, MappedFile::Load::Read).mapped());
  }
  if (caller)
    ::setenv("TZ_MMAP", saved.c_str(), 1);
  else
    ::unsetenv("TZ_MMAP");
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
