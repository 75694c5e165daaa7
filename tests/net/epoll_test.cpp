// Epoll::wait on kernels without epoll_pwait2: a seccomp filter (in a forked child, as a death
// test) makes that system call fail with ENOSYS, as Linux < 5.11 and valgrind do; waits must still
// time out no earlier than asked, and see events.
#include "net/epoll.hpp"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include "base/clock.hpp"

namespace {

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

bool deny_epoll_pwait2() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_epoll_pwait2, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Exit codes name the check that failed.
[[noreturn]] void waits_without_epoll_pwait2() {
  if (!deny_epoll_pwait2()) std::_Exit(10);
  auto ep = weft::net::Epoll::create();
  auto ev = weft::EventFd::create();
  if (!ep || !ev || !ep->add(ev->fd(), EPOLLIN, 7)) std::_Exit(11);
  epoll_event events[4];
  const int64_t t0 = weft::mono_ns();
  auto n = ep->wait(events, 4, 2'500'000);  // 2.5 ms: rounded up to 3 ms, never down
  const int64_t waited = weft::mono_ns() - t0;
  if (!n || *n != 0) std::_Exit(12);
  if (waited < 2'500'000) std::_Exit(13);
  ev->signal();
  n = ep->wait(events, 4, 1'000'000'000);
  if (!n || *n != 1 || events[0].data.u64 != 7) std::_Exit(14);
  if (syscall(SYS_epoll_pwait2, 0, nullptr, 0, nullptr, nullptr, 0) != -1 || errno != ENOSYS)
    std::_Exit(15);  // the filter really was in place
  std::_Exit(0);
}

TEST(EpollDeathTest, FallsBackToEpollWaitWithoutEpollPwait2) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(waits_without_epoll_pwait2(), testing::ExitedWithCode(0), "");
}

TEST(Epoll, WaitTimesOutAndSeesEvents) {
  auto ep = weft::net::Epoll::create();
  auto ev = weft::EventFd::create();
  ASSERT_TRUE(ep && ev);
  ASSERT_TRUE(ep->add(ev->fd(), EPOLLIN, 9));
  epoll_event events[4];
  const int64_t t0 = weft::mono_ns();
  auto n = ep->wait(events, 4, 1'000'000);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0);
  EXPECT_GE(weft::mono_ns() - t0, 1'000'000);
  ev->signal();
  n = ep->wait(events, 4, -1);
  ASSERT_TRUE(n);
  ASSERT_EQ(*n, 1);
  EXPECT_EQ(events[0].data.u64, 9u);
}

}  // namespace
