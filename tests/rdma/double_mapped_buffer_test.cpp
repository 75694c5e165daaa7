#include "rdma/double_mapped_buffer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

using namespace weft::rdma;

namespace {
size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

TEST(DoubleMappedBuffer, SecondHalfAliasesTheFirst) {
  auto b = DoubleMappedBuffer::create(4 * page());
  ASSERT_TRUE(b) << b.error().message;
  const size_t n = b->size();
  ASSERT_EQ(b->mapped().size(), 2 * n);
  // A write across the end lands at the start, and the reverse.
  const char msg[] = "wraps around the end of the ring";
  std::memcpy(b->data() + n - 10, msg, sizeof msg);
  EXPECT_EQ(0, std::memcmp(b->data() + n - 10, msg, sizeof msg));
  EXPECT_EQ(0, std::memcmp(b->data(), msg + 10, sizeof msg - 10));
  b->data()[n + 5] = std::byte{0x5a};
  EXPECT_EQ(b->data()[5], std::byte{0x5a});
  b->data()[7] = std::byte{0xa5};
  EXPECT_EQ(b->data()[n + 7], std::byte{0xa5});
}

TEST(DoubleMappedBuffer, MoveKeepsOneOwner) {
  auto b = DoubleMappedBuffer::create(page());
  ASSERT_TRUE(b);
  std::byte* p = b->data();
  DoubleMappedBuffer moved = std::move(*b);
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(b->data(), nullptr);  // NOLINT: moved-from is empty by contract
  moved.data()[0] = std::byte{1};
  EXPECT_EQ(moved.data()[page()], std::byte{1});
}

TEST(DoubleMappedBuffer, RefusesSizesThatAreNotWholePages) {
  for (size_t bad : {size_t{0}, page() - 1, page() + 1, 3 * page() / 2}) {
    auto b = DoubleMappedBuffer::create(bad);
    ASSERT_FALSE(b) << bad;
    EXPECT_NE(b.error().message.find("multiple of the page size"), std::string::npos);
  }
}
