// What a device owns goes with it: stack/dev/mapping.hpp unmaps, and an AF_PACKET device whose
// open() gives up half way leaves no descriptor behind (no hand-made unwind to forget one).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "stack/dev/interface_claim.hpp"
#include "stack/dev/mapping.hpp"
#include "stack/dev/packet_device.hpp"
#include "stack/dev/tap_device.hpp"

using namespace weft;
using namespace weft::stack;

namespace {

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Whether [p, p + len) is mapped: mincore() fails with ENOMEM where it is not.
bool mapped(void* p, size_t len) {
  unsigned char vec[4];
  return mincore(p, len, vec) == 0;
}

TEST(Mapping, UnmapsWhenItsOwnerGoesAndMovesHandItOver) {
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* at = nullptr;
  {
    auto m = Mapping::map(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, "test mmap");
    ASSERT_TRUE(m) << m.error().message;
    at = m->data();
    m->data()[0] = 42;
    Mapping moved(std::move(*m));
    EXPECT_EQ(m->data(), nullptr);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.data()[0], 42);
    EXPECT_EQ(moved.size(), len);
    EXPECT_TRUE(mapped(at, len));
  }
  EXPECT_FALSE(mapped(at, len));
}

TEST(Mapping, AFailedMapSaysWhat) {
  auto m = Mapping::map(4096, PROT_READ, MAP_SHARED, -1, "the ring");  // no file: EBADF
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("the ring"), std::string::npos) << m.error().message;
}

// A TAP that is not up is an interface AF_PACKET refuses after its socket is open.
TEST(PacketDevice, AnOpenThatGivesUpHalfWayLeavesNoDescriptor) {
  if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0)
    GTEST_SKIP() << "needs root and /dev/net/tun";
  TapDevice::Options to;
  to.napi = TapDevice::Options::Napi::off;
  auto tap = TapDevice::open(to);
  ASSERT_TRUE(tap) << tap.error().message;
  const size_t before = open_fds();
  PacketDevice::Options po;
  po.ifname = (*tap)->name();
  auto d = PacketDevice::open(po);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("is down"), std::string::npos) << d.error().message;
  EXPECT_EQ(open_fds(), before);
}

// One stack per MAC per interface per namespace: while one claim is held, a second is refused with
// EBUSY and a message naming the holder; another MAC or interface is free; once the holder lets
// go, the MAC can be claimed again.
TEST(InterfaceClaim, ASecondClaimIsRefusedAndNamesTheHolder) {
  const std::string ifname = "claimtest" + std::to_string(getpid() % 100000);
  const std::array<uint8_t, 6> mac{0x02, 0x77, 10, 0, 0, 2}, other{0x02, 0x77, 10, 0, 0, 3};
  auto first = claim_interface(ifname, mac);
  ASSERT_TRUE(first) << first.error().message;
  auto second = claim_interface(ifname, mac);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, EBUSY);
  const std::string& m = second.error().message;
  EXPECT_NE(m.find(ifname + " already carries weft's stack with MAC 02:77:0a:00:00:02"), std::string::npos)
      << m;
  EXPECT_NE(m.find("pid " + std::to_string(getpid())), std::string::npos) << m;
  EXPECT_TRUE(claim_interface(ifname, other)) << "another MAC on the interface is free";
  EXPECT_TRUE(claim_interface(ifname + "b", mac)) << "the MAC on another interface is free";
  first->reset();
  EXPECT_TRUE(claim_interface(ifname, mac)) << "free again once its holder let go";
}

}  // namespace
