#pragma once
// Kernel transmit timestamps on a stream (TCP) socket that carries fixed-size frames (the probe
// protocol on kept-open connections). Documentation/networking/timestamping.rst:
//  - SOF_TIMESTAMPING_OPT_ID may only be set once the connection exists (not in CLOSE or LISTEN);
//    from then on the key counts BYTES, not sends: a send's stamp comes back on the error queue
//    with ee_data = the stream offset of its last byte (a send of N bytes right after enabling
//    gives N - 1), modulo 2^32.
//  - The counter starts at snd_una, or at write_seq with SOF_TIMESTAMPING_OPT_ID_TCP (Linux 6.2+);
//    the two agree while nothing is unsent or unacknowledged, which is when weft enables it.
//  - One stamp per packet: a send that the kernel merges into a packet still waiting in the send
//    queue replaces that packet's request (Nagle, cork, autocork). TCP_NODELAY and MSG_EOR on every
//    frame (no later write may join its packet) keep each frame its own.
// Receive stamps need nothing more than SO_TIMESTAMPING's RX flags, but a stream has one stamp per
// recvmsg (see frame_reader.hpp).
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "base/result.hpp"
#include "net/timestamping.hpp"

namespace weft::net {

// Receive and transmit stamps (software and hardware), OPT_ID counting bytes, OPT_TSONLY. Call it
// on a connected socket before anything has been written to it.
Status enable_stream_timestamping(int fd);

// The OPT_ID keys of the fixed-size frames written to a stream since its stamps were switched on.
// Every byte written counts, stamped or not, so every frame written must be recorded (and a frame
// written only in part leaves the stream out of step: close it).
template <size_t Frame>
class FrameTxKeys {
 public:
  // The key the next frame will be stamped with: the offset of its last byte.
  uint32_t next_key() const { return static_cast<uint32_t>(bytes_ + Frame - 1); }
  void wrote_frame() {
    bytes_ = static_cast<uint32_t>(bytes_ + Frame);
    ++frames_;
  }
  uint64_t frames() const { return frames_; }
  // The number (from 0) of the frame a stamp with `key` belongs to, if it is one of the newest
  // `within` frames written; -1 otherwise (not a frame end, or too old to tell apart: the 32-bit
  // key wraps every 2^32 bytes).
  int64_t frame_of(uint32_t key, uint64_t within) const {
    if (frames_ == 0) return -1;
    const uint32_t back = static_cast<uint32_t>(bytes_ - 1 - key);  // bytes after that frame's end
    if (back % Frame != 0) return -1;
    const uint64_t n = back / Frame;
    if (n >= frames_ || n >= within) return -1;
    return static_cast<int64_t>(frames_ - 1 - n);
  }

 private:
  uint32_t bytes_ = 0;
  uint64_t frames_ = 0;
};

// Reads every transmit stamp waiting on `fd`'s error queue (at most `max`), calling
// on_stamp(const TxTimestamp&) for each. Returns how many were read.
template <typename OnStamp>
size_t read_tx_timestamps(int fd, OnStamp&& on_stamp, size_t max = 256) {
  size_t got = 0;
  for (size_t i = 0; i < max; ++i) {
    char data[64];  // OPT_TSONLY: no payload comes back; room for one should a kernel ignore it
    alignas(cmsghdr) char ctrl[kControlBytes];
    iovec iov{data, sizeof data};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof ctrl;
    if (::recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;  // EAGAIN: the queue is empty
    TxTimestamp ts;
    if (!parse_tx_timestamp(mh, ts)) continue;
    ++got;
    on_stamp(static_cast<const TxTimestamp&>(ts));
  }
  return got;
}

}  // namespace weft::net
