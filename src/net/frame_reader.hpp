#pragma once
// Reading fixed-size frames from a stream socket (the probe protocol on kept-open TCP): whatever is
// waiting is read without blocking and every whole frame is handed on; a partial frame stays in
// the caller's buffer for the next call.
//
// Receive stamps on a stream: a recvmsg carries ONE SCM_TIMESTAMPING, that of the last packet it
// read from, and the kernel may already have merged packets waiting in the receive queue, giving
// the merged one the later arrival time (tcp_try_coalesce). So the stamp is the arrival time of
// the last byte read, and only when the read emptied the queue (it did not fill the buffer). It
// is therefore given to the one frame that ends exactly there; frames read before it in the same
// call arrived earlier, at a time the kernel no longer tells, and get no kernel time (the caller
// falls back to its user-space clock for them).
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "net/timestamping.hpp"

namespace weft::net {

// `buf` holds `len` bytes carried over from the last call (less than one frame) and has room for
// `cap`. Calls on_frame(std::span<const uint8_t, Frame>, const KernelTime&) for each whole frame,
// with the read's kernel time for the frame that ends the read and none for the others (above);
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
    const bool drained = static_cast<size_t>(n) < cap - len;  // else more may be waiting
    if (drained) parse_rx_time(mh, rx);
    len += static_cast<size_t>(n);
    const KernelTime none;
    size_t off = 0;
    for (; len - off >= Frame; off += Frame) {
      const bool last = off + Frame == len;
      if (!on_frame(std::span<const uint8_t, Frame>(buf + off, Frame), last ? rx : none)) return false;
    }
    std::memmove(buf, buf + off, len - off);
    len -= off;
  }
}

}  // namespace weft::net
