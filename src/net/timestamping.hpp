#pragma once
// Kernel packet timestamps (SO_TIMESTAMPING, Documentation/networking/timestamping.rst).
//
// Receive: every datagram carries an SCM_TIMESTAMPING control message with the software time the
// kernel received it, and the NIC's raw hardware time when the NIC stamps packets.
// Transmit: with OPT_ID each sent datagram gets the next number of a per-socket counter (starting
// at 0) and its send time comes back on the socket's error queue (MSG_ERRQUEUE) under that number;
// OPT_TSONLY keeps the packet itself off the error queue.
// Software times are CLOCK_REALTIME; hardware times are the NIC's clock (comparable only with
// other hardware times of the same NIC).
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "base/result.hpp"

namespace weft::net {

struct KernelTime {
  int64_t software_ns = 0;  // 0 = none
  int64_t hardware_ns = 0;  // 0 = none
};

// Asks for receive timestamps and, when tx is true, transmit timestamps with OPT_ID counting.
// Hardware timestamps are requested too; the NIC only provides them when configured for it.
// `extra` adds SOF_TIMESTAMPING_* flags (streams: see stream_timestamps.hpp).
Status enable_timestamping(int fd, bool tx, unsigned extra = 0);

// Room for every control message we ask for (timestamps, extended errors, packet info).
inline constexpr size_t kControlBytes = 512;
// Room for an error-queue transmit stamp: SCM_TIMESTAMPING (64 bytes) and IP(V6)_RECVERR (<= 64).
inline constexpr size_t kErrQueueControlBytes = 256;

// Reads an SCM_TIMESTAMPING receive time from a received message; false when there is none.
bool parse_rx_time(const msghdr& msg, KernelTime& out);

struct TxTimestamp {
  uint32_t id = 0;  // OPT_ID counter value of the datagram
  KernelTime time;
};

// Decodes one error-queue message into a transmit timestamp; false when it is something else.
bool parse_tx_timestamp(const msghdr& msg, TxTimestamp& out);

}  // namespace weft::net

namespace weft::net {

// Whether datagrams sent with transmit timestamps switched off for that one message (an
// SO_TIMESTAMPING control message of 0) leave the socket's OPT_ID counter alone. Recent kernels
// only count timestamped datagrams; older ones count all. Found out once, on a loopback socket.
bool untimestamped_sends_skip_ids();

// Writes the SO_TIMESTAMPING control message that switches transmit timestamps off for one
// message; returns its length (CMSG_SPACE), 0 when `cap` is too small.
size_t write_no_tx_timestamp(char* buf, size_t cap);

}  // namespace weft::net
