// HugePageBuffer (base/huge_pages.h): 2 MiB aligned, the size asked for, writable, empty for 0
// bytes, and moved (not copied) with its mapping.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>

#include "base/huge_pages.h"

namespace tzero {
namespace {

TEST(HugePageBuffer, AlignedWritableAndMovedWithItsMapping) {
  HugePageBuffer a((size_t(3) << 20) + 5);
  ASSERT_TRUE(a);
  EXPECT_EQ(a.size(), (size_t(3) << 20) + 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % (size_t(2) << 20), 0u);
  EXPECT_EQ(a.data()[a.size() - 1], 0);  // zero-filled
  std::memset(a.data(), 0x5a, a.size());
  uint8_t* p = a.data();
  HugePageBuffer b(std::move(a));
  EXPECT_FALSE(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[b.size() - 1], 0x5a);
  HugePageBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_FALSE(b);
  EXPECT_FALSE(HugePageBuffer(0));
}

}  // namespace
}  // namespace tzero
