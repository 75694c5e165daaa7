// SigpipeBlock (base/signals.hpp): a write to a socket whose peer is gone fails with EPIPE inside the
// guard instead of killing the process, nothing is left pending, and the thread's mask is restored.
// Each case runs in a forked child with SIGPIPE at its default action (death), as in `weft agent`.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "base/signals.hpp"

namespace {

// Runs `body` in a child process; returns its wait status.
template <typename F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// A stream socket whose peer is closed: writing to it raises SIGPIPE.
int orphaned_socket() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
  close(sv[1]);
  return sv[0];
}

bool sigpipe_blocked() {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, SIGPIPE) == 1;
}

}  // namespace

TEST(SigpipeBlock, WithoutItAWriteToAClosedPeerKillsTheProcess) {
  // The premise of the test below: this write does raise SIGPIPE.
  int status = in_child([] {
    int fd = orphaned_socket();
    (void)!write(fd, "x", 1);
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGPIPE);
}

TEST(SigpipeBlock, AWriteToAClosedPeerFailsWithEpipeAndNothingStaysPending) {
  int status = in_child([] {
    int fd = orphaned_socket();
    if (fd < 0) return 10;
    {
      weft::SigpipeBlock guard;
      if (!sigpipe_blocked()) return 11;
      if (write(fd, "x", 1) != -1 || errno != EPIPE) return 12;
      if (write(fd, "y", 1) != -1 || errno != EPIPE) return 13;  // and again
    }
    if (sigpipe_blocked()) return 14;  // the mask is back as it was
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) return 15;
    return 0;  // still alive: SIGPIPE's default action would have killed us on unblocking
  });
  ASSERT_TRUE(WIFEXITED(status)) << "died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SigpipeBlock, AnOuterBlockStaysInPlace) {
  int status = in_child([] {
    int fd = orphaned_socket();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    {
      weft::SigpipeBlock guard;
      if (write(fd, "x", 1) != -1 || errno != EPIPE) return 12;
    }
    return sigpipe_blocked() ? 0 : 14;  // the thread's own block is not undone
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
