// base/fd.hpp and base/event_fd.hpp: a descriptor is closed exactly when its owner goes, moves
// hand it over, and an eventfd is readable from signal() until drain().
#include "base/fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <utility>

#include "base/event_fd.hpp"

using namespace weft;

namespace {

bool is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(Fd, ClosesWhenItsOwnerGoesAndNotBefore) {
  int raw = -1;
  {
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    raw = fd.get();
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, MoveHandsTheDescriptorOverAndResetClosesTheOldOne) {
  Fd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = a.get();
  Fd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(b.get(), raw);
  EXPECT_TRUE(is_open(raw));
  b.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));  // opened while `raw` is still open: another number
  EXPECT_NE(b.get(), raw);
  EXPECT_TRUE(is_open(b.get()));
  EXPECT_FALSE(is_open(raw));
  const int released = b.release();
  EXPECT_FALSE(b.valid());
  EXPECT_TRUE(is_open(released));
  ::close(released);
}

TEST(EventFd, ReadableFromSignalUntilDrain) {
  auto e = EventFd::create();
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(e->valid());
  EXPECT_FALSE(readable(e->fd()));
  EXPECT_FALSE(e->drain());  // nothing to read
  EXPECT_TRUE(e->signal());
  EXPECT_TRUE(e->signal());
  EXPECT_TRUE(readable(e->fd()));
  EXPECT_TRUE(e->drain());  // one read takes both signals
  EXPECT_FALSE(readable(e->fd()));
  EXPECT_FALSE(e->drain());
}

TEST(EventFd, AnInitialValueMakesItReadableAtOnce) {
  auto e = EventFd::create(1);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(readable(e->fd()));
  EXPECT_TRUE(e->drain());
  EXPECT_FALSE(readable(e->fd()));
}

TEST(EventFd, ADefaultOneHasNoDescriptor) {
  EventFd e;
  EXPECT_FALSE(e.valid());
  EXPECT_EQ(e.fd(), -1);
  EXPECT_FALSE(e.signal());
}

}  // namespace
