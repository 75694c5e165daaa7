#pragma once
// The C library's own socket and I/O calls, found with dlsym(RTLD_NEXT): what the interposed names
// call for every descriptor that is not a weft socket, and what the layer itself uses for its
// event fds, waits and the device. Resolved once, on first use (a program may call read() from a
// constructor that runs before this library's).
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace weft::posix {

struct RealCalls {
  int (*socket)(int, int, int);
  int (*bind)(int, const sockaddr*, socklen_t);
  int (*listen)(int, int);
  int (*accept)(int, sockaddr*, socklen_t*);
  int (*accept4)(int, sockaddr*, socklen_t*, int);
  int (*connect)(int, const sockaddr*, socklen_t);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*write)(int, const void*, size_t);
  ssize_t (*readv)(int, const iovec*, int);
  ssize_t (*writev)(int, const iovec*, int);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  ssize_t (*sendmsg)(int, const msghdr*, int);
  ssize_t (*recvmsg)(int, msghdr*, int);
  int (*sendmmsg)(int, mmsghdr*, unsigned, int);
  int (*recvmmsg)(int, mmsghdr*, unsigned, int, timespec*);
  int (*close)(int);
  int (*shutdown)(int, int);
  int (*getsockname)(int, sockaddr*, socklen_t*);
  int (*getpeername)(int, sockaddr*, socklen_t*);
  int (*getsockopt)(int, int, int, void*, socklen_t*);
  int (*setsockopt)(int, int, int, const void*, socklen_t);
  int (*fcntl)(int, int, ...);
  int (*ioctl)(int, unsigned long, ...);
  int (*poll)(pollfd*, nfds_t, int);
  int (*ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*);
  int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*);
  int (*pselect)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
  int (*epoll_create)(int);
  int (*epoll_create1)(int);
  int (*epoll_ctl)(int, int, int, epoll_event*);
  int (*epoll_wait)(int, epoll_event*, int, int);
  int (*epoll_pwait)(int, epoll_event*, int, int, const sigset_t*);
  ssize_t (*sendfile)(int, int, off_t*, size_t);
  int (*dup)(int);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
};

// The resolved calls (resolving them on the first call).
const RealCalls& real();

}  // namespace weft::posix
