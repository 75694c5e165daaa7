#pragma once
// Reading fixed-size frames from a stream socket (the probe protocol on kept-open TCP): whatever is
// waiting is read without blocking, with the kernel receive time of each read, and every whole
// frame is handed on; a partial frame stays in the caller's buffer for the next call.
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "net/timestamping.hpp"

namespace weft::net {

// `buf` holds `len` bytes carried over from the last call (less than one frame) and has room for
// `cap`. Calls on_frame(std::span<const uint8_t, Frame>, const KernelTime&) for each whole frame;
// on_frame returns false to stop. Returns false when the connection should be closed: the peer
// closed it, reading failed, or on_frame said stop. Returns true when nothing more is waiting.
template <size_t Frame, typename OnFrame>
bool read_frames(int fd, uint8_t* buf, size_t cap, size_t& len, OnFrame&& on_frame) {
  static_assert(Frame > 0);
  for (;;) {
    iovec iov{buf + len, cap - len};
    alignas(cmsghdr) char ctrl[kControlBytes];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof ctrl;
    const ssize_t n = ::recvmsg(fd, &mh, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    KernelTime rx;
    parse_rx_time(mh, rx);
    len += static_cast<size_t>(n);
    size_t off = 0;
    for (; len - off >= Frame; off += Frame)
      if (!on_frame(std::span<const uint8_t, Frame>(buf + off, Frame), rx)) return false;
    std::memmove(buf, buf + off, len - off);
    len -= off;
  }
}

}  // namespace weft::net
